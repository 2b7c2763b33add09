//! Today's training stack as switches, and the cost model that prices them.
//!
//! [`Stack::megatron_2021`] is the stack of Narayanan et al. 2021 and Korthikanti et al. 2022,
//! which [`crate::capacity::cost::iteration_time`] models (and which reproduces their A100 tables):
//! unfused softmax through HBM, every collective exposed except the DP all-reduce behind the
//! last backward, plain 1F1B, equal pipeline stages, one GEMM efficiency for every GPU.
//! [`Stack::current`] is what Megatron-Core / NeMo and torchtitan run on Hopper today, each part
//! a switch so that [`what_if`] can show what it is worth:
//!
//! - `flash_attention`: the attention core as one kernel (Dao et al.; FlashAttention-2/3,
//!   cuDNN): no `s×s` scores through HBM, causal blocks skipped (half the score FLOPs), the
//!   backward recomputes the scores (2.5× the forward's FLOPs instead of 2×), and no `5as²b`
//!   activations.
//! - `fused_kernels`: LayerNorm/RMSNorm, bias+activation and bias+dropout+residual each one
//!   pass (Megatron's fused kernels, Transformer Engine); off: every element-wise op its own
//!   pass over HBM.
//! - `gemm_per_generation`: GEMM efficiency from measured cuBLASLt rates per GPU generation and
//!   dtype ([`gemm_efficiency`]) instead of the one 0.7 of 2021.
//! - `precision`: bf16, or FP8 GEMMs (Transformer Engine; attention stays bf16) on GPUs with
//!   FP8 tensor cores, plus the casts.
//! - `tp_overlap`: TP collectives overlapped with the GEMMs they feed (Megatron's
//!   `--tp-comm-overlap`, torchtitan's async TP): exposed = what the GEMMs cannot hide.
//! - `dp_overlap`: gradient reduce-scatter in buckets during the last micro-batch's backward and
//!   parameter all-gather during the first forward (`--overlap-grad-reduce`,
//!   `--overlap-param-gather`); only the last bucket is exposed.
//! - `distributed_optimizer`: optimizer states sharded over DP (ZeRO-1), gradients
//!   reduce-scattered and parameters all-gathered (`--use-distributed-optimizer`).
//! - `pp_overlap`: pipeline sends and receives overlapped with compute (Megatron's default).
//! - `virtual_stages`: interleaved 1F1B with `v` model chunks per GPU: bubble `(p−1)/(v·m)`,
//!   `v×` the pipeline sends (Narayanan et al. 2021, §2.2.2).
//! - `uneven_stages`: `l` layers on `p` stages when `p` does not divide `l`: balanced, `⌈l/p⌉` or
//!   `⌊l/p⌋` each, the lighter stages first at both ends (they also hold the embedding and the
//!   output layer), as Llama 3 405B puts 126 layers on 16 stages (Dubey et al. 2024, §3.3.2:
//!   one layer fewer on the first and the last stage). [`stage_layers`] is the rule.
//! - `context_parallel`: `cp` GPUs share each sequence (Megatron's CP, Transformer Engine's P2P
//!   ring attention): each holds `s/cp` tokens, computes `1/cp` of the attention (load-balanced
//!   causal) in `cp` steps, each step's K/V send hidden behind that step's attention only, and
//!   pays the merges of the partial results ([`cp_merge_bytes`]); the DP gradient reduction
//!   spans `d·cp`. `t·p·d·cp` must equal the cluster.
//! - `moe_routing`, `ep_overlap` (MoE models only): the router, the token permutations, the
//!   experts as grouped GEMMs at the busiest rank's load, and the EP all-to-alls, exposed or
//!   overlapped with the other micro-batch ([`moe_cost`]); experts may be folded apart from
//!   attention ([`Layout::etp`]).
//!
//! Every constant is listed with its source in `docs/calibration.md`; fitted ones say so.

use crate::capacity::cost::{self, flops_per_iteration, IterationTime, TrainSetup};
use crate::capacity::hardware::{Cluster, GpuSpec};
use crate::capacity::memory::{self, Layout, LayoutError, MemoryBreakdown, Recompute};
use crate::capacity::models::ModelSpec;
use crate::capacity::moe_cost::{self, MoeLayerCost, MoeRouting};
use crate::capacity::nccl;
use crate::collectives::CollectiveKind;
use crate::dtype::DType;
use serde::{Deserialize, Serialize};

/// GEMM arithmetic precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    #[default]
    Bf16,
    Fp8,
}

impl Precision {
    pub fn name(self) -> &'static str {
        match self {
            Precision::Bf16 => "bf16",
            Precision::Fp8 => "fp8",
        }
    }
}

impl std::str::FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "bf16" => Ok(Precision::Bf16),
            "fp8" => Ok(Precision::Fp8),
            _ => Err(format!("unknown precision '{s}'; expected bf16 or fp8")),
        }
    }
}

/// The training stack: what the software does besides the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Stack {
    pub flash_attention: bool,
    pub fused_kernels: bool,
    pub gemm_per_generation: bool,
    pub precision: Precision,
    pub tp_overlap: bool,
    pub dp_overlap: bool,
    pub distributed_optimizer: bool,
    pub pp_overlap: bool,
    /// Interleaved 1F1B model chunks per GPU (1: plain 1F1B).
    pub virtual_stages: usize,
    pub uneven_stages: bool,
    /// Context-parallel size (1: off).
    pub context_parallel: usize,
    /// Gradients reduced in fp32 (4 bytes; torchtitan's default `mixed_precision_reduce`)
    /// instead of bf16 (Megatron-Core's default).
    #[serde(default)]
    pub grad_reduce_fp32: bool,
    /// One forward GEMM in every `n` recomputed in the backward on top of `Layout::recompute`
    /// (0: none). PyTorch's op-level selective checkpointing as torchtitan applies it
    /// (`selective_ac_option = "op"`) saves the outputs of matmuls, attention and
    /// reduce-scatters but counts the matmuls and saves only every other one: 2.
    #[serde(default)]
    pub recompute_gemm_every: u32,
    /// MoE routing: the busiest expert-parallel rank's load ([`MoeRouting`]).
    #[serde(default)]
    pub moe_routing: MoeRouting,
    /// MoE all-to-alls overlapped with the other micro-batch's computation (Megatron-Core's
    /// `--overlap-moe-expert-parallel-comm`, which runs the forward of one micro-batch and the
    /// backward of another together): exposed = what the layer's computation cannot hide.
    #[serde(default)]
    pub ep_overlap: bool,
    /// Megatron-Core's fused cross-entropy (`--cross-entropy-loss-fusion`, which NeMo's and
    /// Megatron-Bridge's recipes turn on): [`CE_FUSED_BYTES_PER_LOGIT`] of HBM traffic per
    /// logit and micro-batch instead of the unfused path's [`CE_UNFUSED_BYTES_PER_LOGIT`]
    /// (Megatron-LM's default).
    #[serde(default = "fused_cross_entropy_default")]
    pub fused_cross_entropy: bool,
}

fn fused_cross_entropy_default() -> bool {
    true
}

/// HBM bytes per logit of Megatron-Core's unfused vocabulary-parallel cross-entropy, forward and
/// backward, counted from `megatron/core/tensor_parallel/cross_entropy.py`: the bf16 logits
/// cast to fp32 (read 2, write 4), the max (read 4), the max subtracted in place (read 4,
/// write 4), `exp` in place (8), the sum (4), the division into the softmax kept for the
/// backward (8): 38 forward; the softmax scaled by the loss's gradient in place (8) and cast
/// back to bf16 for the output layer's backward (read 4, write 2): 14 backward. 52 in all.
pub const CE_UNFUSED_BYTES_PER_LOGIT: f64 = 52.0;
/// [`CE_UNFUSED_BYTES_PER_LOGIT`] for the fused path (`megatron/core/fusions/
/// fused_cross_entropy.py`): the cast and the max in one kernel (6), the subtraction and `exp`
/// in one in-place kernel (8), the sum (4), the division (8); backward as unfused (14). 40 in
/// all. PyTorch's `F.cross_entropy` on fp32 logits (torchtitan) streams about as much.
pub const CE_FUSED_BYTES_PER_LOGIT: f64 = 40.0;

impl Default for Stack {
    fn default() -> Self {
        Stack::current()
    }
}

/// One switch of the stack, for what-if tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Switch {
    FlashAttention,
    FusedKernels,
    GemmPerGeneration,
    Fp8,
    TpOverlap,
    DpOverlap,
    DistributedOptimizer,
    PpOverlap,
    Interleaving,
}

impl Switch {
    pub const ALL: [Switch; 9] = [
        Switch::FlashAttention,
        Switch::FusedKernels,
        Switch::GemmPerGeneration,
        Switch::Fp8,
        Switch::TpOverlap,
        Switch::DpOverlap,
        Switch::DistributedOptimizer,
        Switch::PpOverlap,
        Switch::Interleaving,
    ];

    /// The JSON / CLI key.
    pub fn key(self) -> &'static str {
        match self {
            Switch::FlashAttention => "flash_attention",
            Switch::FusedKernels => "fused_kernels",
            Switch::GemmPerGeneration => "gemm_per_generation",
            Switch::Fp8 => "fp8",
            Switch::TpOverlap => "tp_overlap",
            Switch::DpOverlap => "dp_overlap",
            Switch::DistributedOptimizer => "distributed_optimizer",
            Switch::PpOverlap => "pp_overlap",
            Switch::Interleaving => "interleaving",
        }
    }

    /// Whether `stack` has it on.
    pub fn is_on(self, s: &Stack) -> bool {
        match self {
            Switch::FlashAttention => s.flash_attention,
            Switch::FusedKernels => s.fused_kernels,
            Switch::GemmPerGeneration => s.gemm_per_generation,
            Switch::Fp8 => s.precision == Precision::Fp8,
            Switch::TpOverlap => s.tp_overlap,
            Switch::DpOverlap => s.dp_overlap,
            Switch::DistributedOptimizer => s.distributed_optimizer,
            Switch::PpOverlap => s.pp_overlap,
            Switch::Interleaving => s.virtual_stages > 1,
        }
    }

    /// `stack` with this switch flipped (interleaving: v = 1 ⇄ v = 2; FP8 ⇄ bf16).
    pub fn toggled(self, s: &Stack) -> Stack {
        let mut t = *s;
        match self {
            Switch::FlashAttention => t.flash_attention = !s.flash_attention,
            Switch::FusedKernels => t.fused_kernels = !s.fused_kernels,
            Switch::GemmPerGeneration => t.gemm_per_generation = !s.gemm_per_generation,
            Switch::Fp8 => {
                t.precision = match s.precision {
                    Precision::Bf16 => Precision::Fp8,
                    Precision::Fp8 => Precision::Bf16,
                }
            }
            Switch::TpOverlap => t.tp_overlap = !s.tp_overlap,
            Switch::DpOverlap => t.dp_overlap = !s.dp_overlap,
            Switch::DistributedOptimizer => t.distributed_optimizer = !s.distributed_optimizer,
            Switch::PpOverlap => t.pp_overlap = !s.pp_overlap,
            Switch::Interleaving => t.virtual_stages = if s.virtual_stages > 1 { 1 } else { 2 },
        }
        t
    }
}

impl Stack {
    /// The 2021–22 Megatron-LM stack: every switch off ([`cost::iteration_time`]).
    pub fn megatron_2021() -> Stack {
        Stack {
            flash_attention: false,
            fused_kernels: false,
            gemm_per_generation: false,
            precision: Precision::Bf16,
            tp_overlap: false,
            dp_overlap: false,
            distributed_optimizer: false,
            pp_overlap: false,
            virtual_stages: 1,
            uneven_stages: false,
            context_parallel: 1,
            grad_reduce_fp32: false,
            recompute_gemm_every: 0,
            moe_routing: MoeRouting::Dropless,
            ep_overlap: false,
            fused_cross_entropy: false,
        }
    }

    /// Today's Megatron-Core / NeMo stack in bf16 (plain 1F1B; set `virtual_stages` for
    /// interleaving, `precision` for FP8, `context_parallel` for CP).
    pub fn current() -> Stack {
        Stack {
            flash_attention: true,
            fused_kernels: true,
            gemm_per_generation: true,
            precision: Precision::Bf16,
            tp_overlap: true,
            dp_overlap: true,
            distributed_optimizer: true,
            pp_overlap: true,
            virtual_stages: 1,
            uneven_stages: true,
            context_parallel: 1,
            grad_reduce_fp32: false,
            recompute_gemm_every: 0,
            moe_routing: MoeRouting::Dropless,
            ep_overlap: false,
            fused_cross_entropy: true,
        }
    }

    /// Whether this is the 2021 stack, which [`cost::iteration_time`] prices unchanged.
    pub fn is_megatron_2021(&self) -> bool {
        *self == Stack::megatron_2021()
    }

    /// Short description, e.g. `flash-attn fused fp8 tp-overlap dp-overlap dist-opt v=5 cp=2`.
    pub fn label(&self) -> String {
        if self.is_megatron_2021() {
            return "megatron-2021".to_string();
        }
        let mut parts = Vec::new();
        for (on, name) in [
            (self.flash_attention, "flash-attn"),
            (self.fused_kernels, "fused"),
            (self.gemm_per_generation, "gemm-per-gen"),
            (self.tp_overlap, "tp-overlap"),
            (self.dp_overlap, "dp-overlap"),
            (self.distributed_optimizer, "dist-opt"),
            (self.pp_overlap, "pp-overlap"),
            (self.uneven_stages, "uneven-pp"),
        ] {
            if on {
                parts.push(name.to_string());
            }
        }
        parts.push(self.precision.name().to_string());
        if self.virtual_stages > 1 {
            parts.push(format!("v={}", self.virtual_stages));
        }
        if self.context_parallel > 1 {
            parts.push(format!("cp={}", self.context_parallel));
        }
        if self.moe_routing != MoeRouting::Dropless {
            parts.push(format!("moe-{}", self.moe_routing.name()));
        }
        if self.ep_overlap {
            parts.push("ep-overlap".to_string());
        }
        if !self.fused_cross_entropy {
            parts.push("unfused-ce".to_string());
        }
        parts.join(" ")
    }
}

/// GPU generation, for the GEMM efficiency table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Generation {
    Volta,
    Ampere,
    Hopper,
    Blackwell,
    Other,
}

impl Generation {
    /// From the catalogue name (user GPUs: `Other`).
    pub fn of(gpu: &GpuSpec) -> Generation {
        let n = gpu.name.to_ascii_lowercase();
        if n.starts_with("v100") {
            Generation::Volta
        } else if n.starts_with("a100") {
            Generation::Ampere
        } else if n.starts_with("h100") || n.starts_with("h200") || n.starts_with("h800") {
            Generation::Hopper
        } else if n.starts_with("b200") || n.starts_with("gb200") || n.starts_with("b100") {
            Generation::Blackwell
        } else {
            Generation::Other
        }
    }
}

/// Achievable fraction of the dtype's dense peak for large GEMMs, per generation:
///
/// | generation | bf16 | FP8 | source |
/// |---|---|---|---|
/// | Ampere | 0.70 | – | [`AMPERE_TRAINING_GEMM_EFFICIENCY`] (bare cuBLASLt: 0.813) |
/// | Hopper | 0.538 | 0.475 | bf16: derived from FP8's training/bare ratio ([`HOPPER_BF16_TRAINING_EFFICIENCY`]; checked on Megatron-Core's bf16 H100 table); FP8: fitted in training ([`HOPPER_FP8_TRAINING_EFFICIENCY`]; bare cuBLASLt 0.652) |
/// | Blackwell | 0.70 | 0.418 | bf16: assumption; FP8: cuBLASLt 0.556 scaled by Hopper's training/GEMM ratio |
/// | others | [`cost::MATMUL_EFFICIENCY`] | same | |
pub fn gemm_efficiency(generation: Generation, precision: Precision) -> f64 {
    match (generation, precision) {
        (Generation::Ampere, _) => AMPERE_TRAINING_GEMM_EFFICIENCY,
        (Generation::Hopper, Precision::Bf16) => HOPPER_BF16_TRAINING_EFFICIENCY,
        (Generation::Hopper, Precision::Fp8) => HOPPER_FP8_TRAINING_EFFICIENCY,
        (Generation::Blackwell, Precision::Bf16) => 0.70,
        (Generation::Blackwell, Precision::Fp8) => {
            BLACKWELL_FP8_GEMM_EFFICIENCY * HOPPER_FP8_TRAINING_EFFICIENCY
                / HOPPER_FP8_GEMM_EFFICIENCY
        }
        _ => cost::MATMUL_EFFICIENCY,
    }
}

/// A100 GEMM efficiency in training: 0.70, the value with which the 2021 stack reproduces
/// Narayanan et al.'s Table 1 within 7% ([`cost::MATMUL_EFFICIENCY`]); the bare cuBLASLt FP16
/// 8192³ GEMM reaches 0.813 (Azure ND A100 v4: 253.7 of 312 TFLOP/s), an upper bound that
/// training shapes do not reach.
pub const AMPERE_TRAINING_GEMM_EFFICIENCY: f64 = 0.70;

/// Maximum achievable matmul FLOP/s of an H100 SXM as fractions of the dense peaks, bf16
/// 794.5 of 989 and FP8 1402.6 of 1979 (stas00/ml-engineering `compute/accelerator/README.md`,
/// "Maximum Achievable Matmul FLOPS", the best rate over a sweep of shapes).
pub const HOPPER_MAMF_BF16: f64 = 794.5 / 989.0;
/// See [`HOPPER_MAMF_BF16`].
pub const HOPPER_MAMF_FP8: f64 = 1402.6 / 1979.0;

/// bf16 GEMM efficiency in training on Hopper: the bare bf16 rate scaled by the share of the
/// bare FP8 rate that FP8 training reaches, `0.803 × 0.475/0.709 = 0.538` (**derived**, not
/// fitted; 0.70 before issue 39, an assumption with no H100 measurement behind it). Checked on
/// Megatron-Core's bf16 H100 weak-scaling table (NVIDIA/Megatron-LM README, 1.7B to 462B on 48
/// to 6144 GPUs): mean absolute error 8.5%, where the best single constant (0.55) gives 8.4%
/// and 0.70 gave 22.8% (docs/calibration.md, "Megatron-Core's weak scaling").
pub const HOPPER_BF16_TRAINING_EFFICIENCY: f64 =
    HOPPER_MAMF_BF16 * HOPPER_FP8_TRAINING_EFFICIENCY / HOPPER_MAMF_FP8;

/// cuBLASLt FP8 GEMM rate on H100 SXM, fraction of 1979 TFLOP/s: Azure ND H100 v5, 8192³,
/// 1290.1 TFLOP/s (samuel-bohman/AI-benchmarking-guide, Azure_Results/ND_H100_v5_results.md).
pub const HOPPER_FP8_GEMM_EFFICIENCY: f64 = 0.652;
/// FP8 GEMM efficiency in training on Hopper, casts, transposes and amax reductions of
/// Transformer Engine included. **Fitted** to the Megatron-Bridge / NeMo H100 FP8 figures of
/// docs/calibration.md (the bare GEMM reaches [`HOPPER_FP8_GEMM_EFFICIENCY`]); refitted from
/// 0.49 to 0.475 (issue 39) once collectives across nodes run at the node's NICs, which made
/// the multi-node rows' DP and PP traffic faster.
pub const HOPPER_FP8_TRAINING_EFFICIENCY: f64 = 0.475;
/// cuBLASLt FP8 GEMM rate on GB200, fraction of 5000 TFLOP/s: Azure ND GB200 v6, 8192³,
/// 2781.5 TFLOP/s (same source). Blackwell's FP8 training efficiency is this times Hopper's
/// training/GEMM ratio (not fitted to Blackwell figures).
pub const BLACKWELL_FP8_GEMM_EFFICIENCY: f64 = 0.556;

/// FlashAttention forward efficiency (fraction of the bf16 peak on the FLOPs it executes,
/// causal blocks skipped). Shah et al. 2024 (FlashAttention-3), H100: 740 TFLOP/s at best (75%),
/// ~600 for head dim 128 causal at 8K; Dao 2023 (FlashAttention-2), A100: 50–73% forward.
pub const FLASH_FWD_EFFICIENCY: f64 = 0.6;
/// FlashAttention backward efficiency: FlashAttention-2's backward runs at ~2/3 of its forward's
/// rate (Dao 2023, Fig. 6–7); FlashAttention-3's backward is 1.5–1.75× FlashAttention-2's.
pub const FLASH_BWD_EFFICIENCY: f64 = 0.45;
/// Megatron's default gradient bucket (`--ddp-bucket-size`): max(40M, 1M·dp) parameters.
pub const DP_BUCKET_PARAMS: f64 = 40e6;

/// Layers of each pipeline stage: `l/p` each when `p` divides `l`; otherwise `⌈l/p⌉` on the
/// middle stages and `⌊l/p⌋` on the first and the last (then on the first, then the last, when
/// more stages need the extra layer). 126 on 16: `[7, 8 × 14, 7]`.
pub fn stage_layers(layers: usize, pp: usize) -> Vec<usize> {
    let p = pp.max(1);
    let (q, r) = (layers / p, layers % p);
    let mut out = vec![q; p];
    let mut order: Vec<usize> = (1..p.saturating_sub(1)).collect();
    if p > 1 {
        order.push(0);
        order.push(p - 1);
    } else {
        order.push(0);
    }
    for &i in order.iter().take(r) {
        out[i] += 1;
    }
    out
}

/// One transformer block, one micro-batch, one rank, under a stack.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct LayerCost {
    /// Linear-layer GEMMs, forward + backward.
    pub gemm_s: f64,
    /// Attention core (scores, softmax, context), forward + backward.
    pub attention_s: f64,
    /// Element-wise passes (norms, activations, residuals, dropout, FP8 casts), fwd + bwd.
    pub elementwise_s: f64,
    /// Recomputed forward work (selective without FlashAttention, or full).
    pub recompute_s: f64,
    /// TP collectives, all of them.
    pub tp_comm_s: f64,
    /// TP collectives not hidden behind GEMMs.
    pub tp_exposed_s: f64,
    /// Context-parallel K/V exchange not hidden behind attention.
    pub cp_exposed_s: f64,
    /// Context-parallel bookkeeping around the ring's attention calls, forward + backward
    /// ([`cp_merge_bytes`]): memory-bound passes, not overlapped.
    #[serde(default)]
    pub cp_merge_s: f64,
    /// MoE all-to-alls over the EP group (and expert-TP gathers), the part not hidden by
    /// [`Stack::ep_overlap`].
    #[serde(default)]
    pub ep_comm_s: f64,
    /// All of them, hidden or not.
    #[serde(default)]
    pub ep_comm_total_s: f64,
    #[serde(default)]
    pub ep_all_to_alls: usize,
    /// MoE router passes, token permutations and the casts of the dispatched rows, fwd + bwd
    /// ([`moe_cost::moe_layer_cost`]).
    #[serde(default)]
    pub moe_dispatch_s: f64,
    /// The MoE layer's details (zero for a dense model).
    #[serde(default)]
    pub moe: MoeLayerCost,
    /// The forward part of the compute (for overlap accounting).
    pub forward_s: f64,
    /// The backward part of the compute (incl. recompute).
    pub backward_s: f64,
}

impl LayerCost {
    pub fn compute_s(&self) -> f64 {
        self.gemm_s
            + self.attention_s
            + self.cp_merge_s
            + self.elementwise_s
            + self.recompute_s
            + self.moe_dispatch_s
    }
}

/// HBM bytes, forward and backward, of context parallelism's bookkeeping around the ring
/// attention of one layer and micro-batch, on the busiest CP rank (the last: it uses all of
/// its Q rows on every step), for `q_elems` = tokens·q_dim/t and `kv_elems` = tokens·kv_dim/t
/// elements of K (as many of V), bf16. Counted from Transformer Engine's
/// `AttnFuncWithCPAndKVP2P` (`transformer_engine/pytorch/attention/dot_product_attention/
/// context_parallel.py`):
///
/// - forward: K and V concatenated into the ring buffer (read + write, `8·kv`); the first
///   step's output rescaled into the accumulator (read + write, `4·q`); each later step's
///   partial output rescaled by `exp(lse_step − lse)` and added (read both, write, `6·q`) and
///   the half of K/V that step needs copied contiguous (`4·kv`);
/// - backward: K/V copied into the ring buffer (`8·kv`), the first step's dQ, dK, dV copied
///   (`4·q + 8·kv`), each later step's dQ added (`6·q`), dK and dV added (`12·kv`) and the K/V
///   halves copied (`4·kv`).
///
/// The softmax statistics (`heads/t` floats per token, 1/head_dim of the output) are left out.
pub fn cp_merge_bytes(q_elems: f64, kv_elems: f64, cp: usize) -> (f64, f64) {
    if cp < 2 {
        return (0.0, 0.0);
    }
    let later = (cp - 1) as f64;
    let fwd = 8.0 * kv_elems + 4.0 * q_elems + later * (6.0 * q_elems + 4.0 * kv_elems);
    let bwd = 8.0 * kv_elems
        + (4.0 * q_elems + 8.0 * kv_elems)
        + later * (6.0 * q_elems + 16.0 * kv_elems);
    (fwd, bwd)
}

fn gemm_time(flops: f64, gpu: &GpuSpec, stack: &Stack, precision: Precision) -> f64 {
    let eff = if stack.gemm_per_generation {
        gemm_efficiency(Generation::of(gpu), precision)
    } else {
        cost::MATMUL_EFFICIENCY
    };
    let peak = match precision {
        Precision::Fp8 if gpu.peak_fp8_tflops > 0.0 => gpu.peak_fp8_tflops * 1e12,
        _ => gpu.peak_flops(DType::Bf16),
    };
    flops / (peak * eff)
}

fn stream_time(bytes: f64, gpu: &GpuSpec) -> f64 {
    bytes / (gpu.memory_bandwidth_gbs * 1e9 * cost::MEMORY_EFFICIENCY)
}

/// FP8 GEMMs need FP8 tensor cores: [`NoFp8`](crate::capacity::hardware::NoFp8) on a GPU
/// without them (V100, A100), so that `--precision fp8` is refused there rather than priced
/// in bf16 without a word (which it was before issue 39).
pub fn check_precision(
    stack: &Stack,
    gpu: &GpuSpec,
) -> Result<(), crate::capacity::hardware::NoFp8> {
    if stack.precision == Precision::Fp8 {
        gpu.require_fp8(
            "--precision fp8 (Transformer Engine's FP8 GEMMs)",
            "train in bf16 (drop --precision fp8) or pick a GPU with FP8 (--gpu h100, h200 or b200)",
        )?;
    }
    Ok(())
}

/// The precision GEMMs run in on `gpu`. [`check_layout`] refuses FP8 on a GPU without FP8
/// cores ([`check_precision`]); callers that price a layer without it (a lesson's what-if)
/// get bf16 there.
pub fn effective_precision(stack: &Stack, gpu: &GpuSpec) -> Precision {
    if stack.precision == Precision::Fp8 && gpu.peak_fp8_tflops > 0.0 {
        Precision::Fp8
    } else {
        Precision::Bf16
    }
}

/// [`LayerCost`] of one block (see the module docs for each switch).
pub fn layer_cost(
    model: &ModelSpec,
    seq: usize,
    layout: &Layout,
    cluster: &Cluster,
    stack: &Stack,
) -> LayerCost {
    let gpu = &cluster.gpu;
    let prec = effective_precision(stack, gpu);
    let t = layout.tp.max(1) as f64;
    let cp = stack.context_parallel.max(1) as f64;
    let (s, b) = (seq as f64, layout.micro_batch as f64);
    let s_local = s / cp;
    let tok = s_local * b;
    // The MLP width a token passes, `k · f` (shared experts and dense layers folded in).
    let (k_act, f_act) = model.active_mlp_width();
    let (h, f, kv, q) = (
        model.hidden as f64,
        f_act as f64,
        model.kv_dim() as f64,
        model.q_dim() as f64,
    );
    let k_exp = k_act as f64;
    let mats = if model.gated_mlp { 2.0 } else { 1.0 };
    // Linear layers: 2 FLOPs per weight per token forward, twice that backward. The routed
    // experts (MoE) are priced apart, as grouped GEMMs at the busiest rank's load.
    let routed = model.routed_matmul_params_per_layer();
    let dense_gemm_fwd = gemm_time(
        2.0 * tok * (model.matmul_params_per_layer_active() as f64 - routed) / t,
        gpu,
        stack,
        prec,
    );
    let moe = moe_cost::moe_layer_cost(
        model,
        tok,
        layout,
        cluster,
        stack.moe_routing,
        gemm_time(2.0 * tok * routed / t, gpu, stack, prec),
        prec == Precision::Fp8,
        |bytes| stream_time(bytes, gpu),
    );
    let gemm_fwd = dense_gemm_fwd + moe.expert_gemm_fwd_s;
    let gemm_s = 3.0 * dense_gemm_fwd + moe.expert_gemm_s;
    // Attention core: `4·b·s_local·s·q_dim/t` model FLOPs forward (scores and context;
    // multi-head latent attention: [`ModelSpec::attention_core_dim`]).
    let attn_model_fwd = 4.0 * b * s_local * s * model.attention_core_dim() / t;
    let drop = if model.dropout { 1.0 } else { 0.0 };
    let (attn_fwd, attn_bwd) = if stack.flash_attention {
        let real = 0.5 * attn_model_fwd; // causal blocks skipped
        (
            real / (gpu.peak_flops(DType::Bf16) * FLASH_FWD_EFFICIENCY),
            2.5 * real / (gpu.peak_flops(DType::Bf16) * FLASH_BWD_EFFICIENCY),
        )
    } else {
        // Scores as batched GEMMs (bf16) plus softmax and dropout over `a·s²` in HBM.
        let g = gemm_time(attn_model_fwd, gpu, stack, Precision::Bf16);
        let sm = stream_time(
            (4.0 + 3.0 * drop) * model.heads as f64 * s_local * s * b / t,
            gpu,
        );
        (g + sm, 2.0 * (g + sm))
    };
    let attention_s = attn_fwd + attn_bwd;
    // Element-wise passes over [tok, h] (outside the TP region; split by t with SP) and over
    // the MLP's [tok, f/t].
    let outside = if layout.sp { 1.0 / t } else { 1.0 };
    let bias = if model.biases { 1.0 } else { 0.0 };
    let (ew_h, ew_f) = if stack.fused_kernels {
        // Two norms (read + write), two fused bias+dropout+residual (read 2, write 1, mask).
        (8.0 + 2.0 * (6.0 + drop), k_exp * (2.0 * mats + 2.0))
    } else {
        // Two norms (read + write, statistics pass), bias adds, dropout, residual each a pass.
        (
            2.0 * 6.0 + 2.0 * (4.0 * bias + 5.0 * drop + 6.0),
            k_exp * (2.0 * mats + 2.0 + 4.0 * bias * mats + 2.0 * (mats - 1.0) * 3.0),
        )
    };
    let mut ew_bytes = ew_h * tok * h * outside + ew_f * tok * f / t;
    if prec == Precision::Fp8 {
        // Casts to FP8 of each GEMM input (read 2, write 1 byte); fused kernels fold the casts
        // of the QKV and fc1 inputs into the norms.
        let inputs = if stack.fused_kernels {
            q / t + k_exp * f / t
        } else {
            2.0 * h + q / t + k_exp * f / t
        };
        ew_bytes += 3.0 * tok * inputs;
    }
    let ew_fwd = stream_time(ew_bytes, gpu);
    let elementwise_s = 3.0 * ew_fwd;
    let forward = gemm_fwd + attn_fwd + ew_fwd + moe.dispatch_fwd_s;
    let recompute_s = match layout.recompute {
        Recompute::None => 0.0,
        Recompute::Selective if stack.flash_attention => 0.0,
        Recompute::Selective => attn_fwd,
        Recompute::Full => forward,
    } + if layout.recompute == Recompute::Full {
        0.0
    } else {
        match stack.recompute_gemm_every {
            0 => 0.0,
            n => gemm_fwd / f64::from(n),
        }
    };
    // TP collectives: 2 forward + 2 backward (+2 with full recompute), all-reduces or RS+AG.
    let n_coll = if layout.tp > 1 {
        4.0 + if layout.recompute == Recompute::Full {
            2.0
        } else {
            0.0
        }
    } else {
        0.0
    };
    let size = (2.0 * tok * h) as u64;
    let one = if layout.tp > 1 {
        if layout.sp {
            nccl::group_time_s(cluster, CollectiveKind::ReduceScatter, 1, layout.tp, size)
                + nccl::group_time_s(cluster, CollectiveKind::AllGather, 1, layout.tp, size)
        } else {
            nccl::group_time_s(cluster, CollectiveKind::AllReduce, 1, layout.tp, size)
        }
    } else {
        0.0
    };
    let tp_comm_s = n_coll * one;
    // Comm-GEMM overlap (Transformer Engine's userbuffers, behind Megatron's
    // `--tp-comm-overlap`) moves each chunk by CUDA IPC over NVLink between the GPUs of one node
    // (its docs: the TP group must sit inside one NVLink domain). A TP group spanning nodes gets no
    // overlap: every byte over the network is exposed.
    let tp_within_node = layout.tp <= cluster.gpus_per_node;
    let tp_exposed_s = if stack.tp_overlap && tp_within_node {
        (tp_comm_s
            - (gemm_s
                + if layout.recompute == Recompute::Full {
                    gemm_fwd
                } else {
                    0.0
                }))
        .max(0.0)
    } else {
        tp_comm_s
    };
    // CP (Transformer Engine's `AttnFuncWithCPAndKVP2P`, load-balanced causal): `cp` ring steps
    // forward and backward, each one FlashAttention call on this rank's Q against one K/V chunk
    // (`1/cp` of the attention each). The K/V of step `i + 1` travels while step `i` computes:
    // forward, `cp − 1` sends of K/V; backward, K/V at step 0, K/V with the partial dK/dV on the
    // middle steps, dK/dV alone on the last (TE sends them together in one buffer). Each send
    // hides only behind its own step's attention, not behind the whole layer's.
    let (cp_exposed_s, cp_merge_s, cp_merge_fwd_s) = if stack.context_parallel > 1 {
        let steps = stack.context_parallel;
        let kv_bytes = 2.0 * 2.0 * tok * kv / t; // K and V, 2 bytes
                                                 // One hop of the ring: the ring all-gather of the CP group moves `cp − 1` hops.
        let hop = |bytes: f64| {
            nccl::group_time_s(
                cluster,
                CollectiveKind::AllGather,
                layout.tp,
                steps,
                (bytes * cp) as u64,
            ) / (cp - 1.0)
        };
        let fwd_step = attn_fwd / cp;
        let bwd_step = attn_bwd / cp;
        let mut exposed = (cp - 1.0) * (hop(kv_bytes) - fwd_step).max(0.0);
        for i in 0..steps {
            let bytes = if i == 0 || i == steps - 1 {
                kv_bytes
            } else {
                2.0 * kv_bytes
            };
            exposed += (hop(bytes) - bwd_step).max(0.0);
        }
        let (merge_fwd, merge_bwd) = cp_merge_bytes(tok * q / t, tok * kv / t, steps);
        let (f, bw) = (stream_time(merge_fwd, gpu), stream_time(merge_bwd, gpu));
        (exposed, f + bw, f)
    } else {
        (0.0, 0.0, 0.0)
    };
    // MoE all-to-alls: exposed, or hidden behind the layer's computation of the other
    // micro-batch with EP overlap.
    let ep_comm_total_s = moe.comm_s;
    let ep_comm_s = if stack.ep_overlap {
        moe_cost::overlapped_comm_exposed_s(
            ep_comm_total_s,
            gemm_s + attention_s + elementwise_s + moe.dispatch_s + recompute_s,
            gpu,
        )
    } else {
        ep_comm_total_s
    };
    LayerCost {
        gemm_s,
        attention_s,
        elementwise_s,
        recompute_s,
        tp_comm_s,
        tp_exposed_s,
        cp_exposed_s,
        cp_merge_s,
        ep_comm_s,
        ep_comm_total_s,
        ep_all_to_alls: moe.all_to_alls,
        moe_dispatch_s: moe.dispatch_s,
        moe,
        forward_s: forward + cp_merge_fwd_s,
        backward_s: 2.0 * gemm_fwd
            + attn_bwd
            + 2.0 * ew_fwd
            + recompute_s
            + (cp_merge_s - cp_merge_fwd_s)
            + (moe.dispatch_s - moe.dispatch_fwd_s),
    }
}

/// Where the time of one iteration goes under a stack, beyond [`IterationTime`]'s split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct StackBreakdown {
    pub stack: Stack,
    /// Layers of each pipeline stage ([`stage_layers`]).
    pub stage_layers: Vec<usize>,
    /// Linear-layer GEMMs of all micro-batches on the busiest stage (incl. the logits).
    pub gemm_s: f64,
    /// Attention core (with context parallelism, the merges of its ring steps).
    pub attention_s: f64,
    /// Element-wise passes.
    pub elementwise_s: f64,
    /// Recomputation.
    pub recompute_s: f64,
    /// TP collectives in total, and the part hidden by overlap.
    pub tp_comm_total_s: f64,
    pub tp_comm_hidden_s: f64,
    /// DP gradient reduction (and parameter gather) in total, and the part hidden.
    pub dp_comm_total_s: f64,
    pub dp_comm_hidden_s: f64,
    /// Pipeline sends in total, and the part hidden.
    pub pp_comm_total_s: f64,
    pub pp_comm_hidden_s: f64,
    /// Context-parallel exchange left exposed.
    pub cp_comm_s: f64,
    /// MoE all-to-alls (and expert-TP gathers) in total, and the part hidden by EP overlap.
    #[serde(default)]
    pub ep_comm_total_s: f64,
    #[serde(default)]
    pub ep_comm_hidden_s: f64,
    /// MoE router passes and token permutations.
    #[serde(default)]
    pub moe_dispatch_s: f64,
    /// MoE: the routed experts' grouped-GEMM utilisation and the busiest rank's load over the
    /// mean ([`moe_cost::MoeLayerCost`]); 0 for a dense model.
    #[serde(default)]
    pub moe_grouped_gemm_utilisation: f64,
    #[serde(default)]
    pub moe_busiest_over_mean: f64,
    /// GEMM efficiency used (fraction of the precision's peak).
    pub gemm_efficiency: f64,
    /// The precision the GEMMs ran in.
    pub precision: Precision,
    pub context_parallel: usize,
    pub virtual_stages: usize,
}

/// An iteration under a stack: the classic split (every field of [`IterationTime`], so JSON
/// readers keep their keys) plus the stack's breakdown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StackIteration {
    #[serde(flatten)]
    pub it: IterationTime,
    pub breakdown: StackBreakdown,
}

/// Checks a layout under a stack: [`cost::check_training_layout`]'s rules, with `t·p·d·cp` =
/// GPUs, `p ≤ l` instead of `p | l` when stages may be uneven, `v` dividing each stage's
/// layers for interleaving, and `s % (2·cp) == 0` for load-balanced CP.
pub fn check_layout(
    model: &ModelSpec,
    setup: &TrainSetup,
    cluster: &Cluster,
    layout: &Layout,
    stack: &Stack,
) -> Result<(), LayoutError> {
    let cp = stack.context_parallel.max(1);
    if stack.context_parallel == 0 {
        return Err(LayoutError::Zero {
            field: "context_parallel",
        });
    }
    if stack.virtual_stages == 0 {
        return Err(LayoutError::Zero {
            field: "virtual_stages",
        });
    }
    // The classic checks on a layout whose DP absorbs CP (the GPU count) and, for uneven
    // stages, on a PP that divides the layers (checked here instead).
    let as_classic = Layout {
        dp: layout.dp.saturating_mul(cp),
        pp: 1,
        ..*layout
    };
    setup.validate()?;
    let mut shape_model = model.clone();
    shape_model.layers = 1;
    memory::check_layout(&shape_model, &as_classic)?;
    check_precision(stack, &cluster.gpu)?;
    if layout.pp == 0 {
        return Err(LayoutError::Zero { field: "pp" });
    }
    cost::check_tp_fits(layout, cluster)?;
    let needed = layout.gpus().saturating_mul(cp);
    if needed != cluster.gpus && cp > 1 {
        let rest = layout.tp.saturating_mul(layout.pp).saturating_mul(cp);
        let fix = if rest > 0 && cluster.gpus.is_multiple_of(rest) {
            format!(
                "give DP={} (TP × PP × DP × CP = {} GPUs)",
                cluster.gpus / rest,
                cluster.gpus
            )
        } else {
            format!(
                "TP × PP × CP = {rest} does not divide the {} GPUs; change TP, PP, CP or --gpus",
                cluster.gpus
            )
        };
        return Err(LayoutError::GpuCountMismatchCp {
            tp: layout.tp,
            pp: layout.pp,
            dp: layout.dp,
            cp,
            needed,
            gpus: cluster.gpus,
            fix,
        });
    }
    if needed != cluster.gpus {
        return Err(LayoutError::GpuCountMismatch {
            tp: layout.tp,
            pp: layout.pp,
            dp: layout.dp.saturating_mul(cp),
            needed,
            gpus: cluster.gpus,
        });
    }
    let uneven_ok = stack.uneven_stages && layout.pp <= model.layers;
    if !model.layers.is_multiple_of(layout.pp) && !uneven_ok {
        return Err(LayoutError::LayersNotDivisible {
            pp: layout.pp,
            layers: model.layers,
        });
    }
    if stack.virtual_stages > 1 {
        let v = stack.virtual_stages;
        let min_stage = stage_layers(model.layers, layout.pp)
            .into_iter()
            .min()
            .unwrap_or(0);
        if layout.pp == 1 || min_stage < v {
            return Err(LayoutError::BadVirtualStages {
                v,
                pp: layout.pp,
                min_stage,
            });
        }
    }
    if cp > 1 && !setup.seq.is_multiple_of(2 * cp) {
        return Err(LayoutError::BadContextParallel { cp, seq: setup.seq });
    }
    cost::check_batch(setup, layout)
}

/// Model chunks whose forward activations pipeline stage `stage` (0-based, of `p`) holds at
/// its peak, with `m` micro-batches and `v` chunks per GPU.
///
/// Plain 1F1B (`v = 1`): `min(p − stage, m)` micro-batches, each a whole stage. Interleaved
/// 1F1B: the warm-up runs `2(p − stage − 1) + (v − 1)·p` chunk forwards before the first
/// backward, one more in the steady state, at most all `m·v` (Megatron-Core,
/// `megatron/core/pipeline_parallel/schedules.py`, `forward_backward_pipelining_with_interleaving`:
/// `num_warmup_microbatches`), each chunk `1/v` of the stage. On the first stage that is
/// Korthikanti et al. 2022 (§4.2.3)'s `1 + (p − 1)/(p·v)` times plain 1F1B's activations when
/// `m ≥ p`, falling towards 1 as `v` grows.
pub fn in_flight_chunks(p: usize, stage: usize, m: usize, v: usize) -> u128 {
    let (p, m, v) = (p.max(1), m.max(1), v.max(1));
    let later = p.saturating_sub(stage + 1);
    if v == 1 {
        return (later + 1).min(m) as u128;
    }
    let warmup = 2 * later + (v - 1) * p;
    ((warmup + 1).min(m.saturating_mul(v))) as u128
}

/// Memory per GPU under a stack: the busiest stage of uneven stages, FlashAttention's missing
/// `5as²b`, CP's `s/cp` tokens, the distributed optimizer's ZeRO-1 sharding over `d·cp`.
pub fn training_memory(
    model: &ModelSpec,
    seq: usize,
    global_batch: usize,
    layout: &Layout,
    stack: &Stack,
) -> MemoryBreakdown {
    let cp = stack.context_parallel.max(1);
    let stages = stage_layers(model.layers, layout.pp);
    let p = layout.pp.max(1);
    let zero = if stack.distributed_optimizer {
        layout.zero.max(1)
    } else {
        layout.zero
    };
    let shard_dp = layout.dp.saturating_mul(cp);
    // Parameters: the busiest stage (first stage: embedding; last: output and final norm).
    let etp = layout.expert_tp();
    let per_layer = memory::layer_params_per_rank_folded(model, layout.tp, layout.ep, etp) as u128;
    let expert_per_layer = memory::expert_params_per_rank(model, etp, layout.ep) as u128;
    let t = layout.tp.max(1) as u128;
    let h = model.hidden as u128;
    let vocab_shard = model.vocab as u128 * h / t;
    let positions = if model.learned_positions {
        model.seq as u128 * h
    } else {
        0
    };
    let output = if model.tied_embeddings && p == 1 {
        0
    } else {
        vocab_shard
    };
    let stage_params: Vec<u128> = stages
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let mut x = n as u128 * per_layer;
            if i == 0 {
                x += vocab_shard + positions;
            }
            if i == p - 1 {
                x += output + u128::from(model.final_norm_params());
            }
            x
        })
        .collect();
    let busiest = (0..stage_params.len())
        .max_by_key(|&i| stage_params[i])
        .unwrap_or(0);
    let params = u64::try_from(stage_params.get(busiest).copied().unwrap_or(0)).unwrap_or(u64::MAX);
    // Expert weights shard over the `d·cp/ep` ranks holding the same experts.
    let expert =
        u64::try_from(stages.get(busiest).copied().unwrap_or(0) as u128 * expert_per_layer)
            .unwrap_or(u64::MAX);
    let (weights_bytes, gradients_bytes, optimizer_bytes) = if etp == layout.tp {
        memory::model_state_bytes_ep(params, expert, shard_dp, layout.ep, zero)
    } else {
        // Folded: the experts' grid etp × ep × edp covers tp × cp × dp.
        let edp = (layout.tp.saturating_mul(shard_dp) / (layout.ep.max(1) * etp)).max(1);
        memory::model_state_bytes_experts(params, expert, shard_dp, edp, zero)
    };
    // Activations: FlashAttention keeps no s² scores (as selective recomputation), CP holds
    // s/cp tokens; the first stage holds min(p, m) micro-batches (1F1B).
    let rc = if stack.flash_attention && layout.recompute == Recompute::None {
        Recompute::Selective
    } else {
        layout.recompute
    };
    let local_seq = (seq / cp).max(1);
    let per_layer_act = memory::activation_bytes_per_layer(
        model,
        local_seq,
        layout.micro_batch,
        layout.tp,
        layout.sp,
        rc,
    ) as u128
        + memory::moe_activation_bytes_per_layer(model, local_seq, layout, rc) as u128;
    let m = (global_batch / layout.micro_batch.saturating_mul(layout.dp).max(1)).max(1);
    let v = stack.virtual_stages.max(1);
    let tokens = (local_seq * layout.micro_batch) as u128;
    let sp_div = |x: u128| if layout.sp { x / t } else { x };
    let last_extra = sp_div(tokens * h * 4) + tokens * 4 * model.vocab as u128 / t;
    // Stage i's activations at its peak: the chunk forwards in flight × the chunk's layers.
    let stage_act =
        |i: usize, n: usize| in_flight_chunks(p, i, m, v) * n as u128 * per_layer_act / v as u128;
    let first = stage_act(0, stages[0]);
    let middle = stages
        .iter()
        .enumerate()
        .map(|(i, &n)| stage_act(i, n))
        .max()
        .unwrap_or(0);
    let last =
        stage_act(p - 1, stages[p - 1]).max(stages[p - 1] as u128 * per_layer_act) + last_extra;
    let activations = if p == 1 {
        first + last_extra
    } else {
        first.max(middle).max(last)
    };
    let mut out = MemoryBreakdown {
        params_per_gpu: params,
        weights_bytes,
        gradients_bytes,
        optimizer_bytes,
        activations_bytes: u64::try_from(activations).unwrap_or(u64::MAX),
        kv_cache_bytes: 0,
        total_bytes: 0,
    };
    out.total_bytes = out
        .terms()
        .iter()
        .fold(0u64, |a, (_, b)| a.saturating_add(*b));
    out
}

/// Predicts one iteration of `layout` under `stack`. The 2021 stack is
/// [`cost::iteration_time`] exactly (its breakdown filled from it).
///
/// **Errors** for a layout [`check_layout`] refuses.
pub fn iteration_time(
    model: &ModelSpec,
    setup: &TrainSetup,
    cluster: &Cluster,
    layout: &Layout,
    stack: &Stack,
) -> Result<StackIteration, LayoutError> {
    if stack.is_megatron_2021() {
        let it = cost::iteration_time(model, setup, cluster, layout)?;
        let breakdown = StackBreakdown {
            stack: *stack,
            stage_layers: stage_layers(model.layers, layout.pp),
            gemm_s: it.compute_s,
            tp_comm_total_s: it.tp_comm_s,
            dp_comm_total_s: it.dp_comm_s,
            pp_comm_total_s: it.pp_comm_s,
            gemm_efficiency: cost::MATMUL_EFFICIENCY,
            precision: Precision::Bf16,
            context_parallel: 1,
            virtual_stages: 1,
            ..StackBreakdown::default()
        };
        return Ok(StackIteration { it, breakdown });
    }
    check_layout(model, setup, cluster, layout, stack)?;
    let gpu = &cluster.gpu;
    let prec = effective_precision(stack, gpu);
    let (t, p, d) = (layout.tp, layout.pp, layout.dp);
    let cp = stack.context_parallel.max(1);
    let v = stack.virtual_stages.max(1);
    let m = setup.global_batch / (layout.micro_batch * d);
    let layer = layer_cost(model, setup.seq, layout, cluster, stack);
    let stages = stage_layers(model.layers, p);
    let tok = setup.seq as f64 / cp as f64 * layout.micro_batch as f64;
    // The last stage's logits GEMM (kept in bf16, as Transformer Engine keeps the output layer)
    // forward and backward, plus the cross-entropy's passes over the logits.
    let logits_gemm = 3.0
        * gemm_time(
            2.0 * tok * model.hidden as f64 * model.vocab as f64 / t as f64,
            gpu,
            stack,
            Precision::Bf16,
        );
    let ce_bytes = if stack.fused_cross_entropy {
        CE_FUSED_BYTES_PER_LOGIT
    } else {
        CE_UNFUSED_BYTES_PER_LOGIT
    };
    let logits_ew = stream_time(ce_bytes * tok * model.vocab as f64 / t as f64, gpu);
    let layer_total = layer.compute_s() + layer.tp_exposed_s + layer.cp_exposed_s + layer.ep_comm_s;
    let stage_time = |i: usize| {
        let n = stages[i] as f64;
        n * layer_total
            + if i == p - 1 {
                logits_gemm + logits_ew
            } else {
                0.0
            }
    };
    let busiest = (0..p)
        .max_by(|&a, &b| stage_time(a).total_cmp(&stage_time(b)))
        .unwrap_or(0);
    let n_busy = stages[busiest] as f64;
    let with_logits = busiest == p - 1;
    let stage_compute = n_busy * layer.compute_s()
        + if with_logits {
            logits_gemm + logits_ew
        } else {
            0.0
        };
    let stage_tp = n_busy * layer.tp_exposed_s;
    let stage_cp = n_busy * layer.cp_exposed_s;
    let stage_ep = n_busy * layer.ep_comm_s;
    // Pipeline sends: `2sbh/t` bytes each way per chunk boundary (v per micro-batch).
    let pp_stride = t * d * cp;
    let pp_link = cluster.group_link(pp_stride, p);
    let p2p_total = if p > 1 {
        let bytes = 2.0 * tok * model.hidden as f64 / t as f64;
        2.0 * v as f64 * (pp_link.latency_us * 1e-6 + bytes / cluster.p2p_bytes_per_s(pp_stride, p))
    } else {
        0.0
    };
    let p2p_exposed = if stack.pp_overlap { 0.0 } else { p2p_total };
    let slot = stage_compute + stage_tp + stage_cp + stage_ep + p2p_exposed;
    let compute_s = m as f64 * stage_compute;
    let tp_comm_s = m as f64 * (stage_tp + stage_cp);
    let ep_comm_s = m as f64 * stage_ep;
    let pp_comm_s = m as f64 * p2p_exposed;
    let pipeline_bubble_s = (p - 1) as f64 * slot / v as f64;
    // Data-parallel gradient reduction over d·cp ranks (stride t).
    let mem = training_memory(model, setup.seq, setup.global_batch, layout, stack);
    let dp_ranks = d * cp;
    let param_bytes = mem.params_per_gpu.saturating_mul(2);
    let grad_bytes = mem
        .params_per_gpu
        .saturating_mul(if stack.grad_reduce_fp32 { 4 } else { 2 });
    let zero = if stack.distributed_optimizer {
        layout.zero.max(1)
    } else {
        layout.zero
    };
    let ar =
        |bytes: u64| nccl::group_time_s(cluster, CollectiveKind::AllReduce, t, dp_ranks, bytes);
    let rs =
        |bytes: u64| nccl::group_time_s(cluster, CollectiveKind::ReduceScatter, t, dp_ranks, bytes);
    let ag =
        |bytes: u64| nccl::group_time_s(cluster, CollectiveKind::AllGather, t, dp_ranks, bytes);
    let (dp_total, dp_exposed) = if zero >= 3 {
        // FSDP / ZeRO-3: parameters gathered forward and backward per micro-batch, gradients
        // reduce-scattered once: overlapped with the compute it feeds.
        let per_micro = 2.0 * ag(param_bytes);
        let total = m as f64 * per_micro + rs(grad_bytes);
        let hidden = if stack.dp_overlap { compute_s } else { 0.0 };
        (total, (total - hidden).max(0.0))
    } else {
        // ZeRO-2 keeps only its shard of the gradients, so each micro-batch's gradients are
        // reduce-scattered after its backward (DeepSpeed's stage 2 under gradient accumulation;
        // Meta's FSDP for Llama 3, Dubey et al. 2024 §3.3.2), not once an iteration: `m` times
        // the traffic, each behind its own micro-batch's backward.
        let grad_reductions = if zero == 2 { m.max(1) as f64 } else { 1.0 };
        let (reduce, gather) = if zero >= 1 {
            (grad_reductions * rs(grad_bytes), ag(param_bytes))
        } else {
            (ar(grad_bytes), 0.0)
        };
        let total = reduce + gather;
        let last_bwd = grad_reductions * n_busy * layer.backward_s;
        let first_fwd = n_busy * layer.forward_s;
        let exposed = if stack.dp_overlap {
            // Buckets overlap the last micro-batch's backward (and the parameter gather the
            // first forward); the last bucket cannot.
            let bucket =
                (DP_BUCKET_PARAMS.max(1e6 * dp_ranks as f64) * 2.0).min(grad_bytes as f64) as u64;
            let tail = if zero >= 1 { rs(bucket) } else { ar(bucket) };
            (reduce - last_bwd).max(tail) + (gather - first_fwd).max(0.0)
        } else if setup.overlap_dp {
            (reduce - last_bwd).max(0.0) + gather
        } else {
            total
        };
        (total, exposed.min(total))
    };
    let opt_params = if zero >= 1 {
        mem.params_per_gpu as f64 / dp_ranks as f64
    } else {
        mem.params_per_gpu as f64
    };
    let optimizer_s = stream_time(cost::ADAM_STEP_BYTES_PER_PARAM * opt_params, gpu);
    let iteration_time_s = compute_s
        + tp_comm_s
        + ep_comm_s
        + pp_comm_s
        + pipeline_bubble_s
        + dp_exposed
        + optimizer_s;
    let model_flops = flops_per_iteration(model, setup.seq, setup.global_batch, Recompute::None);
    let mut hardware_flops =
        flops_per_iteration(model, setup.seq, setup.global_batch, layout.recompute);
    if stack.flash_attention && layout.recompute == Recompute::Selective {
        // FlashAttention's own recomputation is not counted as selective recomputation.
        hardware_flops = flops_per_iteration(model, setup.seq, setup.global_batch, Recompute::None);
    }
    let rates = cost::Rates::of(
        model_flops,
        hardware_flops,
        iteration_time_s,
        setup,
        cluster,
    );
    let mf = m as f64;
    let layer_share = |x: f64| mf * n_busy * x;
    let it = IterationTime {
        layout: *layout,
        iteration_time_s,
        compute_s,
        tp_comm_s,
        ep_comm_s,
        pp_comm_s,
        pipeline_bubble_s,
        dp_comm_s: dp_exposed,
        optimizer_s,
        micro_batches: m,
        bubble_fraction: (p - 1) as f64 / (v as f64 * m as f64),
        tp_spans_nodes: cluster.group_spans_nodes(1, t),
        pp_spans_nodes: cluster.group_spans_nodes(pp_stride, p),
        dp_spans_nodes: cluster.group_spans_nodes(t, dp_ranks),
        model_flops,
        hardware_flops,
        tflops_per_gpu: rates.tflops_per_gpu,
        mfu: rates.mfu,
        tokens_per_s: rates.tokens_per_s,
        layer: cost::LayerTime {
            forward_compute_s: layer.forward_s,
            backward_compute_s: layer.backward_s - layer.recompute_s,
            recompute_s: layer.recompute_s,
            tp_comm_s: layer.tp_exposed_s,
            tp_collectives: if t > 1 {
                4 + if layout.recompute == Recompute::Full {
                    2
                } else {
                    0
                }
            } else {
                0
            },
            ep_comm_s: layer.ep_comm_s,
            ep_all_to_alls: layer.ep_all_to_alls,
        },
        fits: mem.total_bytes <= rates.memory_limit_bytes,
        memory: mem,
        memory_limit_bytes: rates.memory_limit_bytes,
    };
    let breakdown = StackBreakdown {
        stack: *stack,
        stage_layers: stages.clone(),
        gemm_s: layer_share(layer.gemm_s) + if with_logits { mf * logits_gemm } else { 0.0 },
        attention_s: layer_share(layer.attention_s + layer.cp_merge_s),
        elementwise_s: layer_share(layer.elementwise_s)
            + if with_logits { mf * logits_ew } else { 0.0 },
        recompute_s: layer_share(layer.recompute_s),
        tp_comm_total_s: layer_share(layer.tp_comm_s),
        tp_comm_hidden_s: layer_share(layer.tp_comm_s - layer.tp_exposed_s),
        dp_comm_total_s: dp_total,
        dp_comm_hidden_s: dp_total - dp_exposed,
        pp_comm_total_s: mf * p2p_total,
        pp_comm_hidden_s: mf * (p2p_total - p2p_exposed),
        cp_comm_s: m as f64 * stage_cp,
        ep_comm_total_s: layer_share(layer.ep_comm_total_s),
        ep_comm_hidden_s: layer_share(layer.ep_comm_total_s - layer.ep_comm_s),
        moe_dispatch_s: layer_share(layer.moe_dispatch_s),
        moe_grouped_gemm_utilisation: layer.moe.grouped_gemm_utilisation,
        moe_busiest_over_mean: layer.moe.busiest_over_mean,
        gemm_efficiency: if stack.gemm_per_generation {
            gemm_efficiency(Generation::of(gpu), prec)
        } else {
            cost::MATMUL_EFFICIENCY
        },
        precision: prec,
        context_parallel: cp,
        virtual_stages: v,
    };
    Ok(StackIteration { it, breakdown })
}

/// One row of a what-if table: the iteration with one switch flipped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhatIf {
    pub switch: Switch,
    /// Whether the switch is on in the base stack.
    pub on: bool,
    /// Iteration time with the switch flipped (`None`: the flipped layout is invalid, e.g.
    /// interleaving without pipeline stages).
    pub flipped_time_s: Option<f64>,
    /// `flipped / base − 1`: what turning it off costs (positive) or on gains (negative).
    pub change: Option<f64>,
    /// Whether the flipped layout still fits in memory.
    pub flipped_fits: Option<bool>,
}

/// Flips each switch of `stack` in turn (FlashAttention, fused kernels, GEMM table, FP8, each
/// overlap, distributed optimizer, interleaving) and prices the result.
pub fn what_if(
    model: &ModelSpec,
    setup: &TrainSetup,
    cluster: &Cluster,
    layout: &Layout,
    stack: &Stack,
) -> Result<Vec<WhatIf>, LayoutError> {
    let base = iteration_time(model, setup, cluster, layout, stack)?;
    let t0 = base.it.iteration_time_s;
    Ok(Switch::ALL
        .into_iter()
        .map(|sw| {
            let flipped = sw.toggled(stack);
            let r = iteration_time(model, setup, cluster, layout, &flipped).ok();
            WhatIf {
                switch: sw,
                on: sw.is_on(stack),
                flipped_time_s: r.as_ref().map(|x| x.it.iteration_time_s),
                change: r.as_ref().map(|x| x.it.iteration_time_s / t0 - 1.0),
                flipped_fits: r.as_ref().map(|x| x.it.fits),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::hardware::Catalogue;
    use crate::capacity::models::ModelPreset;

    /// The cross-entropy streams what Megatron-Core's kernels stream: the unfused path costs
    /// 12 bytes a logit more than the fused one, on every micro-batch of the last stage, at the
    /// GPU's streaming rate, and nothing else moves.
    #[test]
    fn the_cross_entropy_streams_what_megatron_s_kernels_stream() {
        let cat = Catalogue::default();
        let c = Cluster::new(&cat, "h100", 8, 8, "ib400").unwrap();
        let m = ModelSpec::gpt("1.7B", 24, 2048, 16, 131072, 4096);
        let setup = TrainSetup::new(4096, 64);
        let layout = Layout::new(1, 1, 8);
        let time = |fused| {
            let st = Stack {
                fused_cross_entropy: fused,
                ..Stack::current()
            };
            iteration_time(&m, &setup, &c, &layout, &st)
                .unwrap()
                .it
                .iteration_time_s
        };
        let micro_batches = 64.0 / 8.0;
        let logits = 4096.0 * 131072.0;
        let expected =
            micro_batches * (CE_UNFUSED_BYTES_PER_LOGIT - CE_FUSED_BYTES_PER_LOGIT) * logits
                / (c.gpu.memory_bandwidth_gbs * 1e9 * cost::MEMORY_EFFICIENCY);
        let got = time(false) - time(true);
        assert!(
            (got - expected).abs() < 1e-9 * expected.max(1.0) + 1e-9,
            "unfused minus fused: {got} s, expected {expected} s"
        );
        assert!(Stack {
            fused_cross_entropy: false,
            ..Stack::current()
        }
        .label()
        .contains("unfused-ce"));
    }

    /// The MoE terms (issue 39, item 4) vanish for a dense model; for an MoE one the busiest
    /// rank's load multiplies the experts and the all-to-alls, an all-to-all across nodes pays
    /// the fitted efficiency, and EP overlap hides at most what leaves the SMs' share.
    #[test]
    fn moe_terms_vanish_for_dense_models_and_price_moe_ones() {
        let cat = Catalogue::default();
        let c = Cluster::new(&cat, "h100", 64, 8, "ib400").unwrap();
        let base = Layout::new(1, 1, 64);
        let dense = ModelPreset::Llama3_8b.spec();
        let l = layer_cost(&dense, 4096, &base, &c, &Stack::current());
        assert_eq!(
            (
                l.moe_dispatch_s,
                l.ep_comm_total_s,
                l.moe.expert_gemm_s,
                l.ep_all_to_alls
            ),
            (0.0, 0.0, 0.0, 0)
        );
        let m = ModelPreset::Mixtral8x7b.spec();
        let ep8 = Layout { ep: 8, ..base };
        let balanced = Stack {
            moe_routing: MoeRouting::ForceBalanced,
            ..Stack::current()
        };
        let b = layer_cost(&m, 4096, &ep8, &c, &balanced);
        let d = layer_cost(&m, 4096, &ep8, &c, &Stack::current());
        assert!(b.moe_dispatch_s > 0.0 && b.ep_comm_total_s > 0.0);
        assert_eq!(b.ep_all_to_alls, 4);
        let busiest = moe_cost::DROPLESS_BUSIEST_OVER_MEAN;
        assert!((d.moe.expert_gemm_s / b.moe.expert_gemm_s - busiest).abs() < 1e-9);
        assert!((d.ep_comm_total_s / b.ep_comm_total_s - busiest).abs() < 1e-9);
        // The experts cost at least their FLOPs at the dense GEMMs' rate.
        let flops = 2.0 * 4096.0 * m.routed_matmul_params_per_layer();
        assert!(b.moe.expert_gemm_s >= 3.0 * gemm_time(flops, &c.gpu, &balanced, Precision::Bf16));
        // EP 16 spans two nodes: the all-to-all across them at the fitted efficiency.
        let ep16 = Layout { ep: 16, ..base };
        let m16 = ModelSpec {
            experts: 16,
            ..m.clone()
        };
        let x = layer_cost(&m16, 4096, &ep16, &c, &balanced);
        let bytes = (4096.0 * 2.0 * 4096.0 * 2.0) as u64;
        let nccl = nccl::group_time_s(&c, CollectiveKind::AllToAll, 1, 16, bytes);
        let want = 4.0 * nccl / moe_cost::ALL_TO_ALL_ACROSS_NODES_EFFICIENCY;
        assert!((x.ep_comm_total_s / want - 1.0).abs() < 1e-9);
        // Overlap: exposed max(comm − compute, f·comm), f = 24/132 on an H100.
        let o = layer_cost(
            &m,
            4096,
            &ep8,
            &c,
            &Stack {
                ep_overlap: true,
                ..balanced
            },
        );
        let f = moe_cost::EP_COMM_SMS / 132.0;
        let want = (b.ep_comm_total_s - b.compute_s()).max(f * b.ep_comm_total_s);
        assert!(
            (o.ep_comm_s - want).abs() < 1e-12,
            "{} vs {want}",
            o.ep_comm_s
        );
        assert!(o.ep_comm_s < b.ep_comm_s);
    }

    /// FP8 GEMMs on a GPU without FP8 tensor cores are refused with the rule, not priced in
    /// bf16 (issue 39: `plan --precision fp8` on an A100 was ignored without a word).
    #[test]
    fn fp8_without_fp8_tensor_cores_is_an_error() {
        let cat = Catalogue::default();
        let m = ModelPreset::Llama3_8b.spec();
        let lay = Layout {
            tp: 8,
            pp: 1,
            dp: 1,
            micro_batch: 1,
            sp: true,
            recompute: Recompute::None,
            zero: 1,
            ep: 1,
            etp: 0,
        };
        let setup = TrainSetup {
            seq: 8192,
            global_batch: 8,
            overlap_dp: true,
        };
        let fp8 = Stack {
            precision: Precision::Fp8,
            ..Stack::current()
        };
        let a100 = Cluster::new(&cat, "a100", 8, 8, "ib200").unwrap();
        let e = iteration_time(&m, &setup, &a100, &lay, &fp8).unwrap_err();
        assert!(matches!(e, LayoutError::NoFp8(_)), "{e}");
        assert!(e.to_string().contains("--precision fp8"), "{e}");
        let h100 = Cluster::new(&cat, "h100", 8, 8, "ib400").unwrap();
        assert!(iteration_time(&m, &setup, &h100, &lay, &fp8).is_ok());
        // The what-if's FP8 row on the A100 has no time (the app and CLI say why).
        let wi = what_if(&m, &setup, &a100, &lay, &Stack::current()).unwrap();
        let row = wi.iter().find(|w| w.switch == Switch::Fp8).unwrap();
        assert!(row.flipped_time_s.is_none());
    }

    /// Comm-GEMM overlap hides TP traffic over NVLink inside a node, none of a TP group that
    /// spans nodes (every byte over the network is exposed).
    #[test]
    fn tp_overlap_stops_at_the_node() {
        let cat = Catalogue::default();
        let c = Cluster::new(&cat, "h100", 64, 8, "ib400").unwrap();
        let m = ModelPreset::Llama3_70b.spec();
        let cost = |tp: usize| {
            let lay = Layout {
                sp: true,
                ..Layout::new(tp, 1, 64 / tp)
            };
            layer_cost(&m, 8192, &lay, &c, &Stack::current())
        };
        let inside = cost(8);
        assert!(inside.tp_exposed_s < inside.tp_comm_s, "{inside:?}");
        let across = cost(16);
        assert!(across.tp_comm_s > 0.0);
        assert_eq!(across.tp_exposed_s, across.tp_comm_s, "{across:?}");
    }

    #[test]
    fn stage_split_rule() {
        assert_eq!(stage_layers(96, 8), vec![12; 8]);
        let s = stage_layers(126, 16);
        assert_eq!(s.iter().sum::<usize>(), 126);
        assert_eq!((s[0], s[15]), (7, 7));
        assert!(s[1..15].iter().all(|&n| n == 8));
        assert_eq!(stage_layers(10, 4), vec![2, 3, 3, 2]);
        assert_eq!(stage_layers(11, 4), vec![3, 3, 3, 2]);
        assert_eq!(stage_layers(5, 1), vec![5]);
    }

    #[test]
    fn megatron_2021_is_the_classic_model() {
        let cat = Catalogue::default();
        let c = Cluster::new(&cat, "a100", 64, 8, "ib200").unwrap();
        let m = ModelPreset::Gpt3_175b.spec();
        let lay = Layout {
            sp: true,
            recompute: Recompute::Selective,
            zero: 1,
            ..Layout::new(8, 8, 1)
        };
        let setup = TrainSetup::new(2048, 64);
        let old = cost::iteration_time(&m, &setup, &c, &lay).unwrap();
        let new = iteration_time(&m, &setup, &c, &lay, &Stack::megatron_2021()).unwrap();
        assert_eq!(old, new.it);
        // Today's stack is faster on the same layout.
        let cur = iteration_time(&m, &setup, &c, &lay, &Stack::current()).unwrap();
        assert!(cur.it.iteration_time_s < old.iteration_time_s);
    }

    #[test]
    fn uneven_stages_plan_405b_on_16_stages() {
        let cat = Catalogue::default();
        let c = Cluster::new(&cat, "h100", 2048, 8, "ib400").unwrap();
        let m = ModelPreset::Llama31_405b.spec();
        let lay = Layout {
            sp: true,
            zero: 1,
            ..Layout::new(8, 16, 16)
        };
        let setup = TrainSetup::new(8192, 2048);
        // The 2021 stack refuses it, today's plans it.
        assert!(matches!(
            iteration_time(&m, &setup, &c, &lay, &Stack::megatron_2021()),
            Err(LayoutError::LayersNotDivisible {
                pp: 16,
                layers: 126
            })
        ));
        let r = iteration_time(&m, &setup, &c, &lay, &Stack::current()).unwrap();
        assert_eq!(r.breakdown.stage_layers[0], 7);
        assert!(r.it.tokens_per_s > 0.0 && r.it.iteration_time_s.is_finite());
    }

    #[test]
    fn each_switch_moves_the_time_the_right_way() {
        let cat = Catalogue::default();
        let c = Cluster::new(&cat, "h100", 64, 8, "ib400").unwrap();
        let m = ModelPreset::Llama3_70b.spec();
        let lay = Layout {
            sp: true,
            zero: 1,
            ..Layout::new(4, 4, 4)
        };
        let setup = TrainSetup::new(8192, 128);
        let stack = Stack {
            virtual_stages: 5,
            ..Stack::current()
        };
        let rows = what_if(&m, &setup, &c, &lay, &stack).unwrap();
        for r in &rows {
            let ch = r.change.unwrap();
            match r.switch {
                // Turning FP8 on (it is off) makes it faster.
                Switch::Fp8 => assert!(ch < 0.0, "{:?}", r),
                // The distributed optimizer saves memory, not time.
                Switch::DistributedOptimizer => {}
                // The table's Hopper bf16 rate (0.538) is below the single 0.70 it replaces, so
                // turning the table off makes this bf16 run faster: it moves, either way.
                Switch::GemmPerGeneration => assert!(ch.abs() > 0.01, "{:?}", r),
                // Every other switch is on; turning it off costs time.
                _ => assert!(ch >= 0.0, "{:?}", r),
            }
        }
        let fa = rows
            .iter()
            .find(|r| r.switch == Switch::FlashAttention)
            .unwrap();
        assert!(fa.change.unwrap() > 0.05, "{fa:?}");
    }

    #[test]
    fn cp_merges_count_transformer_engines_passes() {
        assert_eq!(cp_merge_bytes(100.0, 10.0, 1), (0.0, 0.0));
        // cp = 2: forward 8·kv + 4·q + (6·q + 4·kv); backward 8·kv + 4·q + 8·kv + (6·q + 16·kv).
        assert_eq!(cp_merge_bytes(100.0, 10.0, 2), (1120.0, 1320.0));
        // Each further step adds one merge, forward and backward.
        let (f2, b2) = cp_merge_bytes(100.0, 10.0, 2);
        let (f4, b4) = cp_merge_bytes(100.0, 10.0, 4);
        assert_eq!((f4 - f2, b4 - b2), (2.0 * 640.0, 2.0 * 760.0));
    }

    #[test]
    fn cp_costs_merges_and_exposes_sends_per_step() {
        let cat = Catalogue::default();
        let m = ModelPreset::Llama3_8b.spec();
        let lay = Layout::new(1, 1, 4);
        let cp2 = Stack {
            context_parallel: 2,
            ..Stack::current()
        };
        // Over NVLink the K/V sends hide behind each step's attention; the merges cost HBM time.
        let c = Cluster::new(&cat, "h100", 8, 8, "ib400").unwrap();
        let with = layer_cost(&m, 8192, &lay, &c, &cp2);
        let without = layer_cost(&m, 4096, &lay, &c, &Stack::current());
        assert_eq!(with.cp_exposed_s, 0.0);
        assert!(with.cp_merge_s > 0.0);
        let (f, b) = cp_merge_bytes(4096.0 * 4096.0, 4096.0 * 1024.0, 2);
        let expect = (f + b) / (c.gpu.memory_bandwidth_gbs * 1e9 * cost::MEMORY_EFFICIENCY);
        assert!((with.cp_merge_s - expect).abs() < 1e-12);
        // Same tokens per GPU, twice the keys per query: the GEMMs match, attention doubles.
        assert!((with.gemm_s - without.gemm_s).abs() < 1e-12);
        assert!(with.compute_s() > without.compute_s() + without.attention_s);
        // Across nodes on 100 GbE, 32K tokens at TP 8: a send outlasts its step's attention
        // and shows, where the whole layer's attention would have hidden all three.
        let slow = Cluster::new(&cat, "h100", 16, 8, "eth100").unwrap();
        let lay8 = Layout::new(8, 1, 1);
        let cp = Stack {
            context_parallel: 2,
            ..Stack::current()
        };
        let l = layer_cost(&m, 32768, &lay8, &slow, &cp);
        assert!(l.cp_exposed_s > 0.0, "{l:?}");
        let kv_bytes = 2.0 * 2.0 * 16384.0 * 1024.0 / 8.0;
        let ring = nccl::group_time_s(&slow, CollectiveKind::AllGather, 8, 2, 2 * kv_bytes as u64);
        assert!(
            3.0 * ring < l.attention_s,
            "hidden behind the whole layer's attention"
        );
    }
}
