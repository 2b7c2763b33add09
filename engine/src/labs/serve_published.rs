//! Published latencies of tensor-parallel inference, with their sources, and the serving cost
//! model's prediction of each ([`crate::labs::serve_cost`]). The table is test data: a few rows
//! ([`Split::Fit`]) fixed the eager fixed costs, every other row ([`Split::HeldOut`]) is only
//! predicted. `engine/tests/serve_calibration.rs` prints predicted against published and holds
//! the held-out rows to the targets; `docs/calibration.md` ("Serving") reprints the table.
//!
//! Sources (each row names one):
//! - **FT**: NVIDIA/FasterTransformer `docs/gpt_guide.md`, "Performance": A100 80GB SuperPod
//!   (8 GPUs per node on NVSwitch, 8×200 Gb/s InfiniBand), FP16, top-p sampling, no CUDA
//!   graphs. Latency of a whole request: the context phase over the input, then one decoder
//!   step per output token.
//! - **NeMo**: NVIDIA NeMo Framework user guide, "Performance → Llama-2 Results → Inference
//!   Performance" (docs.nvidia.com/nemo-framework/user-guide/latest/performance/llama.html),
//!   TensorRT-LLM, "Chatbot Conversation" (128 in, 20 out), average request latency: the context
//!   phase yields the first token, then 19 decode steps.
//!   Its Megatron-530B table has a TP 8 × PP 3 column (three nodes, one stage each).
//! - **TRT**: NVIDIA/TensorRT-LLM `docs/source/performance.md` (release 0.6 docs, data from
//!   v0.5), "Low Latency", A100 FP16, first-token latency.
//!
//! FP8 and quantised serving ([`published_fp8`], issue 39; every row held out, each with its
//! address in [`Published::url`]):
//! - **TRT FP8**: the same TensorRT-LLM page's "Low Latency" table for H100 FP8 (FP8 weights
//!   and `--fp8_kv_cache`, v0.5, no CUDA graphs), first-token latency at batch 1.
//! - **NIM**: NVIDIA NIM for LLMs benchmarking, "Performance" (NIM 1.8.0, Llama-3.3-70B-Instruct
//!   on 2 × H100 80GB, fp8 TP2), inter-token latency at concurrency 1.
//! - **SGLang (GPUStack)**: gpustack/gpustack `docs/performance-lab/qwen3-8b/h100-latency.md`:
//!   Qwen3-8B and Qwen3-8B-FP8 on one H100 SXM under SGLang 0.5.3 (CUDA graphs), ShareGPT at
//!   concurrency 4, median time per output token.

use crate::capacity::hardware::{Catalogue, Cluster};
use crate::capacity::models::ModelSpec;
use crate::labs::serve_cost::{
    decode_time, prefill_time, AllReduceImpl, DecodeTime, KvCacheFormat, Launch, ServeCostError,
    ServeSetup, WeightFormat,
};
use serde::Serialize;

/// Whether a row fixed a constant or is only predicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Split {
    /// Used to fit a constant (named in the constant's documentation).
    Fit,
    /// Never used to set anything: the model's prediction is checked against it.
    HeldOut,
}

/// What the published figure measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Measure {
    /// A whole request: prefill, then `decode_steps` decode steps.
    Request { decode_steps: usize },
    /// The time to first token (the prefill).
    FirstToken,
    /// One decode step (inter-token latency, time per output token) at the mean context
    /// `prompt + output/2`.
    Step,
}

/// One published figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Published {
    /// Short source key (FT, NeMo, TRT) and where in it.
    pub source: &'static str,
    pub model: &'static str,
    pub gpu: &'static str,
    /// The network between nodes (for TP groups wider than 8).
    pub inter_node: &'static str,
    pub tp: usize,
    /// Pipeline stages (1: none).
    pub pp: usize,
    pub batch: usize,
    pub prompt: usize,
    pub output: usize,
    pub measure: Measure,
    pub launch: Launch,
    /// Published milliseconds.
    pub published_ms: f64,
    pub split: Split,
    /// The all-reduce the engine ran (NCCL for the engines of [`published`], their custom
    /// one-shot/two-shot kernels for today's).
    pub all_reduce: AllReduceImpl,
    /// The linear layers' weights and the KV cache as the run stored them.
    pub weights: WeightFormat,
    pub kv_cache: KvCacheFormat,
    /// Where the figure is published (empty for the rows of [`published`], whose sources the
    /// module documentation names).
    pub url: &'static str,
}

/// The model shapes of the table (their `config.json` / the source's stated shape).
pub fn model(name: &str) -> Option<ModelSpec> {
    let gpt = |n: &str, l, h, a| ModelSpec::gpt(n, l, h, a, 51200, 2048);
    Some(match name {
        // FasterTransformer's GPT models: head_num × size_per_head, num_layers, vocab 51200.
        "gpt-350m" => gpt(name, 24, 1024, 16),
        "gpt-1.3b" => gpt(name, 24, 2048, 32),
        "gpt-6.7b" => gpt(name, 32, 4096, 32),
        "gpt-20b" => gpt(name, 44, 6144, 48),
        "gpt-89b" => gpt(name, 48, 12288, 96),
        "gpt-175b" => gpt(name, 96, 12288, 96),
        "megatron-530b" => gpt(name, 105, 20480, 128),
        // meta-llama/Llama-2-7b-hf and -70b-hf config.json.
        "llama2-7b" => ModelSpec::llama(name, 32, 4096, 32, 32, 11008, 32000, 4096),
        "llama2-70b" => ModelSpec::llama(name, 80, 8192, 64, 8, 28672, 32000, 4096),
        // meta-llama/Llama-3.3-70B-Instruct config.json.
        "llama3.3-70b" => ModelSpec::llama(name, 80, 8192, 64, 8, 28672, 128256, 8192),
        // meta-llama/Meta-Llama-3-8B config.json.
        "llama3-8b" => ModelSpec::llama(name, 32, 4096, 32, 8, 14336, 128256, 8192),
        // Qwen/Qwen3-8B config.json (untied output; head_dim 128 = 4096/32; its q/k norms,
        // 2·128 a layer, left out).
        "qwen3-8b" => ModelSpec::llama(name, 36, 4096, 32, 8, 12288, 151936, 40960),
        // EleutherAI/gpt-j-6b config.json: 28 layers, 4096, 16 heads, FFN 16384, vocabulary
        // 50400, rotary positions, untied output (its parallel attention and MLP branches
        // read the same bytes as sequential ones).
        "gpt-j-6b" => ModelSpec {
            learned_positions: false,
            tied_embeddings: false,
            ..ModelSpec::gpt(name, 28, 4096, 16, 50400, 2048)
        },
        // tiiuae/falcon-180B config.json: 80 layers, hidden 14848, 232 query heads in 8 KV
        // groups (head_dim 64), FFN 4·h, vocabulary 65024, no biases, rotary, tied.
        "falcon-180b" => ModelSpec {
            kv_heads: 8,
            learned_positions: false,
            biases: false,
            dropout: false,
            ..ModelSpec::gpt(name, 80, 14848, 232, 65024, 2048)
        },
        _ => return None,
    })
}

/// The model's name as its source writes it, for people (`megatron-530b` → `Megatron 530B`).
pub fn model_title(name: &str) -> &'static str {
    match name {
        "gpt-350m" => "GPT 350M",
        "gpt-1.3b" => "GPT 1.3B",
        "gpt-6.7b" => "GPT 6.7B",
        "gpt-20b" => "GPT 20B",
        "gpt-89b" => "GPT 89B",
        "gpt-175b" => "GPT 175B",
        "megatron-530b" => "Megatron 530B",
        "llama2-7b" => "Llama-2 7B",
        "llama2-70b" => "Llama-2 70B",
        "llama3.3-70b" => "Llama-3.3 70B",
        "qwen3-8b" => "Qwen3 8B",
        "llama3-8b" => "Llama-3 8B",
        "gpt-j-6b" => "GPT-J 6B",
        "falcon-180b" => "Falcon 180B",
        _ => "?",
    }
}

/// Which publication a row comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    FasterTransformer,
    NeMo,
    TensorRtLlm,
    /// NVIDIA NIM's benchmarking guide.
    Nim,
    /// GPUStack's performance lab (SGLang, vLLM, TensorRT-LLM runs).
    GpuStack,
    /// SGLang's own issues and benchmarks.
    SgLang,
}

#[allow(clippy::too_many_arguments)]
fn row(
    source: &'static str,
    model: &'static str,
    gpu: &'static str,
    tp: usize,
    batch: usize,
    prompt: usize,
    output: usize,
    measure: Measure,
    launch: Launch,
    published_ms: f64,
    split: Split,
) -> Published {
    Published {
        source,
        model,
        gpu,
        inter_node: "ib-hdr-200",
        tp,
        pp: 1,
        batch,
        prompt,
        output,
        measure,
        launch,
        published_ms,
        split,
        all_reduce: AllReduceImpl::Nccl,
        weights: WeightFormat::Bf16,
        kv_cache: KvCacheFormat::Bf16,
        url: "",
    }
}

/// Every published figure of the table.
pub fn published() -> Vec<Published> {
    use Split::{Fit, HeldOut};
    let ft = |model, tp, batch, prompt, output, ms, split| {
        row(
            "FT gpt_guide.md",
            model,
            "a100-80gb",
            tp,
            batch,
            prompt,
            output,
            Measure::Request {
                decode_steps: output,
            },
            Launch::Eager,
            ms,
            split,
        )
    };
    let nemo = |gpu, tp, ms| {
        let mut r = row(
            "NeMo Llama-2 inference (TensorRT-LLM)",
            "llama2-7b",
            gpu,
            tp,
            1,
            128,
            20,
            Measure::Request { decode_steps: 19 },
            Launch::Eager,
            ms,
            HeldOut,
        );
        r.inter_node = "ib-ndr-400";
        r
    };
    let trt = |model, tp, prompt, ms| {
        row(
            "TRT performance.md v0.5 low latency",
            model,
            "a100-80gb",
            tp,
            1,
            prompt,
            1,
            Measure::FirstToken,
            Launch::Eager,
            ms,
            HeldOut,
        )
    };
    // FasterTransformer's Megatron-530B table with pipeline stages: TP 8 in each of 3 nodes.
    let ft_pp = |tp, pp, prompt, output, ms| {
        let mut r = ft("megatron-530b", tp, 1, prompt, output, ms, HeldOut);
        r.pp = pp;
        r
    };
    vec![
        // Fit: the eager fixed costs (serve_cost::EAGER_LAYER_S, EAGER_STEP_S).
        ft("gpt-350m", 1, 1, 512, 32, 92.01, Fit),
        ft("gpt-1.3b", 1, 1, 512, 32, 135.85, Fit),
        ft("gpt-6.7b", 1, 1, 512, 32, 384.70, Fit),
        // Held out: single GPU, other shapes and batches.
        ft("gpt-350m", 1, 1, 128, 8, 25.43, HeldOut),
        ft("gpt-1.3b", 1, 1, 128, 8, 36.76, HeldOut),
        ft("gpt-6.7b", 1, 1, 128, 8, 98.29, HeldOut),
        ft("gpt-6.7b", 1, 8, 512, 32, 699.62, HeldOut),
        ft("gpt-1.3b", 1, 16, 512, 32, 345.96, HeldOut),
        // GPT-20B at TP 1, 2, 4, 8 (one node).
        ft("gpt-20b", 1, 1, 60, 20, 560.0, HeldOut),
        ft("gpt-20b", 2, 1, 60, 20, 358.0, HeldOut),
        ft("gpt-20b", 4, 1, 60, 20, 248.0, HeldOut),
        ft("gpt-20b", 8, 1, 60, 20, 212.0, HeldOut),
        ft("gpt-20b", 1, 1, 80, 200, 5609.0, HeldOut),
        ft("gpt-20b", 2, 1, 80, 200, 3532.0, HeldOut),
        ft("gpt-20b", 4, 1, 80, 200, 2438.0, HeldOut),
        ft("gpt-20b", 8, 1, 80, 200, 2053.0, HeldOut),
        ft("gpt-20b", 1, 16, 80, 200, 6167.0, HeldOut),
        ft("gpt-20b", 2, 16, 80, 200, 4356.0, HeldOut),
        ft("gpt-20b", 4, 16, 80, 200, 2964.0, HeldOut),
        ft("gpt-20b", 8, 16, 80, 200, 2307.0, HeldOut),
        // GPT-89B and GPT-175B at TP 8.
        ft("gpt-89b", 8, 1, 128, 8, 279.44, HeldOut),
        ft("gpt-89b", 8, 1, 512, 32, 887.52, HeldOut),
        ft("gpt-175b", 8, 1, 128, 8, 488.86, HeldOut),
        ft("gpt-175b", 8, 1, 512, 32, 1719.96, HeldOut),
        ft("gpt-175b", 8, 8, 128, 8, 749.86, HeldOut),
        // Megatron 530B across nodes: TP 16 on 2 nodes, TP 32 on 4.
        ft("megatron-530b", 16, 1, 20, 8, 565.0, HeldOut),
        ft("megatron-530b", 16, 1, 60, 20, 1379.0, HeldOut),
        ft("megatron-530b", 32, 1, 20, 8, 431.0, HeldOut),
        ft("megatron-530b", 32, 1, 60, 20, 1037.0, HeldOut),
        // The same table's batch-1 rows with input 128, and its TP 8 × PP 3 column (3 nodes of
        // 8: one stage per node, the stage-to-stage sends over InfiniBand), all batch 1.
        ft("megatron-530b", 16, 1, 128, 8, 585.0, HeldOut),
        ft("megatron-530b", 32, 1, 128, 8, 451.0, HeldOut),
        ft_pp(8, 3, 20, 8, 842.0),
        ft_pp(8, 3, 60, 20, 2085.0),
        ft_pp(8, 3, 128, 8, 866.0),
        // NeMo / TensorRT-LLM, Llama-2-7B, batch 1, 128 in / 20 out.
        nemo("a100-80gb", 1, 234.0),
        nemo("a100-80gb", 2, 171.7),
        nemo("a100-80gb", 4, 143.7),
        nemo("a100-80gb", 8, 136.5),
        nemo("h100-sxm", 1, 153.8),
        nemo("h100-sxm", 2, 128.6),
        nemo("h100-sxm", 4, 107.4),
        nemo("h100-sxm", 8, 97.6),
        // TensorRT-LLM first-token latency, batch 1.
        trt("llama2-7b", 1, 128, 16.0),
        trt("llama2-7b", 1, 2048, 133.0),
        trt("llama2-70b", 4, 128, 47.0),
        trt("llama2-70b", 4, 2048, 377.0),
    ]
}

/// TensorRT-LLM's performance page (release 0.6 docs, v0.5 data), the commit read.
pub const TRT_PERFORMANCE_URL: &str = "https://github.com/NVIDIA/TensorRT-LLM/blob/\
    138f96d45f90b9667426f7c47297d8c06bafac73/docs/source/performance.md";
/// NVIDIA NIM for LLMs benchmarking guide, "Performance".
pub const NIM_PERFORMANCE_URL: &str =
    "https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance.html";
/// GPUStack's performance lab, Qwen3-8B latency on H100.
pub const GPUSTACK_QWEN3_URL: &str = "https://github.com/gpustack/gpustack/blob/\
    1dbc3b8130da92d31539404545a1aff5c3992f8c/docs/performance-lab/qwen3-8b/h100-latency.md";

/// Published FP8 (and their 16-bit twins') serving latencies on Hopper (issue 39), every one
/// held out: nothing in the model was set from them. Each row names its address.
pub fn published_fp8() -> Vec<Published> {
    use Split::HeldOut;
    // TensorRT-LLM v0.5, H100 FP8 (FP8 weights, FP8 KV cache), batch 1, first token.
    let trt = |model, tp, prompt, ms| Published {
        weights: WeightFormat::Fp8,
        kv_cache: KvCacheFormat::Fp8,
        url: TRT_PERFORMANCE_URL,
        inter_node: "ib-ndr-400",
        ..row(
            "TRT performance.md v0.5 low latency, H100 FP8",
            model,
            "h100-sxm",
            tp,
            1,
            prompt,
            1,
            Measure::FirstToken,
            Launch::Eager,
            ms,
            HeldOut,
        )
    };
    // NIM 1.8.0: Llama-3.3-70B FP8 on 2 × H100 at concurrency 1, mean inter-token latency.
    // The page does not state the KV-cache format: bf16 assumed (at 5,250 tokens the cache is
    // 0.9 GB a GPU against 35 GB of weights, so FP8 would move the step by about 1%).
    let nim = |prompt, output, ms| Published {
        all_reduce: AllReduceImpl::Custom,
        weights: WeightFormat::Fp8,
        url: NIM_PERFORMANCE_URL,
        inter_node: "ib-ndr-400",
        ..row(
            "NIM 1.8.0 benchmarking, Llama-3.3-70B fp8 TP2",
            "llama3.3-70b",
            "h100-sxm",
            2,
            1,
            prompt,
            output,
            Measure::Step,
            Launch::Graphs,
            ms,
            HeldOut,
        )
    };
    // SGLang 0.5.3 on one H100 SXM, ShareGPT (100 prompts: 23,260 input and 22,061 output
    // tokens, so 233 in and 221 out on average), concurrency 4, median time per output token.
    let sglang = |weights, ms| Published {
        weights,
        url: GPUSTACK_QWEN3_URL,
        inter_node: "ib-ndr-400",
        ..row(
            "GPUStack performance lab, SGLang 0.5.3",
            "qwen3-8b",
            "h100-sxm",
            1,
            4,
            233,
            221,
            Measure::Step,
            Launch::Graphs,
            ms,
            HeldOut,
        )
    };
    vec![
        trt("gpt-j-6b", 1, 128, 7.0),
        trt("gpt-j-6b", 1, 2048, 29.0),
        trt("llama2-7b", 1, 128, 7.0),
        trt("llama2-7b", 1, 2048, 36.0),
        trt("llama2-70b", 4, 128, 26.0),
        trt("llama2-70b", 4, 2048, 109.0),
        trt("falcon-180b", 8, 128, 27.0),
        trt("falcon-180b", 8, 2048, 205.0),
        nim(5000, 500, 18.58),
        nim(500, 2000, 18.91),
        sglang(WeightFormat::Bf16, 7.14),
        sglang(WeightFormat::Fp8, 5.58),
    ]
}

/// SGLang's "Torch.compile Performance Tracking" issue (sgl-project/sglang #1008, August
/// 2024): `sglang.bench_latency` decode medians of Meta-Llama-3-8B with CUDA graphs.
pub const SGLANG_1008_URL: &str = "https://github.com/sgl-project/sglang/issues/1008";

/// Published decode steps of a CUDA-graph engine at TP 1 and TP 8 (issue 39's "a small model
/// at TP 8 misses the fixed costs"): SGLang's own Llama-3-8B benchmark of August 2024
/// ([`SGLANG_1008_URL`]), `--input 128 --output 8`, median decode latency, CUDA graphs (the
/// rows without torch.compile). SGLang then (before v0.4) did not overlap the host's turn with
/// the GPU: [`Launch::GraphsSync`], whose one constant ([`crate::labs::serve_cost::HOST_STEP_S`])
/// the TP 1, batch 1 row fixed; the other two are held out. The issue does not name the GPU:
/// H100 SXM, because the TP 1 step (7.37 ms) is shorter than an A100 needs to read the 16.1 GB
/// of weights once (7.9 ms at its 2.04 TB/s peak), and 8 GPUs at TP 8 is an HGX H100 node.
/// SGLang's custom all-reduce (vLLM's kernels) was its default for TP inside a node.
pub fn published_graphs() -> Vec<Published> {
    let sglang = |tp, batch, ms, split| Published {
        url: SGLANG_1008_URL,
        inter_node: "ib-ndr-400",
        all_reduce: AllReduceImpl::Custom,
        ..row(
            "SGLang issue #1008, bench_latency, CUDA graphs",
            "llama3-8b",
            "h100-sxm",
            tp,
            batch,
            128,
            8,
            Measure::Step,
            Launch::GraphsSync,
            ms,
            split,
        )
    };
    vec![
        sglang(1, 1, 7.37, Split::Fit),
        sglang(8, 1, 3.35, Split::HeldOut),
        sglang(1, 128, 11.84, Split::HeldOut),
    ]
}

/// A row's prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    pub figure: Published,
    pub predicted_ms: f64,
    /// `(predicted − published) / published`.
    pub error: f64,
}

impl Published {
    /// The serving setting of this figure (its prompt as context).
    pub fn setup(&self, all_reduce: AllReduceImpl) -> ServeSetup {
        ServeSetup {
            tp: self.tp,
            pp: self.pp,
            batch: self.batch,
            context: self.prompt,
            all_reduce,
            launch: self.launch,
            weights: self.weights,
            kv_cache: self.kv_cache,
        }
    }

    /// The cluster the figure ran on: nodes of 8 GPUs, enough of them for `tp × pp`.
    pub fn cluster(&self) -> Result<Cluster, ServeCostError> {
        let gpus = self.tp.saturating_mul(self.pp);
        Cluster::covering(&Catalogue::default(), self.gpu, gpus, 8, self.inter_node).map_err(|e| {
            ServeCostError::Nccl {
                detail: e.to_string(),
            }
        })
    }

    /// The publication the row comes from.
    pub fn source_kind(&self) -> Source {
        if self.source.starts_with("FT") {
            Source::FasterTransformer
        } else if self.source.starts_with("NIM") {
            Source::Nim
        } else if self.source.starts_with("SGLang") {
            Source::SgLang
        } else if self.source.starts_with("GPUStack") {
            Source::GpuStack
        } else if self.source.starts_with("NeMo") {
            Source::NeMo
        } else {
            Source::TensorRtLlm
        }
    }

    /// The modeled decode step of a request row (at the mean context, as [`Self::predict_ms`]
    /// prices it); `None` for a first-token row.
    pub fn decode_step(&self) -> Result<Option<DecodeTime>, ServeCostError> {
        let decode_steps = match self.measure {
            Measure::Request { decode_steps } => decode_steps,
            Measure::Step => 1,
            Measure::FirstToken => 0,
        };
        if decode_steps == 0 {
            return Ok(None);
        }
        let m = model(self.model).ok_or_else(|| ServeCostError::Nccl {
            detail: format!("no shape for {}", self.model),
        })?;
        let setup = ServeSetup {
            context: self.prompt + self.output / 2,
            ..self.setup(self.all_reduce)
        };
        decode_time(&m, &self.cluster()?, setup).map(Some)
    }

    /// The model's milliseconds for this figure, with the all-reduce, launch mode and formats
    /// the engine ran.
    pub fn predict_ms(&self) -> Result<f64, ServeCostError> {
        if self.measure == Measure::Step {
            return Ok(1e3 * self.decode_step()?.map(|d| d.step_s).unwrap_or(f64::NAN));
        }
        let m = model(self.model).ok_or_else(|| ServeCostError::Nccl {
            detail: format!("no shape for {}", self.model),
        })?;
        let c = self.cluster()?;
        let setup = self.setup(self.all_reduce);
        let pre = prefill_time(&m, &c, setup)?;
        Ok(1e3
            * match self.measure {
                Measure::FirstToken => pre.total_s,
                Measure::Request { decode_steps } if decode_steps > 0 => {
                    let dec = decode_time(
                        &m,
                        &c,
                        ServeSetup {
                            context: self.prompt + self.output / 2,
                            ..setup
                        },
                    )?;
                    pre.total_s + decode_steps as f64 * dec.step_s
                }
                Measure::Request { .. } | Measure::Step => pre.total_s,
            })
    }

    pub fn prediction(&self) -> Result<Prediction, ServeCostError> {
        let p = self.predict_ms()?;
        Ok(Prediction {
            figure: self.clone(),
            predicted_ms: p,
            error: (p - self.published_ms) / self.published_ms,
        })
    }
}

/// Summary of a set of predictions: the share within `band` and the mean absolute error.
pub fn summary(rows: &[Prediction], band: f64) -> (usize, usize, f64) {
    let within = rows.iter().filter(|r| r.error.abs() <= band).count();
    let mae = if rows.is_empty() {
        0.0
    } else {
        rows.iter().map(|r| r.error.abs()).sum::<f64>() / rows.len() as f64
    };
    (within, rows.len(), mae)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_has_a_shape_a_title_and_a_source() {
        for p in published()
            .into_iter()
            .chain(published_fp8())
            .chain(published_graphs())
        {
            assert!(model(p.model).is_some(), "{}", p.model);
            assert_ne!(model_title(p.model), "?", "{}", p.model);
            let step = p.decode_step().unwrap();
            assert_eq!(
                step.is_some(),
                matches!(p.measure, Measure::Request { decode_steps } if decode_steps > 0)
                    || p.measure == Measure::Step
            );
            if let Some(d) = step {
                assert_eq!((d.setup.tp, d.setup.pp), (p.tp, p.pp));
            }
        }
        let kinds: Vec<Source> = published().iter().map(|p| p.source_kind()).collect();
        for k in [Source::FasterTransformer, Source::NeMo, Source::TensorRtLlm] {
            assert!(kinds.contains(&k));
        }
    }
}
