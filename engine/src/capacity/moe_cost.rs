//! What a Mixture-of-Experts layer costs beyond its FLOPs, under today's stack
//! ([`crate::capacity::stack`]): the router, the token permutations around the all-to-alls,
//! the routed experts as grouped GEMMs whose efficiency falls with small experts, the load of
//! the busiest expert-parallel rank, and the all-to-alls over the EP group priced by the NCCL
//! model ([`crate::capacity::nccl`], which spreads traffic across nodes over the node's NICs).
//!
//! One MoE layer, one micro-batch, one GPU, Megatron-Core's all-to-all token dispatcher
//! (`megatron/core/transformer/moe/token_dispatcher.py`, `MoEAlltoAllTokenDispatcher`):
//!
//! ```text
//!  tokens [T, h] ─ router (h×E GEMM, softmax/top-k) ─ permute 1 (T·k rows, grouped by EP rank)
//!    ─ all-to-all (dispatch) ─ [ETP all-gather] ─ permute 2 (sort by local expert, E/ep > 1)
//!    ─ grouped GEMMs fc1, act, fc2 (E/ep experts, M_e rows each) ─ unpermute 2
//!    ─ [ETP reduce-scatter] ─ all-to-all (combine) ─ unpermute 1 (weighted sum of k rows) ─ [T, h]
//! ```
//!
//! and the mirror image backward. `T` is the tokens this GPU dispatches: `s·b/t` with sequence
//! parallelism. Every constant is listed with its source in `docs/calibration.md` ("MoE").

use crate::capacity::hardware::{Cluster, GpuSpec};
use crate::capacity::memory::{Layout, Recompute};
use crate::capacity::models::ModelSpec;
use crate::capacity::nccl;
use crate::capacity::stack::Generation;
use crate::collectives::CollectiveKind;
use serde::{Deserialize, Serialize};

/// How tokens are assigned to experts, for the load of the busiest expert-parallel rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum MoeRouting {
    /// Dropless routing as trained (Megatron-Core's default, MegaBlocks, DeepSeek-V3): every
    /// token reaches its `k` experts; the busiest rank gets [`DROPLESS_BUSIEST_OVER_MEAN`] of
    /// the mean load, and every rank waits for it at the all-to-all.
    #[default]
    Dropless,
    /// Dropless with the load forced even (Megatron's `--moe-router-force-load-balancing`, the
    /// setting of NVIDIA's published MoE benchmarks): every rank the mean load.
    ForceBalanced,
    /// Token dropping with a capacity factor, each expert's input padded to its capacity
    /// (Megatron's `--moe-expert-capacity-factor` with `--moe-pad-expert-input-to-capacity`):
    /// every expert computes and exchanges `factor × mean` rows. The factor in percent.
    Capacity { factor_percent: u16 },
}

impl MoeRouting {
    /// The busiest rank's load over the mean: what the experts' GEMMs and the all-to-alls pay.
    pub fn busiest_over_mean(self) -> f64 {
        match self {
            MoeRouting::Dropless => DROPLESS_BUSIEST_OVER_MEAN,
            MoeRouting::ForceBalanced => 1.0,
            MoeRouting::Capacity { factor_percent } => f64::from(factor_percent.max(1)) / 100.0,
        }
    }

    /// Short name for labels: `dropless`, `balanced`, `capacity-1.25`.
    pub fn name(self) -> String {
        match self {
            MoeRouting::Dropless => "dropless".to_string(),
            MoeRouting::ForceBalanced => "balanced".to_string(),
            MoeRouting::Capacity { factor_percent } => {
                format!("capacity-{}", f64::from(factor_percent) / 100.0)
            }
        }
    }
}

impl std::str::FromStr for MoeRouting {
    type Err = String;
    /// `dropless`, `balanced`, or `capacity=F` (F from 0.01 to 10, e.g. `capacity=1.0`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let key = s.trim().to_ascii_lowercase();
        match key.as_str() {
            "dropless" => return Ok(MoeRouting::Dropless),
            "balanced" | "force-balanced" => return Ok(MoeRouting::ForceBalanced),
            _ => {}
        }
        let bad = || {
            format!(
                "unknown MoE routing '{s}'; expected dropless, balanced or capacity=F with F \
                 from 0.01 to 10 (e.g. capacity=1.0)"
            )
        };
        let f: f64 = key
            .strip_prefix("capacity=")
            .ok_or_else(bad)?
            .parse()
            .map_err(|_| bad())?;
        if !(0.01..=10.0).contains(&f) {
            return Err(bad());
        }
        Ok(MoeRouting::Capacity {
            factor_percent: (f * 100.0).round() as u16,
        })
    }
}

/// The busiest expert's token load over the mean under dropless routing with an auxiliary
/// load-balancing loss: 1.084, the mean over 16 MoE layers of max/mean of the per-expert
/// token counts that shawntan/scattermoe issue #10 prints for a model trained with a balancing
/// loss (8 experts, 5,120 assignments a layer; from 1.019 to 1.220). Random routing alone would
/// give about 1.05 there (the largest of 8 multinomial counts, mean + 1.42σ). A measured figure
/// from one small model, not fitted to any throughput; NVIDIA's published MoE benchmarks force
/// the load even ([`MoeRouting::ForceBalanced`]).
pub const DROPLESS_BUSIEST_OVER_MEAN: f64 = 1.084;

/// The share of the NCCL model's rate ([`nccl`], each GPU's traffic to other nodes through
/// its NIC at [`crate::capacity::hardware::NET_EFFICIENCY`]) that an expert-parallel
/// all-to-all across nodes reaches in training: 0.67. **Fitted** on the six Qwen3-235B-A22B
/// H100 runs of Megatron-Bridge (NCCL all-to-all dispatcher, EP 32 over 4 nodes; mean absolute
/// error 2.8%; docs/calibration.md, "MoE training"), with and without EP overlap alike; held
/// out, DeepSeek-V3 (DeepEP, EP 64 over 8 nodes) lands at −2.5%. Consistent in direction with
/// nccl-tests' all-to-all across 8 H800 nodes (NVIDIA/nccl#1531: 24–28 GB/s bus bandwidth at
/// 8 MB, about half of the NIC model's); the model's ring and tree collectives across nodes keep
/// the NIC rate, which all-reduces do reach (section "Collectives across nodes"). Within a node
/// the all-to-all runs at NVLink × `LINK_EFFICIENCY`, not fitted.
pub const ALL_TO_ALL_ACROSS_NODES_EFFICIENCY: f64 = 0.67;

/// Output tile of a grouped GEMM, rows × columns: 128 × 128, the common CUTLASS/cuBLAS Hopper
/// tile for bf16/FP8 (an **assumption**: the tiles cuBLAS picks are not published).
pub const GEMM_TILE: f64 = 128.0;

/// A GEMM's fixed cost per output tile (prologue, epilogue, pipeline fill) in elements of its
/// depth `K`: 470. Fitted on DeepGEMM's published H800 FP8 table (deepseek-ai/DeepGEMM
/// `README.md` at 327ec92, "Normal GEMMs" with M = 4096 and the contiguous grouped GEMMs, 10
/// shapes): `TFLOP/s = peak' · waves(M, N) · K/(K + K₀)` reproduces all ten within ±6%
/// (K = 512: 775 published, 778 predicted; K = 16384: 1520, 1428). Not fitted to training
/// throughput.
pub const GEMM_DEPTH_K0: f64 = 470.0;

/// Streaming multiprocessors per GPU, for the tile waves: V100 80, A100 108, H100/H200 132,
/// B200 148 (NVIDIA's architecture whitepapers and datasheets). `None` for a user GPU (no wave
/// quantisation priced).
pub fn sm_count(gpu: &GpuSpec) -> Option<f64> {
    match Generation::of(gpu) {
        Generation::Volta => Some(80.0),
        Generation::Ampere => Some(108.0),
        Generation::Hopper => Some(132.0),
        Generation::Blackwell => Some(148.0),
        Generation::Other => None,
    }
}

/// Fraction of the tensor cores a GEMM keeps busy, relative to a large GEMM of depth `k_ref`:
/// `groups` GEMMs of `m × n × k` (a grouped GEMM, one per local expert) as
///
/// - **tile waves**: `groups·⌈m/128⌉·⌈n/128⌉` output tiles on `sms` SMs run in
///   `⌈tiles/sms⌉` waves; the useful share is `groups·m·n / (waves·sms·128²)`;
/// - **depth**: each tile pays a fixed cost of [`GEMM_DEPTH_K0`] elements of `k` besides its
///   `k`, so a shallow GEMM runs at `k/(k + K₀)` of a deep one's rate, counted against the
///   model's own dense GEMMs (`k_ref = h`, whose rate the efficiency constants hold), at most 1.
pub fn gemm_utilisation(groups: f64, m: f64, n: f64, k: f64, k_ref: f64, sms: Option<f64>) -> f64 {
    if groups <= 0.0 || m <= 0.0 || n <= 0.0 || k <= 0.0 {
        return 1.0;
    }
    let waves = match sms {
        Some(sms) if sms > 0.0 => {
            let tiles = groups * (m / GEMM_TILE).ceil() * (n / GEMM_TILE).ceil();
            let waves = (tiles / sms).ceil();
            (groups * m * n / (waves * sms * GEMM_TILE * GEMM_TILE)).min(1.0)
        }
        _ => 1.0,
    };
    let depth = |x: f64| x / (x + GEMM_DEPTH_K0);
    let deep = if k_ref > 0.0 {
        (depth(k) / depth(k_ref)).min(1.0)
    } else {
        1.0
    };
    waves * deep
}

/// What the layout's experts look like on one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct ExpertShape {
    /// Experts on this GPU, `E/ep`.
    pub local_experts: f64,
    /// Rows each local expert multiplies at the mean load (`M_e`).
    pub rows_per_expert: f64,
    /// Tokens this GPU dispatches, `s·b/t` with sequence parallelism.
    pub tokens_dispatched: f64,
    /// Expert tensor-parallel size (the experts' matrices split `1/etp`).
    pub etp: usize,
}

/// The experts' shape on one GPU for `tok` tokens a TP group holds (one micro-batch).
pub fn expert_shape(model: &ModelSpec, tok: f64, layout: &Layout) -> ExpertShape {
    let t = layout.tp.max(1) as f64;
    let ep = layout.ep.max(1) as f64;
    let etp = layout.expert_tp();
    let local = (model.experts.max(1) as f64 / ep).max(1.0);
    let dispatched = if layout.sp || layout.tp <= 1 {
        tok / t
    } else {
        tok
    };
    // Balanced: the EP group's `ep · T · k` rows spread over its E experts; each expert's rows
    // are gathered from its `etp` expert-TP ranks.
    let rows =
        (tok / t) * model.experts_per_token as f64 * ep * etp as f64 / model.experts.max(1) as f64;
    ExpertShape {
        local_experts: local,
        rows_per_expert: rows,
        tokens_dispatched: dispatched,
        etp,
    }
}

/// Grouped-GEMM utilisation of the routed experts' forward and backward GEMMs
/// ([`gemm_utilisation`]), FLOP-weighted: forward fc1 (`M_e × mats·f/etp × h`) and fc2
/// (`M_e × h × f/etp`), their data gradients (depths `mats·f/etp` and `h`) and weight gradients
/// (depth `M_e`: the rows, shallow for fine-grained experts).
pub fn expert_gemm_utilisation(model: &ModelSpec, shape: &ExpertShape, gpu: &GpuSpec) -> f64 {
    let sms = sm_count(gpu);
    let (h, f) = (
        model.hidden as f64,
        model.ffn as f64 / shape.etp.max(1) as f64,
    );
    let up = if model.gated_mlp { 2.0 * f } else { f };
    let (g, m) = (shape.local_experts, shape.rows_per_expert);
    if m <= 0.0 {
        return 1.0;
    }
    // (flops weight, m, n, k) of each GEMM; fc1 carries `up/(up + f)` of the work.
    let gemms = [
        (up, m, up, h),
        (f, m, h, f),
        (up, m, h, up),
        (f, m, f, h),
        (up, h, up, m),
        (f, f, h, m),
    ];
    let (mut work, mut time) = (0.0, 0.0);
    for (w, mm, nn, kk) in gemms {
        let u = gemm_utilisation(g, mm, nn, kk, h, sms);
        work += w;
        time += w / u.max(1e-6);
    }
    if time > 0.0 {
        work / time
    } else {
        1.0
    }
}

/// HBM bytes of the token permutations of one MoE layer and micro-batch on one GPU, forward
/// and backward, bf16, for `rows` = `T·k` rows this GPU dispatches (× the capacity factor
/// when padded), `tokens` = `T`, `h` wide, and `sorted_rows` received rows sorted by local
/// expert (0 when `E/ep = 1`: "when EP = num_experts, local token permutation is eliminated",
/// Megatron-Core MoE README). Counted from Megatron-Core's dispatcher:
///
/// - forward: permute 1 gathers `k` copies of each token (read + write `4·R`), unpermute 1
///   reads the `R` expert outputs and writes the weighted sum (`2·R + 2·T`), permute 2 and
///   unpermute 2 each read and write the received rows (`8·R₂`);
/// - backward: unpermute 1's gradient is a permute (`4·R`) plus the routing weights' gradient,
///   which reads the saved expert outputs again (`2·R`); permute 1's is an unpermute
///   (`2·R + 2·T`); the two sorts again (`8·R₂`).
///
/// `R = rows·h`, `T = tokens·h`, `R₂ = sorted_rows·h`, in elements.
pub fn permutation_bytes(rows: f64, tokens: f64, sorted_rows: f64, h: f64) -> (f64, f64) {
    let (r, t, r2) = (rows * h, tokens * h, sorted_rows * h);
    let fwd = 4.0 * r + (2.0 * r + 2.0 * t) + 8.0 * r2;
    let bwd = (4.0 * r + 2.0 * r) + (2.0 * r + 2.0 * t) + 8.0 * r2;
    (fwd, bwd)
}

/// HBM bytes of the router beyond its GEMM, forward and backward, for `tokens` tokens and
/// `experts` logits each in fp32 (Megatron computes the scores in fp32): the score function
/// (softmax or sigmoid: read and write, 8 B a logit), top-k (read, 4 B), each way.
pub fn router_bytes(tokens: f64, experts: f64) -> (f64, f64) {
    let per_logit = 8.0 + 4.0;
    (per_logit * tokens * experts, per_logit * tokens * experts)
}

/// SMs the expert-parallel dispatch and combine kernels hold while they run: 24, DeepEP's
/// count for DeepSeek-V3-like training before its V2 (deepseek-ai/DeepEP `README.md`: "For
/// V3-like legacy training, SM usage reduced from 24 to 4 - 6"); NCCL's all-to-all runs on
/// channels that likewise occupy SMs.
pub const EP_COMM_SMS: f64 = 24.0;

/// The part of `comm_s` of communication that overlapping with `compute_s` of computation
/// (Megatron-Core's `--overlap-moe-expert-parallel-comm`) leaves on the critical path. While
/// the communication runs, its kernels hold [`EP_COMM_SMS`] of the GPU's SMs and the
/// computation runs at the rest's pace: with `f` that share, the pair takes
/// `max(comm, compute + f·comm)`, so `max(comm − compute, f·comm)` is exposed.
pub fn overlapped_comm_exposed_s(comm_s: f64, compute_s: f64, gpu: &GpuSpec) -> f64 {
    let f = EP_COMM_SMS / sm_count(gpu).unwrap_or(132.0);
    (comm_s - compute_s).max(f * comm_s).max(0.0)
}

/// One MoE layer's costs on one GPU for one micro-batch (averaged over the layers, like the
/// rest of [`crate::capacity::stack::LayerCost`], when some layers are dense).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct MoeLayerCost {
    /// Routed experts' GEMMs, forward + backward, at the busiest rank's load and the grouped
    /// GEMMs' utilisation.
    pub expert_gemm_s: f64,
    /// Their forward part.
    pub expert_gemm_fwd_s: f64,
    /// Router passes, permutations and the FP8 casts of the dispatched rows, forward + backward.
    pub dispatch_s: f64,
    /// Their forward part.
    pub dispatch_fwd_s: f64,
    /// All-to-alls over the EP group and the expert-TP all-gathers/reduce-scatters, all of them.
    pub comm_s: f64,
    /// All-to-alls per layer and micro-batch.
    pub all_to_alls: usize,
    /// The busiest rank's load over the mean.
    pub busiest_over_mean: f64,
    /// The experts' grouped-GEMM utilisation ([`expert_gemm_utilisation`]).
    pub grouped_gemm_utilisation: f64,
    /// The experts' shape on this GPU.
    pub shape: ExpertShape,
}

/// Prices one layer's MoE work for `tok` tokens of a TP group (one micro-batch): `routed_fwd_s`
/// is the routed experts' forward GEMM time at the mean load and the dense GEMMs' rate, and
/// `stream_s` the time of a memory-bound pass over some bytes. `fp8` adds the cast of the
/// dispatched rows to FP8 (read 2, write 1 byte each). A dense model costs nothing.
#[allow(clippy::too_many_arguments)]
pub fn moe_layer_cost(
    model: &ModelSpec,
    tok: f64,
    layout: &Layout,
    cluster: &Cluster,
    routing: MoeRouting,
    routed_fwd_s: f64,
    fp8: bool,
    stream_s: impl Fn(f64) -> f64,
) -> MoeLayerCost {
    if model.experts <= 1 {
        return MoeLayerCost::default();
    }
    let share = model.moe_layers() as f64 / model.layers.max(1) as f64;
    let shape = expert_shape(model, tok, layout);
    let busiest = routing.busiest_over_mean();
    let util = expert_gemm_utilisation(model, &shape, &cluster.gpu);
    let expert_fwd = routed_fwd_s * busiest / util;
    let k = model.experts_per_token as f64;
    let h = model.hidden as f64;
    let pad = match routing {
        MoeRouting::Capacity { .. } => busiest,
        _ => 1.0,
    };
    let tokens = shape.tokens_dispatched;
    let rows = tokens * k * pad;
    let sorted = if shape.local_experts > 1.0 && layout.ep > 1 {
        rows * shape.etp as f64
    } else {
        0.0
    };
    let (perm_f, perm_b) = permutation_bytes(rows, tokens, sorted, h);
    let (route_f, route_b) = router_bytes(tokens, model.experts as f64);
    let cast = if fp8 { 3.0 * rows * h } else { 0.0 };
    let dispatch_fwd = share * stream_s(perm_f + route_f + cast);
    let dispatch = dispatch_fwd + share * stream_s(perm_b + route_b + cast);
    // All-to-alls: dispatch and combine, forward and backward (and again with a full
    // recomputation), each GPU sending its `T·k` rows of `h` bf16 values, `1/ep` of them to
    // each rank of the EP group (ranks `etp` apart: Megatron-Core orders expert ranks
    // etp-ep-edp); the busiest receiver sets the pace.
    let n = if layout.ep > 1 {
        4 + if layout.recompute == Recompute::Full {
            2
        } else {
            0
        }
    } else {
        0
    };
    let a2a_bytes = (rows * h * 2.0).ceil() as u64;
    let across_nodes = cluster.group_spans_nodes(shape.etp, layout.ep);
    let one_a2a = if layout.ep > 1 {
        nccl::group_time_s(
            cluster,
            CollectiveKind::AllToAll,
            shape.etp,
            layout.ep,
            a2a_bytes,
        ) / if across_nodes {
            ALL_TO_ALL_ACROSS_NODES_EFFICIENCY
        } else {
            1.0
        } * if matches!(routing, MoeRouting::Capacity { .. }) {
            1.0
        } else {
            busiest
        }
    } else {
        0.0
    };
    // Expert tensor parallelism: the received rows all-gathered over the expert-TP group
    // before the experts and reduce-scattered after, forward and backward (and again with a
    // full recomputation). When the expert-TP group is the TP group, the layer's TP
    // collectives already count one all-gather and one reduce-scatter of the tokens for the
    // MLP: only the excess of the `k` rows a token is priced here.
    let etp_comm = if shape.etp > 1 {
        let pair = |rows: f64| {
            let size = (rows * h * 2.0 * shape.etp as f64).ceil() as u64;
            nccl::group_time_s(cluster, CollectiveKind::AllGather, 1, shape.etp, size)
                + nccl::group_time_s(cluster, CollectiveKind::ReduceScatter, 1, shape.etp, size)
        };
        let counted = if shape.etp == layout.tp {
            pair(tokens)
        } else {
            0.0
        };
        let passes = if layout.recompute == Recompute::Full {
            3.0
        } else {
            2.0
        };
        passes * (pair(rows) - counted).max(0.0)
    } else {
        0.0
    };
    MoeLayerCost {
        expert_gemm_s: 3.0 * expert_fwd,
        expert_gemm_fwd_s: expert_fwd,
        dispatch_s: dispatch,
        dispatch_fwd_s: dispatch_fwd,
        comm_s: share * (n as f64 * one_a2a + etp_comm),
        all_to_alls: n,
        busiest_over_mean: busiest,
        grouped_gemm_utilisation: util,
        shape,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The depth-and-waves rule against the shapes it was fitted on (DeepGEMM, H800 FP8): the
    /// ratios between shapes, which is all the cost model uses, within 8%.
    #[test]
    fn gemm_utilisation_follows_deepgemm_s_table() {
        let sms = Some(132.0);
        // (m, n, k, published TFLOP/s)
        let rows = [
            (4096.0, 2112.0, 7168.0, 1127.0),
            (4096.0, 24576.0, 1536.0, 1212.0),
            (4096.0, 32768.0, 512.0, 775.0),
            (4096.0, 7168.0, 16384.0, 1520.0),
            (4096.0, 4096.0, 7168.0, 1410.0),
            (4096.0, 7168.0, 2048.0, 1168.0),
        ];
        let (m0, n0, k0, t0) = rows[4];
        let u0 = gemm_utilisation(1.0, m0, n0, k0, 1e12, sms);
        for (m, n, k, tflops) in rows {
            let u = gemm_utilisation(1.0, m, n, k, 1e12, sms);
            let predicted = t0 * u / u0;
            assert!(
                (predicted / tflops - 1.0).abs() < 0.08,
                "{m}×{n}×{k}: {predicted:.0} vs {tflops}"
            );
        }
        // Against the model's own K = h, a deeper GEMM is not faster.
        assert_eq!(
            gemm_utilisation(1.0, 8192.0, 8192.0, 16384.0, 4096.0, None),
            1.0
        );
        // A 32-row expert fills a quarter of its 128-row tiles.
        let small = gemm_utilisation(1024.0, 32.0, 4096.0, 4096.0, 4096.0, sms);
        assert!((small - 0.25).abs() < 0.01, "{small}");
    }

    #[test]
    fn routing_parses_and_names() {
        assert_eq!("dropless".parse(), Ok(MoeRouting::Dropless));
        assert_eq!("balanced".parse(), Ok(MoeRouting::ForceBalanced));
        let c: MoeRouting = "capacity=1.25".parse().unwrap_or_default();
        assert_eq!(
            c,
            MoeRouting::Capacity {
                factor_percent: 125
            }
        );
        assert_eq!(c.busiest_over_mean(), 1.25);
        assert_eq!(c.name(), "capacity-1.25");
        assert!("capacity=0".parse::<MoeRouting>().is_err());
        assert!("sometimes".parse::<MoeRouting>().is_err());
    }

    #[test]
    fn permutations_count_every_pass() {
        // 1 token, k = 2, h = 1, one local expert: forward 4·2 + 2·2 + 2 = 14 bytes, backward
        // 6·2 + 2·2 + 2 = 18.
        assert_eq!(permutation_bytes(2.0, 1.0, 0.0, 1.0), (14.0, 18.0));
        // Sorting by local expert adds 8 bytes a received row each way.
        assert_eq!(permutation_bytes(2.0, 1.0, 2.0, 1.0), (30.0, 34.0));
    }
}
