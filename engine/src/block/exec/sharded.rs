//! The sharded executor: the same block on `tp` virtual GPUs, each holding only its shards.
//!
//! Every rank computes on its own copies (the run's input and output gradient, replicated, are
//! read where the caller holds them, never written); ranks meet only in collectives, which run
//! through [`crate::collectives`] with the configured algorithm. The executor walks the block
//! program ([`crate::block::program::schedule`]): it issues exactly the program's events, in the
//! same order (op by op, rank by rank), each collective of the kind the program names, and
//! records them so that tests can check it. Its kernels are the fused ones of
//! [`super::kernels`]; where one op's output feeds only the next op (a bias-and-residual
//! pass and the LayerNorm after it, a LayerNorm backward and the bias gradient after it), the two
//! run in one pass at the first one's step, with the same values bit for bit, and the second is
//! still recorded at its own step. Per rank and block:
//!
//! ```text
//! forward:  x ─LN1─▶ f ─▶ [x·W_qkv,r + b_r] ─▶ attn(heads of r) ─▶ [ctx_r·W_out,r] ─▶ g(all-reduce) ─▶ +b_out +x
//!           x1 ─LN2─▶ f ─▶ [x·W_1,r + b_1,r] ─▶ GeLU ─▶ [·W_2,r] ─▶ g(all-reduce) ─▶ +b_2 +x1
//! backward: the mirror image; g is the identity and f all-reduces the LayerNorm-output gradients.
//! ```

use super::kernels;
use crate::block::ops::{AttnCache, LnCache};
use crate::block::plan::ShardPlan;
use crate::block::program::tensors;
use crate::block::{Op, TensorName};
use crate::collectives::{self, CollectiveError, CollectiveKind};
use crate::config::Config;
use crate::dtype::Element;
use crate::params::{LayerParams, Model};
use crate::{
    block::op::Pass,
    trace::{EventKind, Trace},
};
use ndarray::{Array2, ArrayBase, ArrayView2, CowArray, Ix2};
use rayon::prelude::*;

/// A hook on the executor's forward pass: the precision lab rounds every op's output to a
/// 2-byte dtype and sums all-reduces in that dtype, on the same walk of the program rather than a
/// copy of it ([`crate::labs::precision`]).
pub trait Rounding<T>: Sync {
    /// Called on the output each rank's forward op produces (before anything reads it).
    fn round(&self, _op: Op, _out: &mut Array2<T>) {}
    /// An all-reduce the hook sums itself, or `None` for the engine's collective.
    fn all_reduce(&self, _op: Op, _partials: &[Array2<T>]) -> Option<Array2<T>> {
        None
    }
    /// Whether [`Rounding::round`] may change an output. Only a hook that never does lets the
    /// executor fuse a bias-and-residual pass with the LayerNorm after it (which then reads the
    /// sum before any hook could see it).
    fn rounds(&self) -> bool {
        true
    }
}

/// No rounding: the executor as it is.
pub struct Exact;

impl<T> Rounding<T> for Exact {
    fn rounds(&self) -> bool {
        false
    }
}

/// One event the executor issued (compared against the trace's order in tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    pub layer: usize,
    pub pass: Pass,
    pub op: Op,
    pub ranks: Vec<usize>,
}

/// One all-reduce: every rank's partial input and the reduced result (rank 0's copy; the
/// executor checks that every rank ended with the same values).
#[derive(Debug, Clone)]
pub struct CollectiveRecord<T> {
    pub layer: usize,
    pub pass: Pass,
    pub op: Op,
    pub partials: Vec<Array2<T>>,
    pub result: Array2<T>,
    /// Largest difference between ranks' results (0 for every algorithm here: each rank receives
    /// the same reduced chunks).
    pub max_rank_disagreement: f64,
}

/// What a sharded run produces.
#[derive(Debug, Clone)]
pub struct ShardedRun<T> {
    /// Each rank's copy of the block stack's output (replicated after the last `g`); with
    /// sequence parallelism each rank's token rows of it (`token_rows`).
    pub outputs: Vec<Array2<T>>,
    /// Each rank's copy of the input gradient (replicated after the last `f`); with sequence
    /// parallelism each rank's token rows of it.
    pub grad_inputs: Vec<Array2<T>>,
    /// The token rows each rank holds outside the tensor-parallel regions
    /// ([`Config::token_rows`]).
    pub token_rows: Vec<std::ops::Range<usize>>,
    /// Elements each rank saved for the backward pass, summed over layers (what
    /// [`crate::capacity::memory::config_memory`] models).
    pub saved_elements_per_rank: Vec<usize>,
    /// Each rank's parameter-shard gradients, `[rank][layer]`.
    pub grads: Vec<Vec<LayerParams<T>>>,
    pub collectives: Vec<CollectiveRecord<T>>,
    pub issued: Vec<Issued>,
}

impl<T: Element> ShardedRun<T> {
    /// The whole output: rank 0's copy, or with sequence parallelism every rank's rows stacked.
    pub fn output(&self) -> Array2<T> {
        stack_rows(&self.outputs, &self.token_rows)
    }

    /// The whole input gradient, as [`ShardedRun::output`].
    pub fn grad_input(&self) -> Array2<T> {
        stack_rows(&self.grad_inputs, &self.token_rows)
    }
}

fn stack_rows<T: Element>(parts: &[Array2<T>], rows: &[std::ops::Range<usize>]) -> Array2<T> {
    let split = rows.len() > 1 && rows[0] != rows[1];
    if split {
        let views: Vec<_> = parts.iter().map(|a| a.view()).collect();
        if let Ok(a) = ndarray::concatenate(ndarray::Axis(0), &views) {
            return a;
        }
    }
    parts
        .first()
        .cloned()
        .unwrap_or_else(|| Array2::zeros((0, 0)))
}

/// What one rank keeps of one layer's forward for its backward (what
/// [`crate::capacity::memory::config_memory`] counts).
#[derive(Default)]
struct Saved<T> {
    ln1: Option<Array2<T>>,
    ln1_cache: Option<LnCache<T>>,
    qkv: Option<Array2<T>>,
    attn_cache: Option<AttnCache<T>>,
    ctx: Option<Array2<T>>,
    ln2: Option<Array2<T>>,
    ln2_cache: Option<LnCache<T>>,
    fc1: Option<Array2<T>>,
    act: Option<Array2<T>>,
}

impl<T> Saved<T> {
    /// Every array saved, given up (for [`kernels::recycle`]).
    fn into_arrays(self) -> impl Iterator<Item = Array2<T>> {
        let caches = [self.ln1_cache, self.ln2_cache].into_iter().flatten();
        [self.ln1, self.qkv, self.ctx, self.ln2, self.fc1, self.act]
            .into_iter()
            .flatten()
            .chain(caches.map(|c| c.xhat))
            .chain(self.attn_cache.into_iter().flat_map(|c| c.probs))
    }

    /// Elements this rank saved of the layer.
    fn elements(&self) -> usize {
        let m = |a: &Option<Array2<T>>| a.as_ref().map_or(0, |a| a.len());
        let ln = |c: &Option<LnCache<T>>| c.as_ref().map_or(0, |c| c.xhat.len() + c.rstd.len());
        m(&self.ln1)
            + ln(&self.ln1_cache)
            + m(&self.qkv)
            + self
                .attn_cache
                .as_ref()
                .map_or(0, |c| c.probs.iter().map(|p| p.len()).sum())
            + m(&self.ctx)
            + m(&self.ln2)
            + ln(&self.ln2_cache)
            + m(&self.fc1)
            + m(&self.act)
    }
}

struct Exec<'a, T> {
    cfg: &'a Config,
    hook: &'a dyn Rounding<T>,
    issued: Vec<Issued>,
    collectives: Vec<CollectiveRecord<T>>,
    layer: usize,
    pass: Pass,
    record: bool,
}

fn to_bufs<T: Element>(parts: Vec<Array2<T>>) -> Vec<Vec<T>> {
    parts
        .into_iter()
        .map(|p| {
            if p.is_standard_layout() {
                p.into_raw_vec_and_offset().0
            } else {
                p.iter().copied().collect()
            }
        })
        .collect()
}

fn from_buf<T: Element>(rows: usize, cols: usize, v: Vec<T>) -> Result<Array2<T>, CollectiveError> {
    let found = v.len();
    Array2::from_shape_vec((rows, cols), v).map_err(|_| CollectiveError::LengthMismatch {
        rank: 0,
        expected: rows * cols,
        found,
    })
}

impl<T: Element> Exec<'_, T> {
    fn issue_collective(&mut self, op: Op) {
        self.issued.push(Issued {
            layer: self.layer,
            pass: self.pass,
            op,
            ranks: (0..self.cfg.tp).collect(),
        });
    }

    /// Entering the tensor-parallel region: `f` forward (or `g` backward), of the program's
    /// `kind`: the identity (`None`: each rank reads its own tensor) or, with sequence
    /// parallelism, an all-gather of every rank's token rows.
    fn enter(
        &mut self,
        op: Op,
        kind: Option<CollectiveKind>,
        parts: &[ArrayView2<'_, T>],
    ) -> Result<Option<Vec<Array2<T>>>, CollectiveError> {
        match kind {
            Some(CollectiveKind::AllGather) => self.all_gather(op, parts).map(Some),
            _ => {
                self.identity(op);
                Ok(None)
            }
        }
    }

    /// Leaving the tensor-parallel region: `g` forward (or `f` backward), of the program's
    /// `kind`: an all-reduce or, with sequence parallelism, a reduce-scatter that leaves each
    /// rank its token rows of the sum.
    fn exit(
        &mut self,
        op: Op,
        kind: Option<CollectiveKind>,
        partials: Vec<Array2<T>>,
    ) -> Result<Vec<Array2<T>>, CollectiveError> {
        match kind {
            Some(CollectiveKind::ReduceScatter) => self.reduce_scatter(op, partials),
            _ => self.all_reduce(op, partials),
        }
    }

    /// All-gather of every rank's `[t/tp, h]` rows into `[t, h]` on every rank.
    fn all_gather(
        &mut self,
        op: Op,
        parts: &[ArrayView2<'_, T>],
    ) -> Result<Vec<Array2<T>>, CollectiveError> {
        self.issue_collective(op);
        let (rows, cols) = parts.first().map_or((0, 0), |p| p.dim());
        let n = parts.len();
        let algorithm = crate::block::program::gather_scatter_algorithm(self.cfg);
        let bufs: Vec<Vec<T>> = parts.iter().map(|p| p.iter().copied().collect()).collect();
        let out = collectives::all_gather(&bufs, algorithm)?;
        out.outputs
            .into_iter()
            .map(|v| from_buf(rows * n, cols, v))
            .collect()
    }

    /// Reduce-scatter of every rank's `[t, h]` partial: rank `r` keeps rows `r·t/tp..` of the
    /// sum. The record's result is all ranks' rows stacked: the full sum, as an all-reduce has it.
    fn reduce_scatter(
        &mut self,
        op: Op,
        partials: Vec<Array2<T>>,
    ) -> Result<Vec<Array2<T>>, CollectiveError> {
        self.issue_collective(op);
        let (rows, cols) = partials[0].dim();
        let n = partials.len();
        let kept = if self.record {
            partials.clone()
        } else {
            Vec::new()
        };
        let algorithm = crate::block::program::gather_scatter_algorithm(self.cfg);
        let out = collectives::reduce_scatter(&to_bufs(partials), algorithm)?;
        let shards: Vec<Array2<T>> = out
            .outputs
            .into_iter()
            .map(|v| from_buf(rows / n, cols, v))
            .collect::<Result<_, _>>()?;
        if self.record {
            let views: Vec<_> = shards.iter().map(|a| a.view()).collect();
            let result = ndarray::concatenate(ndarray::Axis(0), &views).map_err(|_| {
                CollectiveError::LengthMismatch {
                    rank: 0,
                    expected: rows * cols,
                    found: 0,
                }
            })?;
            self.collectives.push(CollectiveRecord {
                layer: self.layer,
                pass: self.pass,
                op,
                partials: kept,
                result,
                max_rank_disagreement: 0.0,
            });
        }
        Ok(shards)
    }

    /// Runs `f` on every rank, the ranks side by side on the thread pool, and records the event.
    /// Every op runs this way. Each rank's kernels spread their own work over the pool too (a
    /// product's row and column blocks, a pass's fixed row or element chunks), nested in the
    /// ranks' tasks, so the pool sees every rank's work at once and work-stealing keeps both
    /// cores busy: one rank's LayerNorm or products run while another's finish, at TP 3 on 2
    /// cores as well, and a region does not wait once per rank on a thread the machine has
    /// descheduled. Results do not depend on it: a product's blocks never split its sum, and the
    /// passes' chunks are fixed.
    ///
    /// Measured (`scripts/bench-ratios.sh`, fwd+bwd at t=512): with the ranks' products one after
    /// another instead, TP 6 took 1.12-1.16× TP 1's time; side by side 1.00× (TP 2-4: 0.92-1.00×).
    fn op<R: Send>(&mut self, op: Op, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
        self.record_op(op);
        (0..self.cfg.tp).into_par_iter().map(f).collect()
    }

    /// Records a compute op's event on every rank.
    fn record_op(&mut self, op: Op) {
        for r in 0..self.cfg.tp {
            self.issued.push(Issued {
                layer: self.layer,
                pass: self.pass,
                op,
                ranks: vec![r],
            });
        }
    }

    /// [`Exec::op`] on each rank's own input, moved in (`inputs[r]` to rank `r`).
    fn op_each<A: Send, R: Send>(
        &mut self,
        op: Op,
        inputs: Vec<A>,
        f: impl Fn(usize, A) -> R + Sync + Send,
    ) -> Vec<R> {
        self.record_op(op);
        inputs
            .into_par_iter()
            .enumerate()
            .map(|(r, a)| f(r, a))
            .collect()
    }

    /// A conjugate operator's identity side: no data moves.
    fn identity(&mut self, op: Op) {
        self.issue_collective(op);
    }

    /// Grouped-query attention with replicated KV heads: within `group`, the ranks holding the
    /// same KV head ([`Config::kv_replica_groups`]), all-reduce the K and V columns of the QKV
    /// weight and bias gradients of `layer` (`attn.kv.grads`, one collective per group).
    fn kv_grads_all_reduce(
        &mut self,
        group: &[usize],
        grads: &mut [Vec<LayerParams<T>>],
        layer: usize,
    ) -> Result<(), CollectiveError> {
        let q_cols = self.cfg.heads_per_rank() * self.cfg.head_dim();
        self.issued.push(Issued {
            layer: self.layer,
            pass: self.pass,
            op: Op::KvGrads,
            ranks: group.to_vec(),
        });
        let kv = |m: &Array2<T>| {
            m.slice(ndarray::s![.., q_cols..])
                .iter()
                .copied()
                .collect::<Vec<T>>()
        };
        let mut bufs: Vec<Vec<T>> = group
            .iter()
            .map(|&r| {
                let g = &grads[r][layer];
                let mut v = kv(&g.qkv_w);
                v.extend(kv(&g.qkv_b));
                v
            })
            .collect();
        collectives::all_reduce_in_place(&mut bufs, self.cfg.algorithm)?;
        for (&r, buf) in group.iter().zip(bufs) {
            let g = &mut grads[r][layer];
            g.qkv_w
                .slice_mut(ndarray::s![.., q_cols..])
                .iter_mut()
                .chain(g.qkv_b.slice_mut(ndarray::s![.., q_cols..]).iter_mut())
                .zip(buf)
                .for_each(|(d, x)| *d = x);
        }
        Ok(())
    }

    /// Sequence parallelism: each rank's LayerNorm and row-parallel-bias gradients of `layer`
    /// cover only its token rows; one all-reduce of the six vectors packed (`sp.grads`).
    fn sp_grads_all_reduce(
        &mut self,
        grads: &mut [Vec<LayerParams<T>>],
        layer: usize,
    ) -> Result<(), CollectiveError> {
        let packed: Vec<Array2<T>> = grads
            .iter()
            .map(|g| {
                let g = &g[layer];
                let parts = [&g.ln1_w, &g.ln1_b, &g.ln2_w, &g.ln2_b, &g.out_b, &g.fc2_b];
                let flat: Vec<T> = parts.iter().flat_map(|v| v.iter().copied()).collect();
                let n = flat.len();
                from_buf(1, n, flat)
            })
            .collect::<Result<_, _>>()?;
        let was_recording = std::mem::replace(&mut self.record, false);
        let summed = self.all_reduce(Op::SpGrads, packed);
        self.record = was_recording;
        for (g, s) in grads.iter_mut().zip(summed?) {
            let g = &mut g[layer];
            let mut it = s.into_iter();
            for v in [
                &mut g.ln1_w,
                &mut g.ln1_b,
                &mut g.ln2_w,
                &mut g.ln2_b,
                &mut g.out_b,
                &mut g.fc2_b,
            ] {
                v.iter_mut().zip(it.by_ref()).for_each(|(d, x)| *d = x);
            }
        }
        Ok(())
    }

    /// All-reduce of every rank's `[t, h]` partial; returns each rank's copy of the sum.
    fn all_reduce(
        &mut self,
        op: Op,
        partials: Vec<Array2<T>>,
    ) -> Result<Vec<Array2<T>>, CollectiveError> {
        self.issue_collective(op);
        let dim = partials[0].dim();
        let kept = if self.record {
            partials.clone()
        } else {
            Vec::new()
        };
        let results: Vec<Array2<T>> = if let Some(sum) = self.hook.all_reduce(op, &partials) {
            vec![sum; partials.len()]
        } else {
            let mut bufs = to_bufs(partials);
            collectives::all_reduce_in_place(&mut bufs, self.cfg.algorithm)?;
            bufs.into_iter()
                .map(|v| from_buf(dim.0, dim.1, v))
                .collect::<Result<_, _>>()?
        };
        if self.record {
            let max_rank_disagreement = results
                .iter()
                .skip(1)
                .flat_map(|r| {
                    r.iter()
                        .zip(results[0].iter())
                        .map(|(a, b)| (*a - *b).abs().to_f64())
                })
                .fold(0.0, f64::max);
            self.collectives.push(CollectiveRecord {
                layer: self.layer,
                pass: self.pass,
                op,
                partials: kept,
                result: results[0].clone(),
                max_rank_disagreement,
            });
        }
        Ok(results)
    }
}

/// What a sharded run does besides the forward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Run the backward pass too.
    pub backward: bool,
    /// Keep every rank's partial input of each all-reduce (for verification and display).
    pub record_collectives: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            backward: true,
            record_collectives: true,
        }
    }
}

/// Runs forward and backward of `model` split by `plan` over `cfg.tp` virtual GPUs.
pub fn run<T: Element>(
    cfg: &Config,
    plan: &ShardPlan,
    model: &Model<T>,
) -> Result<ShardedRun<T>, CollectiveError> {
    run_with(cfg, plan, model, Options::default())
}

/// [`run`] with [`Options`] (benchmarks skip the recording; forward-only runs skip backward).
pub fn run_with<T: Element>(
    cfg: &Config,
    plan: &ShardPlan,
    model: &Model<T>,
    options: Options,
) -> Result<ShardedRun<T>, CollectiveError> {
    let shards = plan.shard_model(model); // [rank][layer]
    run_on_shards(cfg, &shards, &model.input, &model.grad_output, options)
}

/// Runs on shards already resident on each rank (`shards[rank][layer]`, from
/// [`ShardPlan::shard_model`]): what a real run does every step, without re-slicing the weights.
pub fn run_on_shards<T: Element>(
    cfg: &Config,
    shards: &[Vec<LayerParams<T>>],
    input: &Array2<T>,
    grad_output: &Array2<T>,
    options: Options,
) -> Result<ShardedRun<T>, CollectiveError> {
    run_on_shards_with(cfg, shards, input, grad_output, options, &Exact)
}

/// One step of the walk: a compute op on every rank (the program's consecutive per-rank events
/// of one op), or one collective event over its group.
struct Step {
    layer: usize,
    pass: Pass,
    op: Op,
    ranks: Vec<usize>,
    collective: Option<CollectiveKind>,
}

/// The program's events grouped into [`Step`]s, in issue order.
fn steps(trace: &Trace) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    for e in &trace.events {
        let collective = match e.kind {
            EventKind::Collective { kind, .. } => Some(kind),
            EventKind::Compute { .. } => None,
        };
        if let Some(last) = out.last_mut() {
            if collective.is_none()
                && last.collective.is_none()
                && (last.layer, last.pass, last.op) == (e.layer, e.pass, e.op)
            {
                last.ranks.extend(&e.ranks);
                continue;
            }
        }
        out.push(Step {
            layer: e.layer,
            pass: e.pass,
            op: e.op,
            ranks: e.ranks.clone(),
            collective,
        });
    }
    out
}

/// The tensors between ops, one per rank, named as in [`crate::block::program::tensors`].
/// `None` until an op writes them; an op that finds its input missing reports
/// [`CollectiveError::ProgramOrder`] (the program and this walk disagree).
struct Live<'a, T> {
    /// `X`, the block input (after the last block, `Y`, the output). The first block's input is
    /// the run's: each rank reads its rows of it (all of it without sequence parallelism) where
    /// the caller holds it, as a GPU reads the batch it was handed, instead of the walk copying
    /// the replicated input once per rank; it is never written.
    x: Option<Vec<CowArray<'a, T, Ix2>>>,
    /// `H1` or `H2` gathered to all token rows by `f` with sequence parallelism (`None`: each
    /// rank reads its own LayerNorm output).
    gathered: Option<Vec<Array2<T>>>,
    /// `Z` or `M`: a row-parallel product, partial until `g` sums it.
    partial: Option<Vec<Array2<T>>>,
    x1: Option<Vec<Array2<T>>>,
    /// `dY` (after the last block backward, `dX`, the input gradient); the last block's is the
    /// run's output gradient, read where the caller holds it as `X` is.
    dy: Option<Vec<CowArray<'a, T, Ix2>>>,
    /// `dY` or `dX1` gathered by `g` backward with sequence parallelism.
    dgathered: Option<Vec<Array2<T>>>,
    /// `dU`, then `dA` (GeLU's backward overwrites it).
    du: Option<Vec<Array2<T>>>,
    /// `dH2` or `dH1`: partial until `f` backward sums it.
    dh: Option<Vec<Array2<T>>>,
    dx1: Option<Vec<Array2<T>>>,
    dctx: Option<Vec<Array2<T>>>,
    dqkv: Option<Vec<Array2<T>>>,
    /// `H2` or `H1` gathered again for a column-parallel weight gradient (sequence parallelism).
    regathered: Option<Vec<Array2<T>>>,
    /// Fused with the op before (see the walk): the next LayerNorm's outputs, computed by the
    /// bias-and-residual pass that wrote its input, or the next bias gradient, computed by the
    /// LayerNorm backward that wrote the gradient it sums.
    ln_out: Option<Vec<(Array2<T>, LnCache<T>)>>,
    bias_grads: Option<Vec<Array2<T>>>,
}

impl<T> Default for Live<'_, T> {
    fn default() -> Self {
        Self {
            x: None,
            gathered: None,
            partial: None,
            x1: None,
            dy: None,
            dgathered: None,
            du: None,
            dh: None,
            dx1: None,
            dctx: None,
            dqkv: None,
            regathered: None,
            ln_out: None,
            bias_grads: None,
        }
    }
}

/// Takes a tensor out of the walk's state.
fn take<V>(slot: &mut Option<V>, op: Op, tensor: TensorName) -> Result<V, CollectiveError> {
    slot.take()
        .ok_or(CollectiveError::ProgramOrder { op, tensor })
}

/// Borrows a tensor of the walk's state.
fn peek<V>(slot: &Option<V>, op: Op, tensor: TensorName) -> Result<&V, CollectiveError> {
    slot.as_ref()
        .ok_or(CollectiveError::ProgramOrder { op, tensor })
}

/// Each rank's saved value `field` of one layer.
fn saved<'a, T, V>(
    layer: &'a [Saved<T>],
    op: Op,
    tensor: TensorName,
    field: impl Fn(&'a Saved<T>) -> Option<&'a V>,
) -> Result<Vec<&'a V>, CollectiveError> {
    layer
        .iter()
        .map(|s| field(s).ok_or(CollectiveError::ProgramOrder { op, tensor }))
        .collect()
}

/// `gathered[r]` if a collective gathered the tensor, else each rank's own `own[r]`.
fn pick<'a, T>(
    gathered: &'a Option<Vec<Array2<T>>>,
    own: &[ArrayView2<'a, T>],
    r: usize,
) -> ArrayView2<'a, T> {
    gathered.as_ref().map_or_else(|| own[r], |g| g[r].view())
}

/// Each rank's tensor as a view.
fn views<'b, T: 'b, S: ndarray::Data<Elem = T> + 'b>(
    parts: impl IntoIterator<Item = &'b ArrayBase<S, Ix2>>,
) -> Vec<ArrayView2<'b, T>> {
    parts.into_iter().map(|a| a.view()).collect()
}

/// Rank `r`'s token rows of `a` (all of them without sequence parallelism).
fn rows_of<'a, T>(cfg: &Config, a: &'a Array2<T>, r: usize) -> ArrayView2<'a, T> {
    a.slice(ndarray::s![cfg.token_rows(r), ..])
}

/// [`run_on_shards`] with a [`Rounding`] hook on the forward pass.
///
/// The executor walks the block program ([`crate::block::program::schedule`], the trace every
/// view draws): one match arm per [`Op`], in the program's order, each collective of the kind
/// the program names. Nothing here lists the block's ops a second time, so the trace and the
/// execution cannot drift apart; a test checks every event the walk issues against the trace.
pub fn run_on_shards_with<T: Element>(
    cfg: &Config,
    shards: &[Vec<LayerParams<T>>],
    input: &Array2<T>,
    grad_output: &Array2<T>,
    options: Options,
    hook: &dyn Rounding<T>,
) -> Result<ShardedRun<T>, CollectiveError> {
    let program = crate::block::program::schedule(cfg);
    walk(cfg, &program, shards, input, grad_output, options, hook)
}

/// The walk of `program` (the block program of `cfg`).
fn walk<'a, T: Element>(
    cfg: &Config,
    program: &Trace,
    shards: &[Vec<LayerParams<T>>],
    input: &'a Array2<T>,
    grad_output: &'a Array2<T>,
    options: Options,
    hook: &dyn Rounding<T>,
) -> Result<ShardedRun<T>, CollectiveError> {
    let tp = cfg.tp;
    let (b, s) = (cfg.batch, cfg.seq);
    let (hp, kvp) = (cfg.heads_per_rank(), cfg.kv_heads_per_rank());
    let mut ex = Exec {
        cfg,
        hook,
        issued: Vec::new(),
        collectives: Vec::new(),
        layer: 0,
        pass: Pass::Forward,
        record: options.record_collectives,
    };
    let mut live = Live::<'a, T> {
        x: Some((0..tp).map(|r| rows_of(cfg, input, r).into()).collect()),
        ..Live::default()
    };
    let mut keep: Vec<Vec<Saved<T>>> = (0..cfg.layers)
        .map(|_| (0..tp).map(|_| Saved::default()).collect())
        .collect();
    // Each gradient is written by the op that computes it (0×0 until then).
    let mut grads: Vec<Vec<LayerParams<T>>> = (0..tp)
        .map(|_| {
            (0..if options.backward { cfg.layers } else { 0 })
                .map(|_| LayerParams::from_fn(|_| Array2::zeros((0, 0))))
                .collect()
        })
        .collect();
    let mut saved_elements_per_rank = vec![0; tp];
    let mut in_backward = false;
    let steps = steps(program);
    for (i, step) in steps.iter().enumerate() {
        let next = steps.get(i + 1).map(|n| (n.op, n.layer));
        if step.pass == Pass::Backward && !options.backward {
            break;
        }
        if step.pass == Pass::Backward && !in_backward {
            in_backward = true;
            // The forward is over: count what it saved, and start from the output gradient.
            for (r, n) in saved_elements_per_rank.iter_mut().enumerate() {
                *n = keep.iter().map(|l| l[r].elements()).sum();
            }
            live.dy = Some(
                (0..tp)
                    .map(|r| rows_of(cfg, grad_output, r).into())
                    .collect(),
            );
        }
        let (layer, op) = (step.layer, step.op);
        ex.layer = layer;
        ex.pass = step.pass;
        let p = |r: usize| &shards[r][layer];
        let kept = &mut keep[layer];
        match op {
            // ---- forward ----
            Op::Ln1 | Op::Ln2 => {
                let src = if op == Op::Ln1 {
                    views(peek(&live.x, op, tensors::X)?)
                } else {
                    views(peek(&live.x1, op, tensors::X1)?)
                };
                let out = if let Some(out) = live.ln_out.take() {
                    // Computed by the bias-and-residual pass that wrote `src`, the step before.
                    ex.record_op(op);
                    out
                } else {
                    ex.op(op, |r| {
                        let (w, bias) = if op == Op::Ln1 {
                            (&p(r).ln1_w, &p(r).ln1_b)
                        } else {
                            (&p(r).ln2_w, &p(r).ln2_b)
                        };
                        let (mut y, c) = kernels::layer_norm(src[r], w.view(), bias.view());
                        hook.round(op, &mut y);
                        (y, c)
                    })
                };
                for (k, (y, c)) in kept.iter_mut().zip(out) {
                    if op == Op::Ln1 {
                        (k.ln1, k.ln1_cache) = (Some(y), Some(c));
                    } else {
                        (k.ln2, k.ln2_cache) = (Some(y), Some(c));
                    }
                }
            }
            Op::AttnF | Op::MlpF => {
                let ln = if op == Op::AttnF {
                    views(saved(kept, op, tensors::H1, |k| k.ln1.as_ref())?)
                } else {
                    views(saved(kept, op, tensors::H2, |k| k.ln2.as_ref())?)
                };
                live.gathered = ex.enter(op, step.collective, &ln)?;
            }
            Op::Qkv | Op::Fc1 => {
                let ln = if op == Op::Qkv {
                    views(saved(kept, op, tensors::H1, |k| k.ln1.as_ref())?)
                } else {
                    views(saved(kept, op, tensors::H2, |k| k.ln2.as_ref())?)
                };
                let gathered = live.gathered.take();
                let out = ex.op(op, |r| {
                    let (w, bias) = if op == Op::Qkv {
                        (&p(r).qkv_w, &p(r).qkv_b)
                    } else {
                        (&p(r).fc1_w, &p(r).fc1_b)
                    };
                    let mut y =
                        kernels::linear_bias(pick(&gathered, &ln, r), w.view(), bias.view());
                    hook.round(op, &mut y);
                    y
                });
                for (k, y) in kept.iter_mut().zip(out) {
                    if op == Op::Qkv {
                        k.qkv = Some(y);
                    } else {
                        k.fc1 = Some(y);
                    }
                }
            }
            Op::AttnCore => {
                let qkv = saved(kept, op, tensors::QKV, |k| k.qkv.as_ref())?;
                let out = ex.op(op, |r| {
                    let (mut ctx, c) = kernels::attention(qkv[r].view(), b, s, hp, kvp);
                    hook.round(op, &mut ctx);
                    (ctx, c)
                });
                for (k, (ctx, c)) in kept.iter_mut().zip(out) {
                    (k.ctx, k.attn_cache) = (Some(ctx), Some(c));
                }
            }
            Op::Gelu => {
                let a = saved(kept, op, tensors::A, |k| k.fc1.as_ref())?;
                let out = ex.op(op, |r| {
                    let mut u = kernels::gelu(a[r].view());
                    hook.round(op, &mut u);
                    u
                });
                for (k, u) in kept.iter_mut().zip(out) {
                    k.act = Some(u);
                }
            }
            Op::AttnOut | Op::Fc2 => {
                let src = if op == Op::AttnOut {
                    saved(kept, op, tensors::CTX, |k| k.ctx.as_ref())?
                } else {
                    saved(kept, op, tensors::U, |k| k.act.as_ref())?
                };
                live.partial = Some(ex.op(op, |r| {
                    let w = if op == Op::AttnOut {
                        &p(r).out_w
                    } else {
                        &p(r).fc2_w
                    };
                    let mut z = kernels::matmul(src[r].view(), w.view());
                    hook.round(op, &mut z);
                    z
                }));
            }
            Op::AttnG | Op::MlpG => {
                let name = if op == Op::AttnG {
                    tensors::Z
                } else {
                    tensors::M
                };
                let part = take(&mut live.partial, op, name)?;
                live.partial = Some(ex.exit(op, step.collective, part)?);
            }
            Op::AttnBiasResidual | Op::MlpBiasResidual => {
                let name = if op == Op::AttnBiasResidual {
                    tensors::Z
                } else {
                    tensors::M
                };
                let part = take(&mut live.partial, op, name)?;
                let res = if op == Op::AttnBiasResidual {
                    views(peek(&live.x, op, tensors::X)?)
                } else {
                    views(peek(&live.x1, op, tensors::X1)?)
                };
                // The LayerNorm that reads this output, if it is the next step: LayerNorm 2, or
                // the next block's LayerNorm 1. Without a rounding hook it runs in the same pass,
                // each block of rows normalised while it is in cache (the same values).
                let ln_layer = if op == Op::AttnBiasResidual {
                    layer
                } else {
                    layer + 1
                };
                let ln_op = if op == Op::AttnBiasResidual {
                    Op::Ln2
                } else {
                    Op::Ln1
                };
                let fuse = next == Some((ln_op, ln_layer))
                    && !hook.rounds()
                    && shards.iter().all(|s| s.len() > ln_layer);
                let out = ex.op_each(op, part, |r, mut y| {
                    let bias = if op == Op::AttnBiasResidual {
                        &p(r).out_b
                    } else {
                        &p(r).fc2_b
                    };
                    if fuse {
                        let q = &shards[r][ln_layer];
                        let (w, b) = if ln_op == Op::Ln2 {
                            (&q.ln2_w, &q.ln2_b)
                        } else {
                            (&q.ln1_w, &q.ln1_b)
                        };
                        let ln = kernels::residual_bias_layer_norm(
                            &mut y,
                            res[r],
                            bias.view(),
                            w.view(),
                            b.view(),
                        );
                        return (y, Some(ln));
                    }
                    kernels::residual_bias_in_place(&mut y, res[r], bias.view());
                    hook.round(op, &mut y);
                    (y, None)
                });
                let (out, ln): (Vec<_>, Vec<_>) = out.into_iter().unzip();
                live.ln_out = fuse.then(|| ln.into_iter().flatten().collect());
                if op == Op::AttnBiasResidual {
                    live.x1 = Some(out);
                } else {
                    live.x = Some(out.into_iter().map(CowArray::from).collect());
                    kernels::recycle(live.x1.take().into_iter().flatten());
                }
            }
            // ---- backward ----
            Op::MlpBiasResidualBwd | Op::AttnBiasResidualBwd => {
                let d = if op == Op::MlpBiasResidualBwd {
                    views(peek(&live.dy, op, tensors::DY)?)
                } else {
                    views(peek(&live.dx1, op, tensors::DX1)?)
                };
                let db = if let Some(db) = live.bias_grads.take() {
                    // Computed by the LayerNorm backward that wrote `d`, the step before.
                    ex.record_op(op);
                    db
                } else {
                    ex.op(op, |r| kernels::col_sum(d[r]))
                };
                for (g, db) in grads.iter_mut().zip(db) {
                    if op == Op::MlpBiasResidualBwd {
                        g[layer].fc2_b = db;
                    } else {
                        g[layer].out_b = db;
                    }
                }
            }
            Op::MlpGBwd | Op::AttnGBwd => {
                let d = if op == Op::MlpGBwd {
                    views(peek(&live.dy, op, tensors::DY)?)
                } else {
                    views(peek(&live.dx1, op, tensors::DX1)?)
                };
                live.dgathered = ex.enter(op, step.collective, &d)?;
            }
            Op::Fc2Bwd | Op::AttnOutBwd => {
                let d = if op == Op::Fc2Bwd {
                    views(peek(&live.dy, op, tensors::DY)?)
                } else {
                    views(peek(&live.dx1, op, tensors::DX1)?)
                };
                let src = if op == Op::Fc2Bwd {
                    saved(kept, op, tensors::U, |k| k.act.as_ref())?
                } else {
                    saved(kept, op, tensors::CTX, |k| k.ctx.as_ref())?
                };
                let gathered = live.dgathered.take();
                let out = ex.op(op, |r| {
                    let w = if op == Op::Fc2Bwd {
                        &p(r).fc2_w
                    } else {
                        &p(r).out_w
                    };
                    let d_in = pick(&gathered, &d, r);
                    let dw = kernels::matmul(src[r].t(), d_in);
                    let dx = kernels::matmul(d_in, w.t());
                    (dw, dx)
                });
                let mut dxs = Vec::with_capacity(tp);
                for (g, (dw, dx)) in grads.iter_mut().zip(out) {
                    if op == Op::Fc2Bwd {
                        g[layer].fc2_w = dw;
                    } else {
                        g[layer].out_w = dw;
                    }
                    dxs.push(dx);
                }
                if op == Op::Fc2Bwd {
                    live.du = Some(dxs);
                } else {
                    live.dctx = Some(dxs);
                }
            }
            Op::GeluBwd => {
                let a = saved(kept, op, tensors::A, |k| k.fc1.as_ref())?;
                let du = take(&mut live.du, op, tensors::DU)?;
                live.du = Some(ex.op_each(op, du, |r, mut du| {
                    kernels::gelu_backward_in_place(a[r].view(), &mut du);
                    du
                }));
            }
            Op::MlpFBwdGather | Op::AttnFBwdGather => {
                let ln = if op == Op::MlpFBwdGather {
                    views(saved(kept, op, tensors::H2, |k| k.ln2.as_ref())?)
                } else {
                    views(saved(kept, op, tensors::H1, |k| k.ln1.as_ref())?)
                };
                live.regathered = Some(ex.all_gather(op, &ln)?);
            }
            Op::Fc1Bwd | Op::QkvBwd => {
                let d = if op == Op::Fc1Bwd {
                    take(&mut live.du, op, tensors::DA)?
                } else {
                    take(&mut live.dqkv, op, tensors::DQKV)?
                };
                let ln = if op == Op::Fc1Bwd {
                    views(saved(kept, op, tensors::H2, |k| k.ln2.as_ref())?)
                } else {
                    views(saved(kept, op, tensors::H1, |k| k.ln1.as_ref())?)
                };
                let regathered = live.regathered.take();
                let out = ex.op(op, |r| {
                    let w = if op == Op::Fc1Bwd {
                        &p(r).fc1_w
                    } else {
                        &p(r).qkv_w
                    };
                    let dw = kernels::matmul(pick(&regathered, &ln, r).t(), d[r].view());
                    let db = kernels::col_sum(d[r].view());
                    let dx = kernels::matmul(d[r].view(), w.t());
                    (dw, db, dx)
                });
                kernels::recycle(d);
                let mut dxs = Vec::with_capacity(tp);
                for (g, (dw, db, dx)) in grads.iter_mut().zip(out) {
                    if op == Op::Fc1Bwd {
                        (g[layer].fc1_w, g[layer].fc1_b) = (dw, db);
                    } else {
                        (g[layer].qkv_w, g[layer].qkv_b) = (dw, db);
                    }
                    dxs.push(dx);
                }
                live.dh = Some(dxs);
            }
            Op::AttnCoreBwd => {
                let qkv = saved(kept, op, tensors::QKV, |k| k.qkv.as_ref())?;
                let cache = saved(kept, op, tensors::QKV, |k| k.attn_cache.as_ref())?;
                let dctx = take(&mut live.dctx, op, tensors::DCTX)?;
                live.dqkv = Some(ex.op(op, |r| {
                    kernels::attention_backward(
                        qkv[r].view(),
                        cache[r],
                        dctx[r].view(),
                        b,
                        s,
                        hp,
                        kvp,
                    )
                }));
            }
            Op::KvGrads => {
                // Replicated KV heads: each copy's gradient covers only its rank's query
                // heads; the copies of one KV head (this event's group) sum them.
                ex.kv_grads_all_reduce(&step.ranks, &mut grads, layer)?;
            }
            Op::MlpFBwd | Op::AttnFBwd => {
                let name = if op == Op::MlpFBwd {
                    tensors::DH2
                } else {
                    tensors::DH1
                };
                let dh = take(&mut live.dh, op, name)?;
                live.dh = Some(ex.exit(op, step.collective, dh)?);
            }
            Op::Ln2Bwd | Op::Ln1Bwd => {
                let name = if op == Op::Ln2Bwd {
                    tensors::DH2
                } else {
                    tensors::DH1
                };
                let dh = take(&mut live.dh, op, name)?;
                let res = if op == Op::Ln2Bwd {
                    views(peek(&live.dy, op, tensors::DY)?)
                } else {
                    views(peek(&live.dx1, op, tensors::DX1)?)
                };
                let cache = if op == Op::Ln2Bwd {
                    saved(kept, op, tensors::H2, |k| k.ln2_cache.as_ref())?
                } else {
                    saved(kept, op, tensors::H1, |k| k.ln1_cache.as_ref())?
                };
                // The bias gradient that sums this output, if it is the next step (the output
                // bias's, or the previous block's fc2 bias's), comes out of the same pass.
                let sums = if op == Op::Ln2Bwd {
                    next == Some((Op::AttnBiasResidualBwd, layer))
                } else {
                    layer > 0 && next == Some((Op::MlpBiasResidualBwd, layer - 1))
                };
                let out = ex.op_each(op, dh, |r, mut dh| {
                    let w = if op == Op::Ln2Bwd {
                        &p(r).ln2_w
                    } else {
                        &p(r).ln1_w
                    };
                    let (dg, db, ds) = kernels::layer_norm_backward_residual_in_place(
                        &mut dh,
                        cache[r],
                        w.view(),
                        res[r],
                        sums,
                    );
                    (dh, dg, db, ds)
                });
                let mut dxs = Vec::with_capacity(tp);
                let mut bias_grads = Vec::with_capacity(tp);
                for (g, (dx, dg, db, ds)) in grads.iter_mut().zip(out) {
                    bias_grads.extend(ds);
                    if op == Op::Ln2Bwd {
                        (g[layer].ln2_w, g[layer].ln2_b) = (dg, db);
                    } else {
                        (g[layer].ln1_w, g[layer].ln1_b) = (dg, db);
                    }
                    dxs.push(dx);
                }
                live.bias_grads = sums.then_some(bias_grads);
                if op == Op::Ln2Bwd {
                    live.dx1 = Some(dxs);
                    live.dy = None;
                } else {
                    live.dy = Some(dxs.into_iter().map(CowArray::from).collect());
                    // The layer's saved activations are no longer needed: their memory serves
                    // the next kernels (and the next run).
                    kernels::recycle(live.dx1.take().into_iter().flatten());
                    kernels::recycle(
                        std::mem::take(kept)
                            .into_iter()
                            .flat_map(Saved::into_arrays),
                    );
                }
            }
            Op::SpGrads => ex.sp_grads_all_reduce(&mut grads, layer)?,
            // The vocabulary-parallel ends and the decode step's cache append are not part of
            // the block program ([`crate::labs::vocab`] and [`crate::labs::serve::Decoder`] run them).
            Op::EmbedLookup
            | Op::EmbedG
            | Op::LmHead
            | Op::CeLocal
            | Op::CeMax
            | Op::CeSumExp
            | Op::CeTarget
            | Op::CeBwd
            | Op::LmHeadBwd
            | Op::LmHeadFBwd
            | Op::EmbedBwd
            | Op::PosEmbed
            | Op::FinalLn
            | Op::LogitsGather
            | Op::KvAppend => return Err(CollectiveError::ForeignOp { op }),
            // A learner's plan's own moves and biases: its program runs on `exec::design`.
            crate::design_ops!() => return Err(CollectiveError::ForeignOp { op }),
        }
    }
    if !options.backward || cfg.layers == 0 {
        for (r, n) in saved_elements_per_rank.iter_mut().enumerate() {
            *n = keep.iter().map(|l| l[r].elements()).sum();
        }
    }
    kernels::recycle(keep.into_iter().flatten().flat_map(Saved::into_arrays));
    let owned = |v: Vec<CowArray<'a, T, Ix2>>| v.into_iter().map(|a| a.into_owned()).collect();
    let outputs = owned(take(&mut live.x, Op::MlpBiasResidual, tensors::Y)?);
    let grad_inputs = if options.backward && cfg.layers > 0 {
        owned(take(&mut live.dy, Op::Ln1Bwd, tensors::DX)?)
    } else {
        (0..tp)
            .map(|r| rows_of(cfg, grad_output, r).to_owned())
            .collect()
    };
    Ok(ShardedRun {
        outputs,
        grad_inputs,
        grads,
        token_rows: (0..tp).map(|r| cfg.token_rows(r)).collect(),
        saved_elements_per_rank,
        collectives: ex.collectives,
        issued: ex.issued,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Preset;

    fn tiny(
        tp: usize,
        sequence_parallel: bool,
    ) -> (Config, Model<f64>, Vec<Vec<LayerParams<f64>>>) {
        let cfg = Config {
            tp,
            layers: 2,
            sequence_parallel,
            ..Preset::Tiny.config()
        };
        let model = Model::<f64>::random(&cfg);
        let shards = ShardPlan::new(&cfg).shard_model(&model);
        (cfg, model, shards)
    }

    /// The shared arms of the attention and MLP halves name the tensor of their own half: a
    /// program missing fc2 fails at `mlp.g` naming `M` (not attention's `Z`), one missing the
    /// QKV backward at `attn.f.bwd` naming `dH1` (not the MLP's `dH2`).
    #[test]
    fn the_shared_arms_name_their_own_halfs_tensor() {
        let (cfg, model, shards) = tiny(2, false);
        for (cut, op, tensor, word) in [
            (Op::Fc2, Op::MlpG, tensors::M, "M"),
            (Op::QkvBwd, Op::AttnFBwd, tensors::DH1, "dH1"),
            (Op::AttnOut, Op::AttnG, tensors::Z, "Z"),
            (Op::Fc1Bwd, Op::MlpFBwd, tensors::DH2, "dH2"),
        ] {
            let mut program = crate::block::program::schedule(&cfg);
            program.events.retain(|e| e.op != cut);
            let err = walk(
                &cfg,
                &program,
                &shards,
                &model.input,
                &model.grad_output,
                Options::default(),
                &Exact,
            )
            .err();
            assert_eq!(err, Some(CollectiveError::ProgramOrder { op, tensor }));
            let message = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(message.contains(&format!(" {word}:")), "{message}");
        }
    }

    /// The walk executes the program it is given, not a list of its own: a program missing
    /// LayerNorm 1 fails at the first op that reads its output, naming both, and a program
    /// whose backward is cut off yields no gradients for the cut layers.
    #[test]
    fn the_walk_follows_the_program_it_is_given() {
        let (cfg, model, shards) = tiny(2, false);
        let opts = Options::default();
        let mut program = crate::block::program::schedule(&cfg);
        program.events.retain(|e| e.op != Op::Ln1);
        let err = walk(
            &cfg,
            &program,
            &shards,
            &model.input,
            &model.grad_output,
            opts,
            &Exact,
        )
        .err();
        assert_eq!(
            err,
            Some(CollectiveError::ProgramOrder {
                op: Op::AttnF,
                tensor: tensors::H1,
            })
        );
        let message = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains("attn.f") && message.contains("H1"),
            "{message}"
        );

        // Forward only: exactly the program's forward events, and the same output as a full run.
        let full = run_on_shards(&cfg, &shards, &model.input, &model.grad_output, opts);
        let fwd = run_on_shards(
            &cfg,
            &shards,
            &model.input,
            &model.grad_output,
            Options {
                backward: false,
                record_collectives: false,
            },
        );
        let (Ok(full), Ok(fwd)) = (full, fwd) else {
            panic!("the tiny config runs");
        };
        let program = crate::block::program::schedule(&cfg);
        let forward: Vec<_> = program
            .events
            .iter()
            .filter(|e| e.pass == Pass::Forward)
            .map(|e| (e.layer, e.op, e.ranks.clone()))
            .collect();
        let issued: Vec<_> = fwd
            .issued
            .iter()
            .map(|i| (i.layer, i.op, i.ranks.clone()))
            .collect();
        assert_eq!(issued, forward);
        assert_eq!(fwd.outputs, full.outputs);
        assert_eq!(fwd.saved_elements_per_rank, full.saved_elements_per_rank);
        assert!(fwd.grads.iter().all(|g| g.is_empty()));
    }

    /// The fused passes (a bias-and-residual pass with the LayerNorm after it, a LayerNorm
    /// backward with the bias gradient after it, also across the two blocks of a 2-layer stack)
    /// change nothing: a hook that keeps every op separate (it may round, so nothing is fused)
    /// but rounds nothing gives the same outputs and gradients bit for bit, and the same events.
    #[test]
    fn fused_passes_change_nothing() {
        struct Separate;
        impl Rounding<f64> for Separate {}
        for sp in [false, true] {
            let (cfg, model, shards) = tiny(2, sp);
            let (x, dy, opts) = (&model.input, &model.grad_output, Options::default());
            let fused = run_on_shards_with(&cfg, &shards, x, dy, opts, &Exact);
            let separate = run_on_shards_with(&cfg, &shards, x, dy, opts, &Separate);
            let (Ok(fused), Ok(separate)) = (fused, separate) else {
                panic!("the tiny config runs");
            };
            assert_eq!(fused.outputs, separate.outputs, "sp={sp}");
            assert_eq!(fused.grad_inputs, separate.grad_inputs, "sp={sp}");
            assert_eq!(fused.issued, separate.issued, "sp={sp}");
            for (a, b) in fused
                .grads
                .iter()
                .flatten()
                .zip(separate.grads.iter().flatten())
            {
                for k in crate::params::ParamKind::ALL {
                    assert_eq!(a.get(k), b.get(k), "{k:?} sp={sp}");
                }
            }
        }
    }

    /// Every gradient the walk returns has its parameter's shard shape (none is left 0×0), with
    /// and without sequence parallelism.
    #[test]
    fn every_gradient_is_written() {
        for sp in [false, true] {
            let (cfg, model, shards) = tiny(4, sp);
            let run = run_on_shards(
                &cfg,
                &shards,
                &model.input,
                &model.grad_output,
                Options::default(),
            );
            let Ok(run) = run else {
                panic!("the tiny config runs");
            };
            for (g, p) in run.grads.iter().flatten().zip(shards.iter().flatten()) {
                for k in crate::params::ParamKind::ALL {
                    assert_eq!(g.get(k).dim(), p.get(k).dim(), "{k:?} sp={sp}");
                }
            }
        }
    }
}
