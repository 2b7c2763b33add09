//! The lab state: the learner's session as one value (the scenario, the design lab's plan and
//! progress, the walk, what is drawn beside it), the actions that change it, and what is derived
//! from it by the engine, cached by the state's version. Views read it and change it through its
//! actions; nothing derived is kept in a view.
//!
//! Layers of the app (each imports only the ones below it; `tests/layers.rs` checks it):
//! shell (`app`: window, side bar, presenter mode, keys, persistence, the list of views) >
//! views (one per file, never importing another view) > widgets (shared drawing) > lab (this
//! module) > platform (desktop / web) > `i18n`, `background`.

pub mod beside;
pub mod class;
pub mod design;
pub mod planner;
pub mod predict;
pub mod walk;

use serde::{Deserialize, Serialize};
use tplab_engine::block::plan::ShardPlan;
use tplab_engine::config::{Config, ConfigError};
use tplab_engine::{block::program::schedule, trace::Trace};

/// One view of the app.
pub trait View {
    /// Stable id: `"playground"`, `"step"`, `"collectives"`, `"timeline"`, `"memory"`,
    /// `"verify"`, `"precision"`, `"vocab"`, `"train"`, `"planner"`, `"pipeline"`, `"cluster"`, `"moe"`, `"lessons"`, `"quiz"`,
    /// `"gpu"`.
    fn id(&self) -> &'static str;
    /// Side-bar label.
    fn title(&self) -> &'static str;
    /// Advances state (animation, background jobs) before [`View::ui`]; draws nothing.
    fn logic(&mut self, _ctx: &egui::Context, _shared: &mut Shared) {}
    /// Draws the view.
    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared);
    /// Jumps to a "Show me" target (the app has already applied its scenario fields).
    fn show_me(&mut self, _target: &ShowMe, _shared: &mut Shared) {}
    /// The view's state as JSON, to be restored by [`View::load`] after a restart.
    fn save(&self) -> Option<String> {
        None
    }
    /// What the view shows, as JSON, for tests and the web edition's hook: its own state
    /// ([`View::save`]), or the lab's part it draws (the design lab keeps none of its own).
    fn state(&self, _shared: &Shared) -> Option<String> {
        self.save()
    }
    /// Restores state saved by [`View::save`]; ignores what it cannot read.
    fn load(&mut self, _json: &str) {}
    /// What the view shows, for the name of an exported PNG (`None`: the scenario's label).
    fn export_name(&self, _shared: &Shared) -> Option<String> {
        None
    }
}

/// `serde_json` of a view's state, for [`View::save`].
pub fn save_json<T: Serialize>(state: &T) -> Option<String> {
    serde_json::to_string(state).ok()
}

/// Replaces `state` with the JSON if it parses, for [`View::load`].
pub fn load_json<T: for<'de> Deserialize<'de>>(state: &mut T, json: &str) {
    if let Ok(v) = serde_json::from_str(json) {
        *state = v;
    }
}

/// A "Show me" target: a view, optionally with a scenario ([`tplab_engine::overrides::Overrides`]) and a
/// point in the trace. The lessons' and the quiz's targets are the same type, so a button goes
/// where its TOML says with nothing converted on the way.
pub use tplab_lessons::ShowMe;

/// The engine's plan and trace for a valid configuration.
pub struct Derived {
    pub plan: ShardPlan,
    /// Shared, so a view can hold it while it changes the lab state.
    pub trace: std::sync::Arc<Trace>,
}

/// The scenario every view shows, with its plan and trace computed once per change.
pub struct Scenario {
    config: Config,
    generation: u64,
    derived: Result<Derived, ConfigError>,
}

impl Default for Scenario {
    fn default() -> Self {
        Self::new(Config::default())
    }
}

impl Scenario {
    pub fn new(config: Config) -> Self {
        let derived = Self::derive(&config);
        Self {
            config,
            generation: 0,
            derived,
        }
    }

    fn derive(config: &Config) -> Result<Derived, ConfigError> {
        // Drawing needs only the shape rules: large configs are drawn (aggregated), never run.
        config.validate_shapes()?;
        Ok(Derived {
            plan: ShardPlan::new(config),
            trace: std::sync::Arc::new(
                schedule(config).map_err(|e| ConfigError::Program(e.to_string()))?,
            ),
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Bumped on every configuration change; views compare it to refresh their caches.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The plan and trace, or the engine's error for an invalid configuration.
    pub fn derived(&self) -> Result<&Derived, &ConfigError> {
        self.derived.as_ref()
    }

    /// Replaces the configuration; recomputes the plan and trace only if it changed.
    pub fn set_config(&mut self, config: Config) {
        if config != self.config {
            self.derived = Self::derive(&config);
            self.config = config;
            self.generation += 1;
        }
    }

    /// Sets the TP size (keys 1–8, the TP buttons).
    pub fn set_tp(&mut self, tp: usize) {
        let config = Config {
            tp,
            ..self.config.clone()
        };
        self.set_config(config);
    }
}

/// Keyboard actions the app routes to the active view.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyActions {
    /// Space: play / pause.
    pub toggle_play: bool,
    /// ←/→ (and a clicker's PageUp/PageDown): steps backward (negative) or forward, one per
    /// press.
    pub step: i32,
    /// Home: back to the first step.
    pub restart: bool,
}

/// A change to the lab state, named as the learner would say it. Views push actions
/// ([`Shared::act`]); the shell applies them between frames ([`Shared::apply_actions`]), so a
/// frame draws one state from top to bottom and nothing derived from an older one survives.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// The design lab: splits, collectives, checks, challenges.
    Design(design::DesignAction),
    /// "Step through my plan": the walkthrough on the design lab's plan as it is now.
    StepThroughMyPlan,
    /// Back to Megatron's split in the walkthrough.
    WalkMegatron,
}

/// What the walkthrough, the Timeline and the side-by-side panes step through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum WalkChoice {
    /// Megatron's split of the scenario.
    #[default]
    Megatron,
    /// The design lab's plan, as it is now.
    MyPlan,
}

/// The shared context every view gets: the lab state (scenario, design lab, walk choice,
/// comparison beside it), the frame's keys, presenter mode and the learner.
#[derive(Default)]
pub struct Shared {
    pub scenario: Scenario,
    /// Presenter mode: full screen and large type.
    pub presenter: bool,
    /// Keys pressed this frame, for the active view.
    pub keys: KeyActions,
    /// The learner's name (the Quiz's and the design lab's progress are saved under it).
    pub learner: String,
    /// A lesson (its slug) the Lessons view opens next: set by a "Lesson N" link elsewhere.
    pub open_lesson: Option<String>,
    /// The lesson (its slug) whose "Show me" the learner followed: the view's lesson link leads
    /// back to it.
    pub from_lesson: Option<String>,
    /// A walkthrough step (from 0) to open at (a link's `step=`), taken by the walkthrough.
    pub open_step: Option<usize>,
    /// The walkthrough's step (from 0) as it last showed it (a live class's console follows
    /// it), on Megatron's split or the learner's plan ([`Shared::walk_choice`]).
    pub walk_at: Option<usize>,
    /// A student's plan the live class's console put on the projector (no name): the
    /// walkthrough's banner says whose plan it is while the design lab still holds it.
    pub students_plan: Option<tplab_engine::block::design::ShardingPlan>,
    /// The design lab: its plan, challenges and progress (read it; change it through
    /// [`Action::Design`]).
    pub design: design::DesignLab,
    /// Views with a long background job (Precision, Train) start it when first shown, so
    /// they never open empty (on in the app, off in tests unless a test turns it on).
    pub autostart_jobs: bool,
    /// Saves progress (solved challenges, answered predictions) the moment it is made, to the
    /// platform's lab file (on in the app; tests turn it on with a data folder of their own).
    pub persist: bool,
    /// What the walkthrough steps through.
    walk: WalkChoice,
    /// A walk asked for this frame: it replaces `walk` when the navigation is applied (any
    /// other navigation, a lesson's Show me say, goes back to Megatron's split).
    pending_walk: Option<WalkChoice>,
    /// The Planner view's inputs, for the Cluster view to draw the winner of (set by the
    /// Planner's "on its GPUs" button, taken by the Cluster view).
    pub cluster_request: Option<planner::PlannerInputs>,
    /// What the Playground, the walkthrough and the Timeline draw beside the scenario (another
    /// TP size, or Megatron's split beside a learner's plan).
    pub beside: beside::BesideState,
    /// The walkthrough's predictions, answered or skipped, per program walked.
    pub predictions: predict::Predictions,
    /// Where the last solved challenge was saved, or why it was not.
    pub saved: Option<Result<String, String>>,
    /// The live class this app is in (a student's device or the teacher's console), polled by
    /// the shell every frame.
    pub class: Option<class::ClassClient>,
    actions: Vec<Action>,
    pending: Vec<ShowMe>,
}

/// The trace of a learner's plan, for the walkthrough: derived from the design lab's state as
/// it is now (never a copy kept from an earlier click).
#[derive(Clone)]
pub struct PlanWalk {
    pub plan: tplab_engine::block::design::ShardingPlan,
    /// The design lab's layer the plan runs on.
    pub config: Config,
    pub trace: std::sync::Arc<tplab_engine::trace::Trace>,
    /// The design lab's version it was derived for (the walkthrough's cache key).
    pub generation: u64,
}

impl Shared {
    /// Asks the app to switch to `target` (applied before the next frame's views run).
    pub fn navigate(&mut self, target: ShowMe) {
        self.pending.push(target);
    }

    /// Takes the pending navigation requests (used by the app).
    pub fn take_navigation(&mut self) -> Vec<ShowMe> {
        std::mem::take(&mut self.pending)
    }

    /// Asks for `action` (applied by the shell before the next frame).
    pub fn act(&mut self, action: Action) {
        self.actions.push(action);
    }

    /// Whether actions wait to be applied.
    pub fn has_actions(&self) -> bool {
        !self.actions.is_empty()
    }

    /// Applies the actions asked for, in order (the shell calls it once per frame).
    pub fn apply_actions(&mut self) {
        for action in std::mem::take(&mut self.actions) {
            match action {
                Action::Design(a) => {
                    if let design::Effect::Solved { id, stars } = self.design.apply(&a) {
                        self.saved = Some(self.save_solved(id, stars));
                    }
                }
                Action::StepThroughMyPlan => {
                    self.pending_walk = Some(WalkChoice::MyPlan);
                    self.navigate(ShowMe {
                        view: tplab_lessons::View::Step,
                        ..Default::default()
                    });
                }
                Action::WalkMegatron => {
                    self.walk = WalkChoice::Megatron;
                    self.pending_walk = None;
                }
            }
        }
    }

    /// Saves a solved challenge before anything shows it solved: the lab file (every learner,
    /// named or not) and the learner's quiz progress when a name is set. Returns where, or why
    /// it could not.
    fn save_solved(&mut self, id: &str, stars: u8) -> Result<String, String> {
        self.save_lab()?;
        let name = self.learner.trim().to_string();
        if name.is_empty() {
            return Ok(String::new());
        }
        let now = tplab_quiz::unix_now_s();
        crate::platform::LearnerStore::open()
            .and_then(|s| s.update(&name, |p| p.record_challenge(id, stars, now)))
            .map(|_| name)
    }

    /// Writes the lab's progress (the design lab, the predictions) to the platform's lab file
    /// now (atomically on the desktop).
    pub fn save_lab(&self) -> Result<(), String> {
        if !self.persist {
            return Ok(());
        }
        let saved = SavedLab {
            design: self.design.clone(),
            predictions: self.predictions.clone(),
        };
        let json = serde_json::to_string(&saved).map_err(|e| e.to_string())?;
        crate::platform::save_lab_file(&json)
    }

    /// Restores the lab's progress from the platform's lab file, if there is one.
    pub fn load_lab(&mut self) -> Result<(), String> {
        let Some(json) = crate::platform::load_lab_file()? else {
            return Ok(());
        };
        let saved: SavedLab = serde_json::from_str(&json)
            .map_err(|e| format!("the lab file does not parse ({e}); it was left as it is"))?;
        self.design = saved.design;
        self.design.settle();
        self.predictions = saved.predictions;
        // A presenter's reveals were for the room that saw them: the next start asks again.
        self.predictions.drop_reveals();
        Ok(())
    }

    /// What the walkthrough steps through.
    pub fn walk_choice(&self) -> WalkChoice {
        self.walk
    }

    /// The learner's plan to step through, derived from the design lab as it is now; `None`
    /// when the walkthrough shows Megatron's split or the plan has no trace (refused).
    pub fn plan_walk(&self) -> Option<PlanWalk> {
        if self.walk != WalkChoice::MyPlan {
            return None;
        }
        let d = self.design.derived();
        let trace = d.walk.as_ref().ok()?;
        Some(PlanWalk {
            plan: d.plan.clone(),
            config: d.config.clone(),
            trace: std::sync::Arc::clone(trace),
            generation: d.version,
        })
    }

    /// Called by the app as it applies a navigation: the walk asked for with it, or Megatron's.
    pub fn settle_walk(&mut self) {
        self.walk = self.pending_walk.take().unwrap_or_default();
    }

    /// Applies a target's scenario ([`tplab_engine::overrides::Overrides::apply`]): a target that names
    /// any scenario field lands on its preset (GPT-2 small when it names none) with exactly the
    /// fields it names, so nothing left over from earlier (a tree algorithm, sequence
    /// parallelism, 5 layers) changes what the lesson shows; one that names none keeps the
    /// learner's scenario. The planner and timeline read their own fields in [`View::show_me`].
    pub fn apply_scenario(&mut self, target: &ShowMe) {
        let config = target.scenario.apply(self.scenario.config());
        self.scenario.set_config(config);
    }
}

/// What the lab file keeps: the progress that must never be lost.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
struct SavedLab {
    design: design::DesignLab,
    predictions: predict::Predictions,
}
