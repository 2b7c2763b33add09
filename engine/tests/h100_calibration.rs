//! Today's stack against published H100 training throughput (docs/calibration.md, "H100/H200
//! training"). Each figure: tokens/s per GPU as published, our prediction within ±15%.
//! `training_runs_summary` reprints every published training set the engine is checked against
//! (these, torchtitan's A100 rows and Narayanan et al.'s Table 1) with n, mean absolute error
//! and worst error per set and overall:
//! `cargo test -p tplab-engine --test h100_calibration training_runs_summary -- --nocapture`.

// Helpers outside #[test] fns unwrap the fixed, known-good fixtures (clippy.toml allows it
// only inside tests).
#![allow(clippy::unwrap_used)]

use tplab_engine::capacity::cost::{self, TrainSetup};
use tplab_engine::capacity::hardware::{Catalogue, Cluster};
use tplab_engine::capacity::memory::{Layout, Recompute};
use tplab_engine::capacity::models::{ModelPreset, ModelSpec};
use tplab_engine::capacity::moe_cost::MoeRouting;
use tplab_engine::capacity::stack::{self, Precision, Stack};

#[path = "common/hf_configs.rs"]
mod hf_configs;
use hf_configs::hf_config;
#[path = "common/narayanan.rs"]
mod narayanan;
use narayanan::NARAYANAN_TABLE1;

/// One published run.
struct Figure {
    what: &'static str,
    gpu: &'static str,
    model: ModelSpec,
    gpus: usize,
    global_batch: usize,
    micro_batch: usize,
    seq: usize,
    tp: usize,
    pp: usize,
    cp: usize,
    vp: usize,
    zero: u8,
    precision: Precision,
    tokens_per_s_per_gpu: f64,
}

fn figures() -> Vec<Figure> {
    let f = |what, model: ModelSpec, gpus, gbs, mbs, seq, tp, pp, cp, vp, zero, tok| Figure {
        what,
        gpu: "h100",
        model,
        gpus,
        global_batch: gbs,
        micro_batch: mbs,
        seq,
        tp,
        pp,
        cp,
        vp,
        zero,
        precision: Precision::Fp8,
        tokens_per_s_per_gpu: tok,
    };
    let gpt3 = ModelPreset::Gpt3_175b.spec();
    vec![
        // NVIDIA/NeMo docs/source/performance/performance_summary.md (NeMo 24.07, DGX-H100, FP8).
        f(
            "NeMo 24.07 LLAMA3-8B",
            ModelPreset::Llama3_8b.spec(),
            8,
            128,
            1,
            8192,
            1,
            1,
            2,
            1,
            1,
            12036.0,
        ),
        f(
            "NeMo 24.07 LLAMA3-70B",
            ModelPreset::Llama3_70b.spec(),
            64,
            128,
            1,
            8192,
            4,
            4,
            2,
            5,
            1,
            1533.0,
        ),
        f(
            "NeMo 24.07 LLAMA2-7B",
            ModelPreset::Llama2_7b.spec(),
            8,
            128,
            1,
            4096,
            1,
            1,
            1,
            1,
            1,
            16847.0,
        ),
        f(
            "NeMo 24.07 LLAMA2-70B",
            ModelPreset::Llama2_70b.spec(),
            64,
            128,
            1,
            4096,
            4,
            4,
            1,
            20,
            1,
            1707.0,
        ),
        f(
            "NeMo 24.07 GPT3-175B 128 GPUs",
            gpt3.clone(),
            128,
            256,
            1,
            2048,
            4,
            8,
            1,
            6,
            1,
            726.0,
        ),
        f(
            "NeMo 24.07 GPT3-175B 512 GPUs",
            gpt3,
            512,
            2048,
            2,
            2048,
            4,
            8,
            1,
            6,
            1,
            782.0,
        ),
        // NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md (25.09, DGX-H100, FP8).
        f(
            "Megatron-Bridge 25.09 LLAMA3_8B (FSDP)",
            ModelPreset::Llama3_8b.spec(),
            8,
            128,
            1,
            8192,
            1,
            1,
            1,
            1,
            3,
            14079.0,
        ),
        f(
            "Megatron-Bridge 25.09 LLAMA3_70B",
            ModelPreset::Llama3_70b.spec(),
            64,
            128,
            1,
            8192,
            4,
            8,
            1,
            5,
            1,
            1619.0,
        ),
        f(
            "Megatron-Bridge 25.09 LLAMA3.1_405B",
            ModelPreset::Llama31_405b.spec(),
            1024,
            512,
            1,
            8192,
            8,
            8,
            2,
            8,
            1,
            302.0,
        ),
        // Same page, 25.11 container, DGX-H100 FP8-CS.
        f(
            "Megatron-Bridge 25.11 LLAMA3_70B",
            ModelPreset::Llama3_70b.spec(),
            64,
            128,
            1,
            8192,
            4,
            8,
            1,
            5,
            1,
            1602.0,
        ),
        f(
            "Megatron-Bridge 25.11 LLAMA3.1_405B",
            ModelPreset::Llama31_405b.spec(),
            1024,
            512,
            1,
            8192,
            8,
            8,
            2,
            8,
            1,
            292.0,
        ),
        // Same page, 26.02 container, DGX-H100 FP8.
        f(
            "Megatron-Bridge 26.02 LLAMA3_70B",
            ModelPreset::Llama3_70b.spec(),
            64,
            256,
            1,
            8192,
            4,
            8,
            1,
            5,
            1,
            1621.0,
        ),
        f(
            "Megatron-Bridge 26.02 LLAMA3.1_405B",
            ModelPreset::Llama31_405b.spec(),
            1024,
            1536,
            1,
            8192,
            8,
            8,
            2,
            8,
            1,
            311.0,
        ),
        // DGX-B200, FP8-CS (25.11): a check of the Blackwell rates, not fitted.
        Figure {
            gpu: "b200",
            ..f(
                "Megatron-Bridge 25.11 B200 LLAMA3_8B",
                ModelPreset::Llama3_8b.spec(),
                8,
                128,
                2,
                8192,
                1,
                1,
                1,
                1,
                1,
                30624.0,
            )
        },
        Figure {
            gpu: "b200",
            ..f(
                "Megatron-Bridge 25.11 B200 LLAMA3.1_405B",
                ModelPreset::Llama31_405b.spec(),
                128,
                64,
                1,
                8192,
                4,
                8,
                2,
                8,
                1,
                661.0,
            )
        },
    ]
}

fn predict(fig: &Figure) -> f64 {
    let c = Cluster::new(&Catalogue::default(), fig.gpu, fig.gpus, 8, "ib400").unwrap();
    let dp = fig.gpus / (fig.tp * fig.pp * fig.cp);
    let layout = Layout {
        tp: fig.tp,
        pp: fig.pp,
        dp,
        micro_batch: fig.micro_batch,
        sp: fig.tp > 1,
        recompute: Recompute::None,
        zero: fig.zero,
        ep: 1,
        etp: 0,
    };
    let setup = TrainSetup::new(fig.seq, fig.global_batch);
    let st = Stack {
        precision: fig.precision,
        virtual_stages: fig.vp,
        context_parallel: fig.cp,
        ..Stack::current()
    };
    let r = stack::iteration_time(&fig.model, &setup, &c, &layout, &st)
        .unwrap_or_else(|e| panic!("{}: {e}", fig.what));
    r.it.tokens_per_s / fig.gpus as f64
}

/// A published MoE run's figure: tokens/s per GPU (Megatron-Bridge) or model TFLOP/s per GPU
/// (Megatron-Core's MoE README).
#[derive(Clone, Copy, Debug)]
enum Published {
    TokensPerGpu(f64),
    TflopsPerGpu(f64),
}

/// One published MoE training run, with its configuration as the source gives it.
struct MoeFigure {
    what: &'static str,
    gpu: &'static str,
    /// Fixture under `tests/fixtures/hf-configs/`.
    config: &'static str,
    gpus: usize,
    global_batch: usize,
    micro_batch: usize,
    seq: usize,
    tp: usize,
    pp: usize,
    vp: usize,
    ep: usize,
    /// 0: the experts follow TP.
    etp: usize,
    precision: Precision,
    routing: MoeRouting,
    ep_overlap: bool,
    published: Published,
    /// Why the row misses ±20%, for the rows that do (docs/calibration.md, "MoE training").
    known_miss: Option<&'static str>,
}

/// Why the fine-grained Qwen3-30B-A3B runs at EP 8 miss: host-bound (see docs/calibration.md).
const HOST_BOUND: &str = "host-bound: ~9 ms a layer and micro-batch on H100 and B200 alike";
/// Why the Qwen3-30B-A3B EP 16 rows miss: HybridEP's all-to-all across 2 nodes runs faster than
/// the fitted NCCL rate.
const HYBRID_EP: &str = "HybridEP dispatcher across 2 nodes, faster than the NCCL all-to-all";
/// Why the untuned B200 MoE rows miss: their recipes (Megatron-Bridge `scripts/performance`)
/// run micro-batch 1 with 16 to 32 experts a GPU, without EP overlap and, but for 25.09's
/// Qwen3-30B-A3B, without CUDA graphs; the same GPU with the tuned Qwen3-30B-A3B recipe
/// (micro-batch 4, HybridEP, CUDA graphs; PR #2499) lands within ±20%.
const B200_MOE: &str =
    "untuned B200 recipe: micro-batch 1, 16-32 experts a GPU, no EP overlap: host-bound";
/// Why the tuned B200 DeepSeek-V3 row misses (PR #3368: DeepEP, EP 32 over 4 nodes, EP overlap).
const DEEPEP_B200: &str =
    "DeepEP over 4 nodes with EP overlap: the model's cross-node all-to-all is too slow";

/// The published MoE runs (docs/calibration.md, "MoE training"), each with its source.
fn moe_figures() -> Vec<MoeFigure> {
    use MoeRouting::{Capacity, Dropless, ForceBalanced};
    let tokdrop = Capacity {
        factor_percent: 100,
    };
    #[allow(clippy::too_many_arguments)]
    let f = |what,
             gpu,
             config,
             gpus,
             (global_batch, micro_batch, seq),
             (tp, pp, vp, ep, etp),
             precision,
             routing,
             ep_overlap,
             published,
             known_miss| MoeFigure {
        what,
        gpu,
        config,
        gpus,
        global_batch,
        micro_batch,
        seq,
        tp,
        pp,
        vp,
        ep,
        etp,
        precision,
        routing,
        ep_overlap,
        published,
        known_miss,
    };
    use Precision::{Bf16, Fp8};
    use Published::{TflopsPerGpu, TokensPerGpu};
    let mixtral = "mixtral-8x7b-v0.1.json";
    let q30 = "qwen3-30b-a3b.json";
    let q235 = "qwen3-235b-a22b.json";
    let v3 = "deepseek-v3.json";
    vec![
        // NVIDIA/Megatron-LM megatron/core/transformer/moe/README.md at 0b981f9c53 (MCore
        // v0.8): "438 TFLOPS" for Mixtral 8x7B bf16, "reference parallel mapping": dropless,
        // all-to-all, 64 H100, seq 4096, TP 1 EP 8 PP 4 VP 8, MBS 1, GBS 256.
        f(
            "MCore v0.8 Mixtral 8x7B",
            "h100",
            mixtral,
            64,
            (256, 1, 4096),
            (1, 4, 8, 8, 0),
            Bf16,
            Dropless,
            false,
            TflopsPerGpu(438.0),
            None,
        ),
        // Same README at d392f9cac7 (MCore v0.9, PyTorch 24.09, TE 1.11): "468 TFLOPS", the
        // same mapping table.
        f(
            "MCore v0.9 Mixtral 8x7B",
            "h100",
            mixtral,
            64,
            (256, 1, 4096),
            (1, 4, 8, 8, 0),
            Bf16,
            Dropless,
            false,
            TflopsPerGpu(468.0),
            None,
        ),
        // NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md, 25.09, DGX-H100:
        // DeepSeekV3 dropless (forced balance), FP8, TP2 PP8 VP4 EP64 (ETP 1, DeepEP, EP
        // overlap: scripts/performance at v0.1.0rc4).
        f(
            "Megatron-Bridge 25.09 DeepSeekV3",
            "h100",
            v3,
            1024,
            (8192, 1, 4096),
            (2, 8, 4, 64, 1),
            Fp8,
            ForceBalanced,
            true,
            TokensPerGpu(1297.0),
            None,
        ),
        // 25.09, DGX-H100, token drop (capacity factor 1, padded: apply_moe_token_drop).
        f(
            "Megatron-Bridge 25.09 Qwen3_30B_a3B",
            "h100",
            q30,
            16,
            (512, 2, 4096),
            (1, 2, 24, 8, 1),
            Fp8,
            tokdrop,
            false,
            TokensPerGpu(10494.0),
            Some(HOST_BOUND),
        ),
        f(
            "Megatron-Bridge 25.09 Qwen3_235B_a22B",
            "h100",
            q235,
            256,
            (2048, 1, 4096),
            (2, 8, 4, 32, 1),
            Fp8,
            tokdrop,
            false,
            TokensPerGpu(1204.0),
            None,
        ),
        // 25.11, DGX-H100, FP8-CS, dropless with forced balance, EP overlap (v0.2.0 recipes).
        f(
            "Megatron-Bridge 25.11 Qwen3_30B_a3B",
            "h100",
            q30,
            16,
            (512, 2, 4096),
            (1, 2, 24, 8, 1),
            Fp8,
            ForceBalanced,
            true,
            TokensPerGpu(5275.0),
            Some(HOST_BOUND),
        ),
        f(
            "Megatron-Bridge 25.11 Qwen3_235B_a22B",
            "h100",
            q235,
            256,
            (2048, 1, 4096),
            (2, 8, 4, 32, 1),
            Fp8,
            ForceBalanced,
            true,
            TokensPerGpu(1575.0),
            None,
        ),
        // 26.02 and its patch 26.02.01, DGX-H100, FP8.
        f(
            "Megatron-Bridge 26.02 Qwen3_30B_a3B",
            "h100",
            q30,
            16,
            (1024, 1, 4096),
            (1, 2, 12, 8, 1),
            Fp8,
            ForceBalanced,
            true,
            TokensPerGpu(5113.0),
            Some(HOST_BOUND),
        ),
        f(
            "Megatron-Bridge 26.02 Qwen3_235B_a22B",
            "h100",
            q235,
            256,
            (8192, 1, 4096),
            (2, 8, 4, 32, 1),
            Fp8,
            ForceBalanced,
            true,
            TokensPerGpu(1633.0),
            None,
        ),
        f(
            "Megatron-Bridge 26.02.01 Qwen3_30B_a3B",
            "h100",
            q30,
            16,
            (1024, 1, 4096),
            (1, 2, 12, 8, 1),
            Fp8,
            ForceBalanced,
            true,
            TokensPerGpu(9058.0),
            Some(HOST_BOUND),
        ),
        f(
            "Megatron-Bridge 26.02.01 Qwen3_235B_a22B",
            "h100",
            q235,
            256,
            (8192, 1, 4096),
            (2, 8, 4, 32, 1),
            Fp8,
            ForceBalanced,
            true,
            TokensPerGpu(1611.0),
            None,
        ),
        // 26.04, 26.04.01, 26.06, DGX-H100, FP8.
        f(
            "Megatron-Bridge 26.04 Qwen3_30B_a3B",
            "h100",
            q30,
            16,
            (1024, 1, 4096),
            (1, 1, 1, 16, 1),
            Fp8,
            ForceBalanced,
            false,
            TokensPerGpu(8901.0),
            Some(HYBRID_EP),
        ),
        f(
            "Megatron-Bridge 26.04 Qwen3_235B_a22B",
            "h100",
            q235,
            256,
            (8192, 1, 4096),
            (2, 8, 4, 32, 1),
            Fp8,
            ForceBalanced,
            true,
            TokensPerGpu(1686.0),
            None,
        ),
        f(
            "Megatron-Bridge 26.04.01 Qwen3_30B_a3B",
            "h100",
            q30,
            16,
            (1024, 1, 4096),
            (1, 1, 1, 16, 1),
            Fp8,
            ForceBalanced,
            false,
            TokensPerGpu(8960.0),
            Some(HYBRID_EP),
        ),
        f(
            "Megatron-Bridge 26.04.01 Qwen3_235B_a22B",
            "h100",
            q235,
            256,
            (8192, 1, 4096),
            (2, 8, 4, 32, 1),
            Fp8,
            ForceBalanced,
            true,
            TokensPerGpu(1712.0),
            None,
        ),
        f(
            "Megatron-Bridge 26.06 Qwen3_30B_a3B",
            "h100",
            q30,
            16,
            (1024, 1, 4096),
            (1, 1, 1, 16, 1),
            Fp8,
            ForceBalanced,
            false,
            TokensPerGpu(8826.0),
            Some(HYBRID_EP),
        ),
        // DGX-B200 rows (MXFP8), 25.09 token drop and 25.11 dropless.
        f(
            "Megatron-Bridge 25.09 B200 DeepSeekV3",
            "b200",
            v3,
            256,
            (2048, 1, 4096),
            (1, 16, 1, 8, 1),
            Fp8,
            tokdrop,
            false,
            TokensPerGpu(2265.0),
            Some(B200_MOE),
        ),
        f(
            "Megatron-Bridge 25.09 B200 Qwen3_30B_a3B",
            "b200",
            q30,
            8,
            (512, 1, 4096),
            (1, 1, 1, 8, 1),
            Fp8,
            tokdrop,
            false,
            TokensPerGpu(18066.0),
            Some(B200_MOE),
        ),
        f(
            "Megatron-Bridge 25.09 B200 Qwen3_235B_a22B",
            "b200",
            q235,
            64,
            (1024, 1, 4096),
            (1, 8, 2, 8, 1),
            Fp8,
            tokdrop,
            false,
            TokensPerGpu(4104.0),
            Some(B200_MOE),
        ),
        f(
            "Megatron-Bridge 25.11 B200 DeepSeekV3",
            "b200",
            v3,
            256,
            (2048, 1, 4096),
            (1, 16, 1, 8, 1),
            Fp8,
            ForceBalanced,
            false,
            TokensPerGpu(2139.0),
            Some(B200_MOE),
        ),
        f(
            "Megatron-Bridge 25.11 B200 Qwen3_30B_a3B",
            "b200",
            q30,
            8,
            (512, 1, 4096),
            (1, 1, 1, 8, 1),
            Fp8,
            ForceBalanced,
            false,
            TokensPerGpu(9299.0),
            Some(B200_MOE),
        ),
        f(
            "Megatron-Bridge 25.11 B200 Qwen3_235B_a22B",
            "b200",
            q235,
            64,
            (1024, 1, 4096),
            (1, 8, 2, 8, 1),
            Fp8,
            ForceBalanced,
            false,
            TokensPerGpu(3269.0),
            Some(B200_MOE),
        ),
        // DGX-B200 rows (MXFP8, dropless, force-balanced) of 26.02 to 26.04.01, the same
        // archive. Recipes (`scripts/performance/configs/{deepseek,qwen}/*workload_base_configs.py`)
        // at v0.3.0 21b02e0cfb2f8ff907e0d8baee0c5205876c6812, v0.3.1
        // 9c9dd848966322fc3ed7706747ec13219ef49dda, v0.4.0 and v0.4.2
        // c810129341a84e58f4cbed3093f70668a088c028: no EP overlap but where noted; Qwen3-30B-A3B
        // from 26.02.01 at micro-batch 4 with HybridEP and CUDA graphs of attention, router and
        // dispatch preprocessing (PR #2499, 388d017b098ef5a512419e024b07a89468e0d0f4);
        // DeepSeek-V3 in 26.04.01 with DeepEP, PP 8 VP 2 EP 32 and EP overlap (PR #3368,
        // a8b6cb3d69214ac87d4381c8f4c504c09b80ff77).
        f(
            "Megatron-Bridge 26.02 B200 DeepSeekV3",
            "b200",
            v3,
            256,
            (4096, 1, 4096),
            (1, 16, 1, 8, 1),
            Fp8,
            ForceBalanced,
            false,
            TokensPerGpu(2689.0),
            Some(B200_MOE),
        ),
        f(
            "Megatron-Bridge 26.02 B200 Qwen3_30B_a3B",
            "b200",
            q30,
            8,
            (512, 1, 4096),
            (1, 1, 1, 8, 1),
            Fp8,
            ForceBalanced,
            false,
            TokensPerGpu(9691.0),
            Some(B200_MOE),
        ),
        f(
            "Megatron-Bridge 26.02 B200 Qwen3_235B_a22B",
            "b200",
            q235,
            256,
            (8192, 1, 4096),
            (1, 8, 1, 8, 1),
            Fp8,
            ForceBalanced,
            false,
            TokensPerGpu(3805.0),
            Some(B200_MOE),
        ),
        f(
            "Megatron-Bridge 26.02.01 B200 DeepSeekV3",
            "b200",
            v3,
            256,
            (4096, 1, 4096),
            (1, 16, 1, 8, 1),
            Fp8,
            ForceBalanced,
            false,
            TokensPerGpu(2790.0),
            Some(B200_MOE),
        ),
        f(
            "Megatron-Bridge 26.02.01 B200 Qwen3_30B_a3B",
            "b200",
            q30,
            8,
            (512, 4, 4096),
            (1, 1, 1, 8, 1),
            Fp8,
            ForceBalanced,
            false,
            TokensPerGpu(26695.0),
            None,
        ),
        f(
            "Megatron-Bridge 26.04 B200 DeepSeekV3",
            "b200",
            v3,
            256,
            (4096, 1, 4096),
            (1, 16, 1, 8, 1),
            Fp8,
            ForceBalanced,
            false,
            TokensPerGpu(2815.0),
            Some(B200_MOE),
        ),
        f(
            "Megatron-Bridge 26.04 B200 Qwen3_30B_a3B",
            "b200",
            q30,
            8,
            (512, 4, 4096),
            (1, 1, 1, 8, 1),
            Fp8,
            ForceBalanced,
            false,
            TokensPerGpu(26859.0),
            None,
        ),
        f(
            "Megatron-Bridge 26.04.01 B200 DeepSeekV3",
            "b200",
            v3,
            256,
            (4096, 1, 4096),
            (1, 8, 2, 32, 1),
            Fp8,
            ForceBalanced,
            true,
            TokensPerGpu(3328.0),
            Some(DEEPEP_B200),
        ),
        f(
            "Megatron-Bridge 26.04.01 B200 Qwen3_30B_a3B",
            "b200",
            q30,
            8,
            (512, 4, 4096),
            (1, 1, 1, 8, 1),
            Fp8,
            ForceBalanced,
            false,
            TokensPerGpu(27136.0),
            None,
        ),
        f(
            "Megatron-Bridge 26.04.01 B200 Qwen3_235B_a22B",
            "b200",
            q235,
            256,
            (8192, 1, 4096),
            (1, 8, 1, 8, 1),
            Fp8,
            ForceBalanced,
            false,
            TokensPerGpu(3776.0),
            Some(B200_MOE),
        ),
    ]
}

/// Predicts a published MoE run: (published, predicted) in its unit.
fn predict_moe(fig: &MoeFigure) -> (f64, f64) {
    let model = hf_config(fig.config);
    let c = Cluster::new(&Catalogue::default(), fig.gpu, fig.gpus, 8, "ib400").unwrap();
    let dp = fig.gpus / (fig.tp * fig.pp);
    let layout = Layout {
        tp: fig.tp,
        pp: fig.pp,
        dp,
        micro_batch: fig.micro_batch,
        sp: fig.tp > 1,
        recompute: Recompute::None,
        zero: 1,
        ep: fig.ep,
        etp: fig.etp,
    };
    let setup = TrainSetup::new(fig.seq, fig.global_batch);
    let st = Stack {
        precision: fig.precision,
        virtual_stages: fig.vp,
        moe_routing: fig.routing,
        ep_overlap: fig.ep_overlap,
        // Megatron-Core's own README runs keep Megatron-LM's default, the unfused
        // cross-entropy; NeMo's and Megatron-Bridge's recipes fuse it.
        fused_cross_entropy: !fig.what.starts_with("MCore "),
        ..Stack::current()
    };
    let r = stack::iteration_time(&model, &setup, &c, &layout, &st)
        .unwrap_or_else(|e| panic!("{}: {e}", fig.what));
    match fig.published {
        Published::TokensPerGpu(p) => (p, r.it.tokens_per_s / fig.gpus as f64),
        Published::TflopsPerGpu(p) => (
            p,
            r.it.model_flops / r.it.iteration_time_s / fig.gpus as f64 / 1e12,
        ),
    }
}

/// Every published MoE run within ±20%, except the named misses, which stay beyond it (a row
/// the model comes to predict leaves the list). docs/calibration.md, "MoE training", says why
/// each miss misses.
#[test]
fn moe_training_figures_within_20_percent() {
    for fig in moe_figures() {
        let (p, g) = predict_moe(&fig);
        let err = g / p - 1.0;
        eprintln!(
            "{:<45} published {:>8.0}  predicted {:>8.0}  {:+6.1}%{}",
            fig.what,
            p,
            g,
            100.0 * err,
            fig.known_miss
                .map(|m| format!("  (miss: {m})"))
                .unwrap_or_default()
        );
        within_or_named_miss(fig.what, err, 0.20, fig.known_miss);
    }
}

/// A row without a named miss is within `bound`; a named miss stays outside it, so that the
/// list of misses stays true (a row the model comes to predict leaves it).
fn within_or_named_miss(what: &str, err: f64, bound: f64, miss: Option<&str>) {
    let (pct, b) = (100.0 * err, 100.0 * bound);
    match miss {
        None => assert!(err.abs() < bound, "{what}: {pct:+.1}%, beyond ±{b:.0}%"),
        Some(why) => assert!(
            err.abs() >= bound,
            "{what} is within ±{b:.0}% now ({pct:+.1}%): take it off the misses ({why})"
        ),
    }
}

/// torchtitan's A100 table (pytorch/torchtitan `docs/performance.md`, Llama 3 on 64 A100 80GB,
/// FSDP2, local batch 1, sequence 8192, bf16): 8B with selective activation checkpointing,
/// 70B with full. The page does not state the network; we assume one 200 Gb/s HDR port per GPU
/// (DGX A100). Each row: (what, published tokens/s/GPU, predicted, fits in 80 GB).
fn torchtitan_rows() -> Vec<(&'static str, f64, f64, bool)> {
    let mut out = Vec::new();
    // Op-level selective AC recomputes every other matmul of the forward (PyTorch's
    // selective checkpoint policy as torchtitan sets it: matmul outputs saved on alternate
    // calls), half the forward GEMMs; full AC recomputes the whole forward.
    for (what, model, rc, gemm_recompute, tok) in [
        (
            "torchtitan Llama 3 8B, selective op AC",
            ModelPreset::Llama3_8b.spec(),
            Recompute::Selective,
            2,
            2973.0,
        ),
        (
            "torchtitan Llama 3 70B, full AC",
            ModelPreset::Llama3_70b.spec(),
            Recompute::Full,
            0,
            331.0,
        ),
    ] {
        let c = Cluster::new(&Catalogue::default(), "a100", 64, 8, "ib200").unwrap();
        let layout = Layout {
            recompute: rc,
            zero: 3,
            ..Layout::new(1, 1, 64)
        };
        let setup = TrainSetup::new(8192, 64);
        // Eager PyTorch: no fused element-wise kernels, no TP; FlashAttention through SDPA;
        // gradients reduce-scattered in fp32 (torchtitan's default mixed_precision_reduce).
        let st = Stack {
            fused_kernels: false,
            grad_reduce_fp32: true,
            recompute_gemm_every: gemm_recompute,
            ..Stack::current()
        };
        let r = stack::iteration_time(&model, &setup, &c, &layout, &st).unwrap();
        out.push((what, tok, r.it.tokens_per_s / 64.0, r.it.fits));
    }
    out
}

/// Within ±15%.
#[test]
fn torchtitan_a100_figures_within_15_percent() {
    for (what, tok, got, fits) in torchtitan_rows() {
        let err = got / tok - 1.0;
        eprintln!(
            "{what:<42} published {tok:>8.0}  predicted {got:>8.0}  {:+.1}%",
            100.0 * err
        );
        assert!(err.abs() < 0.15, "{what}: {got} vs {tok}");
        assert!(fits, "{what} ran on 80 GB A100s");
    }
}

#[test]
fn h100_training_figures_within_15_percent() {
    let mut worst = 0.0f64;
    for fig in figures() {
        let got = predict(&fig);
        let err = got / fig.tokens_per_s_per_gpu - 1.0;
        eprintln!(
            "{:<42} published {:>8.0}  predicted {:>8.0}  {:+.1}%",
            fig.what,
            fig.tokens_per_s_per_gpu,
            got,
            100.0 * err
        );
        worst = worst.max(err.abs());
    }
    assert!(worst < 0.15, "worst error {:.1}%", 100.0 * worst);
}

/// Narayanan et al. 2021, Table 1 under the 2021 stack (`cost::iteration_time`, A100 80GB, HDR
/// InfiniBand, full recomputation): (what, published TFLOP/s per GPU, predicted).
fn narayanan_rows() -> Vec<Row> {
    let cat = Catalogue::default();
    NARAYANAN_TABLE1
        .iter()
        .map(|&(params_b, a, h, l, t, p, gpus, batch, tflops, ..)| {
            let m = ModelSpec::gpt("paper", l, h, a, 51200, 2048);
            let c = Cluster::new(&cat, "a100-80gb", gpus, 8, "ib-hdr-200").unwrap();
            let layout = Layout {
                recompute: Recompute::Full,
                ..Layout::new(t, p, gpus / (t * p))
            };
            let it = cost::iteration_time(&m, &TrainSetup::new(2048, batch), &c, &layout).unwrap();
            (
                format!("Narayanan 2021 {params_b}B (t {t}, p {p})"),
                tflops,
                it.tflops_per_gpu,
            )
        })
        .collect()
}

/// One run of a set: (what, published, predicted).
type Row = (String, f64, f64);

/// n, mean absolute error, worst error (signed, largest in size) of `(published, predicted)`.
fn stats(rows: &[(f64, f64)]) -> (usize, f64, f64) {
    let errs: Vec<f64> = rows.iter().map(|&(p, g)| g / p - 1.0).collect();
    let mae = errs.iter().map(|e| e.abs()).sum::<f64>() / errs.len().max(1) as f64;
    let worst = errs
        .iter()
        .copied()
        .fold(0.0f64, |w, e| if e.abs() > w.abs() { e } else { w });
    (errs.len(), mae, worst)
}

/// Every published training run the engine is checked against, per set and overall (issue 25,
/// item 4: mean absolute error ≤ 5%, none beyond ±15%). Reprint with
/// `cargo test -p tplab-engine --test h100_calibration training_runs_summary -- --nocapture`.
#[test]
fn training_runs_summary() {
    let mut sets: Vec<(&str, Vec<Row>)> = Vec::new();
    sets.push((
        "Narayanan et al. 2021, Table 1 (A100, TFLOP/s per GPU, 2021 stack)",
        narayanan_rows(),
    ));
    let h100 = |cp: bool| {
        figures()
            .into_iter()
            .filter(|f| (f.cp > 1) == cp)
            .map(|f| {
                let got = predict(&f);
                (f.what.to_string(), f.tokens_per_s_per_gpu, got)
            })
            .collect::<Vec<_>>()
    };
    sets.push((
        "NeMo / Megatron-Bridge H100 and B200, FP8, without CP (tokens/s per GPU)",
        h100(false),
    ));
    sets.push((
        "NeMo / Megatron-Bridge H100 and B200, FP8, context parallel 2",
        h100(true),
    ));
    sets.push((
        "torchtitan A100, FSDP2, bf16 (tokens/s per GPU)",
        torchtitan_rows()
            .into_iter()
            .map(|(w, p, g, _)| (w.to_string(), p, g))
            .collect(),
    ));
    sets.push((
        "Megatron-Core weak scaling, H100, bf16 (model TFLOP/s per GPU)",
        mcore_weak_scaling_rows()
            .into_iter()
            .map(|(w, p, g, miss)| {
                let w = if miss.is_some() {
                    format!("{w} (miss)")
                } else {
                    w
                };
                (w, p, g)
            })
            .collect(),
    ));
    let dense_sets = sets.len();
    let moe = |gpu: &str| {
        moe_figures()
            .into_iter()
            .filter(|f| f.gpu == gpu)
            .map(|f| {
                let (p, g) = predict_moe(&f);
                let miss = if f.known_miss.is_some() {
                    " (miss)"
                } else {
                    ""
                };
                (format!("{}{miss}", f.what), p, g)
            })
            .collect::<Vec<_>>()
    };
    sets.push((
        "MoE, H100 (Megatron-Core README TFLOP/s, Megatron-Bridge tokens/s per GPU)",
        moe("h100"),
    ));
    sets.push((
        "MoE, B200, MXFP8 (Megatron-Bridge tokens/s per GPU)",
        moe("b200"),
    ));
    let mut all = Vec::new();
    let mut covered = Vec::new();
    let mut with_moe = Vec::new();
    let mut summary = Vec::new();
    for (i, (name, rows)) in sets.iter().enumerate() {
        eprintln!("\n{name}");
        eprintln!("| run | published | predicted | error |");
        eprintln!("|---|---|---|---|");
        for (what, p, g) in rows {
            eprintln!(
                "| {what} | {p:.0} | {g:.0} | {:+.1}% |",
                100.0 * (g / p - 1.0)
            );
            if i < dense_sets {
                all.push((*p, *g));
                if !what.ends_with("(miss)") {
                    covered.push((*p, *g));
                }
            }
            with_moe.push((*p, *g));
        }
        let pg: Vec<(f64, f64)> = rows.iter().map(|(_, p, g)| (*p, *g)).collect();
        summary.push((name.to_string(), stats(&pg)));
    }
    let (n, mae, worst_all) = stats(&all);
    summary.push((
        "all published dense training runs".to_string(),
        (n, mae, worst_all),
    ));
    let (_, mae_covered, worst) = stats(&covered);
    summary.push((
        "dense runs the model covers (the named misses left out)".to_string(),
        stats(&covered),
    ));
    let moe_in: Vec<(f64, f64)> = moe_figures()
        .iter()
        .filter(|f| f.known_miss.is_none())
        .map(predict_moe)
        .collect();
    summary.push((
        "MoE runs the model covers (the misses left out)".to_string(),
        stats(&moe_in),
    ));
    summary.push((
        "all published training runs, MoE included".to_string(),
        stats(&with_moe),
    ));
    eprintln!("\n| set | n | mean absolute error | worst |");
    eprintln!("|---|---|---|---|");
    for (name, (n, mae, worst)) in &summary {
        eprintln!(
            "| {name} | {n} | {:.1}% | {:+.1}% |",
            100.0 * mae,
            100.0 * worst
        );
    }
    assert_eq!(n, 36, "every set counted");
    assert!(worst.abs() < 0.15, "worst error {:+.1}%", 100.0 * worst);
    assert!(mae <= MAE_PINNED, "overall MAE {:.2}%", 100.0 * mae);
    assert!(
        mae_covered <= MAE_COVERED_PINNED,
        "MAE without the named misses {:.2}%",
        100.0 * mae_covered
    );
}

/// The overall mean absolute error the model reaches today (docs/calibration.md); a change that
/// makes it worse fails here. 5.0% before issue 39; 5.2% since collectives across nodes run at
/// the node's NICs (Narayanan et al.'s DP-only rows now reduce gradients ~9× faster and come out
/// up to +9.7%), with the FP8 training efficiency refitted; 6.2% since Megatron-Core's nine
/// bf16 weak-scaling rows joined (8.5% on their own: the model has no GEMM efficiency by shape,
/// so its 1.7B row was +20.5% and its 314B and 462B rows −14%); 6.0% since the cross-entropy's
/// passes are counted from Megatron-Core's source (52 or 40 bytes a logit, unfused or fused,
/// where 24 was assumed): the 1.7B row, whose 131,072-token vocabulary on a 2,048-wide model
/// makes the loss a large share, comes to +13.7%, and no dense run is beyond ±15%.
const MAE_PINNED: f64 = 0.0605;
/// The same without the named misses: none are left among the dense runs since the
/// cross-entropy's passes are counted (the 1.7B row was the one).
const MAE_COVERED_PINNED: f64 = 0.0605;

/// Megatron-Core's weak-scaling table (NVIDIA/Megatron-LM `README.md`, "Performance
/// Benchmarking", `images/model_table.png` added in f2e5db402c): GPT models with a 131,072-token
/// vocabulary and 4,096-token sequences on H100s, bf16 (41% MFU = 408.8 of 989 TFLOP/s), DP
/// 48, DP, TP and PP communication overlapped. Per row: (size, heads, hidden, layers, TP, PP,
/// GPUs, batch, model TFLOP/s per GPU, why the model misses it). The README gives no micro-batch
/// size or interleaving depth; we take Megatron's defaults (micro-batch 1, no interleaving)
/// rather than the knobs that would match.
#[allow(clippy::type_complexity)]
const MCORE_WEAK_SCALING: [(
    &str,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    f64,
    Option<&str>,
); 9] = [
    ("1.7B", 16, 2048, 24, 1, 1, 48, 192, 408.8, None),
    ("7.1B", 32, 4096, 30, 2, 1, 96, 192, 465.9, None),
    ("16B", 48, 6144, 32, 4, 1, 192, 192, 489.1, None),
    ("32B", 56, 7168, 48, 8, 1, 384, 192, 459.6, None),
    ("70B", 64, 8192, 84, 8, 2, 768, 384, 419.7, None),
    ("119B", 80, 10240, 92, 8, 4, 1536, 768, 420.5, None),
    ("177B", 96, 12288, 96, 8, 6, 2304, 1152, 432.8, None),
    ("314B", 128, 16384, 96, 8, 8, 3072, 1536, 474.4, None),
    ("462B", 144, 18432, 112, 8, 16, 6144, 3072, 459.9, None),
];

/// Megatron-Core's weak-scaling rows under today's stack, bf16: (what, published TFLOP/s per
/// GPU, predicted model TFLOP/s per GPU, named miss).
fn mcore_weak_scaling_rows() -> Vec<(String, f64, f64, Option<&'static str>)> {
    MCORE_WEAK_SCALING
        .iter()
        .map(|&(what, a, h, l, tp, pp, gpus, gbs, tflops, miss)| {
            let m = ModelSpec::gpt(what, l, h, a, 131072, 4096);
            let c = Cluster::new(&Catalogue::default(), "h100", gpus, 8, "ib400").unwrap();
            let layout = Layout {
                sp: tp > 1,
                zero: 1,
                ..Layout::new(tp, pp, gpus / (tp * pp))
            };
            // Megatron-LM's own defaults: the README's flags do not fuse the cross-entropy.
            let st = Stack {
                precision: Precision::Bf16,
                fused_cross_entropy: false,
                ..Stack::current()
            };
            let r = stack::iteration_time(&m, &TrainSetup::new(4096, gbs), &c, &layout, &st)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(r.it.fits, "{what} ran on 80 GB H100s");
            let got = r.it.model_flops / r.it.iteration_time_s / gpus as f64 / 1e12;
            (
                format!("Megatron-Core weak scaling {what} (TP {tp}, PP {pp})"),
                tflops,
                got,
                miss,
            )
        })
        .collect()
}

/// Within ±15%, the pipeline rows (PP 2 to 16) included; a named miss must stay outside, so
/// that the list stays true.
#[test]
fn megatron_core_weak_scaling_within_15_percent() {
    for (what, p, g, miss) in mcore_weak_scaling_rows() {
        let err = g / p - 1.0;
        eprintln!(
            "{what:<48} published {p:>6.1}  predicted {g:>6.1}  {:+.1}%",
            100.0 * err
        );
        within_or_named_miss(&what, err, 0.15, miss);
    }
}
