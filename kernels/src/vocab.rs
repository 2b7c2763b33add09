//! The vocabulary-parallel embedding and cross-entropy on the GPU (`tplab gpu vocab`): the
//! engine's pass (`tplab_engine::labs::vocab`, Megatron's `VocabParallelEmbedding` and
//! `vocab_parallel_cross_entropy`) walked event by event from `vocab::events`, in f32.
//!
//! Per rank: the masked lookup of its vocabulary rows and `embed.g` (all-reduce), the tied LM
//! head on its columns, the statistics of its real columns (`ce.local`: row maximum, sum of
//! `exp(z − its maximum)`, target logit or 0), `ce.max` (all-reduce with max), `ce.sumexp`
//! (each rank first rescales its sum to the global maximum, `s·exp(m_r − M)`, then an
//! all-reduce: the same sum the engine takes after the maximum, in another order), `ce.target`
//! (all-reduce), the gradient of the mean loss on its columns, the head's gradients,
//! `lm_head.f.bwd` (all-reduce) and the scatter of the input gradient into its rows.
//!
//! This file is the host side: the buffers and which each event reads and writes, tested on the
//! CPU against the events' placements, and the checks against the engine's f64 reference
//! (the engine's own `vocab::run` checks and tolerance: loss, per-token losses, embedded tokens,
//! each rank's logit columns and table-gradient rows, zero padding rows).

use crate::error::GpuError;
use ndarray::{s, Array1, Array2, Axis};
use tplab_engine::block::verify::{compare, Check, Tolerance};
use tplab_engine::block::{Op, TensorName, VocabTensor};
use tplab_engine::collectives::ReduceOp;
use tplab_engine::dtype::DType;
use tplab_engine::labs::vocab::{self, VocabConfig, VocabModel, VocabReport};

/// A buffer of one rank of the vocabulary pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VBuf {
    /// Token ids `[t, 1]` (i32).
    Ids,
    /// Target ids `[t, 1]` (i32).
    Targets,
    /// The rank's padded table rows `[vr, h]`.
    Table,
    /// The embedded tokens `[t, h]` (a partial sum before `embed.g`).
    E,
    /// The rank's logit columns `[t, vr]`.
    Logits,
    /// Row maxima `[1, t]` (the rank's, then the global after `ce.max`).
    Max,
    /// The rank's own row maxima, kept for the rescale before `ce.sumexp`.
    LocalMax,
    Sum,
    Target,
    DLogits,
    /// The head's input gradient `[t, h]` (partial before `lm_head.f.bwd`).
    DE,
    /// The gradient of the rank's table rows `[vr, h]`.
    Grad,
}

impl VBuf {
    /// The tensor of the engine's vocabulary program the buffer holds (`None` for the GPU's
    /// own: the rank's maxima kept for the rescale).
    pub fn tensor(self) -> Option<TensorName> {
        use VocabTensor as V;
        let v = match self {
            VBuf::Ids => V::Ids,
            VBuf::Table => V::Embedding,
            VBuf::E => V::E,
            VBuf::Logits => V::Logits,
            VBuf::Max => V::RowMax,
            VBuf::Sum => V::SumExp,
            VBuf::Target => V::TargetLogit,
            VBuf::DLogits => V::DLogits,
            VBuf::DE => V::DE,
            VBuf::Grad => V::EmbeddingGrad,
            VBuf::Targets => V::Targets,
            VBuf::LocalMax => return None,
        };
        Some(TensorName::Vocab(v))
    }
}

/// Shapes of the vocabulary pass on each rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VocabLayout {
    pub tp: usize,
    pub t: usize,
    pub h: usize,
    /// Padded vocabulary rows per rank.
    pub vr: usize,
    pub padded_vocab: usize,
}

/// A collective of the pass: the buffer it reduces in place, with which operation, and whether
/// the rescale of the sum runs first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VColl {
    pub buf: VBuf,
    pub op: ReduceOp,
}

impl VocabLayout {
    pub fn new(cfg: &VocabConfig) -> Self {
        Self {
            tp: cfg.tp.max(1),
            t: cfg.tokens,
            h: cfg.hidden,
            vr: cfg.rows_per_rank(),
            padded_vocab: cfg.padded_vocab(),
        }
    }

    pub const BUFFERS: [VBuf; 12] = [
        VBuf::Ids,
        VBuf::Targets,
        VBuf::Table,
        VBuf::E,
        VBuf::Logits,
        VBuf::Max,
        VBuf::LocalMax,
        VBuf::Sum,
        VBuf::Target,
        VBuf::DLogits,
        VBuf::DE,
        VBuf::Grad,
    ];

    pub fn shape(&self, b: VBuf) -> [usize; 2] {
        let (t, h, vr) = (self.t, self.h, self.vr);
        match b {
            VBuf::Ids | VBuf::Targets => [t, 1],
            VBuf::Table | VBuf::Grad => [vr, h],
            VBuf::E | VBuf::DE => [t, h],
            VBuf::Logits | VBuf::DLogits => [t, vr],
            VBuf::Max | VBuf::LocalMax | VBuf::Sum | VBuf::Target => [1, t],
        }
    }

    pub fn len(&self, b: VBuf) -> usize {
        let [r, c] = self.shape(b);
        r * c
    }

    /// Device bytes per rank (f32 and i32 elements).
    pub fn bytes(&self) -> u64 {
        Self::BUFFERS.iter().map(|&b| self.len(b) as u64 * 4).sum()
    }

    /// What a compute op reads and writes, in the order of the engine's events.
    pub fn io(op: Op) -> Option<(Vec<VBuf>, Vec<VBuf>)> {
        use VBuf::*;
        let v = |r: &[VBuf], w: &[VBuf]| Some((r.to_vec(), w.to_vec()));
        match op {
            Op::EmbedLookup => v(&[Ids, Table], &[E]),
            Op::LmHead => v(&[E, Table], &[Logits]),
            Op::CeLocal => v(&[Logits, Targets], &[Max, Sum, Target]),
            Op::CeBwd => v(&[Logits, Max, Sum, Targets], &[DLogits]),
            Op::LmHeadBwd => v(&[DLogits, E, Table], &[DE, Grad]),
            Op::EmbedBwd => v(&[DE], &[Grad]),
            _ => None,
        }
    }

    /// The all-reduce of a collective op.
    pub fn collective(op: Op) -> Option<VColl> {
        let c = |buf, op| Some(VColl { buf, op });
        match op {
            Op::EmbedG => c(VBuf::E, ReduceOp::Sum),
            Op::CeMax => c(VBuf::Max, ReduceOp::Max),
            Op::CeSumExp => c(VBuf::Sum, ReduceOp::Sum),
            Op::CeTarget => c(VBuf::Target, ReduceOp::Sum),
            Op::LmHeadFBwd => c(VBuf::DE, ReduceOp::Sum),
            _ => None,
        }
    }
}

/// The vocabulary pass's results on the GPU, in f64.
#[derive(Debug, Clone)]
pub struct VocabOutputs {
    pub embedded: Array2<f64>,
    pub losses: Array1<f64>,
    pub loss: f64,
    /// Each rank's logit columns `[t, vr]`.
    pub logits: Vec<Array2<f64>>,
    /// Each rank's table-gradient rows `[vr, h]`.
    pub grad_embedding: Vec<Array2<f64>>,
}

/// The seeded data of `cfg`, its table rounded to f32 (what the device holds), in f64.
pub fn device_model(cfg: &VocabConfig) -> VocabModel<f64> {
    let mut m = VocabModel::<f64>::random(cfg);
    m.embedding.mapv_inplace(|v| f64::from(v as f32));
    m
}

/// The engine's tolerance of its own f32 vocabulary run (see `tplab_engine::labs::vocab::run`).
pub fn tolerance(cfg: &VocabConfig) -> Tolerance {
    let eps = DType::F32.epsilon();
    let k = cfg.hidden.max(cfg.vocab);
    Tolerance {
        bound: None,
        relative: 16.0 * eps * (k as f64).sqrt() * 2.0,
        reason: format!(
            "f32 ε={eps:.2e} × √K (K={k}: the softmax sum over the vocabulary, or the head's dot \
             products) × 2 (forward, backward) × 16, as the engine's f32 run: the GPU only \
             reorders the sums (cuBLAS in f32 without TF32, f32 kernels)"
        ),
    }
}

/// The checks of the engine's `vocab::run`, on the GPU's outputs against the f64 reference.
pub fn checks(
    cfg: &VocabConfig,
    got: &VocabOutputs,
    want: &vocab::VocabResult<f64>,
    tol: &Tolerance,
) -> Vec<Check> {
    let scalar = |v: f64| Array2::from_elem((1, 1), v);
    let row = |a: &Array1<f64>| a.clone().insert_axis(Axis(0));
    let mut out = vec![
        compare(
            "loss",
            None,
            scalar(got.loss).view(),
            scalar(want.loss).view(),
            tol,
        ),
        compare(
            "losses",
            None,
            row(&got.losses).view(),
            row(&want.losses).view(),
            tol,
        ),
        compare(
            "embedded",
            None,
            got.embedded.view(),
            want.embedded.view(),
            tol,
        ),
    ];
    for r in 0..cfg.tp {
        let real = cfg.real_range(r);
        let n = real.len();
        let (Some(lg), Some(g)) = (got.logits.get(r), got.grad_embedding.get(r)) else {
            continue;
        };
        out.push(compare(
            "logits",
            Some(r),
            lg.slice(s![.., ..n]),
            want.logits[0].slice(s![.., real.clone()]),
            tol,
        ));
        out.push(compare(
            "grad.embedding",
            Some(r),
            g.slice(s![..n, ..]),
            want.grad_embedding[0].slice(s![real, ..]),
            tol,
        ));
        let pad = g.slice(s![n.., ..]);
        out.push(compare(
            "grad.embedding.padding",
            Some(r),
            pad,
            Array2::<f64>::zeros(pad.dim()).view(),
            tol,
        ));
    }
    out
}

/// Runs the vocabulary-parallel pass of `cfg` on the GPU (f32) and checks it against the f64
/// reference: the engine's report, with every event's measured time.
pub fn run(cfg: &VocabConfig, mode: crate::run::DeviceMode) -> Result<VocabReport, GpuError> {
    cfg.validate()
        .map_err(|e| GpuError::Unsupported(e.to_string()))?;
    let m = device_model(cfg);
    #[cfg(feature = "cuda")]
    {
        let mut events = vocab::events(cfg, DType::F32);
        let got = crate::cuda::exec::vocab_run(cfg, &m, mode, &mut events)?;
        let want = vocab::reference(cfg, &m);
        let tol = tolerance(cfg);
        let (ce, gather) = vocab::ce_bytes_sent_per_rank(cfg, DType::F32);
        Ok(VocabReport {
            config: cfg.clone(),
            dtype: DType::F32,
            padded_vocab: cfg.padded_vocab(),
            rows_per_rank: cfg.rows_per_rank(),
            loss: got.loss,
            reference_loss: want.loss,
            checks: checks(cfg, &got, &want, &tol),
            tolerance: tol,
            events,
            ce_bytes_sent_per_rank: ce,
            gather_bytes_sent_per_rank: gather,
        })
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (m, mode);
        Err(GpuError::NotCompiled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tplab_engine::trace::EventKind;

    /// Every tensor every event reads or writes has the shape of that rank's placement; every
    /// event is known to the GPU walk.
    #[test]
    fn buffers_have_the_events_placement_shapes() {
        for tp in [1, 2, 4] {
            let cfg = VocabConfig {
                vocab: 1000,
                hidden: 32,
                tokens: 24,
                tp,
                ..VocabConfig::default()
            };
            cfg.validate().unwrap();
            let lay = VocabLayout::new(&cfg);
            for e in vocab::events(&cfg, DType::F32) {
                match e.kind {
                    EventKind::Compute { .. } => {
                        let (r, w) = VocabLayout::io(e.op).expect("a GPU op");
                        for (bufs, placed) in [(&r, &e.reads), (&w, &e.writes)] {
                            assert_eq!(bufs.len(), placed.len(), "{}", e.label());
                            for (b, p) in bufs.iter().zip(placed) {
                                assert_eq!(b.tensor(), Some(p.tensor), "{}", e.label());
                                let local = p.on(0).unwrap().local_shape(p.shape);
                                assert_eq!(lay.shape(*b), local, "{}: {}", e.label(), p.tensor);
                            }
                        }
                    }
                    EventKind::Collective { .. } => {
                        let c = VocabLayout::collective(e.op).expect("a GPU collective");
                        let p = &e.reads[0];
                        assert_eq!(c.buf.tensor(), Some(p.tensor), "{}", e.label());
                        assert_eq!(lay.shape(c.buf), p.on(0).unwrap().local_shape(p.shape));
                        assert_eq!(c.op == ReduceOp::Max, e.op == Op::CeMax);
                    }
                }
            }
        }
    }

    /// The rescaled sum the GPU all-reduces is the engine's sum after the maximum: each rank's
    /// `Σ exp(z − m_r) · exp(m_r − M)` equals `Σ exp(z − M)`.
    #[test]
    fn rescaled_sums_equal_the_sum_after_the_maximum() {
        let cols: Vec<Vec<f64>> = vec![vec![0.3, -1.2, 2.5], vec![4.0, 0.1], vec![]];
        let global = cols
            .iter()
            .flatten()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let want: f64 = cols.iter().flatten().map(|z| (z - global).exp()).sum();
        let got: f64 = cols
            .iter()
            .map(|c| {
                let m = c.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                if m == f64::NEG_INFINITY {
                    return 0.0;
                }
                let s: f64 = c.iter().map(|z| (z - m).exp()).sum();
                s * (m - global).exp()
            })
            .sum();
        assert!((got - want).abs() < 1e-15 * want);
    }

    /// The checks catch a wrong rank: swapping two ranks' logits fails.
    #[test]
    fn checks_catch_swapped_ranks() {
        let cfg = VocabConfig {
            vocab: 300,
            hidden: 16,
            tokens: 8,
            tp: 2,
            ..VocabConfig::default()
        };
        let m = device_model(&cfg);
        let want = vocab::reference(&cfg, &m);
        let sh = vocab::sharded(&cfg, &m).unwrap();
        let mut got = VocabOutputs {
            embedded: sh.embedded.clone(),
            losses: sh.losses.clone(),
            loss: sh.loss,
            logits: sh.logits.clone(),
            grad_embedding: sh.grad_embedding.clone(),
        };
        let tol = tolerance(&cfg);
        assert!(checks(&cfg, &got, &want, &tol).iter().all(|c| c.passed));
        got.logits.swap(0, 1);
        assert!(!checks(&cfg, &got, &want, &tol).iter().all(|c| c.passed));
    }
}
