//! Memory per GPU for a parallel layout: weights, gradients, optimizer states, activations and
//! the inference KV cache.
//!
//! - Parameters per GPU: the worst pipeline stage's share of [`ModelSpec::params`], with the
//!   matrices split `1/tp` (Megatron's column/row split; the vocabulary split for the
//!   embedding) and norms and row-parallel biases replicated.
//! - Weights, gradients, optimizer: mixed-precision Adam, 2 + 2 + 12 bytes per parameter
//!   (Rajbhandari et al. 2020, "ZeRO", §3.1: fp16 weights and gradients, fp32 master weights,
//!   momentum and variance), with ZeRO stage 1/2/3 sharding the optimizer / + gradients /
//!   + weights over the data-parallel group.
//! - Activations: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
//!   Transformer Models", §4: per layer `sbh(34 + 5as/h)` bytes without parallelism,
//!   `sbh(10 + 24/t + 5as/(ht))` with TP, `sbh/t·(34 + 5as/h)` with TP and sequence
//!   parallelism, `5as²b` dropped by selective recomputation, `2sbh` (`/t` with SP) per layer
//!   with full recomputation. Built here term by term from the tensors each op saves, so the
//!   closed forms are a test, not the implementation. The first pipeline stage holds `p`
//!   micro-batches in flight under 1F1B (§4.2.3).
//! - Expert parallelism (Mixture-of-Experts models, `Layout::ep`): Megatron-Core carves the
//!   expert-parallel group out of the data-parallel ranks (`dp % ep == 0`, `experts % ep == 0`;
//!   Megatron-Core MoE README, `--expert-model-parallel-size`): each GPU holds `experts/ep`
//!   whole experts, each split by TP as the dense MLP is (expert-tensor parallelism equal to TP,
//!   Megatron-Core's default `--expert-tensor-parallel-size`), while attention, norms and the
//!   router stay replicated over the EP group. The expert weights' data-parallel group is the
//!   `dp/ep` ranks that hold the same experts, so ZeRO shards their gradients and optimizer
//!   states over `dp/ep` instead of `dp`. Activations are unchanged under balanced routing:
//!   each GPU's experts process, on average, the `k` expert passes of as many tokens as it
//!   dispatched.
//! - KV cache: `2 · layers · kv_heads · head_dim` elements per token; with TP each GPU holds
//!   `kv_heads / tp` heads, and when `tp > kv_heads` one replicated head (vLLM's rule).

use crate::capacity::models::ModelSpec;
use crate::config::Config;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Fraction of a GPU's memory a run may plan to use; the rest goes to the CUDA context, NCCL
/// buffers, workspace and fragmentation. An assumption (docs/calibration.md).
pub const USABLE_MEMORY_FRACTION: f64 = 0.9;

/// Bytes per activation element (fp16/bf16 training, as in Korthikanti et al.).
pub const ACTIVATION_BYTES: u64 = 2;

/// Activation recomputation strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Recompute {
    /// Store every activation the backward pass needs.
    #[default]
    None,
    /// Recompute only the attention core (`QKᵀ`, softmax, dropout, `·V`): drops `5as²b`.
    Selective,
    /// Store only each layer's input; recompute the whole forward pass of the layer.
    Full,
}

impl Recompute {
    pub const ALL: [Recompute; 3] = [Recompute::None, Recompute::Selective, Recompute::Full];

    pub fn name(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
        }
    }
}

impl std::str::FromStr for Recompute {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Recompute::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| {
                format!("unknown recompute '{s}'; expected one of: none, selective, full")
            })
    }
}

/// A 3D-parallel layout and its per-GPU choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Layout {
    /// Tensor-parallel size `t`.
    pub tp: usize,
    /// Pipeline-parallel size `p`.
    pub pp: usize,
    /// Data-parallel size `d`.
    pub dp: usize,
    /// Micro-batch size `b` (sequences).
    pub micro_batch: usize,
    /// Sequence parallelism (Korthikanti et al. 2022) in the TP group.
    pub sp: bool,
    pub recompute: Recompute,
    /// ZeRO stage 0–3 over the data-parallel group.
    pub zero: u8,
    /// Expert-parallel size (MoE): experts split over `ep` of the data-parallel ranks
    /// (`dp % ep == 0`); 1 for dense models and layouts saved before EP existed.
    #[serde(default = "one")]
    pub ep: usize,
    /// Expert tensor-parallel size: each expert's matrices split `1/etp`. 0 (the default, and
    /// layouts saved before it existed) means TP's. Another value folds the experts' grid
    /// apart from attention's (Megatron-Core's MoE parallel folding,
    /// `--expert-tensor-parallel-size`): `ep · etp` must divide `tp · dp`, and EP may then
    /// exceed DP (TP 2, DP 16, EP 32, ETP 1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub etp: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn one() -> usize {
    1
}

impl Layout {
    /// `TP × PP × DP` with the other choices at their plainest: micro-batch 1, no sequence
    /// parallelism, no recomputation, no ZeRO. Set others on it:
    /// `Layout { sp: true, ..Layout::new(8, 8, 1) }`.
    pub fn new(tp: usize, pp: usize, dp: usize) -> Self {
        Layout {
            tp,
            pp,
            dp,
            micro_batch: 1,
            sp: false,
            recompute: Recompute::None,
            zero: 0,
            ep: 1,
            etp: 0,
        }
    }

    /// The experts' tensor-parallel size: [`Layout::etp`], or TP's when it is 0.
    pub fn expert_tp(&self) -> usize {
        if self.etp == 0 {
            self.tp.max(1)
        } else {
            self.etp
        }
    }

    /// Ranks that hold the same experts (the experts' data-parallel group): `tp·dp/(ep·etp)`,
    /// `dp/ep` when the experts follow TP.
    pub fn expert_dp(&self) -> usize {
        (self.tp.saturating_mul(self.dp) / self.ep.max(1).saturating_mul(self.expert_tp())).max(1)
    }

    /// GPUs the layout uses, `t·p·d` (saturating: a product beyond `usize` matches no cluster).
    pub fn gpus(&self) -> usize {
        self.tp.saturating_mul(self.pp).saturating_mul(self.dp)
    }

    /// `TP=8 PP=8 DP=16 b=1 SP sel ZeRO-1` (`DP=16 EP=8` with expert parallelism).
    pub fn label(&self) -> String {
        format!(
            "TP={} PP={} DP={}{} b={}{}{}{}",
            self.tp,
            self.pp,
            self.dp,
            if self.ep > 1 || self.etp > 0 {
                format!(
                    " EP={}{}",
                    self.ep,
                    if self.etp > 0 && self.etp != self.tp {
                        format!(" ETP={}", self.etp)
                    } else {
                        String::new()
                    }
                )
            } else {
                String::new()
            },
            self.micro_batch,
            if self.sp { " SP" } else { "" },
            match self.recompute {
                Recompute::None => "",
                Recompute::Selective => " sel-recompute",
                Recompute::Full => " full-recompute",
            },
            if self.zero > 0 {
                format!(" ZeRO-{}", self.zero)
            } else {
                String::new()
            }
        )
    }
}

/// Why a layout cannot be evaluated for a model (shape rules, not memory).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum LayoutError {
    #[error("{field} must be at least 1 (got 0)")]
    Zero { field: &'static str },
    #[error(
        "TP={tp} does not divide the {heads} attention heads: each GPU must hold whole heads; \
         valid TP sizes: {valid:?}"
    )]
    HeadsNotDivisible {
        tp: usize,
        heads: usize,
        valid: Vec<usize>,
    },
    #[error(
        "TP={tp} does not divide the {kv_heads} KV heads: Megatron splits KV groups evenly for \
         training (vLLM replicates them when serving); valid TP sizes: {valid:?}"
    )]
    KvHeadsNotDivisible {
        tp: usize,
        kv_heads: usize,
        valid: Vec<usize>,
    },
    #[error("TP={tp} does not divide the FFN width {ffn}")]
    FfnNotDivisible { tp: usize, ffn: usize },
    #[error("PP={pp} does not divide the {layers} layers; use a divisor of {layers}")]
    LayersNotDivisible { pp: usize, layers: usize },
    #[error(
        "global batch {global_batch} is not a multiple of micro-batch {micro_batch} × DP {dp}; \
         choose them so that it is"
    )]
    BatchNotDivisible {
        global_batch: usize,
        micro_batch: usize,
        dp: usize,
    },
    #[error(
        "layout TP={tp} × PP={pp} × DP={dp} = {needed} GPUs does not match the cluster's {gpus} GPUs"
    )]
    GpuCountMismatch {
        tp: usize,
        pp: usize,
        dp: usize,
        needed: usize,
        gpus: usize,
    },
    /// As [`LayoutError::GpuCountMismatch`] with context parallelism: the layout's DP as given,
    /// CP beside it.
    #[error(
        "layout TP={tp} × PP={pp} × DP={dp} × CP={cp} = {needed} GPUs does not match the \
         cluster's {gpus} GPUs; DP is the data-parallel size alone (CP's {cp} GPUs per \
         sequence multiply it): {fix}"
    )]
    GpuCountMismatchCp {
        tp: usize,
        pp: usize,
        dp: usize,
        cp: usize,
        needed: usize,
        gpus: usize,
        fix: String,
    },
    #[error(
        "TP={tp} is larger than the cluster's {gpus} GPUs; choose TP ≤ {gpus} or a larger \
         cluster"
    )]
    TpLargerThanCluster { tp: usize, gpus: usize },
    #[error("ZeRO stage must be 0, 1, 2 or 3 (got {zero})")]
    BadZero { zero: u8 },
    #[error(
        "global batch {global_batch} × seq {seq} = {tokens} tokens is outside the range the \
         memory model counts, at most {max} (2^40) tokens at once; give a smaller batch or \
         sequence"
    )]
    TooManyTokens {
        global_batch: usize,
        seq: usize,
        tokens: u128,
        max: u128,
    },
    #[error("{field} {value} is over the limit of {max}; use a {field} of at most {max}")]
    OverLimit {
        field: &'static str,
        value: usize,
        max: usize,
    },
    #[error(
        "interleaving with {v} model chunks per GPU needs pipeline stages of at least {v} \
         layers (PP={pp} gives stages of {min_stage} or more); use fewer virtual stages or a \
         smaller PP"
    )]
    BadVirtualStages {
        v: usize,
        pp: usize,
        min_stage: usize,
    },
    /// FP8 GEMMs asked of a GPU without FP8 tensor cores.
    #[error(transparent)]
    NoFp8(#[from] crate::capacity::hardware::NoFp8),
    #[error(
        "context parallelism over {cp} GPUs needs a sequence length divisible by 2·cp = {} \
         (each GPU takes two chunks for causal load balance); got {seq}",
        2 * cp
    )]
    BadContextParallel { cp: usize, seq: usize },
    #[error(
        "TP={tp} does not fit the {kv_heads} KV heads: serving needs either TP to divide the KV \
         heads evenly (whole KV heads on each GPU, Megatron-LM) or the KV heads to divide TP \
         evenly (each KV head copied onto several GPUs, vLLM); valid TP sizes: {valid:?}"
    )]
    KvHeadsNotServable {
        tp: usize,
        kv_heads: usize,
        valid: Vec<usize>,
    },
    #[error(
        "EP={ep} does not divide the {experts} experts: each expert-parallel rank holds the same \
         number of whole experts (a dense model has 1 expert and takes EP=1 only); valid EP \
         sizes: {valid:?}"
    )]
    ExpertsNotDivisibleByEp {
        ep: usize,
        experts: usize,
        valid: Vec<usize>,
    },
    #[error(
        "EP={ep} does not divide DP={dp}: the expert-parallel group is made of data-parallel \
         ranks (Megatron-Core), so DP must be a multiple of EP; choose EP among the divisors of \
         {dp}"
    )]
    EpNotDividingDp { ep: usize, dp: usize },
    #[error(
        "EP={ep} × ETP={etp} does not divide TP={tp} × DP={dp}: with the experts folded apart \
         from attention (Megatron-Core's MoE parallel folding), the experts' grid EP × ETP × \
         expert-DP must cover attention's TP × DP"
    )]
    ExpertGridNotDividing {
        ep: usize,
        etp: usize,
        tp: usize,
        dp: usize,
    },
}

use crate::config::divisors;

/// `u128` arithmetic result as `u64`, saturating: a byte count beyond 16 EiB fits no GPU, so
/// saturation can only turn "does not fit" into "does not fit", never into a wrong "fits".
fn sat(x: u128) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// TP sizes that satisfy training's shape rules for `model` (divide the heads, the KV heads
/// and the FFN width), from the divisors of their common divisor: `O(√heads)`.
pub fn training_tp_sizes(model: &ModelSpec) -> Vec<usize> {
    divisors(gcd(gcd(model.heads, model.kv_heads), model.ffn))
}

/// TP sizes a model can be served at: training's heads and FFN rules, and for the KV heads
/// either Megatron-LM's split (`kv % tp == 0`) or vLLM's replication (`tp % kv == 0`).
pub fn serving_tp_sizes(model: &ModelSpec) -> Vec<usize> {
    divisors(gcd(model.heads, model.ffn))
        .into_iter()
        .filter(|&t| {
            model.kv_heads > 0
                && (model.kv_heads.is_multiple_of(t) || t.is_multiple_of(model.kv_heads))
        })
        .collect()
}

/// Checks a serving TP size for `model` on a cluster of `gpus` GPUs with the same rules as
/// training ([`check_layout`]: `1 ≤ tp ≤ gpus`, whole heads and FFN columns per GPU), except
/// that KV heads may also be replicated (`tp % kv_heads == 0`, vLLM), which the serving memory
/// model counts ([`kv_cache_bytes_per_token_per_gpu`]).
pub fn check_serving_tp(model: &ModelSpec, tp: usize, gpus: usize) -> Result<(), LayoutError> {
    let fitting = |v: Vec<usize>| v.into_iter().filter(|&t| t <= gpus).collect();
    if tp == 0 {
        return Err(LayoutError::Zero { field: "tp" });
    }
    if tp > gpus {
        return Err(LayoutError::TpLargerThanCluster { tp, gpus });
    }
    if !model.heads.is_multiple_of(tp) {
        return Err(LayoutError::HeadsNotDivisible {
            tp,
            heads: model.heads,
            valid: fitting(serving_tp_sizes(model)),
        });
    }
    let kv = model.kv_heads;
    if kv == 0 || !(kv.is_multiple_of(tp) || tp.is_multiple_of(kv)) {
        return Err(LayoutError::KvHeadsNotServable {
            tp,
            kv_heads: kv,
            valid: fitting(serving_tp_sizes(model)),
        });
    }
    if !model.ffn.is_multiple_of(tp) {
        return Err(LayoutError::FfnNotDivisible { tp, ffn: model.ffn });
    }
    Ok(())
}

/// Checks the layout's shape rules for `model` (not the cluster size or memory).
pub fn check_layout(model: &ModelSpec, layout: &Layout) -> Result<(), LayoutError> {
    for (field, v) in [
        ("tp", layout.tp),
        ("pp", layout.pp),
        ("dp", layout.dp),
        ("micro_batch", layout.micro_batch),
        ("ep", layout.ep),
    ] {
        if v == 0 {
            return Err(LayoutError::Zero { field });
        }
    }
    if !model.experts.max(1).is_multiple_of(layout.ep) {
        return Err(LayoutError::ExpertsNotDivisibleByEp {
            ep: layout.ep,
            experts: model.experts,
            valid: divisors(model.experts.max(1)),
        });
    }
    let etp = layout.expert_tp();
    if etp == layout.tp {
        if !layout.dp.is_multiple_of(layout.ep) {
            return Err(LayoutError::EpNotDividingDp {
                ep: layout.ep,
                dp: layout.dp,
            });
        }
    } else {
        // Folded: the experts' grid etp × ep × edp covers attention's tp × dp.
        let grid = layout.tp.saturating_mul(layout.dp);
        if !grid.is_multiple_of(layout.ep.saturating_mul(etp)) {
            return Err(LayoutError::ExpertGridNotDividing {
                ep: layout.ep,
                etp,
                tp: layout.tp,
                dp: layout.dp,
            });
        }
        if !model.ffn.is_multiple_of(etp) {
            return Err(LayoutError::FfnNotDivisible {
                tp: etp,
                ffn: model.ffn,
            });
        }
    }
    if layout.zero > 3 {
        return Err(LayoutError::BadZero { zero: layout.zero });
    }
    let t = layout.tp;
    if !model.heads.is_multiple_of(t) {
        return Err(LayoutError::HeadsNotDivisible {
            tp: t,
            heads: model.heads,
            valid: training_tp_sizes(model),
        });
    }
    if !model.kv_heads.is_multiple_of(t) {
        return Err(LayoutError::KvHeadsNotDivisible {
            tp: t,
            kv_heads: model.kv_heads,
            valid: divisors(model.kv_heads),
        });
    }
    if !model.ffn.is_multiple_of(t) {
        return Err(LayoutError::FfnNotDivisible {
            tp: t,
            ffn: model.ffn,
        });
    }
    if !model.layers.is_multiple_of(layout.pp) {
        return Err(LayoutError::LayersNotDivisible {
            pp: layout.pp,
            layers: model.layers,
        });
    }
    Ok(())
}

/// Memory per GPU by term, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct MemoryBreakdown {
    /// Parameters held by the busiest GPU (before ZeRO-3 sharding).
    pub params_per_gpu: u64,
    pub weights_bytes: u64,
    pub gradients_bytes: u64,
    pub optimizer_bytes: u64,
    pub activations_bytes: u64,
    /// Inference only (0 for training).
    pub kv_cache_bytes: u64,
    pub total_bytes: u64,
}

impl MemoryBreakdown {
    fn with_total(mut self) -> Self {
        self.total_bytes = self
            .terms()
            .iter()
            .fold(0u64, |acc, (_, b)| acc.saturating_add(*b));
        self
    }

    /// `(term, bytes)` rows for tables and stacked bars.
    pub fn terms(&self) -> [(&'static str, u64); 5] {
        [
            ("weights", self.weights_bytes),
            ("gradients", self.gradients_bytes),
            ("optimizer", self.optimizer_bytes),
            ("activations", self.activations_bytes),
            ("kv_cache", self.kv_cache_bytes),
        ]
    }
}

/// Parameters of one transformer block held by one TP rank: matrices and column-parallel
/// biases split `1/t`; norms, row-parallel biases and the MoE router replicated.
pub fn layer_params_per_rank(model: &ModelSpec, tp: usize) -> u64 {
    layer_params_per_rank_ep(model, tp, 1)
}

/// One block's expert-MLP parameters on one GPU of a TP × EP layout: `experts/ep` experts,
/// each split `1/tp` (0 for a dense model, whose MLP is not an expert). For a model with dense
/// layers among its MoE ones, the mean over the layers (`moe_layers/layers` of it).
pub fn expert_params_per_rank(model: &ModelSpec, tp: usize, ep: usize) -> u64 {
    if model.experts <= 1 {
        return 0;
    }
    let (t, e) = (tp.max(1) as u128, ep.max(1) as u128);
    let (h, f) = (model.hidden as u128, model.ffn as u128);
    let mats = if model.gated_mlp { 3 } else { 2 };
    let mlp_w = mats * h * f / t;
    let mlp_b = if model.biases {
        (mats - 1) * f / t + h
    } else {
        0
    };
    let per_moe_layer = (model.experts as u128 / e) * (mlp_w + mlp_b);
    if model.dense_layers == 0 {
        return sat(per_moe_layer);
    }
    sat(per_moe_layer * model.moe_layers() as u128 / model.layers.max(1) as u128)
}

/// [`layer_params_per_rank`] with the experts split over `ep` ranks as well (attention, norms
/// and the router replicated over them; shared experts and the MLPs of dense layers split by
/// TP like a dense model's). For a model whose layers differ, the mean over the layers.
pub fn layer_params_per_rank_ep(model: &ModelSpec, tp: usize, ep: usize) -> u64 {
    layer_params_per_rank_folded(model, tp, ep, tp)
}

/// [`layer_params_per_rank_ep`] with the experts split `1/etp` instead of `1/tp` (Megatron-Core's
/// MoE parallel folding, [`Layout::etp`]).
pub fn layer_params_per_rank_folded(model: &ModelSpec, tp: usize, ep: usize, etp: usize) -> u64 {
    let t = tp.max(1) as u128;
    let (h, kv, f) = (
        model.hidden as u128,
        model.kv_dim() as u128,
        model.ffn as u128,
    );
    let q = model.q_dim() as u128;
    let mats = if model.gated_mlp { 3 } else { 2 };
    let attn_w = u128::from(model.attention_weight_params()) / t;
    let attn_b = if model.biases && model.mla.is_none() {
        (q + 2 * kv) / t + h
    } else {
        0
    };
    let mlp_w = mats * h * f / t;
    let mlp_b = if model.biases {
        (mats - 1) * f / t + h
    } else {
        0
    };
    let (moe_l, l) = (model.moe_layers() as u128, model.layers.max(1) as u128);
    // Router and shared experts exist in the MoE layers only; the dense layers' MLP in theirs.
    let per_moe = |x: u128| {
        if model.dense_layers == 0 {
            x
        } else {
            x * moe_l / l
        }
    };
    let router = if model.experts > 1 {
        per_moe(h * model.experts as u128)
    } else {
        0
    };
    let shared = per_moe(mats * h * model.shared_ffn as u128 / t);
    let dense = if model.dense_layers > 0 {
        mats * h * model.dense_ffn as u128 / t * model.dense_layers as u128 / l
    } else {
        0
    };
    let mlp = if model.experts > 1 {
        u128::from(expert_params_per_rank(model, etp, ep))
    } else {
        mlp_w + mlp_b
    };
    sat(attn_w + attn_b + mlp + shared + dense + router + u128::from(model.norm_params_per_layer()))
}

/// Parameters on the busiest pipeline stage's GPU: `l/p` blocks, plus the vocabulary-parallel
/// embedding and learned positions on the first stage, the output projection (a second copy
/// when tied and `p > 1`, as Megatron keeps) and the final norm on the last.
pub fn params_per_gpu(model: &ModelSpec, tp: usize, pp: usize) -> u64 {
    params_per_gpu_ep(model, tp, pp, 1)
}

/// [`params_per_gpu`] with the experts split over `ep` ranks.
pub fn params_per_gpu_ep(model: &ModelSpec, tp: usize, pp: usize, ep: usize) -> u64 {
    params_per_gpu_folded(model, tp, pp, ep, tp)
}

/// [`params_per_gpu_ep`] with the experts split `1/etp` ([`Layout::etp`]).
pub fn params_per_gpu_folded(
    model: &ModelSpec,
    tp: usize,
    pp: usize,
    ep: usize,
    etp: usize,
) -> u64 {
    let (t, p) = (tp.max(1) as u128, pp.max(1) as u128);
    let h = model.hidden as u128;
    let blocks =
        (model.layers as u128 / p) * u128::from(layer_params_per_rank_folded(model, tp, ep, etp));
    let vocab_shard = model.vocab as u128 * h / t;
    let positions = if model.learned_positions {
        model.seq as u128 * h
    } else {
        0
    };
    let first = vocab_shard + positions;
    let output = if model.tied_embeddings && p > 1 {
        vocab_shard
    } else if model.tied_embeddings {
        0
    } else {
        vocab_shard
    };
    let last = output + u128::from(model.final_norm_params());
    sat(if p == 1 {
        blocks + first + last
    } else {
        blocks + first.max(last)
    })
}

/// [`model_state_bytes`] with `expert` of the `params` sharded over the expert-data-parallel
/// group (`dp/ep` ranks) and the rest over `dp`; exactly [`model_state_bytes`] at `ep = 1`.
pub fn model_state_bytes_ep(
    params: u64,
    expert: u64,
    dp: usize,
    ep: usize,
    zero: u8,
) -> (u64, u64, u64) {
    if ep <= 1 || expert == 0 {
        return model_state_bytes(params, dp, zero);
    }
    model_state_bytes_experts(params, expert, dp, (dp / ep).max(1), zero)
}

/// [`model_state_bytes`] with `expert` of the `params` sharded over `expert_dp` ranks (the
/// experts' data-parallel group, [`Layout::expert_dp`]) and the rest over `dp`.
pub fn model_state_bytes_experts(
    params: u64,
    expert: u64,
    dp: usize,
    expert_dp: usize,
    zero: u8,
) -> (u64, u64, u64) {
    if expert == 0 {
        return model_state_bytes(params, dp, zero);
    }
    let dense = model_state_bytes(params.saturating_sub(expert), dp, zero);
    let experts = model_state_bytes(expert, expert_dp.max(1), zero);
    (
        dense.0.saturating_add(experts.0),
        dense.1.saturating_add(experts.1),
        dense.2.saturating_add(experts.2),
    )
}

/// Weights, gradients and optimizer bytes for `params` parameters on one GPU with
/// mixed-precision Adam (2 + 2 + 12 bytes per parameter) and ZeRO `stage` over `dp` ranks.
pub fn model_state_bytes(params: u64, dp: usize, zero: u8) -> (u64, u64, u64) {
    let d = dp.max(1) as u64;
    let shard = |bytes: u64, sharded: bool| if sharded { bytes.div_ceil(d) } else { bytes };
    (
        shard(params.saturating_mul(2), zero >= 3),
        shard(params.saturating_mul(2), zero >= 2),
        shard(params.saturating_mul(12), zero >= 1),
    )
}

/// Activation bytes of one transformer block for one micro-batch of `b` sequences of `s`
/// tokens on one TP rank, built from the tensors each op saves for backward (Korthikanti
/// et al. 2022, §4.1; see the module docs). 16-bit activations, 1-byte dropout masks.
pub fn activation_bytes_per_layer(
    model: &ModelSpec,
    seq: usize,
    micro_batch: usize,
    tp: usize,
    sp: bool,
    recompute: Recompute,
) -> u64 {
    // Saturating 128-bit arithmetic (`a·s²·b` alone can pass 2⁶⁴ for absurd inputs); see
    // [`sat`] for why saturation cannot produce a wrong "fits".
    let m = |x: u128, y: u128| x.saturating_mul(y);
    let (s, b, t) = (seq as u128, micro_batch as u128, tp.max(1) as u128);
    let (h, kv, a) = (
        model.hidden as u128,
        model.kv_dim() as u128,
        model.heads as u128,
    );
    let e = u128::from(ACTIVATION_BYTES);
    let sb = m(s, b);
    let sbh = m(sb, h);
    // Tensors outside the TP region: split along the sequence only with SP.
    let outside = |bytes: u128| if sp { bytes / t } else { bytes };
    if recompute == Recompute::Full {
        return sat(outside(m(e, sbh)));
    }
    let mask = u128::from(model.dropout); // 1-byte dropout mask per element, if dropout is on
                                          // Each token passes k experts' MLPs of width f (shared experts and dense layers folded in:
                                          // [`ModelSpec::active_mlp_width`]).
    let (k, f) = model.active_mlp_width();
    let (k, f) = (k as u128, f as u128);
    let gate = if model.gated_mlp { 2 } else { 1 };

    // Replicated across the TP group (LayerNorm/dropout region): the inputs of LN1, QKV, LN2
    // and fc1 (16-bit each) and the two dropout masks (1 byte each).
    let replicated = m(sbh, 4 * e + 2 * mask);

    // Split by heads / FFN columns across the TP group: Q and K, V, the out-projection's
    // input, the activation's input (two for a gated MLP) and fc2's input.
    let q_dim = model.q_dim() as u128;
    let q_k = m(e, m(sb, q_dim + kv));
    let v = m(e, m(sb, kv));
    let proj_in = m(e, m(sb, q_dim));
    let act_in = m(k * gate * e, m(sb, f));
    let fc2_in = m(k * e, m(sb, f));
    let sharded_linear = q_k
        .saturating_add(v)
        .saturating_add(proj_in)
        .saturating_add(act_in)
        .saturating_add(fc2_in);

    // Attention core: softmax output (2as²b), dropout mask (as²b), dropout output (2as²b).
    let scores = m(m(a, s), m(s, b));
    let core = if recompute == Recompute::Selective {
        0
    } else if model.dropout {
        m(scores, 5)
    } else {
        m(scores, e)
    };
    sat(outside(replicated).saturating_add(sharded_linear.saturating_add(core) / t))
}

/// The MoE layer's activations beyond [`activation_bytes_per_layer`]'s, one micro-batch on one
/// GPU, the mean over the layers: the experts' input is the `k` dispatched rows of each token
/// (gathered over the expert-TP group), not one row, and the unpermutation keeps the `k`
/// expert outputs for the routing weights' gradient (Megatron-Core's `unpermute` saves them):
/// `2·h·(T·k·etp + T·k − T)` bytes for `T` tokens dispatched (`s·b/t`). 0 for a dense model and
/// with full recomputation (only the layer's input is kept).
pub fn moe_activation_bytes_per_layer(
    model: &ModelSpec,
    seq: usize,
    layout: &Layout,
    recompute: Recompute,
) -> u64 {
    if model.experts <= 1 || recompute == Recompute::Full {
        return 0;
    }
    let t = layout.tp.max(1) as u128;
    let tokens = (seq as u128).saturating_mul(layout.micro_batch as u128) / t;
    let k = model.experts_per_token as u128;
    let rows = tokens.saturating_mul(k);
    let extra = rows
        .saturating_mul(layout.expert_tp() as u128)
        .saturating_add(rows)
        .saturating_sub(tokens);
    let bytes = extra
        .saturating_mul(model.hidden as u128)
        .saturating_mul(u128::from(ACTIVATION_BYTES));
    sat(bytes.saturating_mul(model.moe_layers() as u128) / model.layers.max(1) as u128)
}

/// Activation bytes on the busiest GPU for a training layout: the first stage holds
/// `min(p, m)` micro-batches of its `l/p` layers (1F1B) plus the embedding dropout mask; the
/// last stage holds the final norm and output-layer inputs and fp32 logits (`4sbV/t`)
/// (Korthikanti et al. 2022, §4.3).
pub fn activation_bytes_per_gpu(
    model: &ModelSpec,
    seq: usize,
    global_batch: usize,
    layout: &Layout,
) -> u64 {
    let m = |x: u128, y: u128| x.saturating_mul(y);
    let (s, b, t) = (
        seq as u128,
        layout.micro_batch as u128,
        layout.tp.max(1) as u128,
    );
    let h = model.hidden as u128;
    let p = layout.pp.max(1);
    let micro_batches = (global_batch / layout.micro_batch.saturating_mul(layout.dp).max(1)).max(1);
    let in_flight = p.min(micro_batches) as u128;
    let per_layer = u128::from(activation_bytes_per_layer(
        model,
        seq,
        layout.micro_batch,
        layout.tp,
        layout.sp,
        layout.recompute,
    ))
    .saturating_add(u128::from(moe_activation_bytes_per_layer(
        model,
        seq,
        layout,
        layout.recompute,
    )));
    let layers_per_stage = (model.layers / p) as u128;
    let sp_div = |x: u128| if layout.sp { x / t } else { x };
    let sbh = m(m(s, b), h);
    let embed_mask = if model.dropout { sp_div(sbh) } else { 0 };
    let stage_layers = m(layers_per_stage, per_layer);
    let first = m(in_flight, stage_layers.saturating_add(embed_mask));
    let last_extra = sp_div(m(sbh, 2 * u128::from(ACTIVATION_BYTES)))
        .saturating_add(m(m(s, b), 4 * model.vocab as u128) / t);
    sat(if p == 1 {
        first.saturating_add(last_extra)
    } else {
        // The last stage holds one micro-batch in flight.
        first.max(stage_layers.saturating_add(last_extra))
    })
}

/// Training memory per GPU for `layout`.
pub fn training_memory(
    model: &ModelSpec,
    seq: usize,
    global_batch: usize,
    layout: &Layout,
) -> MemoryBreakdown {
    let etp = layout.expert_tp();
    let params = params_per_gpu_folded(model, layout.tp, layout.pp, layout.ep, etp);
    let expert = u64::try_from(
        (model.layers / layout.pp.max(1)) as u128
            * u128::from(expert_params_per_rank(model, etp, layout.ep)),
    )
    .unwrap_or(u64::MAX);
    let (weights_bytes, gradients_bytes, optimizer_bytes) = if etp == layout.tp {
        model_state_bytes_ep(params, expert, layout.dp, layout.ep, layout.zero)
    } else {
        model_state_bytes_experts(params, expert, layout.dp, layout.expert_dp(), layout.zero)
    };
    MemoryBreakdown {
        params_per_gpu: params,
        weights_bytes,
        gradients_bytes,
        optimizer_bytes,
        activations_bytes: activation_bytes_per_gpu(model, seq, global_batch, layout),
        kv_cache_bytes: 0,
        total_bytes: 0,
    }
    .with_total()
}

/// KV-cache bytes per token on one GPU at tensor-parallel size `tp` and `pp` stages:
/// `2 · (l/p) · max(kv_heads/tp, 1) · head_dim · bytes`. When `tp > kv_heads` each GPU keeps a
/// replicated copy of one KV head (vLLM's rule).
pub fn kv_cache_bytes_per_token_per_gpu(
    model: &ModelSpec,
    tp: usize,
    pp: usize,
    bytes_per_elem: u64,
) -> u64 {
    if let Some(mla) = &model.mla {
        // The latent and the rope key are one "head" every TP rank keeps whole (vLLM and
        // SGLang replicate the MLA cache over the TP group).
        return sat(((model.layers / pp.max(1)) as u128)
            .saturating_mul((mla.kv_lora_rank + mla.qk_rope_head_dim) as u128)
            .saturating_mul(u128::from(bytes_per_elem)));
    }
    let kv_heads_per_gpu = (model.kv_heads / tp.max(1)).max(1) as u128;
    sat((2 * (model.layers / pp.max(1)) as u128)
        .saturating_mul(kv_heads_per_gpu)
        .saturating_mul(model.head_dim() as u128)
        .saturating_mul(u128::from(bytes_per_elem)))
}

/// Serving memory per GPU: 16-bit weights and the KV cache of `sequences` sequences of
/// `context` tokens (activations of a forward pass are transient and not counted).
pub fn serving_memory(
    model: &ModelSpec,
    tp: usize,
    pp: usize,
    sequences: usize,
    context: usize,
) -> MemoryBreakdown {
    serving_memory_in(model, tp, pp, sequences, context, (2, 1), 2)
}

/// The linear-layer weights of one block on one GPU at tensor-parallel size `tp`: QKV and the
/// output projection, and every expert's MLP matrices, split `1/tp` (the matrices a quantised
/// checkpoint stores in FP8 or INT4; norms, biases, the router, the embedding and the output
/// layer stay 16-bit).
pub fn linear_weights_per_rank(model: &ModelSpec, tp: usize) -> u64 {
    let t = tp.max(1) as u128;
    let (h, kv, f) = (
        model.hidden as u128,
        model.kv_dim() as u128,
        model.ffn as u128,
    );
    let q = model.q_dim() as u128;
    let mats = if model.gated_mlp { 3 } else { 2 };
    let attn = if model.mla.is_some() {
        u128::from(model.attention_weight_params()) / t
    } else {
        (h * (q + 2 * kv) + q * h) / t
    };
    let mut mlp = (model.experts.max(1) as u128).saturating_mul(mats * h * f / t);
    if model.shared_ffn > 0 || model.dense_layers > 0 {
        // Mean over the layers: routed and shared experts in the MoE layers, the dense MLP in
        // the others.
        let (moe_l, l) = (model.moe_layers() as u128, model.layers.max(1) as u128);
        let moe = mlp.saturating_add(mats * h * model.shared_ffn as u128 / t);
        let dense = mats * h * model.dense_ffn as u128 / t;
        mlp = (moe.saturating_mul(moe_l) + dense.saturating_mul(model.dense_layers as u128)) / l;
    }
    sat(attn.saturating_add(mlp))
}

/// [`serving_memory`] with the linear-layer weights ([`linear_weights_per_rank`]) stored at
/// `linear_bytes.0 / linear_bytes.1` bytes each (2/1 bf16, 1/1 FP8, 33/64 INT4 with its group
/// scales) and `kv_bytes_per_elem` bytes per KV-cache element; every other parameter 16-bit.
pub fn serving_memory_in(
    model: &ModelSpec,
    tp: usize,
    pp: usize,
    sequences: usize,
    context: usize,
    linear_bytes: (u64, u64),
    kv_bytes_per_elem: u64,
) -> MemoryBreakdown {
    let params = params_per_gpu(model, tp, pp);
    let linear = (u128::from(linear_weights_per_rank(model, tp))
        * (model.layers / pp.max(1)) as u128)
        .min(u128::from(params));
    let (num, den) = (
        u128::from(linear_bytes.0),
        u128::from(linear_bytes.1.max(1)),
    );
    let weights = (u128::from(params) - linear)
        .saturating_mul(2)
        .saturating_add(linear.saturating_mul(num).div_ceil(den));
    MemoryBreakdown {
        params_per_gpu: params,
        weights_bytes: sat(weights),
        kv_cache_bytes: sat(u128::from(kv_cache_bytes_per_token_per_gpu(
            model,
            tp,
            pp,
            kv_bytes_per_elem,
        ))
        .saturating_mul(sequences as u128)
        .saturating_mul(context as u128)),
        ..MemoryBreakdown::default()
    }
    .with_total()
}

/// Tokens of KV cache that fit beside the weights on a GPU of `memory_bytes`
/// (at [`USABLE_MEMORY_FRACTION`]); 0 when the weights alone do not fit.
pub fn max_kv_tokens(model: &ModelSpec, tp: usize, pp: usize, memory_bytes: f64) -> u64 {
    let weights = 2.0 * params_per_gpu(model, tp, pp) as f64;
    let free = memory_bytes * USABLE_MEMORY_FRACTION - weights;
    let per_token = kv_cache_bytes_per_token_per_gpu(model, tp, pp, 2) as f64;
    if free <= 0.0 || per_token <= 0.0 {
        0
    } else {
        (free / per_token) as u64
    }
}

/// Memory per rank of the engine's own scenario ([`Config`]: a stack of GPT-2 blocks without
/// embeddings) at its TP size, in the run's dtype. For the app's Memory view.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConfigMemory {
    pub tp: usize,
    /// Weights and biases each rank holds (QKV/fc1 columns, out/fc2 rows, replicated norms and
    /// row-parallel biases).
    pub weights_bytes_per_rank: u64,
    /// Gradients: same shapes as the weights.
    pub gradients_bytes_per_rank: u64,
    /// Adam's two moments (momentum and variance) in the run's dtype: 2 × weights.
    pub optimizer_bytes_per_rank: u64,
    /// Activations saved for backward (Korthikanti's list without dropout): LN inputs and
    /// outputs replicated (split along the tokens with sequence parallelism); Q/K/V, attention
    /// probabilities, attention output, fc1 output and GeLU output split by heads / columns.
    /// Exactly what the sharded executor keeps (`ShardedRun::saved_elements_per_rank`).
    pub activations_bytes_per_rank: u64,
    pub total_bytes_per_rank: u64,
    /// The same total at TP=1 (the unsharded model), for comparison.
    pub unsharded_total_bytes: u64,
}

/// Per-rank memory of the engine's [`Config`] at `cfg.tp`. Assumes a valid config
/// ([`Config::validate_shapes`]).
pub fn config_memory(cfg: &Config) -> ConfigMemory {
    // 128-bit arithmetic, saturated: `b·a·s²` of a config within the shape limits can pass
    // 2⁶⁴ (the view draws such configs; it never runs them).
    let at = |tp: usize| -> (u64, u64, u64, u64) {
        let t = tp.max(1) as u128;
        let e = cfg.dtype.size_bytes() as u128;
        let (h, f) = (cfg.hidden as u128, cfg.ffn as u128);
        let (tok, b, a, s) = (
            cfg.tokens() as u128,
            cfg.batch as u128,
            cfg.heads as u128,
            cfg.seq as u128,
        );
        let l = cfg.layers as u128;
        // QKV [h, q/t]+bias (q = (a + 2·kv)·d; replicated KV heads count once per copy), out
        // [h/t,h] + replicated bias, fc1 [h,f/t]+bias, fc2 [f/t,h] + replicated bias, two
        // LayerNorms (4h).
        let qc = Config {
            tp: tp.max(1),
            ..cfg.clone()
        }
        .qkv_cols_per_rank() as u128;
        let params = h * qc + qc + h * h / t + h + h * f / t + f / t + f * h / t + h + 4 * h;
        let weights = l.saturating_mul(params).saturating_mul(e);
        // ln1 and ln2 outputs and normalised inputs, and their 1/σ per token: replicated, or
        // with sequence parallelism split along the tokens (Korthikanti et al. 2022, §4.2.2).
        let replicated = 4 * tok * h + 2 * tok;
        let replicated = if cfg.sequence_parallel {
            replicated / t
        } else {
            replicated
        };
        // The rank's QKV output, its heads' softmax probabilities, context and the MLP's two
        // [tok, f/t] activations.
        let scores = b.saturating_mul(a).saturating_mul(s).saturating_mul(s);
        let sharded = (tok * qc)
            .saturating_add(scores.saturating_add(tok * h).saturating_add(2 * tok * f) / t);
        let acts = l
            .saturating_mul(replicated.saturating_add(sharded))
            .saturating_mul(e);
        (
            sat(weights),
            sat(weights),
            sat(weights.saturating_mul(2)),
            sat(acts),
        )
    };
    let (w, g, o, act) = at(cfg.tp);
    let (w1, g1, o1, act1) = at(1);
    let total =
        |w: u64, g: u64, o: u64, a: u64| w.saturating_add(g).saturating_add(o).saturating_add(a);
    ConfigMemory {
        tp: cfg.tp,
        weights_bytes_per_rank: w,
        gradients_bytes_per_rank: g,
        optimizer_bytes_per_rank: o,
        activations_bytes_per_rank: act,
        total_bytes_per_rank: total(w, g, o, act),
        unsharded_total_bytes: total(w1, g1, o1, act1),
    }
}

/// [`config_memory`] for every valid TP size of `cfg` (the Memory view's bars as TP changes).
pub fn config_memory_by_tp(cfg: &Config) -> Vec<ConfigMemory> {
    cfg.valid_tp_sizes()
        .into_iter()
        .map(|tp| config_memory(&Config { tp, ..cfg.clone() }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::models::ModelPreset;

    /// Mixtral 8x7B (32 layers, h 4096, 32 heads, 8 KV heads of 128, SwiGLU FFN 14336, 8
    /// experts, vocab 32000, untied, no biases) trained on 8 GPUs at TP 1, PP 1, DP 8, ZeRO-1,
    /// by hand:
    /// - attention per layer `h·(q + 2kv) + q·h = 4096·6144 + 4096·4096 = 41,943,040`; RMSNorms
    ///   `2h = 8,192`; router `h·E = 32,768`; one expert `3·h·F = 3·4096·14336 = 176,160,768`.
    /// - EP 1: `32·(41,943,040 + 8,192 + 32,768 + 8·176,160,768) + 2·32000·4096 + 4096 =
    ///   46,702,792,704` parameters per GPU (all of Mixtral's 46.7B).
    /// - EP 8: one expert per GPU: `32·(41,984,000 + 176,160,768) + 262,148,096 =
    ///   7,242,780,672`, of which `32·176,160,768 = 5,637,144,576` expert weights.
    /// - States, ZeRO-1 (2 + 2 bytes, 12 bytes sharded): EP 1: `2·46,702,792,704 =
    ///   93,405,585,408` weights and as many gradient bytes, `12·46,702,792,704/8 =
    ///   70,054,189,056` optimizer. EP 8: `14,485,561,344` weights and gradients; optimizer: the
    ///   dense `12·1,605,636,096/8 = 2,408,454,144` plus the expert `12·5,637,144,576 =
    ///   67,645,734,912` (its data-parallel group is `dp/ep = 1` GPU: nothing to shard over),
    ///   70,054,189,056 again. EP cuts weights and gradients 6.4×; the optimizer that ZeRO-1
    ///   already sharded over 8 stays the same.
    #[test]
    fn mixtral_memory_per_gpu_at_ep_8_against_ep_1_by_hand() {
        let m = ModelPreset::Mixtral8x7b.spec();
        let base = Layout {
            zero: 1,
            ..Layout::new(1, 1, 8)
        };
        let ep1 = training_memory(&m, 4096, 64, &base);
        let ep8 = training_memory(&m, 4096, 64, &Layout { ep: 8, ..base });
        assert_eq!(ep1.params_per_gpu, 46_702_792_704);
        assert_eq!(ep8.params_per_gpu, 7_242_780_672);
        assert_eq!(expert_params_per_rank(&m, 1, 8) * 32, 5_637_144_576);
        assert_eq!(
            (ep1.weights_bytes, ep1.gradients_bytes, ep1.optimizer_bytes),
            (93_405_585_408, 93_405_585_408, 70_054_189_056)
        );
        assert_eq!(
            (ep8.weights_bytes, ep8.gradients_bytes, ep8.optimizer_bytes),
            (14_485_561_344, 14_485_561_344, 70_054_189_056)
        );
        // Activations do not change under balanced routing.
        assert_eq!(ep1.activations_bytes, ep8.activations_bytes);
        // EP 2 at TP 2: 4 experts per GPU, each split in two.
        assert_eq!(expert_params_per_rank(&m, 2, 2), 4 * 3 * 4096 * 14336 / 2);
        // EP 1 is the model without EP, to the byte (every preset).
        for p in ModelPreset::ALL {
            let spec = p.spec();
            assert_eq!(
                params_per_gpu_ep(&spec, 1, 1, 1),
                params_per_gpu(&spec, 1, 1)
            );
        }
    }

    /// MoE parallel folding: with ETP apart from TP the experts' grid EP × ETP must divide
    /// TP × DP, and EP may exceed DP; the experts' states shard over TP·DP/(EP·ETP).
    #[test]
    fn folded_experts_may_exceed_dp() {
        let m = ModelPreset::Mixtral8x7b.spec();
        let l = Layout {
            ep: 8,
            ..Layout::new(2, 1, 4)
        };
        assert!(matches!(
            check_layout(&m, &l),
            Err(LayoutError::EpNotDividingDp { .. })
        ));
        let folded = Layout { etp: 1, ..l };
        assert!(check_layout(&m, &folded).is_ok());
        assert_eq!((folded.expert_tp(), folded.expert_dp()), (1, 1));
        assert_eq!(folded.label(), "TP=2 PP=1 DP=4 EP=8 ETP=1 b=1");
        let too_few = Layout {
            etp: 1,
            ep: 8,
            ..Layout::new(2, 1, 2)
        };
        assert!(matches!(
            check_layout(&m, &too_few),
            Err(LayoutError::ExpertGridNotDividing { .. })
        ));
        // One whole expert a GPU at ETP 1; the attention still split by TP 2.
        assert_eq!(
            layer_params_per_rank_folded(&m, 2, 8, 1) - layer_params_per_rank_ep(&m, 2, 8),
            3 * 4096 * 14336 / 2
        );
        // A dense model keeps no MoE activations; full recomputation keeps none either.
        let dense = ModelPreset::Llama3_8b.spec();
        assert_eq!(
            moe_activation_bytes_per_layer(&dense, 4096, &folded, Recompute::None),
            0
        );
        assert_eq!(
            moe_activation_bytes_per_layer(&m, 4096, &folded, Recompute::Full),
            0
        );
        // T = 2048 tokens a GPU, k = 2, ETP 1: 2·h·(T·k + T·k − T) bytes.
        assert_eq!(
            moe_activation_bytes_per_layer(&m, 4096, &folded, Recompute::None),
            2 * 4096 * (2048 * 2 + 2048 * 2 - 2048)
        );
    }

    #[test]
    fn ep_must_divide_the_experts_and_dp() {
        let m = ModelPreset::Mixtral8x7b.spec();
        let l = Layout::new(1, 1, 8);
        assert!(check_layout(&m, &Layout { ep: 8, ..l }).is_ok());
        assert_eq!(
            check_layout(
                &m,
                &Layout {
                    ep: 3,
                    ..Layout::new(1, 1, 6)
                }
            ),
            Err(LayoutError::ExpertsNotDivisibleByEp {
                ep: 3,
                experts: 8,
                valid: vec![1, 2, 4, 8]
            })
        );
        assert_eq!(
            check_layout(
                &m,
                &Layout {
                    ep: 8,
                    ..Layout::new(2, 1, 4)
                }
            ),
            Err(LayoutError::EpNotDividingDp { ep: 8, dp: 4 })
        );
        assert_eq!(
            check_layout(&m, &Layout { ep: 0, ..l }),
            Err(LayoutError::Zero { field: "ep" })
        );
        let dense = ModelPreset::Llama3_8b.spec();
        assert!(matches!(
            check_layout(&dense, &Layout { ep: 2, ..l }),
            Err(LayoutError::ExpertsNotDivisibleByEp { experts: 1, .. })
        ));
        assert_eq!(Layout { ep: 8, ..l }.label(), "TP=1 PP=1 DP=8 EP=8 b=1");
    }

    #[test]
    fn zero_paper_figure_1() {
        // Rajbhandari et al. 2020, Fig. 1: Ψ = 7.5B, N_d = 64, K = 12:
        // baseline 120 GB, P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.9 GB (rounded to 0.1 GB).
        let psi = 7_500_000_000u64;
        let want = [120.0, 31.4, 16.6, 1.9];
        for (zero, want_gb) in want.into_iter().enumerate() {
            let (w, g, o) = model_state_bytes(psi, 64, zero as u8);
            let gb = (w + g + o) as f64 / 1e9;
            assert!(
                (gb - want_gb).abs() < 0.05 + 1e-9,
                "ZeRO-{zero}: {gb} vs {want_gb}"
            );
        }
    }

    #[test]
    fn config_memory_shrinks_with_tp() {
        let cfg = Config::default();
        let rows = config_memory_by_tp(&cfg);
        assert_eq!(rows[0].tp, 1);
        assert_eq!(rows[0].total_bytes_per_rank, rows[0].unsharded_total_bytes);
        for w in rows.windows(2) {
            assert!(w[1].weights_bytes_per_rank < w[0].weights_bytes_per_rank);
            assert!(w[1].activations_bytes_per_rank < w[0].activations_bytes_per_rank);
        }
        // At TP=1 the weights are exactly the config's parameter count in f32.
        assert_eq!(rows[0].weights_bytes_per_rank, cfg.params_per_layer() * 4);
    }

    #[test]
    fn kv_cache_gqa_and_replication() {
        let m = ModelPreset::Llama3_70b.spec();
        // 2 · 80 layers · 8 KV heads · 128 · 2 bytes = 327,680 bytes per token (320 KiB).
        assert_eq!(m.kv_cache_bytes_per_token(2), 327_680);
        assert_eq!(kv_cache_bytes_per_token_per_gpu(&m, 4, 1, 2), 327_680 / 4);
        // TP=16 > 8 KV heads: each GPU keeps one replicated head, not half a head.
        assert_eq!(kv_cache_bytes_per_token_per_gpu(&m, 16, 1, 2), 327_680 / 8);
    }

    #[test]
    fn layout_errors() {
        let m = ModelPreset::Gpt3_175b.spec();
        let l = Layout::new(7, 1, 1);
        assert!(matches!(
            check_layout(&m, &l),
            Err(LayoutError::HeadsNotDivisible {
                tp: 7,
                heads: 96,
                ..
            })
        ));
        assert!(matches!(
            check_layout(&m, &Layout { tp: 8, pp: 5, ..l }),
            Err(LayoutError::LayersNotDivisible { pp: 5, .. })
        ));
        let llama = ModelPreset::Llama3_8b.spec();
        assert!(matches!(
            check_layout(&llama, &Layout { tp: 16, ..l }),
            Err(LayoutError::KvHeadsNotDivisible {
                tp: 16,
                kv_heads: 8,
                ..
            })
        ));
    }
}
