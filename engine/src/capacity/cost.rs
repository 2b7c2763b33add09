//! The cost model: collective times (α–β), compute times (roofline), per-layer and
//! per-iteration time of a 3D-parallel layout, FLOPs per iteration and MFU.
//!
//! - Collectives: `time = steps·α + bytes_sent_per_rank / (B·η_link)`, with the steps and bytes
//!   of each algorithm from [`crate::trace`] (the same counts the engine's trace records). A
//!   group that spans nodes pays its NICs ([`Cluster::group_ring_link`], NCCL spreading channels over the node's NICs). Reported rates
//!   follow nccl-tests (`doc/PERFORMANCE.md`): `algbw = size / time`, `busbw = algbw·2(n−1)/n`
//!   for all-reduce and `algbw·(n−1)/n` for all-gather and reduce-scatter.
//! - Compute: roofline, `time = max(flops / (peak·η_mm), bytes / (bw·η_mem))`.
//! - Layout: per micro-batch each pipeline stage runs `l/p` layers forward and backward (plus
//!   recomputation) and their TP collectives; 1F1B runs `m + p − 1` such slots, so the bubble
//!   is `(p−1)/m` of the useful time (Narayanan et al. 2021, §2.2.1); then the data-parallel
//!   gradient all-reduce (optionally overlapped with the last backward) and the optimizer step.
//! - Expert parallelism (MoE, `Layout::ep > 1`): each MoE layer's dispatch and combine
//!   all-to-alls, forward and backward (4 per layer per micro-batch, 6 with full recomputation),
//!   each sending `tokens·k·h·2·(ep−1)/ep` bytes per GPU under balanced routing
//!   ([`moe_all_to_all_bytes_per_gpu`]), priced α–β as a pairwise exchange of `ep − 1` steps
//!   ([`all_to_all_time_s`]) over the EP group's link (its ranks are TP apart, Megatron-Core's
//!   rank order tp-cp-ep-dp-pp). They are not overlapped. Expert gradients reduce over `dp/ep`
//!   ranks instead of `dp`; a ring's bytes per rank, `2(n−1)/n` of the buffer, barely depend on
//!   `n`, so the model prices all gradients over `dp`.
//! - FLOPs: Narayanan et al. 2021, Eq. 3, `96·B·s·l·h²·(1 + s/(6h) + V/(16lh))` with full
//!   recomputation, generalised to GQA, gated MLPs and MoE by counting matmul weights.
//!
//! Every constant is listed with its source in `docs/calibration.md`.

use crate::capacity::hardware::{Cluster, GpuSpec, LinkSpec};
use crate::capacity::memory::{self, Layout, LayoutError, MemoryBreakdown, Recompute};
use crate::capacity::models::ModelSpec;
use crate::collectives::{self, Algorithm, CollectiveError};
use crate::dtype::DType;
use crate::{
    collectives::CollectiveKind,
    trace::{Event, EventKind, TimeSource, Trace},
};
use serde::{Deserialize, Serialize};

/// Achievable fraction of peak tensor-core FLOP/s for large GEMMs (assumption: cuBLAS reaches
/// 70–80% of peak on large bf16 GEMMs on A100/H100; docs/calibration.md).
pub const MATMUL_EFFICIENCY: f64 = 0.7;
/// Achievable fraction of peak memory bandwidth for streaming element-wise kernels
/// (assumption: STREAM-like kernels reach ~80–90% of HBM peak).
pub const MEMORY_EFFICIENCY: f64 = 0.8;
/// Achievable fraction of a link's peak per-direction bandwidth as nccl-tests busbw
/// (assumption: DGX A100 all-reduce busbw ≈ 230–240 GB/s of 300 GB/s NVLink 3).
pub const LINK_EFFICIENCY: f64 = 0.8;
/// Bytes of optimizer-step memory traffic per parameter for mixed-precision Adam: read and
/// write fp32 master weight, momentum and variance (2·12), read the fp16 gradient (2) and
/// write the fp16 weight (2).
pub const ADAM_STEP_BYTES_PER_PARAM: f64 = 28.0;

/// Roofline time of an op: compute-bound or memory-bound, whichever is slower.
pub fn roofline_s(flops: f64, bytes: f64, gpu: &GpuSpec, dtype: DType) -> f64 {
    let compute = flops / (gpu.peak_flops(dtype) * MATMUL_EFFICIENCY);
    let memory = bytes / (gpu.memory_bandwidth_gbs * 1e9 * MEMORY_EFFICIENCY);
    compute.max(memory)
}

/// Communication steps of `kind` over `n` ranks by `algorithm`: the collectives module's own
/// count of its schedule ([`collectives::summary`]); nothing else counts them.
///
/// **Errors** for a schedule the collectives do not have (e.g. a tree all-gather).
pub fn collective_steps(
    kind: CollectiveKind,
    algorithm: Algorithm,
    n: usize,
) -> Result<usize, CollectiveError> {
    collectives::collective_step_count(kind, algorithm, n)
}

/// Bytes the busiest rank sends for `kind` of a buffer of `size_bytes` (nccl-tests "size": the
/// full buffer for all-reduce and broadcast, the gathered output for all-gather, the input for
/// reduce-scatter) over `n` ranks, from the collectives' schedule.
///
/// **Errors** as [`collective_steps`].
pub fn collective_bytes_sent_per_rank(
    kind: CollectiveKind,
    algorithm: Algorithm,
    n: usize,
    size_bytes: u64,
) -> Result<u64, CollectiveError> {
    collectives::collective_max_bytes_sent_per_rank(kind, algorithm, n, size_bytes)
}

/// α–β time of a collective: `steps·α + bytes_sent_per_rank / (B·η_link)`, steps and bytes from
/// the collectives' schedule.
///
/// **Errors** as [`collective_steps`].
pub fn collective_time_s(
    kind: CollectiveKind,
    algorithm: Algorithm,
    n: usize,
    size_bytes: u64,
    link: &LinkSpec,
) -> Result<f64, CollectiveError> {
    let s = collectives::summary(kind, algorithm, n, size_bytes)?;
    Ok(s.steps as f64 * link.latency_us * 1e-6
        + s.max_bytes_sent as f64 / (link.bandwidth_bytes_per_s() * LINK_EFFICIENCY))
}

/// [`collective_time_s`] by ring, which every collective has on every group: 0 for an empty
/// group (nothing to send).
pub fn ring_time_s(kind: CollectiveKind, n: usize, size_bytes: u64, link: &LinkSpec) -> f64 {
    collective_time_s(kind, Algorithm::Ring, n, size_bytes, link).unwrap_or(0.0)
}

/// nccl-tests' algorithm bandwidth: `size / time`, bytes per second.
pub fn algbw_bytes_per_s(size_bytes: u64, time_s: f64) -> f64 {
    size_bytes as f64 / time_s
}

/// nccl-tests' bus-bandwidth factor: `2(n−1)/n` for all-reduce, `(n−1)/n` for all-gather and
/// reduce-scatter, 1 for broadcast.
pub fn busbw_factor(kind: CollectiveKind, n: usize) -> f64 {
    let n = n.max(1) as f64;
    match kind {
        CollectiveKind::AllReduce => 2.0 * (n - 1.0) / n,
        CollectiveKind::AllGather | CollectiveKind::ReduceScatter => (n - 1.0) / n,
        // Each rank sends (n−1)/n of its 1/n share: nccl-tests' alltoall factor (n−1)/n of
        // the per-rank buffer.
        CollectiveKind::AllToAll => (n - 1.0) / n,
        CollectiveKind::Broadcast => 1.0,
        CollectiveKind::Identity => 0.0,
    }
}

/// nccl-tests' bus bandwidth: `algbw · busbw_factor`.
pub fn busbw_bytes_per_s(kind: CollectiveKind, n: usize, size_bytes: u64, time_s: f64) -> f64 {
    algbw_bytes_per_s(size_bytes, time_s) * busbw_factor(kind, n)
}

/// Modeled duration of one trace event on `cluster` (compute: roofline in the trace's dtype;
/// collectives: α–β over the TP group's link, which spans nodes when `tp > gpus_per_node`).
pub fn event_duration_s(e: &Event, dtype: DType, cluster: &Cluster) -> f64 {
    match &e.kind {
        EventKind::Compute { .. } => {
            roofline_s(e.flops as f64, e.bytes as f64, &cluster.gpu, dtype)
        }
        EventKind::Collective {
            kind, algorithm, ..
        } => {
            let n = e.ranks.len();
            // The schedule emits only (kind, algorithm) pairs the collectives have.
            collective_time_s(
                *kind,
                *algorithm,
                n,
                e.bytes,
                &cluster.group_ring_link(1, n),
            )
            .unwrap_or(0.0)
        }
    }
}

/// Replaces a trace's times with the cost model's for `cluster`
/// ([`TimeSource::CostModel`]). The app's Collectives and Timeline views and the Chrome-trace
/// export then show modeled times.
pub fn apply_to_trace(trace: &mut Trace, cluster: &Cluster) {
    let dtype = trace.config.dtype;
    trace.assign_times(TimeSource::CostModel, |e| {
        event_duration_s(e, dtype, cluster)
    });
}

/// Training run parameters besides the layout.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrainSetup {
    /// Sequence length `s`.
    pub seq: usize,
    /// Sequences per iteration `B`.
    pub global_batch: usize,
    /// Overlap the data-parallel gradient all-reduce with the last micro-batch's backward.
    pub overlap_dp: bool,
}

/// The largest sequence length and global batch the cost model accepts: 2²⁴ each.
pub const MAX_SETUP_SIZE: usize = 1 << 24;

/// The most tokens (`global_batch × seq`) a setup holds at once: 2^40.
pub const MAX_SETUP_TOKENS: u128 = 1 << 40;

impl TrainSetup {
    /// Sequences of `seq` tokens, `global_batch` of them an iteration, the data-parallel
    /// all-reduce overlapped with the last backward (Megatron-LM's default).
    pub fn new(seq: usize, global_batch: usize) -> Self {
        TrainSetup {
            seq,
            global_batch,
            overlap_dp: true,
        }
    }

    /// `seq` and `global_batch` at least 1 and at most [`MAX_SETUP_SIZE`].
    pub fn validate(&self) -> Result<(), LayoutError> {
        for (field, value) in [("seq", self.seq), ("global_batch", self.global_batch)] {
            if value == 0 {
                return Err(LayoutError::Zero { field });
            }
            if value > MAX_SETUP_SIZE {
                return Err(LayoutError::OverLimit {
                    field,
                    value,
                    max: MAX_SETUP_SIZE,
                });
            }
        }
        // Tokens held at once (a serving KV cache, a training batch): past 2^40 the byte counts
        // would pass 64 bits; no cluster holds that.
        let tokens = self.global_batch as u128 * self.seq as u128;
        if tokens > MAX_SETUP_TOKENS {
            return Err(LayoutError::TooManyTokens {
                global_batch: self.global_batch,
                seq: self.seq,
                tokens,
                max: MAX_SETUP_TOKENS,
            });
        }
        Ok(())
    }
}

/// FLOPs of one iteration, `B·s·[c·l·(2·N_mm + 4·s·h) + 6·h·V]`, where `N_mm` is the matmul
/// weights a token meets in one block, `c = 3` (forward + backward) or 4 with full
/// recomputation, and the logit layer is never recomputed. For a GPT model with full
/// recomputation this is Narayanan et al. 2021, Eq. 3: `96Bslh²(1 + s/(6h) + V/(16lh))`.
/// Selective recomputation adds the attention core's `4·s·h` per token per layer once more.
pub fn flops_per_iteration(
    model: &ModelSpec,
    seq: usize,
    global_batch: usize,
    recompute: Recompute,
) -> f64 {
    let (s, h, l, v) = (
        seq as f64,
        model.hidden as f64,
        model.layers as f64,
        model.vocab as f64,
    );
    let tokens = global_batch as f64 * s;
    // Attention scores and context: `4·s·q_dim` per token (`q_dim = h` unless head_dim is set;
    // multi-head latent attention: [`ModelSpec::attention_core_dim`]).
    let q = model.attention_core_dim();
    let per_layer_fwd = 2.0 * model.matmul_params_per_layer_active() as f64 + 4.0 * s * q;
    let layers = match recompute {
        Recompute::None => 3.0 * per_layer_fwd,
        Recompute::Selective => 3.0 * per_layer_fwd + 4.0 * s * q,
        Recompute::Full => 4.0 * per_layer_fwd,
    };
    tokens * (l * layers + 6.0 * h * v)
}

/// Narayanan et al. 2021, Eq. 3, as printed: `96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h))`.
pub fn narayanan_eq3_flops(
    batch: usize,
    seq: usize,
    layers: usize,
    hidden: usize,
    vocab: usize,
) -> f64 {
    let (b, s, l, h, v) = (
        batch as f64,
        seq as f64,
        layers as f64,
        hidden as f64,
        vocab as f64,
    );
    96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h))
}

/// Time of one transformer block for one micro-batch on one TP rank.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct LayerTime {
    pub forward_compute_s: f64,
    pub backward_compute_s: f64,
    /// Forward work done again in backward (selective: attention core; full: whole layer).
    pub recompute_s: f64,
    /// TP collectives (forward, backward and recomputed forward), not overlapped.
    pub tp_comm_s: f64,
    /// TP collectives per layer per micro-batch (all-reduces, or RS+AG pairs with SP).
    pub tp_collectives: usize,
    /// MoE all-to-alls (dispatch and combine, forward and backward) over the EP group.
    #[serde(default)]
    pub ep_comm_s: f64,
    /// MoE all-to-alls per layer per micro-batch (0 without expert parallelism).
    #[serde(default)]
    pub ep_all_to_alls: usize,
}

impl LayerTime {
    pub fn total_s(&self) -> f64 {
        self.forward_compute_s
            + self.backward_compute_s
            + self.recompute_s
            + self.tp_comm_s
            + self.ep_comm_s
    }
}

/// Bytes one GPU sends in one MoE all-to-all (the dispatch or the combine, forward or
/// backward) for `tokens` tokens with top-`k` routing over `ep` ranks, 2-byte activations:
/// `tokens·k·h·2·(ep−1)/ep`. Under balanced routing each of a token's `k` rows of `h` goes to
/// an expert on another rank with probability `(ep−1)/ep` (GShard, Lepikhin et al. 2020;
/// Megatron-Core's all-to-all token dispatcher); `tplab moe` counts the same rows exactly.
pub fn moe_all_to_all_bytes_per_gpu(model: &ModelSpec, tokens: u64, ep: usize) -> u64 {
    if ep <= 1 || model.experts <= 1 {
        return 0;
    }
    let e = ep as u128;
    let bytes = u128::from(tokens)
        * model.experts_per_token as u128
        * model.hidden as u128
        * u128::from(memory::ACTIVATION_BYTES)
        * (e - 1)
        / e;
    u64::try_from(bytes).unwrap_or(u64::MAX)
}

/// α–β time of an all-to-all in which every one of `n` ranks sends `bytes_sent_per_rank`: a
/// pairwise exchange of `n − 1` steps (NCCL runs it as `n − 1` send/receive pairs; the design
/// lab's price of an all-to-all counts the same steps), `(n−1)·α + bytes/(B·η_link)`.
pub fn all_to_all_time_s(n: usize, bytes_sent_per_rank: u64, link: &LinkSpec) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    (n - 1) as f64 * link.latency_us * 1e-6
        + bytes_sent_per_rank as f64 / (link.bandwidth_bytes_per_s() * LINK_EFFICIENCY)
}

/// The MoE all-to-alls of one layer and micro-batch of `tok` tokens: their time and count.
/// Each GPU dispatches its own tokens: a TP rank's `1/t` with sequence parallelism, the whole
/// micro-batch without it (every TP rank holds it whole).
pub(crate) fn moe_layer_comm(
    model: &ModelSpec,
    tok: f64,
    layout: &Layout,
    cluster: &Cluster,
) -> (f64, usize) {
    if layout.ep <= 1 || model.experts <= 1 {
        return (0.0, 0);
    }
    let tokens = if layout.sp {
        tok / layout.tp.max(1) as f64
    } else {
        tok
    };
    let n = 4 + if layout.recompute == Recompute::Full {
        2
    } else {
        0
    };
    let bytes = moe_all_to_all_bytes_per_gpu(model, tokens.ceil() as u64, layout.ep);
    let link = cluster.group_p2p_link(layout.tp, layout.ep);
    (n as f64 * all_to_all_time_s(layout.ep, bytes, &link), n)
}

/// Roofline time of a `[m,k]·[k,n]` GEMM in bf16.
fn gemm_s(m: f64, k: f64, n: f64, gpu: &GpuSpec) -> f64 {
    roofline_s(
        2.0 * m * k * n,
        2.0 * (m * k + k * n + m * n),
        gpu,
        DType::Bf16,
    )
}

/// Time of a memory-bound element-wise pass over `bytes`.
fn stream_s(bytes: f64, gpu: &GpuSpec) -> f64 {
    roofline_s(0.0, bytes, gpu, DType::Bf16)
}

/// Per-layer time for one micro-batch of `micro_batch` sequences of `seq` tokens at the
/// layout's TP, SP and recomputation, on `cluster` (the TP group spans nodes when
/// `tp > gpus_per_node`).
pub fn layer_time(model: &ModelSpec, seq: usize, layout: &Layout, cluster: &Cluster) -> LayerTime {
    let gpu = &cluster.gpu;
    let t = layout.tp.max(1) as f64;
    let (s, b) = (seq as f64, layout.micro_batch as f64);
    let (h, kv, f, a) = (
        model.hidden as f64,
        model.kv_dim() as f64,
        model.ffn as f64,
        model.heads as f64,
    );
    let tok = s * b;
    let k_exp = model.experts_per_token as f64;
    let mats = if model.gated_mlp { 2.0 } else { 1.0 }; // fc1-side matrices (gate+up or fc1)
                                                        // Forward GEMMs on one rank (weights split 1/t).
    let (d, q) = (model.head_dim() as f64, model.q_dim() as f64);
    let qkv = gemm_s(tok, h, (q + 2.0 * kv) / t, gpu);
    let scores = b * (a / t) * gemm_s(s, d, s, gpu); // QKᵀ per head
    let ctx = b * (a / t) * gemm_s(s, s, d, gpu); // softmax·V per head
    let out = gemm_s(tok, q / t, h, gpu);
    let fc1 = k_exp * mats * gemm_s(tok, h, f / t, gpu);
    let fc2 = k_exp * gemm_s(tok, f / t, h, gpu);
    // Element-wise passes (bytes read + written, 2-byte elements, 1-byte masks):
    // two LayerNorms (read+write) and two bias+dropout+residual adds: 8 + 14 bytes per
    // element of [s·b, h], split by SP; softmax + dropout 7 bytes per score; GeLU/SwiGLU.
    let outside = if layout.sp { 1.0 / t } else { 1.0 };
    let drop = if model.dropout { 1.0 } else { 0.0 };
    let ew_outside = stream_s((8.0 + 2.0 * (6.0 + drop)) * tok * h * outside, gpu);
    let softmax = stream_s((4.0 + 3.0 * drop) * a * s * s * b / t, gpu);
    let act = stream_s(k_exp * (2.0 * mats + 2.0) * tok * f / t, gpu);
    let attn_core = scores + ctx + softmax;
    let forward = qkv + out + fc1 + fc2 + attn_core + ew_outside + act;
    // Backward: input and weight gradients, twice the forward GEMM work; element-wise
    // backward reads about twice as much.
    let backward = 2.0 * forward;
    let recompute_s = match layout.recompute {
        Recompute::None => 0.0,
        Recompute::Selective => attn_core,
        Recompute::Full => forward,
    };
    // TP collectives: two per pass (g forward, f backward), two more when the forward is
    // recomputed in full. With SP each all-reduce becomes a reduce-scatter + all-gather pair.
    let n_coll = if layout.tp > 1 {
        4 + if layout.recompute == Recompute::Full {
            2
        } else {
            0
        }
    } else {
        0
    };
    let size = (2.0 * tok * h) as u64;
    let link = cluster.group_ring_link(1, layout.tp);
    let one = if layout.sp {
        ring_time_s(CollectiveKind::ReduceScatter, layout.tp, size, &link)
            + ring_time_s(CollectiveKind::AllGather, layout.tp, size, &link)
    } else {
        ring_time_s(CollectiveKind::AllReduce, layout.tp, size, &link)
    };
    let (ep_comm_s, ep_all_to_alls) = moe_layer_comm(model, tok, layout, cluster);
    LayerTime {
        forward_compute_s: forward,
        backward_compute_s: backward,
        recompute_s,
        tp_comm_s: n_coll as f64 * one,
        tp_collectives: n_coll,
        ep_comm_s,
        ep_all_to_alls,
    }
}

/// A layout's predicted iteration: time split, rates and memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterationTime {
    pub layout: Layout,
    pub iteration_time_s: f64,
    /// GEMMs and element-wise work of all micro-batches on the busiest stage (incl. recompute).
    pub compute_s: f64,
    /// TP collectives of all micro-batches.
    pub tp_comm_s: f64,
    /// MoE all-to-alls of all micro-batches (0 without expert parallelism).
    #[serde(default)]
    pub ep_comm_s: f64,
    /// Pipeline point-to-point sends of activations and their gradients.
    pub pp_comm_s: f64,
    /// 1F1B fill and drain: `(p−1)` micro-batch slots.
    pub pipeline_bubble_s: f64,
    /// Exposed data-parallel gradient all-reduce (after overlap).
    pub dp_comm_s: f64,
    /// Optimizer step (memory-bound).
    pub optimizer_s: f64,
    pub micro_batches: usize,
    /// `(p−1)/m`.
    pub bubble_fraction: f64,
    pub tp_spans_nodes: bool,
    pub pp_spans_nodes: bool,
    pub dp_spans_nodes: bool,
    /// Model FLOPs per iteration (no recomputation): the MFU numerator.
    pub model_flops: f64,
    /// FLOPs executed including recomputation (Narayanan's Eq. 3 convention).
    pub hardware_flops: f64,
    /// `hardware_flops / (iteration · GPUs)`, TFLOP/s: what Narayanan et al. report.
    pub tflops_per_gpu: f64,
    /// Model FLOPs utilisation: `model_flops / (iteration · GPUs · peak bf16)`.
    pub mfu: f64,
    pub tokens_per_s: f64,
    pub layer: LayerTime,
    pub memory: MemoryBreakdown,
    /// Usable memory per GPU (capacity × [`memory::USABLE_MEMORY_FRACTION`]).
    pub memory_limit_bytes: u64,
    pub fits: bool,
}

/// Checks that `layout` is valid for `model`, `setup` and `cluster`: the shape rules of
/// [`memory::check_layout`], `tp ≤ gpus`, `t·p·d = gpus`, and `B % (b·d) == 0`.
pub fn check_training_layout(
    model: &ModelSpec,
    setup: &TrainSetup,
    cluster: &Cluster,
    layout: &Layout,
) -> Result<(), LayoutError> {
    setup.validate()?;
    check_tp_fits(layout, cluster)?;
    memory::check_layout(model, layout)?;
    if layout.gpus() != cluster.gpus {
        return Err(LayoutError::GpuCountMismatch {
            tp: layout.tp,
            pp: layout.pp,
            dp: layout.dp,
            needed: layout.gpus(),
            gpus: cluster.gpus,
        });
    }
    check_batch(setup, layout)
}

/// `t ≤ gpus`: the tensor-parallel group fits in the cluster.
pub(crate) fn check_tp_fits(layout: &Layout, cluster: &Cluster) -> Result<(), LayoutError> {
    if layout.tp > cluster.gpus {
        return Err(LayoutError::TpLargerThanCluster {
            tp: layout.tp,
            gpus: cluster.gpus,
        });
    }
    Ok(())
}

/// `B % (b·d) == 0`: the global batch splits into whole micro-batches on every data-parallel
/// rank.
pub(crate) fn check_batch(setup: &TrainSetup, layout: &Layout) -> Result<(), LayoutError> {
    // Saturating: a b·d beyond usize divides no global batch, which is the right answer.
    if !setup
        .global_batch
        .is_multiple_of(layout.micro_batch.saturating_mul(layout.dp))
    {
        return Err(LayoutError::BatchNotDivisible {
            global_batch: setup.global_batch,
            micro_batch: layout.micro_batch,
            dp: layout.dp,
        });
    }
    Ok(())
}

/// Predicts one training iteration of `layout` (see the module docs for the model).
pub fn iteration_time(
    model: &ModelSpec,
    setup: &TrainSetup,
    cluster: &Cluster,
    layout: &Layout,
) -> Result<IterationTime, LayoutError> {
    check_training_layout(model, setup, cluster, layout)?;
    let gpu = &cluster.gpu;
    let (t, p, d) = (layout.tp, layout.pp, layout.dp);
    let m = setup.global_batch / (layout.micro_batch * d);
    let layer = layer_time(model, setup.seq, layout, cluster);
    let layers_per_stage = (model.layers / p) as f64;
    // The last stage also runs the vocabulary-parallel logits GEMM (fwd + 2× bwd).
    let tok = setup.seq as f64 * layout.micro_batch as f64;
    let logits_s = 3.0 * gemm_s(tok, model.hidden as f64, model.vocab as f64 / t as f64, gpu);
    let stage_compute = layers_per_stage
        * (layer.forward_compute_s + layer.backward_compute_s + layer.recompute_s)
        + logits_s;
    let stage_tp = layers_per_stage * layer.tp_comm_s;
    let stage_ep = layers_per_stage * layer.ep_comm_s;
    // Pipeline sends: activations forward, gradients backward, `2sbh` bytes each, split over
    // the t ranks of the stage (Narayanan et al. 2021, §4.1 scatter/gather).
    let pp_stride = t * d;
    let pp_link = cluster.group_link(pp_stride, p);
    let p2p_s = if p > 1 {
        let bytes = 2.0 * tok * model.hidden as f64 / t as f64;
        2.0 * (pp_link.latency_us * 1e-6 + bytes / cluster.p2p_bytes_per_s(pp_stride, p))
    } else {
        0.0
    };
    let slot = stage_compute + stage_tp + stage_ep + p2p_s;
    let compute_s = m as f64 * stage_compute;
    let tp_comm_s = m as f64 * stage_tp;
    let ep_comm_s = m as f64 * stage_ep;
    let pp_comm_s = m as f64 * p2p_s;
    let pipeline_bubble_s = (p - 1) as f64 * slot;
    // Data-parallel gradient reduction of the 2-byte gradients (ZeRO 1/2: reduce-scatter +
    // all-gather, the same bytes; ZeRO-3 adds a parameter all-gather: 1.5×, ZeRO §7).
    let mem = memory::training_memory(model, setup.seq, setup.global_batch, layout);
    let dp_link = &cluster.group_ring_link(t, d);
    let grad_bytes = mem.params_per_gpu.saturating_mul(2);
    let zero3 = if layout.zero >= 3 { 1.5 } else { 1.0 };
    let dp_full = zero3 * ring_time_s(CollectiveKind::AllReduce, d, grad_bytes, dp_link);
    let last_backward = layers_per_stage * layer.backward_compute_s;
    let dp_comm_s = if setup.overlap_dp {
        (dp_full - last_backward).max(0.0)
    } else {
        dp_full
    };
    let opt_params = if layout.zero >= 1 {
        mem.params_per_gpu as f64 / d as f64
    } else {
        mem.params_per_gpu as f64
    };
    let optimizer_s = stream_s(ADAM_STEP_BYTES_PER_PARAM * opt_params, gpu);
    let iteration_time_s =
        compute_s + tp_comm_s + ep_comm_s + pp_comm_s + pipeline_bubble_s + dp_comm_s + optimizer_s;
    let model_flops = flops_per_iteration(model, setup.seq, setup.global_batch, Recompute::None);
    let hardware_flops =
        flops_per_iteration(model, setup.seq, setup.global_batch, layout.recompute);
    let rates = Rates::of(
        model_flops,
        hardware_flops,
        iteration_time_s,
        setup,
        cluster,
    );
    Ok(IterationTime {
        layout: *layout,
        iteration_time_s,
        compute_s,
        tp_comm_s,
        ep_comm_s,
        pp_comm_s,
        pipeline_bubble_s,
        dp_comm_s,
        optimizer_s,
        micro_batches: m,
        bubble_fraction: (p - 1) as f64 / m as f64,
        tp_spans_nodes: cluster.group_spans_nodes(1, t),
        pp_spans_nodes: cluster.group_spans_nodes(pp_stride, p),
        dp_spans_nodes: cluster.group_spans_nodes(t, d),
        model_flops,
        hardware_flops,
        tflops_per_gpu: rates.tflops_per_gpu,
        mfu: rates.mfu,
        tokens_per_s: rates.tokens_per_s,
        layer,
        fits: mem.total_bytes <= rates.memory_limit_bytes,
        memory: mem,
        memory_limit_bytes: rates.memory_limit_bytes,
    })
}

/// What follows from an iteration's FLOPs and time on a cluster, the same for both cost models
/// (this one and [`crate::capacity::stack`]'s).
pub(crate) struct Rates {
    /// Hardware FLOP/s per GPU in TFLOP/s (Narayanan et al.'s figure).
    pub tflops_per_gpu: f64,
    /// Model FLOPs over the GPUs' bf16 peak.
    pub mfu: f64,
    pub tokens_per_s: f64,
    /// Capacity × [`memory::USABLE_MEMORY_FRACTION`].
    pub memory_limit_bytes: u64,
}

impl Rates {
    pub(crate) fn of(
        model_flops: f64,
        hardware_flops: f64,
        iteration_time_s: f64,
        setup: &TrainSetup,
        cluster: &Cluster,
    ) -> Rates {
        let (n, gpu) = (cluster.gpus as f64, &cluster.gpu);
        Rates {
            tflops_per_gpu: hardware_flops / (iteration_time_s * n) / 1e12,
            mfu: model_flops / (iteration_time_s * n * gpu.peak_flops(DType::Bf16)),
            tokens_per_s: setup.global_batch as f64 * setup.seq as f64 / iteration_time_s,
            memory_limit_bytes: (gpu.memory_bytes() * memory::USABLE_MEMORY_FRACTION) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::hardware::Catalogue;
    use crate::config::Config;

    fn link(bw: f64, lat: f64) -> LinkSpec {
        LinkSpec {
            name: "test".into(),
            display: String::new(),
            bandwidth_gbs: bw,
            latency_us: lat,
        }
    }

    /// Mixtral 8x7B, one sequence of 4096 tokens per GPU, EP 8: each all-to-all sends
    /// `4096·2·4096·2·(8−1)/8 = 58,720,256` bytes per GPU (56 MiB: 2 rows of 8 KiB per token,
    /// 7/8 of them to other GPUs); a layer runs 4 (dispatch and combine, forward and backward),
    /// each `7·α + bytes/(B·η)` on the EP group's link.
    #[test]
    fn moe_all_to_alls_are_priced_from_their_bytes() {
        let m = crate::capacity::models::ModelPreset::Mixtral8x7b.spec();
        assert_eq!(moe_all_to_all_bytes_per_gpu(&m, 4096, 8), 58_720_256);
        assert_eq!(moe_all_to_all_bytes_per_gpu(&m, 4096, 1), 0);
        let dense = crate::capacity::models::ModelPreset::Llama3_8b.spec();
        assert_eq!(moe_all_to_all_bytes_per_gpu(&dense, 4096, 8), 0);
        let cluster = Cluster::new(&Catalogue::default(), "h100", 8, 8, "ib400").unwrap();
        let layout = Layout {
            ep: 8,
            ..Layout::new(1, 1, 8)
        };
        let lt = layer_time(&m, 4096, &layout, &cluster);
        let nv = cluster.group_link(1, 8);
        let one = 7.0 * nv.latency_us * 1e-6
            + 58_720_256.0 / (nv.bandwidth_bytes_per_s() * LINK_EFFICIENCY);
        assert_eq!(lt.ep_all_to_alls, 4);
        assert!((lt.ep_comm_s - 4.0 * one).abs() < 1e-12, "{}", lt.ep_comm_s);
        // Across nodes (EP 16 on 2 nodes of 8) the same bytes cross InfiniBand: slower.
        let two_nodes = Cluster::new(&Catalogue::default(), "h100", 16, 8, "ib400").unwrap();
        let wide = Layout {
            ep: 8,
            ..Layout::new(2, 1, 8)
        };
        let across = layer_time(&m, 4096, &wide, &two_nodes);
        assert!(two_nodes.group_spans_nodes(2, 8));
        assert!(across.ep_comm_s > lt.ep_comm_s);
        // The iteration adds them; a dense layout has none.
        let setup = TrainSetup::new(4096, 64);
        let it = iteration_time(&m, &setup, &cluster, &layout).unwrap();
        assert!((it.ep_comm_s - it.micro_batches as f64 * 32.0 * lt.ep_comm_s).abs() < 1e-9);
        let no_ep = iteration_time(&m, &setup, &cluster, &Layout::new(1, 1, 8)).unwrap();
        assert_eq!(no_ep.ep_comm_s, 0.0);
    }

    #[test]
    fn ring_busbw_equals_link_rate() {
        // With α = 0 a ring all-reduce is bandwidth-optimal: busbw = B·η for every n, and
        // busbw = algbw·2(n−1)/n (nccl-tests' definition).
        let l = link(300.0, 0.0);
        for n in [2usize, 3, 4, 8, 16] {
            let size = 1u64 << 30; // divisible by n up to rounding of 1 byte per chunk
            let time =
                collective_time_s(CollectiveKind::AllReduce, Algorithm::Ring, n, size, &l).unwrap();
            let algbw = algbw_bytes_per_s(size, time);
            let busbw = busbw_bytes_per_s(CollectiveKind::AllReduce, n, size, time);
            assert!((busbw - algbw * 2.0 * (n as f64 - 1.0) / n as f64).abs() < 1e-6 * busbw);
            // Tolerance: div_ceil rounds each chunk up by < 1 byte out of 2^30/n.
            let rel = (busbw - 300e9 * LINK_EFFICIENCY).abs() / (300e9 * LINK_EFFICIENCY);
            assert!(rel < 1e-8, "n={n}: busbw {busbw}");
            for kind in [CollectiveKind::AllGather, CollectiveKind::ReduceScatter] {
                let t = collective_time_s(kind, Algorithm::Ring, n, size, &l).unwrap();
                let bus = busbw_bytes_per_s(kind, n, size, t);
                assert!((bus - 300e9 * LINK_EFFICIENCY).abs() / bus < 1e-8);
            }
        }
    }

    #[test]
    fn latency_term_counts_steps() {
        // Zero bytes: only α·steps remains: ring 2(n−1), tree 2⌈log2 n⌉.
        let l = link(100.0, 10.0);
        let ring = collective_time_s(CollectiveKind::AllReduce, Algorithm::Ring, 8, 0, &l).unwrap();
        let tree = collective_time_s(CollectiveKind::AllReduce, Algorithm::Tree, 8, 0, &l).unwrap();
        assert!((ring - 14.0 * 10e-6).abs() < 1e-15);
        assert!((tree - 6.0 * 10e-6).abs() < 1e-15);
        // Small messages favour tree, large ones ring.
        let big = 1u64 << 30;
        assert!(
            collective_time_s(CollectiveKind::AllReduce, Algorithm::Ring, 8, big, &l).unwrap()
                < collective_time_s(CollectiveKind::AllReduce, Algorithm::Tree, 8, big, &l)
                    .unwrap()
        );
    }

    #[test]
    fn tp_across_nodes_pays_infiniband() {
        let cat = Catalogue::default();
        let c = Cluster::new(&cat, "a100", 16, 8, "ib200").unwrap();
        let m = crate::capacity::models::ModelPreset::Gpt3_175b.spec();
        let lay = |tp| Layout::new(tp, 1, 16 / tp);
        let t8 = layer_time(&m, 2048, &lay(8), &c);
        let t16 = layer_time(&m, 2048, &lay(16), &c);
        // DGX A100, 8 HDR NICs per node: the 16-way ring runs at the node's NICs, 8 × 25 ×
        // 0.94 = 188 GB/s against NVLink's 240, with 2 network steps of 6 µs; more bytes
        // (2·15/16 against 2·7/8) and the latency: 1.3–2× TP 8's time, not a cliff.
        let r = t16.tp_comm_s / t8.tp_comm_s;
        assert!(
            (1.3..2.0).contains(&r),
            "{} vs {}",
            t16.tp_comm_s,
            t8.tp_comm_s
        );
        // One HDR NIC per node: the ring runs at 23.5 GB/s, ~10× slower per byte.
        let thin = c.clone().with_nics(1).unwrap();
        let t16_thin = layer_time(&m, 2048, &lay(16), &thin);
        assert!(
            t16_thin.tp_comm_s > 8.0 * t8.tp_comm_s,
            "{} vs {}",
            t16_thin.tp_comm_s,
            t8.tp_comm_s
        );
        assert!(c.clone().with_nics(65).is_err());
    }

    #[test]
    fn trace_gets_modeled_times() {
        let cat = Catalogue::default();
        let c = Cluster::new(&cat, "h100", 8, 8, "ib400").unwrap();
        let cfg = Config::default();
        let mut tr = crate::block::program::schedule(&cfg).expect("Megatron's plan propagates");
        apply_to_trace(&mut tr, &c);
        assert_eq!(tr.time_source, TimeSource::CostModel);
        let fc1 = tr
            .events
            .iter()
            .find(|e| e.op == crate::block::Op::Fc1)
            .unwrap();
        let want = roofline_s(fc1.flops as f64, fc1.bytes as f64, &c.gpu, cfg.dtype);
        assert_eq!(fc1.timing.duration_s, want);
        let ar = tr
            .events
            .iter()
            .find(|e| e.op == crate::block::Op::AttnG)
            .unwrap();
        assert!(ar.timing.duration_s > 0.0);
        let id = tr
            .events
            .iter()
            .find(|e| e.op == crate::block::Op::AttnF)
            .unwrap();
        assert_eq!(id.timing.duration_s, 0.0);
    }
}
