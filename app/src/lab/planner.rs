//! The Planner's inputs and what it answers: a model on a cluster, the engine's ranked layouts.
//! The Planner view and the Cluster view both read them.

use serde::{Deserialize, Serialize};
use tplab_engine::capacity::cost::TrainSetup;
use tplab_engine::capacity::hardware::{Catalogue, Cluster};
use tplab_engine::capacity::models::{ModelPreset, ModelSpec};
use tplab_engine::capacity::planner::{self, PlanRequest, TpPoint};
use tplab_engine::capacity::stack::{self, Stack, WhatIf};

/// A model read from a Hugging Face `config.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigModel {
    /// The file's name, as the learner picked it.
    pub file: String,
    pub spec: ModelSpec,
}

impl ConfigModel {
    /// `config.json (llama)`: what the model box shows.
    pub fn label(&self) -> String {
        format!("{} ({})", self.file, self.spec.name)
    }
}

/// Planner inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlannerInputs {
    pub model: ModelPreset,
    /// A model loaded from a `config.json`; it replaces the preset until one is chosen again.
    pub custom: Option<ConfigModel>,
    pub gpu: String,
    pub gpus: usize,
    pub gpus_per_node: usize,
    pub inter_node: String,
    pub seq: usize,
    pub global_batch: usize,
    /// Plan under today's training stack (FlashAttention, fused kernels, overlap, distributed
    /// optimizer, uneven stages) instead of the 2021 Megatron-LM stack the lessons quote.
    pub todays_stack: bool,
}

impl Default for PlannerInputs {
    fn default() -> Self {
        Self {
            model: ModelPreset::Gpt3_175b,
            custom: None,
            gpu: "a100".into(),
            gpus: 64,
            gpus_per_node: 8,
            inter_node: "ib-hdr-200".into(),
            seq: 2048,
            global_batch: 512,
            todays_stack: false,
        }
    }
}

impl PlannerInputs {
    /// The model planned for: the loaded `config.json`'s, else the preset's.
    pub fn model_spec(&self) -> ModelSpec {
        self.custom
            .as_ref()
            .map_or_else(|| self.model.spec(), |c| c.spec.clone())
    }
}

/// What the planner answered.
pub struct PlannerResult {
    pub plan: planner::Plan,
    pub by_tp: Vec<TpPoint>,
    pub gpus_per_node: usize,
    /// Under today's stack: the winner's what-if table (each switch flipped).
    pub what_if: Vec<WhatIf>,
}

/// Builds the request and runs the planner (on a worker thread).
pub fn run_planner(inputs: &PlannerInputs) -> Result<PlannerResult, String> {
    let catalogue = Catalogue::default();
    let cluster = Cluster::new(
        &catalogue,
        &inputs.gpu,
        inputs.gpus,
        inputs.gpus_per_node,
        &inputs.inter_node,
    )
    .map_err(|e| e.to_string())?;
    let req = PlanRequest::new(
        inputs.model_spec(),
        TrainSetup::new(inputs.seq, inputs.global_batch),
        cluster,
    );
    if inputs.todays_stack {
        let st = Stack::current();
        let sp = planner::plan_with(&req, &st);
        let what_if = sp
            .ranked
            .first()
            .and_then(|w| {
                let s = planner::stack_for(&st, &req.model, &w.it.layout);
                stack::what_if(&req.model, &req.setup, &req.cluster, &w.it.layout, &s).ok()
            })
            .unwrap_or_default();
        let by_tp = planner::valid_tp_sizes(&req.model, &req.cluster)
            .into_iter()
            .map(|tp| {
                let best = sp
                    .ranked
                    .iter()
                    .find(|r| r.it.layout.tp == tp)
                    .map(|r| r.it.clone());
                TpPoint {
                    tp,
                    spans_nodes: req.cluster.group_spans_nodes(1, tp),
                    fits: best.is_some(),
                    best,
                }
            })
            .collect();
        return Ok(PlannerResult {
            plan: planner::Plan {
                ranked: sp.ranked.into_iter().map(|r| r.it).collect(),
                dropped: sp.dropped,
                explanations: sp.explanations,
                findings: sp.findings,
            },
            by_tp,
            gpus_per_node: inputs.gpus_per_node,
            what_if,
        });
    }
    let plan = planner::plan(&req);
    Ok(PlannerResult {
        plan,
        by_tp: planner::throughput_vs_tp(&req),
        gpus_per_node: inputs.gpus_per_node,
        what_if: Vec::new(),
    })
}
