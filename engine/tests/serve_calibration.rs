//! The serving cost model ([`tplab_engine::serve_cost`]) against published measurements. Each
//! figure, its source, our prediction and the error are listed in docs/calibration.md
//! ("Serving"); the tests below recompute the predictions and hold them to the bands stated
//! there, so a change to the model that moves a prediction out of its band fails here.
//!
//! Sources:
//! - TensorRT-LLM `docs/source/performance.md` (NVIDIA/TensorRT-LLM, release 0.6 docs, data
//!   "from TensorRT-LLM v0.5"), "Low Latency" table, A100 GPUs (FP16), batch 1, first-token
//!   latency: LLaMA 7B TP1 (128 → 16 ms, 2048 → 133 ms), LLaMA 70B TP4 (128 → 47 ms,
//!   2048 → 377 ms).
//! - NVIDIA NeMo Framework user guide, "Performance → Llama-2 Results → Inference Performance"
//!   (docs.nvidia.com/nemo-framework/user-guide/latest/performance/llama.html), TensorRT-LLM,
//!   "Chatbot Conversation" (input 128, output 20), batch 1, average request latency of
//!   Llama-2-7B at TP 1, 2, 4, 8 on A100 80GB SXM4 and H100 80GB HBM3.
//!
//! Model shapes: Llama-2 7B and 70B `config.json` (meta-llama/Llama-2-7b-hf, -70b-hf): 32 layers,
//! hidden 4096, 32 heads, MHA, intermediate 11008; 80 layers, 8192, 64 heads, 8 KV heads,
//! intermediate 28672; vocabulary 32000.

use tplab_engine::hardware::{Catalogue, Cluster};
use tplab_engine::models::ModelSpec;
use tplab_engine::serve_cost::{prefill_time, request_latency_s, ServeSetup};
use tplab_engine::Algorithm;

fn llama2_7b() -> ModelSpec {
    ModelSpec::llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096)
}

fn llama2_70b() -> ModelSpec {
    ModelSpec::llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096)
}

fn node(gpu: &str) -> Cluster {
    Cluster::new(&Catalogue::default(), gpu, 8, 8, "ib-ndr-400").expect("catalogue GPU")
}

/// (model, gpu, tp, prompt, measured first-token latency in ms, allowed relative error).
fn first_token_figures() -> Vec<(ModelSpec, &'static str, usize, usize, f64, f64)> {
    vec![
        (llama2_7b(), "a100-80gb", 1, 128, 16.0, 0.6),
        (llama2_7b(), "a100-80gb", 1, 2048, 133.0, 0.15),
        (llama2_70b(), "a100-80gb", 4, 128, 47.0, 0.6),
        (llama2_70b(), "a100-80gb", 4, 2048, 377.0, 0.15),
    ]
}

/// (gpu, tp, measured average latency in ms) for Llama-2-7B, batch 1, 128 in, 20 out.
const NEMO_7B: [(&str, usize, f64); 8] = [
    ("a100-80gb", 1, 234.0),
    ("a100-80gb", 2, 171.7),
    ("a100-80gb", 4, 143.7),
    ("a100-80gb", 8, 136.5),
    ("h100-sxm", 1, 153.8),
    ("h100-sxm", 2, 128.6),
    ("h100-sxm", 4, 107.4),
    ("h100-sxm", 8, 97.6),
];

fn first_token_ms(m: &ModelSpec, gpu: &str, tp: usize, prompt: usize) -> f64 {
    let p = prefill_time(
        m,
        &node(gpu),
        ServeSetup {
            tp,
            batch: 1,
            context: prompt,
            algorithm: Algorithm::Ring,
        },
    )
    .expect("valid setting");
    p.total_s * 1e3
}

#[test]
fn long_prompts_first_token_latency_within_fifteen_percent() {
    for (m, gpu, tp, prompt, want, band) in first_token_figures() {
        let got = first_token_ms(&m, gpu, tp, prompt);
        let err = (got - want) / want;
        println!("{} {gpu} TP{tp} prompt {prompt}: predicted {got:.1} ms, measured {want} ms, error {:+.0}%", m.name, err * 100.0);
        assert!(
            err.abs() <= band,
            "{} TP{tp} {prompt}: {got:.1} vs {want} ({err:+.2})",
            m.name
        );
    }
}

#[test]
fn request_latency_over_tp_follows_the_measured_curve() {
    let m = llama2_7b();
    let mut predicted = Vec::new();
    for (gpu, tp, want) in NEMO_7B {
        let got = 1e3 * request_latency_s(&m, &node(gpu), tp, 1, 128, 20, Algorithm::Ring).unwrap();
        let err = (got - want) / want;
        println!("llama2-7b {gpu} TP{tp} 128/20: predicted {got:.1} ms, measured {want} ms, error {:+.0}%", err * 100.0);
        // The model leaves out per-step framework and launch overheads: it predicts low, but
        // within a factor of two of every row.
        // The model leaves out per-step framework and launch overheads and NCCL's real
        // small-message latency: it predicts low, by 30-55% on every row (docs/calibration.md).
        assert!(
            (-0.6..0.0).contains(&err),
            "{gpu} TP{tp}: {got:.1} vs {want}"
        );
        predicted.push(got);
    }
    // The shape: TP=2 helps, and 8 GPUs are far from 8x faster (the all-reduces' latency per
    // layer), on both GPUs, in the model as in the measurements. The model's ring α grows with
    // 2(n-1) steps, so it already turns worse at TP=8 where the measurement still gains 5-9%.
    for g in 0..2 {
        let (p, w) = (&predicted[4 * g..4 * g + 4], &NEMO_7B[4 * g..4 * g + 4]);
        assert!(p[1] < 0.8 * p[0] && w[1].2 < 0.9 * w[0].2);
        assert!(p[2] < p[1] && w[2].2 < w[1].2);
        let (pr, wr) = (p[3] / p[0], w[3].2 / w[0].2);
        println!(
            "TP8/TP1 latency ratio on {}: predicted {pr:.2}, measured {wr:.2}",
            w[0].0
        );
        assert!(
            pr > 0.3 && wr > 0.3,
            "8 GPUs are far from 8x faster: {pr} {wr}"
        );
        assert!((pr - wr).abs() < 0.25, "{pr} vs {wr}");
    }
}
