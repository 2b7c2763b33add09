//! Pipeline: a pipeline schedule (GPipe, 1F1B, interleaved 1F1B, ZB-H1) for P stages and M
//! micro-batches, drawn as a time × stage chart from the engine's [`PipelineRun`]: forward (F),
//! backward (B) and weight-gradient (W) boxes coloured by micro-batch, idle time left empty, the
//! sends between stages, the TP all-reduces inside each box and the data-parallel gradient
//! all-reduce at the end, timed by the cost model for a chosen model, GPU and TP size.
//!
//! The learner predicts the bubble before it is shown (issue 22's "predict before you see"); a
//! clock plays across the timeline (Space, ←/→, Home), boxes filling in as it passes them.
//!
//! Nothing here schedules: the order and the ticks are the engine's ([`pipeline::run`]); the
//! view only turns ticks into the cost model's seconds (one tick = 1/[`TICKS_PER_FORWARD`] of a
//! chunk's forward).

use crate::i18n::{num, t, t_args};
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
use tplab_engine::capacity::cost::{self, LINK_EFFICIENCY};
use tplab_engine::capacity::defaults;
use tplab_engine::capacity::hardware::{Catalogue, Cluster};
use tplab_engine::capacity::memory::{training_tp_sizes, Layout};
use tplab_engine::capacity::models::ModelPreset;
use tplab_engine::collectives::CollectiveKind;
use tplab_engine::pipeline::{
    self, Costs, Pass, PipelineConfig, PipelineError, PipelineRun, Schedule, SendKind, Timed,
};
use tplab_lessons::Lang;

/// Ticks of one chunk's forward: the cost model's times are rounded to this many parts of it
/// (5%), so that the engine's whole-tick timeline keeps their proportions.
pub const TICKS_PER_FORWARD: u64 = 20;

/// Stages, micro-batches and virtual stages the controls allow (the chart stays readable).
pub const MAX_STAGES: usize = tplab_lessons::PIPELINE_MAX_STAGES;
pub const MAX_MICROBATCHES: usize = tplab_lessons::PIPELINE_MAX_MICROBATCHES;
pub const MAX_VIRTUAL: usize = tplab_lessons::PIPELINE_MAX_VIRTUAL;
/// Data-parallel replicas the control allows.
pub const MAX_DP: usize = 64;

/// TP sizes offered (one node of 8 GPUs at most: TP stays inside NVLink).
const TP_CHOICES: [usize; 4] = [1, 2, 4, 8];

/// GPUs per node of the modeled cluster (the link between nodes is the GPU's own node's,
/// [`defaults::inter_node_for`]).
const GPUS_PER_NODE: usize = 8;

/// Sequence length of the modeled micro-batch (at most the model's own), and its size.
const SEQ: usize = 2048;

/// Seconds the clock takes to cross the whole timeline at speed 1.
const PLAY_SECONDS: f64 = 12.0;

/// Pipeline view state.
#[derive(Serialize, Deserialize)]
#[serde(default)]
pub struct Pipeline {
    pub schedule: Schedule,
    pub stages: usize,
    pub microbatches: usize,
    /// Virtual stages per stage (used by the interleaved schedule only).
    pub virtual_stages: usize,
    pub model: ModelPreset,
    pub gpu: String,
    pub tp: usize,
    pub dp: usize,
    /// The clock, as a fraction of the whole timeline (1: everything has run).
    pub clock: f64,
    pub playing: bool,
    pub speed: f64,
    /// Ask for the bubble before showing it.
    pub predict: bool,
    /// Answers given: the configuration's key → the option picked (`None`: skipped).
    #[serde(skip)]
    answers: BTreeMap<String, Option<usize>>,
    #[serde(skip)]
    cache: Option<(Inputs, Result<Built, BuildError>)>,
}

impl Default for Pipeline {
    fn default() -> Self {
        Self {
            schedule: Schedule::OneFOneB,
            stages: 4,
            microbatches: 8,
            virtual_stages: 2,
            model: ModelPreset::Gpt3_175b,
            gpu: "a100-80gb".into(),
            tp: 8,
            dp: 2,
            clock: 1.0,
            playing: false,
            speed: 1.0,
            predict: true,
            answers: BTreeMap::new(),
            cache: None,
        }
    }
}

/// What the chart is computed from (a change rebuilds it).
#[derive(Debug, Clone, PartialEq)]
struct Inputs {
    schedule: Schedule,
    stages: usize,
    microbatches: usize,
    virtual_stages: usize,
    model: ModelPreset,
    gpu: String,
    tp: usize,
    dp: usize,
}

/// Why the chart cannot be built.
#[derive(Debug, Clone, PartialEq)]
pub enum BuildError {
    /// The engine refuses the schedule.
    Pipeline(PipelineError),
    /// The TP size does not divide the model's heads, KV heads and FFN width.
    Tp { tp: usize, valid: Vec<usize> },
    /// The GPU or the cluster (the engine's words).
    Hardware(String),
}

/// The cost model's times for one chunk's boxes, and the links.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxTimes {
    /// Seconds per engine tick.
    pub tick_s: f64,
    /// Layers one chunk holds (`layers / (P·V)`, the average when it does not divide).
    pub layers_per_chunk: f64,
    /// One TP all-reduce of a layer's activations (0 at TP 1).
    pub all_reduce_s: f64,
    pub forward_s: f64,
    /// The input gradient (the whole backward where it is not split: `backward_s + weight_s`).
    pub backward_s: f64,
    pub weight_s: f64,
    /// One send of activations (or their gradient) to the next stage.
    pub send_s: f64,
    /// The data-parallel gradient all-reduce of one stage's weights.
    pub dp_reduce_s: f64,
    /// Link names: the TP group's, the pipeline's, the DP group's.
    pub tp_link: String,
    pub pp_link: String,
    pub dp_link: String,
}

/// The engine's run and its times.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    pub config: PipelineConfig,
    pub run: PipelineRun,
    pub times: BoxTimes,
    /// The DP all-reduce in ticks (at least one).
    pub dp_ticks: u64,
}

impl Built {
    /// The whole timeline in ticks: the schedule, then the DP all-reduce of the last stage to
    /// finish.
    pub fn total_ticks(&self) -> u64 {
        self.run
            .timeline
            .iter()
            .map(|t| t.last().map_or(0, |o| o.end) + self.dp_ticks)
            .max()
            .unwrap_or(1)
            .max(1)
    }

    /// Every tick where a box starts or ends, sorted: where the clock stops when stepped.
    fn boundaries(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .run
            .timeline
            .iter()
            .flat_map(|t| {
                let end = t.last().map_or(0, |o| o.end);
                t.iter()
                    .flat_map(|o| [o.start, o.end])
                    .chain([end + self.dp_ticks])
            })
            .collect();
        v.push(0);
        v.sort_unstable();
        v.dedup();
        v
    }
}

impl Pipeline {
    fn inputs(&self) -> Inputs {
        Inputs {
            schedule: self.schedule,
            stages: self.stages,
            microbatches: self.microbatches,
            virtual_stages: self.virtual_stages,
            model: self.model,
            gpu: self.gpu.clone(),
            tp: self.tp,
            dp: self.dp,
        }
    }

    /// The schedule and its times for the current controls (cached until they change).
    pub fn built(&mut self) -> &Result<Built, BuildError> {
        let inputs = self.inputs();
        if self.cache.as_ref().map(|(i, _)| i) != Some(&inputs) {
            self.cache = None;
        }
        &self
            .cache
            .get_or_insert_with(|| {
                let built = build(&inputs);
                (inputs, built)
            })
            .1
    }

    /// The configuration's key for the learner's answers.
    fn key(&mut self) -> Option<String> {
        self.built()
            .as_ref()
            .ok()
            .map(|b| format!("{:?}", b.config))
    }

    /// Whether the bubble waits for a prediction.
    pub fn waiting(&mut self) -> bool {
        self.predict && self.key().is_some_and(|k| !self.answers.contains_key(&k))
    }

    fn step_clock(&mut self, presses: i32) {
        let Ok(b) = self.built() else { return };
        let total = b.total_ticks() as f64;
        let bounds = b.boundaries();
        let mut now = self.clock * total;
        for _ in 0..presses.unsigned_abs() {
            now = if presses > 0 {
                bounds
                    .iter()
                    .map(|&x| x as f64)
                    .find(|&x| x > now + 1e-9)
                    .unwrap_or(total)
            } else {
                bounds
                    .iter()
                    .rev()
                    .map(|&x| x as f64)
                    .find(|&x| x < now - 1e-9)
                    .unwrap_or(0.0)
            };
        }
        self.clock = (now / total).clamp(0.0, 1.0);
        self.playing = false;
    }

    fn toggle_play(&mut self) {
        if !self.playing && self.clock >= 1.0 {
            self.clock = 0.0;
        }
        self.playing = !self.playing;
    }
}

/// The cost model's times for `inputs` and the engine's run with them.
fn build(inputs: &Inputs) -> Result<Built, BuildError> {
    let spec = inputs.model.spec();
    let valid: Vec<usize> = training_tp_sizes(&spec)
        .into_iter()
        .filter(|t| TP_CHOICES.contains(t))
        .collect();
    if !valid.contains(&inputs.tp) {
        return Err(BuildError::Tp {
            tp: inputs.tp,
            valid,
        });
    }
    let virtual_stages = if inputs.schedule == Schedule::Interleaved {
        inputs.virtual_stages
    } else {
        1
    };
    // The engine checks the schedule first: its error names the rule and the fix.
    PipelineConfig {
        virtual_stages,
        ..PipelineConfig::new(inputs.schedule, inputs.stages, inputs.microbatches)
    }
    .validate()
    .map_err(BuildError::Pipeline)?;
    let (t, p, d) = (inputs.tp, inputs.stages, inputs.dp.max(1));
    let catalogue = Catalogue::default();
    let gpu = catalogue
        .gpu(&inputs.gpu)
        .map_err(|e| BuildError::Hardware(e.to_string()))?;
    let cluster = Cluster::covering(
        &catalogue,
        &inputs.gpu,
        t * p * d,
        GPUS_PER_NODE,
        defaults::inter_node_for(&gpu),
    )
    .map_err(|e| BuildError::Hardware(e.to_string()))?;
    let layout = Layout {
        zero: 1,
        ..Layout::new(t, p, d)
    };
    let seq = SEQ.min(spec.seq);
    let layer = cost::layer_time(&spec, seq, &layout, &cluster);
    let all_reduce_s = if layer.tp_collectives > 0 {
        layer.tp_comm_s / layer.tp_collectives as f64
    } else {
        0.0
    };
    let chunks = (p * virtual_stages) as f64;
    let layers_per_chunk = spec.layers as f64 / chunks;
    // Forward: compute and its two all-reduces per layer. The backward's two all-reduces are
    // of input gradients (Megatron's f and g): they belong to B; W is compute only, half of the
    // backward's GEMMs (the weight gradient).
    let forward_s = layers_per_chunk * (layer.forward_compute_s + 2.0 * all_reduce_s);
    let weight_s = layers_per_chunk * layer.backward_compute_s / 2.0;
    let input_s = layers_per_chunk * (layer.backward_compute_s / 2.0 + 2.0 * all_reduce_s);
    let tick_s = forward_s / TICKS_PER_FORWARD as f64;
    let ticks = |s: f64| ((s / tick_s).round() as u64).clamp(1, pipeline::MAX_COST);
    let costs = Costs {
        forward: TICKS_PER_FORWARD,
        backward_input: ticks(input_s),
        backward_weight: ticks(weight_s),
    };
    let config = PipelineConfig {
        virtual_stages,
        costs,
        ..PipelineConfig::new(inputs.schedule, p, inputs.microbatches)
    };
    let run = pipeline::run(&config).map_err(BuildError::Pipeline)?;
    // Sends: the activations of one micro-batch, `2·s·h` bytes, split over the stage's t
    // ranks (the cost model's own rule, Narayanan et al. 2021 §4.1).
    let pp_link = cluster.group_link(t * d, p).clone();
    let send_bytes = 2.0 * seq as f64 * spec.hidden as f64 / t as f64;
    let send_s = pp_link.latency_us * 1e-6
        + send_bytes / (pp_link.bandwidth_bytes_per_s() * LINK_EFFICIENCY);
    // DP: each stage's 2-byte gradients, its layers' share of the weights split over t.
    let stage_params = spec.params_per_layer() as f64 * spec.layers as f64 / (p * t) as f64;
    let dp_link = cluster.group_link(t, d).clone();
    let dp_reduce_s = cost::ring_time_s(
        CollectiveKind::AllReduce,
        d,
        (2.0 * stage_params) as u64,
        &dp_link,
    );
    let dp_ticks = if d > 1 {
        ((dp_reduce_s / tick_s).round() as u64).max(1)
    } else {
        0
    };
    let tp_link = cluster.group_link(1, t).display_name().to_string();
    let b_s = if inputs.schedule.splits_backward() {
        input_s
    } else {
        input_s + weight_s
    };
    Ok(Built {
        config,
        times: BoxTimes {
            tick_s,
            layers_per_chunk,
            all_reduce_s,
            forward_s,
            backward_s: b_s,
            weight_s,
            send_s,
            dp_reduce_s,
            tp_link,
            pp_link: pp_link.display_name().to_string(),
            dp_link: dp_link.display_name().to_string(),
        },
        run,
        dp_ticks,
    })
}

/// The schedule's name in the learner's words.
pub fn schedule_name(lang: Lang, s: Schedule) -> String {
    t(lang, &format!("pp-schedule-{}", s.name()))
}

/// The engine's refusal in the learner's language (its English is the engine's sentence).
pub fn error_text(lang: Lang, e: &BuildError) -> String {
    match e {
        BuildError::Pipeline(PipelineError::MicrobatchesNotMultiple {
            microbatches,
            stages,
            lower,
            upper,
        }) if lang == Lang::Tr => t_args(
            lang,
            "pp-err-multiple",
            &[
                ("m", microbatches.to_string()),
                ("p", stages.to_string()),
                ("lower", lower.to_string()),
                ("upper", upper.to_string()),
            ],
        ),
        BuildError::Pipeline(e) => e.to_string(),
        BuildError::Tp { tp, valid } => t_args(
            lang,
            "pp-err-tp",
            &[
                ("tp", tp.to_string()),
                ("valid", crate::widgets::list_words(lang, valid)),
            ],
        ),
        BuildError::Hardware(s) => s.clone(),
    }
}

/// A duration in ms (µs below 1 ms), in the learner's numbers.
pub fn duration(lang: Lang, s: f64) -> String {
    if s >= 1e-3 {
        format!("{} ms", num(lang, s * 1e3, if s >= 0.1 { 0 } else { 1 }))
    } else {
        format!("{} µs", num(lang, s * 1e6, 0))
    }
}

/// A fraction as a percentage with one decimal (the one formatter's: `27.3%`, `%27,3`).
fn share(lang: Lang, f: f64) -> String {
    crate::i18n::percent(lang, 100.0 * f, 1)
}

/// The answers offered for the bubble: the measured one and three others, ascending; returns
/// them and the index of the right one.
pub fn bubble_options(run: &PipelineRun) -> (Vec<f64>, usize) {
    let right = run.bubble.value();
    let (p, m, v) = (
        run.stage_count as f64,
        run.microbatches as f64,
        run.virtual_stages as f64,
    );
    let candidates = [
        (p - 1.0) / (m + p - 1.0),
        (p - 1.0) / (v.max(2.0) * m + p - 1.0),
        (p - 1.0) / p,
        (p - 1.0) / (3.0 * m + p - 1.0),
        0.0,
        0.5,
        0.25,
        0.75,
        0.1,
    ];
    let mut options = vec![right];
    for c in candidates {
        if options.len() == 4 {
            break;
        }
        if options.iter().all(|o| (o - c).abs() > 0.02) {
            options.push(c);
        }
    }
    options.sort_by(f64::total_cmp);
    let at = options
        .iter()
        .position(|o| (o - right).abs() < 1e-12)
        .unwrap_or(0);
    (options, at)
}

impl View for Pipeline {
    fn id(&self) -> &'static str {
        "pipeline"
    }

    fn title(&self) -> &'static str {
        "Pipeline"
    }

    fn logic(&mut self, ctx: &egui::Context, shared: &mut Shared) {
        if shared.keys.toggle_play {
            self.toggle_play();
        }
        if shared.keys.restart {
            self.clock = 0.0;
            self.playing = false;
        }
        if shared.keys.step != 0 {
            if shared.keys.step > 0 && self.waiting() {
                // The clicker's first press reveals the answer (the class has answered aloud).
                if let Some(k) = self.key() {
                    self.answers.insert(k, None);
                }
            } else {
                self.step_clock(shared.keys.step);
            }
        }
        if self.playing {
            if self.waiting() {
                self.playing = false;
                return;
            }
            let dt_s = f64::from(ctx.input(|i| i.stable_dt).min(0.25));
            self.clock += dt_s * self.speed / PLAY_SECONDS;
            if self.clock >= 1.0 {
                self.clock = 1.0;
                self.playing = false;
            }
            ctx.request_repaint();
        }
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = crate::widgets::lang(ui);
        crate::widgets::links::view_heading(ui, t(lang, "pp-title"));
        crate::widgets::scrolling_page(ui, "pp-page", |ui| self.page_ui(ui, shared.presenter));
    }

    fn show_me(&mut self, target: &crate::lab::ShowMe, _shared: &mut Shared) {
        if let Some(s) = target.schedule.as_deref().and_then(|s| s.parse().ok()) {
            self.schedule = s;
        }
        if let Some(p) = target.stages {
            self.stages = p.clamp(1, MAX_STAGES);
        }
        if let Some(m) = target.microbatches {
            self.microbatches = m.clamp(1, MAX_MICROBATCHES);
        }
        if let Some(v) = target.virtual_stages {
            self.virtual_stages = v.clamp(2, MAX_VIRTUAL);
        }
        self.clock = 1.0;
        self.playing = false;
    }

    fn save(&self) -> Option<String> {
        save_json(self)
    }

    fn load(&mut self, json: &str) {
        load_json(self, json);
        self.stages = self.stages.clamp(1, MAX_STAGES);
        self.microbatches = self.microbatches.clamp(1, MAX_MICROBATCHES);
        self.virtual_stages = self.virtual_stages.clamp(2, MAX_VIRTUAL);
        self.dp = self.dp.clamp(1, MAX_DP);
        self.clock = if self.clock.is_finite() {
            self.clock.clamp(0.0, 1.0)
        } else {
            1.0
        };
        self.playing = false;
    }

    fn export_name(&self, _shared: &Shared) -> Option<String> {
        Some(format!(
            "pipeline-{}-p{}-m{}",
            self.schedule.name(),
            self.stages,
            self.microbatches
        ))
    }
}

impl Pipeline {
    fn page_ui(&mut self, ui: &mut egui::Ui, presenter: bool) {
        let lang = crate::widgets::lang(ui);
        self.controls_ui(ui);
        self.cost_controls_ui(ui);
        let built = match self.built() {
            Ok(b) => b.clone(),
            Err(e) => {
                let e = e.clone();
                self.error_ui(ui, &e);
                return;
            }
        };
        ui.label(assumptions(lang, self, &built));
        ui.add_space(4.0);
        if self.waiting() {
            self.predict_ui(ui, &built, presenter);
            return;
        }
        self.bubble_ui(ui, &built);
        self.clock_ui(ui, &built);
        chart_ui(ui, &built, self.clock, presenter);
        legend_ui(ui, &built);
    }

    fn controls_ui(&mut self, ui: &mut egui::Ui) {
        let lang = crate::widgets::lang(ui);
        let tr = |id: &str| t(lang, id);
        ui.horizontal_wrapped(|ui| {
            keep_together(
                ui,
                &[&schedule_name(lang, self.schedule), &tr("pp-schedule")],
                COMBO_EXTRA,
            );
            egui::ComboBox::from_label(tr("pp-schedule"))
                .selected_text(schedule_name(lang, self.schedule))
                .show_ui(ui, |ui| {
                    for s in Schedule::ALL {
                        ui.selectable_value(&mut self.schedule, s, schedule_name(lang, s));
                    }
                });
            keep_together(ui, &[&tr("pp-stages")], slider_extra(ui));
            ui.add(egui::Slider::new(&mut self.stages, 1..=MAX_STAGES).text(tr("pp-stages")));
            keep_together(ui, &[&tr("pp-microbatches")], slider_extra(ui));
            ui.add(
                egui::Slider::new(&mut self.microbatches, 1..=MAX_MICROBATCHES)
                    .text(tr("pp-microbatches")),
            );
            if self.schedule == Schedule::Interleaved {
                keep_together(ui, &[&tr("pp-virtual")], slider_extra(ui));
                ui.add(
                    egui::Slider::new(&mut self.virtual_stages, 2..=MAX_VIRTUAL)
                        .text(tr("pp-virtual")),
                );
            }
        });
    }

    fn cost_controls_ui(&mut self, ui: &mut egui::Ui) {
        let lang = crate::widgets::lang(ui);
        let tr = |id: &str| t(lang, id);
        ui.horizontal_wrapped(|ui| {
            let before = self.model;
            keep_together(
                ui,
                &[self.model.display_name(), &tr("pp-model")],
                COMBO_EXTRA,
            );
            egui::ComboBox::from_label(tr("pp-model"))
                .selected_text(self.model.display_name())
                .show_ui(ui, |ui| {
                    for m in ModelPreset::ALL {
                        ui.selectable_value(&mut self.model, m, m.display_name());
                    }
                });
            if self.model != before {
                // Keep the largest TP the new model allows, at most the one chosen.
                let valid = training_tp_sizes(&self.model.spec());
                self.tp = TP_CHOICES
                    .iter()
                    .copied()
                    .filter(|t| valid.contains(t) && *t <= self.tp)
                    .max()
                    .unwrap_or(1);
            }
            let gpu = crate::widgets::gpu_name(&self.gpu);
            keep_together(ui, &[&gpu, &tr("pp-gpu")], COMBO_EXTRA);
            egui::ComboBox::from_label(tr("pp-gpu"))
                .selected_text(gpu)
                .show_ui(ui, |ui| {
                    for g in &Catalogue::default().gpus {
                        ui.selectable_value(&mut self.gpu, g.name.clone(), g.display_name());
                    }
                });
            keep_together(ui, &[&tr("pp-tp"), "1 2 4 8"], 60.0);
            ui.label(tr("pp-tp"));
            let valid = training_tp_sizes(&self.model.spec());
            for tp in TP_CHOICES.into_iter().filter(|t| valid.contains(t)) {
                ui.selectable_value(&mut self.tp, tp, tp.to_string());
            }
            keep_together(ui, &[&tr("pp-dp"), "64"], 30.0);
            let l = ui.label(tr("pp-dp"));
            ui.add(egui::DragValue::new(&mut self.dp).range(1..=MAX_DP))
                .labelled_by(l.id);
        });
    }

    fn error_ui(&mut self, ui: &mut egui::Ui, e: &BuildError) {
        let lang = crate::widgets::lang(ui);
        ui.colored_label(ui.visuals().error_fg_color, error_text(lang, e));
        match e {
            BuildError::Pipeline(PipelineError::MicrobatchesNotMultiple {
                lower, upper, ..
            }) => {
                ui.horizontal_wrapped(|ui| {
                    for m in [*lower, *upper] {
                        if (1..=MAX_MICROBATCHES).contains(&m)
                            && ui
                                .button(t_args(lang, "pp-use-m", &[("m", m.to_string())]))
                                .clicked()
                        {
                            self.microbatches = m;
                        }
                    }
                });
            }
            BuildError::Tp { valid, .. } => {
                ui.horizontal_wrapped(|ui| {
                    for &tp in valid {
                        if ui
                            .button(t_args(lang, "pp-use-tp", &[("tp", tp.to_string())]))
                            .clicked()
                        {
                            self.tp = tp;
                        }
                    }
                });
            }
            _ => {}
        }
    }

    /// The question before the chart: what fraction of the time is bubble?
    fn predict_ui(&mut self, ui: &mut egui::Ui, built: &Built, presenter: bool) {
        let lang = crate::widgets::lang(ui);
        let tr = |id: &str| t(lang, id);
        let (options, _) = bubble_options(&built.run);
        let mut picked = None;
        let mut skip = false;
        egui::Frame::group(ui.style()).show(ui, |ui| {
            ui.set_width(ui.available_width());
            let body = ui.style().text_styles[&egui::TextStyle::Body].size;
            let (q_size, o_size) = if presenter {
                (1.6 * body, 1.4 * body)
            } else {
                (1.3 * body, 1.1 * body)
            };
            let question = t_args(
                lang,
                "pp-predict-question",
                &[
                    ("schedule", schedule_name(lang, self.schedule)),
                    ("p", self.stages.to_string()),
                    ("m", self.microbatches.to_string()),
                    ("v", built.config.virtual_stages.to_string()),
                ],
            );
            ui.label(egui::RichText::new(question).size(q_size).strong());
            ui.add_space(6.0);
            ui.horizontal_wrapped(|ui| {
                for (i, o) in options.iter().enumerate() {
                    let text = format!("{}  {}", char::from(b'A' + i as u8), share(lang, *o));
                    if ui.button(egui::RichText::new(text).size(o_size)).clicked() {
                        picked = Some(i);
                    }
                }
            });
            ui.add_space(6.0);
            if ui.button(tr("pp-predict-skip")).clicked() {
                skip = true;
            }
            ui.checkbox(&mut self.predict, tr("pp-predict-toggle"));
        });
        if let Some(k) = self.key() {
            if picked.is_some() || skip {
                self.answers.insert(k, picked);
                self.clock = 1.0;
            }
        }
    }

    /// The bubble measured beside its formula, and the learner's prediction.
    fn bubble_ui(&mut self, ui: &mut egui::Ui, built: &Built) {
        let lang = crate::widgets::lang(ui);
        let run = &built.run;
        let measured = t_args(
            lang,
            "pp-bubble-measured",
            &[
                ("num", run.bubble.num.to_string()),
                ("den", run.bubble.den.to_string()),
                ("percent", share(lang, run.bubble_fraction)),
            ],
        );
        let formula = match &run.formula {
            Some(f) => t_args(
                lang,
                "pp-bubble-formula",
                &[
                    ("expression", f.expression.clone()),
                    ("num", f.fraction.num.to_string()),
                    ("den", f.fraction.den.to_string()),
                    (
                        "source",
                        t(lang, &format!("pp-source-{}", run.schedule.name())),
                    ),
                ],
            ),
            None => t(lang, "pp-bubble-no-formula"),
        };
        ui.label(egui::RichText::new(measured).strong());
        ui.label(formula);
        let key = self.key();
        if let Some(Some(i)) = key.and_then(|k| self.answers.get(&k).copied()) {
            let (options, right) = bubble_options(run);
            let said = options.get(i).copied().unwrap_or(0.0);
            if i == right {
                ui.colored_label(
                    crate::widgets::ok_ink(ui),
                    t_args(lang, "pp-predict-right", &[("said", share(lang, said))]),
                );
            } else {
                ui.label(t_args(
                    lang,
                    "pp-predict-wrong",
                    &[("said", share(lang, said))],
                ));
            }
        }
        let makespan_s = run.makespan as f64 * built.times.tick_s;
        ui.label(t_args(
            lang,
            "pp-step-time",
            &[
                ("schedule", duration(lang, makespan_s)),
                // The all-reduce's own time, as the assumptions below state it (the bar is
                // drawn in whole ticks: 272 ms here read 271 ms two lines lower).
                ("dp", duration(lang, built.times.dp_reduce_s)),
            ],
        ));
    }

    fn clock_ui(&mut self, ui: &mut egui::Ui, built: &Built) {
        let lang = crate::widgets::lang(ui);
        let tr = |id: &str| t(lang, id);
        ui.horizontal_wrapped(|ui| {
            let pressed = crate::widgets::player_buttons(
                ui,
                lang,
                self.playing,
                [
                    "pp-play",
                    "pp-pause",
                    "pp-previous",
                    "pp-next",
                    "pp-restart",
                ],
            );
            if pressed.play {
                self.toggle_play();
            }
            if pressed.previous {
                self.step_clock(-1);
            }
            if pressed.next {
                self.step_clock(1);
            }
            if pressed.restart {
                self.clock = 0.0;
                self.playing = false;
            }
            keep_together(ui, &[&tr("pp-speed")], slider_extra(ui));
            ui.add(
                egui::Slider::new(&mut self.speed, 0.25..=4.0)
                    .logarithmic(true)
                    .custom_formatter(crate::widgets::widget_number(lang))
                    .custom_parser(crate::widgets::parse_number)
                    .text(tr("pp-speed")),
            );
            let now_s = self.clock * built.total_ticks() as f64 * built.times.tick_s;
            ui.label(t_args(lang, "pp-clock", &[("time", duration(lang, now_s))]));
        });
    }
}

/// What the times assume, in one paragraph.
fn assumptions(lang: Lang, v: &Pipeline, b: &Built) -> String {
    let tm = &b.times;
    let layers = if (tm.layers_per_chunk - tm.layers_per_chunk.round()).abs() < 1e-9 {
        num(lang, tm.layers_per_chunk, 0)
    } else {
        num(lang, tm.layers_per_chunk, 1)
    };
    t_args(
        lang,
        "pp-assumes",
        &[
            ("model", v.model.display_name().to_string()),
            ("gpu", crate::widgets::gpu_name(&v.gpu)),
            ("tp", v.tp.to_string()),
            ("tp_link", tm.tp_link.clone()),
            ("seq", SEQ.min(v.model.spec().seq).to_string()),
            ("layers", layers),
            ("forward", duration(lang, tm.forward_s)),
            ("all_reduce", duration(lang, tm.all_reduce_s)),
            ("backward", duration(lang, tm.backward_s)),
            ("weight", duration(lang, tm.weight_s)),
            ("send", duration(lang, tm.send_s)),
            ("pp_link", tm.pp_link.clone()),
            ("dp", v.dp.to_string()),
            ("dp_time", duration(lang, tm.dp_reduce_s)),
            ("dp_link", tm.dp_link.clone()),
        ],
    )
}

/// The letter of a pass.
fn pass_letter(p: Pass) -> char {
    match p {
        Pass::F => 'F',
        Pass::B => 'B',
        Pass::W => 'W',
    }
}

/// A box's fill: its micro-batch's colour, paler for B and palest for W; a second
/// chunk darker (so chunks differ even where the label does not fit).
fn box_fill(o: &Timed, dark: bool, bg: egui::Color32) -> egui::Color32 {
    let base = gpu_color(o.microbatch, dark);
    let base = if o.chunk % 2 == 1 {
        base.lerp_to_gamma(egui::Color32::BLACK, 0.3)
    } else {
        base
    };
    match o.op {
        Pass::F => base,
        Pass::B => base.lerp_to_gamma(bg, 0.4),
        Pass::W => base.lerp_to_gamma(bg, 0.7),
    }
}

/// The label on a box: `F3`, with the chunk's letter under the interleaved schedule (`F3b`).
fn box_label(o: &Timed, virtual_stages: usize) -> String {
    if virtual_stages > 1 {
        format!(
            "{}{}{}",
            pass_letter(o.op),
            o.microbatch,
            char::from(b'a' + (o.chunk % 26) as u8)
        )
    } else {
        format!("{}{}", pass_letter(o.op), o.microbatch)
    }
}

/// The time × stage chart: rows of boxes, the sends, the DP all-reduces and the clock.
fn chart_ui(ui: &mut egui::Ui, b: &Built, clock: f64, presenter: bool) {
    let lang = crate::widgets::lang(ui);
    let dark = ui.visuals().dark_mode;
    let run = &b.run;
    let p = run.stage_count;
    let body = ui.style().text_styles[&egui::TextStyle::Body].size;
    let small = body * 0.85;
    let row_h = (if presenter { 30.0_f32 } else { 34.0 }).max(body * 1.8);
    let gap = 6.0;
    let axis_h = body * 1.6;
    let stage_label = |s: usize| t_args(lang, "pp-stage", &[("s", s.to_string())]);
    let peak_label = |n: usize| t_args(lang, "pp-peak", &[("n", n.to_string())]);
    let text_w = |s: String| {
        ui.painter()
            .layout_no_wrap(
                s,
                egui::FontId::proportional(body),
                egui::Color32::PLACEHOLDER,
            )
            .size()
            .x
    };
    let left = text_w(stage_label(p.saturating_sub(1))) + 10.0;
    let right = run
        .peak_activations
        .iter()
        .map(|&n| text_w(peak_label(n)))
        .fold(0.0, f32::max)
        + 10.0;
    let width = ui.available_width().max(200.0);
    let height = p as f32 * (row_h + gap) + axis_h + 4.0;
    let (rect, resp) = ui.allocate_exact_size(egui::vec2(width, height), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    let total = b.total_ticks() as f32;
    let x0 = rect.left() + left;
    let plot_w = (rect.width() - left - right).max(50.0);
    let x = |tick: f64| x0 + plot_w * (tick as f32 / total);
    let row_top = |s: usize| rect.top() + s as f32 * (row_h + gap);
    let now = clock * total as f64;
    let bg = ui.visuals().extreme_bg_color;
    let panel = ui.visuals().panel_fill;
    let ink = ui.visuals().text_color();
    let weak = ui.visuals().weak_text_color();
    let mut shapes = Vec::new();
    let mut hovered: Option<String> = None;
    let pointer = resp.hover_pos();
    for s in 0..p {
        let top = row_top(s);
        // "peak 4" says what it counts on hover (the legend's line may be below the fold).
        let peak_zone = egui::Rect::from_min_max(
            egui::pos2(rect.right() - right, top),
            egui::pos2(rect.right(), top + row_h),
        );
        if pointer.is_some_and(|pt| peak_zone.contains(pt)) {
            hovered = Some(t(lang, "pp-legend-peak"));
        }
        shapes.push(egui::Shape::rect_filled(
            egui::Rect::from_min_max(egui::pos2(x0, top), egui::pos2(x0 + plot_w, top + row_h)),
            2.0,
            bg,
        ));
        shapes.push(text_shape(
            &painter,
            egui::pos2(rect.left(), top + row_h / 2.0),
            egui::Align2::LEFT_CENTER,
            stage_label(s),
            body,
            ink,
        ));
        shapes.push(text_shape(
            &painter,
            egui::pos2(rect.right(), top + row_h / 2.0),
            egui::Align2::RIGHT_CENTER,
            peak_label(run.peak_activations.get(s).copied().unwrap_or(0)),
            body,
            ink,
        ));
    }
    // The boxes: filled up to the clock, outlined after it.
    for (s, ops) in run.timeline.iter().enumerate() {
        let top = row_top(s);
        for o in ops {
            let r = egui::Rect::from_min_max(
                egui::pos2(x(o.start as f64), top),
                egui::pos2(x(o.end as f64), top + row_h),
            );
            let fill = box_fill(o, dark, panel);
            let outline = egui::Stroke::new(1.0, weak);
            if (o.start as f64) < now {
                let done_x = x(now.min(o.end as f64));
                let done = egui::Rect::from_min_max(r.min, egui::pos2(done_x, r.max.y));
                shapes.push(egui::Shape::rect_filled(
                    done.shrink2(egui::vec2(0.5, 0.0)),
                    1.0,
                    fill,
                ));
                if o.end as f64 <= now {
                    tp_marks(&mut shapes, o, r, b, dark);
                    let label = box_label(o, run.virtual_stages);
                    let galley = painter.layout_no_wrap(
                        label.clone(),
                        egui::FontId::proportional(small),
                        text_on(fill),
                    );
                    if galley.size().x + 2.0 <= r.width() {
                        shapes.push(text_shape(
                            &painter,
                            egui::pos2(r.center().x, r.top() + 2.0),
                            egui::Align2::CENTER_TOP,
                            label,
                            small,
                            text_on(fill),
                        ));
                    }
                }
            }
            shapes.push(egui::Shape::rect_stroke(
                r.shrink2(egui::vec2(0.5, 0.0)),
                1.0,
                outline,
                egui::StrokeKind::Inside,
            ));
            if pointer.is_some_and(|pt| r.contains(pt)) {
                hovered = Some(box_hover(lang, s, o, b));
            }
        }
        // The DP all-reduce after the stage's last box.
        if b.dp_ticks > 0 {
            let start = ops.last().map_or(0, |o| o.end) as f64;
            let end = start + b.dp_ticks as f64;
            let r = egui::Rect::from_min_max(
                egui::pos2(x(start), top + row_h * 0.25),
                egui::pos2(x(end), top + row_h * 0.75),
            );
            let grey = crate::widgets::gantt::comm_color(dark);
            if start < now {
                let done = egui::Rect::from_min_max(r.min, egui::pos2(x(now.min(end)), r.max.y));
                shapes.push(egui::Shape::rect_filled(done, 1.0, grey));
            }
            shapes.push(egui::Shape::rect_stroke(
                r,
                1.0,
                egui::Stroke::new(1.0, grey),
                egui::StrokeKind::Inside,
            ));
            let label = t(lang, "pp-dp-box");
            let galley =
                painter.layout_no_wrap(label.clone(), egui::FontId::proportional(small), ink);
            if galley.size().x + 4.0 <= r.width() && end <= now {
                shapes.push(text_shape(
                    &painter,
                    r.center(),
                    egui::Align2::CENTER_CENTER,
                    label,
                    small,
                    text_on(grey),
                ));
            }
            if pointer.is_some_and(|pt| r.contains(pt)) {
                hovered = Some(t_args(
                    lang,
                    "pp-hover-dp",
                    &[
                        ("s", s.to_string()),
                        ("time", duration(lang, b.times.dp_reduce_s)),
                        ("link", b.times.dp_link.clone()),
                    ],
                ));
            }
        }
    }
    // The sends that have happened: an arrow from the sender's row to the receiver's.
    let act = ink.gamma_multiply(0.8);
    let grad = egui::Color32::from_rgb(0xD5, 0x5E, 0x00);
    for send in run.sends.iter().filter(|x| (x.at as f64) <= now) {
        let sx = x(send.at as f64);
        let (from, to) = (send.from_stage, send.to_stage);
        let (y0, y1) = if to > from {
            (row_top(from) + row_h, row_top(to))
        } else {
            (row_top(from), row_top(to) + row_h)
        };
        let color = match send.kind {
            SendKind::Activation => act,
            SendKind::Gradient => grad,
        };
        let stroke = egui::Stroke::new(1.5, color);
        shapes.push(egui::Shape::line_segment(
            [egui::pos2(sx, y0), egui::pos2(sx, y1)],
            stroke,
        ));
        let dir = if y1 > y0 { -1.0 } else { 1.0 };
        shapes.push(egui::Shape::convex_polygon(
            vec![
                egui::pos2(sx, y1),
                egui::pos2(sx - 3.0, y1 + dir * 5.0),
                egui::pos2(sx + 3.0, y1 + dir * 5.0),
            ],
            color,
            egui::Stroke::NONE,
        ));
    }
    // The time axis, in the cost model's ms.
    let axis_y = row_top(p) + 2.0;
    shapes.push(egui::Shape::line_segment(
        [egui::pos2(x0, axis_y), egui::pos2(x0 + plot_w, axis_y)],
        egui::Stroke::new(1.0, weak),
    ));
    let total_s = total as f64 * b.times.tick_s;
    let step_s = nice_step(total_s / 6.0);
    let mut tick_s = 0.0;
    while tick_s <= total_s + 1e-12 {
        let tx = x(tick_s / b.times.tick_s);
        shapes.push(egui::Shape::line_segment(
            [egui::pos2(tx, axis_y), egui::pos2(tx, axis_y + 4.0)],
            egui::Stroke::new(1.0, weak),
        ));
        shapes.push(text_shape(
            &painter,
            egui::pos2(tx, axis_y + 4.0),
            egui::Align2::CENTER_TOP,
            axis_label(lang, tick_s, step_s),
            small,
            ink,
        ));
        tick_s += step_s;
    }
    // The clock.
    if clock < 1.0 {
        let cx = x(now);
        shapes.push(egui::Shape::line_segment(
            [egui::pos2(cx, rect.top()), egui::pos2(cx, axis_y)],
            egui::Stroke::new(2.0, ui.visuals().selection.stroke.color),
        ));
    }
    painter.extend(shapes);
    a11y_label(
        &resp,
        &t_args(
            lang,
            "pp-chart-a11y",
            &[
                ("schedule", schedule_name(lang, run.schedule)),
                ("p", p.to_string()),
                ("m", run.microbatches.to_string()),
                ("percent", share(lang, run.bubble_fraction)),
                (
                    "peaks",
                    run.peak_activations
                        .iter()
                        .map(usize::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
            ],
        ),
    );
    if let Some(h) = hovered {
        resp.on_hover_text(h);
    }
}

/// A tick of the time axis in the unit its step is written in, so that every tick of one axis
/// shares it ("0 ms", not "0 µs", before "1000 ms").
fn axis_label(lang: Lang, s: f64, step_s: f64) -> String {
    // A step is 1, 2 or 5 times a power of ten: whole ms from 1 ms up, whole µs below.
    if step_s >= 1e-3 {
        format!("{} ms", num(lang, s * 1e3, 0))
    } else {
        format!("{} µs", num(lang, s * 1e6, 0))
    }
}

/// 1, 2 or 5 times a power of ten, at least `x`.
fn nice_step(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|k| k * p)
        .find(|&s| s >= x)
        .unwrap_or(10.0 * p)
}

/// The TP all-reduces inside a box: two per layer (after attention and after the MLP), dark
/// marks in its lower part; merged into one band at the box's end where a mark would be under a
/// pixel.
fn tp_marks(shapes: &mut Vec<egui::Shape>, o: &Timed, r: egui::Rect, b: &Built, dark: bool) {
    let tm = &b.times;
    if tm.all_reduce_s <= 0.0 || o.op == Pass::W {
        return;
    }
    let box_s = match o.op {
        Pass::F => tm.forward_s,
        _ => tm.backward_s,
    };
    let layers = tm.layers_per_chunk.round().max(1.0) as usize;
    let mark = if dark {
        egui::Color32::from_black_alpha(150)
    } else {
        egui::Color32::from_black_alpha(120)
    };
    let y = r.bottom() - r.height() * 0.4;
    let px_per_s = r.width() / box_s as f32;
    let ar_px = tm.all_reduce_s as f32 * px_per_s;
    if ar_px >= 1.0 && (2 * layers) as f32 * 2.0 <= r.width() {
        let layer_px = r.width() / layers as f32;
        for i in 0..layers {
            let l0 = r.left() + i as f32 * layer_px;
            for end in [l0 + layer_px / 2.0, l0 + layer_px] {
                shapes.push(egui::Shape::rect_filled(
                    egui::Rect::from_min_max(
                        egui::pos2(end - ar_px, y),
                        egui::pos2(end, r.bottom()),
                    ),
                    0.0,
                    mark,
                ));
            }
        }
    } else {
        let band = (2.0 * layers as f32 * ar_px).min(r.width());
        shapes.push(egui::Shape::rect_filled(
            egui::Rect::from_min_max(egui::pos2(r.right() - band, y), r.right_bottom()),
            0.0,
            mark,
        ));
    }
}

/// What a box is, on hover.
fn box_hover(lang: Lang, stage: usize, o: &Timed, b: &Built) -> String {
    let pass = t(
        lang,
        match o.op {
            Pass::F => "pp-pass-f",
            Pass::B if b.run.schedule.splits_backward() => "pp-pass-b-input",
            Pass::B => "pp-pass-b",
            Pass::W => "pp-pass-w",
        },
    );
    let tick = b.times.tick_s;
    t_args(
        lang,
        "pp-hover-box",
        &[
            ("s", stage.to_string()),
            ("pass", pass),
            ("mb", o.microbatch.to_string()),
            ("chunk", (o.chunk * b.run.stage_count + stage).to_string()),
            ("time", duration(lang, (o.end - o.start) as f64 * tick)),
            ("from", duration(lang, o.start as f64 * tick)),
            ("to", duration(lang, o.end as f64 * tick)),
        ],
    )
}

/// What the colours and marks mean.
fn legend_ui(ui: &mut egui::Ui, b: &Built) {
    let lang = crate::widgets::lang(ui);
    let mut parts = vec![t(lang, "pp-legend-boxes")];
    if b.run.virtual_stages > 1 {
        parts.push(t(lang, "pp-legend-chunks"));
    }
    if b.times.all_reduce_s > 0.0 {
        parts.push(t(lang, "pp-legend-tp"));
    }
    if b.run.stage_count > 1 {
        parts.push(t(lang, "pp-legend-sends"));
    }
    if b.dp_ticks > 0 {
        parts.push(t(lang, "pp-legend-dp"));
    }
    parts.push(t(lang, "pp-legend-peak"));
    for p in parts {
        ui.label(p);
    }
}
