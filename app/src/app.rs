//! The eframe application: side bar, keyboard shortcuts, presenter mode, themes, PNG export and
//! persistence around the [`crate::views`], and the list of views. The top of the app's house:
//! it may use every layer below (views, widgets, lab, platform); nothing below uses it.

mod launch;
#[cfg(target_arch = "wasm32")]
pub mod web;

pub use launch::{parse_query, Launch, ThemeChoice, UrlLaunch};

use crate::lab::{Shared, ShowMe, View};
use crate::views;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
#[cfg(not(target_arch = "wasm32"))]
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use tplab_engine::config::{Config, ConfigError, MAX_TP};
use tplab_engine::labs::train::{Corpus, TrainConfig, TrainError};

/// Persistence key of the app state.
const STORAGE_KEY: &str = "tplab-app";
/// Zoom factor of presenter mode (large type for a projector).
pub const PRESENTER_ZOOM: f32 = 1.6;
/// Seconds a pointer rests on something before its tooltip shows in presenter mode.
pub const PRESENTER_TOOLTIP_DELAY_S: f32 = 1.5;

/// The zoom of presenter mode for the window's size: the screen's height in pixels over 540
/// (body text of 14 points at 28 pixels on a 1080-line screen), from [`PRESENTER_ZOOM`] on a
/// 720-line projector up to 3 on a 4K one.
pub fn presenter_zoom(ctx: &egui::Context) -> f32 {
    // The screen's height in logical pixels: the window's height in points times the zoom
    // (a zoom change shrinks the points, not the screen).
    let logical_h = ctx.content_rect().height() * ctx.zoom_factor();
    presenter_zoom_for(logical_h)
}

/// [`presenter_zoom`] for a screen `height` pixels high.
pub fn presenter_zoom_for(height: f32) -> f32 {
    if !height.is_finite() || height <= 0.0 {
        return PRESENTER_ZOOM;
    }
    (height / 540.0).clamp(PRESENTER_ZOOM, 3.0)
}

/// Narrower than this (points), the side bar folds into a one-row menu on top (a phone).
pub use crate::widgets::NARROW_WIDTH;

/// Width of the side bar, in points (fixed so views lay out the same whatever the titles).
pub const SIDE_BAR_WIDTH: f32 = 170.0;

/// What survives a restart.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
struct Saved {
    active: String,
    theme: ThemeChoice,
    config: Option<Config>,
    views: Vec<(String, String)>,
    /// The learner's name (progress is saved under it).
    learner: String,
}

/// The whole app; also driven headless by the tests and the frame benchmark.
pub struct TplabApp {
    views: Vec<Box<dyn View>>,
    active: usize,
    pub shared: Shared,
    theme: ThemeChoice,
    applied_presenter: Option<bool>,
    /// The theme and presenter mode the visuals were made legible for.
    applied_theme: Option<(ThemeChoice, bool)>,
    /// The last PNG export: the path written, or why it failed (written by the screenshot
    /// callback).
    export_status: Arc<Mutex<Option<Result<String, String>>>>,
    /// Folder exported PNGs are written to (the user's pictures folder by default).
    pub export_dir: PathBuf,
    /// What the last restore refused (out-of-range saved values replaced by defaults).
    restore_refused: Vec<Refusal>,
    /// The first screen: shown on a first run (no saved state, no `--view`) until the learner
    /// picks where to start.
    pub welcome: bool,
    /// The platform's own side-bar section (the web edition: progress export and import).
    platform_bar: crate::platform::SideBar,
    /// Why the lab file could not be read or written, if it could not (shown in the side bar).
    pub lab_notice: Option<String>,
    /// A student's device in a live class: this view alone, phone first (`None`: the lab).
    student: Option<views::class_student::ClassStudent>,
    /// A student's device showing the lab (what the teacher pushed) instead of the class;
    /// "Back to the class" returns.
    student_away: bool,
    /// The exam sitting a student's device is away for (its seed): back to the class when
    /// the server has graded it.
    exam_away: Option<u64>,
}

/// The ranges the Playground's controls allow for the shared scenario; a saved configuration
/// outside them is not restored (it could size a trace of 10⁸ layers or a 10¹¹-wide matrix).
const CONFIG_RANGES: [(&str, usize); 6] = [
    ("hidden", 1 << 16),
    ("heads", 1024),
    ("ffn", 1 << 18),
    ("seq", 1 << 16),
    ("batch", 1024),
    ("layers", 256),
];

/// Solid scroll bars whose handle is always drawn (egui's `solid()` hides it until hovered).
fn visible_scroll_bars() -> egui::style::ScrollStyle {
    egui::style::ScrollStyle {
        bar_width: 8.0,
        dormant_background_opacity: 0.25,
        dormant_handle_opacity: 0.6,
        ..egui::style::ScrollStyle::solid()
    }
}

/// One saved value a restore refused and reset to its default.
#[derive(Debug, Clone, PartialEq)]
enum Refusal {
    /// A scenario size, TP or KV heads outside its control's range `1..=max`.
    ConfigRange {
        field: &'static str,
        value: usize,
        max: usize,
    },
    /// A scenario the engine refuses (a zero, a size over its limit).
    Config(ConfigError),
    /// A view's saved number outside its control's range (`value`: as saved).
    ViewRange {
        view: String,
        field: String,
        value: String,
        min: f64,
        max: f64,
    },
    /// A view's saved state that does not parse (`error`: the parser's).
    Unreadable { view: String, error: String },
    /// The Train view's configuration, which the engine refuses.
    Train(TrainError),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ConfigRange { field, value, max } => {
                write!(f, "scenario: {field} {value} is outside 1..={max}")
            }
            Self::Config(e) => write!(f, "scenario: {e}"),
            Self::ViewRange {
                view,
                field,
                value,
                min,
                max,
            } => write!(f, "{view}: {field} = {value} is outside {min}..={max}"),
            Self::Unreadable { view, error } => write!(f, "{view}: unreadable ({error})"),
            Self::Train(e) => write!(f, "train: {e}"),
        }
    }
}

impl Refusal {
    /// The refusal in the learner's language (English: its `Display`).
    fn text(&self, lang: tplab_lessons::Lang) -> String {
        use crate::i18n::{num_text, t, t_args};
        if lang == tplab_lessons::Lang::En {
            return self.to_string();
        }
        // A view by its side-bar title.
        let view = |id: &str| match t(lang, &format!("view-{id}")) {
            s if s.starts_with("view-") => id.to_string(),
            s => s,
        };
        let scenario = t(lang, "restore-scenario");
        match self {
            Self::ConfigRange { field, value, max } => t_args(
                lang,
                "restore-range",
                &[
                    ("what", scenario),
                    ("field", field.to_string()),
                    ("value", value.to_string()),
                    ("min", "1".into()),
                    ("max", max.to_string()),
                ],
            ),
            Self::Config(e) => {
                format!("{scenario}: {}", crate::widgets::config_error_text(lang, e))
            }
            Self::ViewRange {
                view: id,
                field,
                value,
                min,
                max,
            } => t_args(
                lang,
                "restore-range",
                &[
                    ("what", view(id)),
                    ("field", field.clone()),
                    ("value", num_text(lang, value)),
                    ("min", num_text(lang, &min.to_string())),
                    ("max", num_text(lang, &max.to_string())),
                ],
            ),
            Self::Unreadable { view: id, error } => t_args(
                lang,
                "restore-unreadable",
                &[("what", view(id)), ("error", error.clone())],
            ),
            Self::Train(e) => format!(
                "{}: {}",
                view("train"),
                crate::views::train::train_error_text(lang, e)
            ),
        }
    }
}

/// Checks a saved scenario configuration: every size within [`CONFIG_RANGES`], TP within
/// `1..=MAX_TP`, KV heads within the heads. Shape-rule errors (heads not dividing TP, …) are
/// fine: the views explain them.
fn check_saved_config(c: &Config) -> Result<(), Refusal> {
    let sizes = [
        ("hidden", c.hidden),
        ("heads", c.heads),
        ("ffn", c.ffn),
        ("seq", c.seq),
        ("batch", c.batch),
        ("layers", c.layers),
    ];
    let range = |field, value, max| Refusal::ConfigRange { field, value, max };
    for ((name, value), (_, max)) in sizes.into_iter().zip(CONFIG_RANGES) {
        if !(1..=max).contains(&value) {
            return Err(range(name, value, max));
        }
    }
    if !(1..=MAX_TP).contains(&c.tp) {
        return Err(range("TP", c.tp, MAX_TP));
    }
    if let Some(kv) = c.kv_heads {
        if !(1..=c.heads).contains(&kv) {
            return Err(range("KV heads", kv, c.heads));
        }
    }
    match c.validate_shapes() {
        Err(e @ (ConfigError::Zero { .. } | ConfigError::OverLimit { .. })) => {
            Err(Refusal::Config(e))
        }
        _ => Ok(()),
    }
}

/// Numeric fields of the views' saved state and the ranges their controls allow: `(view id,
/// JSON pointer, min, max)`. A view whose saved state has one outside its range (or not a
/// number) keeps its defaults.
const VIEW_RANGES: [(&str, &str, f64, f64); 13] = [
    ("planner", "/inputs/gpus", 1.0, 65536.0),
    ("planner", "/inputs/gpus_per_node", 1.0, 64.0),
    ("planner", "/inputs/seq", 1.0, 1_048_576.0),
    ("planner", "/inputs/global_batch", 1.0, 1_048_576.0),
    ("vocab", "/vocab", 1.0, 1_000_000.0),
    ("vocab", "/granularity", 1.0, 4096.0),
    ("train", "/config/steps", 1.0, 5000.0),
    ("train", "/config/lr", 1e-5, 1.0),
    ("gpu", "/iters", 1.0, 100.0),
    ("collectives", "/position", 0.0, 1e6),
    ("collectives", "/rounds_per_s", 0.0, 1e3),
    ("step", "/position", 0.0, 1e6),
    ("step", "/speed_steps_per_s", 0.0, 1e3),
];

/// Checks one view's saved JSON against [`VIEW_RANGES`] (and, for the Train view, the engine's
/// own validation of its configuration).
fn check_saved_view(id: &str, json: &str) -> Result<(), Refusal> {
    let unreadable = |e: serde_json::Error| Refusal::Unreadable {
        view: id.to_string(),
        error: e.to_string(),
    };
    let v: serde_json::Value = serde_json::from_str(json).map_err(unreadable)?;
    let outside = |field: &str, value: &serde_json::Value, min: f64, max: f64| Refusal::ViewRange {
        view: id.to_string(),
        field: field.to_string(),
        value: value.to_string(),
        min,
        max,
    };
    for (view, pointer, min, max) in VIEW_RANGES {
        if view != id {
            continue;
        }
        if let Some(x) = v.pointer(pointer) {
            let ok = x
                .as_f64()
                .is_some_and(|f| f.is_finite() && (min..=max).contains(&f));
            if !ok {
                return Err(outside(&pointer[1..], x, min, max));
            }
        }
    }
    if id == "collectives" {
        if let Some(r) = v.pointer("/ranks").filter(|r| !r.is_null()) {
            if !r.as_u64().is_some_and(|r| (1..=MAX_TP as u64).contains(&r)) {
                return Err(outside("ranks", r, 1.0, MAX_TP as f64));
            }
        }
    }
    if id == "train" {
        if let Some(c) = v.get("config") {
            let cfg: TrainConfig = serde_json::from_value(c.clone()).map_err(unreadable)?;
            cfg.validate(&Corpus::guide()).map_err(Refusal::Train)?;
        }
    }
    Ok(())
}

/// Every view in side-bar order.
pub fn all_views() -> Vec<Box<dyn View>> {
    vec![
        Box::new(views::playground::Playground::default()),
        Box::new(views::step::StepThrough::default()),
        Box::new(views::design::Design),
        Box::new(views::collectives::Collectives::default()),
        Box::new(views::timeline::Timeline::default()),
        Box::new(views::memory::Memory::default()),
        Box::new(views::verify::Verify::default()),
        Box::new(views::precision::Precision::default()),
        Box::new(views::vocab::Vocab::default()),
        Box::new(views::train::Train::default()),
        Box::new(views::serve::Serve::default()),
        Box::new(views::planner::Planner::default()),
        Box::new(views::pipeline::Pipeline::default()),
        Box::new(views::cluster::ClusterView::default()),
        Box::new(views::moe::Moe::default()),
        Box::new(views::lessons::Lessons::default()),
        Box::new(views::quiz::Quiz::default()),
        Box::new(views::class::Class::default()),
        #[cfg(not(target_arch = "wasm32"))]
        Box::new(views::gpu::Gpu::default()),
        #[cfg(target_arch = "wasm32")]
        Box::new(views::gpu_notice::GpuNotice),
    ]
}

impl Default for TplabApp {
    fn default() -> Self {
        Self {
            views: all_views(),
            active: 0,
            shared: Shared::default(),
            theme: ThemeChoice::Light,
            applied_presenter: None,
            applied_theme: None,
            export_status: Arc::new(Mutex::new(None)),
            export_dir: default_export_dir(),
            restore_refused: Vec::new(),
            welcome: false,
            platform_bar: Default::default(),
            lab_notice: None,
            student: None,
            student_away: false,
            exam_away: None,
        }
    }
}

impl TplabApp {
    /// Restores the saved state, if any.
    pub fn new(cc: &eframe::CreationContext<'_>, launch: &Launch) -> Self {
        let mut app = Self::default();
        // The learner's app runs the Precision sweep and the training on first show; tests
        // (built from `default()`) start them only when they ask.
        app.shared.autostart_jobs = true;
        // Progress is saved the moment it is made, and read back here.
        app.shared.persist = true;
        if let Err(e) = app.shared.load_lab() {
            app.lab_notice = Some(e);
        }
        match cc
            .storage
            .and_then(|s| eframe::get_value::<Saved>(s, STORAGE_KEY))
        {
            Some(saved) => app.restore(saved),
            None => app.welcome = launch.view.is_none(),
        }
        app.apply_launch(&cc.egui_ctx, launch);
        app
    }

    /// Applies the command line's choices over the saved state: a teacher's
    /// `tplab --view walkthrough --presenter --lang tr` opens straight there.
    pub fn apply_launch(&mut self, ctx: &egui::Context, launch: &Launch) {
        if let Some(id) = launch.view.as_deref() {
            match tplab_lessons::View::from_name(id) {
                Some(view) => self.show_me(&ShowMe {
                    view,
                    challenge: launch.challenge,
                    ..Default::default()
                }),
                // A view no lesson opens (Class, GPU): selected as it is.
                None => {
                    self.select(id);
                    self.welcome = false;
                }
            }
        }
        if let Some(slug) = &launch.lesson {
            self.shared.open_lesson = Some(slug.clone());
        }
        if let Some(n) = launch.step {
            self.shared.open_step = Some(n.saturating_sub(1));
        }
        if launch.presenter {
            self.shared.presenter = true;
        }
        if let Some(theme) = launch.theme {
            self.set_theme(theme);
        }
        if let Some(lang) = launch.lang {
            crate::i18n::set_lang(ctx, lang);
        }
        if let Some(link) = &launch.class {
            self.join_class(Some(ctx), link.clone());
        }
    }

    /// Applies saved state, checking every value first: what is out of range is replaced by
    /// its default and named in [`TplabApp::restore_notice`].
    fn restore(&mut self, saved: Saved) {
        let mut refused = Vec::new();
        if let Some(config) = saved.config {
            match check_saved_config(&config) {
                Ok(()) => self.shared.scenario.set_config(config),
                Err(why) => refused.push(why),
            }
        }
        self.theme = saved.theme;
        // A name the certificate rules refuse is not restored (it is asked for again).
        if tplab_quiz::cert::check_name(saved.learner.trim()).is_ok() {
            self.shared.learner = saved.learner.trim().to_string();
        }
        for (id, json) in &saved.views {
            // The design lab's state was the Design view's before it was the lab's.
            if id == "design" && self.shared.design.version() <= 1 {
                if let Ok(mut d) = serde_json::from_str::<crate::lab::design::DesignLab>(json) {
                    d.settle();
                    self.shared.design = d;
                }
                continue;
            }
            if let Some(v) = self.views.iter_mut().find(|v| v.id() == id) {
                match check_saved_view(id, json) {
                    Ok(()) => v.load(json),
                    Err(why) => refused.push(why),
                }
            }
        }
        self.restore_refused = refused;
        if let Some(i) = self.views.iter().position(|v| v.id() == saved.active) {
            self.active = i;
        }
    }

    fn to_saved(&self) -> Saved {
        Saved {
            active: self.active_id().to_string(),
            theme: self.theme,
            config: Some(self.shared.scenario.config().clone()),
            learner: self.shared.learner.clone(),
            views: self
                .views
                .iter()
                .filter_map(|v| v.save().map(|s| (v.id().to_string(), s)))
                .collect(),
        }
    }

    /// What the last restore refused and reset to defaults, if anything, in `lang` (shown in
    /// the side bar).
    pub fn restore_notice(&self, lang: tplab_lessons::Lang) -> Option<String> {
        if self.restore_refused.is_empty() {
            return None;
        }
        let list: Vec<String> = self.restore_refused.iter().map(|r| r.text(lang)).collect();
        Some(crate::i18n::t_args(
            lang,
            "restore-notice",
            &[("list", list.join("; "))],
        ))
    }

    /// Restores saved state given as the JSON eframe stores (for tests and tools).
    pub fn restore_json(&mut self, json: &str) -> anyhow::Result<()> {
        let saved: Saved = serde_json::from_str(json)?;
        self.restore(saved);
        Ok(())
    }

    /// The saved state (JSON) of the view with this id, as it would be written on exit.
    pub fn view_state(&self, id: &str) -> Option<String> {
        self.views
            .iter()
            .find(|v| v.id() == id)?
            .state(&self.shared)
    }

    /// Restores the view with this id from state JSON, as a restart does (tests use it to set
    /// a view up); false if there is no such view.
    pub fn load_view_state(&mut self, id: &str, json: &str) -> bool {
        match self.views.iter_mut().find(|v| v.id() == id) {
            Some(v) => {
                v.load(json);
                true
            }
            None => false,
        }
    }

    /// Id of the view on screen.
    pub fn active_id(&self) -> &'static str {
        self.views.get(self.active).map_or("", |v| v.id())
    }

    /// Switches to the view with this id; false if there is none.
    pub fn select(&mut self, id: &str) -> bool {
        match self.views.iter().position(|v| v.id() == id) {
            Some(i) => {
                self.active = i;
                true
            }
            None => false,
        }
    }

    /// Applies a "Show me" target: scenario, view, then the view's own jump.
    pub fn show_me(&mut self, target: &ShowMe) {
        self.shared.settle_walk();
        if let Some(stage) = target.challenge {
            self.shared.act(crate::lab::Action::Design(
                crate::lab::design::DesignAction::SelectStage(stage),
            ));
            self.shared.apply_actions();
        }
        self.shared.apply_scenario(target);
        // A target opens exactly what it names: another TP size beside the scenario, or none.
        self.shared.beside.with = target.beside.map_or(
            crate::lab::beside::Beside::Nothing,
            crate::lab::beside::Beside::Tp,
        );
        if self.select(target.view.name()) {
            let shared = &mut self.shared;
            if let Some(v) = self.views.get_mut(self.active) {
                v.show_me(target, shared);
            }
        }
    }

    /// Joins a live class: a student's link makes this a student's device (the student view
    /// alone), the teacher's link opens the Class view as the console. `ctx` (the app's) is
    /// repainted whenever the server sends something.
    pub fn join_class(&mut self, ctx: Option<&egui::Context>, link: crate::lab::class::ClassLink) {
        let teacher = link.is_teacher();
        let mut client = crate::lab::class::ClassClient::new(link);
        client.export_dir = self.export_dir.clone();
        if let Some(ctx) = ctx {
            client.wake_with(ctx);
        }
        self.shared.class = Some(client);
        self.welcome = false;
        if teacher {
            self.student = None;
            self.select("class");
        } else {
            self.student = Some(Default::default());
        }
    }

    /// Whether this app is a student's device in a live class.
    pub fn is_student(&self) -> bool {
        self.student.is_some()
    }

    pub fn set_theme(&mut self, theme: ThemeChoice) {
        self.theme = theme;
    }

    /// Makes the GPU view show `probe` instead of this machine's (its settings kept), so tests
    /// and snapshots show the same findings on every machine; "Look again" probes for real.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn set_gpu_probe(&mut self, probe: tplab_kernels::Probe) {
        if let Some(v) = self.views.iter_mut().find(|v| v.id() == "gpu") {
            let gpu = views::gpu::Gpu::with_probe(probe, v.save().as_deref());
            *v = Box::new(gpu);
        }
    }

    /// Everything that is not drawing: keys, navigation, theme, the active view's clock.
    pub fn logic(&mut self, ctx: &egui::Context) {
        let ink = (self.theme, self.shared.presenter);
        if self.applied_theme != Some(ink) {
            ctx.set_theme(match self.theme {
                ThemeChoice::Light => egui::Theme::Light,
                ThemeChoice::Dark => egui::Theme::Dark,
            });
            // Every text colour at 4.5:1 or better, in both themes; the weak text at 7:1 on a
            // projector. From the theme's own colours each time (presenter mode goes back).
            let presenter = self.shared.presenter;
            ctx.all_styles_mut(|s| {
                s.visuals = if s.visuals.dark_mode {
                    egui::Visuals::dark()
                } else {
                    egui::Visuals::light()
                };
                if presenter {
                    crate::widgets::legible_visuals_at(
                        &mut s.visuals,
                        crate::widgets::PRESENTER_WEAK_CONTRAST,
                    );
                } else {
                    crate::widgets::legible_visuals(&mut s.visuals);
                }
            });
            self.applied_theme = Some(ink);
        }
        self.shared.keys = Default::default();
        // Digits are answers where the learner types or reads (a number typed in the Quiz, a
        // lesson), not TP sizes, even when the answer field has lost its focus.
        let typing_view = matches!(self.active_id(), "quiz" | "lessons");
        if !ctx.egui_wants_keyboard_input() {
            let focused = ctx.memory(|m| m.focused().is_some());
            ctx.input_mut(|i| {
                use egui::{Key, Modifiers};
                if i.consume_key(Modifiers::NONE, Key::F11)
                    || i.consume_key(Modifiers::NONE, Key::F5)
                {
                    self.shared.presenter = !self.shared.presenter;
                }
                // Space presses a control that has the keyboard focus (egui does that); with
                // nothing focused it plays and pauses.
                if !focused && i.consume_key(Modifiers::NONE, Key::Space) {
                    self.shared.keys.toggle_play = true;
                }
                // Every press is one step, however many arrive in one frame; a presentation
                // clicker sends PageDown / PageUp.
                for key in [Key::ArrowRight, Key::PageDown] {
                    while i.consume_key(Modifiers::NONE, key) {
                        self.shared.keys.step += 1;
                    }
                }
                for key in [Key::ArrowLeft, Key::PageUp] {
                    while i.consume_key(Modifiers::NONE, key) {
                        self.shared.keys.step -= 1;
                    }
                }
                if i.consume_key(Modifiers::NONE, Key::Home) {
                    self.shared.keys.restart = true;
                }
                let digits = [
                    Key::Num1,
                    Key::Num2,
                    Key::Num3,
                    Key::Num4,
                    Key::Num5,
                    Key::Num6,
                    Key::Num7,
                    Key::Num8,
                ];
                for (n, key) in digits.into_iter().enumerate() {
                    if !typing_view && i.consume_key(Modifiers::NONE, key) {
                        self.shared.scenario.set_tp(n + 1);
                    }
                }
            });
        }
        if self.applied_presenter != Some(self.shared.presenter) {
            if self.applied_presenter.is_none() {
                // Scroll bars that show whenever there is more to see: egui's default floating
                // bars appear only under the pointer, and on a projector nobody knows a page
                // goes on below the window's edge.
                ctx.all_styles_mut(|s| s.spacing.scroll = visible_scroll_bars());
            }
            let on = self.shared.presenter;
            // On a projector a tooltip covers the picture wherever a resting pointer is left:
            // it waits for a longer, deliberate hover there (egui's default is half a second).
            ctx.all_styles_mut(|s| {
                s.interaction.tooltip_delay = if on { PRESENTER_TOOLTIP_DELAY_S } else { 0.5 };
                s.interaction.show_tooltips_only_when_still = true;
            });
            ctx.send_viewport_cmd(egui::ViewportCommand::Fullscreen(on));
            ctx.set_zoom_factor(if on { PRESENTER_ZOOM } else { 1.0 });
            self.applied_presenter = Some(on);
        }
        // On a projector, type and pictures grow with the screen: body text of 14 points is
        // 28 pixels on a 1080-line screen (zoom 2), never below the 720-line layout's 1.6.
        if self.shared.presenter {
            let zoom = presenter_zoom(ctx);
            if (ctx.zoom_factor() - zoom).abs() > 0.01 {
                ctx.set_zoom_factor(zoom);
            }
        }
        // The live class: what the server sent since the last frame (never waits for it).
        if let Some(class) = &mut self.shared.class {
            class.poll();
            if matches!(
                class.state.status,
                crate::lab::class::Status::Connecting { .. }
            ) && class.started()
            {
                // The next retry, or the socket opening: look again soon.
                ctx.request_repaint_after(web_time::Duration::from_millis(200));
            }
        }
        // What the views asked for last frame: applied before anything is drawn from the state.
        self.shared.apply_actions();
        for target in self.shared.take_navigation() {
            self.show_me(&target);
        }
        if let Some(v) = self.views.get_mut(self.active) {
            v.logic(ctx, &mut self.shared);
        }
        self.shared.apply_actions();
        // A view may navigate from its logic: apply it before drawing.
        for target in self.shared.take_navigation() {
            self.show_me(&target);
        }
    }

    /// Draws the side bar and the active view.
    pub fn ui(&mut self, ui: &mut egui::Ui) {
        crate::widgets::focus_ring(ui.ctx());
        if let Some(student) = self.student.as_mut().filter(|_| !self.student_away) {
            // A student's device: the class alone, with the language switch on top.
            egui::Panel::top("tplab-class-bar").show(ui, |ui| {
                ui.horizontal_wrapped(|ui| {
                    let lang = crate::i18n::current_lang(ui.ctx());
                    for l in tplab_lessons::Lang::ALL {
                        if ui.selectable_label(lang == l, l.native_name()).clicked() {
                            crate::i18n::set_lang(ui.ctx(), l);
                        }
                    }
                });
            });
            egui::CentralPanel::default_margins().show(ui, |ui| {
                student.ui(ui, &mut self.shared);
            });
            match student.take_open() {
                // "Open it here": the lab at what the teacher pushed, from the next frame.
                Some(views::class_student::Opened::Push(pushed)) => {
                    self.student_away = true;
                    self.show_me(&pushed.show);
                    if let Some(step) = pushed.step {
                        self.shared.open_step = Some(step.saturating_sub(1));
                    }
                    ui.ctx().request_repaint();
                }
                // The exam's sitting in the Quiz view; graded by the class server.
                Some(views::class_student::Opened::Exam(seed)) => {
                    let name = self
                        .shared
                        .class
                        .as_ref()
                        .and_then(|c| c.state.me.as_ref().map(|m| m.1.clone()))
                        .unwrap_or_default();
                    let state = serde_json::json!({
                        "mode": "Exam",
                        "learner": name,
                        "sitting": {"seed": seed, "index": 0, "drafts": []},
                    });
                    if self.load_view_state("quiz", &state.to_string()) && self.select("quiz") {
                        self.student_away = true;
                        self.exam_away = Some(seed);
                    }
                    ui.ctx().request_repaint();
                }
                None => {}
            }
            return;
        }
        // Back to the class when the teacher opens a vote: the lab would answer the room's
        // question (the walkthrough's predictions reveal their answers). The exam stays open.
        if self.student_away && self.exam_away.is_none() {
            let voting = self.shared.class.as_ref().is_some_and(|c| {
                c.state
                    .question
                    .as_ref()
                    .is_some_and(|q| q.open_round().is_some())
            });
            if voting {
                self.student_away = false;
                ui.ctx().request_repaint();
            }
        }
        // Back to the class once the exam's sitting has been graded (or withdrawn).
        if let Some(seed) = self.exam_away {
            let open = self
                .shared
                .class
                .as_ref()
                .is_some_and(|c| c.state.exam_sitting == Some(seed));
            if !open {
                self.exam_away = None;
                self.student_away = false;
                ui.ctx().request_repaint();
            }
        }
        // A phone (under 600 points wide) folds the side bar into the same one-row menu.
        let narrow = ui.ctx().content_rect().width() < NARROW_WIDTH;
        // (A student's device away from the class has the row too: its "Back to the class".)
        if self.shared.presenter || narrow || self.student.is_some() {
            // Class mode: the whole width for the view, the navigation in one row on top.
            egui::Panel::top("tplab-presenter-bar").show(ui, |ui| self.presenter_bar(ui));
        } else {
            egui::Panel::left("tplab-nav")
                .resizable(false)
                .exact_size(SIDE_BAR_WIDTH)
                .show(ui, |ui| self.side_bar(ui));
        }
        egui::CentralPanel::default_margins().show(ui, |ui| {
            if self.welcome {
                self.welcome_ui(ui);
            } else if let Some(v) = self.views.get_mut(self.active) {
                // The lesson that explains the view: its heading draws the link.
                crate::widgets::links::set_page_lesson(ui.ctx(), &self.shared, v.id());
                if narrow {
                    // A phone: text wraps to the screen's width, and what cannot be narrower (a
                    // wide table, a picture) scrolls sideways instead of being cut off.
                    egui::ScrollArea::horizontal()
                        .id_salt("narrow-view")
                        .auto_shrink([false, false])
                        .show(ui, |ui| v.ui(ui, &mut self.shared));
                } else {
                    v.ui(ui, &mut self.shared);
                }
                crate::widgets::links::follow_page_lesson(ui.ctx(), &mut self.shared);
            }
        });
        // What the view asked for is applied at the start of the next frame: ask for one.
        if self.shared.has_actions() {
            ui.ctx().request_repaint();
        }
    }

    /// The first screen: three ways in, in the learner's language.
    fn welcome_ui(&mut self, ui: &mut egui::Ui) {
        let size = ui.style().text_styles[&egui::TextStyle::Body].size;
        ui.add_space(2.0 * size);
        ui.vertical_centered(|ui| {
            let lang = crate::i18n::current_lang(ui.ctx());
            let t = |id: &str| crate::i18n::t(lang, id);
            ui.heading(egui::RichText::new(t("welcome-title")).size(2.0 * size));
            ui.add_space(0.5 * size);
            ui.label(t("welcome-intro"));
            ui.add_space(size);
            ui.horizontal(|ui| {
                // Centred by hand: a row inside a centred column starts at its left edge.
                ui.add_space(((ui.available_width() - 14.0 * size) / 2.0).max(0.0));
                crate::i18n::language_switch(ui);
            });
            ui.add_space(1.5 * size);
            let button = |ui: &mut egui::Ui, id: &str| {
                ui.add_sized(
                    [24.0 * size, 2.6 * size],
                    egui::Button::new(egui::RichText::new(t(id)).size(1.2 * size)),
                )
                .clicked()
            };
            let mut target = None;
            if button(ui, "welcome-lesson") {
                target = Some(tplab_lessons::View::Lessons);
            }
            ui.add_space(0.5 * size);
            if button(ui, "welcome-walk") {
                target = Some(tplab_lessons::View::Step);
            }
            ui.add_space(0.5 * size);
            if button(ui, "welcome-quiz") {
                target = Some(tplab_lessons::View::Quiz);
            }
            ui.add_space(size);
            if ui.link(t("welcome-skip")).clicked() {
                target = Some(tplab_lessons::View::Playground);
            }
            if let Some(view) = target {
                self.welcome = false;
                self.shared.navigate(ShowMe {
                    view,
                    ..Default::default()
                });
            }
        });
    }

    /// `logic` then `ui`: one whole frame, for tests and the benchmark.
    pub fn frame(&mut self, ui: &mut egui::Ui) {
        let ctx = ui.ctx().clone();
        self.logic(&ctx);
        self.ui(ui);
    }

    /// Presenter mode's navigation: one row (view, language, theme, leave presenter mode).
    fn presenter_bar(&mut self, ui: &mut egui::Ui) {
        let lang = crate::i18n::current_lang(ui.ctx());
        let t = |id: &str| crate::i18n::t(lang, id);
        ui.horizontal_wrapped(|ui| {
            if self.student.is_some() {
                // A student looking at the lab: one tap back to the class.
                if ui.button(format!("‹ {}", t("class-back"))).clicked() {
                    self.student_away = false;
                }
            }
            ui.strong("tplab");
            let current = self
                .views
                .get(self.active)
                .map(|v| view_title(lang, v.as_ref()))
                .unwrap_or_default();
            let mut pick = None;
            egui::ComboBox::from_label(t("presenter-view"))
                .selected_text(current)
                .show_ui(ui, |ui| {
                    for (i, v) in self.views.iter().enumerate() {
                        if ui
                            .selectable_label(i == self.active, view_title(lang, v.as_ref()))
                            .clicked()
                        {
                            pick = Some(i);
                        }
                    }
                });
            if let Some(i) = pick {
                self.active = i;
                self.welcome = false;
            }
            ui.separator();
            for l in tplab_lessons::Lang::ALL {
                if ui.selectable_label(lang == l, l.native_name()).clicked() {
                    crate::i18n::set_lang(ui.ctx(), l);
                }
            }
            ui.separator();
            ui.selectable_value(&mut self.theme, ThemeChoice::Light, t("theme-light"));
            ui.selectable_value(&mut self.theme, ThemeChoice::Dark, t("theme-dark"));
            ui.separator();
            ui.checkbox(&mut self.shared.presenter, t("presenter-mode"))
                .on_hover_text(t("presenter-hint"));
        });
    }

    fn side_bar(&mut self, ui: &mut egui::Ui) {
        let lang = crate::i18n::current_lang(ui.ctx());
        let t = |id: &str| crate::i18n::t(lang, id);
        ui.add_space(4.0);
        ui.heading("tplab");
        // The scenario in words (its file-name label, h768-a12-…, means nothing to a learner,
        // not even on hover).
        let cfg = self.shared.scenario.config();
        ui.label(crate::i18n::t_args(
            lang,
            "side-scenario",
            &[
                ("hidden", cfg.hidden.to_string()),
                ("heads", cfg.heads.to_string()),
                ("tp", cfg.tp.to_string()),
                ("dtype", cfg.dtype.to_string()),
            ],
        ));
        ui.separator();
        egui::ScrollArea::vertical()
            .id_salt("side-bar")
            .auto_shrink([false, true])
            .max_height((ui.available_height() - 8.0 * ui.spacing().interact_size.y).max(120.0))
            .show(ui, |ui| {
                for (i, v) in self.views.iter().enumerate() {
                    let title = view_title(lang, v.as_ref());
                    if ui.selectable_label(i == self.active, title).clicked() {
                        self.active = i;
                        self.welcome = false;
                    }
                }
            });
        ui.separator();
        ui.horizontal_wrapped(|ui| {
            ui.selectable_value(&mut self.theme, ThemeChoice::Light, t("theme-light"));
            ui.selectable_value(&mut self.theme, ThemeChoice::Dark, t("theme-dark"));
        });
        ui.horizontal_wrapped(|ui| {
            for l in tplab_lessons::Lang::ALL {
                if ui.selectable_label(lang == l, l.native_name()).clicked() {
                    crate::i18n::set_lang(ui.ctx(), l);
                }
            }
        });
        ui.checkbox(&mut self.shared.presenter, t("presenter-mode"))
            .on_hover_text(t("presenter-hint"));
        if ui
            .button(t("export-png"))
            .on_hover_text(crate::i18n::t_args(
                lang,
                "export-hint",
                &[("dir", self.export_dir.display().to_string())],
            ))
            .clicked()
        {
            self.request_export(ui.ctx());
        }
        if let Ok(status) = self.export_status.lock() {
            if let Some(msg) = status.as_ref() {
                let text = match msg {
                    Ok(path) => {
                        crate::i18n::t_args(lang, "export-saved", &[("path", path.clone())])
                    }
                    Err(e) => crate::i18n::t_args(lang, "export-failed", &[("error", e.clone())]),
                };
                ui.add(egui::Label::new(egui::RichText::new(text).small()).wrap());
            }
        }
        self.platform_bar.ui(ui);
        if let Some(e) = &self.lab_notice {
            ui.separator();
            ui.label(
                egui::RichText::new(e.as_str())
                    .small()
                    .color(ui.visuals().warn_fg_color),
            );
        }
        let mut dismiss = false;
        if let Some(notice) = self.restore_notice(lang) {
            ui.separator();
            ui.label(
                egui::RichText::new(notice)
                    .small()
                    .color(ui.visuals().warn_fg_color),
            );
            dismiss = ui
                .small_button(crate::i18n::t(lang, "restore-ok"))
                .clicked();
        }
        if dismiss {
            self.restore_refused.clear();
        }
    }

    /// File name of an export: `tplab-<view>-<what it shows>.png`, what it shows being the
    /// view's own name for it (a lesson, a step) or the scenario label.
    pub fn export_file_name(&self) -> String {
        let what = self
            .views
            .get(self.active)
            .and_then(|v| v.export_name(&self.shared))
            .unwrap_or_else(|| self.shared.scenario.config().label());
        let what: String = what
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_') {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        format!("tplab-{}-{what}.png", self.active_id())
    }

    fn request_export(&mut self, ctx: &egui::Context) {
        let path = self.export_dir.join(self.export_file_name());
        let status = Arc::clone(&self.export_status);
        let repaint = ctx.clone();
        ctx.request_screenshot(move |image| {
            // A download in the browser (crate::platform), a file in the folder on the desktop.
            #[cfg(target_arch = "wasm32")]
            let result = crate::platform::export_png(
                &image,
                std::path::Path::new("."),
                &path.file_name().unwrap_or_default().to_string_lossy(),
            )
            .map(|_| ());
            #[cfg(not(target_arch = "wasm32"))]
            let result = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .map_err(anyhow::Error::from)
                .and_then(|()| save_png(&image, &path));
            let msg = match result {
                Ok(()) => Ok(path.display().to_string()),
                Err(e) => Err(format!("{e:#}")),
            };
            if let Ok(mut s) = status.lock() {
                *s = Some(msg);
            }
            repaint.request_repaint();
        });
    }
}

/// A view's side-bar title in the learner's language (the English title when no translation
/// exists).
pub fn view_title(lang: tplab_lessons::Lang, v: &dyn View) -> String {
    let id = format!("view-{}", v.id());
    match crate::i18n::t(lang, &id) {
        s if s == id => v.title().to_string(),
        s => s,
    }
}

/// Where exported PNGs go: the user's pictures folder (XDG_PICTURES_DIR, ~/Pictures,
/// %USERPROFILE%\Pictures), else the home folder, else the current folder.
pub fn default_export_dir() -> PathBuf {
    #[cfg(target_arch = "wasm32")]
    return PathBuf::from(".");
    #[cfg(not(target_arch = "wasm32"))]
    directories::UserDirs::new()
        .map(|u| {
            u.picture_dir()
                .map_or_else(|| u.home_dir().to_path_buf(), std::path::Path::to_path_buf)
        })
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Writes an egui image as PNG, atomically (temporary file, then rename).
pub fn save_png(image: &egui::ColorImage, path: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let [w, h] = image.size;
    let rgba: Vec<u8> = image.pixels.iter().flat_map(|c| c.to_array()).collect();
    let tmp = path.with_extension("png.tmp");
    let result = image::save_buffer_with_format(
        &tmp,
        &rgba,
        w as u32,
        h as u32,
        image::ColorType::Rgba8,
        image::ImageFormat::Png,
    )
    .with_context(|| format!("writing {}", tmp.display()))
    .and_then(|()| {
        std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))
    });
    if result.is_err() {
        // Nothing half-written is left behind.
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

impl eframe::App for TplabApp {
    fn logic(&mut self, ctx: &egui::Context, _frame: &mut eframe::Frame) {
        TplabApp::logic(self, ctx);
    }

    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        TplabApp::ui(self, ui);
    }

    fn save(&mut self, storage: &mut dyn eframe::Storage) {
        eframe::set_value(storage, STORAGE_KEY, &self.to_saved());
        if let Err(e) = self.shared.save_lab() {
            self.lab_notice = Some(e);
        }
    }
}

/// Opens the desktop window. Without a display, says how to use the CLI and exits non-zero.
#[cfg(not(target_arch = "wasm32"))]
pub fn run(launch: Launch) -> anyhow::Result<ExitCode> {
    let no_display = cfg!(target_os = "linux")
        && std::env::var_os("DISPLAY").is_none()
        && std::env::var_os("WAYLAND_DISPLAY").is_none();
    if no_display {
        print_no_display("no DISPLAY or WAYLAND_DISPLAY is set");
        return Ok(ExitCode::from(2));
    }
    let options = eframe::NativeOptions {
        viewport: egui::ViewportBuilder::default()
            .with_title("tplab — tensor parallelism lab")
            .with_inner_size([1280.0, 820.0])
            .with_min_inner_size([800.0, 560.0]),
        ..Default::default()
    };
    let result = eframe::run_native(
        "tplab",
        options,
        Box::new(move |cc| Ok(Box::new(TplabApp::new(cc, &launch)))),
    );
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(err) => {
            print_no_display(&err.to_string());
            Ok(ExitCode::from(2))
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn print_no_display(reason: &str) {
    eprintln!(
        "tplab: cannot open the desktop window ({reason}).\n\
         Everything is also available from the command line:\n  \
         tplab run --preset gpt2-small --tp 4   sharded pass vs the CPU reference\n  \
         tplab plan --help                      layouts for a model on a cluster\n  \
         tplab quiz                             the quizzes in the terminal\n\
         Run `tplab --help` for every command."
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lesson_target_maps_to_an_app_view() {
        let cat = tplab_lessons::Catalog::embedded().expect("the embedded lessons");
        let ids: Vec<&str> = all_views().iter().map(|v| v.id()).collect();
        for (l, t) in cat.show_me_targets() {
            assert!(
                ids.contains(&t.view.name()),
                "{}: no view '{}'",
                l.slug,
                t.view
            );
            // A lesson's target names its scenario: the button lands where the lesson says.
            assert!(t.scenario.preset.is_some(), "{}", l.slug);
        }
        // And every view a target can name is one of the app's.
        for v in tplab_lessons::View::ALL {
            assert!(ids.contains(&v.name()), "no app view '{v}'");
        }
    }

    use tplab_lessons::Lang;

    #[test]
    fn state_survives_a_restart() {
        let mut app = TplabApp::default();
        app.shared.scenario.set_tp(2);
        app.set_theme(ThemeChoice::Dark);
        app.show_me(&ShowMe {
            view: tplab_lessons::View::Step,
            pass: Some(tplab_engine::block::op::Pass::Backward),
            event: Some("mlp.f.bwd".into()),
            ..Default::default()
        });
        // What eframe's storage would hold, through its serde round trip.
        let json = serde_json::to_string(&app.to_saved()).expect("serialises");
        let saved: Saved = serde_json::from_str(&json).expect("parses");
        let mut restored = TplabApp::default();
        restored.restore(saved);
        assert_eq!(restored.active_id(), "step");
        assert_eq!(restored.theme, ThemeChoice::Dark);
        assert_eq!(restored.shared.scenario.config().tp, 2);
        let step_state = |a: &TplabApp| {
            a.views
                .iter()
                .find(|v| v.id() == "step")
                .and_then(|v| v.save())
        };
        assert_eq!(step_state(&restored), step_state(&app));
        assert!(step_state(&app).is_some_and(|s| !s.contains("\"position\":0.0")));
    }

    #[test]
    fn export_writes_a_png_that_reads_back() {
        let dir = std::env::temp_dir().join(format!("tplab-export-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let pixels = (0..12)
            .map(|i| egui::Color32::from_rgb(i * 20, 255 - i * 20, 7))
            .collect();
        let image = egui::ColorImage::new([4, 3], pixels);
        let path = dir.join(TplabApp::default().export_file_name());
        save_png(&image, &path).expect("saved");
        let back = image::open(&path).expect("readable").to_rgba8();
        assert_eq!(back.dimensions(), (4, 3));
        assert_eq!(back.get_pixel(1, 0).0, [20, 235, 7, 255]);
        assert!(
            !path.with_extension("png.tmp").exists(),
            "no temporary file left"
        );
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn out_of_range_saved_state_falls_back_to_defaults_and_says_so() {
        // The issue's examples: 10^8 layers grew memory past 7 GB on every start; hidden 10^11
        // spun at 100% CPU.
        for (field, value) in [("layers", 100_000_000u64), ("hidden", 100_000_000_000)] {
            let mut config = serde_json::to_value(Config::default()).expect("config");
            config[field] = value.into();
            let json = serde_json::json!({"active": "playground", "config": config}).to_string();
            let mut app = TplabApp::default();
            app.restore_json(&json).expect("parses");
            assert_eq!(app.shared.scenario.config(), &Config::default(), "{field}");
            let notice = app.restore_notice(Lang::En).expect("a notice");
            assert!(
                notice.contains(field) && notice.contains("defaults"),
                "{notice}"
            );
            // In the learner's language, naming the same field and numbers.
            let tr = app.restore_notice(Lang::Tr).expect("a notice");
            assert!(
                tr.contains(field) && tr.contains("varsayılan") && tr.contains(&value.to_string()),
                "{tr}"
            );
            assert!(!tr.contains("scenario") && !tr.contains("outside"), "{tr}");
        }
        // A view's state out of range: that view keeps its defaults, the others restore.
        let json = serde_json::json!({
            "config": Config { tp: 2, ..Config::default() },
            "views": [
                ["planner", r#"{"inputs":{"gpus":100000000000,"seq":2048}}"#],
                ["train", r#"{"config":{"steps":18446744073709551615}}"#],
                ["vocab", r#"{"vocab":1000,"granularity":64}"#],
            ],
        })
        .to_string();
        let mut app = TplabApp::default();
        app.restore_json(&json).expect("parses");
        assert_eq!(app.shared.scenario.config().tp, 2);
        let notice = app.restore_notice(Lang::En).expect("a notice");
        assert!(notice.contains("planner: inputs/gpus"), "{notice}");
        assert!(notice.contains("train:"), "{notice}");
        assert!(!notice.contains("vocab"), "{notice}");
        let tr = app.restore_notice(Lang::Tr).expect("a notice");
        let planner = crate::i18n::t(Lang::Tr, "view-planner");
        assert!(
            tr.contains(&format!("{planner}: inputs/gpus = 100000000000"))
                && tr.contains("1..=65536")
                && !tr.contains("outside"),
            "{tr}"
        );
        // The Train view's refusal by the engine: its rule, in Turkish too.
        let refusal = Refusal::Train(TrainError::TooManySteps {
            steps: 2_000_000,
            max: tplab_engine::labs::train::MAX_STEPS,
        });
        assert_eq!(
            refusal.text(Lang::En),
            "train: steps 2000000 is over the limit of 1000000; use fewer steps"
        );
        let train = crate::i18n::t(Lang::Tr, "view-train");
        assert_eq!(
            refusal.text(Lang::Tr),
            format!("{train}: 2000000 adım, 1000000 sınırının üzerinde; daha az adım kullanın")
        );
        assert!(app
            .view_state("vocab")
            .is_some_and(|s| s.contains("\"vocab\":1000")));
        assert!(app
            .view_state("planner")
            .is_some_and(|s| s.contains("\"gpus\":64")));
        // In-range state restores without a notice.
        let mut fine = TplabApp::default();
        fine.restore_json(&serde_json::to_string(&app.to_saved()).expect("json"))
            .expect("parses");
        assert!(
            fine.restore_notice(Lang::En).is_none(),
            "{:?}",
            fine.restore_notice(Lang::En)
        );
    }

    #[test]
    fn unknown_saved_view_falls_back_to_the_first() {
        let mut app = TplabApp::default();
        app.restore(Saved {
            active: "no-such-view".into(),
            ..Default::default()
        });
        assert_eq!(app.active_id(), "playground");
    }
}
