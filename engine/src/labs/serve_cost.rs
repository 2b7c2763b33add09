//! The serving cost model: prefill (compute-bound) and decode (memory- and latency-bound) of a
//! [`ModelSpec`] at tensor-parallel size `tp` on the hardware catalogue.
//!
//! # Decode, one step (one new token for each of `batch` sequences that hold `context` tokens)
//! Every GPU reads its shard of every weight once per step (16-bit weights:
//! `2 · (l · layer_params_per_rank + V·h/tp)` bytes, [`memory::layer_params_per_rank`]) and its
//! share of the KV cache of every sequence (`batch · context ·`
//! [`memory::kv_cache_bytes_per_token_per_gpu`], which stops shrinking at `tp = kv_heads`). The
//! FLOPs are `2·batch` per weight plus attention's `4·context·h/tp` per token per layer. The time
//! is the roofline of the two, the bytes at the fraction of the HBM peak a streaming kernel
//! reaches on that GPU ([`decode_hbm_efficiency`]): at small batch the bytes win by far.
//!
//! On top come two things the bytes do not show:
//! - **Fixed costs** ([`Launch`]): every layer's dozen kernels pay a launch and a ramp-up and
//!   tail that no byte count sees, and every step pays the sampling over the vocabulary and the
//!   host's turn. Without CUDA graphs (FasterTransformer, early TensorRT-LLM) that is
//!   [`EAGER_LAYER_S`] a layer and [`EAGER_STEP_S`] a step; CUDA graphs (vLLM, SGLang, today's
//!   TensorRT-LLM) remove the host launches ([`GRAPH_LAYER_S`], [`GRAPH_STEP_S`]).
//! - **The all-reduces**: two of `batch·h` 16-bit values per layer (attention's and the MLP's
//!   `g`) and one for the vocabulary-parallel embedding, priced as the engine runs them
//!   ([`AllReduceImpl`]): NCCL, with the calibrated predictor of `tplab collective`
//!   ([`crate::capacity::nccl`]: its protocols, NVLS, its latency floors, the inter-node link
//!   when the group spans nodes), or a custom one-shot / two-shot all-reduce over NVLink as vLLM
//!   and TensorRT-LLM run it ([`custom_all_reduce_s`]), with its size and group limits (outside
//!   them the engines fall back to NCCL, and so does the model). The logits are all-gathered by
//!   NCCL. They are small, so their time is mostly latency: it does not shrink with `tp`, and
//!   across the node boundary each one pays InfiniBand.
//!
//! # Pipeline stages (TP × PP)
//! With `pp` stages (GPUs ordered TP fastest, then PP: stage `s` holds GPUs `s·tp … s·tp+tp−1`
//! and `l/pp` consecutive layers; the first also the embedding, the last the output projection
//! and the sampling), a step's token passes through every stage in turn: stage `s+1` cannot
//! start its layers before stage `s` has sent it the activation. The time of one step is the sum
//! of the stages' own times (each a roofline of its bytes and FLOPs on its GPUs, its layers'
//! fixed costs, its TP all-reduces) plus the `pp − 1` sends of the `batch·h` 16-bit activation
//! from each rank to its peer in the next stage ([`pipeline_send_s`]): over NVLink when both
//! stages are in one node, over the inter-node link otherwise. Decoding one batch, stages wait
//! for each other, so pipeline stages add memory (each GPU holds `1/(tp·pp)` of the weights)
//! but never cut the time per token: TP 8 × PP 3 decodes at about TP 8's pace, plus the sends.
//! (Engines that keep several batches in flight, one per stage, raise throughput, not one
//! request's latency; not modeled.)
//!
//! # Prefill (time to first token)
//! The prompt's `batch·prompt` tokens go through every weight at once: `2·tokens` FLOPs per
//! weight plus causal attention's `2·prompt²·h` per sequence per layer, split `1/tp`; the roofline
//! makes it compute-bound at any real prompt length. Its all-reduces carry `tokens·h` values; its
//! layers pay the fixed costs once.
//!
//! Every constant, its source and the published figures it was fitted on or checked against are
//! in `docs/calibration.md` ("Serving"); `engine/tests/serve_calibration.rs` reprints the table.

use crate::capacity::cost::{MATMUL_EFFICIENCY, MEMORY_EFFICIENCY};
use crate::capacity::hardware::{Cluster, GpuSpec};
use crate::capacity::memory::{self, USABLE_MEMORY_FRACTION};
use crate::capacity::models::ModelSpec;
use crate::capacity::nccl;
use crate::capacity::stack::{
    Generation, BLACKWELL_FP8_GEMM_EFFICIENCY, HOPPER_FP8_GEMM_EFFICIENCY,
};
use crate::collectives::CollectiveKind;
use crate::dtype::DType;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Bytes per 16-bit weight, activation and KV-cache element (bf16/fp16 serving).
pub const SERVE_BYTES: u64 = 2;

/// How the linear layers' weights are stored and multiplied (`tplab serve --weights`). The
/// norms, biases, router, embedding and output layer stay 16-bit in every case, as FP8 and
/// INT4 checkpoints keep them (TensorRT Model Optimizer and vLLM leave `lm_head` unquantised).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WeightFormat {
    /// 16-bit weights, 16-bit GEMMs.
    #[default]
    Bf16,
    /// FP8 (E4M3) weights and activations: 1 byte a weight, GEMMs at the FP8 tensor-core rate
    /// (Ada, Hopper, Blackwell; per-tensor or per-channel scales, negligible bytes).
    Fp8,
    /// INT4 weight-only (W4A16: GPTQ/AWQ through Marlin or Machete kernels): 4 bits a weight
    /// plus a 16-bit scale per group of 128 ([`INT4_BYTES_PER_WEIGHT`]), dequantised to 16
    /// bits inside the GEMM, which runs at the 16-bit rate less the dequantisation
    /// ([`int4_dequant_efficiency`]).
    Int4,
}

/// INT4 weight bytes with group-128 scales: `4 + 16/128 = 4.125` bits = 33/64 byte (Marlin's
/// README: "the optimal 3.87x (note the 0.125 bits storage overhead of the group scales)",
/// IST-DASLab/marlin).
pub const INT4_BYTES_PER_WEIGHT: (u64, u64) = (33, 64);

impl WeightFormat {
    pub const ALL: [WeightFormat; 3] = [WeightFormat::Bf16, WeightFormat::Fp8, WeightFormat::Int4];

    pub fn name(self) -> &'static str {
        match self {
            WeightFormat::Bf16 => "bf16",
            WeightFormat::Fp8 => "fp8",
            WeightFormat::Int4 => "int4",
        }
    }

    /// Bytes per linear-layer weight as a fraction `(numerator, denominator)`.
    pub fn bytes_per_weight(self) -> (u64, u64) {
        match self {
            WeightFormat::Bf16 => (SERVE_BYTES, 1),
            WeightFormat::Fp8 => (1, 1),
            WeightFormat::Int4 => INT4_BYTES_PER_WEIGHT,
        }
    }
}

impl std::str::FromStr for WeightFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        WeightFormat::ALL
            .into_iter()
            .find(|w| w.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown weight format '{s}'; expected bf16, fp8 or int4"))
    }
}

/// How the KV cache is stored (`tplab serve --kv-cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KvCacheFormat {
    /// 2 bytes an element.
    #[default]
    Bf16,
    /// FP8 (E4M3 with a per-tensor scale): 1 byte an element, dequantised in the attention
    /// kernel (TensorRT-LLM's `--fp8_kv_cache`/`kv_cache_dtype fp8`, vLLM's
    /// `--kv-cache-dtype fp8`); refused on GPUs without FP8, as FP8 weights are.
    Fp8,
}

impl KvCacheFormat {
    pub const ALL: [KvCacheFormat; 2] = [KvCacheFormat::Bf16, KvCacheFormat::Fp8];

    pub fn name(self) -> &'static str {
        match self {
            KvCacheFormat::Bf16 => "bf16",
            KvCacheFormat::Fp8 => "fp8",
        }
    }

    /// Bytes per KV-cache element.
    pub fn bytes(self) -> u64 {
        match self {
            KvCacheFormat::Bf16 => SERVE_BYTES,
            KvCacheFormat::Fp8 => 1,
        }
    }
}

impl std::str::FromStr for KvCacheFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        KvCacheFormat::ALL
            .into_iter()
            .find(|w| w.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown KV-cache format '{s}'; expected bf16 or fp8"))
    }
}

/// The fraction of the 16-bit GEMM rate an INT4 weight-only (W4A16) GEMM keeps once it is
/// compute-bound, the rest going to dequantising the weights. While it is bandwidth-bound the
/// dequantisation hides under the weight loads: Marlin reaches "close to ideal (4x) speedups up
/// to batchsizes of 16-32 tokens" (IST-DASLab/marlin README), so the model streams INT4 bytes
/// at the same HBM efficiency as 16-bit ones. **Sourced, not fitted**: GPUStack's vLLM 0.9.2
/// measurements of Qwen3-8B under load (gpustack/gpustack
/// `docs/performance-lab/references/the-impact-of-quantization-on-vllm-inference-performance.md`,
/// ShareGPT, 1000 prompts, mean time per output token, BF16 against INT4 W4A16): A100 200.02
/// against 261.81 ms (GPTQ-Marlin) = 0.764; H100 126.55 against 130.54 ms (W4A16, Machete) =
/// 0.969. Those are whole steps (attention and the rest unchanged), so the GEMMs alone lose
/// somewhat more: a bound, used as is. Other generations: Ampere's, the larger cost.
pub fn int4_dequant_efficiency(gpu: &GpuSpec) -> f64 {
    match Generation::of(gpu) {
        Generation::Hopper | Generation::Blackwell => INT4_HOPPER_DEQUANT_EFFICIENCY,
        _ => INT4_AMPERE_DEQUANT_EFFICIENCY,
    }
}

/// See [`int4_dequant_efficiency`]: A100, GPTQ-Marlin, 200.02 / 261.81.
pub const INT4_AMPERE_DEQUANT_EFFICIENCY: f64 = 200.02 / 261.81;
/// See [`int4_dequant_efficiency`]: H100, W4A16 (Machete), 126.55 / 130.54.
pub const INT4_HOPPER_DEQUANT_EFFICIENCY: f64 = 126.55 / 130.54;

/// The fraction of the FP8 dense peak a serving engine's FP8 GEMMs reach: the bare cuBLASLt
/// FP8 8192³ GEMM as measured (Azure AI-benchmarking-guide: H100 1290.1 of 1979 TFLOP/s =
/// [`HOPPER_FP8_GEMM_EFFICIENCY`]; GB200 2781.5 of 5000 = [`BLACKWELL_FP8_GEMM_EFFICIENCY`]).
/// Serving has none of training's casts and transposes (the weights are stored in FP8), so
/// not training's fitted 0.475. A GPU of a `--hardware` file with FP8: Hopper's.
pub fn fp8_gemm_efficiency(gpu: &GpuSpec) -> f64 {
    match Generation::of(gpu) {
        Generation::Blackwell => BLACKWELL_FP8_GEMM_EFFICIENCY,
        _ => HOPPER_FP8_GEMM_EFFICIENCY,
    }
}

/// Which all-reduce the serving engine runs for the TP group's small all-reduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AllReduceImpl {
    /// NCCL, as NCCL's tuner picks the algorithm and protocol ([`nccl::predict`]).
    #[default]
    Nccl,
    /// A custom peer-to-peer all-reduce over NVLink (vLLM's `custom_all_reduce`, TensorRT-LLM's
    /// one-shot / two-shot kernels) where it applies, NCCL elsewhere.
    Custom,
}

impl AllReduceImpl {
    pub const ALL: [AllReduceImpl; 2] = [AllReduceImpl::Nccl, AllReduceImpl::Custom];

    pub fn name(self) -> &'static str {
        match self {
            AllReduceImpl::Nccl => "nccl",
            AllReduceImpl::Custom => "custom",
        }
    }
}

impl std::str::FromStr for AllReduceImpl {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AllReduceImpl::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown all-reduce '{s}'; expected nccl or custom"))
    }
}

/// How the engine issues a step's kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Launch {
    /// The decode step replayed as a CUDA graph, the host preparing the next step while the
    /// GPU runs this one (vLLM, SGLang since v0.4's overlap scheduler, TensorRT-LLM today).
    #[default]
    Graphs,
    /// CUDA graphs, but the host's turn between two steps (scheduling the batch, preparing
    /// its inputs, reading the sampled tokens back) not overlapped with the GPU: SGLang before
    /// v0.4 (2024), whose "zero-overhead batch scheduler" hid it. The GPU waits
    /// [`HOST_STEP_S`] a step on top of [`Launch::Graphs`]'s costs.
    GraphsSync,
    /// Every kernel launched from the host (FasterTransformer, TensorRT-LLM before CUDA graphs,
    /// a framework without graph capture).
    Eager,
}

impl Launch {
    pub const ALL: [Launch; 3] = [Launch::Graphs, Launch::GraphsSync, Launch::Eager];

    pub fn name(self) -> &'static str {
        match self {
            Launch::Graphs => "graphs",
            Launch::GraphsSync => "graphs-sync",
            Launch::Eager => "eager",
        }
    }

    /// Fixed seconds per layer (its kernels' launches, ramp-ups and tails).
    pub fn layer_s(self) -> f64 {
        match self {
            Launch::Graphs | Launch::GraphsSync => GRAPH_LAYER_S,
            Launch::Eager => EAGER_LAYER_S,
        }
    }

    /// Fixed seconds per step (sampling over the vocabulary, the host's turn where the GPU
    /// waits for it).
    pub fn step_s(self) -> f64 {
        match self {
            Launch::Graphs => GRAPH_STEP_S,
            Launch::GraphsSync => GRAPH_STEP_S + HOST_STEP_S,
            Launch::Eager => EAGER_STEP_S,
        }
    }
}

impl std::str::FromStr for Launch {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Launch::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!("unknown launch mode '{s}'; expected graphs, graphs-sync or eager")
            })
    }
}

/// Kernels of one transformer layer in a decode step, the TP all-reduces aside: SGLang's
/// `LlamaDecoderLayer` (sgl-project/sglang `python/sglang/srt/models/llama.py`) runs the input
/// RMSNorm (fused with the residual add), the QKV GEMM, the rotary embedding, the attention
/// (the KV-cache store and the decode kernel), the output GEMM, the post-attention RMSNorm,
/// the gate/up GEMM, SiLU·mul and the down GEMM: 10. vLLM's Llama is the same sequence.
pub const LAYER_KERNELS: usize = 10;
/// Fixed cost per layer and decode step without CUDA graphs, seconds. **Fitted** to
/// FasterTransformer's single-GPU GPT rows on A100 80GB (NVIDIA/FasterTransformer
/// `docs/gpt_guide.md`, "Performance": GPT-350M, GPT-1.3B and GPT-6.7B, batch 1, 512 in / 32
/// out): what each step takes beyond its bytes is 2.5, 2.6 and 3.2 ms for 24, 24 and 32 layers,
/// nearly independent of the width (1024 to 4096): a cost per layer (its [`LAYER_KERNELS`]
/// kernel boundaries, ~7 µs each with the host's launch) plus one per step
/// ([`EAGER_STEP_S`]). Held out: every other row.
pub const EAGER_LAYER_S: f64 = 70e-6;
/// Fixed cost per decode step without CUDA graphs (FasterTransformer's top-p sampling over
/// 51200 logits, the host's turn), seconds. **Fitted** with [`EAGER_LAYER_S`].
pub const EAGER_STEP_S: f64 = 0.8e-3;
/// Fixed cost of one kernel of a batch-1 decode step replayed as a CUDA graph, seconds: the
/// host launches go, each kernel's ramp-up and tail (and the graph's node-to-node gap) stay.
/// **Assumption** (no public per-kernel breakdown inside a graph found): about a third of
/// eager's 7 µs. Checked, held out, against today's CUDA-graph engines (SGLang 0.5.3's
/// Qwen3-8B steps, NIM's Llama-3.3-70B steps; docs/calibration.md, "Serving").
pub const GRAPH_KERNEL_S: f64 = 2.5e-6;
/// Fixed cost per layer with CUDA graphs: [`LAYER_KERNELS`] × [`GRAPH_KERNEL_S`] = 25 µs.
pub const GRAPH_LAYER_S: f64 = LAYER_KERNELS as f64 * GRAPH_KERNEL_S;
/// Fixed cost per decode step with CUDA graphs (sampling over the vocabulary, the logits'
/// processing), seconds. **Assumption**, checked as [`GRAPH_KERNEL_S`].
pub const GRAPH_STEP_S: f64 = 0.4e-3;
/// The host's turn between two decode steps where the engine does not overlap it with the GPU
/// ([`Launch::GraphsSync`]): scheduling the batch, preparing its inputs and metadata, reading
/// the sampled tokens back. SGLang v0.4's release notes (lmsys.org/blog/2024-12-04-sglang-v0-4,
/// "Zero-Overhead Batch Scheduler") say an unoptimised engine "can spend as much as half of
/// its time on CPU overhead" and that v0.4 overlaps it. **Fitted** on one row: SGLang's
/// Llama-3-8B at TP 1, batch 1, CUDA graphs, 7.37 ms a step (sgl-project/sglang issue #1008),
/// 0.99 ms above [`Launch::Graphs`]' 6.38 ms. Held out: the same engine at TP 8 (3.35 ms) and
/// at batch 128 (11.84 ms).
pub const HOST_STEP_S: f64 = 1.0e-3;

/// The largest all-reduce vLLM's custom all-reduce takes, bytes (`max_size = 8192 * 1024` in
/// vllm-project/vllm `vllm/distributed/device_communicators/custom_all_reduce.py`); larger
/// ones go to NCCL.
pub const CUSTOM_AR_MAX_BYTES: u64 = 8 << 20;
/// Group sizes the custom all-reduce supports (vLLM `custom_all_reduce.py`:
/// `_SUPPORTED_WORLD_SIZES = [2, 4, 6, 8]`), all inside one NVLink node.
pub const CUSTOM_AR_WORLD_SIZES: [usize; 4] = [2, 4, 6, 8];
/// Latency of one custom all-reduce kernel (launch inside the graph, the peers' flag barrier),
/// µs. **Fitted** to vLLM's one-shot (`ca_1stage`) on 4×H100 in vllm-project/vllm PR #24532's
/// benchmark: 10, 14, 23 and 38 µs for 0.5, 1, 2 and 4 MB, which the one-shot's bytes
/// ((n−1)·size read from the peers at the NVLink rate × `LINK_EFFICIENCY`) plus 5.5 µs give
/// within 10%.
pub const CUSTOM_AR_LATENCY_US: f64 = 5.5;

/// The fraction of the HBM peak a decode step's streaming kernels reach. Hopper: the Azure
/// AI-benchmarking-guide's HBM copy bandwidth (`Azure Results/NDv5 Results.md`: H100 2.90 of
/// 3.35 TB/s, H200 4.01 of 4.8 TB/s); others: [`MEMORY_EFFICIENCY`] (0.8, the training
/// model's assumption; no public A100 copy table with its setup found).
pub fn decode_hbm_efficiency(gpu: &GpuSpec) -> f64 {
    let n = gpu.name.to_ascii_lowercase();
    if n.starts_with("h200") {
        4.01 / 4.8
    } else if n.starts_with("h100") || n.starts_with("h800") {
        2.90 / 3.35
    } else {
        MEMORY_EFFICIENCY
    }
}

/// The rate the linear layers' GEMMs run at on `gpu` with `weights`, FLOP/s: 16-bit at
/// [`MATMUL_EFFICIENCY`]; FP8 at the FP8 peak × [`fp8_gemm_efficiency`]; INT4 weight-only at
/// the 16-bit rate × [`int4_dequant_efficiency`]. Errors where the GPU has no FP8.
pub fn gemm_rate(gpu: &GpuSpec, weights: WeightFormat) -> Result<f64, ServeCostError> {
    let bf16 = gpu.peak_flops(DType::Bf16) * MATMUL_EFFICIENCY;
    Ok(match weights {
        WeightFormat::Bf16 => bf16,
        WeightFormat::Fp8 => {
            gpu.require_fp8(FP8_WEIGHTS_WHAT, FP8_WEIGHTS_FIX)? * fp8_gemm_efficiency(gpu)
        }
        WeightFormat::Int4 => bf16 * int4_dequant_efficiency(gpu),
    })
}

const FP8_WEIGHTS_WHAT: &str = "--weights fp8 (FP8 GEMMs)";
const FP8_WEIGHTS_FIX: &str =
    "serve in bf16 or as INT4 weight-only (--weights bf16 or --weights int4), or pick a GPU \
     with FP8 (--gpu h100, h200 or b200)";
const FP8_KV_WHAT: &str = "--kv-cache fp8";
const FP8_KV_FIX: &str =
    "keep the KV cache in bf16 (--kv-cache bf16) or pick a GPU with FP8 (--gpu h100, h200 or \
     b200)";

/// Whether `gpu` can run `weights` and `kv_cache`: FP8 needs FP8 tensor cores
/// ([`NoFp8`](crate::capacity::hardware::NoFp8)), INT4 weight-only kernels Turing or newer
/// ([`ServeCostError::NoInt4`]).
pub fn check_formats(
    gpu: &GpuSpec,
    weights: WeightFormat,
    kv_cache: KvCacheFormat,
) -> Result<(), ServeCostError> {
    if weights == WeightFormat::Fp8 {
        gpu.require_fp8(FP8_WEIGHTS_WHAT, FP8_WEIGHTS_FIX)?;
    }
    if kv_cache == KvCacheFormat::Fp8 {
        gpu.require_fp8(FP8_KV_WHAT, FP8_KV_FIX)?;
    }
    if weights == WeightFormat::Int4 && Generation::of(gpu) == Generation::Volta {
        return Err(ServeCostError::NoInt4 {
            gpu: gpu.display_name().to_string(),
        });
    }
    Ok(())
}

/// Seconds for the bytes and FLOPs of a step on `gpu`: the larger of the compute time (the
/// linear layers' `gemm_flops` at `gemm_rate`, attention's `attention_flops` at the 16-bit
/// rate × [`MATMUL_EFFICIENCY`]) and the bytes at [`decode_hbm_efficiency`].
fn serve_roofline_s(
    gemm_flops: f64,
    attention_flops: f64,
    bytes: f64,
    gpu: &GpuSpec,
    gemm_rate: f64,
) -> f64 {
    let compute = gemm_flops / gemm_rate
        + attention_flops / (gpu.peak_flops(DType::Bf16) * MATMUL_EFFICIENCY);
    let memory = bytes / (gpu.memory_bandwidth_gbs * 1e9 * decode_hbm_efficiency(gpu));
    compute.max(memory)
}

/// How one all-reduce of a serving step runs, and its time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AllReducePrice {
    pub bytes: u64,
    pub time_s: f64,
    /// `"nccl ring LL"`, `"custom one-shot"`, …
    pub how: &'static str,
}

/// vLLM's custom all-reduce of `size` bytes over `n` GPUs of one NVLink node, or `None` where
/// vLLM would not run it (group spans nodes, size not in [`CUSTOM_AR_WORLD_SIZES`], message
/// above [`CUSTOM_AR_MAX_BYTES`], more than 2 GPUs without NVLink). One-shot (every GPU reads
/// the `n−1` other buffers and sums) for 2 GPUs, or below 512 KiB up to 4 GPUs and 256 KiB up to
/// 8 (vLLM `csrc/custom_all_reduce.cuh`, `cross_device_reduce_1stage`), two-shot
/// (reduce-scatter then all-gather, `(n−1)/n` of the buffer each, two barriers) above.
pub fn custom_all_reduce_s(cluster: &Cluster, n: usize, size: u64) -> Option<(f64, &'static str)> {
    if n < 2
        || cluster.group_spans_nodes(1, n)
        || !CUSTOM_AR_WORLD_SIZES.contains(&n)
        || size > CUSTOM_AR_MAX_BYTES
    {
        return None;
    }
    let link = &cluster.intra_node;
    if n > 2 && nccl::LinkKind::of(link) != nccl::LinkKind::NvLink {
        return None;
    }
    let bw = link.bandwidth_bytes_per_s() * crate::capacity::cost::LINK_EFFICIENCY;
    let s = size as f64;
    let one_shot = n == 2 || (n <= 4 && size < 512 << 10) || (n <= 8 && size < 256 << 10);
    let nf = n as f64;
    Some(if one_shot {
        (
            CUSTOM_AR_LATENCY_US * 1e-6 + (nf - 1.0) * s / bw,
            "custom one-shot",
        )
    } else {
        (
            2.0 * CUSTOM_AR_LATENCY_US * 1e-6 + 2.0 * (nf - 1.0) / nf * s / bw,
            "custom two-shot",
        )
    })
}

/// One all-reduce of `size` bytes over the TP group of `tp` GPUs (stride 1) as `imp` runs it.
pub fn all_reduce_price(
    cluster: &Cluster,
    tp: usize,
    size: u64,
    imp: AllReduceImpl,
) -> Result<AllReducePrice, ServeCostError> {
    if tp < 2 || size == 0 {
        return Ok(AllReducePrice {
            bytes: size,
            time_s: 0.0,
            how: "none",
        });
    }
    if imp == AllReduceImpl::Custom {
        if let Some((t, how)) = custom_all_reduce_s(cluster, tp, size) {
            return Ok(AllReducePrice {
                bytes: size,
                time_s: t,
                how,
            });
        }
    }
    let c = nccl_choice(cluster, CollectiveKind::AllReduce, tp, size)?;
    Ok(AllReducePrice {
        bytes: size,
        time_s: c.time_s,
        how: nccl_how(c.algo, c.proto),
    })
}

fn nccl_choice(
    cluster: &Cluster,
    kind: CollectiveKind,
    tp: usize,
    size: u64,
) -> Result<nccl::Choice, ServeCostError> {
    let size = size.clamp(1, nccl::MAX_MESSAGE_BYTES);
    let fabric = nccl::Fabric::of_group(cluster, 1, tp).map_err(|e| ServeCostError::Nccl {
        detail: e.to_string(),
    })?;
    nccl::predict(kind, size, &fabric, None, None).map_err(|e| ServeCostError::Nccl {
        detail: e.to_string(),
    })
}

fn nccl_how(algo: nccl::NcclAlgo, proto: nccl::NcclProto) -> &'static str {
    use nccl::{NcclAlgo as A, NcclProto as P};
    match (algo, proto) {
        (A::Ring, P::Ll) => "nccl ring LL",
        (A::Ring, P::Ll128) => "nccl ring LL128",
        (A::Ring, P::Simple) => "nccl ring Simple",
        (A::Tree, P::Ll) => "nccl tree LL",
        (A::Tree, P::Ll128) => "nccl tree LL128",
        (A::Tree, P::Simple) => "nccl tree Simple",
        (A::Nvls, _) => "nccl NVLS",
        (A::NvlsTree, _) => "nccl NVLS tree",
        (A::P2p, _) => "nccl p2p",
    }
}

/// One serving setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServeSetup {
    pub tp: usize,
    /// Pipeline stages (1: none); each holds `layers / pp` layers on its own `tp` GPUs.
    #[serde(default = "one_stage")]
    pub pp: usize,
    /// Concurrent sequences decoded together.
    pub batch: usize,
    /// Tokens each sequence already holds in the KV cache.
    pub context: usize,
    /// The all-reduce of the TP collectives.
    pub all_reduce: AllReduceImpl,
    /// CUDA graphs or eager launches.
    pub launch: Launch,
    /// How the linear layers' weights are stored (bf16, FP8, INT4 weight-only).
    #[serde(default)]
    pub weights: WeightFormat,
    /// How the KV cache is stored (bf16, FP8).
    #[serde(default)]
    pub kv_cache: KvCacheFormat,
}

fn one_stage() -> usize {
    1
}

/// Why a serving setting cannot be modeled.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ServeCostError {
    #[error("{field} must be at least 1 (got 0)")]
    Zero { field: &'static str },
    #[error(
        "TP={tp} does not split {model}: its {heads} query heads and {kv} KV heads need heads % tp \
         == 0 and either kv % tp == 0 or tp % kv == 0; valid TP sizes up to 64: {valid:?}"
    )]
    BadTp {
        tp: usize,
        model: String,
        heads: usize,
        kv: usize,
        valid: Vec<usize>,
    },
    #[error(
        "PP={pp} does not split {model}'s {layers} layers into equal stages: pipeline stages \
         need layers % pp == 0; valid PP sizes up to 64: {valid:?}"
    )]
    BadPp {
        pp: usize,
        model: String,
        layers: usize,
        valid: Vec<usize>,
    },
    #[error(
        "TP × PP = {tp} × {pp} = {need} GPUs, but the cluster has {have}; give more GPUs \
         (more nodes) or a smaller TP or PP"
    )]
    TooFewGpus {
        tp: usize,
        pp: usize,
        need: usize,
        have: usize,
    },
    #[error("{what} overflows: {detail}; use smaller numbers")]
    Overflow { what: &'static str, detail: String },
    #[error("the TP group's collective cannot be priced: {detail}")]
    Nccl { detail: String },
    /// FP8 weights or KV cache on a GPU without FP8 tensor cores.
    #[error(transparent)]
    NoFp8(#[from] crate::capacity::hardware::NoFp8),
    #[error(
        "a prefill of {tokens} tokens in chunks of {chunk} is {passes} forward passes, more \
         than the {max} tplab prices one by one; give a larger --prefill-chunk (0: the prompts \
         at once) or fewer or shorter prompts"
    )]
    TooManyPasses {
        tokens: u64,
        chunk: u64,
        passes: u64,
        max: u64,
    },
    #[error(
        "--weights int4 needs INT4 weight-only kernels (Marlin, Machete, AWQ), which need \
         compute capability 7.5 or newer (Marlin 8.0: Ampere and later); the {gpu} is a Volta \
         (7.0); serve in bf16 (--weights bf16) or pick a newer GPU (--gpu a100, h100, …)"
    )]
    NoInt4 { gpu: String },
}

/// TP sizes up to 64 that split `model`'s heads and KV heads (vLLM's rule: `heads % tp == 0`,
/// and `kv % tp == 0` or `tp % kv == 0`).
pub fn valid_tp(model: &ModelSpec) -> Vec<usize> {
    (1..=64)
        .filter(|&t| {
            model.heads.is_multiple_of(t)
                && (model.kv_heads.is_multiple_of(t) || t.is_multiple_of(model.kv_heads.max(1)))
        })
        .collect()
}

/// Pipeline sizes up to 64 that split `model`'s layers into equal stages.
pub fn valid_pp(model: &ModelSpec) -> Vec<usize> {
    (1..=64.min(model.layers.max(1)))
        .filter(|&p| model.layers.is_multiple_of(p))
        .collect()
}

fn check(model: &ModelSpec, cluster: &Cluster, s: &ServeSetup) -> Result<(), ServeCostError> {
    for (field, v) in [
        ("tp", s.tp),
        ("pp", s.pp),
        ("batch", s.batch),
        ("context", s.context),
    ] {
        if v == 0 {
            return Err(ServeCostError::Zero { field });
        }
    }
    if !model.layers.is_multiple_of(s.pp) || s.pp > 64 {
        return Err(ServeCostError::BadPp {
            pp: s.pp,
            model: model.name.clone(),
            layers: model.layers,
            valid: valid_pp(model),
        });
    }
    if !valid_tp(model).contains(&s.tp) {
        return Err(ServeCostError::BadTp {
            tp: s.tp,
            model: model.name.clone(),
            heads: model.heads,
            kv: model.kv_heads,
            valid: valid_tp(model),
        });
    }
    let need = s.tp.saturating_mul(s.pp);
    if need > cluster.gpus {
        return Err(ServeCostError::TooFewGpus {
            tp: s.tp,
            pp: s.pp,
            need,
            have: cluster.gpus,
        });
    }
    let tokens = s
        .batch
        .checked_mul(s.context)
        .ok_or(ServeCostError::Overflow {
            what: "batch × context",
            detail: format!("{} × {}", s.batch, s.context),
        })?;
    check_formats(&cluster.gpu, s.weights, s.kv_cache)?;
    let per = memory::kv_cache_bytes_per_token_per_gpu(model, s.tp, s.pp, s.kv_cache.bytes());
    (tokens as u64)
        .checked_mul(per)
        .ok_or(ServeCostError::Overflow {
            what: "the KV cache",
            detail: format!("{tokens} tokens × {per} bytes"),
        })?;
    Ok(())
}

/// Weight bytes one GPU reads per decode step for `batch` sequences: its blocks (MoE: only the
/// experts the batch's tokens are routed to, at most all of them) and its vocabulary rows of
/// the output projection; the linear layers' weights in `weights`, the rest 16-bit.
pub fn decode_weight_bytes_per_gpu(
    model: &ModelSpec,
    tp: usize,
    batch: usize,
    weights: WeightFormat,
) -> u64 {
    stage_weight_bytes_per_gpu(model, tp, batch, model.layers, true, weights)
}

/// [`decode_weight_bytes_per_gpu`] for one pipeline stage of `layers` layers; the `last` stage
/// also holds the output projection and the final norm.
pub fn stage_weight_bytes_per_gpu(
    model: &ModelSpec,
    tp: usize,
    batch: usize,
    layers: usize,
    last: bool,
    weights: WeightFormat,
) -> u64 {
    let t = tp.max(1) as u64;
    let mut layer = memory::layer_params_per_rank(model, tp);
    let mut linear = memory::linear_weights_per_rank(model, tp).min(layer);
    if model.experts > 1 {
        let touched = (batch.saturating_mul(model.experts_per_token)).min(model.experts) as u64;
        // Per layer on average: dense layers among the MoE ones have no experts to skip.
        let untouched = if model.dense_layers == 0 {
            model.experts as u64 - touched
        } else {
            (model.experts as u64 - touched) * model.moe_layers() as u64
                / model.layers.max(1) as u64
        };
        layer = layer.saturating_sub(untouched * model.mlp_params_per_expert() / t);
        let mats = if model.gated_mlp { 3 } else { 2 };
        let expert_matrices = mats * model.hidden as u64 * model.ffn as u64 / t;
        linear = linear
            .saturating_sub(untouched.saturating_mul(expert_matrices))
            .min(layer);
    }
    let head = if last {
        (model.vocab as u64 * model.hidden as u64).div_ceil(t) + model.final_norm_params()
    } else {
        0
    };
    let (num, den) = weights.bytes_per_weight();
    let l = layers as u64;
    let quantised = (l.saturating_mul(linear))
        .saturating_mul(num)
        .div_ceil(den.max(1));
    SERVE_BYTES
        .saturating_mul(l.saturating_mul(layer - linear).saturating_add(head))
        .saturating_add(quantised)
}

/// The links the `pp − 1` sends between consecutive stages cross (GPUs ordered TP fastest,
/// then PP), with whether each crosses the node boundary: the inter-node link where some
/// rank's peer in the next stage is on another node, the intra-node link otherwise.
pub fn pipeline_links(
    cluster: &Cluster,
    tp: usize,
    pp: usize,
) -> Vec<(bool, &crate::capacity::hardware::LinkSpec)> {
    let gpn = cluster.gpus_per_node.max(1);
    (0..pp.saturating_sub(1))
        .map(|s| {
            let crosses = (0..tp).any(|j| {
                let from = s * tp + j;
                from / gpn != (from + tp) / gpn
            });
            if crosses {
                (true, &cluster.inter_node)
            } else {
                (false, &cluster.intra_node)
            }
        })
        .collect()
}

/// One send of `bytes` from every rank of a stage to its peer in the next, over `link`, seconds:
/// the link's latency, NCCL's per-call overhead ([`nccl::NCCL_CALL_OVERHEAD_US`], as the
/// serving all-reduces pay it) and the bytes at the link's rate × [`crate::capacity::cost::LINK_EFFICIENCY`]
/// (each rank has its own NVLink ports and, across nodes, its own NIC).
pub fn pipeline_send_s(link: &crate::capacity::hardware::LinkSpec, bytes: u64) -> f64 {
    (link.latency_us + nccl::NCCL_CALL_OVERHEAD_US) * 1e-6
        + bytes as f64 / (link.bandwidth_bytes_per_s() * crate::capacity::cost::LINK_EFFICIENCY)
}

/// One decode step's modeled time: with pipeline stages, the byte and FLOP counts are those of
/// one GPU of the last stage (the heaviest: it also holds the output projection), the times
/// the sum over the stages a token passes through.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecodeTime {
    pub setup: ServeSetup,
    pub weight_bytes_per_gpu: u64,
    pub kv_bytes_per_gpu: u64,
    pub flops_per_gpu: f64,
    /// Roofline time of the step's compute (weights + KV cache read, FLOPs).
    pub compute_s: f64,
    /// Time the weights alone take to stream from HBM (the `1/tp` part).
    pub weights_s: f64,
    /// Time the KV cache takes to stream.
    pub kv_s: f64,
    /// Fixed costs: kernel launches and tails per layer, sampling and the host per step.
    pub fixed_s: f64,
    /// All TP collectives of the step.
    pub collective_s: f64,
    /// One of the `2·l` all-reduces.
    pub all_reduce_s: f64,
    /// How that all-reduce runs (`"nccl ring LL"`, `"custom one-shot"`, …).
    pub all_reduce_how: String,
    pub all_reduces: usize,
    /// The `pp − 1` sends of the activation between pipeline stages (0 without stages).
    #[serde(default)]
    pub pipeline_send_s: f64,
    /// Of those sends, how many cross the node boundary.
    #[serde(default)]
    pub pipeline_sends_across_nodes: usize,
    /// `compute_s + fixed_s + collective_s + pipeline_send_s`: the time per output token of
    /// each sequence.
    pub step_s: f64,
    /// `batch / step_s`: the output tokens one TP × PP group (one replica) makes a second.
    pub tokens_per_s: f64,
    /// `tokens_per_s / (tp · pp)`: what each GPU of the replica contributes.
    #[serde(default)]
    pub tokens_per_s_per_gpu: f64,
    /// Replicas of this setting one node holds (`gpus_per_node / (tp · pp)`, rounded down; 0
    /// when a replica spans nodes).
    #[serde(default)]
    pub replicas_per_node: usize,
    /// Output tokens a node makes a second: `replicas_per_node × tokens_per_s`, or a replica
    /// that spans `n` nodes' `tokens_per_s / n` (the GPUs a node gives it).
    #[serde(default)]
    pub tokens_per_s_per_node: f64,
    /// The TP group spans nodes (its all-reduces pay the inter-node link).
    pub spans_nodes: bool,
    /// Weights and KV cache fit in [`USABLE_MEMORY_FRACTION`] of each GPU.
    pub fits: bool,
    pub memory_per_gpu_bytes: u64,
    /// Of which the weights (the busiest stage's GPU), in their format.
    #[serde(default)]
    pub weights_memory_bytes: u64,
    /// Of which the KV cache of `batch × context` tokens, in its format.
    #[serde(default)]
    pub kv_memory_bytes: u64,
    /// What a GPU offers them: [`USABLE_MEMORY_FRACTION`] of its memory.
    #[serde(default)]
    pub usable_memory_bytes: u64,
}

/// Models one decode step of `model` on `cluster` (a TP group wider than
/// `cluster.gpus_per_node` spans nodes).
pub fn decode_time(
    model: &ModelSpec,
    cluster: &Cluster,
    setup: ServeSetup,
) -> Result<DecodeTime, ServeCostError> {
    check(model, cluster, &setup)?;
    let gpu = &cluster.gpu;
    let (tp, pp, b, c) = (setup.tp, setup.pp, setup.batch as f64, setup.context as f64);
    let t = tp as f64;
    let h = model.hidden as f64;
    let stage_layers = model.layers / pp;
    let kv_per_token =
        memory::kv_cache_bytes_per_token_per_gpu(model, tp, pp, setup.kv_cache.bytes());
    let kv_bytes_per_gpu = (setup.batch * setup.context) as u64 * kv_per_token;
    let rate = gemm_rate(gpu, setup.weights)?;
    // One stage: its weight bytes per GPU, FLOPs per GPU, and the roofline times of the whole
    // step, the weights alone and the KV cache alone. The linear layers' GEMMs run at the
    // weights' rate, attention over the cache at the 16-bit rate (an FP8 cache is dequantised
    // in the kernel; the output layer stays 16-bit, so it goes with attention).
    let stage = |layers: usize, last: bool| {
        let weight_bytes =
            stage_weight_bytes_per_gpu(model, tp, setup.batch, layers, last, setup.weights);
        let linear = b * 2.0 * layers as f64 * model.matmul_params_per_layer_active() as f64 / t;
        let head = if last {
            b * 2.0 * model.vocab as f64 * h / t
        } else {
            0.0
        };
        // Multi-head latent attention decodes in its absorbed form (DeepSeek-V2, §2.1.3;
        // vLLM's and SGLang's MLA kernels): every head's scores against the cached latent and
        // rope key, `kv_lora + rope` wide, and its context over the latent, `kv_lora` wide.
        let head_width = match &model.mla {
            Some(m) => (2 * m.kv_lora_rank + m.qk_rope_head_dim) as f64 / 2.0,
            None => model.head_dim() as f64,
        };
        let attention = b * layers as f64 * 4.0 * c * (model.heads as f64 / t) * head_width;
        let bytes = weight_bytes as f64 + kv_bytes_per_gpu as f64;
        (
            weight_bytes,
            linear + head + attention,
            serve_roofline_s(linear, head + attention, bytes, gpu, rate),
            serve_roofline_s(0.0, 0.0, weight_bytes as f64, gpu, rate),
        )
    };
    // The pp − 1 stages before the last are alike; the last adds the output projection.
    let (_, _, mid_s, mid_weights_s) = stage(stage_layers, false);
    let (weight_bytes_per_gpu, flops_per_gpu, last_s, last_weights_s) = stage(stage_layers, true);
    let before = (pp - 1) as f64;
    let compute_s = before * mid_s + last_s;
    let weights_s = before * mid_weights_s + last_weights_s;
    let kv_s = pp as f64 * serve_roofline_s(0.0, 0.0, kv_bytes_per_gpu as f64, gpu, rate);
    let fixed_s = model.layers as f64 * setup.launch.layer_s() + setup.launch.step_s();
    let act = setup.batch as u64 * model.hidden as u64 * SERVE_BYTES;
    let ar = all_reduce_price(cluster, tp, act, setup.all_reduce)?;
    let all_reduces = if tp > 1 { 2 * model.layers } else { 0 };
    // The vocabulary-parallel embedding's all-reduce (one more of the same size), and the
    // logits' all-gather (NCCL: the custom kernels only all-reduce).
    let embed_s = if tp > 1 { ar.time_s } else { 0.0 };
    let logits = setup.batch as u64 * model.vocab as u64 * SERVE_BYTES;
    let gather_s = if tp > 1 {
        nccl_choice(cluster, CollectiveKind::AllGather, tp, logits)?.time_s
    } else {
        0.0
    };
    let collective_s = all_reduces as f64 * ar.time_s + embed_s + gather_s;
    let links = pipeline_links(cluster, tp, pp);
    let pipeline_send_s = links.iter().map(|l| pipeline_send_s(l.1, act)).sum::<f64>();
    let pipeline_sends_across_nodes = links.iter().filter(|l| l.0).count();
    let step_s = compute_s + fixed_s + collective_s + pipeline_send_s;
    let mem = memory::serving_memory_in(
        model,
        tp,
        pp,
        setup.batch,
        setup.context,
        setup.weights.bytes_per_weight(),
        setup.kv_cache.bytes(),
    );
    let usable_memory_bytes = (gpu.memory_bytes() * USABLE_MEMORY_FRACTION) as u64;
    Ok(DecodeTime {
        setup,
        weight_bytes_per_gpu,
        kv_bytes_per_gpu,
        flops_per_gpu,
        compute_s,
        weights_s,
        kv_s,
        fixed_s,
        collective_s,
        all_reduce_s: ar.time_s,
        all_reduce_how: ar.how.to_string(),
        all_reduces,
        pipeline_send_s,
        pipeline_sends_across_nodes,
        step_s,
        tokens_per_s: b / step_s,
        tokens_per_s_per_gpu: b / step_s / (tp * pp) as f64,
        replicas_per_node: replicas_per_node(cluster, tp, pp),
        tokens_per_s_per_node: tokens_per_s_per_node(cluster, tp, pp, b / step_s),
        spans_nodes: cluster.group_spans_nodes(1, tp),
        fits: mem.total_bytes <= usable_memory_bytes,
        memory_per_gpu_bytes: mem.total_bytes,
        weights_memory_bytes: mem.weights_bytes,
        kv_memory_bytes: mem.kv_cache_bytes,
        usable_memory_bytes,
    })
}

/// Replicas of a `tp × pp` setting that fit in one node of `cluster`: `gpus_per_node / (tp ·
/// pp)` rounded down (2 × TP 4 or 1 × TP 8 on 8 GPUs); 0 when one replica needs more than a
/// node.
pub fn replicas_per_node(cluster: &Cluster, tp: usize, pp: usize) -> usize {
    cluster.gpus_per_node / tp.saturating_mul(pp).max(1)
}

/// Output tokens one node makes a second when a replica makes `replica_tokens_per_s`: the
/// node's replicas together, or, for a replica wider than a node, the share of its GPUs the
/// node holds (`gpus_per_node / (tp · pp)`).
pub fn tokens_per_s_per_node(
    cluster: &Cluster,
    tp: usize,
    pp: usize,
    replica_tokens_per_s: f64,
) -> f64 {
    let gpus = tp.saturating_mul(pp).max(1);
    match replicas_per_node(cluster, tp, pp) {
        0 => replica_tokens_per_s * cluster.gpus_per_node as f64 / gpus as f64,
        r => replica_tokens_per_s * r as f64,
    }
}

/// The prefill of `batch` prompts of `prompt` tokens: time to first token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrefillTime {
    pub tp: usize,
    #[serde(default = "one_stage")]
    pub pp: usize,
    pub batch: usize,
    pub prompt: usize,
    pub flops_per_gpu: f64,
    pub compute_s: f64,
    /// Fixed costs of the prefill's layers and its step (as one decode step's), once per
    /// forward pass.
    pub fixed_s: f64,
    pub collective_s: f64,
    /// The `pp − 1` sends of the prompt's activations between pipeline stages.
    #[serde(default)]
    pub pipeline_send_s: f64,
    /// Tokens one forward pass takes: `batch · prompt` when the prompts go through at once,
    /// the chunk of a chunked prefill otherwise ([`prefill_time_chunked`]).
    #[serde(default)]
    pub chunk_tokens: u64,
    /// Forward passes: `⌈batch · prompt / chunk_tokens⌉` (1 at once).
    #[serde(default = "one_pass")]
    pub passes: u64,
    /// Until the last prompt's first token: every pass, one after the other.
    pub total_s: f64,
}

fn one_pass() -> u64 {
    1
}

/// vLLM's default token budget of one scheduler step (`max_num_batched_tokens`, the chunk of a
/// chunked prefill) for an OpenAI-compatible server on a GPU of at least 70 GiB that is not an
/// A100 (H100, H200, B200): vllm-project/vllm `vllm/engine/arg_utils.py`,
/// `EngineArgs._set_default_args` (`UsageContext.OPENAI_API_SERVER: 8192`; V1 always chunks).
pub const VLLM_CHUNK_TOKENS_LARGE_GPU: usize = 8192;
/// The same default on other GPUs (A100s, and any GPU under 70 GiB): 2048. vLLM's note: a
/// large budget on A100 reduces throughput (vllm-project/vllm PR #17885).
pub const VLLM_CHUNK_TOKENS_OTHER_GPU: usize = 2048;
/// The memory from which vLLM takes the larger defaults: 70 GiB (`70 * GiB_bytes`).
pub const VLLM_LARGE_GPU_BYTES: f64 = 70.0 * 1024.0 * 1024.0 * 1024.0;
/// vLLM's default cap on the sequences one step decodes (`max_num_seqs`) for an
/// OpenAI-compatible server, on the GPUs of [`VLLM_CHUNK_TOKENS_LARGE_GPU`]: 1024 (same file).
pub const VLLM_MAX_SEQS_LARGE_GPU: usize = 1024;
/// The same cap on other GPUs: 256.
pub const VLLM_MAX_SEQS_OTHER_GPU: usize = 256;

fn vllm_large_gpu(gpu: &GpuSpec) -> bool {
    gpu.memory_bytes() >= VLLM_LARGE_GPU_BYTES && !gpu.name.to_ascii_lowercase().contains("a100")
}

/// The prefill chunk vLLM uses on `gpu` unless told otherwise ([`VLLM_CHUNK_TOKENS_LARGE_GPU`]
/// or [`VLLM_CHUNK_TOKENS_OTHER_GPU`]).
pub fn default_prefill_chunk_tokens(gpu: &GpuSpec) -> usize {
    if vllm_large_gpu(gpu) {
        VLLM_CHUNK_TOKENS_LARGE_GPU
    } else {
        VLLM_CHUNK_TOKENS_OTHER_GPU
    }
}

/// The most sequences vLLM decodes together on `gpu` by default ([`VLLM_MAX_SEQS_LARGE_GPU`]
/// or [`VLLM_MAX_SEQS_OTHER_GPU`]): where a latency–throughput curve over the batch stops.
pub fn default_max_batch(gpu: &GpuSpec) -> usize {
    if vllm_large_gpu(gpu) {
        VLLM_MAX_SEQS_LARGE_GPU
    } else {
        VLLM_MAX_SEQS_OTHER_GPU
    }
}

/// The most forward passes one chunked prefill is priced with (each is summed on its own).
pub const MAX_PREFILL_PASSES: u64 = 1_000_000;

/// Models the prefill (see the module docs) of `setup.batch` prompts of `setup.context` tokens
/// in one forward pass.
pub fn prefill_time(
    model: &ModelSpec,
    cluster: &Cluster,
    setup: ServeSetup,
) -> Result<PrefillTime, ServeCostError> {
    prefill_time_chunked(model, cluster, setup, 0)
}

/// Models a chunked prefill: the `batch` prompts of `setup.context` tokens, one after the
/// other as one stream of tokens, go through the model `chunk_tokens` at a time (0: all at
/// once), as vLLM's and SGLang's schedulers feed them (`max_num_batched_tokens`,
/// `--chunked-prefill-size`).
///
/// ```text
/// stream:  | prompt 0 ........ | prompt 1 ........ | prompt 2 ........ |
/// passes:  |  chunk 0  |  chunk 1  |  chunk 2  |  chunk 3  |  chunk 4 |
/// ```
///
/// Each pass is a forward pass of its own: it reads every weight once, its tokens' FLOPs
/// (attention of a token at position `j` of its prompt over the `j` before it), the KV cache
/// the earlier passes wrote for the prompt it resumes, its `2l + 1` all-reduces of
/// `tokens·h` values and the fixed costs of a step; the passes run one after the other and the
/// last prompt's first token comes after the last. The decode steps of running requests that
/// engines mix into each pass are not counted: this is the time to first token of a batch
/// arriving at an idle server. With one pass it is [`prefill_time`] exactly.
pub fn prefill_time_chunked(
    model: &ModelSpec,
    cluster: &Cluster,
    setup: ServeSetup,
    chunk_tokens: usize,
) -> Result<PrefillTime, ServeCostError> {
    check(model, cluster, &setup)?;
    let (tp, pp) = (setup.tp, setup.pp);
    let t = tp as f64;
    let h = model.hidden as f64;
    let l = model.layers as f64;
    let prompt = setup.context as u64;
    // `check` holds batch × context within usize.
    let total = setup.batch as u64 * prompt;
    let chunk = match chunk_tokens as u64 {
        0 => total,
        c => c.min(total),
    };
    let passes = total.div_ceil(chunk);
    if passes > MAX_PREFILL_PASSES {
        return Err(ServeCostError::TooManyPasses {
            tokens: total,
            chunk,
            passes,
            max: MAX_PREFILL_PASSES,
        });
    }
    let rate = gemm_rate(&cluster.gpu, setup.weights)?;
    // The causal attention core, `2·s²·width` FLOPs a sequence and layer: `h` (the heads'
    // width), or multi-head latent attention's `a·(d_qk + d_v)/2`.
    let attn_width = if model.mla.is_some() {
        model.attention_core_dim()
    } else {
        h
    };
    let kv_per_token =
        memory::kv_cache_bytes_per_token_per_gpu(model, tp, pp, setup.kv_cache.bytes()) as f64;
    // Σ over the stream's first `x` tokens of (position in its prompt + ½): a prompt of `s`
    // tokens sums to s²/2, so its causal attention is `4·h·s²/2 = 2·s²·h` FLOPs a layer.
    let p = prompt as f64;
    let attention_units = |x: u64| {
        let (q, r) = ((x / prompt) as f64, (x % prompt) as f64);
        (q * p * p + r * r) / 2.0
    };
    let stage_layers = model.layers / pp;
    // One pass of `c` tokens from stream position `start`: FLOPs per GPU of the last stage and
    // the stages' roofline times, one after the other.
    let pass = |start: u64, c: u64| {
        let tokens = c as f64;
        let act_bytes = tokens * h * SERVE_BYTES as f64;
        let attention = attention_units(start + c) - attention_units(start);
        // Prompts whose last token is in this pass: their last position goes through the
        // output projection.
        let finished = ((start + c) / prompt - start / prompt) as f64;
        // The cache the earlier passes wrote for the prompt this pass resumes.
        let resumed_bytes = (start % prompt) as f64 * kv_per_token;
        let stage = |layers: usize, last: bool| {
            let ls = layers as f64;
            let linear = tokens * 2.0 * ls * model.matmul_params_per_layer_active() as f64 / t;
            let rest = ls * 4.0 * attn_width * attention / t
                + if last {
                    finished * 2.0 * model.vocab as f64 * h / t
                } else {
                    0.0
                };
            let weights =
                stage_weight_bytes_per_gpu(model, tp, c as usize, layers, last, setup.weights);
            let time = serve_roofline_s(
                linear,
                rest,
                weights as f64 + 2.0 * ls * 4.0 * act_bytes + resumed_bytes,
                &cluster.gpu,
                rate,
            );
            (linear + rest, time)
        };
        let (_, mid_s) = stage(stage_layers, false);
        let (flops, last_s) = stage(stage_layers, true);
        (flops, (pp - 1) as f64 * mid_s + last_s)
    };
    let n_all_reduces = if tp > 1 { 2 * model.layers + 1 } else { 0 };
    let links = pipeline_links(cluster, tp, pp);
    // The collectives and sends of a pass of `c` tokens.
    let comm = |c: u64| -> Result<(f64, f64), ServeCostError> {
        let act = c * model.hidden as u64 * SERVE_BYTES;
        let ar = all_reduce_price(cluster, tp, act, setup.all_reduce)?;
        let sends = links.iter().map(|link| pipeline_send_s(link.1, act)).sum();
        Ok((n_all_reduces as f64 * ar.time_s, sends))
    };
    let full = comm(chunk)?;
    let last_chunk = total - (passes - 1) * chunk;
    let tail = if last_chunk == chunk {
        full
    } else {
        comm(last_chunk)?
    };
    let (mut flops_per_gpu, mut compute_s) = (0.0, 0.0);
    for k in 0..passes {
        let start = k * chunk;
        let (f, s) = pass(start, chunk.min(total - start));
        flops_per_gpu += f;
        compute_s += s;
    }
    let n = passes as f64;
    let fixed_s = n * (l * setup.launch.layer_s() + setup.launch.step_s());
    let collective_s = (n - 1.0) * full.0 + tail.0;
    let pipeline_send_s = (n - 1.0) * full.1 + tail.1;
    Ok(PrefillTime {
        tp,
        pp,
        batch: setup.batch,
        prompt: setup.context,
        flops_per_gpu,
        compute_s,
        fixed_s,
        collective_s,
        pipeline_send_s,
        chunk_tokens: chunk,
        passes,
        total_s: compute_s + fixed_s + collective_s + pipeline_send_s,
    })
}

/// A whole request: prefill of `prompt` tokens (which yields the first token), then
/// `output − 1` decode steps at the mean context `prompt + output/2`. Seconds.
pub fn request_latency_s(
    model: &ModelSpec,
    cluster: &Cluster,
    setup: ServeSetup,
    prompt: usize,
    output: usize,
) -> Result<f64, ServeCostError> {
    let pre = prefill_time(
        model,
        cluster,
        ServeSetup {
            context: prompt,
            ..setup
        },
    )?;
    let steps = output.saturating_sub(1);
    if steps == 0 {
        return Ok(pre.total_s);
    }
    let dec = decode_time(
        model,
        cluster,
        ServeSetup {
            context: prompt + output / 2,
            ..setup
        },
    )?;
    Ok(pre.total_s + steps as f64 * dec.step_s)
}

/// Decode at each TP in `tps` (others fixed), and where more GPUs stop helping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TpSweep {
    pub model: String,
    pub gpu: String,
    pub rows: Vec<DecodeTime>,
    /// The TP with the lowest per-token latency among those that fit.
    pub best_tp: Option<usize>,
    /// The first TP whose doubling (next row) cuts latency by less than 10%: more GPUs stop
    /// paying for themselves there.
    pub diminishing_from: Option<usize>,
}

/// Sweeps `tps` (each must split the model); `base` gives batch, context, all-reduce and
/// launch (its `tp` is ignored).
pub fn sweep_tp(
    model: &ModelSpec,
    cluster: &Cluster,
    tps: &[usize],
    base: ServeSetup,
) -> Result<TpSweep, ServeCostError> {
    let rows = tps
        .iter()
        .map(|&tp| decode_time(model, cluster, ServeSetup { tp, ..base }))
        .collect::<Result<Vec<_>, _>>()?;
    let best_tp = rows
        .iter()
        .filter(|r| r.fits)
        .min_by(|a, b| a.step_s.total_cmp(&b.step_s))
        .map(|r| r.setup.tp);
    let diminishing_from = rows
        .windows(2)
        .find(|w| w[0].fits && w[1].step_s > 0.9 * w[0].step_s)
        .map(|w| w[0].setup.tp);
    Ok(TpSweep {
        model: model.name.clone(),
        gpu: cluster.gpu.name.clone(),
        rows,
        best_tp,
        diminishing_from,
    })
}

/// One way to fill a node with replicas of one TP size (`replicas × tp · pp = gpus_per_node`):
/// 2 × TP 4 against 1 × TP 8 on 8 GPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeSplit {
    pub tp: usize,
    pub pp: usize,
    /// Replicas on the node, each decoding its own batch.
    pub replicas: usize,
    /// One replica's decode step (its `tokens_per_s_per_node` is the node's: every replica's
    /// tokens together), or `None` where the TP size breaks a rule.
    pub decode: Option<DecodeTime>,
    /// The rule a TP size breaks (heads that do not split, a format the GPU lacks).
    pub rule: Option<String>,
}

/// Every TP size that fills one node of `cluster` with whole replicas (`tp · pp` divides
/// `gpus_per_node`), smallest TP (most replicas) first, each replica decoding `base.batch`
/// sequences of `base.context` tokens; a TP size the model cannot take is a row with its rule.
pub fn node_splits(model: &ModelSpec, cluster: &Cluster, base: ServeSetup) -> Vec<NodeSplit> {
    let gpn = cluster.gpus_per_node;
    let pp = base.pp.max(1);
    (1..=gpn)
        .filter(|&tp| gpn.is_multiple_of(tp.saturating_mul(pp)))
        .map(|tp| {
            let d = decode_time(model, cluster, ServeSetup { tp, ..base });
            NodeSplit {
                tp,
                pp,
                replicas: gpn / (tp * pp),
                rule: d.as_ref().err().map(|e| e.to_string()),
                decode: d.ok(),
            }
        })
        .collect()
}

/// The batch sizes of a latency–throughput curve: powers of two from 1 up to `max_batch`
/// (and `max_batch` itself when it is not one).
pub fn curve_batches(max_batch: usize) -> Vec<usize> {
    let mut out: Vec<usize> = std::iter::successors(Some(1usize), |b| b.checked_mul(2))
        .take_while(|&b| b <= max_batch.max(1))
        .collect();
    if out.last() != Some(&max_batch.max(1)) {
        out.push(max_batch.max(1));
    }
    out
}

/// A latency–throughput curve: decode at each batch of `batches` (others as `base`): the time
/// per output token each sequence sees against the tokens a second the replica, each GPU and
/// the node make, and whether the batch's cache still fits.
pub fn batch_curve(
    model: &ModelSpec,
    cluster: &Cluster,
    base: ServeSetup,
    batches: &[usize],
) -> Result<Vec<DecodeTime>, ServeCostError> {
    batches
        .iter()
        .map(|&batch| decode_time(model, cluster, ServeSetup { batch, ..base }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::hardware::Catalogue;
    use crate::capacity::models::ModelPreset;

    fn h100() -> Cluster {
        Cluster::new(&Catalogue::default(), "h100-sxm", 16, 8, "ib-ndr-400").unwrap()
    }

    pub(super) fn setup(tp: usize, batch: usize, context: usize) -> ServeSetup {
        ServeSetup {
            tp,
            pp: 1,
            batch,
            context,
            all_reduce: AllReduceImpl::Nccl,
            launch: Launch::Graphs,
            weights: WeightFormat::Bf16,
            kv_cache: KvCacheFormat::Bf16,
        }
    }

    #[test]
    fn decode_is_memory_bound_and_weights_scale_one_over_tp() {
        let m = ModelPreset::Llama3_70b.spec();
        let c = h100();
        let d1 = decode_time(&m, &c, setup(1, 1, 1024)).unwrap();
        let d4 = decode_time(&m, &c, setup(4, 1, 1024)).unwrap();
        // Every weight but the input embedding (only its looked-up rows are read): 2 bytes each.
        let read = 2 * (m.params() - m.embedding_params());
        assert_eq!(d1.weight_bytes_per_gpu, read);
        let ratio = d1.weight_bytes_per_gpu as f64 / d4.weight_bytes_per_gpu as f64;
        assert!((ratio - 4.0).abs() < 0.05, "{ratio}");
        // Memory-bound: the roofline equals the byte time.
        assert!((d4.compute_s - d4.weights_s - d4.kv_s).abs() < 1e-4 * d4.compute_s);
        // TP=1 does not fit on an 80 GB GPU; TP=4 does.
        assert!(!d1.fits && d4.fits);
        assert_eq!(d4.all_reduces, 160);
        assert_eq!(d1.collective_s, 0.0);
    }

    #[test]
    fn all_reduces_stop_the_scaling_and_crossing_nodes_costs() {
        let m = ModelPreset::Llama3_8b.spec();
        let c = h100();
        let s = sweep_tp(&m, &c, &[1, 2, 4, 8, 16], setup(1, 1, 1024)).unwrap();
        let lat: Vec<f64> = s.rows.iter().map(|r| r.step_s).collect();
        // The weight time halves each doubling; the collective time grows.
        assert!(lat[1] < lat[0]);
        for w in s.rows.windows(2) {
            assert!(w[1].collective_s > w[0].collective_s);
            assert!(w[1].weights_s < 0.51 * w[0].weights_s);
        }
        assert!(s.diminishing_from.is_some());
        // TP=16 spans two 8-GPU nodes: each all-reduce pays InfiniBand.
        assert!(s.rows[4].spans_nodes && !s.rows[3].spans_nodes);
        assert!(s.rows[4].all_reduce_s > s.rows[3].all_reduce_s);
        assert!(lat[4] > lat[3], "{lat:?}");
    }

    #[test]
    fn kv_cache_per_gpu_stops_shrinking_at_kv_heads() {
        let m = ModelPreset::Llama3_70b.spec(); // 8 KV heads
        let c = h100();
        let kv = |tp| {
            decode_time(&m, &c, setup(tp, 8, 4096))
                .unwrap()
                .kv_bytes_per_gpu
        };
        assert_eq!(kv(1), 4 * kv(4));
        assert_eq!(kv(8), kv(16));
    }

    #[test]
    fn prefill_is_compute_bound() {
        let m = ModelPreset::Llama3_70b.spec();
        let c = h100();
        let p = prefill_time(&m, &c, setup(4, 1, 2048)).unwrap();
        let t = p.flops_per_gpu
            / (c.gpu.peak_flops(DType::Bf16) * crate::capacity::cost::MATMUL_EFFICIENCY);
        assert!((p.compute_s - t).abs() < 1e-9, "{} vs {t}", p.compute_s);
        assert!((p.total_s - p.compute_s - p.fixed_s - p.collective_s).abs() < 1e-12);
    }

    #[test]
    fn bad_settings_name_the_rule() {
        let m = ModelPreset::Llama3_70b.spec();
        let e = decode_time(&m, &h100(), setup(3, 1, 1))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("heads % tp") && e.contains("[1, 2, 4, 8, 16, 32, 64]"),
            "{e}"
        );
        let e = decode_time(&m, &h100(), setup(4, 0, 1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("batch"), "{e}");
        let e = decode_time(&m, &h100(), setup(4, usize::MAX, 2)).unwrap_err();
        assert!(matches!(e, ServeCostError::Overflow { .. }), "{e}");
    }
}

#[cfg(test)]
mod all_reduce_tests {
    use super::*;
    use crate::capacity::hardware::Catalogue;

    fn node(gpu: &str, gpus: usize) -> Cluster {
        Cluster::new(&Catalogue::default(), gpu, gpus, 8, "ib-ndr-400").unwrap()
    }

    #[test]
    fn custom_all_reduce_follows_vllm_limits_and_its_bytes() {
        let c = node("h100-sxm", 16);
        // One-shot below 512 KiB at 4 GPUs: latency + 3 buffers read from the peers.
        let bw = 450e9 * crate::capacity::cost::LINK_EFFICIENCY;
        let (t, how) = custom_all_reduce_s(&c, 4, 256 << 10).unwrap();
        assert_eq!(how, "custom one-shot");
        let want = CUSTOM_AR_LATENCY_US * 1e-6 + 3.0 * (256u64 << 10) as f64 / bw;
        assert!((t - want).abs() < 1e-12);
        // Two-shot from 512 KiB at 4 GPUs and from 256 KiB at 8; one-shot always at 2.
        assert_eq!(
            custom_all_reduce_s(&c, 4, 512 << 10).unwrap().1,
            "custom two-shot"
        );
        assert_eq!(
            custom_all_reduce_s(&c, 8, 256 << 10).unwrap().1,
            "custom two-shot"
        );
        assert_eq!(
            custom_all_reduce_s(&c, 2, 4 << 20).unwrap().1,
            "custom one-shot"
        );
        // Outside vLLM's limits: above 8 MiB, 3 GPUs, a group that crosses nodes.
        assert!(custom_all_reduce_s(&c, 8, (8 << 20) + 1).is_none());
        assert!(custom_all_reduce_s(&c, 3, 1024).is_none());
        assert!(custom_all_reduce_s(&c, 16, 1024).is_none());
        // There the serving model falls back to NCCL.
        let p = all_reduce_price(&c, 16, 16 << 10, AllReduceImpl::Custom).unwrap();
        assert!(p.how.starts_with("nccl"), "{}", p.how);
    }

    #[test]
    fn serving_all_reduces_are_nccls_and_custom_is_faster_for_small_ones() {
        // The 70B decode all-reduce (one token: 8192 bf16 values, 16 KiB) on 4 H100s.
        let c = node("h100-sxm", 8);
        let n = all_reduce_price(&c, 4, 16 << 10, AllReduceImpl::Nccl).unwrap();
        let fabric = nccl::Fabric::of_group(&c, 1, 4).unwrap();
        let want = nccl::predict(CollectiveKind::AllReduce, 16 << 10, &fabric, None, None)
            .unwrap()
            .time_s;
        assert_eq!(n.time_s, want);
        let cu = all_reduce_price(&c, 4, 16 << 10, AllReduceImpl::Custom).unwrap();
        assert!(cu.time_s < 0.6 * n.time_s, "{} vs {}", cu.time_s, n.time_s);
        // Decode with the custom all-reduce is faster, by the all-reduces only.
        let m = crate::capacity::models::ModelPreset::Llama3_70b.spec();
        let s = |all_reduce| ServeSetup {
            tp: 4,
            pp: 1,
            batch: 1,
            context: 4096,
            all_reduce,
            launch: Launch::Graphs,
            weights: WeightFormat::Bf16,
            kv_cache: KvCacheFormat::Bf16,
        };
        let a = decode_time(&m, &c, s(AllReduceImpl::Nccl)).unwrap();
        let b = decode_time(&m, &c, s(AllReduceImpl::Custom)).unwrap();
        assert!(b.step_s < a.step_s);
        assert!((a.compute_s - b.compute_s).abs() < 1e-15 && a.fixed_s == b.fixed_s);
        assert!(
            (a.step_s - a.compute_s - a.fixed_s - a.collective_s).abs() < 1e-12,
            "the parts add up"
        );
    }

    #[test]
    fn eager_launches_cost_more_than_graphs() {
        let m = crate::capacity::models::ModelPreset::Llama3_8b.spec();
        let c = node("h100-sxm", 8);
        let s = |launch| ServeSetup {
            tp: 1,
            pp: 1,
            batch: 1,
            context: 1024,
            all_reduce: AllReduceImpl::Nccl,
            launch,
            weights: WeightFormat::Bf16,
            kv_cache: KvCacheFormat::Bf16,
        };
        let g = decode_time(&m, &c, s(Launch::Graphs)).unwrap();
        let e = decode_time(&m, &c, s(Launch::Eager)).unwrap();
        assert!((e.fixed_s - (32.0 * EAGER_LAYER_S + EAGER_STEP_S)).abs() < 1e-12);
        assert!(e.step_s > g.step_s);
        assert!(
            "custom".parse::<AllReduceImpl>().is_ok() && "ring".parse::<AllReduceImpl>().is_err()
        );
        assert!("eager".parse::<Launch>().is_ok() && "lazy".parse::<Launch>().is_err());
    }
}

#[cfg(test)]
mod pipeline_tests {
    use super::*;
    use crate::capacity::hardware::Catalogue;
    use crate::capacity::models::ModelPreset;

    fn cluster(gpu: &str, gpus: usize) -> Cluster {
        Cluster::new(&Catalogue::default(), gpu, gpus, 8, "ib-hdr-200").unwrap()
    }

    fn setup(tp: usize, pp: usize, batch: usize) -> ServeSetup {
        ServeSetup {
            tp,
            pp,
            batch,
            context: 1024,
            all_reduce: AllReduceImpl::Nccl,
            launch: Launch::Eager,
            weights: WeightFormat::Bf16,
            kv_cache: KvCacheFormat::Bf16,
        }
    }

    #[test]
    fn pp1_is_the_single_roofline_of_the_whole_model() {
        // Without stages the step is today's formula: one roofline of every weight (plus the KV
        // cache) and every FLOP on one GPU of the TP group, plus the fixed costs and the TP
        // collectives, nothing for sends. Exactly, not approximately.
        let m = ModelPreset::Llama3_70b.spec();
        let c = cluster("h100-sxm", 16);
        for tp in [1, 2, 4, 8, 16] {
            let d = decode_time(&m, &c, setup(tp, 1, 4)).unwrap();
            let t = tp as f64;
            let w = decode_weight_bytes_per_gpu(&m, tp, 4, WeightFormat::Bf16);
            let kv = 4 * 1024 * memory::kv_cache_bytes_per_token_per_gpu(&m, tp, 1, 2);
            let linear =
                4.0 * 2.0 * m.layers as f64 * m.matmul_params_per_layer_active() as f64 / t;
            let rest = 4.0
                * (2.0 * m.vocab as f64 * m.hidden as f64 / t
                    + m.layers as f64 * 4.0 * 1024.0 * (m.heads as f64 / t) * m.head_dim() as f64);
            assert_eq!(d.weight_bytes_per_gpu, w);
            assert_eq!(d.kv_bytes_per_gpu, kv);
            assert!((d.flops_per_gpu - (linear + rest)).abs() <= 1e-12 * d.flops_per_gpu);
            let rate = gemm_rate(&c.gpu, WeightFormat::Bf16).unwrap();
            assert_eq!(
                d.compute_s,
                serve_roofline_s(linear, rest, w as f64 + kv as f64, &c.gpu, rate)
            );
            assert_eq!(d.pipeline_send_s, 0.0);
            assert_eq!(d.step_s, d.compute_s + d.fixed_s + d.collective_s);
            let p = prefill_time(&m, &c, setup(tp, 1, 4)).unwrap();
            assert_eq!(p.pipeline_send_s, 0.0);
            assert_eq!(p.total_s, p.compute_s + p.fixed_s + p.collective_s);
        }
    }

    #[test]
    fn stages_run_in_turn_plus_the_sends() {
        // Llama 3 8B (32 layers, hidden 4096) at TP 2 × PP 2 on one 8-GPU A100 node, batch 1:
        // stage 0 holds GPUs 0-1, stage 1 GPUs 2-3; one send of 4096 × 2 bytes per rank over
        // NVLink 3 (300 GB/s a direction, 3 µs): 3 µs + NCCL's per-call overhead + 8192 /
        // (300e9 · 0.8) s.
        let m = ModelPreset::Llama3_8b.spec();
        let c = cluster("a100-80gb", 8);
        let one = decode_time(&m, &c, setup(2, 1, 1)).unwrap();
        let two = decode_time(&m, &c, setup(2, 2, 1)).unwrap();
        let send = (3.0 + nccl::NCCL_CALL_OVERHEAD_US) * 1e-6 + 8192.0 / (300e9 * 0.8);
        assert!(
            (two.pipeline_send_s - send).abs() < 1e-15,
            "{}",
            two.pipeline_send_s
        );
        assert_eq!(two.pipeline_sends_across_nodes, 0);
        // The stages' layers add up to the whole model's: the same bytes, read in turn.
        assert!((two.compute_s - one.compute_s).abs() < 1e-12 * one.compute_s);
        assert_eq!(two.fixed_s, one.fixed_s);
        assert_eq!(two.collective_s, one.collective_s);
        let extra = two.step_s - one.step_s;
        assert!((extra - send).abs() < 1e-12, "{extra} vs {send}");
        // Each GPU holds half the layers: about half the weights and the KV cache.
        assert_eq!(two.kv_bytes_per_gpu * 2, one.kv_bytes_per_gpu);
        assert!(two.memory_per_gpu_bytes < one.memory_per_gpu_bytes * 6 / 10);
    }

    #[test]
    fn tp8_pp3_sends_cross_infiniband_between_nodes() {
        // Megatron 530B (105 layers) at TP 8 × PP 3 on 3 nodes: each stage one node, the two
        // sends over HDR InfiniBand (25 GB/s, 6 µs): 2 · (6 µs + NCCL's per-call overhead +
        // 20480·2 / (25e9 · 0.8)).
        let m = crate::labs::serve_published::model("megatron-530b").unwrap();
        let c = cluster("a100-80gb", 24);
        let d = decode_time(&m, &c, setup(8, 3, 1)).unwrap();
        assert_eq!(d.pipeline_sends_across_nodes, 2);
        let want = 2.0 * ((6.0 + nccl::NCCL_CALL_OVERHEAD_US) * 1e-6 + 40960.0 / (25e9 * 0.8));
        assert!((d.pipeline_send_s - want).abs() < 1e-15);
        assert!(!d.spans_nodes, "each stage's TP group stays in its node");
        assert!(d.fits, "a third of 530B per node fits on 8 × 80 GB");
        let tp8 = decode_time(&m, &c, setup(8, 1, 1)).unwrap();
        assert!(!tp8.fits, "530B does not fit on one node");
        assert!((d.step_s - tp8.step_s - want).abs() < 1e-9);
        // TP 4 × PP 2 in one node: the send between GPUs 3 and 4 stays on NVLink.
        let links = pipeline_links(&c, 4, 2);
        assert_eq!(links.len(), 1);
        assert!(!links[0].0);
        // TP 4 × PP 4 on 2 nodes: stage 1 → 2 crosses, the others do not.
        let links: Vec<bool> = pipeline_links(&c, 4, 4).iter().map(|l| l.0).collect();
        assert_eq!(links, vec![false, true, false]);
    }

    #[test]
    fn bad_pipeline_settings_name_the_rule_and_the_fix() {
        let m = crate::labs::serve_published::model("megatron-530b").unwrap(); // 105 layers
        let c = cluster("a100-80gb", 32);
        let e = decode_time(&m, &c, setup(8, 2, 1)).unwrap_err().to_string();
        assert!(
            e.contains("layers % pp == 0") && e.contains("[1, 3, 5, 7, 15, 21, 35]"),
            "{e}"
        );
        let e = decode_time(&m, &c, setup(8, 0, 1)).unwrap_err().to_string();
        assert!(e.contains("pp must be at least 1"), "{e}");
        let e = decode_time(&m, &c, setup(8, 5, 1)).unwrap_err().to_string();
        assert!(
            e.contains("40 GPUs") && e.contains("the cluster has 32"),
            "{e}"
        );
        let e = prefill_time(&m, &c, setup(16, 7, 1)).unwrap_err();
        assert!(matches!(e, ServeCostError::TooFewGpus { .. }), "{e}");
    }
}

#[cfg(test)]
mod format_tests {
    use super::*;
    use crate::capacity::hardware::Catalogue;
    use crate::capacity::models::ModelPreset;

    fn node(gpu: &str) -> Cluster {
        Cluster::new(&Catalogue::default(), gpu, 8, 8, "ib-ndr-400").unwrap()
    }

    fn setup(tp: usize, batch: usize, context: usize, weights: WeightFormat) -> ServeSetup {
        ServeSetup {
            tp,
            pp: 1,
            batch,
            context,
            all_reduce: AllReduceImpl::Nccl,
            launch: Launch::Graphs,
            weights,
            kv_cache: KvCacheFormat::Bf16,
        }
    }

    #[test]
    fn fp8_halves_the_linear_weights_and_the_bandwidth_bound_decode() {
        // Llama 3 70B at TP 4, batch 1: every byte of the linear layers read once a step.
        let m = ModelPreset::Llama3_70b.spec();
        let c = node("h100-sxm");
        let b = decode_time(&m, &c, setup(4, 1, 1024, WeightFormat::Bf16)).unwrap();
        let f = decode_time(&m, &c, setup(4, 1, 1024, WeightFormat::Fp8)).unwrap();
        let linear = m.layers as u64 * memory::linear_weights_per_rank(&m, 4);
        // 2 bytes a linear weight become 1; the output layer and norms stay 16-bit.
        assert_eq!(b.weight_bytes_per_gpu - f.weight_bytes_per_gpu, linear);
        // The output layer (128256 × 8192 / 4 bf16 = 0.5 GB of ~35 GB) keeps the ratio a
        // little above one half.
        let ratio = f.weights_s / b.weights_s;
        assert!(ratio > 0.5 && ratio < 0.52, "{ratio}");
        // Bandwidth-bound: the roofline is the bytes, at FP8 too.
        assert!((f.compute_s - f.weights_s - f.kv_s).abs() < 1e-9 * f.compute_s);
        assert!((b.compute_s - b.weights_s - b.kv_s).abs() < 1e-9 * b.compute_s);
        // The fixed costs and all-reduces do not change (16-bit activations).
        assert_eq!((f.fixed_s, f.collective_s), (b.fixed_s, b.collective_s));
        // The FP8 KV cache halves the cache's bytes and its read.
        let kv8 = decode_time(
            &m,
            &c,
            ServeSetup {
                kv_cache: KvCacheFormat::Fp8,
                ..setup(4, 8, 32768, WeightFormat::Fp8)
            },
        )
        .unwrap();
        let kv16 = decode_time(&m, &c, setup(4, 8, 32768, WeightFormat::Fp8)).unwrap();
        assert_eq!(kv8.kv_bytes_per_gpu * 2, kv16.kv_bytes_per_gpu);
        assert_eq!(kv8.kv_memory_bytes * 2, kv16.kv_memory_bytes);
        assert!((kv8.kv_s * 2.0 - kv16.kv_s).abs() < 1e-12);
    }

    #[test]
    fn fp8_prefill_runs_at_the_fp8_rate() {
        // Compute-bound prefill of 4096 tokens: the linear layers' FLOPs at 1979 TFLOP/s ×
        // 0.652 instead of 989 × 0.7, attention and the output layer at the 16-bit rate.
        let m = ModelPreset::Llama3_70b.spec();
        let c = node("h100-sxm");
        let p = |w| prefill_time(&m, &c, setup(4, 1, 4096, w)).unwrap();
        let (b, f) = (p(WeightFormat::Bf16), p(WeightFormat::Fp8));
        let linear =
            4096.0 * 2.0 * m.layers as f64 * m.matmul_params_per_layer_active() as f64 / 4.0;
        let (bf16, fp8) = (c.gpu.peak_flops(DType::Bf16), c.gpu.peak_fp8_tflops * 1e12);
        let want = linear / (bf16 * 0.7) - linear / (fp8 * HOPPER_FP8_GEMM_EFFICIENCY);
        assert!(
            ((b.compute_s - f.compute_s) - want).abs() < 1e-9,
            "{} vs {want}",
            b.compute_s - f.compute_s
        );
        assert!(
            f.compute_s < 0.6 * b.compute_s,
            "{} {}",
            f.compute_s,
            b.compute_s
        );
    }

    #[test]
    fn without_fp8_tensor_cores_fp8_is_refused_with_the_rule_and_the_fix() {
        let m = ModelPreset::Llama3_8b.spec();
        for gpu in ["a100-80gb", "v100"] {
            let c = node(gpu);
            let e = decode_time(&m, &c, setup(1, 1, 1024, WeightFormat::Fp8)).unwrap_err();
            assert!(matches!(e, ServeCostError::NoFp8(_)), "{e}");
            let e = e.to_string();
            assert!(
                e.contains("--weights fp8")
                    && e.contains("FP8 tensor cores")
                    && e.contains("--gpu h100"),
                "{e}"
            );
            let kv = ServeSetup {
                kv_cache: KvCacheFormat::Fp8,
                ..setup(1, 1, 1024, WeightFormat::Bf16)
            };
            let e = prefill_time(&m, &c, kv).unwrap_err().to_string();
            assert!(
                e.contains("--kv-cache fp8") && e.contains("--kv-cache bf16"),
                "{e}"
            );
        }
        // INT4 weight-only runs on Ampere; Volta has no INT4 kernel.
        assert!(decode_time(&m, &node("a100-80gb"), setup(1, 1, 1, WeightFormat::Int4)).is_ok());
        let e = decode_time(&m, &node("v100"), setup(1, 1, 1, WeightFormat::Int4)).unwrap_err();
        assert!(matches!(e, ServeCostError::NoInt4 { .. }), "{e}");
    }

    #[test]
    fn int4_reads_a_quarter_and_pays_its_dequantisation_when_compute_bound() {
        let m = ModelPreset::Llama3_70b.spec();
        let c = node("a100-80gb");
        let linear = m.layers as u64 * memory::linear_weights_per_rank(&m, 4);
        let b = decode_time(&m, &c, setup(4, 1, 1024, WeightFormat::Bf16)).unwrap();
        let q = decode_time(&m, &c, setup(4, 1, 1024, WeightFormat::Int4)).unwrap();
        // 4 bits and a 16-bit scale per 128 weights: 33/64 byte instead of 2.
        assert_eq!(
            b.weight_bytes_per_gpu - q.weight_bytes_per_gpu,
            2 * linear - (linear * 33).div_ceil(64)
        );
        // Batch 1 is bandwidth-bound: the dequantisation hides under the loads (Marlin).
        assert!((q.compute_s - q.weights_s - q.kv_s).abs() < 1e-9 * q.compute_s);
        assert!(q.weights_s < 0.3 * b.weights_s);
        // A 4096-token prefill is compute-bound: its linear GEMMs run at the 16-bit rate ×
        // 0.764 on Ampere, slower than bf16's.
        let p = |w| prefill_time(&m, &c, setup(4, 1, 4096, w)).unwrap();
        let (pb, pq) = (p(WeightFormat::Bf16), p(WeightFormat::Int4));
        let flops =
            4096.0 * 2.0 * m.layers as f64 * m.matmul_params_per_layer_active() as f64 / 4.0;
        let rate = 312e12 * MATMUL_EFFICIENCY;
        let want = flops / (rate * INT4_AMPERE_DEQUANT_EFFICIENCY) - flops / rate;
        assert!(((pq.compute_s - pb.compute_s) - want).abs() < 1e-9);
        assert!(pq.compute_s > 1.2 * pb.compute_s);
        // Hopper's dequantisation costs less (0.969).
        assert!(int4_dequant_efficiency(&node("h100-sxm").gpu) > INT4_AMPERE_DEQUANT_EFFICIENCY);
    }

    #[test]
    fn llama3_70b_fits_one_h200_in_fp8_not_in_bf16_and_one_h100_only_in_int4() {
        // 70.6B parameters: 141.4 GB in bf16. One H200 (141 GB) offers 126.9 GB at 90%: bf16
        // does not fit, FP8 does (linear layers 1 byte, the 16-bit embedding and output layer
        // 4.2 GB: 73.0 GB), with room for a long cache.
        let m = ModelPreset::Llama3_70b.spec();
        let c = node("h200");
        let b = decode_time(&m, &c, setup(1, 1, 4096, WeightFormat::Bf16)).unwrap();
        let f = decode_time(&m, &c, setup(1, 1, 4096, WeightFormat::Fp8)).unwrap();
        assert!(
            !b.fits && f.fits,
            "{} {}",
            b.memory_per_gpu_bytes,
            f.memory_per_gpu_bytes
        );
        assert_eq!(f.usable_memory_bytes, 126_900_000_000);
        assert_eq!(
            f.memory_per_gpu_bytes,
            f.weights_memory_bytes + f.kv_memory_bytes
        );
        let ratio = f.weights_memory_bytes as f64 / b.weights_memory_bytes as f64;
        assert!(ratio > 0.5 && ratio < 0.53, "{ratio}");
        // One H100 (80 GB, 72 GB usable): FP8's 73.0 GB of weights do not fit; INT4's do,
        // with a short context, not with 128 batch × 4096 tokens of cache.
        let c = node("h100-sxm");
        let f = decode_time(&m, &c, setup(1, 1, 4096, WeightFormat::Fp8)).unwrap();
        assert!(!f.fits && f.weights_memory_bytes > f.usable_memory_bytes);
        let q = decode_time(&m, &c, setup(1, 1, 4096, WeightFormat::Int4)).unwrap();
        assert!(q.fits, "{}", q.memory_per_gpu_bytes);
        let big = decode_time(&m, &c, setup(1, 128, 4096, WeightFormat::Int4)).unwrap();
        assert!(!big.fits);
    }

    #[test]
    fn formats_parse_by_name() {
        assert_eq!("FP8".parse::<WeightFormat>(), Ok(WeightFormat::Fp8));
        assert_eq!("int4".parse::<WeightFormat>(), Ok(WeightFormat::Int4));
        assert!("int8"
            .parse::<WeightFormat>()
            .unwrap_err()
            .contains("bf16, fp8 or int4"));
        assert_eq!("fp8".parse::<KvCacheFormat>(), Ok(KvCacheFormat::Fp8));
        assert!("int4".parse::<KvCacheFormat>().is_err());
    }
}

#[cfg(test)]
mod engineer_tests {
    use super::tests::setup;
    use super::*;
    use crate::capacity::hardware::Catalogue;
    use crate::capacity::models::ModelPreset;

    fn node(gpu: &str) -> Cluster {
        Cluster::new(&Catalogue::default(), gpu, 8, 8, "ib-ndr-400").unwrap()
    }

    #[test]
    fn one_chunk_is_the_prefill_at_once_and_chunks_add_passes() {
        let m = ModelPreset::Llama3_8b.spec();
        let c = node("h100-sxm");
        let s = setup(2, 3, 5000);
        let once = prefill_time(&m, &c, s).unwrap();
        // A chunk at least the whole stream is one pass, the same to the last bit.
        let big = prefill_time_chunked(&m, &c, s, 15_000).unwrap();
        assert_eq!(once, big);
        assert_eq!((once.passes, once.chunk_tokens), (1, 15_000));
        // 15,000 tokens in chunks of 4096: 4 passes, each paying the fixed costs; the FLOPs are
        // the same (each token's attention over the same earlier tokens, every prompt through
        // the output layer once).
        let ch = prefill_time_chunked(&m, &c, s, 4096).unwrap();
        assert_eq!(ch.passes, 4);
        assert!((ch.fixed_s - 4.0 * once.fixed_s).abs() < 1e-12);
        assert!((ch.flops_per_gpu - once.flops_per_gpu).abs() < 1e-9 * once.flops_per_gpu);
        assert!(ch.total_s > once.total_s);
        // Chunks of one prompt's length: three passes of one prompt each.
        let per_prompt = prefill_time_chunked(&m, &c, s, 5000).unwrap();
        assert_eq!(per_prompt.passes, 3);
        // Too many passes to price one by one: refused with the rule and the fix.
        let e = prefill_time_chunked(&m, &c, setup(1, 1_000_000, 10_000), 1).unwrap_err();
        assert!(matches!(e, ServeCostError::TooManyPasses { .. }), "{e}");
        assert!(e.to_string().contains("--prefill-chunk"), "{e}");
    }

    #[test]
    fn vllm_defaults_by_gpu() {
        let cat = Catalogue::default();
        let gpu = |n: &str| cat.gpu(n).unwrap();
        // ≥ 70 GiB and not an A100: 8192 tokens a pass, 1024 sequences.
        for n in ["h100", "h200", "b200"] {
            assert_eq!(default_prefill_chunk_tokens(&gpu(n)), 8192, "{n}");
            assert_eq!(default_max_batch(&gpu(n)), 1024, "{n}");
        }
        // An A100 80GB (the name) and a V100 (32 GB): 2048 and 256.
        for n in ["a100", "a100-40gb", "v100"] {
            assert_eq!(default_prefill_chunk_tokens(&gpu(n)), 2048, "{n}");
            assert_eq!(default_max_batch(&gpu(n)), 256, "{n}");
        }
        assert_eq!(
            curve_batches(1024),
            vec![1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
        );
        assert_eq!(curve_batches(6), vec![1, 2, 4, 6]);
        assert_eq!(curve_batches(0), vec![1]);
    }

    #[test]
    fn a_node_filled_with_replicas_or_one_wide_group() {
        let m = ModelPreset::Llama3_8b.spec();
        let c = node("h100-sxm");
        let splits = node_splits(&m, &c, setup(1, 4, 2048));
        let shape: Vec<(usize, usize)> = splits.iter().map(|s| (s.tp, s.replicas)).collect();
        assert_eq!(shape, vec![(1, 8), (2, 4), (4, 2), (8, 1)]);
        for s in &splits {
            let d = s.decode.as_ref().unwrap();
            assert_eq!(d.replicas_per_node, s.replicas);
            let node_tps = d.tokens_per_s * s.replicas as f64;
            assert!((d.tokens_per_s_per_node - node_tps).abs() < 1e-9 * node_tps);
            assert!((d.tokens_per_s_per_gpu * s.tp as f64 - d.tokens_per_s).abs() < 1e-9);
        }
        // A TP 16 replica spans two nodes: each node makes half its tokens.
        let two = Cluster::new(&Catalogue::default(), "h100-sxm", 16, 8, "ib-ndr-400").unwrap();
        let d = decode_time(&m, &two, setup(16, 4, 2048)).unwrap();
        assert_eq!(d.replicas_per_node, 0);
        assert!((d.tokens_per_s_per_node - d.tokens_per_s / 2.0).abs() < 1e-9);
        // A node of 6: TP 3 and 6 break the heads rule, reported with it.
        let six = Cluster::new(&Catalogue::default(), "h100-sxm", 6, 6, "ib-ndr-400").unwrap();
        let splits = node_splits(&m, &six, setup(1, 1, 1024));
        let bad: Vec<usize> = splits
            .iter()
            .filter(|s| s.rule.is_some())
            .map(|s| s.tp)
            .collect();
        assert_eq!(bad, vec![3, 6]);
        let curve = batch_curve(&m, &c, setup(8, 1, 1024), &[1, 8, 64]).unwrap();
        assert!(curve
            .windows(2)
            .all(|w| w[1].step_s > w[0].step_s && w[1].tokens_per_s > w[0].tokens_per_s));
    }

    #[test]
    fn graphs_sync_adds_the_host_turn_per_step() {
        let m = ModelPreset::Llama3_8b.spec();
        let c = node("h100-sxm");
        let g = decode_time(&m, &c, setup(8, 1, 132)).unwrap();
        let s = decode_time(
            &m,
            &c,
            ServeSetup {
                launch: Launch::GraphsSync,
                ..setup(8, 1, 132)
            },
        )
        .unwrap();
        assert!((s.step_s - g.step_s - HOST_STEP_S).abs() < 1e-12);
        assert!((GRAPH_LAYER_S - 25e-6).abs() < 1e-15);
        assert_eq!("graphs-sync".parse::<Launch>(), Ok(Launch::GraphsSync));
        assert_eq!(
            serde_json::to_string(&Launch::GraphsSync).unwrap(),
            "\"graphs-sync\""
        );
    }
}
