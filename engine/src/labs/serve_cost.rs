//! The serving cost model: prefill (compute-bound) and decode (memory- and latency-bound) of a
//! [`ModelSpec`] at tensor-parallel size `tp` on the hardware catalogue.
//!
//! # Decode, one step (one new token for each of `batch` sequences that hold `context` tokens)
//! Every GPU reads its shard of every weight once per step (16-bit weights:
//! `2 · (l · layer_params_per_rank + V·h/tp)` bytes, [`memory::layer_params_per_rank`]) and its
//! share of the KV cache of every sequence (`batch · context ·`
//! [`memory::kv_cache_bytes_per_token_per_gpu`], which stops shrinking at `tp = kv_heads`). The
//! FLOPs are `2·batch` per weight plus attention's `4·context·h/tp` per token per layer. The time
//! is the roofline of the two ([`crate::cost::roofline_s`]): at small batch the bytes win by far
//! (`2·batch` FLOPs per 2 bytes read is far below any GPU's FLOP/byte ratio). On top come the
//! collectives, timed by the engine's α–β model ([`crate::cost::collective_time_s`]): two all-reduces of
//! `batch·h` 16-bit values per layer (attention's and the MLP's `g`), one for the
//! vocabulary-parallel embedding, and the all-gather of the logits. They are small, so their
//! time is mostly `steps·α`: it does not shrink with `tp`, it grows with the ring's `2(tp−1)`
//! steps. That is why more GPUs stop helping: the weight time falls like `1/tp`, the all-reduce
//! time does not; and across the node boundary each all-reduce pays the inter-node link.
//!
//! # Prefill (time to first token)
//! The prompt's `batch·prompt` tokens go through every weight at once: `2·tokens` FLOPs per
//! weight plus causal attention's `2·prompt²·h` per sequence per layer, split `1/tp`; the roofline
//! makes it compute-bound at any real prompt length. Its all-reduces carry `tokens·h` values.
//!
//! # What is left out (why predictions come out low)
//! Kernel-launch and framework overheads per step, sampling, the element-wise passes over the
//! activations (a few `batch·h` vectors per layer: negligible bytes), dequantisation; the
//! calibration in `docs/calibration.md` ("Serving") lists each public figure, the prediction and
//! its error.

use crate::collectives::Algorithm;
use crate::cost::{collective_time_s, roofline_s};
use crate::dtype::DType;
use crate::hardware::Cluster;
use crate::memory::{self, USABLE_MEMORY_FRACTION};
use crate::models::ModelSpec;
use crate::trace::CollectiveKind;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Bytes per weight and per KV-cache element (bf16/fp16 serving).
pub const SERVE_BYTES: u64 = 2;

/// One serving setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServeSetup {
    pub tp: usize,
    /// Concurrent sequences decoded together.
    pub batch: usize,
    /// Tokens each sequence already holds in the KV cache.
    pub context: usize,
    /// All-reduce algorithm of the TP collectives.
    pub algorithm: Algorithm,
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
    #[error("{what} overflows: {detail}; use smaller numbers")]
    Overflow { what: &'static str, detail: String },
    #[error(transparent)]
    Collective(#[from] crate::collectives::CollectiveError),
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

fn check(model: &ModelSpec, s: &ServeSetup) -> Result<(), ServeCostError> {
    for (field, v) in [("tp", s.tp), ("batch", s.batch), ("context", s.context)] {
        if v == 0 {
            return Err(ServeCostError::Zero { field });
        }
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
    let tokens = s
        .batch
        .checked_mul(s.context)
        .ok_or(ServeCostError::Overflow {
            what: "batch × context",
            detail: format!("{} × {}", s.batch, s.context),
        })?;
    let per = memory::kv_cache_bytes_per_token_per_gpu(model, s.tp, 1, SERVE_BYTES);
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
/// the output projection.
pub fn decode_weight_bytes_per_gpu(model: &ModelSpec, tp: usize, batch: usize) -> u64 {
    let t = tp.max(1) as u64;
    let mut layer = memory::layer_params_per_rank(model, tp);
    if model.experts > 1 {
        let touched = (batch.saturating_mul(model.experts_per_token)).min(model.experts) as u64;
        let untouched = model.experts as u64 - touched;
        layer = layer.saturating_sub(untouched * model.mlp_params_per_expert() / t);
    }
    let head = (model.vocab as u64 * model.hidden as u64).div_ceil(t);
    SERVE_BYTES * (model.layers as u64 * layer + head + model.final_norm_params())
}

/// One decode step's modeled time on one GPU of the TP group.
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
    /// All TP collectives of the step.
    pub collective_s: f64,
    /// One of the `2·l` all-reduces.
    pub all_reduce_s: f64,
    pub all_reduces: usize,
    /// `compute_s + collective_s`: the time per output token of each sequence.
    pub step_s: f64,
    /// `batch / step_s`.
    pub tokens_per_s: f64,
    /// The TP group spans nodes (its all-reduces pay the inter-node link).
    pub spans_nodes: bool,
    /// Weights and KV cache fit in [`USABLE_MEMORY_FRACTION`] of each GPU.
    pub fits: bool,
    pub memory_per_gpu_bytes: u64,
}

/// Models one decode step of `model` on `cluster` (a TP group wider than
/// `cluster.gpus_per_node` spans nodes).
pub fn decode_time(
    model: &ModelSpec,
    cluster: &Cluster,
    setup: ServeSetup,
) -> Result<DecodeTime, ServeCostError> {
    check(model, &setup)?;
    let gpu = &cluster.gpu;
    let (tp, b, c) = (setup.tp, setup.batch as f64, setup.context as f64);
    let t = tp as f64;
    let h = model.hidden as f64;
    let weight_bytes_per_gpu = decode_weight_bytes_per_gpu(model, tp, setup.batch);
    let kv_per_token = memory::kv_cache_bytes_per_token_per_gpu(model, tp, 1, SERVE_BYTES);
    let kv_bytes_per_gpu = (setup.batch * setup.context) as u64 * kv_per_token;
    let matmul_weights = model.layers as f64 * model.matmul_params_per_layer_active() as f64 / t
        + model.vocab as f64 * h / t;
    let flops_per_gpu = b
        * (2.0 * matmul_weights
            + model.layers as f64 * 4.0 * c * (model.heads as f64 / t) * model.head_dim() as f64);
    let bytes = weight_bytes_per_gpu as f64 + kv_bytes_per_gpu as f64;
    let compute_s = roofline_s(flops_per_gpu, bytes, gpu, DType::Bf16);
    let weights_s = roofline_s(0.0, weight_bytes_per_gpu as f64, gpu, DType::Bf16);
    let kv_s = roofline_s(0.0, kv_bytes_per_gpu as f64, gpu, DType::Bf16);
    let link = cluster.group_link(1, tp);
    let act = setup.batch as u64 * model.hidden as u64 * SERVE_BYTES;
    let all_reduce_s =
        collective_time_s(CollectiveKind::AllReduce, setup.algorithm, tp, act, link)?;
    let all_reduces = if tp > 1 { 2 * model.layers } else { 0 };
    let embed_s = collective_time_s(CollectiveKind::AllReduce, setup.algorithm, tp, act, link)?;
    let logits = setup.batch as u64 * model.vocab as u64 * SERVE_BYTES;
    let gather_s = collective_time_s(CollectiveKind::AllGather, Algorithm::Ring, tp, logits, link)?;
    let collective_s = all_reduces as f64 * all_reduce_s + embed_s + gather_s;
    let step_s = compute_s + collective_s;
    let mem = memory::serving_memory(model, tp, 1, setup.batch, setup.context);
    Ok(DecodeTime {
        setup,
        weight_bytes_per_gpu,
        kv_bytes_per_gpu,
        flops_per_gpu,
        compute_s,
        weights_s,
        kv_s,
        collective_s,
        all_reduce_s,
        all_reduces,
        step_s,
        tokens_per_s: b / step_s,
        spans_nodes: cluster.group_spans_nodes(1, tp),
        fits: mem.total_bytes as f64 <= gpu.memory_bytes() * USABLE_MEMORY_FRACTION,
        memory_per_gpu_bytes: mem.total_bytes,
    })
}

/// The prefill of `batch` prompts of `prompt` tokens: time to first token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrefillTime {
    pub tp: usize,
    pub batch: usize,
    pub prompt: usize,
    pub flops_per_gpu: f64,
    pub compute_s: f64,
    pub collective_s: f64,
    pub total_s: f64,
}

/// Models the prefill (see the module docs).
pub fn prefill_time(
    model: &ModelSpec,
    cluster: &Cluster,
    setup: ServeSetup,
) -> Result<PrefillTime, ServeCostError> {
    check(model, &setup)?;
    let (tp, b, s) = (setup.tp, setup.batch as f64, setup.context as f64);
    let t = tp as f64;
    let h = model.hidden as f64;
    let l = model.layers as f64;
    let tokens = b * s;
    let flops_per_gpu = tokens * 2.0 * l * model.matmul_params_per_layer_active() as f64 / t
        + b * l * 2.0 * s * s * h / t
        + b * 2.0 * model.vocab as f64 * h / t;
    let weights = decode_weight_bytes_per_gpu(model, tp, setup.batch.saturating_mul(setup.context));
    let act_bytes = tokens * h * SERVE_BYTES as f64;
    let compute_s = roofline_s(
        flops_per_gpu,
        weights as f64 + 2.0 * l * 4.0 * act_bytes,
        &cluster.gpu,
        DType::Bf16,
    );
    let link = cluster.group_link(1, tp);
    let size = act_bytes as u64;
    let n = if tp > 1 { 2 * model.layers + 1 } else { 0 };
    let collective_s =
        n as f64 * collective_time_s(CollectiveKind::AllReduce, setup.algorithm, tp, size, link)?;
    Ok(PrefillTime {
        tp,
        batch: setup.batch,
        prompt: setup.context,
        flops_per_gpu,
        compute_s,
        collective_s,
        total_s: compute_s + collective_s,
    })
}

/// A whole request: prefill of `prompt` tokens (which yields the first token), then
/// `output − 1` decode steps at the mean context `prompt + output/2`. Seconds.
pub fn request_latency_s(
    model: &ModelSpec,
    cluster: &Cluster,
    tp: usize,
    batch: usize,
    prompt: usize,
    output: usize,
    algorithm: Algorithm,
) -> Result<f64, ServeCostError> {
    let pre = prefill_time(
        model,
        cluster,
        ServeSetup {
            tp,
            batch,
            context: prompt,
            algorithm,
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
            tp,
            batch,
            context: prompt + output / 2,
            algorithm,
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

/// Sweeps `tps` (each must split the model).
pub fn sweep_tp(
    model: &ModelSpec,
    cluster: &Cluster,
    tps: &[usize],
    batch: usize,
    context: usize,
    algorithm: Algorithm,
) -> Result<TpSweep, ServeCostError> {
    let rows = tps
        .iter()
        .map(|&tp| {
            decode_time(
                model,
                cluster,
                ServeSetup {
                    tp,
                    batch,
                    context,
                    algorithm,
                },
            )
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hardware::Catalogue;
    use crate::models::ModelPreset;

    fn h100() -> Cluster {
        Cluster::new(&Catalogue::default(), "h100-sxm", 16, 8, "ib-ndr-400").unwrap()
    }

    fn setup(tp: usize, batch: usize, context: usize) -> ServeSetup {
        ServeSetup {
            tp,
            batch,
            context,
            algorithm: Algorithm::Ring,
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
        let s = sweep_tp(&m, &c, &[1, 2, 4, 8, 16], 1, 1024, Algorithm::Ring).unwrap();
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
        let t = p.flops_per_gpu / (c.gpu.peak_flops(DType::Bf16) * crate::cost::MATMUL_EFFICIENCY);
        assert!((p.compute_s - t).abs() < 1e-9, "{} vs {t}", p.compute_s);
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
