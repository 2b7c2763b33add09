//! Design: the learner shards the block. For each of the QKV projection, the output projection,
//! fc1 and fc2 they choose *whole / its columns / its rows* by clicking the matrix, turn sequence
//! parallelism on or off, and either let the rules place the collectives or place them by hand.
//! Everything answers from the engine ([`tplab_engine::block::design`]): the program the rules
//! derive, drawn as the block's chain of ops with the collectives where they happen; what every
//! GPU holds after each op; the first broken rule drawn where it happens, with its fixes as
//! buttons; the numbers of the program run against the unsharded reference; and the price beside
//! Megatron's plan. The challenges (`challenge.rs`) are graded by the engine from the same
//! report; solved ones are saved with the learner's quiz progress.

use super::{gpu_color, load_json, save_json, text_on, Shared, View};
use crate::i18n::{num, t, t_args};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, OnceLock};
use tplab_engine::block::design::challenge::{self, Challenge, Grade, Missing};
use tplab_engine::block::design::{
    design, DesignOptions, DesignReport, Fix, ManualCollective, ManualKind, Move, Norm, Place,
    Rule, ShardingPlan, Site, Split, Step, Weight,
};
use tplab_engine::config::{Config, Preset};
use tplab_lessons::Lang;

/// The challenges, built once (the view reads them every frame).
fn challenges() -> &'static [Challenge] {
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

    fn split_mut(&mut self, w: Weight) -> &mut Split {
        match w {
            Weight::Qkv => &mut self.qkv,
            Weight::Out => &mut self.out,
            Weight::Fc1 => &mut self.fc1,
            Weight::Fc2 => &mut self.fc2,
        }
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
fn free_config(tp: usize) -> Config {
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

/// What was computed for one state of the view.
type Key = (usize, usize, Setup, bool);

/// Design view state.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Design {
    /// 0: free design; 1 to 8: a challenge.
    stage: usize,
    /// TP of the free design (0: 2).
    free_tp: usize,
    setup: Setup,
    /// Stages whose hint was shown (the third star is for solving without it).
    hints: Vec<usize>,
    /// Best stars per challenge id, on this machine (also saved to the learner's progress).
    stars: std::collections::BTreeMap<String, u8>,
    /// Run a refused program anyway.
    run_anyway: bool,
    #[serde(skip)]
    cache: Option<(Key, Result<Arc<DesignReport>, String>)>,
    #[serde(skip)]
    grade: Option<(Key, Result<Grade, String>)>,
    /// Where the last solved challenge was saved, or why it was not.
    #[serde(skip)]
    saved: Option<Result<String, String>>,
    /// The trace of the plan on screen, for "Step through my plan" (or why it has none).
    #[serde(skip)]
    walk: Option<(Key, Result<Arc<tplab_engine::trace::Trace>, String>)>,
    /// Walks opened so far (each one's key in the walkthrough).
    #[serde(skip)]
    walks: u64,
}

impl View for Design {
    fn id(&self) -> &'static str {
        "design"
    }

    fn title(&self) -> &'static str {
        "Design"
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = super::lang(ui);
        ui.heading(t(lang, "design-title"));
        super::scrolling_page(ui, "design-page", |ui| self.page_ui(ui, shared));
    }

    fn show_me(&mut self, target: &super::ShowMe, _shared: &Shared) {
        if let Some(stage) = target.challenge {
            self.select_stage(stage);
        }
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
        if self.stage > challenges().len() {
            self.stage = 0;
        }
        if !FREE_TPS.contains(&self.free_tp) {
            self.free_tp = 2;
        }
    }
}

impl Design {
    /// The challenge on screen, if any.
    fn challenge(&self) -> Option<Challenge> {
        challenges().iter().find(|c| c.stage == self.stage).cloned()
    }

    /// Opens a challenge (0: the free design) at its starting plan.
    pub fn select_stage(&mut self, stage: usize) {
        self.stage = stage;
        self.grade = None;
        self.saved = None;
        self.run_anyway = false;
        match self.challenge() {
            Some(c) => self.setup = Setup::from_plan(&c.start),
            None => self.stage = 0,
        }
    }

    fn free_tp(&self) -> usize {
        if FREE_TPS.contains(&self.free_tp) {
            self.free_tp
        } else {
            2
        }
    }

    fn config(&self) -> Config {
        match self.challenge() {
            Some(c) => c.config,
            None => free_config(self.free_tp()),
        }
    }

    fn key(&self) -> Key {
        (
            self.stage,
            self.free_tp(),
            self.setup.clone(),
            self.run_anyway,
        )
    }

    /// The engine's report of the plan on screen (recomputed only when the plan changes).
    fn report(&mut self) -> Result<Arc<DesignReport>, String> {
        let key = self.key();
        if self.cache.as_ref().is_none_or(|(k, _)| *k != key) {
            let cfg = self.config();
            let opts = DesignOptions {
                allow_wrong: self.run_anyway,
                execute: true,
            };
            let r = design(&cfg, &self.setup.plan(), None, &opts)
                .map(Arc::new)
                .map_err(|e| e.to_string());
            self.cache = Some((key, r));
        }
        match &self.cache {
            // A shared handle: the frame draws the cached report without copying it.
            Some((_, Ok(r))) => Ok(Arc::clone(r)),
            Some((_, Err(e))) => Err(e.clone()),
            None => Err(String::new()),
        }
    }

    fn page_ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = super::lang(ui);
        shared.design_plan = Some((self.setup.plan(), self.config()));
        self.challenge_bar(ui, shared, lang);
        ui.separator();
        let report = match self.report() {
            Ok(r) => r,
            Err(e) => {
                ui.colored_label(ui.visuals().error_fg_color, e);
                return;
            }
        };
        let cfg = self.config();
        let wide = ui.available_width() > 900.0;
        // Wide: the layer and its error on the left, the verdict, the price and the lanes on the
        // right, so that a projector shows all of it without scrolling.
        if wide {
            ui.columns_const(|[left, right]| {
                self.block_ui(left, &report, &cfg, lang, shared.presenter);
                self.costs_ui(right, &report, &cfg, lang, true);
                self.walk_ui(right, &report, &cfg, lang, shared);
                right.separator();
                lanes_ui(right, &report, &cfg, lang);
            });
        } else {
            self.block_ui(ui, &report, &cfg, lang, shared.presenter);
            ui.separator();
            self.costs_ui(ui, &report, &cfg, lang, false);
            self.walk_ui(ui, &report, &cfg, lang, shared);
            ui.separator();
            lanes_ui(ui, &report, &cfg, lang);
        }
    }

    /// "Step through my plan": the walkthrough on this plan's own trace, drawn as Megatron's
    /// split is; a refused plan says why it has none.
    fn walk_ui(
        &mut self,
        ui: &mut egui::Ui,
        r: &DesignReport,
        cfg: &Config,
        lang: Lang,
        shared: &mut Shared,
    ) {
        let key = self.key();
        if self.walk.as_ref().is_none_or(|(k, _)| *k != key) {
            let t = tplab_engine::block::design::trace::trace(cfg, &r.program)
                .map(Arc::new)
                .map_err(|e| walk_error_text(lang, &e));
            self.walk = Some((key, t));
        }
        let Some((_, walk)) = &self.walk else { return };
        let button = ui
            .horizontal(|ui| {
                ui.add_enabled(walk.is_ok(), egui::Button::new(t(lang, "design-walk")))
            })
            .inner;
        crate::platform::mark("design-walk", button.rect);
        let button = match walk {
            Ok(_) => button.on_hover_text(t(lang, "design-walk-hint")),
            Err(why) => button.on_disabled_hover_text(why.as_str()),
        };
        if button.clicked() {
            if let Ok(trace) = walk {
                self.walks += 1;
                shared.walk_plan(super::PlanWalk {
                    plan: self.setup.plan(),
                    trace: Arc::clone(trace),
                    generation: self.walks,
                });
            }
        }
    }

    /// The challenge picker, its goal, hint, stars and the check.
    fn challenge_bar(&mut self, ui: &mut egui::Ui, shared: &mut Shared, lang: Lang) {
        let all = challenges();
        let n = all.len();
        let presenter = shared.presenter;
        ui.horizontal_wrapped(|ui| {
            let current = match self.challenge() {
                Some(c) => stage_title(lang, &c),
                None => t(lang, "design-free"),
            };
            let mut pick = self.stage;
            // On a projector the picker, the buttons and the stars share one row.
            let width = if presenter { 280.0 } else { 460.0 };
            egui::ComboBox::from_label(t(lang, "design-challenge"))
                .selected_text(current)
                .width(ui.available_width().min(width))
                .show_ui(ui, |ui| {
                    ui.selectable_value(&mut pick, 0, t(lang, "design-free"));
                    for c in all {
                        let stars = self.stars.get(c.id).copied().unwrap_or(0);
                        ui.selectable_value(
                            &mut pick,
                            c.stage,
                            format!("{}  {}", stage_title(lang, c), star_text(stars)),
                        );
                    }
                });
            if pick != self.stage {
                self.select_stage(pick);
            }
            let solved = self.stars.values().filter(|s| **s > 0).count();
            let count = t_args(
                lang,
                "design-solved-count",
                &[("solved", solved.to_string()), ("total", n.to_string())],
            );
            match self.challenge() {
                Some(c) if presenter => {
                    self.challenge_buttons(ui, shared, &c, Some(count));
                }
                _ => {
                    ui.label(count);
                }
            }
        });
        let Some(c) = self.challenge() else {
            ui.label(t(lang, "design-free-intro"));
            ui.horizontal(|ui| {
                ui.label(t(lang, "design-gpus"));
                for tp in FREE_TPS {
                    if ui
                        .selectable_label(
                            self.free_tp() == tp,
                            t_args(lang, "design-tp", &[("n", tp.to_string())]),
                        )
                        .clicked()
                    {
                        self.free_tp = tp;
                    }
                }
            });
            return;
        };
        ui.label(egui::RichText::new(challenge_text(lang, &c, "goal")).strong());
        if self.hints.contains(&c.stage) {
            ui.label(
                egui::RichText::new(t_args(
                    lang,
                    "design-hint-text",
                    &[("hint", challenge_text(lang, &c, "hint"))],
                ))
                .italics(),
            );
        }
        if !presenter {
            ui.horizontal_wrapped(|ui| self.challenge_buttons(ui, shared, &c, None));
        }
        let key = self.key();
        if let Some((k, g)) = &self.grade {
            let fresh = *k == key;
            match g {
                Ok(g) if g.solved && fresh => {
                    ui.colored_label(
                        super::ok_ink(ui),
                        t_args(lang, "design-solved", &[("stars", star_text(g.stars))]),
                    );
                    ui.label(t_args(
                        lang,
                        "design-why",
                        &[("why", challenge_text(lang, &c, "why"))],
                    ));
                    match &self.saved {
                        Some(Ok(who)) => {
                            ui.weak(t_args(lang, "design-saved", &[("name", who.clone())]));
                        }
                        Some(Err(e)) => {
                            ui.colored_label(ui.visuals().warn_fg_color, e);
                        }
                        None => {}
                    }
                }
                Ok(g) if fresh => {
                    ui.colored_label(ui.visuals().warn_fg_color, t(lang, "design-not-yet"));
                    for m in &g.missing {
                        ui.label(format!("• {}", missing_text(lang, m)));
                    }
                }
                Err(e) if fresh => {
                    ui.colored_label(ui.visuals().error_fg_color, e);
                }
                _ => {}
            }
        }
        // In class mode nobody is signed in: the name is asked for at a desk only.
        if shared.learner.trim().is_empty() && !shared.presenter {
            ui.horizontal(|ui| {
                let label = ui.weak(t(lang, "design-name"));
                ui.add(egui::TextEdit::singleline(&mut shared.learner).desired_width(200.0))
                    .labelled_by(label.id);
            });
        }
    }

    /// Saves a solved challenge: locally, and with the learner's quiz progress if a name is set.
    /// The hint, check and restart buttons, the best stars and the next challenge's button.
    fn challenge_buttons(
        &mut self,
        ui: &mut egui::Ui,
        shared: &mut Shared,
        c: &Challenge,
        count: Option<String>,
    ) {
        let lang = super::lang(ui);
        let n = challenges().len();
        let hinted = self.hints.contains(&c.stage);
        if !hinted
            && ui
                .button(t(lang, "design-hint"))
                .on_hover_text(t(lang, "design-hint-cost"))
                .clicked()
        {
            self.hints.push(c.stage);
        }
        let check = ui.button(t(lang, "design-check"));
        crate::platform::mark("design-check", check.rect);
        if check.clicked() {
            let used_hint = self.hints.contains(&c.stage);
            let g = c
                .grade(&self.setup.plan(), used_hint)
                .map_err(|e| e.to_string());
            if let Ok(g) = &g {
                if g.solved {
                    self.record(shared, c, g.stars);
                }
            }
            self.grade = Some((self.key(), g));
        }
        if ui.button(t(lang, "design-restart")).clicked() {
            self.select_stage(c.stage);
        }
        let best = self.stars.get(c.id).copied().unwrap_or(0);
        let stars = ui
            .label(egui::RichText::new(star_text(best)).size(20.0))
            .on_hover_text(t(lang, "design-stars-rule"));
        // On a projector the count of solved challenges is one hover away.
        if let Some(count) = count {
            stars.on_hover_text(count);
        }
        if c.stage < n && best > 0 && ui.button(t(lang, "design-next")).clicked() {
            self.select_stage(c.stage + 1);
        }
    }

    fn record(&mut self, shared: &Shared, c: &Challenge, stars: u8) {
        let best = self.stars.entry(c.id.to_string()).or_insert(0);
        *best = (*best).max(stars);
        let name = shared.learner.trim().to_string();
        if name.is_empty() {
            self.saved = None;
            return;
        }
        let now = tplab_quiz::unix_now_s();
        self.saved = Some(
            crate::platform::LearnerStore::open()
                .and_then(|s| s.update(&name, |p| p.record_challenge(c.id, stars, now)))
                .map(|_| name),
        );
    }

    /// The block as its chain of ops, the matrices clickable, the collectives where they happen,
    /// the first broken rule where it happens.
    fn block_ui(
        &mut self,
        ui: &mut egui::Ui,
        r: &DesignReport,
        cfg: &Config,
        lang: Lang,
        presenter: bool,
    ) {
        let free: Vec<Weight> = self
            .challenge()
            .map_or_else(|| Weight::ALL.to_vec(), |c| c.free.clone());
        // A class is shown the layer: on a projector its title opens the chain's first row (the
        // instructions one hover away) and the switches close its last, so that the error and
        // its fixes fit above the fold at 1280×720.
        if !presenter {
            ui.label(egui::RichText::new(t(lang, "design-block")).strong());
            ui.weak(t(lang, "design-click-matrix"));
        }
        let p = &r.program;
        // The refused op: the step after the first value a GPU misreads.
        let misread = p
            .forward
            .iter()
            .position(|s| matches!(s, Step::Redistribute(d) if p.value(d.to).mislabelled));
        // The op the first error names: the reader of the misread value, or the op a useless
        // collective follows.
        let error_step: Option<usize> = r.errors.first().and_then(|e| {
            use tplab_engine::block::design::ErrorAt;
            let after = misread.unwrap_or(0);
            p.forward.iter().enumerate().position(|(i, s)| match e.at {
                ErrorAt::Op(site) => i >= after && step_site(s, i, p) == Some(site),
                ErrorAt::Residual => i >= after && matches!(s, Step::Residual { .. }),
                ErrorAt::Collective(site) => step_site(s, i, p) == Some(site),
            })
        });
        let manual = self.setup.manual.is_some();
        let mut change: Option<Setup> = None;
        let mut row = |ui: &mut egui::Ui, steps: &[(usize, &Step)], first: bool, last: bool| {
            ui.horizontal_wrapped(|ui| {
                ui.spacing_mut().item_spacing.x = 4.0;
                if presenter {
                    ui.spacing_mut().item_spacing.y = 2.0;
                }
                if first && presenter {
                    ui.label(egui::RichText::new(t(lang, "design-block")).strong())
                        .on_hover_text(t(lang, "design-click-matrix"));
                }
                for &(i, s) in steps {
                    let reader_error = error_step == Some(i);
                    let site = step_site(s, i, p);
                    match s {
                        Step::Linear { weight, .. } => {
                            let split = p.plan.split(*weight);
                            let can = free.contains(weight);
                            let resp =
                                matrix_button(ui, lang, *weight, split, cfg.tp, can, reader_error);
                            if crate::platform::WEB {
                                crate::platform::mark(
                                    &format!("design-matrix-{}", weight.symbol()),
                                    resp.rect,
                                );
                            }
                            if resp.clicked() && can {
                                let mut next = self.setup.clone();
                                *next.split_mut(*weight) = cycle(split);
                                change = Some(next);
                            }
                        }
                        Step::Redistribute(d) if p.value(d.to).mislabelled => {
                            chip(
                                ui,
                                &t(lang, "design-nothing-here"),
                                ui.visuals().error_fg_color,
                                true,
                            );
                        }
                        Step::Redistribute(d) => {
                            if d.mv == Move::Slice {
                                chip(
                                    ui,
                                    &t(lang, "design-slice"),
                                    ui.visuals().weak_text_color(),
                                    false,
                                )
                                .on_hover_text(t(lang, "design-slice-why"));
                                continue;
                            }
                            let from = p.value(d.from);
                            let to = p.value(d.to);
                            let label = d.mv.name().to_string();
                            let resp = chip(ui, &label, collective_color(ui), true);
                            let why = t_args(
                                lang,
                                "design-collective-why",
                                &[
                                    ("tensor", from.tensor.name().to_string()),
                                    ("from", place_words(lang, from.place)),
                                    ("to", place_words(lang, to.place)),
                                ],
                            );
                            let resp = if d.manual && manual {
                                resp.on_hover_text(format!(
                                    "{why}\n{}",
                                    t(lang, "design-click-remove")
                                ))
                            } else {
                                resp.on_hover_text(why)
                            };
                            if resp.clicked() && d.manual && manual {
                                if let (Some(site), Some(kind)) = (
                                    tplab_engine::block::design::site_of(from.tensor),
                                    d.mv.manual_kind(),
                                ) {
                                    let mut next = self.setup.clone();
                                    next.apply(Fix::Remove { after: site, kind });
                                    change = Some(next);
                                }
                            }
                        }
                        _ => {
                            let colour = if reader_error {
                                ui.visuals().error_fg_color
                            } else {
                                ui.visuals().text_color()
                            };
                            chip(ui, &op_words(lang, s, p), colour, reader_error);
                        }
                    }
                    if manual {
                        if let Some(site) = site {
                            let menu = ui.menu_button("+", |ui| {
                                for kind in MANUAL_KINDS {
                                    if ui.button(kind.name()).clicked() {
                                        let mut next = self.setup.clone();
                                        next.apply(Fix::Collective {
                                            after: site,
                                            kind,
                                            bytes: 0,
                                            to: Place::Replicate,
                                        });
                                        change = Some(next);
                                        ui.close();
                                    }
                                }
                            });
                            menu.response.on_hover_text(t_args(
                                lang,
                                "design-add-here",
                                &[("op", site_words(lang, site))],
                            ));
                        }
                    }
                    ui.label("›");
                }
                if last && presenter {
                    ui.add_space(8.0);
                    switches(ui, lang, &self.setup, r, true, &mut change);
                }
            });
        };
        let steps: Vec<(usize, &Step)> = p.forward.iter().enumerate().collect();
        let split_at = steps
            .iter()
            .position(|(_, s)| {
                matches!(
                    s,
                    Step::LayerNorm {
                        norm: Norm::Ln2,
                        ..
                    }
                )
            })
            .unwrap_or(steps.len());
        row(ui, &steps[..split_at], true, false);
        row(ui, &steps[split_at..], false, true);
        if !presenter {
            ui.horizontal_wrapped(|ui| {
                switches(ui, lang, &self.setup, r, false, &mut change);
            });
        }
        if let Some(e) = r.errors.first() {
            ui.add_space(4.0);
            egui::Frame::group(ui.style())
                .stroke(egui::Stroke::new(2.0, ui.visuals().error_fg_color))
                .show(ui, |ui| {
                    ui.colored_label(ui.visuals().error_fg_color, rule_text(lang, e.kind, e));
                    ui.horizontal_wrapped(|ui| {
                        ui.label(t(lang, "design-fixes"));
                        for fix in &e.actions {
                            if matches!(fix, Fix::Slice) {
                                continue;
                            }
                            let allowed = match fix {
                                Fix::Split { weight, .. } => free.contains(weight),
                                _ => true,
                            };
                            if ui
                                .add_enabled(allowed, egui::Button::new(fix_text(lang, fix)))
                                .clicked()
                            {
                                let mut next = self.setup.clone();
                                next.apply(*fix);
                                change = Some(next);
                            }
                        }
                    });
                    let mut anyway = self.run_anyway;
                    if ui
                        .checkbox(&mut anyway, t(lang, "design-run-anyway"))
                        .changed()
                    {
                        self.run_anyway = anyway;
                    }
                });
        }
        if let Some(next) = change {
            self.setup = next;
        }
    }

    /// The verdict against the reference and the price beside Megatron's plan.
    /// `beside`: drawn to the right of the layer (else below it), where the refusal points to
    /// the broken rule.
    fn costs_ui(
        &self,
        ui: &mut egui::Ui,
        r: &DesignReport,
        cfg: &Config,
        lang: Lang,
        beside: bool,
    ) {
        ui.label(egui::RichText::new(t(lang, "design-costs")).strong());
        let ok = super::ok_ink(ui);
        let bad = ui.visuals().error_fg_color;
        let err = r
            .max_rel_error
            .map_or_else(String::new, |e| format!("{e:.1e}"));
        match (r.valid, r.equal_to_reference) {
            (true, Some(true)) => {
                ui.colored_label(
                    ok,
                    t_args(
                        lang,
                        "design-equal",
                        &[("error", err), ("tol", format!("{:.0e}", r.tolerance))],
                    ),
                );
            }
            (_, Some(false)) => {
                ui.colored_label(
                    bad,
                    t_args(
                        lang,
                        "design-differs",
                        &[("error", err), ("tol", format!("{:.0e}", r.tolerance))],
                    ),
                );
            }
            (false, None) => {
                let id = if beside {
                    "design-refused"
                } else {
                    "design-refused-above"
                };
                ui.colored_label(bad, t(lang, id));
            }
            _ => {}
        }
        if !r.per_tensor.is_empty() {
            let passed = r.per_tensor.iter().filter(|c| c.passed).count();
            ui.label(t_args(
                lang,
                "design-tensors",
                &[
                    ("passed", passed.to_string()),
                    ("total", r.per_tensor.len().to_string()),
                ],
            ));
        }
        let counts = |m: &std::collections::BTreeMap<&'static str, usize>| -> String {
            if m.values().all(|n| *n == 0) {
                return t(lang, "design-none");
            }
            m.iter()
                .filter(|(_, n)| **n > 0)
                .map(|(k, n)| format!("{n} × {k}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        egui::Grid::new("design-costs-grid")
            .num_columns(2)
            .spacing([12.0, 4.0])
            .show(ui, |ui| {
                ui.label(t(lang, "design-forward"));
                ui.label(counts(&r.price.collectives.forward));
                ui.end_row();
                ui.label(t(lang, "design-backward"));
                ui.label(counts(&r.price.collectives.backward));
                ui.end_row();
                ui.label(t(lang, "design-bytes"));
                let vs = match r.vs_megatron.bytes_ratio {
                    Some(x) => t_args(lang, "design-vs-megatron", &[("x", num(lang, x, 1))]),
                    None => String::new(),
                };
                ui.label(format!(
                    "{} {vs}",
                    crate::i18n::bytes(lang, r.price.bytes_sent_per_rank)
                ));
                ui.end_row();
                ui.label(t(lang, "design-weights"));
                let whole = whole_weight_bytes(cfg);
                ui.label(t_args(
                    lang,
                    "design-of-whole",
                    &[
                        (
                            "have",
                            crate::i18n::bytes(lang, r.price.weight_bytes_per_gpu),
                        ),
                        ("whole", crate::i18n::bytes(lang, whole)),
                    ],
                ));
                ui.end_row();
                ui.label(t(lang, "design-activations"));
                ui.label(crate::i18n::bytes(lang, r.price.activation_bytes_per_gpu));
                ui.end_row();
            });
        ui.weak(t_args(
            lang,
            "design-layer",
            &[
                ("hidden", cfg.hidden.to_string()),
                ("heads", cfg.heads.to_string()),
                ("kv", cfg.kv_heads.unwrap_or(cfg.heads).to_string()),
                ("tokens", cfg.tokens().to_string()),
                ("tp", cfg.tp.to_string()),
            ],
        ));
    }
}

const MANUAL_KINDS: [ManualKind; 4] = [
    ManualKind::AllReduce,
    ManualKind::ReduceScatter,
    ManualKind::AllGather,
    ManualKind::AllToAll,
];

/// The sequence-parallelism and place-it-myself switches (`short`: the first one's label
/// without its explanation); a switch flipped writes the plan it asks for into `change`.
fn switches(
    ui: &mut egui::Ui,
    lang: Lang,
    setup: &Setup,
    r: &DesignReport,
    short: bool,
    change: &mut Option<Setup>,
) {
    let mut sp = setup.sequence_parallel;
    // Short on a projector: the whole sentence is one hover away.
    let label = t(
        lang,
        if short {
            "design-sp-short"
        } else {
            "design-sp"
        },
    );
    let check = ui.checkbox(&mut sp, label);
    let check = if short {
        check.on_hover_text(t(lang, "design-sp"))
    } else {
        check
    };
    if check.changed() {
        let mut next = setup.clone();
        next.sequence_parallel = sp;
        *change = Some(next);
    }
    let mut by_hand = setup.manual.is_some();
    if ui
        .checkbox(&mut by_hand, t(lang, "design-by-hand"))
        .on_hover_text(t(lang, "design-by-hand-hint"))
        .changed()
    {
        let mut next = setup.clone();
        next.manual = if by_hand {
            // Start from what the rules placed: the learner removes or moves from there.
            Some(placed_collectives(r))
        } else {
            None
        };
        *change = Some(next);
    }
}

/// The collectives the rules placed, as a hand-placed list (where "by hand" starts).
fn placed_collectives(r: &DesignReport) -> Vec<(Site, ManualKind)> {
    let p = &r.program;
    p.forward
        .iter()
        .filter_map(|s| match s {
            Step::Redistribute(d) if !p.value(d.to).mislabelled => {
                let site = tplab_engine::block::design::site_of(p.value(d.from).tensor)?;
                Some((site, d.mv.manual_kind()?))
            }
            _ => None,
        })
        .collect()
}

/// Parameter bytes of the whole model (every GPU's share if nothing were split).
fn whole_weight_bytes(cfg: &Config) -> u64 {
    let eb = cfg.dtype.size_bytes() as u64;
    let per_layer: usize = tplab_engine::params::ParamKind::ALL
        .iter()
        .map(|k| {
            let [r, c] = k.shape(cfg);
            r * c
        })
        .sum();
    per_layer as u64 * cfg.layers as u64 * eb
}

fn cycle(s: Split) -> Split {
    match s {
        Split::Replicate => Split::Columns,
        Split::Columns => Split::Rows,
        Split::Rows => Split::Replicate,
    }
}

fn collective_color(ui: &egui::Ui) -> egui::Color32 {
    if ui.visuals().dark_mode {
        egui::Color32::from_rgb(0xF0, 0xA0, 0x40)
    } else {
        egui::Color32::from_rgb(0xA0, 0x50, 0x00)
    }
}

/// A framed piece of text with an optional icon of `icon` × `icon` points before it, drawn
/// with the painter so that the widget is one node for screen readers and tests.
fn framed(
    ui: &mut egui::Ui,
    text: &str,
    colour: egui::Color32,
    stroke: egui::Stroke,
    icon: f32,
    sense: egui::Sense,
) -> (egui::Response, egui::Rect) {
    let font = egui::TextStyle::Body.resolve(ui.style());
    let galley = ui.painter().layout_no_wrap(text.to_string(), font, colour);
    let pad = egui::vec2(6.0, 3.0);
    let gap = if icon > 0.0 { 6.0 } else { 0.0 };
    let h = galley.size().y.max(icon) + 2.0 * pad.y;
    let w = galley.size().x + icon + gap + 2.0 * pad.x;
    let (rect, resp) = ui.allocate_exact_size(egui::vec2(w, h), sense);
    let p = ui.painter();
    p.rect_stroke(rect, 6.0, stroke, egui::StrokeKind::Inside);
    let icon_rect = egui::Rect::from_min_size(
        egui::pos2(rect.left() + pad.x, rect.center().y - icon / 2.0),
        egui::vec2(icon, icon),
    );
    p.galley(
        egui::pos2(
            rect.left() + pad.x + icon + gap,
            rect.center().y - galley.size().y / 2.0,
        ),
        galley,
        colour,
    );
    super::a11y_label(&resp, text);
    (resp, icon_rect)
}

/// An op of the chain: its words in a rounded frame (`strong`: outlined in `colour`).
fn chip(ui: &mut egui::Ui, text: &str, colour: egui::Color32, strong: bool) -> egui::Response {
    let stroke = egui::Stroke::new(if strong { 2.0 } else { 1.0 }, colour);
    framed(ui, text, colour, stroke, 0.0, egui::Sense::click()).0
}

/// A weight as a clickable matrix: stripes in the GPUs' colours show its split.
fn matrix_button(
    ui: &mut egui::Ui,
    lang: Lang,
    w: Weight,
    split: Split,
    tp: usize,
    enabled: bool,
    error: bool,
) -> egui::Response {
    let dark = ui.visuals().dark_mode;
    let size = ui.text_style_height(&egui::TextStyle::Body) * 1.6;
    let text = format!("{} · {}", weight_words(lang, w), split_words(lang, split));
    let stroke = egui::Stroke::new(
        if error { 2.5 } else { 1.5 },
        if error {
            ui.visuals().error_fg_color
        } else {
            ui.visuals().widgets.inactive.fg_stroke.color
        },
    );
    let sense = if enabled {
        egui::Sense::click()
    } else {
        egui::Sense::hover()
    };
    let (resp, rect) = framed(ui, &text, ui.visuals().text_color(), stroke, size, sense);
    let painter = ui.painter();
    let n = tp.max(1);
    if split == Split::Replicate {
        painter.rect_filled(rect, 2.0, ui.visuals().widgets.inactive.bg_fill);
    } else {
        for r in 0..n {
            let f0 = r as f32 / n as f32;
            let f1 = (r + 1) as f32 / n as f32;
            let part = match split {
                Split::Columns => egui::Rect::from_x_y_ranges(
                    rect.left() + f0 * rect.width()..=rect.left() + f1 * rect.width(),
                    rect.y_range(),
                ),
                _ => egui::Rect::from_x_y_ranges(
                    rect.x_range(),
                    rect.top() + f0 * rect.height()..=rect.top() + f1 * rect.height(),
                ),
            };
            painter.rect_filled(part, 0.0, gpu_color(r, dark));
        }
    }
    painter.rect_stroke(
        rect,
        2.0,
        egui::Stroke::new(1.0, ui.visuals().text_color()),
        egui::StrokeKind::Inside,
    );
    let resp = if enabled {
        resp.on_hover_text(t(lang, "design-cycle"))
    } else {
        resp.on_hover_text(t(lang, "design-fixed-weight"))
    };
    if enabled && resp.hovered() {
        ui.ctx().set_cursor_icon(egui::CursorIcon::PointingHand);
    }
    resp
}

/// What every GPU holds after each op: one row per GPU, one cell per value of the program.
fn lanes_ui(ui: &mut egui::Ui, r: &DesignReport, cfg: &Config, lang: Lang) {
    let p = &r.program;
    ui.label(egui::RichText::new(t(lang, "design-lanes")).strong());
    ui.weak(t(lang, "design-lanes-key"));
    let dark = ui.visuals().dark_mode;
    let error = ui.visuals().error_fg_color;
    let mut values = vec![p.input];
    for s in &p.forward {
        let out = match s {
            // A bias keeps its input's placement: no column of its own.
            Step::Bias { .. } => continue,
            Step::LayerNorm { y, .. } | Step::Linear { y, .. } => *y,
            Step::Residual { y, .. } => *y,
            Step::Attention { ctx, .. } => *ctx,
            Step::Gelu { u, .. } => *u,
            Step::Redistribute(d) => d.to,
        };
        values.push(out);
    }
    // Drawn with the painter into the width given: every column fits, whatever the window.
    let body = ui.text_style_height(&egui::TextStyle::Body);
    let small = egui::TextStyle::Small.resolve(ui.style());
    let label_w = ui
        .painter()
        .layout_no_wrap(
            format!("GPU {}", cfg.tp.saturating_sub(1)),
            egui::TextStyle::Body.resolve(ui.style()),
            egui::Color32::WHITE,
        )
        .size()
        .x
        + 8.0;
    let width = ui.available_width();
    let n = values.len().max(1);
    let col_w = ((width - label_w) / n as f32).min(body * 3.0);
    let row_h = body * 1.4;
    let head_h = small.size * 1.4;
    let (rect, _) = ui.allocate_exact_size(
        egui::vec2(label_w + col_w * n as f32, head_h + row_h * cfg.tp as f32),
        egui::Sense::hover(),
    );
    let painter = ui.painter_at(rect);
    for (i, &v) in values.iter().enumerate() {
        let x = rect.left() + label_w + col_w * (i as f32 + 0.5);
        painter.text(
            egui::pos2(x, rect.top() + head_h / 2.0),
            egui::Align2::CENTER_CENTER,
            p.value(v).tensor.name(),
            small.clone(),
            ui.visuals().weak_text_color(),
        );
    }
    for rank in 0..cfg.tp {
        let y0 = rect.top() + head_h + row_h * rank as f32;
        painter.text(
            egui::pos2(rect.left(), y0 + row_h / 2.0),
            egui::Align2::LEFT_CENTER,
            format!("GPU {rank}"),
            egui::TextStyle::Body.resolve(ui.style()),
            super::gpu_ink(rank, dark),
        );
        for (i, &v) in values.iter().enumerate() {
            let val = p.value(v);
            let cellr = egui::Rect::from_min_size(
                egui::pos2(rect.left() + label_w + col_w * i as f32, y0),
                egui::vec2(col_w, row_h),
            )
            .shrink(1.5);
            let fill = match val.place {
                Place::Replicate => ui.visuals().widgets.inactive.bg_fill,
                Place::Partial => ui.visuals().warn_fg_color,
                _ => gpu_color(rank, dark),
            };
            let fill = if val.mislabelled { error } else { fill };
            painter.rect_filled(cellr, 3.0, fill);
            let ink = egui::Stroke::new(1.5, text_on(fill));
            // Columns: vertical bars; tokens: horizontal bars; a partial sum: Σ.
            match val.place {
                Place::Features => {
                    for k in 1..4 {
                        let x = cellr.left() + cellr.width() * k as f32 / 4.0;
                        painter.line_segment(
                            [
                                egui::pos2(x, cellr.top() + 3.0),
                                egui::pos2(x, cellr.bottom() - 3.0),
                            ],
                            ink,
                        );
                    }
                }
                Place::Tokens => {
                    for k in 1..4 {
                        let y = cellr.top() + cellr.height() * k as f32 / 4.0;
                        painter.line_segment(
                            [
                                egui::pos2(cellr.left() + 3.0, y),
                                egui::pos2(cellr.right() - 3.0, y),
                            ],
                            ink,
                        );
                    }
                }
                Place::Partial => {
                    painter.text(
                        cellr.center(),
                        egui::Align2::CENTER_CENTER,
                        "Σ",
                        egui::FontId::proportional(row_h * 0.6),
                        text_on(fill),
                    );
                }
                Place::Replicate => {}
            }
            let words = t_args(
                lang,
                "design-holds",
                &[
                    ("gpu", rank.to_string()),
                    ("what", place_words(lang, val.place)),
                    ("tensor", val.tensor.name().to_string()),
                ],
            );
            let words = if val.mislabelled {
                format!("{words}\n{}", t(lang, "design-misread"))
            } else {
                words
            };
            let resp = ui.interact(
                cellr,
                ui.scope_id().with(("design-lane", rank, i)),
                egui::Sense::hover(),
            );
            super::a11y_label(&resp, &words);
            resp.on_hover_text(words);
        }
    }
}

/// The site a step's output belongs to (where a hand-placed collective after it goes).
fn step_site(s: &Step, i: usize, p: &tplab_engine::block::design::Program) -> Option<Site> {
    match s {
        Step::LayerNorm {
            norm: Norm::Ln1, ..
        } => Some(Site::Ln1),
        Step::LayerNorm {
            norm: Norm::Ln2, ..
        } => Some(Site::Ln2),
        Step::Linear { weight, .. } => Some(match weight {
            Weight::Qkv => Site::Qkv,
            Weight::Out => Site::Out,
            Weight::Fc1 => Site::Fc1,
            Weight::Fc2 => Site::Fc2,
        }),
        Step::Attention { .. } => Some(Site::Attention),
        Step::Gelu { .. } => Some(Site::Gelu),
        // The first residual add (the second is the block's output).
        Step::Residual { .. } => {
            let first = p
                .forward
                .iter()
                .position(|s| matches!(s, Step::Residual { .. }));
            (first == Some(i)).then_some(Site::AttnResidual)
        }
        _ => None,
    }
}

fn op_words(lang: Lang, s: &Step, p: &tplab_engine::block::design::Program) -> String {
    match s {
        Step::LayerNorm {
            norm: Norm::Ln1, ..
        } => t(lang, "design-op-ln1"),
        Step::LayerNorm {
            norm: Norm::Ln2, ..
        } => t(lang, "design-op-ln2"),
        Step::Attention { .. } => t(lang, "design-op-attention"),
        Step::Gelu { .. } => "GeLU".into(),
        Step::Bias { once, .. } => {
            if *once {
                t(lang, "design-op-bias-once")
            } else {
                t(lang, "design-op-bias")
            }
        }
        Step::Residual { y, .. } => {
            if *y == p.output {
                t(lang, "design-op-residual-out")
            } else {
                t(lang, "design-op-residual")
            }
        }
        Step::Linear { weight, .. } => weight_words(lang, *weight),
        Step::Redistribute(d) => d.mv.name().into(),
    }
}

pub fn weight_words(lang: Lang, w: Weight) -> String {
    t(
        lang,
        match w {
            Weight::Qkv => "design-w-qkv",
            Weight::Out => "design-w-out",
            Weight::Fc1 => "design-w-fc1",
            Weight::Fc2 => "design-w-fc2",
        },
    )
}

/// A plan in words: each weight's split, and sequence parallelism when it is on
/// ("QKV projection its columns · output projection its rows · …").
pub fn plan_words(lang: Lang, plan: &ShardingPlan) -> String {
    let splits = Weight::ALL
        .iter()
        .map(|&w| {
            format!(
                "{} {}",
                weight_words(lang, w),
                split_words(lang, plan.split(w))
            )
        })
        .collect::<Vec<_>>()
        .join(" · ");
    if plan.sequence_parallel {
        format!("{splits} · {}", t(lang, "st-plan-sp"))
    } else {
        splits
    }
}

pub fn split_words(lang: Lang, s: Split) -> String {
    t(
        lang,
        match s {
            Split::Replicate => "design-split-whole",
            Split::Columns => "design-split-columns",
            Split::Rows => "design-split-rows",
        },
    )
}

pub fn place_words(lang: Lang, p: Place) -> String {
    t(
        lang,
        match p {
            Place::Replicate => "design-place-whole",
            Place::Tokens => "design-place-tokens",
            Place::Features => "design-place-columns",
            Place::Partial => "design-place-partial",
        },
    )
}

fn site_words(lang: Lang, s: Site) -> String {
    match s {
        Site::Ln1 => t(lang, "design-op-ln1"),
        Site::Qkv => weight_words(lang, Weight::Qkv),
        Site::Attention => t(lang, "design-op-attention"),
        Site::Out => weight_words(lang, Weight::Out),
        Site::AttnResidual => t(lang, "design-op-residual"),
        Site::Ln2 => t(lang, "design-op-ln2"),
        Site::Fc1 => weight_words(lang, Weight::Fc1),
        Site::Gelu => "GeLU".into(),
        Site::Fc2 => weight_words(lang, Weight::Fc2),
    }
}

/// A broken rule in the learner's language.
pub fn rule_text(lang: Lang, kind: Rule, e: &tplab_engine::block::design::DesignError) -> String {
    let gpu = e.rank.to_string();
    let tensor = e.tensor.to_string();
    let holds = place_words(lang, e.holds);
    let (id, extra): (&str, Vec<(&str, String)>) = match kind {
        Rule::GeluPartial => ("design-rule-gelu-partial", vec![]),
        Rule::AttentionPartial => ("design-rule-attention-partial", vec![]),
        Rule::AttentionTokens => ("design-rule-attention-tokens", vec![]),
        Rule::NormPartial => ("design-rule-norm-partial", vec![]),
        Rule::NormColumns => ("design-rule-norm-columns", vec![]),
        Rule::ColumnSplitNeedsWhole(w) => (
            "design-rule-columns-need-whole",
            vec![("weight", weight_words(lang, w))],
        ),
        Rule::RowSplitNeedsColumns(w) => (
            "design-rule-rows-need-columns",
            vec![("weight", weight_words(lang, w))],
        ),
        Rule::WholeWeightNeedsRows(w) => (
            "design-rule-whole-needs-rows",
            vec![("weight", weight_words(lang, w))],
        ),
        Rule::ResidualPartial { stream } => (
            "design-rule-residual-partial",
            vec![("stream", place_words(lang, stream))],
        ),
        Rule::ResidualMismatch { stream } => (
            "design-rule-residual-mismatch",
            vec![("stream", place_words(lang, stream))],
        ),
        Rule::NothingToDo { kind, after } => (
            "design-rule-nothing-to-do",
            vec![
                ("kind", kind.name().to_string()),
                ("op", site_words(lang, after)),
            ],
        ),
        Rule::Other => ("design-rule-other", vec![]),
    };
    let mut args = vec![("gpu", gpu), ("tensor", tensor), ("holds", holds)];
    args.extend(extra);
    t_args(lang, id, &args)
}

pub fn fix_text(lang: Lang, f: &Fix) -> String {
    match *f {
        Fix::Collective {
            after,
            kind,
            bytes,
            to,
        } => t_args(
            lang,
            "design-fix-collective",
            &[
                ("kind", kind.name().to_string()),
                ("op", site_words(lang, after)),
                ("bytes", crate::i18n::bytes(lang, bytes)),
                ("to", place_words(lang, to)),
            ],
        ),
        Fix::Slice => t(lang, "design-slice"),
        Fix::Split { weight, split } => t_args(
            lang,
            "design-fix-split",
            &[
                ("weight", weight_words(lang, weight)),
                ("split", split_words(lang, split)),
            ],
        ),
        Fix::Remove { after, kind } => t_args(
            lang,
            "design-fix-remove",
            &[
                ("kind", kind.name().to_string()),
                ("op", site_words(lang, after)),
            ],
        ),
    }
}

pub fn missing_text(lang: Lang, m: &Missing) -> String {
    match m {
        Missing::Refused { .. } => t(lang, "design-miss-refused"),
        Missing::Differs => t(lang, "design-miss-differs"),
        Missing::ForwardCollectives {
            all_reduce,
            others,
            want_all_reduce,
            want_others,
        } => t_args(
            lang,
            "design-miss-count",
            &[
                ("ar", all_reduce.to_string()),
                ("others", others.to_string()),
                ("goalar", want_all_reduce.to_string()),
                ("goalothers", want_others.to_string()),
            ],
        ),
        Missing::TooCheap { have, want } => t_args(
            lang,
            "design-miss-cheap",
            &[("have", num(lang, *have, 1)), ("want", num(lang, *want, 0))],
        ),
        Missing::PlaceByHand => t(lang, "design-miss-by-hand"),
        Missing::RefusedElsewhere { .. } => t(lang, "design-miss-elsewhere"),
        Missing::NotRefused => t(lang, "design-miss-not-refused"),
        Missing::SequenceParallelOff => t(lang, "design-miss-sp"),
        Missing::StillAllReduces(n) => {
            t_args(lang, "design-miss-still-ar", &[("n", n.to_string())])
        }
        Missing::WholeWeight => t(lang, "design-miss-whole"),
    }
}

/// Why a plan has no trace to step through, in the learner's language.
fn walk_error_text(lang: Lang, e: &tplab_engine::block::design::trace::TraceError) -> String {
    use tplab_engine::block::design::trace::TraceError;
    match e {
        TraceError::Refused(_) => t(lang, "design-walk-refused"),
    }
}

/// A challenge's text in the learner's language (`design-ch-<id>-<part>`; the English file
/// holds the engine's own words, a test checks they agree).
pub fn challenge_text(lang: Lang, c: &Challenge, part: &str) -> String {
    t(lang, &format!("design-ch-{}-{part}", c.id))
}

fn stage_title(lang: Lang, c: &Challenge) -> String {
    format!("{}. {}", c.stage, challenge_text(lang, c, "title"))
}

fn star_text(stars: u8) -> String {
    (0..3).map(|i| if i < stars { '★' } else { '☆' }).collect()
}
