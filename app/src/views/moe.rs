//! MoE: one Mixture-of-Experts MLP layer on EP × ETP virtual GPUs, stepped through in the
//! walkthrough's style: (1) the router picks each token's top-k experts and their gates,
//! (2) the capacity drops what does not fit, (3) the dispatch all-to-all sends token rows to
//! their experts' GPUs, (4) the experts compute (fc1 columns and fc2 rows per ETP rank, the ETP
//! all-reduce), (5) the combine all-to-all brings the rows home, (6) each token sums its experts'
//! outputs weighted by the gates; (7) the backward's collectives.
//!
//! Nothing here computes a number the drawing shows: the routing, the gates, the drops, the
//! bytes and the differences from the unsharded reference are the engine's
//! ([`moe::run_with`], [`moe::reference::route`] on the same seeded model); the view only counts
//! the engine's kept assignments per pair of EP ranks to draw the all-to-all's routes.
//!
//! ```text
//!   tokens ×  experts          GPU 0 ──rows──▶ GPU 1          GPU 0 [expert 0][expert 1]
//!   ■ ■ · ·   (picked, gate)   GPU 1 ──rows──▶ GPU 0          GPU 1 [expert 2][expert 3]
//!   step 1-2: the routing      step 3 and 5: the all-to-all    step 4: the experts
//! ```

use crate::i18n::{bytes, num, sci, t, t_args};
use crate::lab::load_json;
use crate::lab::save_json;
use crate::lab::Shared;
use crate::lab::View;
use crate::widgets::a11y_label;
use crate::widgets::gpu_color;
use crate::widgets::keep_together;
use crate::widgets::slider_extra;
use crate::widgets::text_on;
use crate::widgets::text_shape;
use crate::widgets::COMBO_EXTRA;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tplab_engine::collectives::Algorithm;
use tplab_engine::labs::moe::{
    self, reference::Routing, Gate, MoeConfig, MoeError, MoeModel, MoeReport,
};
use tplab_lessons::Lang;

/// Hidden size and each expert's FFN width: the CLI's defaults, so a layer runs in milliseconds.
pub const HIDDEN: usize = 32;
pub const FFN: usize = 64;
/// What the controls allow: every token and expert stays a readable cell of the routing picture.
pub const MAX_EXPERTS: usize = 16;
pub const MAX_TOP_K: usize = 4;
pub const MAX_EP: usize = 8;
pub const MAX_ETP: usize = 4;
pub const MAX_TOKENS: usize = 64;
/// The model's seed (the CLI's default: the lesson's numbers are this layer's).
pub const SEED: u64 = 42;
/// Bytes of one number (the lab runs in f64).
const NUMBER_BYTES: u64 = 8;

/// The steps: router, capacity, dispatch, experts, combine, weighted sum, backward.
pub const STEPS: usize = 7;
/// The dispatch's step (index), where the prediction is asked.
pub const DISPATCH_STEP: usize = 2;
const STEP_IDS: [&str; STEPS] = [
    "router", "capacity", "dispatch", "experts", "combine", "sum", "backward",
];

/// A scenario to start from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// Mixtral's routing (8 experts, top-2, gates renormalised over the two) scaled down to a
    /// CPU: 64 tokens, hidden 32, EP 4 (`tplab moe`'s defaults, lesson 16's numbers).
    #[default]
    Mixtral,
    /// Switch Transformer's top-1 with softmax gates and a capacity factor of 1: drops.
    Switch,
    /// Experts split further by expert-tensor parallelism: 4 experts, EP 2 × ETP 2.
    Etp,
    /// The learner's own choice.
    Custom,
}

impl Preset {
    pub const ALL: [Preset; 3] = [Preset::Mixtral, Preset::Switch, Preset::Etp];

    fn id(self) -> &'static str {
        match self {
            Preset::Mixtral => "mixtral",
            Preset::Switch => "switch",
            Preset::Etp => "etp",
            Preset::Custom => "custom",
        }
    }
}

/// The gate rule, as the view saves it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GateChoice {
    #[default]
    Renormalized,
    Softmax,
}

impl GateChoice {
    fn gate(self) -> Gate {
        match self {
            GateChoice::Renormalized => Gate::Renormalized,
            GateChoice::Softmax => Gate::Softmax,
        }
    }
}

/// MoE view state.
#[derive(Serialize, Deserialize)]
#[serde(default)]
pub struct Moe {
    pub preset: Preset,
    pub experts: usize,
    pub top_k: usize,
    pub ep: usize,
    pub etp: usize,
    pub tokens: usize,
    /// Whether a capacity factor limits each expert's tokens (off: no limit).
    pub capacity_limited: bool,
    pub capacity_factor: f64,
    pub gate: GateChoice,
    /// The step, with its fraction while playing (0 = router).
    pub position: f32,
    pub playing: bool,
    pub speed_steps_per_s: f32,
    /// Ask for GPU 0's dispatch bytes before showing them.
    pub predict: bool,
    /// Answers given: the configuration's key → the option picked (`None`: revealed unanswered).
    #[serde(skip)]
    answers: BTreeMap<String, Option<usize>>,
    #[serde(skip)]
    cache: Option<(MoeConfig, Result<Built, MoeError>)>,
}

impl Default for Moe {
    fn default() -> Self {
        Self::with_preset(Preset::Mixtral)
    }
}

/// What the drawing shows: the engine's report and routing for one configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    pub report: MoeReport,
    /// The reference's routing: each token's experts, gates and which fit the capacity.
    pub routing: Routing,
    /// `rows[s][d]`: kept assignments whose token lives on EP rank `s` and whose expert on EP
    /// rank `d` (the dispatch's rows from `s` to `d`; the combine sends them back).
    pub rows: Vec<Vec<usize>>,
}

impl Built {
    pub fn config(&self) -> &MoeConfig {
        &self.report.config
    }

    /// Bytes each GPU sends in the collective named `name` (zeros if the engine has none).
    pub fn sent(&self, name: &str) -> Vec<u64> {
        self.report
            .comm(name)
            .map(|c| c.bytes_sent_per_gpu.clone())
            .unwrap_or_else(|| vec![0; self.config().gpus()])
    }

    /// The EP rank holding token `t`.
    pub fn token_rank(&self, t: usize) -> usize {
        let c = self.config();
        (0..c.ep)
            .find(|&e| c.rank_tokens(e).contains(&t))
            .unwrap_or(0)
    }

    /// Assignments dropped by the capacity.
    pub fn dropped(&self) -> usize {
        self.report.routing.dropped.len()
    }

    /// The largest |difference| from the reference of the outputs, and of every gradient.
    pub fn max_differences(&self) -> (f64, f64) {
        let mut out = (0.0f64, 0.0f64);
        for c in &self.report.checks {
            if c.what == tplab_engine::labs::moe::MoeQuantity::Output {
                out.0 = out.0.max(c.max_abs_error);
            } else {
                out.1 = out.1.max(c.max_abs_error);
            }
        }
        out
    }
}

/// Runs the engine on `cfg`: the report (reference against sharded) and the reference's routing
/// of the same seeded model.
pub fn build(cfg: &MoeConfig) -> Result<Built, MoeError> {
    cfg.validate()?;
    let model = MoeModel::random(cfg);
    let report = moe::run_with(cfg, &model)?;
    let routing = moe::reference::route(cfg, &model);
    let per_rank = cfg.experts_per_rank().max(1);
    let mut rows = vec![vec![0; cfg.ep]; cfg.ep];
    for (e, from) in rows.iter_mut().enumerate() {
        for t in cfg.rank_tokens(e) {
            let (Some(chosen), Some(kept)) = (routing.chosen.get(t), routing.kept.get(t)) else {
                continue;
            };
            for (&j, &k) in chosen.iter().zip(kept) {
                if k {
                    from[(j / per_rank).min(cfg.ep - 1)] += 1;
                }
            }
        }
    }
    Ok(Built {
        report,
        routing,
        rows,
    })
}

/// The answers offered for GPU 0's dispatch bytes: the engine's and three wrong turns (routing
/// assumed balanced, the local rows counted, k forgotten), ascending; with the right one's index.
pub fn dispatch_options(b: &Built) -> (Vec<u64>, usize) {
    let c = b.config();
    let right = b.sent("moe.dispatch").first().copied().unwrap_or(0);
    let row = c.hidden as u64 * NUMBER_BYTES;
    let local = c.rank_tokens(0).len() as u64;
    let (k, ep) = (c.top_k as u64, c.ep as u64);
    let candidates = [
        local * k * row * (ep - 1) / ep.max(1),
        local * k * row,
        local * row * (ep - 1) / ep.max(1),
        2 * right,
        right / 2,
        local * row,
    ];
    let mut options = vec![right];
    for x in candidates {
        if options.len() == 4 {
            break;
        }
        // Distinct as the learner reads them (KiB with one decimal).
        if x > 0
            && options
                .iter()
                .all(|&o| bytes(Lang::En, o) != bytes(Lang::En, x))
        {
            options.push(x);
        }
    }
    options.sort_unstable();
    let at = options.iter().position(|&o| o == right).unwrap_or(0);
    (options, at)
}

impl Moe {
    /// The view on a preset, at its first step.
    pub fn with_preset(preset: Preset) -> Self {
        let mut v = Self {
            preset,
            experts: 8,
            top_k: 2,
            ep: 4,
            etp: 1,
            tokens: 64,
            capacity_limited: false,
            capacity_factor: 1.25,
            gate: GateChoice::Renormalized,
            position: 0.0,
            playing: false,
            speed_steps_per_s: 0.5,
            predict: true,
            answers: BTreeMap::new(),
            cache: None,
        };
        v.apply_preset(preset);
        v
    }

    fn apply_preset(&mut self, preset: Preset) {
        self.preset = preset;
        let (experts, top_k, ep, etp, tokens, capacity, gate) = match preset {
            Preset::Mixtral | Preset::Custom => (8, 2, 4, 1, 64, None, GateChoice::Renormalized),
            Preset::Switch => (8, 1, 4, 1, 32, Some(1.0), GateChoice::Softmax),
            Preset::Etp => (4, 2, 2, 2, 32, None, GateChoice::Renormalized),
        };
        self.experts = experts;
        self.top_k = top_k;
        self.ep = ep;
        self.etp = etp;
        self.tokens = tokens;
        self.capacity_limited = capacity.is_some();
        if let Some(c) = capacity {
            self.capacity_factor = c;
        }
        self.gate = gate;
    }

    /// The engine's configuration of the controls.
    pub fn config(&self) -> MoeConfig {
        MoeConfig {
            tokens: self.tokens,
            hidden: HIDDEN,
            ffn: FFN,
            experts: self.experts,
            top_k: self.top_k,
            ep: self.ep,
            etp: self.etp,
            capacity_factor: self.capacity_limited.then_some(self.capacity_factor),
            gate: self.gate.gate(),
            seed: SEED,
            algorithm: Algorithm::Ring,
        }
    }

    /// The engine's run for the controls (cached until they change), or its refusal.
    pub fn built(&mut self) -> &Result<Built, MoeError> {
        let cfg = self.config();
        if self.cache.as_ref().map(|(c, _)| c) != Some(&cfg) {
            self.cache = None;
        }
        &self
            .cache
            .get_or_insert_with(|| {
                let built = build(&cfg);
                (cfg, built)
            })
            .1
    }

    /// The step shown (0 = router).
    pub fn current(&self) -> usize {
        (self.position.max(0.0).floor() as usize).min(STEPS - 1)
    }

    fn key(&self) -> String {
        format!("{:?}", self.config())
    }

    /// Whether the dispatch step waits for the prediction.
    pub fn waiting(&mut self) -> bool {
        let key = self.key();
        self.predict
            && self.current() == DISPATCH_STEP
            && self.ep > 1
            && self.built().is_ok()
            && !self.answers.contains_key(&key)
    }

    fn reveal(&mut self, picked: Option<usize>) {
        let key = self.key();
        self.answers.insert(key, picked);
    }

    fn step_by(&mut self, delta: i32) {
        let to = (self.current() as i64 + i64::from(delta)).clamp(0, STEPS as i64 - 1);
        self.position = to as f32;
        self.playing = false;
    }

    fn toggle_play(&mut self) {
        if !self.playing && self.current() + 1 >= STEPS {
            self.position = 0.0;
        }
        self.playing = !self.playing;
    }

    fn restart(&mut self) {
        self.position = 0.0;
        self.playing = false;
    }

    /// A control changed: the scenario is the learner's own.
    fn changed(&mut self) {
        self.preset = Preset::Custom;
    }
}

impl View for Moe {
    fn id(&self) -> &'static str {
        "moe"
    }

    fn title(&self) -> &'static str {
        "MoE"
    }

    fn logic(&mut self, ctx: &egui::Context, shared: &mut Shared) {
        if shared.keys.toggle_play {
            self.toggle_play();
        }
        if shared.keys.restart {
            self.restart();
        }
        let mut presses = shared.keys.step;
        // The clicker's first press on the dispatch reveals the answer (the class said it aloud).
        if presses > 0 && self.waiting() {
            self.reveal(None);
            presses -= 1;
        }
        if presses != 0 {
            self.step_by(presses);
        }
        if self.playing {
            let before = self.current();
            let last = (STEPS - 1) as f32;
            let dt_s = ctx.input(|i| i.stable_dt).min(0.25);
            self.position += dt_s * self.speed_steps_per_s;
            if self.position >= last {
                self.position = last;
                self.playing = false;
            }
            if self.current() != before && self.waiting() {
                self.position = self.current() as f32;
                self.playing = false;
            }
            ctx.request_repaint();
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = crate::widgets::lang(ui);
        crate::widgets::links::view_heading(ui, t(lang, "moe-title"));
        crate::widgets::scrolling_page(ui, "moe-page", |ui| self.page_ui(ui, shared.presenter));
    }

    /// A target's `moe` names the layer (one of [`tplab_lessons::MOE_LAYERS`]; Mixtral's when
    /// it names none).
    fn show_me(&mut self, target: &crate::lab::ShowMe, _shared: &mut Shared) {
        let predict = self.predict;
        let answers = std::mem::take(&mut self.answers);
        let preset = Preset::ALL
            .into_iter()
            .find(|p| target.moe.as_deref() == Some(p.id()))
            .unwrap_or(Preset::Mixtral);
        *self = Self::with_preset(preset);
        self.predict = predict;
        self.answers = answers;
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
        self.experts = self.experts.clamp(1, MAX_EXPERTS);
        self.top_k = self.top_k.clamp(1, MAX_TOP_K);
        self.ep = self.ep.clamp(1, MAX_EP);
        self.etp = self.etp.clamp(1, MAX_ETP);
        self.tokens = self.tokens.clamp(1, MAX_TOKENS);
        if !(self.capacity_factor.is_finite() && (0.25..=4.0).contains(&self.capacity_factor)) {
            self.capacity_factor = 1.25;
        }
        if !(self.speed_steps_per_s.is_finite() && self.speed_steps_per_s > 0.0) {
            self.speed_steps_per_s = 0.5;
        }
        self.position = if self.position.is_finite() {
            self.position.clamp(0.0, (STEPS - 1) as f32)
        } else {
            0.0
        };
        self.playing = false;
        self.cache = None;
    }

    fn export_name(&self, _shared: &Shared) -> Option<String> {
        Some(format!(
            "moe-e{}-k{}-ep{}-etp{}-step{}",
            self.experts,
            self.top_k,
            self.ep,
            self.etp,
            self.current() + 1
        ))
    }
}

/// The engine's refusal in the learner's words, and the values that fix it.
enum Refusal {
    Ep(Vec<usize>),
    Etp(Vec<usize>),
    TopK(usize),
    Other,
}

fn list_of(valid: &str) -> Vec<usize> {
    valid
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

/// The engine's error as a sentence in `lang` (the engine's English names the CLI's flags).
pub fn error_text(lang: Lang, e: &MoeError) -> String {
    let n = |v: usize| v.to_string();
    match e {
        MoeError::ExpertsNotDivisible { experts, ep, valid } => t_args(
            lang,
            "moe-err-ep",
            &[
                ("experts", n(*experts)),
                ("ep", n(*ep)),
                ("valid", crate::widgets::list_words(lang, &list_of(valid))),
            ],
        ),
        MoeError::FfnNotDivisible { ffn, etp, valid } => t_args(
            lang,
            "moe-err-etp",
            &[
                ("ffn", n(*ffn)),
                ("etp", n(*etp)),
                ("valid", crate::widgets::list_words(lang, &list_of(valid))),
            ],
        ),
        MoeError::TopKOverExperts { top_k, experts } => t_args(
            lang,
            "moe-err-top-k",
            &[("k", n(*top_k)), ("experts", n(*experts))],
        ),
        other => other.to_string(),
    }
}

fn refusal(e: &MoeError) -> Refusal {
    match e {
        MoeError::ExpertsNotDivisible { valid, .. } => Refusal::Ep(
            list_of(valid)
                .into_iter()
                .filter(|&v| v <= MAX_EP)
                .collect(),
        ),
        MoeError::FfnNotDivisible { valid, .. } => Refusal::Etp(
            list_of(valid)
                .into_iter()
                .filter(|&v| v <= MAX_ETP)
                .collect(),
        ),
        MoeError::TopKOverExperts { experts, .. } => Refusal::TopK(*experts),
        _ => Refusal::Other,
    }
}

/// "GPU 2" or "GPUs 2, 3": the GPUs of EP rank `e`.
fn rank_gpus(lang: Lang, c: &MoeConfig, e: usize) -> String {
    if c.etp == 1 {
        t_args(lang, "moe-gpu", &[("g", e.to_string())])
    } else {
        let gpus: Vec<usize> = (e * c.etp..(e + 1) * c.etp).collect();
        t_args(
            lang,
            "moe-gpus",
            &[(
                "list",
                gpus.iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
            )],
        )
    }
}

/// `a–b` of a range (`a` alone for one element).
fn span(r: &std::ops::Range<usize>) -> String {
    if r.len() <= 1 {
        r.start.to_string()
    } else {
        format!("{}–{}", r.start, r.end - 1)
    }
}

/// A gate with two decimals in the learner's numbers.
fn gate_text(lang: Lang, g: f64) -> String {
    num(lang, g, 2)
}

/// The colour of EP rank `e`'s experts and tokens: its first GPU's.
fn rank_color(c: &MoeConfig, e: usize, dark: bool) -> egui::Color32 {
    gpu_color(e * c.etp, dark)
}

impl Moe {
    fn page_ui(&mut self, ui: &mut egui::Ui, presenter: bool) {
        let lang = crate::widgets::lang(ui);
        if presenter {
            // On a projector the step fills the screen; the layer's settings fold away under
            // the layer's summary (one row less than a heading of their own).
            let title = match self.built() {
                Ok(b) => summary(lang, b),
                Err(_) => t(lang, "moe-settings"),
            };
            let id = ui.make_persistent_id("moe-settings");
            egui::collapsing_header::CollapsingState::load_with_default_open(ui.ctx(), id, false)
                .show_header(ui, |ui| {
                    ui.add(egui::Label::new(title).wrap());
                })
                .body(|ui| {
                    self.presets_ui(ui);
                    self.controls_ui(ui);
                });
        } else {
            self.presets_ui(ui);
            self.controls_ui(ui);
        }
        let built = match self.built() {
            Ok(b) => b.clone(),
            Err(e) => {
                let e = e.clone();
                self.error_ui(ui, &e);
                return;
            }
        };
        if !presenter {
            ui.label(summary(lang, &built));
        }
        ui.add_space(4.0);
        self.stepper_ui(ui, presenter);
        steps_strip(ui, self, presenter);
        ui.add_space(4.0);
        let cur = self.current();
        if self.waiting() {
            self.predict_ui(ui, &built, presenter);
            // What the question needs stays on screen: which expert each kept row goes to (the
            // capacity step's picture), so the rows that leave GPU 0 can be counted.
            ui.add_space(4.0);
            routing_ui(ui, &built, true, 0.0);
            return;
        }
        egui::Frame::group(ui.style()).show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.label(egui::RichText::new(heading(lang, cur)).strong());
            ui.label(narration(lang, &built, cur));
            if cur == DISPATCH_STEP {
                self.answer_ui(ui, &built);
            }
        });
        ui.add_space(4.0);
        let frac = if self.playing {
            Some(self.position - cur as f32)
        } else {
            None
        };
        // The pictures take the height left above the reference check (a projector's
        // 1280×720 shows the whole step without scrolling).
        let check_gap = 6.0;
        let reserve = check_height(ui, &built, presenter) + check_gap;
        match cur {
            0 => routing_ui(ui, &built, false, reserve),
            1 => routing_ui(ui, &built, true, reserve),
            2 => flow_ui(ui, &built, false, frac, reserve),
            3 => experts_ui(ui, &built, reserve),
            4 => flow_ui(ui, &built, true, frac, reserve),
            5 => sum_ui(ui, &built, reserve),
            _ => backward_ui(ui, &built),
        }
        ui.add_space(check_gap);
        check_ui(ui, &built, presenter);
    }

    fn presets_ui(&mut self, ui: &mut egui::Ui) {
        let lang = crate::widgets::lang(ui);
        ui.horizontal_wrapped(|ui| {
            ui.label(t(lang, "moe-presets"));
            for p in Preset::ALL {
                let name = t(lang, &format!("moe-preset-{}", p.id()));
                if ui.selectable_label(self.preset == p, name).clicked() {
                    self.apply_preset(p);
                    self.position = 0.0;
                    self.playing = false;
                }
            }
            if self.preset == Preset::Custom {
                ui.label(t(lang, "moe-preset-custom"));
            }
        });
    }

    fn controls_ui(&mut self, ui: &mut egui::Ui) {
        let lang = crate::widgets::lang(ui);
        let tr = |id: &str| t(lang, id);
        let before = (
            self.experts,
            self.top_k,
            self.ep,
            self.etp,
            self.tokens,
            self.capacity_limited,
            self.capacity_factor,
            self.gate,
        );
        ui.horizontal_wrapped(|ui| {
            for (value, max, id) in [
                (&mut self.experts, MAX_EXPERTS, "moe-experts"),
                (&mut self.top_k, MAX_TOP_K, "moe-top-k"),
                (&mut self.ep, MAX_EP, "moe-ep"),
                (&mut self.etp, MAX_ETP, "moe-etp"),
            ] {
                keep_together(ui, &[&tr(id)], slider_extra(ui));
                ui.add(egui::Slider::new(value, 1..=max).text(tr(id)));
            }
            keep_together(ui, &[&tr("moe-tokens")], slider_extra(ui));
            ui.add(egui::Slider::new(&mut self.tokens, 4..=MAX_TOKENS).text(tr("moe-tokens")));
        });
        ui.horizontal_wrapped(|ui| {
            ui.checkbox(&mut self.capacity_limited, tr("moe-capacity-on"));
            if self.capacity_limited {
                keep_together(ui, &[&tr("moe-capacity-factor")], slider_extra(ui));
                ui.add(
                    egui::Slider::new(&mut self.capacity_factor, 0.25..=4.0)
                        .step_by(0.05)
                        .custom_formatter(crate::widgets::widget_number(lang))
                        .custom_parser(crate::widgets::parse_number)
                        .text(tr("moe-capacity-factor")),
                );
            } else {
                ui.label(tr("moe-no-limit"));
            }
            let gate_name = |g: GateChoice| match g {
                GateChoice::Renormalized => tr("moe-gate-renormalized"),
                GateChoice::Softmax => tr("moe-gate-softmax"),
            };
            keep_together(ui, &[&gate_name(self.gate), &tr("moe-gate")], COMBO_EXTRA);
            egui::ComboBox::from_label(tr("moe-gate"))
                .selected_text(gate_name(self.gate))
                .show_ui(ui, |ui| {
                    for g in [GateChoice::Renormalized, GateChoice::Softmax] {
                        ui.selectable_value(&mut self.gate, g, gate_name(g));
                    }
                });
        });
        let after = (
            self.experts,
            self.top_k,
            self.ep,
            self.etp,
            self.tokens,
            self.capacity_limited,
            self.capacity_factor,
            self.gate,
        );
        if after != before {
            self.changed();
        }
    }

    fn error_ui(&mut self, ui: &mut egui::Ui, e: &MoeError) {
        let lang = crate::widgets::lang(ui);
        ui.colored_label(
            ui.visuals().error_fg_color,
            t_args(lang, "invalid-choice", &[("error", error_text(lang, e))]),
        );
        ui.horizontal_wrapped(|ui| match refusal(e) {
            Refusal::Ep(valid) => {
                for v in valid {
                    if ui
                        .button(t_args(lang, "moe-use-ep", &[("ep", v.to_string())]))
                        .clicked()
                    {
                        self.ep = v;
                        self.changed();
                    }
                }
            }
            Refusal::Etp(valid) => {
                for v in valid {
                    if ui
                        .button(t_args(lang, "moe-use-etp", &[("etp", v.to_string())]))
                        .clicked()
                    {
                        self.etp = v;
                        self.changed();
                    }
                }
            }
            Refusal::TopK(experts) => {
                let k = experts.clamp(1, MAX_TOP_K);
                if ui
                    .button(t_args(lang, "moe-use-top-k", &[("k", k.to_string())]))
                    .clicked()
                {
                    self.top_k = k;
                    self.changed();
                }
            }
            Refusal::Other => {
                if ui.button(t(lang, "moe-use-preset")).clicked() {
                    self.apply_preset(Preset::Mixtral);
                }
            }
        });
    }

    /// The player; at a desk the prediction switch too (on a projector it goes beside the steps'
    /// strip, see [`steps_strip`]).
    fn stepper_ui(&mut self, ui: &mut egui::Ui, presenter: bool) {
        let lang = crate::widgets::lang(ui);
        let tr = |id: &str| t(lang, id);
        ui.horizontal_wrapped(|ui| {
            let pressed = crate::widgets::player_buttons(
                ui,
                lang,
                self.playing,
                [
                    "st-play",
                    "st-pause",
                    "st-previous",
                    "st-next",
                    "st-restart",
                ],
            );
            if pressed.play {
                self.toggle_play();
            }
            if pressed.previous {
                self.step_by(-1);
            }
            if pressed.next {
                if self.waiting() {
                    self.reveal(None);
                } else {
                    self.step_by(1);
                }
            }
            if pressed.restart {
                self.restart();
            }
            keep_together(ui, &[&tr("st-speed")], slider_extra(ui));
            ui.add(
                egui::Slider::new(&mut self.speed_steps_per_s, 0.25..=4.0)
                    .logarithmic(true)
                    .custom_formatter(crate::widgets::widget_number(lang))
                    .custom_parser(crate::widgets::parse_number)
                    .text(tr("st-speed")),
            );
            if !presenter {
                ui.checkbox(&mut self.predict, tr("moe-predict-toggle"));
            }
        });
    }

    /// The question before the dispatch: how many bytes does GPU 0 send?
    fn predict_ui(&mut self, ui: &mut egui::Ui, built: &Built, presenter: bool) {
        let lang = crate::widgets::lang(ui);
        let (options, _) = dispatch_options(built);
        let c = built.config();
        let mut picked = None;
        let mut skip = false;
        egui::Frame::group(ui.style()).show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.strong(heading(lang, DISPATCH_STEP));
            let body = ui.style().text_styles[&egui::TextStyle::Body].size;
            let (q_size, o_size) = if presenter {
                (1.6 * body, 1.4 * body)
            } else {
                (1.3 * body, 1.1 * body)
            };
            let question = t_args(
                lang,
                "moe-predict-question",
                &[
                    ("tokens", c.rank_tokens(0).len().to_string()),
                    ("k", c.top_k.to_string()),
                    ("h", c.hidden.to_string()),
                    ("ep", c.ep.to_string()),
                    ("experts", span(&c.rank_experts(0))),
                ],
            );
            ui.label(egui::RichText::new(question).size(q_size).strong());
            ui.add_space(6.0);
            ui.horizontal_wrapped(|ui| {
                for (i, o) in options.iter().enumerate() {
                    let text = format!("{}  {}", char::from(b'A' + i as u8), bytes(lang, *o));
                    if ui.button(egui::RichText::new(text).size(o_size)).clicked() {
                        picked = Some(i);
                    }
                }
            });
            ui.add_space(6.0);
            if ui.button(t(lang, "moe-predict-skip")).clicked() {
                skip = true;
            }
        });
        if picked.is_some() || skip {
            self.reveal(picked);
        }
    }

    /// The learner's answer beside the engine's.
    fn answer_ui(&self, ui: &mut egui::Ui, built: &Built) {
        let lang = crate::widgets::lang(ui);
        let Some(Some(i)) = self.answers.get(&self.key()).copied() else {
            return;
        };
        let (options, right) = dispatch_options(built);
        let said = bytes(lang, options.get(i).copied().unwrap_or(0));
        if i == right {
            ui.colored_label(
                crate::widgets::ok_ink(ui),
                t_args(lang, "moe-predict-right", &[("said", said)]),
            );
        } else {
            ui.label(t_args(lang, "moe-predict-wrong", &[("said", said)]));
        }
    }
}

/// The layer and its layout in one line.
fn summary(lang: Lang, b: &Built) -> String {
    let c = b.config();
    let capacity = match c.capacity_factor {
        Some(f) => t_args(
            lang,
            "moe-summary-capacity",
            &[
                ("c", num(lang, f, 2)),
                ("cap", b.report.capacity.to_string()),
            ],
        ),
        None => t(lang, "moe-summary-no-limit"),
    };
    t_args(
        lang,
        "moe-summary",
        &[
            ("tokens", c.tokens.to_string()),
            ("h", c.hidden.to_string()),
            ("ffn", c.ffn.to_string()),
            ("experts", c.experts.to_string()),
            ("k", c.top_k.to_string()),
            ("gpus", c.gpus().to_string()),
            ("ep", c.ep.to_string()),
            ("etp", c.etp.to_string()),
            ("per_rank", c.experts_per_rank().to_string()),
            ("capacity", capacity),
        ],
    )
}

/// "Step 3/7 · forward · dispatch (all-to-all)".
pub fn heading(lang: Lang, step: usize) -> String {
    let pass = if step + 1 == STEPS {
        "walk-backward"
    } else {
        "walk-forward"
    };
    t_args(
        lang,
        "moe-heading",
        &[
            ("n", (step + 1).to_string()),
            ("of", STEPS.to_string()),
            ("pass", t(lang, pass)),
            ("name", t(lang, &format!("moe-step-{}", STEP_IDS[step]))),
        ],
    )
}

/// The strip of steps: where we are; a click jumps there. On a projector (`compact`) only the
/// current step is named, the others are numbers (named on hover), and the prediction switch
/// follows on the same row.
fn steps_strip(ui: &mut egui::Ui, v: &mut Moe, compact: bool) {
    let lang = crate::widgets::lang(ui);
    let cur = v.current();
    ui.horizontal_wrapped(|ui| {
        for (i, id) in STEP_IDS.iter().enumerate() {
            if i > 0 {
                crate::widgets::separator_mark(ui);
            }
            let text = format!("{} {}", i + 1, t(lang, &format!("moe-step-{id}")));
            let shown = if compact && i != cur {
                (i + 1).to_string()
            } else {
                text.clone()
            };
            let mut resp = ui.selectable_label(i == cur, shown);
            if compact && i != cur {
                resp = resp.on_hover_text(text);
            }
            if resp.clicked() {
                v.position = i as f32;
                v.playing = false;
            }
        }
        if compact {
            ui.add_space(ui.spacing().item_spacing.x * 3.0);
            ui.checkbox(&mut v.predict, t(lang, "moe-predict-toggle"));
        }
    });
}

/// Token 0's choices: "expert 3 (gate 0.62) and expert 5 (gate 0.38)".
fn picks(lang: Lang, b: &Built, token: usize) -> String {
    let (Some(chosen), Some(gates)) = (b.routing.chosen.get(token), b.routing.gates.get(token))
    else {
        return String::new();
    };
    let parts: Vec<String> = chosen
        .iter()
        .zip(gates)
        .map(|(&j, &g)| {
            t_args(
                lang,
                "moe-pick",
                &[("j", j.to_string()), ("gate", gate_text(lang, g))],
            )
        })
        .collect();
    match parts.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} {} {last}", rest.join(", "), t(lang, "moe-and")),
    }
}

/// What the step does, with the engine's numbers.
pub fn narration(lang: Lang, b: &Built, step: usize) -> String {
    let c = b.config();
    let n = |v: usize| v.to_string();
    let max_of = |v: &[u64]| v.iter().copied().max().unwrap_or(0);
    match step {
        0 => t_args(
            lang,
            "moe-say-router",
            &[
                ("experts", n(c.experts)),
                ("k", n(c.top_k)),
                (
                    "gate",
                    t(
                        lang,
                        match c.gate {
                            Gate::Renormalized => "moe-gate-renormalized",
                            Gate::Softmax => "moe-gate-softmax",
                        },
                    ),
                ),
                ("picks", picks(lang, b, 0)),
            ],
        ),
        1 => {
            let counts = bytes(lang, max_of(&b.sent("moe.counts")));
            let routed = &b.report.routing.routed_per_expert;
            match c.capacity_factor {
                Some(f) => t_args(
                    lang,
                    "moe-say-capacity",
                    &[
                        ("c", num(lang, f, 2)),
                        ("k", n(c.top_k)),
                        ("tokens", n(c.tokens)),
                        ("experts", n(c.experts)),
                        ("cap", n(b.report.capacity)),
                        ("dropped", n(b.dropped())),
                        ("total", n(c.tokens * c.top_k)),
                        ("counts", counts),
                    ],
                ),
                None => t_args(
                    lang,
                    "moe-say-no-limit",
                    &[
                        ("min", n(routed.iter().copied().min().unwrap_or(0))),
                        ("max", n(routed.iter().copied().max().unwrap_or(0))),
                        ("counts", counts),
                    ],
                ),
            }
        }
        2 | 4 => {
            if c.ep == 1 {
                return t(lang, "moe-say-one-rank");
            }
            let (name, id) = if step == 2 {
                ("moe.dispatch", "moe-say-dispatch")
            } else {
                ("moe.combine", "moe-say-combine")
            };
            let sent = b.sent(name);
            let row = c.hidden as u64 * NUMBER_BYTES;
            let local = c.rank_tokens(0).len() as u64;
            let balanced = local * c.top_k as u64 * row * (c.ep as u64 - 1) / (c.ep as u64).max(1);
            t_args(
                lang,
                id,
                &[
                    ("h", n(c.hidden)),
                    ("row", bytes(lang, row)),
                    ("gpu0", bytes(lang, sent.first().copied().unwrap_or(0))),
                    ("max", bytes(lang, max_of(&sent))),
                    ("min", bytes(lang, sent.iter().copied().min().unwrap_or(0))),
                    ("balanced", bytes(lang, balanced)),
                ],
            )
        }
        3 => {
            let kept = &b.report.routing.tokens_per_expert;
            let args = [
                ("per_rank", n(c.experts_per_rank())),
                ("min", n(kept.iter().copied().min().unwrap_or(0))),
                ("max", n(kept.iter().copied().max().unwrap_or(0))),
                ("etp", n(c.etp)),
                ("slice", n(c.ffn / c.etp.max(1))),
                ("ffn", n(c.ffn)),
                ("bytes", bytes(lang, max_of(&b.sent("moe.etp")))),
            ];
            if c.etp == 1 {
                t_args(lang, "moe-say-experts-whole", &args)
            } else {
                t_args(lang, "moe-say-experts-etp", &args)
            }
        }
        5 => {
            let lost: std::collections::BTreeSet<usize> =
                b.report.routing.dropped.iter().map(|d| d.token).collect();
            t_args(
                lang,
                "moe-say-sum",
                &[
                    ("k", n(c.top_k)),
                    ("lost", n(lost.len())),
                    ("dropped", n(b.dropped())),
                ],
            )
        }
        _ => t(lang, "moe-say-backward"),
    }
}

/// Sizes of the drawings, from the body font (presenter mode's zoom scales them all).
struct Metrics {
    body: f32,
    small: f32,
}

fn metrics(ui: &egui::Ui) -> Metrics {
    let body = ui.style().text_styles[&egui::TextStyle::Body].size;
    Metrics {
        body,
        small: body * 0.85,
    }
}

fn text_width(ui: &egui::Ui, s: &str, size: f32) -> f32 {
    ui.painter()
        .layout_no_wrap(
            s.to_string(),
            egui::FontId::proportional(size),
            egui::Color32::PLACEHOLDER,
        )
        .size()
        .x
}

/// Steps 1 and 2: experts (rows, grouped by EP rank, in their GPUs' colours) × tokens (columns,
/// grouped by the EP rank holding them); a filled cell is a pick, its shade the gate; with
/// `drops`, the assignments the capacity dropped are crossed out in the error colour and each
/// expert's row says how many it took of how many that picked it.
fn routing_ui(ui: &mut egui::Ui, b: &Built, drops: bool, reserve: f32) {
    let lang = crate::widgets::lang(ui);
    let c = b.config();
    let m = metrics(ui);
    let dark = ui.visuals().dark_mode;
    let ink = ui.visuals().text_color();
    let weak = ui.visuals().weak_text_color();
    let error = ui.visuals().error_fg_color;
    let bg = ui.visuals().extreme_bg_color;
    let per_rank = c.experts_per_rank().max(1);
    let expert_label = |j: usize| t_args(lang, "moe-expert", &[("j", j.to_string())]);
    let left = text_width(ui, &expert_label(c.experts.saturating_sub(1)), m.body) + 10.0;
    let row_label = |j: usize| {
        t_args(
            lang,
            "moe-row-kept",
            &[
                ("kept", b.report.routing.tokens_per_expert[j].to_string()),
                ("routed", b.report.routing.routed_per_expert[j].to_string()),
            ],
        )
    };
    let right = if drops {
        (0..c.experts)
            .map(|j| text_width(ui, &row_label(j), m.body))
            .fold(0.0, f32::max)
            + 10.0
    } else {
        4.0
    };
    let group_gap = 4.0;
    let header_h = m.body * 1.6;
    let groups = c.ep as f32;
    // 1.5 lines an expert, fewer (down to its label's height) when the experts would not fit the
    // height left above the reference check.
    let fit = (ui.available_height() - reserve - header_h - (groups - 1.0) * group_gap - 4.0)
        / c.experts.max(1) as f32;
    let row_h = (m.body * 1.5).min(fit).max((m.body * 1.1).max(14.0));
    let width = ui.available_width().max(300.0);
    let height = header_h + c.experts as f32 * row_h + (groups - 1.0) * group_gap + 4.0;
    let (rect, resp) = ui.allocate_exact_size(egui::vec2(width, height), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    let x0 = rect.left() + left;
    let plot_w = (rect.width() - left - right).max(50.0);
    let col_w = plot_w / c.tokens.max(1) as f32;
    let row_top =
        |j: usize| rect.top() + header_h + j as f32 * row_h + (j / per_rank) as f32 * group_gap;
    let mut shapes = Vec::new();
    // The token header: each EP rank's tokens in its colour.
    for e in 0..c.ep {
        let r = c.rank_tokens(e);
        let strip = egui::Rect::from_min_max(
            egui::pos2(x0 + r.start as f32 * col_w, rect.top()),
            egui::pos2(x0 + r.end as f32 * col_w, rect.top() + header_h - 3.0),
        );
        let fill = rank_color(c, e, dark);
        shapes.push(egui::Shape::rect_filled(
            strip.shrink2(egui::vec2(1.0, 0.0)),
            2.0,
            fill,
        ));
        let long = t_args(
            lang,
            "moe-tokens-of",
            &[("gpus", rank_gpus(lang, c, e)), ("range", span(&r))],
        );
        let short = rank_gpus(lang, c, e);
        for label in [long, short] {
            if text_width(ui, &label, m.small) + 6.0 <= strip.width() {
                shapes.push(text_shape(
                    &painter,
                    strip.center(),
                    egui::Align2::CENTER_CENTER,
                    label,
                    m.small,
                    text_on(fill),
                ));
                break;
            }
        }
    }
    let dropped: std::collections::BTreeSet<(usize, usize)> = b
        .report
        .routing
        .dropped
        .iter()
        .map(|d| (d.token, d.expert))
        .collect();
    for j in 0..c.experts {
        let top = row_top(j);
        let e = j / per_rank;
        shapes.push(egui::Shape::rect_filled(
            egui::Rect::from_min_max(
                egui::pos2(x0, top),
                egui::pos2(x0 + plot_w, top + row_h - 1.0),
            ),
            1.0,
            bg,
        ));
        shapes.push(text_shape(
            &painter,
            egui::pos2(rect.left(), top + row_h / 2.0),
            egui::Align2::LEFT_CENTER,
            expert_label(j),
            m.body,
            crate::widgets::gpu_ink(e * c.etp, dark),
        ));
        if drops {
            let lost =
                b.report.routing.routed_per_expert[j] > b.report.routing.tokens_per_expert[j];
            shapes.push(text_shape(
                &painter,
                egui::pos2(rect.right(), top + row_h / 2.0),
                egui::Align2::RIGHT_CENTER,
                row_label(j),
                m.body,
                if lost { error } else { ink },
            ));
        }
    }
    // The picks.
    for (tok, (chosen, gates)) in b.routing.chosen.iter().zip(&b.routing.gates).enumerate() {
        for (&j, &g) in chosen.iter().zip(gates) {
            let top = row_top(j);
            let cell = egui::Rect::from_min_max(
                egui::pos2(x0 + tok as f32 * col_w, top),
                egui::pos2(x0 + (tok + 1) as f32 * col_w, top + row_h - 1.0),
            )
            .shrink(0.5);
            let base = rank_color(c, j / per_rank, dark);
            // The gate as the shade: a gate near 0 is pale, a gate of 1 the full colour.
            let fill = bg.lerp_to_gamma(base, (0.3 + 0.7 * g as f32).clamp(0.0, 1.0));
            let is_dropped = drops && dropped.contains(&(tok, j));
            shapes.push(egui::Shape::rect_filled(
                cell,
                1.0,
                if is_dropped { bg } else { fill },
            ));
            let label = gate_text(lang, g);
            if !is_dropped && text_width(ui, &label, m.small) + 3.0 <= cell.width() {
                shapes.push(text_shape(
                    &painter,
                    cell.center(),
                    egui::Align2::CENTER_CENTER,
                    label,
                    m.small,
                    text_on(fill),
                ));
            }
            if is_dropped {
                crossed_out(&mut shapes, cell, 1.0, egui::Stroke::new(2.0, error));
            }
        }
    }
    // Lines between EP ranks' tokens.
    for e in 1..c.ep {
        let x = x0 + c.rank_tokens(e).start as f32 * col_w;
        shapes.push(egui::Shape::line_segment(
            [
                egui::pos2(x, rect.top() + header_h),
                egui::pos2(x, rect.bottom()),
            ],
            egui::Stroke::new(1.0, weak),
        ));
    }
    painter.extend(shapes);
    let a11y = if drops {
        let listed: Vec<String> = b
            .report
            .routing
            .dropped
            .iter()
            .map(|d| {
                t_args(
                    lang,
                    "moe-dropped-one",
                    &[("t", d.token.to_string()), ("j", d.expert.to_string())],
                )
            })
            .collect();
        t_args(
            lang,
            "moe-routing-a11y-drops",
            &[
                ("tokens", c.tokens.to_string()),
                ("experts", c.experts.to_string()),
                ("dropped", b.dropped().to_string()),
                ("list", listed.join(", ")),
            ],
        )
    } else {
        t_args(
            lang,
            "moe-routing-a11y",
            &[
                ("tokens", c.tokens.to_string()),
                ("experts", c.experts.to_string()),
                ("assignments", (c.tokens * c.top_k).to_string()),
            ],
        )
    };
    a11y_label(&resp, &a11y);
    // Which cell is under the pointer.
    if let Some(p) = resp.hover_pos() {
        let tok = ((p.x - x0) / col_w).floor();
        let j = (0..c.experts).find(|&j| p.y >= row_top(j) && p.y < row_top(j) + row_h);
        if tok >= 0.0 && (tok as usize) < c.tokens {
            if let Some(j) = j {
                let tok = tok as usize;
                let gate = b.routing.chosen[tok]
                    .iter()
                    .position(|&x| x == j)
                    .map(|i| b.routing.gates[tok][i]);
                let text = match gate {
                    Some(g) => t_args(
                        lang,
                        if dropped.contains(&(tok, j)) {
                            "moe-hover-dropped"
                        } else {
                            "moe-hover-pick"
                        },
                        &[
                            ("t", tok.to_string()),
                            ("j", j.to_string()),
                            ("gate", gate_text(lang, g)),
                        ],
                    ),
                    None => t_args(
                        lang,
                        "moe-hover-none",
                        &[("t", tok.to_string()), ("j", j.to_string())],
                    ),
                };
                resp.on_hover_text(text);
            }
        }
    }
}

/// Steps 3 and 5: the all-to-all. Each GPU a lane on both sides: its tokens on the left, its
/// experts on the right; a band from a token's GPU to its expert's GPU as thick as the rows it
/// carries (the dispatch left to right, the combine back). Rows whose expert is on the same EP
/// rank stay (a grey band, not counted in the bytes). While playing, rows move along the bands.
fn flow_ui(ui: &mut egui::Ui, b: &Built, back: bool, frac: Option<f32>, reserve: f32) {
    let lang = crate::widgets::lang(ui);
    let c = b.config();
    let m = metrics(ui);
    let dark = ui.visuals().dark_mode;
    let ink = ui.visuals().text_color();
    let weak = ui.visuals().weak_text_color();
    let gpus = c.gpus();
    let name = if back { "moe.combine" } else { "moe.dispatch" };
    let sent = b.sent(name);
    let received: Vec<u64> = b
        .report
        .comm(name)
        .map(|r| r.bytes_received_per_gpu.clone())
        .unwrap_or_else(|| vec![0; gpus]);
    let gap = 6.0;
    // As the experts' lanes: 2.6 lines, fewer when the GPUs would not fit the height left
    // above the reference check.
    // Room above the first lane for its bands' row counts (drawn just above each band).
    let pad = m.small;
    let fit = (ui.available_height() - reserve - pad) / gpus.max(1) as f32 - gap;
    let lane_h = (m.body * 2.6).min(fit).max((m.body * 2.0).max(30.0));
    let width = ui.available_width().max(300.0);
    let height = pad + gpus as f32 * (lane_h + gap);
    let (full, resp) = ui.allocate_exact_size(egui::vec2(width, height), egui::Sense::hover());
    let painter = ui.painter_at(full);
    let rect = full.with_min_y(full.top() + pad);
    let box_w = (rect.width() * 0.3).min(360.0);
    let lane = |g: usize| {
        let top = rect.top() + g as f32 * (lane_h + gap);
        (top, top + lane_h)
    };
    let max_rows = b.rows.iter().flatten().copied().max().unwrap_or(1).max(1) as f32;
    let mut shapes = Vec::new();
    let tokens_side = |g: usize| -> (String, String) {
        let e = g / c.etp;
        (
            t_args(
                lang,
                "moe-lane-tokens",
                &[("g", g.to_string()), ("range", span(&c.rank_tokens(e)))],
            ),
            t_args(
                lang,
                if back {
                    "moe-lane-gets"
                } else {
                    "moe-lane-sends"
                },
                &[(
                    "bytes",
                    bytes(lang, if back { received[g] } else { sent[g] }),
                )],
            ),
        )
    };
    let experts_side = |g: usize| -> (String, String) {
        let e = g / c.etp;
        let rows: usize = (0..c.ep).map(|s| b.rows[s][e]).sum();
        (
            t_args(
                lang,
                "moe-lane-experts",
                &[("g", g.to_string()), ("range", span(&c.rank_experts(e)))],
            ),
            t_args(
                lang,
                if back {
                    "moe-lane-returns"
                } else {
                    "moe-lane-receives"
                },
                &[
                    ("rows", rows.to_string()),
                    (
                        "bytes",
                        bytes(lang, if back { sent[g] } else { received[g] }),
                    ),
                ],
            ),
        )
    };
    for g in 0..gpus {
        let (top, bottom) = lane(g);
        let fill = gpu_color(g, dark);
        let panel = ui.visuals().panel_fill;
        let soft = fill.lerp_to_gamma(panel, 0.55);
        for (x_left, (l1, l2)) in [
            (rect.left(), tokens_side(g)),
            (rect.right() - box_w, experts_side(g)),
        ] {
            let r = egui::Rect::from_min_max(
                egui::pos2(x_left, top),
                egui::pos2(x_left + box_w, bottom),
            );
            shapes.push(egui::Shape::rect_filled(r, 3.0, soft));
            shapes.push(egui::Shape::rect_stroke(
                r,
                3.0,
                egui::Stroke::new(1.5, fill),
                egui::StrokeKind::Inside,
            ));
            let text = text_on(soft);
            shapes.push(text_shape(
                &painter,
                egui::pos2(r.left() + 6.0, r.top() + lane_h * 0.28),
                egui::Align2::LEFT_CENTER,
                l1,
                m.small,
                text,
            ));
            shapes.push(text_shape(
                &painter,
                egui::pos2(r.left() + 6.0, r.top() + lane_h * 0.72),
                egui::Align2::LEFT_CENTER,
                l2,
                m.small,
                text,
            ));
        }
    }
    // The bands: within each ETP index, from EP rank s (tokens) to EP rank d (experts).
    let panel = ui.visuals().panel_fill;
    let mut labels = Vec::new();
    let xl = rect.left() + box_w;
    let xr = rect.right() - box_w;
    let label_gap = m.small * 1.1;
    for t in 0..c.etp {
        for s in 0..c.ep {
            for d in 0..c.ep {
                let rows = b.rows[s][d];
                if rows == 0 {
                    continue;
                }
                let (gs, gd) = (s * c.etp + t, d * c.etp + t);
                // Spread the ends over the lane: by destination on the left, by source on the
                // right, so no two bands share an end.
                let at = |g: usize, i: usize| {
                    let (top, bottom) = lane(g);
                    top + (bottom - top) * (i as f32 + 0.5) / c.ep as f32
                };
                let (mut p0, mut p1) = (egui::pos2(xl, at(gs, d)), egui::pos2(xr, at(gd, s)));
                if back {
                    std::mem::swap(&mut p0, &mut p1);
                }
                let local = s == d;
                let color = if local {
                    weak.gamma_multiply(0.6)
                } else {
                    gpu_color(if back { gd } else { gs }, dark).gamma_multiply(0.85)
                };
                let thick = 1.0 + 7.0 * rows as f32 / max_rows;
                shapes.push(egui::Shape::line_segment(
                    [p0, p1],
                    egui::Stroke::new(thick, color),
                ));
                // The arrowhead at the receiving end.
                let dir = (p1 - p0).normalized();
                let normal = egui::vec2(-dir.y, dir.x);
                let head = 6.0 + thick * 0.5;
                shapes.push(egui::Shape::convex_polygon(
                    vec![
                        p1,
                        p1 - dir * head * 1.6 + normal * head * 0.6,
                        p1 - dir * head * 1.6 - normal * head * 0.6,
                    ],
                    color,
                    egui::Stroke::NONE,
                ));
                // The row count beside the sending end, where the lane has room for it.
                if lane_h / c.ep as f32 >= label_gap {
                    let at_send = p0 + dir * 14.0 + normal * 0.0;
                    let word = if local {
                        t_args(lang, "moe-band-local", &[("rows", rows.to_string())])
                    } else {
                        t_args(lang, "moe-band-rows", &[("rows", rows.to_string())])
                    };
                    let anchor = if back {
                        egui::Align2::RIGHT_BOTTOM
                    } else {
                        egui::Align2::LEFT_BOTTOM
                    };
                    let pos = egui::pos2(at_send.x + if back { -4.0 } else { 4.0 }, at_send.y);
                    // A backing so that the count reads over the other bands.
                    let size = egui::vec2(text_width(ui, &word, m.small), m.small * 1.2);
                    labels.push(egui::Shape::rect_filled(
                        anchor.anchor_size(pos, size).expand(1.0),
                        2.0,
                        panel.gamma_multiply(0.85),
                    ));
                    labels.push(text_shape(&painter, pos, anchor, word, m.small, ink));
                }
                // Rows on their way.
                if let Some(f) = frac {
                    let n = rows.min(6);
                    for i in 0..n {
                        let u = (f * 1.4 - i as f32 * 0.06).clamp(0.0, 1.0);
                        let p = p0 + (p1 - p0) * u;
                        shapes.push(egui::Shape::rect_filled(
                            egui::Rect::from_center_size(p, egui::vec2(7.0, 5.0)),
                            1.0,
                            gpu_color(gs, dark),
                        ));
                    }
                    ui.ctx().request_repaint();
                }
            }
        }
    }
    painter.extend(shapes);
    painter.extend(labels);
    let kind = if back {
        "moe-flow-combine"
    } else {
        "moe-flow-dispatch"
    };
    a11y_label(
        &resp,
        &t_args(
            lang,
            "moe-flow-a11y",
            &[
                ("what", t(lang, kind)),
                (
                    "sent",
                    sent.iter()
                        .enumerate()
                        .map(|(g, x)| {
                            t_args(
                                lang,
                                "moe-gpu-bytes",
                                &[("g", g.to_string()), ("bytes", bytes(lang, *x))],
                            )
                        })
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
            ],
        ),
    );
}

/// Step 4: each GPU's experts, as wide as the rows they took; with ETP, the slice of fc1's
/// columns and fc2's rows each GPU holds and the all-reduce that completes fc2's partial sums.
fn experts_ui(ui: &mut egui::Ui, b: &Built, reserve: f32) {
    let lang = crate::widgets::lang(ui);
    let c = b.config();
    let m = metrics(ui);
    let dark = ui.visuals().dark_mode;
    let ink = ui.visuals().text_color();
    let gpus = c.gpus();
    let etp_bytes = b.sent("moe.etp");
    let kept = &b.report.routing.tokens_per_expert;
    let gap = 6.0;
    // As tall as 2.8 lines, shorter (down to one line of text) when the GPUs would not fit the
    // height left above the reference check (a projector's 1280×720).
    let fit = (ui.available_height() - reserve) / gpus.max(1) as f32 - gap;
    let lane_h = (m.body * 2.8).min(fit).max((m.body * 1.5).max(24.0));
    let width = ui.available_width().max(300.0);
    let gpu_label = |g: usize| t_args(lang, "moe-gpu", &[("g", g.to_string())]);
    let left = text_width(ui, &gpu_label(gpus.saturating_sub(1)), m.body) + 12.0;
    let bracket_label = |g: usize| {
        t_args(
            lang,
            "moe-etp-bracket",
            &[("bytes", bytes(lang, etp_bytes.get(g).copied().unwrap_or(0)))],
        )
    };
    let right = if c.etp > 1 {
        (0..gpus)
            .map(|g| text_width(ui, &bracket_label(g), m.small))
            .fold(0.0, f32::max)
            + 24.0
    } else {
        0.0
    };
    let height = gpus as f32 * (lane_h + gap);
    let (rect, resp) = ui.allocate_exact_size(egui::vec2(width, height), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    let x0 = rect.left() + left;
    let plot_w = (rect.width() - left - right).max(80.0);
    let per_rank = c.experts_per_rank().max(1);
    let max_rank_rows = (0..c.ep)
        .map(|e| c.rank_experts(e).map(|j| kept[j]).sum::<usize>())
        .max()
        .unwrap_or(1)
        .max(1) as f32;
    let mut shapes = Vec::new();
    let slice = |t: usize| span(&c.etp_slice(t));
    for g in 0..gpus {
        let (e, t) = (g / c.etp, g % c.etp);
        let top = rect.top() + g as f32 * (lane_h + gap);
        shapes.push(text_shape(
            &painter,
            egui::pos2(rect.left(), top + lane_h / 2.0),
            egui::Align2::LEFT_CENTER,
            gpu_label(g),
            m.body,
            crate::widgets::gpu_ink(g, dark),
        ));
        let mut x = x0;
        // Each expert at least wide enough for its number; the rest shared by rows.
        let min_w = text_width(ui, "00", m.small) + 8.0;
        let spare = (plot_w - per_rank as f32 * min_w).max(0.0);
        for j in c.rank_experts(e) {
            let w = min_w + spare * kept[j] as f32 / max_rank_rows;
            let r =
                egui::Rect::from_min_max(egui::pos2(x, top), egui::pos2(x + w - 2.0, top + lane_h));
            let fill = gpu_color(g, dark);
            shapes.push(egui::Shape::rect_filled(r, 3.0, fill));
            let long = if c.etp > 1 {
                t_args(
                    lang,
                    "moe-expert-slice",
                    &[
                        ("j", j.to_string()),
                        ("rows", kept[j].to_string()),
                        ("cols", slice(t)),
                    ],
                )
            } else {
                t_args(
                    lang,
                    "moe-expert-rows",
                    &[("j", j.to_string()), ("rows", kept[j].to_string())],
                )
            };
            let mid = t_args(
                lang,
                "moe-expert-rows",
                &[("j", j.to_string()), ("rows", kept[j].to_string())],
            );
            for label in [long, mid, j.to_string()] {
                if text_width(ui, &label, m.small) + 6.0 <= r.width() {
                    shapes.push(text_shape(
                        &painter,
                        r.center(),
                        egui::Align2::CENTER_CENTER,
                        label,
                        m.small,
                        text_on(fill),
                    ));
                    break;
                }
            }
            x += w;
        }
    }
    // The ETP all-reduce: a bracket over each EP rank's ETP group.
    if c.etp > 1 {
        let stroke = egui::Stroke::new(2.0, ink);
        for e in 0..c.ep {
            let g0 = e * c.etp;
            let top = rect.top() + g0 as f32 * (lane_h + gap) + 4.0;
            let bottom = rect.top() + (g0 + c.etp) as f32 * (lane_h + gap) - gap - 4.0;
            let x = rect.right() - right + 8.0;
            shapes.push(egui::Shape::line(
                vec![
                    egui::pos2(x, top),
                    egui::pos2(x + 6.0, top),
                    egui::pos2(x + 6.0, bottom),
                    egui::pos2(x, bottom),
                ],
                stroke,
            ));
            shapes.push(text_shape(
                &painter,
                egui::pos2(x + 12.0, (top + bottom) / 2.0),
                egui::Align2::LEFT_CENTER,
                bracket_label(g0),
                m.small,
                ink,
            ));
        }
    }
    painter.extend(shapes);
    a11y_label(
        &resp,
        &t_args(
            lang,
            "moe-experts-a11y",
            &[
                (
                    "kept",
                    kept.iter()
                        .map(usize::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
                ("etp", c.etp.to_string()),
            ],
        ),
    );
}

/// Step 6: each token's output as a bar of its experts' gates (the weights of the sum), in the
/// experts' GPUs' colours; a dropped term crossed out in the error colour.
fn sum_ui(ui: &mut egui::Ui, b: &Built, reserve: f32) {
    let lang = crate::widgets::lang(ui);
    let c = b.config();
    let m = metrics(ui);
    let dark = ui.visuals().dark_mode;
    let bg = ui.visuals().extreme_bg_color;
    let error = ui.visuals().error_fg_color;
    let per_rank = c.experts_per_rank().max(1);
    let gap = 6.0;
    // 3.2 lines an EP rank, fewer (down to two) when the ranks would not fit the height left
    // above the reference check.
    let fit = (ui.available_height() - reserve) / c.ep.max(1) as f32 - gap;
    let lane_h = (m.body * 3.2).min(fit).max((m.body * 2.0).max(28.0));
    let width = ui.available_width().max(300.0);
    let lane_label = |e: usize| rank_gpus(lang, c, e);
    let left = (0..c.ep)
        .map(|e| text_width(ui, &lane_label(e), m.body))
        .fold(0.0, f32::max)
        + 12.0;
    let height = c.ep as f32 * (lane_h + gap);
    let (rect, resp) = ui.allocate_exact_size(egui::vec2(width, height), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    let x0 = rect.left() + left;
    let plot_w = (rect.width() - left).max(80.0);
    let most = (0..c.ep)
        .map(|e| c.rank_tokens(e).len())
        .max()
        .unwrap_or(1)
        .max(1);
    let col_w = (plot_w / most as f32).min(40.0);
    let mut shapes = Vec::new();
    for e in 0..c.ep {
        let top = rect.top() + e as f32 * (lane_h + gap);
        shapes.push(text_shape(
            &painter,
            egui::pos2(rect.left(), top + lane_h / 2.0),
            egui::Align2::LEFT_CENTER,
            lane_label(e),
            m.body,
            crate::widgets::gpu_ink(e * c.etp, dark),
        ));
        for (i, tok) in c.rank_tokens(e).enumerate() {
            let x = x0 + i as f32 * col_w;
            let bar = egui::Rect::from_min_max(
                egui::pos2(x + 1.0, top),
                egui::pos2(x + col_w - 1.0, top + lane_h),
            );
            shapes.push(egui::Shape::rect_filled(bar, 1.0, bg));
            let gates = &b.routing.gates[tok];
            // Renormalised gates fill the bar; softmax gates over all experts leave the rest.
            let total: f64 = gates.iter().sum::<f64>().max(1.0);
            let mut y = bar.bottom();
            for ((&j, &g), &kept) in b.routing.chosen[tok]
                .iter()
                .zip(gates)
                .zip(&b.routing.kept[tok])
            {
                let h = bar.height() * (g / total) as f32;
                let seg = egui::Rect::from_min_max(
                    egui::pos2(bar.left(), y - h),
                    egui::pos2(bar.right(), y),
                );
                if kept {
                    shapes.push(egui::Shape::rect_filled(
                        seg.shrink2(egui::vec2(0.0, 0.5)),
                        0.0,
                        rank_color(c, j / per_rank, dark),
                    ));
                } else {
                    crossed_out(&mut shapes, seg, 0.0, egui::Stroke::new(1.5, error));
                }
                y -= h;
            }
        }
    }
    painter.extend(shapes);
    a11y_label(
        &resp,
        &t_args(
            lang,
            "moe-sum-a11y",
            &[
                ("tokens", c.tokens.to_string()),
                ("dropped", b.dropped().to_string()),
            ],
        ),
    );
    if let Some(p) = resp.hover_pos() {
        let e = ((p.y - rect.top()) / (lane_h + gap)).floor();
        let i = ((p.x - x0) / col_w).floor();
        if e >= 0.0 && (e as usize) < c.ep && i >= 0.0 {
            let r = c.rank_tokens(e as usize);
            let tok = r.start + i as usize;
            if r.contains(&tok) {
                resp.on_hover_text(t_args(
                    lang,
                    "moe-hover-sum",
                    &[("t", tok.to_string()), ("picks", picks(lang, b, tok))],
                ));
            }
        }
    }
}

/// Step 7: the backward's collectives, with the bytes the engine counted per GPU.
fn backward_ui(ui: &mut egui::Ui, b: &Built) {
    let lang = crate::widgets::lang(ui);
    let c = b.config();
    let tr = |id: &str| t(lang, id);
    let shown_gpus = c.gpus().min(8);
    egui::Grid::new("moe-backward")
        .striped(true)
        .spacing(egui::vec2(16.0, 4.0))
        .show(ui, |ui| {
            ui.strong(tr("moe-col-what"));
            ui.strong(tr("moe-col-collective"));
            ui.strong(tr("moe-col-group"));
            for g in 0..shown_gpus {
                ui.strong(t_args(lang, "moe-gpu", &[("g", g.to_string())]));
            }
            if c.gpus() > shown_gpus {
                ui.strong(tr("moe-col-busiest"));
            }
            ui.end_row();
            for rec in b.report.comms.iter().filter(|r| r.pass == "backward") {
                ui.label(t(lang, &format!("moe-comm-{}", rec.name.replace('.', "-"))));
                ui.label(rec.kind);
                ui.label(t(
                    lang,
                    if rec.group == "ETP" {
                        "moe-group-etp"
                    } else {
                        "moe-group-ep"
                    },
                ));
                for g in 0..shown_gpus {
                    ui.label(bytes(
                        lang,
                        rec.bytes_sent_per_gpu.get(g).copied().unwrap_or(0),
                    ));
                }
                if c.gpus() > shown_gpus {
                    ui.label(bytes(lang, rec.max_bytes_sent()));
                }
                ui.end_row();
            }
        });
}

/// How a line of the reference check is inked.
#[derive(Clone, Copy)]
enum CheckInk {
    Ok,
    Error,
    Plain,
}

/// The sharded run against the unsharded reference, in words: at a desk the whole check and
/// why a tolerance; on a projector, when it passed, one short line (the rest on hover). With
/// the whole text, for the hover.
fn check_lines(lang: Lang, b: &Built, presenter: bool) -> (Vec<(String, CheckInk)>, String) {
    let (out, grad) = b.max_differences();
    let full = t_args(
        lang,
        "moe-check",
        &[
            ("out", sci(lang, out, 1)),
            ("grad", sci(lang, grad, 1)),
            ("rel", sci(lang, b.report.max_rel_error, 1)),
            ("tol", sci(lang, b.report.tolerance, 0)),
            ("tensors", b.report.checks.len().to_string()),
            (
                "routing",
                t(
                    lang,
                    if b.report.routing_equal {
                        "moe-routing-same"
                    } else {
                        "moe-routing-differ"
                    },
                ),
            ),
        ],
    );
    let why = t(lang, "moe-check-why");
    let hover = format!("{full}\n\n{why}");
    let passed = b.report.passed() && b.report.routing_equal;
    if presenter && passed {
        let short = t_args(
            lang,
            "moe-check-short",
            &[
                ("out", sci(lang, out, 1)),
                ("grad", sci(lang, grad, 1)),
                ("tol", sci(lang, b.report.tolerance, 0)),
            ],
        );
        return (vec![(short, CheckInk::Ok)], hover);
    }
    let mut lines = Vec::new();
    if b.report.passed() {
        lines.push((full, CheckInk::Ok));
    } else {
        lines.push((full, CheckInk::Error));
        lines.push((t(lang, "moe-check-failed"), CheckInk::Error));
    }
    lines.push((why, CheckInk::Plain));
    (lines, hover)
}

/// The height [`check_ui`] takes at the width available.
fn check_height(ui: &egui::Ui, b: &Built, presenter: bool) -> f32 {
    let (lines, _) = check_lines(crate::widgets::lang(ui), b, presenter);
    let font = egui::TextStyle::Body.resolve(ui.style());
    let width = ui.available_width();
    lines
        .into_iter()
        .map(|(text, _)| {
            ui.painter()
                .layout(text, font.clone(), egui::Color32::PLACEHOLDER, width)
                .size()
                .y
                + ui.spacing().item_spacing.y
        })
        .sum()
}

fn check_ui(ui: &mut egui::Ui, b: &Built, presenter: bool) {
    let (lines, hover) = check_lines(crate::widgets::lang(ui), b, presenter);
    let short = lines.len() == 1;
    for (text, ink) in lines {
        let resp = match ink {
            CheckInk::Ok => ui.colored_label(crate::widgets::ok_ink(ui), text),
            CheckInk::Error => ui.colored_label(ui.visuals().error_fg_color, text),
            CheckInk::Plain => ui.label(text),
        };
        if short {
            resp.on_hover_text(hover.clone());
        }
    }
}

/// A dropped assignment: `rect` outlined and crossed out in `stroke` (the error colour).
fn crossed_out(
    shapes: &mut Vec<egui::Shape>,
    rect: egui::Rect,
    rounding: f32,
    stroke: egui::Stroke,
) {
    shapes.push(egui::Shape::rect_stroke(
        rect,
        rounding,
        stroke,
        egui::StrokeKind::Inside,
    ));
    shapes.push(egui::Shape::line_segment(
        [rect.left_top(), rect.right_bottom()],
        stroke,
    ));
    shapes.push(egui::Shape::line_segment(
        [rect.left_bottom(), rect.right_top()],
        stroke,
    ));
}
