//! Vocabulary parallelism: the embedding split by vocabulary rows and a cross-entropy over
//! vocabulary-sharded logits that never gathers the full logits (Megatron-LM's
//! `VocabParallelEmbedding` and `vocab_parallel_cross_entropy`).
//!
//! # The split
//! The vocabulary `V` is padded to a multiple of `granularity · tp` (Megatron's
//! `--make-vocab-size-divisible-by`, default 128), so every rank holds the same number of rows
//! `Vp / tp`: rank `r` holds token ids `r·Vp/tp .. (r+1)·Vp/tp`. The padding rows are zero and no
//! token id points at them.
//!
//! # Forward
//! - **Embedding** (`embed.lookup`, `embed.g`): rank `r` looks up the tokens whose ids fall in its
//!   range and writes zeros for the others (the mask), then an all-reduce adds the ranks' partial
//!   `[T, h]` results. Exactly one rank contributes to each row, so the sum is exact.
//! - **LM head** (`lm_head`): the output layer is tied to the embedding (GPT-2): rank `r`'s
//!   logits are `X·E_rᵀ`, `[T, Vp/tp]`, its own vocabulary columns. Nothing gathers them.
//! - **Cross-entropy** over the sharded logits, per token: the row maximum (`ce.max`, an
//!   all-reduce with max), the sum of `exp(logit − max)` over each rank's columns (`ce.sumexp`,
//!   an all-reduce with sum) and the target's logit, which lives on one rank and is zero on the
//!   others (`ce.target`, an all-reduce with sum). `loss_t = log Σexp − (z_target − max)`. The
//!   three reductions move `3·T` numbers, against `T·V` for gathering the logits.
//! - The padding columns are masked out of the max and the sum (tplab does this so that the loss
//!   equals the unpadded model's; Megatron leaves them in the softmax, where training drives them
//!   down since no target is ever a padding id).
//!
//! # Backward (mean loss over tokens)
//! `dlogits_r = (softmax_r − onehot_r)/T` on each rank's columns (zero on padding); the LM head's
//! weight gradient `dlogits_rᵀ·X` lands on rank `r`'s rows; its input gradient is a partial sum
//! over ranks (`lm_head.f.bwd`, all-reduce); the embedding gradient scatters it into the rows of
//! the looked-up ids each rank holds (`embed.bwd`), added to the tied weight's gradient.

use crate::block::{work, Op, Placement, TensorPlacement};
use crate::collectives::{self, Algorithm, CollectiveError, ReduceOp};
use crate::config::human_bytes;
use crate::dtype::{DType, Element};
use crate::ops;
use crate::trace::{CollectiveKind, ComputeOp, Event, EventKind, Parallel, Timing};
use crate::verify::{compare, Check, Tolerance};
use ndarray::{s, Array1, Array2, ArrayView2, Axis};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Megatron-LM's default `--make-vocab-size-divisible-by`.
pub const DEFAULT_GRANULARITY: usize = 128;

/// Largest token count [`VocabConfig::validate`] considers (2⁴⁰, or `usize::MAX` where usize
/// has 32 bits, as in the web edition); below it the memory guard answers with the bytes a run
/// would need.
pub const MAX_TOKENS: usize = if usize::BITS >= 64 {
    (1u64 << 40) as usize
} else {
    usize::MAX
};

/// Largest embedding table (rows × hidden, elements) the CPU demo allocates.
pub const MAX_TABLE_ELEMENTS: usize = 64 << 20;

/// One vocabulary-parallel scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct VocabConfig {
    /// Vocabulary size `V` (GPT-2: 50257).
    pub vocab: usize,
    pub hidden: usize,
    /// Tokens `T` (batch × sequence).
    pub tokens: usize,
    pub tp: usize,
    /// The padded vocabulary is a multiple of `granularity · tp`.
    pub granularity: usize,
    pub seed: u64,
    pub algorithm: Algorithm,
}

impl Default for VocabConfig {
    fn default() -> Self {
        Self {
            vocab: 50257,
            hidden: 768,
            tokens: 128,
            tp: 4,
            granularity: DEFAULT_GRANULARITY,
            seed: 42,
            algorithm: Algorithm::Ring,
        }
    }
}

/// Why a [`VocabConfig`] cannot run.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum VocabError {
    #[error("{field} must be at least 1 (got 0)")]
    Zero { field: &'static str },
    #[error("TP size must be between 1 and {max} (got {tp})")]
    TpOutOfRange { tp: usize, max: usize },
    #[error(
        "the embedding table would hold {elements} elements ({padded} padded rows × hidden \
         {hidden}), over the {limit} this CPU demo allocates; reduce vocab or hidden"
    )]
    TooLarge {
        elements: usize,
        padded: usize,
        hidden: usize,
        limit: usize,
    },
    #[error("{field} {value} is over the limit of {max}; use a {field} of at most {max}")]
    OverLimit {
        field: &'static str,
        value: usize,
        max: usize,
    },
    #[error(
        "vocab {vocab} padded to a multiple of granularity {granularity} × TP {tp} does not fit \
         in 64 bits; use a granularity of at most {max_granularity}"
    )]
    PaddingOverflow {
        vocab: usize,
        granularity: usize,
        tp: usize,
        max_granularity: usize,
    },
    #[error(
        "this vocabulary run needs about {} ({tokens} tokens × {padded} padded rows of logits, \
         the table and their gradients), over the {} guard; reduce tokens, vocab or hidden",
        human_bytes(*needed_bytes), human_bytes(*limit_bytes)
    )]
    TooMuchMemory {
        needed_bytes: u64,
        limit_bytes: u64,
        tokens: usize,
        padded: usize,
    },
    #[error(transparent)]
    Collective(#[from] CollectiveError),
}

impl VocabConfig {
    /// `V` rounded up to a multiple of `granularity · tp`, or `None` when that overflows.
    pub fn checked_padded_vocab(&self) -> Option<usize> {
        let m = self.granularity.max(1).checked_mul(self.tp.max(1))?;
        self.vocab.div_ceil(m).checked_mul(m)
    }

    /// `V` rounded up to a multiple of `granularity · tp` (saturating on a config that
    /// [`VocabConfig::validate`] refuses).
    pub fn padded_vocab(&self) -> usize {
        self.checked_padded_vocab().unwrap_or(usize::MAX)
    }

    /// A conservative estimate of the bytes [`run`] allocates (8-byte elements, as the checks
    /// compare in f64): the table, its shards and both gradients (`4·Vp·h`), the logits,
    /// their gradients, softmax temporaries and the f64 copies the checks take (`6·T·Vp`), the
    /// embedded tokens on every rank (`(4 + tp)·T·h`) and the ids and targets.
    pub fn bytes_estimate(&self) -> u64 {
        let (v, h, t, tp) = (
            self.padded_vocab() as u128,
            self.hidden as u128,
            self.tokens as u128,
            self.tp as u128,
        );
        let m = |a: u128, b: u128| a.saturating_mul(b);
        let elements = m(4, m(v, h))
            .saturating_add(m(6, m(t, v)))
            .saturating_add(m(4 + tp, m(t, h)))
            .saturating_add(m(2, t));
        u64::try_from(m(8, elements)).unwrap_or(u64::MAX)
    }

    /// Vocabulary rows per rank.
    pub fn rows_per_rank(&self) -> usize {
        self.padded_vocab() / self.tp.max(1)
    }

    /// The token ids rank `r` holds (`r·Vp/tp .. (r+1)·Vp/tp`, padding included).
    pub fn rank_range(&self, r: usize) -> std::ops::Range<usize> {
        let n = self.rows_per_rank();
        r * n..(r + 1) * n
    }

    /// The real (not padding) ids rank `r` holds.
    pub fn real_range(&self, r: usize) -> std::ops::Range<usize> {
        let full = self.rank_range(r);
        full.start.min(self.vocab)..full.end.min(self.vocab)
    }

    pub fn validate(&self) -> Result<(), VocabError> {
        for (field, v) in [
            ("vocab", self.vocab),
            ("hidden", self.hidden),
            ("tokens", self.tokens),
            ("tp", self.tp),
            ("granularity", self.granularity),
        ] {
            if v == 0 {
                return Err(VocabError::Zero { field });
            }
        }
        if self.tp > crate::config::MAX_TP {
            return Err(VocabError::TpOutOfRange {
                tp: self.tp,
                max: crate::config::MAX_TP,
            });
        }
        // Each size alone within what the CPU demo could hold (the table limit), which also
        // keeps the padding arithmetic far inside 64 bits.
        for (field, value, max) in [
            ("vocab", self.vocab, MAX_TABLE_ELEMENTS),
            ("hidden", self.hidden, MAX_TABLE_ELEMENTS),
            ("granularity", self.granularity, MAX_TABLE_ELEMENTS),
            // Tokens may go higher: the memory guard below then names the bytes they need.
            ("tokens", self.tokens, MAX_TOKENS),
        ] {
            if value > max {
                return Err(VocabError::OverLimit { field, value, max });
            }
        }
        let Some(padded) = self.checked_padded_vocab() else {
            return Err(VocabError::PaddingOverflow {
                vocab: self.vocab,
                granularity: self.granularity,
                tp: self.tp,
                max_granularity: MAX_TABLE_ELEMENTS / self.tp.max(1),
            });
        };
        let elements = padded.saturating_mul(self.hidden);
        if elements > MAX_TABLE_ELEMENTS {
            return Err(VocabError::TooLarge {
                elements,
                padded,
                hidden: self.hidden,
                limit: MAX_TABLE_ELEMENTS,
            });
        }
        let needed_bytes = self.bytes_estimate();
        let limit_bytes = crate::config::DEFAULT_MEMORY_GUARD_BYTES;
        if needed_bytes > limit_bytes {
            return Err(VocabError::TooMuchMemory {
                needed_bytes,
                limit_bytes,
                tokens: self.tokens,
                padded,
            });
        }
        Ok(())
    }
}

/// The seeded data: token ids, targets and the (unpadded) embedding table `[V, h]`.
#[derive(Debug, Clone)]
pub struct VocabModel<T> {
    pub ids: Vec<usize>,
    pub targets: Vec<usize>,
    pub embedding: Array2<T>,
}

impl<T: Element> VocabModel<T> {
    /// Ids and targets uniform over the vocabulary; embedding N(0, σ²) with `σ = ½·h^(-1/4)`:
    /// with the tied head a token's logit against its own row is `h·σ² = √h/4` and against the
    /// others N(0, 1/16), so no single logit swamps the softmax sum and every column
    /// (a wrong mask, a missing rank) moves the loss.
    pub fn random(cfg: &VocabConfig) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let ids = (0..cfg.tokens)
            .map(|_| rng.random_range(0..cfg.vocab))
            .collect();
        let targets = (0..cfg.tokens)
            .map(|_| rng.random_range(0..cfg.vocab))
            .collect();
        let scale = 0.5 / (cfg.hidden as f64).sqrt().sqrt();
        let embedding = Array2::from_shape_simple_fn((cfg.vocab, cfg.hidden), || {
            let z: f64 = StandardNormal.sample(&mut rng);
            T::from_f64(scale * z)
        });
        Self {
            ids,
            targets,
            embedding,
        }
    }
}

/// What one pass computes (reference or sharded).
#[derive(Debug, Clone)]
pub struct VocabResult<T> {
    /// Embedded tokens `[T, h]`.
    pub embedded: Array2<T>,
    /// Per-token loss `[T]`.
    pub losses: Array1<T>,
    /// Mean loss.
    pub loss: T,
    /// Gradient of the (tied) table: `[V, h]` for the reference; `[Vp/tp, h]` per rank sharded.
    pub grad_embedding: Vec<Array2<T>>,
    /// Logits: `[T, V]` for the reference; `[T, Vp/tp]` per rank sharded.
    pub logits: Vec<Array2<T>>,
}

/// The unsharded reference: lookup, tied LM head, log-softmax cross-entropy and its backward.
pub fn reference<T: Element>(cfg: &VocabConfig, m: &VocabModel<T>) -> VocabResult<T> {
    let t = cfg.tokens;
    let mut x = Array2::<T>::zeros((t, cfg.hidden));
    for (i, &id) in m.ids.iter().enumerate() {
        x.row_mut(i).assign(&m.embedding.row(id));
    }
    let logits = ops::matmul(x.view(), m.embedding.t());
    let mut losses = Array1::<T>::zeros(t);
    let mut dlogits = Array2::<T>::zeros(logits.dim());
    let inv_t = T::from_f64(1.0 / t as f64);
    for i in 0..t {
        let row = logits.row(i);
        let max = row.iter().copied().fold(T::neg_infinity(), T::max);
        let sum = row.iter().fold(T::zero(), |acc, &z| acc + (z - max).exp());
        let target = m.targets[i];
        losses[i] = sum.ln() - (row[target] - max);
        for (j, d) in dlogits.row_mut(i).iter_mut().enumerate() {
            let p = (row[j] - max).exp() / sum;
            let onehot = if j == target { T::one() } else { T::zero() };
            *d = (p - onehot) * inv_t;
        }
    }
    let loss = losses.sum() * inv_t;
    // Tied weight: gradient from the head (dlogitsᵀ·X) plus the lookup's scatter of dX.
    let mut grad = ops::matmul(dlogits.t(), x.view());
    let dx = ops::matmul(dlogits.view(), m.embedding.view());
    for (i, &id) in m.ids.iter().enumerate() {
        let mut g = grad.row_mut(id);
        g += &dx.row(i);
    }
    VocabResult {
        embedded: x,
        losses,
        loss,
        grad_embedding: vec![grad],
        logits: vec![logits],
    }
}

/// Rank `r`'s rows of the padded table (padding rows zero).
pub fn shard_table<T: Element>(cfg: &VocabConfig, table: ArrayView2<'_, T>, r: usize) -> Array2<T> {
    let mut shard = Array2::<T>::zeros((cfg.rows_per_rank(), cfg.hidden));
    let real = cfg.real_range(r);
    let n = real.len();
    if n > 0 {
        shard
            .slice_mut(s![..n, ..])
            .assign(&table.slice(s![real, ..]));
    }
    shard
}

fn all_reduce_rows<T: Element>(
    parts: Vec<Array2<T>>,
    algorithm: Algorithm,
    op: ReduceOp,
) -> Result<Vec<Array2<T>>, CollectiveError> {
    let dim = parts[0].dim();
    let mut bufs: Vec<Vec<T>> = parts
        .into_iter()
        .map(|p| p.iter().copied().collect())
        .collect();
    collectives::all_reduce_in_place_op(&mut bufs, algorithm, op)?;
    bufs.into_iter()
        .map(|v| {
            let found = v.len();
            Array2::from_shape_vec(dim, v).map_err(|_| CollectiveError::LengthMismatch {
                rank: 0,
                expected: dim.0 * dim.1,
                found,
            })
        })
        .collect()
}

/// The vocabulary-parallel embedding: each rank looks up the ids it holds (zeros for the
/// others) and an all-reduce adds the partial results. Returns each rank's copy of `[T, h]`.
pub fn lookup_sharded<T: Element>(
    cfg: &VocabConfig,
    tables: &[Array2<T>],
    ids: &[usize],
) -> Result<Vec<Array2<T>>, CollectiveError> {
    let h = cfg.hidden;
    let partial: Vec<Array2<T>> = (0..cfg.tp)
        .map(|r| {
            let range = cfg.rank_range(r);
            let mut x = Array2::<T>::zeros((ids.len(), h));
            for (i, &id) in ids.iter().enumerate() {
                if range.contains(&id) {
                    x.row_mut(i).assign(&tables[r].row(id - range.start));
                }
            }
            x
        })
        .collect();
    all_reduce_rows(partial, cfg.algorithm, ReduceOp::Sum)
}

/// Adds the embedded tokens' gradient `dx` (`[T, h]`) into the rows of rank `r`'s table
/// gradient for the ids it holds.
pub fn scatter_grad<T: Element>(
    cfg: &VocabConfig,
    r: usize,
    ids: &[usize],
    dx: &Array2<T>,
    grad: &mut Array2<T>,
) {
    let range = cfg.rank_range(r);
    for (i, &id) in ids.iter().enumerate() {
        if range.contains(&id) {
            let mut row = grad.row_mut(id - range.start);
            row += &dx.row(i);
        }
    }
}

/// The tied LM head and the cross-entropy over vocabulary-sharded logits, forward and backward.
#[derive(Debug, Clone)]
pub struct HeadResult<T> {
    /// Each rank's logits `[T, Vp/tp]`.
    pub logits: Vec<Array2<T>>,
    pub losses: Array1<T>,
    /// Mean loss over tokens.
    pub loss: T,
    /// Each rank's copy of the gradient of the head's input (after the all-reduce).
    pub dx: Vec<Array2<T>>,
    /// Each rank's head contribution to its table rows' gradient, `dlogits_rᵀ·X`.
    pub grad_tables: Vec<Array2<T>>,
}

/// Logits `x_r·E_rᵀ` on each rank, the loss from the max / sum-exp / target all-reduces, and
/// the backward of the mean loss (see the module docs). `x` is each rank's copy of `[T, h]`.
pub fn head_sharded<T: Element>(
    cfg: &VocabConfig,
    tables: &[Array2<T>],
    x: &[Array2<T>],
    targets: &[usize],
) -> Result<HeadResult<T>, CollectiveError> {
    let (tp, t) = (cfg.tp, x[0].nrows());
    let logits: Vec<Array2<T>> = (0..tp)
        .map(|r| ops::matmul(x[r].view(), tables[r].t()))
        .collect();
    // Masked local statistics: real columns only.
    let real_cols = |r: usize| cfg.real_range(r).len();
    let local_max: Vec<Array2<T>> = (0..tp)
        .map(|r| {
            let n = real_cols(r);
            Array2::from_shape_fn((1, t), |(_, i)| {
                logits[r]
                    .slice(s![i, ..n])
                    .iter()
                    .copied()
                    .fold(T::neg_infinity(), T::max)
            })
        })
        .collect();
    let max = all_reduce_rows(local_max, cfg.algorithm, ReduceOp::Max)?;
    let local_sum: Vec<Array2<T>> = (0..tp)
        .map(|r| {
            let n = real_cols(r);
            Array2::from_shape_fn((1, t), |(_, i)| {
                let mx = max[r][(0, i)];
                logits[r]
                    .slice(s![i, ..n])
                    .iter()
                    .fold(T::zero(), |acc, &z| acc + (z - mx).exp())
            })
        })
        .collect();
    let sum = all_reduce_rows(local_sum, cfg.algorithm, ReduceOp::Sum)?;
    let local_target: Vec<Array2<T>> = (0..tp)
        .map(|r| {
            let range = cfg.rank_range(r);
            Array2::from_shape_fn((1, t), |(_, i)| {
                let target = targets[i];
                if range.contains(&target) {
                    logits[r][(i, target - range.start)]
                } else {
                    T::zero()
                }
            })
        })
        .collect();
    let target = all_reduce_rows(local_target, cfg.algorithm, ReduceOp::Sum)?;
    let inv_t = T::from_f64(1.0 / t as f64);
    // Every rank holds the same statistics; rank 0's give the loss.
    let losses = Array1::from_shape_fn(t, |i| {
        sum[0][(0, i)].ln() - (target[0][(0, i)] - max[0][(0, i)])
    });
    let loss = losses.sum() * inv_t;
    let dlogits: Vec<Array2<T>> = (0..tp)
        .map(|r| {
            let range = cfg.rank_range(r);
            let n = real_cols(r);
            Array2::from_shape_fn(logits[r].dim(), |(i, j)| {
                if j >= n {
                    return T::zero();
                }
                let p = (logits[r][(i, j)] - max[r][(0, i)]).exp() / sum[r][(0, i)];
                let onehot = if range.start + j == targets[i] {
                    T::one()
                } else {
                    T::zero()
                };
                (p - onehot) * inv_t
            })
        })
        .collect();
    let dx_partial: Vec<Array2<T>> = (0..tp)
        .map(|r| ops::matmul(dlogits[r].view(), tables[r].view()))
        .collect();
    let dx = all_reduce_rows(dx_partial, cfg.algorithm, ReduceOp::Sum)?;
    let grad_tables = (0..tp)
        .map(|r| ops::matmul(dlogits[r].t(), x[r].view()))
        .collect();
    Ok(HeadResult {
        logits,
        losses,
        loss,
        dx,
        grad_tables,
    })
}

/// The vocabulary-parallel pass on `cfg.tp` virtual GPUs (see the module docs).
pub fn sharded<T: Element>(
    cfg: &VocabConfig,
    m: &VocabModel<T>,
) -> Result<VocabResult<T>, VocabError> {
    cfg.validate()?;
    let tables: Vec<Array2<T>> = (0..cfg.tp)
        .map(|r| shard_table(cfg, m.embedding.view(), r))
        .collect();
    let x = lookup_sharded(cfg, &tables, &m.ids)?;
    let head = head_sharded(cfg, &tables, &x, &m.targets)?;
    let mut grad_embedding = head.grad_tables;
    for (r, g) in grad_embedding.iter_mut().enumerate() {
        scatter_grad(cfg, r, &m.ids, &head.dx[r], g);
    }
    let (t, h) = (cfg.tokens, cfg.hidden);
    Ok(VocabResult {
        embedded: x
            .into_iter()
            .next()
            .unwrap_or_else(|| Array2::zeros((t, h))),
        losses: head.losses,
        loss: head.loss,
        grad_embedding,
        logits: head.logits,
    })
}

/// What each rank holds of a tensor in the vocabulary-parallel pass.
#[derive(Clone, Copy)]
enum Held {
    Whole,
    /// A term of a sum (or, for the row maximum, of a maximum) over the ranks.
    Partial,
    /// The rank's padded vocabulary rows of the table (dim 0).
    Rows,
    /// The rank's vocabulary columns of the logits (dim 1).
    Cols,
}

/// One event description for [`events`].
struct Spec {
    op: Op,
    kind: EventKind,
    inputs: Vec<[usize; 2]>,
    output: [usize; 2],
    flops: u64,
    bytes: u64,
    sent: u64,
    reads: Vec<(&'static str, [usize; 2], Held)>,
    writes: Vec<(&'static str, [usize; 2], Held)>,
}

/// The events of the vocabulary-parallel pass in issue order, in the trace's own [`Event`]s
/// (layer 0; one event per rank for compute, one per group for collectives; payloads in bytes
/// of `dtype`), with each tensor's placement per rank.
pub fn events(cfg: &VocabConfig, dtype: DType) -> Vec<Event> {
    let (tp, t, h) = (cfg.tp.max(1), cfg.tokens, cfg.hidden);
    let (vr, vp) = (cfg.rows_per_rank(), cfg.padded_vocab());
    let e = dtype.size_bytes() as u64;
    let (t64, h64, vr64) = (t as u64, h as u64, vr as u64);
    let compute = |op, parallel, inputs, output, flops, bytes, reads, writes| Spec {
        op,
        kind: EventKind::Compute {
            op: Op::compute(op).unwrap_or(ComputeOp::Linear { bias: false }),
            parallel,
        },
        inputs,
        output,
        flops,
        bytes,
        sent: 0,
        reads,
        writes,
    };
    // One model of a collective's costs: the trace's, from the collectives' plans.
    let all_reduce = |op, name: &'static str, shape: [usize; 2]| {
        let elems = (shape[0] * shape[1]) as u64;
        let (steps, sent, flops) =
            crate::trace::collective_costs(CollectiveKind::AllReduce, cfg.algorithm, tp, elems, e);
        Spec {
            op,
            kind: EventKind::Collective {
                kind: CollectiveKind::AllReduce,
                algorithm: cfg.algorithm,
                steps,
            },
            inputs: vec![shape],
            output: shape,
            flops,
            bytes: elems * e,
            sent,
            reads: vec![(name, shape, Held::Partial)],
            writes: vec![(name, shape, Held::Whole)],
        }
    };
    use Held::{Cols, Partial, Rows, Whole};
    let table = ("embedding", [vp, h], Rows);
    let head = work::linear(t64, h64, vr64, false);
    let head_bwd = work::linear_backward(t64, h64, vr64, false);
    let specs = [
        compute(
            Op::EmbedLookup,
            Parallel::Row,
            vec![[t, 1], [vr, h]],
            [t, h],
            0,
            2 * t64 * h64 * e,
            vec![("ids", [t, 1], Whole), table],
            vec![("E", [t, h], Partial)],
        ),
        all_reduce(Op::EmbedG, "E", [t, h]),
        compute(
            Op::LmHead,
            Parallel::Column,
            vec![[t, h], [vr, h]],
            [t, vr],
            head.flops,
            head.elems * e,
            vec![("E", [t, h], Whole), table],
            vec![("logits", [t, vp], Cols)],
        ),
        compute(
            Op::CeLocal,
            Parallel::Local,
            vec![[t, vr]],
            [3, t],
            3 * t64 * vr64,
            t64 * vr64 * e,
            vec![("logits", [t, vp], Cols)],
            vec![
                ("row max", [1, t], Partial),
                ("sum of exp", [1, t], Partial),
                ("target logit", [1, t], Partial),
            ],
        ),
        all_reduce(Op::CeMax, "row max", [1, t]),
        all_reduce(Op::CeSumExp, "sum of exp", [1, t]),
        all_reduce(Op::CeTarget, "target logit", [1, t]),
        compute(
            Op::CeBwd,
            Parallel::Local,
            vec![[t, vr]],
            [t, vr],
            4 * t64 * vr64,
            2 * t64 * vr64 * e,
            vec![("logits", [t, vp], Cols), ("row max", [1, t], Whole)],
            vec![("dlogits", [t, vp], Cols)],
        ),
        compute(
            Op::LmHeadBwd,
            Parallel::Column,
            vec![[t, vr], [t, h], [vr, h]],
            [t, h],
            head_bwd.flops,
            head_bwd.elems * e,
            vec![("dlogits", [t, vp], Cols), ("E", [t, h], Whole), table],
            vec![("dE", [t, h], Partial), ("grad.embedding", [vp, h], Rows)],
        ),
        all_reduce(Op::LmHeadFBwd, "dE", [t, h]),
        compute(
            Op::EmbedBwd,
            Parallel::Row,
            vec![[t, h]],
            [vr, h],
            t64 * h64,
            2 * t64 * h64 * e,
            vec![("dE", [t, h], Whole)],
            vec![("grad.embedding", [vp, h], Rows)],
        ),
    ];
    let place = |held: Held, r: usize| match held {
        Whole => Placement::Replicate,
        Partial => Placement::Partial,
        Rows => Placement::shard(0, r * vr..(r + 1) * vr),
        Cols => Placement::shard(1, r * vr..(r + 1) * vr),
    };
    let resolve =
        |ts: &[(&'static str, [usize; 2], Held)], ranks: &[usize]| -> Vec<TensorPlacement> {
            ts.iter()
                .map(|&(name, shape, held)| TensorPlacement {
                    tensor: name.into(),
                    shape,
                    per_rank: ranks.iter().map(|&r| place(held, r)).collect(),
                })
                .collect()
        };
    let mut out = Vec::new();
    for sp in specs {
        let groups: Vec<Vec<usize>> = if matches!(sp.kind, EventKind::Collective { .. }) {
            vec![(0..tp).collect()]
        } else {
            (0..tp).map(|r| vec![r]).collect()
        };
        for ranks in groups {
            out.push(Event {
                index: out.len(),
                layer: 0,
                pass: sp.op.pass(),
                op: sp.op,
                kind: sp.kind.clone(),
                inputs: sp.inputs.clone(),
                output: sp.output,
                flops: sp.flops,
                bytes: sp.bytes,
                bytes_sent_per_rank: sp.sent,
                conjugate: None,
                reads: resolve(&sp.reads, &ranks),
                writes: resolve(&sp.writes, &ranks),
                ranks,
                timing: Timing::default(),
                measured: None,
            });
        }
    }
    out
}

/// Bytes each rank sends for the cross-entropy's three reductions, and what gathering the full
/// logits instead would send (all-gather of `[T, Vp]`).
pub fn ce_bytes_sent_per_rank(cfg: &VocabConfig, dtype: DType) -> (u64, u64) {
    let e = dtype.size_bytes() as u64;
    let tp = cfg.tp.max(1);
    let three = 3 * collectives::all_reduce_max_bytes_sent_per_rank(
        cfg.algorithm,
        tp,
        cfg.tokens as u64 * e,
    );
    let gather = collectives::collective_max_bytes_sent_per_rank(
        CollectiveKind::AllGather,
        Algorithm::Ring,
        tp,
        (cfg.tokens * cfg.padded_vocab()) as u64 * e,
    )
    .unwrap_or(0);
    (three, gather)
}

/// A vocabulary-parallel run checked against the reference.
#[derive(Debug, Clone, Serialize)]
pub struct VocabReport {
    pub config: VocabConfig,
    pub dtype: DType,
    pub padded_vocab: usize,
    pub rows_per_rank: usize,
    pub loss: f64,
    pub reference_loss: f64,
    pub checks: Vec<Check>,
    pub tolerance: Tolerance,
    pub events: Vec<Event>,
    /// Cross-entropy bytes each rank sends, and what a full-logit gather would send.
    pub ce_bytes_sent_per_rank: u64,
    pub gather_bytes_sent_per_rank: u64,
}

impl VocabReport {
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }
}

fn to_f64<T: Element>(a: &Array2<T>) -> Array2<f64> {
    a.mapv(Element::to_f64)
}

/// Runs the vocabulary-parallel pass in `T` and compares it with the reference: the loss, the
/// per-token losses, the embedded tokens, each rank's logit columns and each rank's rows of the
/// embedding gradient (padding rows must be zero).
pub fn run<T: Element>(cfg: &VocabConfig) -> Result<VocabReport, VocabError> {
    cfg.validate()?;
    let m = VocabModel::<T>::random(cfg);
    let want = reference(cfg, &m);
    let got = sharded(cfg, &m)?;
    // Longest reduction: the head's dot products (h) or the softmax sum (V); forward then back.
    let eps = T::DTYPE.epsilon();
    let k = cfg.hidden.max(cfg.vocab);
    let tol = Tolerance {
        bound: None,
        relative: 16.0 * eps * (k as f64).sqrt() * 2.0,
        reason: format!(
            "{} ε={eps:.2e} × √K (K={k}: the softmax sum over the vocabulary, or the head's dot \
             products) × 2 (forward, backward) × 16 (as the block's tolerance): the split sums \
             the softmax denominator rank by rank, so results differ by rounding only",
            T::DTYPE
        ),
    };
    let mut checks = Vec::new();
    let scalar = |v: T| Array2::from_elem((1, 1), v.to_f64());
    checks.push(compare(
        "loss",
        None,
        scalar(got.loss).view(),
        scalar(want.loss).view(),
        &tol,
    ));
    let row = |a: &Array1<T>| a.mapv(Element::to_f64).insert_axis(Axis(0));
    checks.push(compare(
        "losses",
        None,
        row(&got.losses).view(),
        row(&want.losses).view(),
        &tol,
    ));
    checks.push(compare(
        "embedded",
        None,
        to_f64(&got.embedded).view(),
        to_f64(&want.embedded).view(),
        &tol,
    ));
    for r in 0..cfg.tp {
        let real = cfg.real_range(r);
        let n = real.len();
        checks.push(compare(
            "logits",
            Some(r),
            to_f64(&got.logits[r]).slice(s![.., ..n]),
            to_f64(&want.logits[0]).slice(s![.., real.clone()]),
            &tol,
        ));
        let g = to_f64(&got.grad_embedding[r]);
        checks.push(compare(
            "grad.embedding",
            Some(r),
            g.slice(s![..n, ..]),
            to_f64(&want.grad_embedding[0]).slice(s![real, ..]),
            &tol,
        ));
        let pad = g.slice(s![n.., ..]);
        checks.push(compare(
            "grad.embedding.padding",
            Some(r),
            pad,
            Array2::<f64>::zeros(pad.dim()).view(),
            &tol,
        ));
    }
    let dtype = T::DTYPE;
    let (ce, gather) = ce_bytes_sent_per_rank(cfg, dtype);
    Ok(VocabReport {
        config: cfg.clone(),
        dtype,
        padded_vocab: cfg.padded_vocab(),
        rows_per_rank: cfg.rows_per_rank(),
        loss: got.loss.to_f64(),
        reference_loss: want.loss.to_f64(),
        checks,
        tolerance: tol,
        events: events(cfg, dtype),
        ce_bytes_sent_per_rank: ce,
        gather_bytes_sent_per_rank: gather,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(tp: usize) -> VocabConfig {
        VocabConfig {
            vocab: 1000,
            hidden: 32,
            tokens: 24,
            tp,
            granularity: 16,
            seed: 5,
            algorithm: Algorithm::Ring,
        }
    }

    #[test]
    fn padding_follows_megatron_and_ranges_tile_the_padded_vocab() {
        let cfg = VocabConfig {
            tp: 8,
            ..VocabConfig::default()
        };
        // GPT-2: 50257 → multiple of 128·8 = 1024 → 51200, 6400 rows per rank.
        assert_eq!(cfg.padded_vocab(), 51200);
        assert_eq!(cfg.rows_per_rank(), 6400);
        assert_eq!(cfg.real_range(7), 44800..50257);
        let one = VocabConfig {
            tp: 1,
            ..VocabConfig::default()
        };
        assert_eq!(one.padded_vocab(), 50304); // Megatron's well-known padded GPT-2 vocab
    }

    #[test]
    fn sharded_equals_reference_at_every_tp_and_pads_are_untouched() {
        for tp in [1, 2, 3, 4, 8] {
            let r = run::<f64>(&small(tp)).unwrap();
            assert!(
                r.passed(),
                "tp={tp}: {:?}",
                r.checks.iter().find(|c| !c.passed)
            );
            assert!((r.loss - r.reference_loss).abs() < 1e-12);
            // The loss of random logits is well above log V·0 and finite.
            assert!(r.loss.is_finite() && r.loss > 0.0);
        }
        let r = run::<f32>(&small(4)).unwrap();
        assert!(r.passed());
    }

    #[test]
    fn a_wrong_mask_is_caught() {
        // Dropping the padding mask (letting padded logits 0 into the softmax) changes the loss.
        let cfg = small(4);
        let m = VocabModel::<f64>::random(&cfg);
        let want = reference(&cfg, &m);
        let got = sharded(&cfg, &m).unwrap();
        assert!((got.loss - want.loss).abs() < 1e-12);
        let pads: usize = (0..cfg.tp)
            .map(|r| cfg.rank_range(r).len() - cfg.real_range(r).len())
            .sum();
        assert!(pads > 0);
        let with_pads = want.logits[0]
            .rows()
            .into_iter()
            .zip(&m.targets)
            .map(|(row, &tg)| {
                let max = row.iter().copied().fold(0.0f64, f64::max);
                let sum: f64 =
                    row.iter().map(|z| (z - max).exp()).sum::<f64>() + pads as f64 * (-max).exp();
                sum.ln() - (row[tg] - max)
            })
            .sum::<f64>()
            / cfg.tokens as f64;
        assert!((with_pads - want.loss).abs() > 1e-6);
    }

    #[test]
    fn cross_entropy_moves_3t_numbers_not_the_logits() {
        let cfg = VocabConfig::default();
        let (ce, gather) = ce_bytes_sent_per_rank(&cfg, DType::F32);
        // Ring all-reduce of T floats sends 2(n−1)/n·T·4 bytes; three of them.
        assert_eq!(ce, 3 * 2 * 3 * 128 * 4 / 4);
        assert!(gather > 1000 * ce, "{gather} vs {ce}");
        let ev = events(&cfg, DType::F32);
        assert!(ev
            .iter()
            .all(|e| e.collective_kind() != Some(CollectiveKind::AllGather)));
        let reductions = ev.iter().filter(|e| e.is_collective()).count();
        assert_eq!(reductions, 5); // embed.g, ce.max, ce.sumexp, ce.target, lm_head.f.bwd
    }

    #[test]
    fn too_large_a_table_is_refused_with_the_numbers() {
        let cfg = VocabConfig {
            vocab: 256_000,
            hidden: 8192,
            ..VocabConfig::default()
        };
        let e = cfg.validate().unwrap_err().to_string();
        assert!(e.contains("reduce vocab or hidden"), "{e}");
    }

    #[test]
    fn extreme_sizes_are_errors_before_any_allocation() {
        // The examples: the granularity overflowed to a division by zero; a vocab or a
        // token count of u64::MAX panicked in allocation; 10^8 tokens tried to allocate 307 GB.
        let over = VocabConfig {
            granularity: 4_611_686_018_427_387_904,
            tp: 4,
            ..VocabConfig::default()
        };
        assert!(
            matches!(
                over.validate(),
                Err(VocabError::OverLimit {
                    field: "granularity",
                    ..
                })
            ),
            "{:?}",
            over.validate()
        );
        // Below the field limits the padding cannot overflow; the check stays for safety.
        assert_eq!(
            VocabConfig {
                granularity: usize::MAX,
                ..VocabConfig::default()
            }
            .checked_padded_vocab(),
            None
        );
        let _ = (
            over.padded_vocab(),
            over.rows_per_rank(),
            over.bytes_estimate(),
        );
        let vocab = VocabConfig {
            vocab: usize::MAX,
            ..VocabConfig::default()
        };
        assert!(matches!(
            vocab.validate(),
            Err(VocabError::OverLimit { field: "vocab", .. })
        ));
        for tokens in [16_000_000, 100_000_000] {
            let cfg = VocabConfig {
                tokens,
                ..VocabConfig::default()
            };
            let err = cfg.validate().unwrap_err();
            assert!(matches!(err, VocabError::TooMuchMemory { .. }), "{err}");
            assert!(err.to_string().contains("guard"), "{err}");
        }
        let all = VocabConfig {
            tokens: usize::MAX,
            ..VocabConfig::default()
        };
        assert!(matches!(
            all.validate(),
            Err(VocabError::OverLimit {
                field: "tokens",
                ..
            })
        ));
        // The default scenario stays well inside the guard.
        assert!(VocabConfig::default().validate().is_ok());
    }
}
