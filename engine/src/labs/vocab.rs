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
//!
//! # The program
//! The pass is a program like the block's: [`events`] writes its ops ([`crate::block::Op`]),
//! in issue order, with the tensors each reads and writes ([`VocabTensor`]) and their placement
//! on every rank, shapes, FLOPs and bytes. [`sharded`] runs it by [`walk`]ing those events, one
//! match arm per op, calling the per-op kernels ([`lookup_rank`], [`logits_rank`],
//! [`local_max`], …) and the all-reduces; the kernels crate walks the same events on the GPU,
//! the vocabulary view lists them, and [`check_program`] checks their placements with the
//! block program's checker.

use crate::block::ops;
use crate::block::verify::{compare, Check, Tolerance};
use crate::block::{work, Op, Placement, TensorName, TensorPlacement, VocabTensor};
use crate::collectives::{self, Algorithm, CollectiveError, ReduceOp};
use crate::config::human_bytes;
use crate::dtype::{DType, Element};
use crate::{
    block::op::ComputeOp,
    block::op::Parallel,
    collectives::CollectiveKind,
    trace::{Event, EventKind, Timing},
};
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

/// Rank `r`'s masked lookup (`embed.lookup`): the rows of `table` (its padded vocabulary rows)
/// for the ids it holds, zeros for the others; `[T, h]`, one term of the sum `embed.g` takes.
pub fn lookup_rank<T: Element>(
    cfg: &VocabConfig,
    table: &Array2<T>,
    r: usize,
    ids: &[usize],
) -> Array2<T> {
    let range = cfg.rank_range(r);
    let mut x = Array2::<T>::zeros((ids.len(), cfg.hidden));
    for (i, &id) in ids.iter().enumerate() {
        if range.contains(&id) {
            x.row_mut(i).assign(&table.row(id - range.start));
        }
    }
    x
}

/// The vocabulary-parallel embedding: each rank looks up the ids it holds (zeros for the
/// others) and an all-reduce adds the partial results. Returns each rank's copy of `[T, h]`.
pub fn lookup_sharded<T: Element>(
    cfg: &VocabConfig,
    tables: &[Array2<T>],
    ids: &[usize],
) -> Result<Vec<Array2<T>>, CollectiveError> {
    let partial: Vec<Array2<T>> = (0..cfg.tp)
        .map(|r| lookup_rank(cfg, &tables[r], r, ids))
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

/// Rank `r`'s logits `x·E_rᵀ` on its vocabulary columns (`lm_head`), `[T, Vp/tp]`.
pub fn logits_rank<T: Element>(x: &Array2<T>, table: &Array2<T>) -> Array2<T> {
    ops::matmul(x.view(), table.t())
}

/// Each token's maximum over rank `r`'s real (not padding) logit columns, `[1, T]`.
pub fn local_max<T: Element>(cfg: &VocabConfig, r: usize, logits: &Array2<T>) -> Array2<T> {
    let n = cfg.real_range(r).len();
    Array2::from_shape_fn((1, logits.nrows()), |(_, i)| {
        logits
            .slice(s![i, ..n])
            .iter()
            .copied()
            .fold(T::neg_infinity(), T::max)
    })
}

/// Each token's `Σ exp(z − max)` over rank `r`'s real logit columns, `max` the row maxima over
/// all ranks (after `ce.max`), `[1, T]`.
pub fn local_sum_exp<T: Element>(
    cfg: &VocabConfig,
    r: usize,
    logits: &Array2<T>,
    max: &Array2<T>,
) -> Array2<T> {
    let n = cfg.real_range(r).len();
    Array2::from_shape_fn((1, logits.nrows()), |(_, i)| {
        let mx = max[(0, i)];
        logits
            .slice(s![i, ..n])
            .iter()
            .fold(T::zero(), |acc, &z| acc + (z - mx).exp())
    })
}

/// Each token's target logit where rank `r` holds the target's column, else 0, `[1, T]`.
pub fn local_target<T: Element>(
    cfg: &VocabConfig,
    r: usize,
    logits: &Array2<T>,
    targets: &[usize],
) -> Array2<T> {
    let range = cfg.rank_range(r);
    Array2::from_shape_fn((1, logits.nrows()), |(_, i)| {
        let target = targets[i];
        if range.contains(&target) {
            logits[(i, target - range.start)]
        } else {
            T::zero()
        }
    })
}

/// The per-token losses `log Σexp − (z_target − max)` and their mean, from the reduced
/// statistics (every rank holds the same; any rank's give the loss).
pub fn ce_losses<T: Element>(
    max: &Array2<T>,
    sum: &Array2<T>,
    target: &Array2<T>,
) -> (Array1<T>, T) {
    let t = max.ncols();
    let inv_t = T::from_f64(1.0 / t as f64);
    let losses = Array1::from_shape_fn(t, |i| sum[(0, i)].ln() - (target[(0, i)] - max[(0, i)]));
    let loss = losses.sum() * inv_t;
    (losses, loss)
}

/// Rank `r`'s gradient of the mean loss on its logit columns (`ce.bwd`):
/// `(softmax − onehot)/T`, zero on the padding columns.
pub fn dlogits_rank<T: Element>(
    cfg: &VocabConfig,
    r: usize,
    logits: &Array2<T>,
    (max, sum): (&Array2<T>, &Array2<T>),
    targets: &[usize],
) -> Array2<T> {
    let range = cfg.rank_range(r);
    let n = cfg.real_range(r).len();
    let inv_t = T::from_f64(1.0 / logits.nrows() as f64);
    Array2::from_shape_fn(logits.dim(), |(i, j)| {
        if j >= n {
            return T::zero();
        }
        let p = (logits[(i, j)] - max[(0, i)]).exp() / sum[(0, i)];
        let onehot = if range.start + j == targets[i] {
            T::one()
        } else {
            T::zero()
        };
        (p - onehot) * inv_t
    })
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
/// The same kernels as the vocabulary program's walk ([`sharded`]), for the training labs'
/// pipelines that run the head inside a step of their own.
pub fn head_sharded<T: Element>(
    cfg: &VocabConfig,
    tables: &[Array2<T>],
    x: &[Array2<T>],
    targets: &[usize],
) -> Result<HeadResult<T>, CollectiveError> {
    let tp = cfg.tp;
    let logits: Vec<Array2<T>> = (0..tp).map(|r| logits_rank(&x[r], &tables[r])).collect();
    let local: Vec<Array2<T>> = (0..tp).map(|r| local_max(cfg, r, &logits[r])).collect();
    let max = all_reduce_rows(local, cfg.algorithm, ReduceOp::Max)?;
    let local: Vec<Array2<T>> = (0..tp)
        .map(|r| local_sum_exp(cfg, r, &logits[r], &max[r]))
        .collect();
    let sum = all_reduce_rows(local, cfg.algorithm, ReduceOp::Sum)?;
    let local: Vec<Array2<T>> = (0..tp)
        .map(|r| local_target(cfg, r, &logits[r], targets))
        .collect();
    let target = all_reduce_rows(local, cfg.algorithm, ReduceOp::Sum)?;
    let (losses, loss) = ce_losses(&max[0], &sum[0], &target[0]);
    let dlogits: Vec<Array2<T>> = (0..tp)
        .map(|r| dlogits_rank(cfg, r, &logits[r], (&max[r], &sum[r]), targets))
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

/// The vocabulary-parallel pass on `cfg.tp` virtual GPUs (see the module docs): the walk of
/// its program, [`events`].
pub fn sharded<T: Element>(
    cfg: &VocabConfig,
    m: &VocabModel<T>,
) -> Result<VocabResult<T>, VocabError> {
    cfg.validate()?;
    let program = events(cfg, T::DTYPE);
    walk(cfg, m, &program).map(|(result, _)| result)
}

/// What the walk holds between events: one slot per rank for each tensor of the pass, `None`
/// until an event writes it (see [`VocabTensor`]).
struct Live<T> {
    e: Vec<Option<Array2<T>>>,
    logits: Vec<Option<Array2<T>>>,
    max: Vec<Option<Array2<T>>>,
    sum: Vec<Option<Array2<T>>>,
    target: Vec<Option<Array2<T>>>,
    dlogits: Vec<Option<Array2<T>>>,
    de: Vec<Option<Array2<T>>>,
    grad: Vec<Option<Array2<T>>>,
}

/// Rank `r`'s `tensor` as the walk holds it, or the program-order error naming `op`.
fn held<T>(
    slots: &[Option<Array2<T>>],
    r: usize,
    op: Op,
    tensor: VocabTensor,
) -> Result<&Array2<T>, CollectiveError> {
    slots
        .get(r)
        .and_then(Option::as_ref)
        .ok_or(CollectiveError::ProgramOrder {
            op,
            tensor: TensorName::Vocab(tensor),
        })
}

/// The all-reduce of a collective event over its `ranks`: takes each rank's buffer out of
/// `slots` and puts the reduced copies back.
fn reduce_slots<T: Element>(
    slots: &mut [Option<Array2<T>>],
    ranks: &[usize],
    algorithm: Algorithm,
    (op, tensor, reduce): (Op, VocabTensor, ReduceOp),
) -> Result<(), CollectiveError> {
    let mut parts = Vec::with_capacity(ranks.len());
    for &r in ranks {
        parts.push(slots.get_mut(r).and_then(Option::take).ok_or(
            CollectiveError::ProgramOrder {
                op,
                tensor: TensorName::Vocab(tensor),
            },
        )?);
    }
    for (&r, v) in ranks.iter().zip(all_reduce_rows(parts, algorithm, reduce)?) {
        slots[r] = Some(v);
    }
    Ok(())
}

/// An event the walk ran: its op and its ranks.
pub type Ran = (Op, Vec<usize>);

/// The executor of the vocabulary program: walks `program` event by event, one arm per
/// [`Op`], each compute event on its rank and each collective over its group, and returns the
/// pass's results with the (op, ranks) of every event it ran, in order.
///
/// `ce.local` computes each rank's row maximum and target logit; the terms of the sum of
/// exponentials are taken relative to the maximum over all ranks, so they wait for `ce.max`
/// and are computed at `ce.sumexp`, just before its all-reduce (the GPU computes them at
/// `ce.local` against its own maximum and rescales them there: the same sum in another order).
pub fn walk<T: Element>(
    cfg: &VocabConfig,
    m: &VocabModel<T>,
    program: &[Event],
) -> Result<(VocabResult<T>, Vec<Ran>), VocabError> {
    cfg.validate()?;
    let tp = cfg.tp;
    let tables: Vec<Array2<T>> = (0..tp)
        .map(|r| shard_table(cfg, m.embedding.view(), r))
        .collect();
    let none = || (0..tp).map(|_| None).collect::<Vec<Option<Array2<T>>>>();
    let mut live = Live {
        e: none(),
        logits: none(),
        max: none(),
        sum: none(),
        target: none(),
        dlogits: none(),
        de: none(),
        grad: none(),
    };
    let mut ran = Vec::with_capacity(program.len());
    let algorithm = cfg.algorithm;
    let table = |r: usize| {
        tables
            .get(r)
            .ok_or(CollectiveError::RootOutOfRange { root: r, n: tp })
    };
    use VocabTensor as V;
    for e in program {
        let op = e.op;
        match op {
            Op::EmbedLookup => {
                for &r in &e.ranks {
                    live.e[r] = Some(lookup_rank(cfg, table(r)?, r, &m.ids));
                }
            }
            Op::EmbedG => {
                reduce_slots(&mut live.e, &e.ranks, algorithm, (op, V::E, ReduceOp::Sum))?
            }
            Op::LmHead => {
                for &r in &e.ranks {
                    let x = held(&live.e, r, op, V::E)?;
                    live.logits[r] = Some(logits_rank(x, table(r)?));
                }
            }
            Op::CeLocal => {
                for &r in &e.ranks {
                    let z = held(&live.logits, r, op, V::Logits)?;
                    live.max[r] = Some(local_max(cfg, r, z));
                    live.target[r] = Some(local_target(cfg, r, z, &m.targets));
                }
            }
            Op::CeMax => reduce_slots(
                &mut live.max,
                &e.ranks,
                algorithm,
                (op, V::RowMax, ReduceOp::Max),
            )?,
            Op::CeSumExp => {
                for &r in &e.ranks {
                    let z = held(&live.logits, r, op, V::Logits)?;
                    let mx = held(&live.max, r, op, V::RowMax)?;
                    live.sum[r] = Some(local_sum_exp(cfg, r, z, mx));
                }
                reduce_slots(
                    &mut live.sum,
                    &e.ranks,
                    algorithm,
                    (op, V::SumExp, ReduceOp::Sum),
                )?;
            }
            Op::CeTarget => reduce_slots(
                &mut live.target,
                &e.ranks,
                algorithm,
                (op, V::TargetLogit, ReduceOp::Sum),
            )?,
            Op::CeBwd => {
                for &r in &e.ranks {
                    let z = held(&live.logits, r, op, V::Logits)?;
                    let mx = held(&live.max, r, op, V::RowMax)?;
                    let sum = held(&live.sum, r, op, V::SumExp)?;
                    live.dlogits[r] = Some(dlogits_rank(cfg, r, z, (mx, sum), &m.targets));
                }
            }
            Op::LmHeadBwd => {
                for &r in &e.ranks {
                    let d = held(&live.dlogits, r, op, V::DLogits)?;
                    let x = held(&live.e, r, op, V::E)?;
                    live.de[r] = Some(ops::matmul(d.view(), table(r)?.view()));
                    live.grad[r] = Some(ops::matmul(d.t(), x.view()));
                }
            }
            Op::LmHeadFBwd => reduce_slots(
                &mut live.de,
                &e.ranks,
                algorithm,
                (op, V::DE, ReduceOp::Sum),
            )?,
            Op::EmbedBwd => {
                for &r in &e.ranks {
                    let dx = held(&live.de, r, op, V::DE)?;
                    let mut g = live.grad[r].take().ok_or(CollectiveError::ProgramOrder {
                        op,
                        tensor: TensorName::Vocab(V::EmbeddingGrad),
                    })?;
                    scatter_grad(cfg, r, &m.ids, dx, &mut g);
                    live.grad[r] = Some(g);
                }
            }
            // The block's ops, the serving step's and a learner's plan's: not this program's.
            Op::Ln1
            | Op::AttnF
            | Op::Qkv
            | Op::AttnCore
            | Op::AttnOut
            | Op::AttnG
            | Op::AttnBiasResidual
            | Op::Ln2
            | Op::MlpF
            | Op::Fc1
            | Op::Gelu
            | Op::Fc2
            | Op::MlpG
            | Op::MlpBiasResidual
            | Op::MlpBiasResidualBwd
            | Op::MlpGBwd
            | Op::Fc2Bwd
            | Op::GeluBwd
            | Op::MlpFBwdGather
            | Op::Fc1Bwd
            | Op::MlpFBwd
            | Op::Ln2Bwd
            | Op::AttnBiasResidualBwd
            | Op::AttnGBwd
            | Op::AttnOutBwd
            | Op::AttnCoreBwd
            | Op::AttnFBwdGather
            | Op::QkvBwd
            | Op::KvGrads
            | Op::AttnFBwd
            | Op::Ln1Bwd
            | Op::SpGrads
            | Op::PosEmbed
            | Op::FinalLn
            | Op::LogitsGather
            | crate::design_ops!()
            | Op::KvAppend => return Err(CollectiveError::ForeignOp { op }.into()),
        }
        ran.push((op, e.ranks.clone()));
    }
    // The loss from the reduced statistics (every rank holds the same; rank 0's).
    let (losses, loss) = ce_losses(
        held(&live.max, 0, Op::CeMax, V::RowMax)?,
        held(&live.sum, 0, Op::CeSumExp, V::SumExp)?,
        held(&live.target, 0, Op::CeTarget, V::TargetLogit)?,
    );
    let all = |slots: Vec<Option<Array2<T>>>, op, tensor| -> Result<Vec<Array2<T>>, VocabError> {
        slots
            .into_iter()
            .map(|v| {
                v.ok_or(VocabError::Collective(CollectiveError::ProgramOrder {
                    op,
                    tensor: TensorName::Vocab(tensor),
                }))
            })
            .collect()
    };
    let embedded = held(&live.e, 0, Op::LmHead, V::E)?.clone();
    Ok((
        VocabResult {
            embedded,
            losses,
            loss,
            grad_embedding: all(live.grad, Op::EmbedBwd, V::EmbeddingGrad)?,
            logits: all(live.logits, Op::CeLocal, V::Logits)?,
        },
        ran,
    ))
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
    reads: Vec<(TensorName, [usize; 2], Held)>,
    writes: Vec<(TensorName, [usize; 2], Held)>,
}

/// The program of the vocabulary-parallel pass: its events in issue order, in the trace's own
/// [`Event`]s (layer 0; one event per rank for compute, one per group for collectives; payloads
/// in bytes of `dtype`), each with the [`Op`], the tensors it reads and writes
/// ([`VocabTensor`]) and their placement per rank, shapes, FLOPs and bytes. [`walk`] executes
/// it on the CPU, the kernels crate on the GPU, the vocabulary view draws it, and
/// [`check_program`] checks its placements.
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
    let all_reduce = |op, name: TensorName, shape: [usize; 2]| {
        let elems = (shape[0] * shape[1]) as u64;
        let (steps, sent, flops) = crate::block::program::collective_costs(
            CollectiveKind::AllReduce,
            cfg.algorithm,
            tp,
            elems,
            e,
        );
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
    use VocabTensor as V;
    let n = TensorName::Vocab;
    let table = (n(V::Embedding), [vp, h], Rows);
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
            vec![(n(V::Ids), [t, 1], Whole), table],
            vec![(n(V::E), [t, h], Partial)],
        ),
        all_reduce(Op::EmbedG, n(V::E), [t, h]),
        compute(
            Op::LmHead,
            Parallel::Column,
            vec![[t, h], [vr, h]],
            [t, vr],
            head.flops,
            head.elems * e,
            vec![(n(V::E), [t, h], Whole), table],
            vec![(n(V::Logits), [t, vp], Cols)],
        ),
        compute(
            Op::CeLocal,
            Parallel::Local,
            vec![[t, vr], [t, 1]],
            [3, t],
            3 * t64 * vr64,
            t64 * vr64 * e,
            vec![
                (n(V::Logits), [t, vp], Cols),
                (n(V::Targets), [t, 1], Whole),
            ],
            vec![
                (n(V::RowMax), [1, t], Partial),
                (n(V::SumExp), [1, t], Partial),
                (n(V::TargetLogit), [1, t], Partial),
            ],
        ),
        all_reduce(Op::CeMax, n(V::RowMax), [1, t]),
        all_reduce(Op::CeSumExp, n(V::SumExp), [1, t]),
        all_reduce(Op::CeTarget, n(V::TargetLogit), [1, t]),
        compute(
            Op::CeBwd,
            Parallel::Local,
            vec![[t, vr], [1, t], [1, t], [t, 1]],
            [t, vr],
            4 * t64 * vr64,
            2 * t64 * vr64 * e,
            // The softmax needs each row's maximum and sum of exponentials, the one-hot its
            // target.
            vec![
                (n(V::Logits), [t, vp], Cols),
                (n(V::RowMax), [1, t], Whole),
                (n(V::SumExp), [1, t], Whole),
                (n(V::Targets), [t, 1], Whole),
            ],
            vec![(n(V::DLogits), [t, vp], Cols)],
        ),
        compute(
            Op::LmHeadBwd,
            Parallel::Column,
            vec![[t, vr], [t, h], [vr, h]],
            [t, h],
            head_bwd.flops,
            head_bwd.elems * e,
            vec![
                (n(V::DLogits), [t, vp], Cols),
                (n(V::E), [t, h], Whole),
                table,
            ],
            vec![
                (n(V::DE), [t, h], Partial),
                (n(V::EmbeddingGrad), [vp, h], Rows),
            ],
        ),
        all_reduce(Op::LmHeadFBwd, n(V::DE), [t, h]),
        compute(
            Op::EmbedBwd,
            Parallel::Row,
            vec![[t, h]],
            [vr, h],
            t64 * h64,
            2 * t64 * h64 * e,
            vec![(n(V::DE), [t, h], Whole)],
            vec![(n(V::EmbeddingGrad), [vp, h], Rows)],
        ),
    ];
    let place = |held: Held, r: usize| match held {
        Whole => Placement::Replicate,
        Partial => Placement::Partial,
        Rows => Placement::shard(0, r * vr..(r + 1) * vr),
        Cols => Placement::shard(1, r * vr..(r + 1) * vr),
    };
    let resolve =
        |ts: &[(TensorName, [usize; 2], Held)], ranks: &[usize]| -> Vec<TensorPlacement> {
            ts.iter()
                .map(|&(name, shape, held)| TensorPlacement {
                    tensor: name,
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

/// The placement checker of the block program ([`crate::block::check::check_events`]) on the
/// vocabulary program: every tensor an event reads is held, on each rank, in the placement an
/// earlier event wrote (the ids whole and the table by rows before the first), and every
/// collective is the change of placement its kind makes.
pub fn check_program(
    cfg: &VocabConfig,
    program: &[Event],
) -> Result<(), crate::block::check::PlacementError> {
    let vr = cfg.rows_per_rank();
    let mut inputs = Vec::new();
    for r in 0..cfg.tp.max(1) {
        inputs.push((
            0,
            TensorName::Vocab(VocabTensor::Ids),
            r,
            Placement::Replicate,
        ));
        inputs.push((
            0,
            TensorName::Vocab(VocabTensor::Targets),
            r,
            Placement::Replicate,
        ));
        inputs.push((
            0,
            TensorName::Vocab(VocabTensor::Embedding),
            r,
            Placement::shard(0, r * vr..(r + 1) * vr),
        ));
    }
    crate::block::check::check_events(program, &inputs, &|_, _| None, &|_, _, _| None)
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

    /// The executor runs exactly the program's events, in order, and its values are the
    /// kernels' (the head and lookup the training labs call) bit for bit.
    #[test]
    fn the_walk_runs_the_program_event_by_event() {
        for tp in [1, 2, 3, 4] {
            let cfg = small(tp);
            let m = VocabModel::<f64>::random(&cfg);
            let program = events(&cfg, DType::F64);
            let (got, ran) = walk(&cfg, &m, &program).unwrap();
            let want: Vec<(Op, Vec<usize>)> =
                program.iter().map(|e| (e.op, e.ranks.clone())).collect();
            assert_eq!(ran, want);
            let tables: Vec<Array2<f64>> = (0..tp)
                .map(|r| shard_table(&cfg, m.embedding.view(), r))
                .collect();
            let x = lookup_sharded(&cfg, &tables, &m.ids).unwrap();
            let head = head_sharded(&cfg, &tables, &x, &m.targets).unwrap();
            assert_eq!(got.embedded, x[0]);
            assert_eq!(got.logits, head.logits);
            assert_eq!(got.losses, head.losses);
            assert_eq!(got.loss.to_bits(), head.loss.to_bits());
            let mut grads = head.grad_tables;
            for (r, g) in grads.iter_mut().enumerate() {
                scatter_grad(&cfg, r, &m.ids, &head.dx[r], g);
            }
            assert_eq!(got.grad_embedding, grads);
        }
    }

    /// The walk follows the program it is given: without `ce.max` the cross-entropy backward
    /// finds no row maximum and says so; an op of the block is refused.
    #[test]
    fn the_walk_follows_the_program_it_is_given() {
        let cfg = small(2);
        let m = VocabModel::<f64>::random(&cfg);
        let mut program = events(&cfg, DType::F64);
        program.retain(|e| e.op != Op::CeLocal);
        let err = walk(&cfg, &m, &program).err().map(|e| e.to_string());
        assert!(
            err.as_deref()
                .is_some_and(|e| e.contains("ce.max") && e.contains("row max")),
            "{err:?}"
        );
        let mut program = events(&cfg, DType::F64);
        program[0].op = Op::Fc1;
        let err = walk(&cfg, &m, &program).err();
        assert!(
            matches!(
                err,
                Some(VocabError::Collective(CollectiveError::ForeignOp {
                    op: Op::Fc1
                }))
            ),
            "{err:?}"
        );
    }

    /// The block's placement checker passes the vocabulary program at every TP size and catches
    /// a missing reduction.
    #[test]
    fn the_program_passes_the_placement_checker() {
        for tp in [1, 2, 3, 4, 8] {
            let cfg = small(tp);
            let program = events(&cfg, DType::F32);
            if let Err(e) = check_program(&cfg, &program) {
                panic!("tp={tp}: {e}");
            }
        }
        let cfg = small(4);
        let mut program = events(&cfg, DType::F32);
        program.retain(|e| e.op != Op::CeMax);
        let err = check_program(&cfg, &program)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("ce.bwd") && err.contains("row max"), "{err}");
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
