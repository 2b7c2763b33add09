//! "Show me" targets: a view of the app, a scenario and a step of the trace.

use crate::i18n::{t, t_args};
use crate::lang::{Lang, Localized};
use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;
use tplab_engine::capacity::hardware::{Catalogue, Cluster, HardwareError};
use tplab_engine::capacity::models::ModelPreset;
use tplab_engine::{block::op::Pass, block::program::schedule};
use tplab_engine::{config::Config, config::ConfigError, config::Preset, overrides::Overrides};

/// The planner's cluster when a target names only some of it (the app's planner defaults):
/// 64 A100s in nodes of 8, joined by InfiniBand HDR.
pub const PLANNER_DEFAULT_GPU: &str = "a100";
pub const PLANNER_DEFAULT_GPUS: usize = 64;
pub const PLANNER_DEFAULT_GPUS_PER_NODE: usize = 8;
const PLANNER_INTER_NODE: &str = "ib-hdr-200";

/// The most stages, micro-batches and virtual stages the Pipeline view draws.
pub const PIPELINE_MAX_STAGES: usize = 8;
pub const PIPELINE_MAX_MICROBATCHES: usize = 32;
pub const PIPELINE_MAX_VIRTUAL: usize = 4;

/// The Cluster view's presets: the guide's scenarios, and the planner's default cluster.
pub const CLUSTERS: [&str; 4] = ["175b-one-node", "70b-serve-tp4", "1t-3d", "planner-64"];

/// The MoE view's layers a target may open: Mixtral's top-2, Switch Transformer's top-1 with a
/// capacity factor of 1 (tokens dropped), experts split by expert-tensor parallelism.
pub const MOE_LAYERS: [&str; 3] = ["mixtral", "switch", "etp"];

/// The app's views, by the names used in content files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum View {
    #[default]
    Playground,
    Step,
    Collectives,
    Timeline,
    Memory,
    Verify,
    Precision,
    Vocab,
    Train,
    Planner,
    Gpu,
    Lessons,
    Quiz,
    Serve,
    Design,
    Pipeline,
    Cluster,
    Moe,
}

impl View {
    pub const ALL: [View; 18] = [
        View::Playground,
        View::Step,
        View::Collectives,
        View::Timeline,
        View::Memory,
        View::Verify,
        View::Precision,
        View::Vocab,
        View::Train,
        View::Planner,
        View::Gpu,
        View::Lessons,
        View::Quiz,
        View::Serve,
        View::Design,
        View::Pipeline,
        View::Cluster,
        View::Moe,
    ];

    pub fn name(self) -> &'static str {
        match self {
            View::Playground => "playground",
            View::Step => "step",
            View::Collectives => "collectives",
            View::Timeline => "timeline",
            View::Memory => "memory",
            View::Verify => "verify",
            View::Precision => "precision",
            View::Vocab => "vocab",
            View::Train => "train",
            View::Planner => "planner",
            View::Gpu => "gpu",
            View::Lessons => "lessons",
            View::Quiz => "quiz",
            View::Serve => "serve",
            View::Design => "design",
            View::Pipeline => "pipeline",
            View::Cluster => "cluster",
            View::Moe => "moe",
        }
    }

    /// The app's side-bar title (English, as the app shows it).
    pub fn title(self) -> &'static str {
        match self {
            View::Playground => "Playground",
            View::Step => "Walkthrough",
            View::Collectives => "Collectives",
            View::Timeline => "Timeline",
            View::Memory => "Memory",
            View::Verify => "Verify",
            View::Precision => "Precision",
            View::Vocab => "Vocabulary",
            View::Train => "Train",
            View::Planner => "Planner",
            View::Gpu => "GPU",
            View::Lessons => "Lessons",
            View::Quiz => "Quiz",
            View::Serve => "Serve",
            View::Design => "Design",
            View::Pipeline => "Pipeline",
            View::Cluster => "Cluster",
            View::Moe => "MoE",
        }
    }

    /// The view's name in `lang`, the app's side-bar title (`view-<name>` in the Fluent files).
    pub fn name_in(self, lang: Lang) -> String {
        t(lang, &format!("view-{}", self.name()))
    }

    /// Whether the view follows a trace event (so `event` means something there).
    pub fn shows_events(self) -> bool {
        matches!(self, View::Step | View::Timeline | View::Collectives)
    }
}

impl View {
    /// The view with this [`View::name`], if any.
    pub fn from_name(name: &str) -> Option<View> {
        View::ALL.into_iter().find(|v| v.name() == name)
    }
}

impl fmt::Display for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a "Show me" button takes the learner, e.g.
/// `{ view = "step", tp = 4, preset = "gpt2-small", pass = "forward", event = "mlp.g" }`: a view,
/// the scenario (an [`Overrides`], its fields flat beside the others) and a point of the trace.
/// The app navigates with it too.
///
/// The scenario: a target that names any scenario field lands on its preset with exactly those
/// fields ([`Overrides::apply`]); one naming none keeps the learner's scenario. A target read
/// from a lesson or a question bank always names its preset (GPT-2 small unless it says
/// otherwise), so what the course describes is what the button shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShowMe {
    pub view: View,
    /// The scenario (default, when read from a file: GPT-2 small).
    #[serde(flatten, deserialize_with = "course_scenario")]
    pub scenario: Overrides,
    /// Planner: the model preset to plan (`gpt3-175b`, `llama3-70b`, `megatron-1t`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Planner and timeline: a GPU of the hardware catalogue (`a100`, `h100`, ...); the
    /// timeline then shows the cost model's times for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// Planner: GPUs in the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<usize>,
    /// Planner: GPUs per node (the NVLink domain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_per_node: Option<usize>,
    /// Pass of the event (default forward).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<Pass>,
    /// Trace event to stop at, e.g. `mlp.g` or `attn.f.bwd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// Layer of the event (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<usize>,
    /// Design: the challenge to open (1 to 8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challenge: Option<usize>,
    /// Pipeline: the schedule (`gpipe`, `1f1b`, `interleaved`, `zb-h1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// Pipeline: the stages P.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<usize>,
    /// Pipeline: the micro-batches M.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microbatches: Option<usize>,
    /// Pipeline: the virtual stages V of the interleaved schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_stages: Option<usize>,
    /// Cluster: one of the guide's scenarios (`175b-one-node`, `70b-serve-tp4`, `1t-3d`) or
    /// `planner-64` (GPT-3 175B on the planner's 64 A100s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// MoE view: the layer to open, one of [`MOE_LAYERS`] (default `mixtral`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe: Option<String>,
    /// Walkthrough, Timeline and Playground: another TP size drawn beside the scenario's (the
    /// same layer on `beside` GPUs), e.g. `tp = 2, beside = 4`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beside: Option<usize>,
    /// Button caption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<Localized>,
    /// Refuses any other field when read (the scenario is flattened, which serde's
    /// `deny_unknown_fields` cannot check).
    #[serde(flatten, skip_serializing)]
    pub no_other_fields: NoOtherFields,
}

/// A target read from a file names its preset: GPT-2 small when it names none.
fn course_scenario<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Overrides, D::Error> {
    let mut o = Overrides::deserialize(d)?;
    o.preset.get_or_insert(Preset::Gpt2Small);
    Ok(o)
}

/// The fields a "Show me" target may have, for the unknown-field error.
const FIELDS: &str = "view, preset, hidden, heads, kv_heads, ffn, seq, batch, layers, tp, \
    sequence_parallel, algorithm, seed, model, gpu, gpus, gpus_per_node, pass, event, layer, challenge, schedule, stages, microbatches, \
    virtual_stages, cluster, moe, beside, label";

/// Reads what no other field of a [`ShowMe`] took and refuses it, naming the field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoOtherFields;

impl<'de> Deserialize<'de> for NoOtherFields {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let rest = std::collections::BTreeMap::<String, serde::de::IgnoredAny>::deserialize(d)?;
        match rest.keys().next() {
            None => Ok(NoOtherFields),
            Some(k) => Err(serde::de::Error::custom(format!(
                "unknown field `{k}`, expected one of: {FIELDS}"
            ))),
        }
    }
}

/// Why a "Show me" target cannot be shown.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ShowMeError {
    #[error("Show me target's scenario is invalid: {0}")]
    Config(#[from] ConfigError),
    #[error("Show me target's scenario has no trace: {0}")]
    Trace(#[from] tplab_engine::block::program::TraceError),
    #[error("event '{event}' is set but the {view} view does not follow trace events; use view = \"step\", \"timeline\" or \"collectives\", or remove event")]
    EventOnStaticView { view: View, event: String },
    #[error("`pass` is set without `event`; name the event to stop at (e.g. event = \"mlp.g\")")]
    PassWithoutEvent,
    #[error("no event '{event}' in the {pass} pass of the trace; events there: {known}")]
    UnknownEvent {
        event: String,
        pass: &'static str,
        known: String,
    },
    #[error("`{field}` is set but the {view} view does not use it; it belongs to {belongs}, or remove it")]
    FieldNotForView {
        field: &'static str,
        view: View,
        belongs: &'static str,
    },
    #[error("layer {layer} does not exist: the scenario has {layers} layer(s), numbered from 0; use a smaller layer or set layers")]
    LayerOutOfRange { layer: usize, layers: usize },
    #[error("Show me target's model is invalid: {0}")]
    Model(String),
    #[error("challenge {stage} does not exist: the design lab's challenges are 1 to {stages}")]
    NoChallenge { stage: usize, stages: usize },
    /// The engine's pipeline error, as text.
    #[error("Show me target's pipeline is invalid: {0}")]
    Pipeline(String),
    #[error("no cluster '{name}'; use one of: {known}")]
    UnknownCluster { name: String, known: String },
    /// The engine's hardware error, as text (it holds floating-point values).
    #[error("Show me target's hardware is invalid: {0}")]
    Hardware(String),
    #[error("no MoE layer '{name}'; use one of: {known}")]
    UnknownMoeLayer { name: String, known: String },
    #[error("`beside = {tp}` is the scenario's own TP: choose another size to compare with, or remove beside")]
    BesideItself { tp: usize },
    #[error("`beside = {tp}`: the layer cannot be split over {tp} GPUs: {error}")]
    Beside { tp: usize, error: ConfigError },
}

impl From<HardwareError> for ShowMeError {
    fn from(e: HardwareError) -> Self {
        ShowMeError::Hardware(e.to_string())
    }
}

impl ShowMe {
    /// The scenario the target opens (from a learner's scenario that [`Overrides::apply`]
    /// leaves alone: the preset's, GPT-2 small when it names none).
    pub fn config(&self) -> Config {
        self.scenario.config()
    }

    /// The planner's cluster: the target's GPU and sizes, the planner's defaults for the rest.
    pub fn planner_cluster(&self) -> Result<Cluster, HardwareError> {
        Cluster::new(
            &Catalogue::default(),
            self.gpu.as_deref().unwrap_or(PLANNER_DEFAULT_GPU),
            self.gpus.unwrap_or(PLANNER_DEFAULT_GPUS),
            self.gpus_per_node.unwrap_or(PLANNER_DEFAULT_GPUS_PER_NODE),
            PLANNER_INTER_NODE,
        )
    }

    /// The fields that only some views use: each must be on one of them.
    fn check_view_fields(&self) -> Result<(), ShowMeError> {
        let planner = self.view == View::Planner;
        let fields: [(&'static str, bool, bool, &'static str); 4] = [
            ("model", self.model.is_some(), planner, "view = \"planner\""),
            ("gpus", self.gpus.is_some(), planner, "view = \"planner\""),
            (
                "gpus_per_node",
                self.gpus_per_node.is_some(),
                planner,
                "view = \"planner\"",
            ),
            (
                "gpu",
                self.gpu.is_some(),
                planner || self.view == View::Timeline,
                "view = \"planner\" or \"timeline\"",
            ),
        ];
        for (field, set, allowed, belongs) in fields {
            if set && !allowed {
                return Err(ShowMeError::FieldNotForView {
                    field,
                    view: self.view,
                    belongs,
                });
            }
        }
        if self.challenge.is_some() && self.view != View::Design {
            return Err(ShowMeError::FieldNotForView {
                field: "challenge",
                view: self.view,
                belongs: "view = \"design\"",
            });
        }
        let pipeline = self.view == View::Pipeline;
        let pipeline_fields: [(&'static str, bool); 4] = [
            ("schedule", self.schedule.is_some()),
            ("stages", self.stages.is_some()),
            ("microbatches", self.microbatches.is_some()),
            ("virtual_stages", self.virtual_stages.is_some()),
        ];
        for (field, set) in pipeline_fields {
            if set && !pipeline {
                return Err(ShowMeError::FieldNotForView {
                    field,
                    view: self.view,
                    belongs: "view = \"pipeline\"",
                });
            }
        }
        if pipeline {
            self.pipeline_config()?;
        }
        if let Some(c) = &self.cluster {
            if self.view != View::Cluster {
                return Err(ShowMeError::FieldNotForView {
                    field: "cluster",
                    view: self.view,
                    belongs: "view = \"cluster\"",
                });
            }
            if !CLUSTERS.contains(&c.as_str()) {
                return Err(ShowMeError::UnknownCluster {
                    name: c.clone(),
                    known: CLUSTERS.join(", "),
                });
            }
        }
        if let Some(layer) = &self.moe {
            if self.view != View::Moe {
                return Err(ShowMeError::FieldNotForView {
                    field: "moe",
                    view: self.view,
                    belongs: "view = \"moe\"",
                });
            }
            if !MOE_LAYERS.contains(&layer.as_str()) {
                return Err(ShowMeError::UnknownMoeLayer {
                    name: layer.clone(),
                    known: MOE_LAYERS.join(", "),
                });
            }
        }
        if let Some(tp) = self.beside {
            if !matches!(self.view, View::Step | View::Timeline | View::Playground) {
                return Err(ShowMeError::FieldNotForView {
                    field: "beside",
                    view: self.view,
                    belongs: "view = \"step\", \"timeline\" or \"playground\"",
                });
            }
            let config = self.config();
            if tp == config.tp {
                return Err(ShowMeError::BesideItself { tp });
            }
            Config {
                tp,
                sequence_parallel: config.sequence_parallel && tp > 1,
                ..config
            }
            .validate_shapes()
            .map_err(|e| ShowMeError::Beside { tp, error: e })?;
        }
        let stages = tplab_engine::block::design::challenge::all().len();
        if let Some(n) = self.challenge.filter(|&n| n == 0 || n > stages) {
            return Err(ShowMeError::NoChallenge { stage: n, stages });
        }
        if let Some(m) = &self.model {
            m.parse::<ModelPreset>()
                .map_err(|e| ShowMeError::Model(e.to_string()))?;
        }
        if planner {
            self.planner_cluster()?;
        } else if let Some(gpu) = &self.gpu {
            Catalogue::default().gpu(gpu)?;
        }
        Ok(())
    }

    /// The pipeline schedule a Pipeline target opens: its fields over the view's defaults
    /// (1F1B, 4 stages, 8 micro-batches, 2 virtual stages for the interleaved schedule).
    /// **Errors** with the engine's rule when the schedule cannot be built.
    pub fn pipeline_config(&self) -> Result<tplab_engine::pipeline::PipelineConfig, ShowMeError> {
        use tplab_engine::pipeline::{PipelineConfig, Schedule};
        let schedule = match &self.schedule {
            Some(s) => s.parse::<Schedule>().map_err(ShowMeError::Pipeline)?,
            None => Schedule::OneFOneB,
        };
        let virtual_stages = match schedule {
            Schedule::Interleaved => self.virtual_stages.unwrap_or(2),
            _ => self.virtual_stages.unwrap_or(1),
        };
        let cfg = PipelineConfig {
            virtual_stages,
            ..PipelineConfig::new(
                schedule,
                self.stages.unwrap_or(4),
                self.microbatches.unwrap_or(8),
            )
        };
        cfg.validate()
            .map_err(|e| ShowMeError::Pipeline(e.to_string()))?;
        for (field, value, max) in [
            ("stages", cfg.stages, PIPELINE_MAX_STAGES),
            ("microbatches", cfg.microbatches, PIPELINE_MAX_MICROBATCHES),
            ("virtual_stages", cfg.virtual_stages, PIPELINE_MAX_VIRTUAL),
        ] {
            if value > max {
                return Err(ShowMeError::Pipeline(format!(
                    "{field} = {value} is more than the Pipeline view draws ({max}); use at most {max}"
                )));
            }
        }
        Ok(cfg)
    }

    /// The pass of the event (forward unless set).
    pub fn pass(&self) -> Pass {
        self.pass.unwrap_or(Pass::Forward)
    }

    /// Checks the scenario against the engine's rules and that the event exists in the trace
    /// the engine schedules for it.
    pub fn validate(&self) -> Result<(), ShowMeError> {
        let cfg = self.config();
        cfg.validate_shapes()?;
        self.check_view_fields()?;
        if let Some(layer) = self.layer.filter(|&l| l >= cfg.layers) {
            return Err(ShowMeError::LayerOutOfRange {
                layer,
                layers: cfg.layers,
            });
        }
        let Some(event) = &self.event else {
            return match self.pass {
                Some(_) => Err(ShowMeError::PassWithoutEvent),
                None => Ok(()),
            };
        };
        if !self.view.shows_events() {
            return Err(ShowMeError::EventOnStaticView {
                view: self.view,
                event: event.clone(),
            });
        }
        // The schedule of one layer has every event name; more layers only repeat them.
        let one_layer = Config { layers: 1, ..cfg };
        let trace = schedule(&one_layer)?;
        let pass = self.pass();
        let op = tplab_engine::block::Op::from_name(event);
        if trace
            .events
            .iter()
            .any(|e| e.pass == pass && Some(e.op) == op)
        {
            return Ok(());
        }
        let known: Vec<&str> = trace
            .events
            .iter()
            .filter(|e| e.pass == pass && e.ranks.first().is_none_or(|&r| r == 0))
            .map(|e| e.name())
            .collect();
        Err(ShowMeError::UnknownEvent {
            event: event.clone(),
            pass: pass.name(),
            known: known.join(", "),
        })
    }

    /// A one-line description, e.g. `step view, gpt2-small, TP=4, forward pass at mlp.g`.
    pub fn describe(&self) -> String {
        self.describe_in(Lang::En)
    }

    /// The description in `lang`; in Turkish, e.g. `Adım adım görünümü (Walkthrough),
    /// gpt2-small, TP=4, ileri geçişte mlp.g` (the app's side bar names views in English). The
    /// words are the Fluent messages `showme-*` and the app's `sm-*`.
    pub fn describe_in(&self, lang: Lang) -> String {
        let cfg = self.config();
        let mut parts = vec![t_args(
            lang,
            "showme-view",
            &[
                ("view", self.view.name().to_string()),
                ("name", self.view.name_in(lang)),
                ("title", self.view.title().to_string()),
                ("preset", self.scenario.preset().name().to_string()),
                ("tp", cfg.tp.to_string()),
            ],
        )];
        let n = |id: &str, v: usize| t_args(lang, id, &[("n", v.to_string())]);
        if cfg.layers != 1 {
            parts.push(n("sm-layers", cfg.layers));
        }
        if cfg.is_gqa() {
            parts.push(n("sm-kv", cfg.kv_heads()));
        }
        if cfg.sequence_parallel {
            parts.push(t(lang, "sm-sp"));
        }
        if let Some(a) = self.scenario.algorithm {
            parts.push(t_args(
                lang,
                "sm-algorithm",
                &[("algorithm", a.to_string())],
            ));
        }
        if let Some(m) = &self.model {
            parts.push(t_args(lang, "showme-model", &[("model", m.clone())]));
        }
        if let Some(g) = &self.gpu {
            parts.push(g.clone());
        }
        if let Some(v) = self.gpus {
            parts.push(n("sm-gpus", v));
        }
        if let Some(v) = self.gpus_per_node {
            parts.push(n("sm-per-node", v));
        }
        if let Some(sc) = &self.schedule {
            parts.push(t_args(
                lang,
                "showme-schedule",
                &[("schedule", sc.to_string())],
            ));
        }
        if let Some(v) = self.stages {
            parts.push(n("showme-stages", v));
        }
        if let Some(v) = self.microbatches {
            parts.push(n("showme-microbatches", v));
        }
        if let Some(v) = self.virtual_stages {
            parts.push(n("showme-virtual-stages", v));
        }
        if let Some(c) = &self.cluster {
            parts.push(t_args(
                lang,
                "showme-cluster",
                &[("cluster", c.to_string())],
            ));
        }
        if let Some(e) = &self.event {
            let id = match self.pass() {
                Pass::Forward => "showme-forward-at",
                Pass::Backward => "showme-backward-at",
            };
            parts.push(t_args(lang, id, &[("op", e.clone())]));
        }
        parts.join(", ")
    }
}

/// Numbers written as English words in labels ("Four H100s").
const NUMBER_WORDS: [(&str, usize); 8] = [
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("six", 6),
    ("eight", 8),
    ("sixteen", 16),
    ("sixty-four", 64),
];

/// Models a text may name: the phrase (lower case), the hidden size of its layer, and the
/// planner preset that plans it.
const NAMED_MODELS: [(&str, usize, &str); 6] = [
    ("gpt-2 small", 768, "gpt2-small"),
    ("gpt-2-small", 768, "gpt2-small"),
    ("gpt-3", 12288, "gpt3-175b"),
    ("175b", 12288, "gpt3-175b"),
    ("70b", 8192, "llama3-70b"),
    ("trillion", 25600, "megatron-1t"),
];

/// GPU names a text may mention, as the hardware catalogue spells them.
const GPU_NAMES: [&str; 5] = ["h100", "h200", "a100", "b200", "v100"];

/// The numbers right after `key` in `text`, as a list: `TP=4`, `TP = 8`, `TP 1, 2 and 4`.
fn numbers_after(text: &str, key: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices(key) {
        let rest = text[at + key.len()..].trim_start_matches([' ', '=']);
        let mut rest = rest;
        loop {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            let Ok(n) = digits.parse::<usize>() else {
                break;
            };
            out.push(n);
            rest = &rest[digits.len()..];
            let Some(r) = [", ", " and ", " or ", ", and "]
                .iter()
                .find_map(|sep| rest.strip_prefix(sep))
            else {
                break;
            };
            rest = r;
        }
    }
    out
}

/// GPU counts in `text`: a number, in digits or words, before "GPU", "GPUs", "H100s", ….
fn gpu_counts(text: &str) -> Vec<usize> {
    let words: Vec<String> = text
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == ',')
        .map(str::to_lowercase)
        .collect();
    let mut out = Vec::new();
    for pair in words.windows(2) {
        let noun = pair[1].trim_end_matches(['.', ':', ';']);
        let gpu_noun = noun == "gpu"
            || noun == "gpus"
            || GPU_NAMES
                .iter()
                .any(|g| noun == *g || noun.strip_suffix('s') == Some(*g));
        if !gpu_noun {
            continue;
        }
        let n = pair[0].replace(',', "").parse::<usize>().ok().or_else(|| {
            NUMBER_WORDS
                .iter()
                .find(|(w, _)| pair[0] == *w)
                .map(|&(_, n)| n)
        });
        out.extend(n);
    }
    out
}

impl ShowMe {
    /// Where `text` (English: a Show me label, or the question a target belongs to) and the
    /// target disagree: the TP size, the number of GPUs, the GPU, the model and the KV heads the
    /// text names must be what the button opens. Empty when they agree.
    pub fn disagreements(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let lower = text.to_lowercase();
        let cfg = self.config();
        let gpus_named: Vec<&str> = GPU_NAMES
            .iter()
            .copied()
            .filter(|g| lower.contains(g))
            .collect();
        let models: Vec<(usize, &str)> = NAMED_MODELS
            .iter()
            .filter(|(phrase, _, _)| lower.contains(phrase))
            .map(|&(_, h, preset)| (h, preset))
            .collect();
        let counts = gpu_counts(text);
        if self.view == View::Planner {
            match (&self.model, models.first()) {
                (None, _) => out.push("a planner target must name its model".to_string()),
                (Some(m), Some(_)) if !models.iter().any(|(_, p)| p == m) => out.push(format!(
                    "the text names {:?} but the planner opens {m}",
                    models.iter().map(|m| m.1).collect::<Vec<_>>()
                )),
                _ => {}
            }
            let gpus = self.gpus.unwrap_or(PLANNER_DEFAULT_GPUS);
            if !counts.is_empty() && !counts.contains(&gpus) {
                out.push(format!(
                    "the text counts {counts:?} GPUs but the planner opens {gpus}"
                ));
            }
            let gpu = self.gpu.as_deref().unwrap_or(PLANNER_DEFAULT_GPU);
            if !gpus_named.is_empty() && !gpus_named.iter().any(|g| gpu.starts_with(g)) {
                out.push(format!(
                    "the text names {gpus_named:?} but the planner opens {gpu}"
                ));
            }
            return out;
        }
        // The Cluster view opens a scenario's model (planner-64: the planner's GPT-3 175B), not
        // the learner's layer: a model the text names must be that one.
        if self.view == View::Cluster {
            let opens = match self.cluster.as_deref() {
                Some("planner-64") => Some("gpt3-175b"),
                Some(id) => tplab_engine::capacity::models::Scenario::by_id(id)
                    .ok()
                    .map(|s| s.model.name()),
                None => None,
            };
            if let (Some(m), false) = (opens, models.is_empty()) {
                if !models.iter().any(|(_, p)| *p == m) {
                    out.push(format!(
                        "the text names {:?} but the cluster opens {m}",
                        models.iter().map(|m| m.1).collect::<Vec<_>>()
                    ));
                }
            }
            return out;
        }
        // Views without a scenario of their own (training curves, serving, lists, pipeline
        // schedules, the MoE layer).
        if matches!(
            self.view,
            View::Train | View::Serve | View::Lessons | View::Quiz | View::Pipeline | View::Moe
        ) {
            return out;
        }
        let tps = numbers_after(text, "TP");
        if !tps.is_empty() && !tps.contains(&cfg.tp) {
            out.push(format!(
                "the text says TP {tps:?} but the target opens TP={}",
                cfg.tp
            ));
        }
        if let Some(b) = self.beside.filter(|b| !tps.is_empty() && !tps.contains(b)) {
            out.push(format!(
                "the target draws TP={b} beside TP={} but the text says TP {tps:?}",
                cfg.tp
            ));
        }
        let opens = |n: &usize| *n == cfg.tp || self.beside == Some(*n);
        if !counts.is_empty() && !counts.iter().any(opens) {
            out.push(format!(
                "the text counts {counts:?} GPUs but the target opens TP={}",
                cfg.tp
            ));
        }
        for &(h, preset) in &models {
            if cfg.hidden != h {
                out.push(format!(
                    "the text names {preset} (hidden {h}) but the target's layer has hidden {}",
                    cfg.hidden
                ));
            }
        }
        if let Some(&kv) = numbers_before(text, " KV head").first() {
            if cfg.kv_heads() != kv {
                out.push(format!(
                    "the text says {kv} KV heads but the target has {}",
                    cfg.kv_heads()
                ));
            }
        }
        if self.view == View::Timeline {
            match (&self.gpu, gpus_named.first()) {
                (Some(g), Some(_)) if !gpus_named.iter().any(|n| g.starts_with(n)) => out.push(
                    format!("the text names {gpus_named:?} but the timeline uses {g}"),
                ),
                (None, Some(n)) => out.push(format!(
                    "the text names {n} but the timeline shows no GPU's times (set gpu)"
                )),
                _ => {}
            }
        }
        out
    }
}

/// The numbers right before `key` in `text`: `2 KV heads`.
fn numbers_before(text: &str, key: &str) -> Vec<usize> {
    text.match_indices(key)
        .filter_map(|(at, _)| {
            let before = &text[..at];
            let start = before
                .char_indices()
                .rev()
                .take_while(|(_, c)| c.is_ascii_digit())
                .last()
                .map(|(i, _)| i)?;
            before[start..].parse().ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> ShowMe {
        toml::from_str(s).unwrap()
    }

    /// A Cluster label is checked against the scenario's model, not the learner's layer; a
    /// Pipeline label has no layer to disagree with.
    #[test]
    fn cluster_and_pipeline_labels_are_checked_against_what_they_open() {
        let t = parse(
            r#"view = "cluster"
cluster = "1t-3d""#,
        );
        assert!(t.disagreements("A trillion parameters").is_empty());
        let d = t.disagreements("GPT-3 on 3072 GPUs");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].contains("the cluster opens megatron-1t"), "{d:?}");
        let planner = parse(
            r#"view = "cluster"
cluster = "planner-64""#,
        );
        assert!(planner.disagreements("GPT-3 175B on 64 A100s").is_empty());
        assert!(!planner.disagreements("A 70B model").is_empty());
        let p = parse(
            r#"view = "pipeline"
schedule = "1f1b"
stages = 4
microbatches = 8"#,
        );
        assert!(p.disagreements("1F1B with 4 stages").is_empty());
    }

    /// Pipeline and Cluster targets: their fields parse, belong to their view, and a schedule
    /// the engine refuses (or the view cannot draw) is refused with the engine's rule.
    #[test]
    fn pipeline_and_cluster_targets() {
        let t = parse(
            r#"view = "pipeline"
schedule = "zb-h1"
stages = 4
microbatches = 8"#,
        );
        assert_eq!(t.validate(), Ok(()));
        assert!(t
            .describe()
            .contains("zb-h1 schedule, 4 stages, 8 micro-batches"));
        let cfg = t.pipeline_config().unwrap();
        assert_eq!(
            (cfg.stages, cfg.microbatches, cfg.virtual_stages),
            (4, 8, 1)
        );
        let interleaved = parse(
            r#"view = "pipeline"
schedule = "interleaved"
microbatches = 6"#,
        );
        let e = interleaved.validate().unwrap_err().to_string();
        assert!(e.contains("use 4 or 8 micro-batches"), "{e}");
        let wide = parse(
            r#"view = "pipeline"
stages = 9"#,
        );
        let e = wide.validate().unwrap_err().to_string();
        assert!(e.contains("use at most 8"), "{e}");
        let bad = parse(
            r#"view = "pipeline"
schedule = "pipedream-2bw""#,
        );
        assert!(bad.validate().unwrap_err().to_string().contains("zb-h1"));
        let misplaced = parse(
            r#"view = "planner"
microbatches = 8"#,
        );
        assert!(matches!(
            misplaced.validate(),
            Err(ShowMeError::FieldNotForView {
                field: "microbatches",
                ..
            })
        ));
        for c in CLUSTERS {
            let t = parse(&format!("view = \"cluster\"\ncluster = \"{c}\""));
            assert_eq!(t.validate(), Ok(()), "{c}");
        }
        let unknown = parse(
            r#"view = "cluster"
cluster = "2t-4d""#,
        );
        let e = unknown.validate().unwrap_err().to_string();
        assert!(e.contains("1t-3d"), "{e}");
        let elsewhere = parse(
            r#"view = "pipeline"
cluster = "1t-3d""#,
        );
        assert!(elsewhere.validate().is_err());
    }

    #[test]
    fn a_moe_target_names_one_of_the_view_s_layers() {
        assert_eq!(parse("view = \"moe\"\nmoe = \"switch\"").validate(), Ok(()));
        assert!(matches!(
            parse("view = \"moe\"\nmoe = \"gshard\"").validate(),
            Err(ShowMeError::UnknownMoeLayer { .. })
        ));
        assert!(matches!(
            parse("view = \"pipeline\"\nmoe = \"switch\"").validate(),
            Err(ShowMeError::FieldNotForView { field: "moe", .. })
        ));
    }

    #[test]
    fn beside_is_another_tp_size_the_layer_splits_over_on_a_view_that_draws_two() {
        let ok = parse("view = \"timeline\"\ntp = 2\nbeside = 4");
        assert_eq!(ok.validate(), Ok(()));
        assert!(ok.disagreements("TP=2 and TP=4 side by side").is_empty());
        assert!(!ok.disagreements("TP=2 and TP=8 side by side").is_empty());
        let itself = parse("view = \"step\"\ntp = 4\nbeside = 4");
        assert_eq!(itself.validate(), Err(ShowMeError::BesideItself { tp: 4 }));
        // GPT-2 small's 12 heads do not split over 8 GPUs.
        let heads = parse("view = \"playground\"\ntp = 4\nbeside = 8");
        assert!(matches!(
            heads.validate(),
            Err(ShowMeError::Beside { tp: 8, .. })
        ));
        let wrong_view = parse("view = \"memory\"\ntp = 4\nbeside = 2");
        assert!(matches!(
            wrong_view.validate(),
            Err(ShowMeError::FieldNotForView {
                field: "beside",
                ..
            })
        ));
    }

    #[test]
    fn valid_target() {
        let t = parse(
            r#"view = "step"
tp = 4
preset = "gpt2-small"
pass = "forward"
event = "mlp.g""#,
        );
        assert_eq!(t.validate(), Ok(()));
        assert_eq!(
            t.describe(),
            "step view, gpt2-small, TP=4, forward pass at mlp.g"
        );
        let b = parse(
            r#"view = "step"
pass = "backward"
event = "attn.f.bwd""#,
        );
        assert_eq!(b.validate(), Ok(()));
    }

    #[test]
    fn invalid_tp_uses_engine_rule() {
        let t = parse("view = \"playground\"\ntp = 5");
        let err = t.validate().unwrap_err();
        assert!(matches!(
            err,
            ShowMeError::Config(ConfigError::HeadsNotDivisible { tp: 5, .. })
        ));
        assert!(
            err.to_string()
                .contains("valid TP sizes: 1, 2, 3, 4, 6, 12"),
            "{err}"
        );
    }

    #[test]
    fn unknown_event_or_wrong_pass() {
        let t = parse("view = \"step\"\nevent = \"mlp.fc3\"");
        assert!(matches!(
            t.validate(),
            Err(ShowMeError::UnknownEvent { .. })
        ));
        // mlp.f.bwd exists only in the backward pass.
        let t = parse("view = \"step\"\nevent = \"mlp.f.bwd\"");
        assert!(matches!(
            t.validate(),
            Err(ShowMeError::UnknownEvent { .. })
        ));
        let t = parse("view = \"memory\"\nevent = \"mlp.g\"");
        assert!(matches!(
            t.validate(),
            Err(ShowMeError::EventOnStaticView { .. })
        ));
    }

    #[test]
    fn described_in_turkish_without_english_words() {
        let t = parse("view = \"step\"\ntp = 4\nsequence_parallel = true\npass = \"backward\"\nevent = \"mlp.f.bwd\"");
        let tr = t.describe_in(Lang::Tr);
        assert_eq!(
            tr,
            "Adım adım görünümü (Walkthrough), gpt2-small, TP=4, dizi paralelliği, geri geçişte mlp.f.bwd"
        );
        assert_eq!(
            t.describe(),
            "step view, gpt2-small, TP=4, sequence parallel, backward pass at mlp.f.bwd"
        );
        for v in View::ALL {
            let d = ShowMe {
                view: v,
                ..ShowMe::default()
            }
            .describe_in(Lang::Tr);
            // The side-bar title in parentheses is the app's English name; the rest is Turkish.
            let without_title = d.replace(v.title(), "");
            assert!(
                crate::english::english_in_prose(&without_title).is_empty(),
                "{d}"
            );
        }
    }

    #[test]
    fn sequence_parallel_and_planner_fields() {
        let t = parse("view = \"step\"\nsequence_parallel = true\npass = \"backward\"\nevent = \"mlp.f.bwd.gather\"");
        assert!(t.config().sequence_parallel);
        assert_eq!(t.validate(), Ok(()));
        assert!(
            t.describe().contains("sequence parallel"),
            "{}",
            t.describe()
        );
        // The extra backward gather exists only with sequence parallelism.
        let plain = parse("view = \"step\"\npass = \"backward\"\nevent = \"mlp.f.bwd.gather\"");
        assert!(matches!(
            plain.validate(),
            Err(ShowMeError::UnknownEvent { .. })
        ));
        let p = parse("view = \"planner\"\nmodel = \"megatron-1t\"\ngpu = \"a100\"\ngpus = 3072\ngpus_per_node = 8");
        assert_eq!(p.validate(), Ok(()));
        let tl = parse("view = \"timeline\"\ngpu = \"h100\"");
        assert_eq!(tl.validate(), Ok(()));
    }

    #[test]
    fn planner_fields_are_checked() {
        let wrong_view = parse("view = \"memory\"\nmodel = \"gpt3-175b\"");
        let err = wrong_view.validate().unwrap_err();
        assert!(
            matches!(err, ShowMeError::FieldNotForView { field: "model", .. }),
            "{err}"
        );
        assert!(err.to_string().contains("view = \"planner\""), "{err}");
        let gpu_on_step = parse("view = \"step\"\ngpu = \"h100\"");
        assert!(matches!(
            gpu_on_step.validate(),
            Err(ShowMeError::FieldNotForView { field: "gpu", .. })
        ));
        let bad_model = parse("view = \"planner\"\nmodel = \"gpt5\"");
        let err = bad_model.validate().unwrap_err();
        assert!(matches!(err, ShowMeError::Model(_)), "{err}");
        assert!(
            err.to_string().contains("gpt3-175b"),
            "names the known presets: {err}"
        );
        let bad_gpu = parse("view = \"timeline\"\ngpu = \"z80\"");
        assert!(matches!(bad_gpu.validate(), Err(ShowMeError::Hardware(_))));
        let partial_node = parse("view = \"planner\"\ngpus = 12\ngpus_per_node = 8");
        let err = partial_node.validate().unwrap_err();
        assert!(err.to_string().contains("multiple of 8"), "{err}");
    }

    #[test]
    fn unknown_field_is_a_parse_error_naming_it() {
        let err = toml::from_str::<ShowMe>("view = \"step\"\nseq_parallel = true").unwrap_err();
        assert!(
            err.to_string().contains("unknown field `seq_parallel`"),
            "{err}"
        );
    }

    #[test]
    fn unknown_view_is_a_parse_error() {
        assert!(toml::from_str::<ShowMe>("view = \"nope\"").is_err());
    }
}
