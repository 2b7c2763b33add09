//! Decode on the GPU (`tplab serve --tiny --cuda`): the engine's serving decode
//! (`tplab_engine::labs::serve`) on CUDA. Prefill of the prompt, then one token per step; each rank
//! keeps the K and V of its KV heads (`Config::kv_heads_per_rank`, copies past the KV heads)
//! in a cache of `context` rows per layer; per step the split embedding's all-reduce, two
//! all-reduces per layer (`attn.g`, `mlp.g`) and the all-gather of the vocabulary-parallel LM
//! head's logits. Ranks are CUDA streams on one device, or one device each with NCCL.
//!
//! This file is the host side: the per-rank buffer shapes ([`DecodeLayout`], tested on the CPU
//! against the engine's serving trace and its CPU decoder's KV cache), the checks that run before
//! any device is touched, and the report: each step's measured time beside the engine's serving
//! cost model (`serve::modeled_step` of `serve::step_trace`) and the generation compared with
//! the unsharded CPU reference (`serve::reference_generate`, f64 from the very f32 weights the
//! device holds).
//!
//! Tolerance of the logits: the engine's f32 bound for the same model
//! (`serve::logits_tolerance(model, f32)`, `16·ε·√K·(L+1)`, K the longest sum). The GPU computes
//! in f32 throughout (cuBLAS with `CUBLAS_COMPUTE_32F`, no TF32; kernels accumulate in f32 with
//! IEEE division and `expf`), so, like the CPU decoder in f32, it only reorders the sums the f64
//! reference does; a wrong cache row, head or missing all-reduce moves the logits by order 1.
//! Greedy tokens must be identical (`serve::compare`).

use crate::error::GpuError;
use crate::run::DeviceMode;
use serde::Serialize;
use tplab_engine::capacity::hardware::Cluster;
use tplab_engine::collectives::Algorithm;
use tplab_engine::labs::serve::{self, Comparison, Generation, Sampling, TinyModel};

/// Shapes of the decode on one rank of `tp`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DecodeLayout {
    pub tp: usize,
    pub layers: usize,
    pub h: usize,
    pub hp: usize,
    pub kvp: usize,
    pub d: usize,
    /// QKV columns on the rank: `(hp + 2·kvp)·d`.
    pub qc: usize,
    pub fr: usize,
    /// Positions the cache holds (the model's context).
    pub context: usize,
    /// Vocabulary rows on the rank (the padded vocabulary `/ tp`).
    pub vr: usize,
    pub padded_vocab: usize,
    /// The real (unpadded) vocabulary rows of each rank, as `start..end` ids.
    pub real: Vec<std::ops::Range<usize>>,
}

impl DecodeLayout {
    /// **Errors** if `tp` does not split the model (the engine's rule and fix).
    pub fn new<T: tplab_engine::dtype::Element>(
        model: &TinyModel<T>,
        tp: usize,
    ) -> Result<Self, GpuError> {
        model.check_tp(tp)?;
        let cfg = model.block(tp, 1);
        let vcfg = tplab_engine::labs::train::TrainConfig {
            tp,
            ..model.cfg.clone()
        }
        .vocab(model.vocab());
        Ok(Self {
            tp,
            layers: cfg.layers,
            h: cfg.hidden,
            hp: cfg.heads_per_rank(),
            kvp: cfg.kv_heads_per_rank(),
            d: cfg.head_dim(),
            qc: cfg.qkv_cols_per_rank(),
            fr: cfg.ffn_per_rank(),
            context: model.context(),
            vr: vcfg.rows_per_rank(),
            padded_vocab: vcfg.padded_vocab(),
            real: (0..tp).map(|r| vcfg.real_range(r)).collect(),
        })
    }

    /// Width of one cached K (or V) row: the rank's KV heads.
    pub fn kv_width(&self) -> usize {
        self.kvp * self.d
    }

    /// Bytes of KV cache a rank holds after `positions` tokens, in `elem`-byte elements.
    pub fn kv_cache_bytes(&self, positions: usize, elem: usize) -> u64 {
        (self.layers * 2 * positions * self.kv_width() * elem) as u64
    }

    /// Device bytes one rank allocates in `elem`-byte elements: weights (its vocabulary rows,
    /// positions, its block shards, the final LayerNorm), the full-context activation buffers,
    /// the KV cache of every layer and the logits.
    pub fn bytes(&self, elem: usize) -> u64 {
        let (h, c, qc, fr) = (self.h, self.context, self.qc, self.fr);
        let hr = self.hp * self.d;
        let block = h * qc + qc + hr * h + h + h * fr + fr + fr * h + h + 4 * h;
        let weights = self.vr * h + c * h + self.layers * block + 2 * h;
        let acts = 4 * c * h + c * qc + c * hr + 2 * c * fr + 2 * h;
        let cache = self.layers * 2 * c * self.kv_width();
        let logits = self.vr + self.padded_vocab;
        ((weights + acts + cache + logits) * elem + 2 * c * 4 + c * 4) as u64
    }

    /// The real logits from the gathered padded row (every rank's `vr` columns, padding
    /// dropped), as the engine's decoder does.
    pub fn real_logits(&self, gathered: &[f32]) -> Vec<f64> {
        let mut out = Vec::new();
        for (r, range) in self.real.iter().enumerate() {
            let row = &gathered[(r * self.vr).min(gathered.len())..];
            out.extend(row.iter().take(range.len()).map(|&v| f64::from(v)));
        }
        out
    }
}

/// What `tplab serve --tiny --cuda` asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodeOptions {
    pub tp: usize,
    pub tokens: usize,
    pub sampling: Sampling,
    pub mode: DeviceMode,
}

/// One step's times: measured on the device beside the engine's serving cost model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepTime {
    /// Device time of the step (CUDA events from its first kernel to the logits' all-gather).
    pub device_ms: f64,
    /// Of which in collectives (the reducing stream's events; one device: the sum kernels).
    pub collective_ms: f64,
    /// Host wall time: launches, the step, the logits' download and the sampling.
    pub wall_ms: f64,
    /// The cost model's time of the same step on the chosen GPU.
    pub predicted_ms: f64,
    pub predicted_collective_ms: f64,
}

/// A decode on the GPU, timed and checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuDecode {
    pub generation: Generation,
    pub reference: Generation,
    pub comparison: Comparison,
    pub tolerance: tplab_engine::block::verify::Tolerance,
    /// Per step (the first is the prefill).
    pub times: Vec<StepTime>,
    pub layout: DecodeLayout,
    pub devices: Vec<String>,
    pub mode: String,
    /// The GPU of the cost model.
    pub modeled_gpu: String,
}

impl GpuDecode {
    /// Mean measured device ms per decoded token (prefill excluded).
    pub fn decode_ms(&self) -> f64 {
        serve::mean(self.times.iter().skip(1).map(|t| t.device_ms))
    }

    /// Mean predicted ms per decoded token (prefill excluded).
    pub fn predicted_decode_ms(&self) -> f64 {
        serve::mean(self.times.iter().skip(1).map(|t| t.predicted_ms))
    }

    pub fn passed(&self) -> bool {
        self.comparison.passed
    }
}

/// The cost model's time of each step of a generation of `tokens` tokens after a `prompt`-token
/// prompt at `tp` on `cluster`, ms: (total, collectives).
pub fn predicted_ms(
    model: &TinyModel<f64>,
    tp: usize,
    prompt: usize,
    tokens: usize,
    cluster: &Cluster,
) -> Vec<(f64, f64)> {
    serve::generation_traces(model, tp, Algorithm::Ring, prompt, tokens)
        .iter()
        .map(|t| {
            let m = serve::modeled_step(t, cluster);
            (m.total_s * 1e3, m.collective_s * 1e3)
        })
        .collect()
}

/// Decodes `opts.tokens` tokens after `prompt` on the GPU and checks them against the CPU
/// reference. Bad requests (prompt, tokens, TP, context) are refused before any device is
/// touched; without a GPU the error says what is missing.
pub fn decode(
    model: &TinyModel<f64>,
    prompt: &str,
    opts: &DecodeOptions,
    cluster: &Cluster,
) -> Result<GpuDecode, GpuError> {
    let layout = DecodeLayout::new(model, opts.tp)?;
    if model.context() > crate::launch::MAX_DECODE_POSITIONS {
        return Err(GpuError::Unsupported(format!(
            "the GPU decode keeps at most {} cached positions per attention block; this model's \
             context is {}",
            crate::launch::MAX_DECODE_POSITIONS,
            model.context()
        )));
    }
    // The reference checks the request (prompt characters, tokens, context, temperature).
    let reference = serve::reference_generate(model, prompt, opts.tokens, opts.sampling)?;
    let tolerance = serve::logits_tolerance(model, tplab_engine::dtype::DType::F32);
    #[cfg(feature = "cuda")]
    {
        let run = crate::cuda::exec::decode(model, &layout, &reference.prompt, opts)?;
        let predicted = predicted_ms(model, opts.tp, reference.prompt.len(), opts.tokens, cluster);
        let comparison = serve::compare(&run.generation, &reference, &tolerance);
        let times = run
            .times
            .iter()
            .zip(predicted.iter().chain(std::iter::repeat(&(0.0, 0.0))))
            .map(|(m, &(p, pc))| StepTime {
                predicted_ms: p,
                predicted_collective_ms: pc,
                ..*m
            })
            .collect();
        Ok(GpuDecode {
            generation: run.generation,
            reference,
            comparison,
            tolerance,
            times,
            layout,
            devices: run.devices,
            mode: run.mode,
            modeled_gpu: cluster.gpu.name.clone(),
        })
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (reference, tolerance, cluster, layout);
        Err(GpuError::NotCompiled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tplab_engine::trace::Event;

    fn tiny(kv: Option<usize>) -> TinyModel<f64> {
        let cfg = serve::tiny_serving_config(kv, tplab_engine::dtype::DType::F64);
        TinyModel::random(&cfg)
    }

    /// The cluster the cost model prices the steps on: 4 H100s in nodes of 8, InfiniBand 400.
    fn h100s() -> Cluster {
        Cluster::covering(
            &tplab_engine::capacity::hardware::Catalogue::default(),
            "h100",
            4,
            8,
            "ib400",
        )
        .unwrap()
    }

    /// Shapes of the decode's buffers against the engine's serving trace of the same step.
    #[test]
    fn layout_matches_the_serving_trace() {
        use tplab_engine::block::Op;
        for kv in [None, Some(2), Some(1)] {
            let m = tiny(kv);
            for tp in [1, 2, 4] {
                let lay = DecodeLayout::new(&m, tp).unwrap();
                for (n, ctx) in [(7, 7), (1, 12)] {
                    let tr = serve::step_trace(&m, tp, Algorithm::Ring, n, ctx);
                    let ev = |op: Op| -> &Event { tr.events.iter().find(|e| e.op == op).unwrap() };
                    assert_eq!(ev(Op::EmbedLookup).inputs[1], [lay.vr, lay.h]);
                    assert_eq!(ev(Op::Qkv).output, [n, lay.qc]);
                    assert_eq!(ev(Op::AttnCore).inputs[1], [ctx, 2 * lay.kv_width()]);
                    assert_eq!(ev(Op::AttnCore).output, [n, lay.hp * lay.d]);
                    assert_eq!(ev(Op::Fc1).output, [n, lay.fr]);
                    assert_eq!(ev(Op::LmHead).output, [1, lay.vr]);
                    assert_eq!(ev(Op::LogitsGather).output, [1, lay.padded_vocab]);
                    assert_eq!(lay.vr * tp, lay.padded_vocab);
                    // Two all-reduces per layer and the embedding's.
                    let ar = tr
                        .events
                        .iter()
                        .filter(|e| {
                            e.collective_kind()
                                == Some(tplab_engine::collectives::CollectiveKind::AllReduce)
                        })
                        .count();
                    assert_eq!(ar, 1 + 2 * lay.layers);
                }
            }
        }
    }

    /// The cache a rank holds after each step is the CPU decoder's, byte for byte (f32).
    #[test]
    fn kv_cache_bytes_match_the_cpu_decoder() {
        for kv in [None, Some(2), Some(1)] {
            let cfg = serve::tiny_serving_config(kv, tplab_engine::dtype::DType::F32);
            let m = TinyModel::<f32>::random(&cfg);
            for tp in [1, 2, 4] {
                let lay = DecodeLayout::new(&m, tp).unwrap();
                let mut dec = serve::Decoder::new(&m, tp, Algorithm::Ring).unwrap();
                let prompt = m.encode("Tensor").unwrap();
                dec.step(&prompt).unwrap();
                dec.step(&[0]).unwrap();
                let want = dec.kv_cache_bytes_per_rank();
                assert!(want
                    .iter()
                    .all(|&b| b == lay.kv_cache_bytes(prompt.len() + 1, 4)));
                assert!(lay.bytes(4) > lay.kv_cache_bytes(lay.context, 4));
            }
        }
    }

    /// Dropping the padding of the gathered row gives the real vocabulary in id order.
    #[test]
    fn real_logits_drop_each_ranks_padding() {
        let m = tiny(None);
        let lay = DecodeLayout::new(&m, 4).unwrap();
        let gathered: Vec<f32> = (0..lay.padded_vocab).map(|i| i as f32).collect();
        let real = lay.real_logits(&gathered);
        assert_eq!(real.len(), m.vocab());
        // Id i sits at rank i / vr, column i % vr: the identity when padding is at the end.
        for (i, v) in real.iter().enumerate() {
            let r = lay.real.iter().position(|rg| rg.contains(&i)).unwrap();
            assert_eq!(*v as usize, r * lay.vr + (i - lay.real[r].start));
        }
    }

    /// Bad requests are refused before any device is touched, naming the fix; without a GPU
    /// the error says what is missing.
    #[test]
    fn bad_requests_and_missing_gpu_are_clear_errors() {
        let m = tiny(None);
        let cluster = h100s();
        let opts = DecodeOptions {
            tp: 3,
            tokens: 4,
            sampling: Sampling::Greedy,
            mode: DeviceMode::SingleDevice(0),
        };
        let e = decode(&m, "Tensor", &opts, &cluster)
            .unwrap_err()
            .to_string();
        assert!(e.contains("valid TP sizes"), "{e}");
        let opts = DecodeOptions { tp: 2, ..opts };
        let e = decode(&m, "Tensor€", &opts, &cluster)
            .unwrap_err()
            .to_string();
        assert!(e.contains("alphabet"), "{e}");
        let long = DecodeOptions {
            tokens: 1000,
            ..opts
        };
        let e = decode(&m, "Tensor", &long, &cluster)
            .unwrap_err()
            .to_string();
        assert!(e.contains("context"), "{e}");
        if !crate::probe().usable() {
            let e = decode(&m, "Tensor", &opts, &cluster).unwrap_err();
            assert!(
                matches!(
                    e,
                    GpuError::NotCompiled | GpuError::MissingLibrary { .. } | GpuError::NoDevice(_)
                ),
                "{e}"
            );
        }
    }

    #[test]
    fn predictions_cover_every_step_and_decode_is_cheaper_than_prefill() {
        let m = tiny(None);
        let cluster = h100s();
        let p = predicted_ms(&m, 2, 10, 5, &cluster);
        assert_eq!(p.len(), 5);
        assert!(p.iter().all(|&(t, c)| t > 0.0 && c > 0.0 && c <= t));
    }
}
