//! The design lab's part of the lab state: the challenge or free design on screen, the plan
//! (splits, sequence parallelism, hand-placed collectives), hints, checks and stars; the actions
//! that change it; and what the engine derives from it (the report, the trace to step through,
//! the verdict), cached by the state's version. The Design view, the walkthrough, the Timeline,
//! the side-by-side panes and the GPU view all read the plan here, so none can show another.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use tplab_engine::block::design::challenge::{self, Attempt, Challenge, Grade};
use tplab_engine::block::design::trace::TraceError;
use tplab_engine::block::design::{
    design, DesignOptions, DesignReport, Fix, ManualCollective, ManualKind, ShardingPlan, Site,
    Split, Weight,
};
use tplab_engine::config::{Config, Preset};
use tplab_engine::trace::Trace;

/// The challenges, built once (the view reads them every frame).
pub fn challenges() -> &'static [Challenge] {
    static ALL: OnceLock<Vec<Challenge>> = OnceLock::new();
    ALL.get_or_init(challenge::all)
}

/// A plan as the view keeps it (and saves it across restarts).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Setup {
    pub qkv: Split,
    pub out: Split,
    pub fc1: Split,
    pub fc2: Split,
    pub sequence_parallel: bool,
    /// `None`: the rules place the collectives; `Some`: the learner's, in order.
    pub manual: Option<Vec<(Site, ManualKind)>>,
}

impl Default for Setup {
    fn default() -> Self {
        Self::from_plan(&ShardingPlan {
            qkv: Split::Replicate,
            out: Split::Replicate,
            fc1: Split::Replicate,
            fc2: Split::Replicate,
            sequence_parallel: false,
            manual: None,
        })
    }
}

impl Setup {
    pub fn from_plan(p: &ShardingPlan) -> Self {
        Self {
            qkv: p.qkv,
            out: p.out,
            fc1: p.fc1,
            fc2: p.fc2,
            sequence_parallel: p.sequence_parallel,
            manual: p
                .manual
                .as_ref()
                .map(|l| l.iter().map(|c| (c.after, c.kind)).collect()),
        }
    }

    pub fn plan(&self) -> ShardingPlan {
        ShardingPlan {
            qkv: self.qkv,
            out: self.out,
            fc1: self.fc1,
            fc2: self.fc2,
            sequence_parallel: self.sequence_parallel,
            manual: self.manual.as_ref().map(|l| {
                l.iter()
                    .map(|&(after, kind)| ManualCollective { after, kind })
                    .collect()
            }),
        }
    }

    pub fn split_mut(&mut self, w: Weight) -> &mut Split {
        match w {
            Weight::Qkv => &mut self.qkv,
            Weight::Out => &mut self.out,
            Weight::Fc1 => &mut self.fc1,
            Weight::Fc2 => &mut self.fc2,
        }
    }

    /// The collectives a program placed, as a hand-placed list (turning hand placement on keeps
    /// what the rules placed).
    pub fn manual_from(&self, p: &tplab_engine::block::design::Program) -> Vec<(Site, ManualKind)> {
        use tplab_engine::block::design::Step;
        p.forward
            .iter()
            .filter_map(|s| match s {
                Step::Redistribute(d) if !p.value(d.to).mislabelled => Some((
                    tplab_engine::block::design::site_of(p.value(d.from).tensor)?,
                    d.mv.manual_kind()?,
                )),
                _ => None,
            })
            .collect()
    }

    /// Applies one of a refused program's fixes.
    pub fn apply(&mut self, fix: Fix) {
        match fix {
            Fix::Collective { after, kind, .. } => {
                self.manual.get_or_insert_with(Vec::new).push((after, kind));
            }
            Fix::Remove { after, kind } => {
                if let Some(list) = self.manual.as_mut() {
                    if let Some(i) = list.iter().position(|&c| c == (after, kind)) {
                        list.remove(i);
                    }
                }
            }
            Fix::Split { weight, split } => *self.split_mut(weight) = split,
            Fix::Slice => {}
        }
    }
}

/// The free design's layer: small enough to run forward and backward against the reference on
/// every click (also in the browser), with 8 heads so that 2, 4 and 8 GPUs all split it.
pub fn free_config(tp: usize) -> Config {
    Config {
        hidden: 64,
        heads: 8,
        kv_heads: None,
        ffn: 256,
        seq: 8,
        batch: 2,
        layers: 1,
        tp,
        ..Preset::Tiny.config()
    }
}

/// The TP sizes of the free design.
pub const FREE_TPS: [usize; 3] = [2, 4, 8];

/// A change to the design lab, named as the learner would say it.
#[derive(Debug, Clone, PartialEq)]
pub enum DesignAction {
    /// Opens a challenge (0: the free design) at its starting plan.
    SelectStage(usize),
    /// The free design's number of GPUs.
    SetFreeTp(usize),
    /// "Set fc2 to rows".
    SetSplit(Weight, Split),
    SetSequenceParallel(bool),
    /// Hand placement on (the rules' collectives become the learner's list) or off.
    SetManual(bool),
    /// "Add an all-gather after fc2" (hand placement).
    AddCollective {
        after: Site,
        kind: ManualKind,
    },
    /// "Remove the all-gather after fc2".
    RemoveCollective {
        after: Site,
        kind: ManualKind,
    },
    /// One of a refused program's fixes.
    ApplyFix(Fix),
    SetRunAnyway(bool),
    ShowHint,
    /// Grades the plan on screen; a solved challenge is saved before it is shown as solved.
    Check,
    /// A whole plan (pasted): the splits a challenge leaves free, sequence parallelism and the
    /// hand-placed collectives.
    SetPlan(ShardingPlan),
    /// Back to the challenge's starting plan.
    Restart,
}

/// What the engine says of the design lab's state as it is now.
pub struct DesignDerived {
    /// The state's version it was derived for.
    pub version: u64,
    pub config: Config,
    pub plan: ShardingPlan,
    /// The engine's report (program, errors, numbers, price), or why there is none.
    pub report: Result<Arc<DesignReport>, String>,
    /// The trace of exactly this plan, for "Step through my plan", or why it has none.
    pub walk: Result<Arc<Trace>, WalkRefusal>,
}

/// Why a plan has no trace to step through.
#[derive(Debug, Clone, PartialEq)]
pub enum WalkRefusal {
    /// The engine gave no report (its error).
    NoReport(String),
    /// The rules refuse the program (the engine's rule).
    Refused(String),
}

impl From<TraceError> for WalkRefusal {
    fn from(e: TraceError) -> Self {
        match e {
            TraceError::Refused(rule) => Self::Refused(rule),
        }
    }
}

/// The check's result, with the version it graded (a later edit makes it stale).
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub version: u64,
    pub grade: Result<Grade, String>,
}

/// The design lab's state.
#[derive(Serialize, Deserialize)]
#[serde(default)]
pub struct DesignLab {
    /// 0: free design; 1 to 8: a challenge.
    stage: usize,
    /// TP of the free design (0: 2).
    free_tp: usize,
    setup: Setup,
    /// Stages whose hint was shown (the third star is for solving without it).
    hints: Vec<usize>,
    /// Best stars per challenge id.
    stars: BTreeMap<String, u8>,
    /// Checks that found a challenge unsolved, per challenge id, since it was last solved.
    failed_checks: BTreeMap<String, u32>,
    /// Run a refused program anyway.
    run_anyway: bool,
    /// The refused program was run anyway since the challenge was opened (challenge 5 asks it).
    ran_anyway: bool,
    #[serde(skip)]
    version: u64,
    #[serde(skip)]
    checked: Option<Checked>,
    #[serde(skip)]
    derived: Mutex<Option<Arc<DesignDerived>>>,
}

impl Default for DesignLab {
    fn default() -> Self {
        Self {
            stage: 0,
            free_tp: 2,
            setup: Setup::default(),
            hints: Vec::new(),
            stars: BTreeMap::new(),
            failed_checks: BTreeMap::new(),
            run_anyway: false,
            ran_anyway: false,
            version: 1,
            checked: None,
            derived: Mutex::new(None),
        }
    }
}

impl Clone for DesignLab {
    fn clone(&self) -> Self {
        Self {
            stage: self.stage,
            free_tp: self.free_tp,
            setup: self.setup.clone(),
            hints: self.hints.clone(),
            stars: self.stars.clone(),
            failed_checks: self.failed_checks.clone(),
            run_anyway: self.run_anyway,
            ran_anyway: self.ran_anyway,
            version: self.version,
            checked: self.checked.clone(),
            derived: Mutex::new(None),
        }
    }
}

/// What an action asks the rest of the app to do after it is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Nothing more.
    None,
    /// A challenge was solved with `stars`: save it (before it is shown as solved).
    Solved { id: &'static str, stars: u8 },
}

impl DesignLab {
    /// Bumped by every action that changes what is derived.
    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn stage(&self) -> usize {
        self.stage
    }

    pub fn setup(&self) -> &Setup {
        &self.setup
    }

    /// The plan on screen.
    pub fn plan(&self) -> ShardingPlan {
        self.setup.plan()
    }

    pub fn run_anyway(&self) -> bool {
        self.run_anyway
    }

    pub fn hinted(&self, stage: usize) -> bool {
        self.hints.contains(&stage)
    }

    /// Best stars of a challenge.
    pub fn stars(&self, id: &str) -> u8 {
        self.stars.get(id).copied().unwrap_or(0)
    }

    /// Challenges solved (at least one star).
    pub fn solved_count(&self) -> usize {
        self.stars.values().filter(|s| **s > 0).count()
    }

    /// The last check, if it graded the state as it is now.
    pub fn fresh_check(&self) -> Option<&Result<Grade, String>> {
        self.checked
            .as_ref()
            .filter(|c| c.version == self.version)
            .map(|c| &c.grade)
    }

    /// The challenge on screen, if any.
    pub fn challenge(&self) -> Option<Challenge> {
        challenges().iter().find(|c| c.stage == self.stage).cloned()
    }

    pub fn free_tp(&self) -> usize {
        if FREE_TPS.contains(&self.free_tp) {
            self.free_tp
        } else {
            2
        }
    }

    /// The layer the design lab runs on: the challenge's, or the free design's small layer.
    pub fn config(&self) -> Config {
        match self.challenge() {
            Some(c) => c.config,
            None => free_config(self.free_tp()),
        }
    }

    /// Records stars loaded from the learner's saved progress (the best of both is kept).
    pub fn merge_stars(&mut self, saved: impl IntoIterator<Item = (String, u8)>) {
        for (id, s) in saved {
            let best = self.stars.entry(id).or_insert(0);
            *best = (*best).max(s);
        }
    }

    /// Puts a restored state back in range.
    pub fn settle(&mut self) {
        if self.stage > challenges().len() {
            self.stage = 0;
        }
        if !FREE_TPS.contains(&self.free_tp) {
            self.free_tp = 2;
        }
        self.version += 1;
    }

    fn changed(&mut self) {
        self.version += 1;
    }

    /// Applies one action; what the rest of the app must do follows in the [`Effect`].
    pub fn apply(&mut self, action: &DesignAction) -> Effect {
        let mut effect = Effect::None;
        match action {
            DesignAction::SelectStage(stage) => self.select_stage(*stage),
            DesignAction::SetFreeTp(tp) => {
                if FREE_TPS.contains(tp) && self.stage == 0 {
                    self.free_tp = *tp;
                }
            }
            DesignAction::SetSplit(w, split) => {
                let free = self
                    .challenge()
                    .map_or_else(|| Weight::ALL.to_vec(), |c| c.free.clone());
                if free.contains(w) {
                    *self.setup.split_mut(*w) = *split;
                }
            }
            DesignAction::SetSequenceParallel(on) => self.setup.sequence_parallel = *on,
            DesignAction::SetManual(on) => {
                if *on && self.setup.manual.is_none() {
                    // Hand placement starts from what the rules placed, so nothing vanishes.
                    let placed = self
                        .derived()
                        .report
                        .as_ref()
                        .map(|r| Setup::from_plan(&r.program.plan).manual_from(&r.program))
                        .unwrap_or_default();
                    self.setup.manual = Some(placed);
                } else if !*on {
                    self.setup.manual = None;
                }
            }
            DesignAction::AddCollective { after, kind } => {
                self.setup.apply(Fix::Collective {
                    after: *after,
                    kind: *kind,
                    bytes: 0,
                    to: tplab_engine::block::design::Place::Replicate,
                });
            }
            DesignAction::RemoveCollective { after, kind } => {
                self.setup.apply(Fix::Remove {
                    after: *after,
                    kind: *kind,
                });
            }
            DesignAction::ApplyFix(fix) => {
                if let Fix::Split { weight, .. } = fix {
                    let free = self
                        .challenge()
                        .map_or_else(|| Weight::ALL.to_vec(), |c| c.free.clone());
                    if !free.contains(weight) {
                        return Effect::None;
                    }
                }
                self.setup.apply(*fix);
            }
            DesignAction::SetRunAnyway(on) => {
                self.run_anyway = *on;
                if *on {
                    self.ran_anyway = true;
                }
            }
            DesignAction::ShowHint => {
                if self.stage > 0 && !self.hints.contains(&self.stage) {
                    self.hints.push(self.stage);
                }
            }
            DesignAction::Check => {
                // A check changes no plan: its verdict is for this version.
                if let Some(c) = self.challenge() {
                    let failed = self.failed_checks.get(c.id).copied().unwrap_or(0);
                    let attempt = Attempt {
                        used_hint: self.hints.contains(&c.stage),
                        failed_checks: failed,
                        ran_anyway: self.ran_anyway,
                    };
                    let grade = c
                        .grade_attempt(&self.setup.plan(), &attempt)
                        .map_err(|e| e.to_string());
                    match &grade {
                        Ok(g) if g.solved => {
                            let best = self.stars.entry(c.id.to_string()).or_insert(0);
                            *best = (*best).max(g.stars);
                            self.failed_checks.remove(c.id);
                            effect = Effect::Solved {
                                id: c.id,
                                stars: g.stars,
                            };
                        }
                        _ => *self.failed_checks.entry(c.id.to_string()).or_insert(0) += 1,
                    }
                    self.checked = Some(Checked {
                        version: self.version,
                        grade,
                    });
                }
                return effect;
            }
            DesignAction::Restart => {
                let stage = self.stage;
                self.select_stage(stage);
            }
            DesignAction::SetPlan(plan) => {
                let free = self
                    .challenge()
                    .map_or_else(|| Weight::ALL.to_vec(), |c| c.free.clone());
                for w in free {
                    *self.setup.split_mut(w) = plan.split(w);
                }
                self.setup.sequence_parallel = plan.sequence_parallel;
                self.setup.manual = plan
                    .manual
                    .as_ref()
                    .map(|l| l.iter().map(|c| (c.after, c.kind)).collect());
            }
        }
        self.changed();
        effect
    }

    fn select_stage(&mut self, stage: usize) {
        self.stage = stage;
        self.checked = None;
        self.run_anyway = false;
        self.ran_anyway = false;
        match self.challenge() {
            Some(c) => self.setup = Setup::from_plan(&c.start),
            None => self.stage = 0,
        }
    }

    /// The engine's report and walk for the state as it is now (computed once per version).
    pub fn derived(&self) -> Arc<DesignDerived> {
        let mut slot = self.derived.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(d) = slot.as_ref().filter(|d| d.version == self.version) {
            return Arc::clone(d);
        }
        let config = self.config();
        let plan = self.setup.plan();
        let opts = DesignOptions {
            allow_wrong: self.run_anyway,
            execute: true,
        };
        let report = design(&config, &plan, None, &opts)
            .map(Arc::new)
            .map_err(|e| e.to_string());
        let walk = match &report {
            Ok(r) => tplab_engine::block::design::trace::trace(&config, &r.program)
                .map(Arc::new)
                .map_err(WalkRefusal::from),
            Err(e) => Err(WalkRefusal::NoReport(e.clone())),
        };
        let d = Arc::new(DesignDerived {
            version: self.version,
            config,
            plan,
            report,
            walk,
        });
        *slot = Some(Arc::clone(&d));
        d
    }
}
