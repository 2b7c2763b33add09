//! The sharded executor: the same block on `tp` virtual GPUs, each holding only its shards.
//!
//! Every rank computes on its own copies; ranks meet only in collectives, which run through
//! [`crate::collectives`] with the configured algorithm. The executor issues exactly the events of
//! [`crate::trace::schedule`], in the same order (op by op, rank by rank), and records them so
//! that tests can check it. Per rank and block:
//!
//! ```text
//! forward:  x ─LN1─▶ f ─▶ [x·W_qkv,r + b_r] ─▶ attn(heads of r) ─▶ [ctx_r·W_out,r] ─▶ g(all-reduce) ─▶ +b_out +x
//!           x1 ─LN2─▶ f ─▶ [x·W_1,r + b_1,r] ─▶ GeLU ─▶ [·W_2,r] ─▶ g(all-reduce) ─▶ +b_2 +x1
//! backward: the mirror image; g is the identity and f all-reduces the LayerNorm-output gradients.
//! ```

use crate::block::Op;
use crate::collectives::{self, CollectiveError};
use crate::config::Config;
use crate::dtype::Element;
use crate::ops::{self, AttnCache, LnCache};
use crate::params::{LayerParams, Model};
use crate::plan::ShardPlan;
use crate::trace::Pass;
use ndarray::Array2;
use rayon::prelude::*;

/// A hook on the executor's forward pass: the precision lab rounds every op's output to a
/// 2-byte dtype and sums all-reduces in that dtype, on the same walk of the program rather than a
/// copy of it ([`crate::precision`]).
pub trait Rounding<T>: Sync {
    /// Called on the output each rank's forward op produces (before anything reads it).
    fn round(&self, _op: Op, _out: &mut Array2<T>) {}
    /// An all-reduce the hook sums itself, or `None` for the engine's collective.
    fn all_reduce(&self, _op: Op, _partials: &[Array2<T>]) -> Option<Array2<T>> {
        None
    }
}

/// No rounding: the executor as it is.
pub struct Exact;

impl<T> Rounding<T> for Exact {}

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
    /// [`crate::memory::config_memory`] models).
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

impl<T> RankCache<T> {
    /// Elements this cache holds.
    fn elements(&self) -> usize {
        self.ln1.len()
            + self.ln1_cache.xhat.len()
            + self.ln1_cache.rstd.len()
            + self.qkv.len()
            + self.attn_cache.probs.iter().map(|p| p.len()).sum::<usize>()
            + self.ctx.len()
            + self.ln2.len()
            + self.ln2_cache.xhat.len()
            + self.ln2_cache.rstd.len()
            + self.fc1.len()
            + self.act.len()
    }
}

struct RankCache<T> {
    ln1: Array2<T>,
    ln1_cache: LnCache<T>,
    qkv: Array2<T>,
    attn_cache: AttnCache<T>,
    ctx: Array2<T>,
    ln2: Array2<T>,
    ln2_cache: LnCache<T>,
    fc1: Array2<T>,
    act: Array2<T>,
}

struct Exec<'a, T> {
    cfg: &'a Config,
    hook: &'a dyn Rounding<T>,
    issued: Vec<Issued>,
    collectives: Vec<CollectiveRecord<T>>,
    layer: usize,
    pass: Pass,
    record: bool,
    /// Sequence parallelism is on (and `tp > 1`).
    sp: bool,
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

    /// Entering the tensor-parallel region: `f` forward (or `g` backward). Without sequence
    /// parallelism the identity (`None`: use the rank's own tensor); with it, an all-gather of
    /// every rank's token rows.
    fn enter(
        &mut self,
        op: Op,
        parts: impl FnOnce() -> Vec<Array2<T>>,
    ) -> Result<Option<Vec<Array2<T>>>, CollectiveError> {
        if self.sp {
            self.all_gather(op, parts()).map(Some)
        } else {
            self.identity(op);
            Ok(None)
        }
    }

    /// Leaving the tensor-parallel region: `g` forward (or `f` backward). Without sequence
    /// parallelism an all-reduce; with it, a reduce-scatter that leaves each rank its token rows
    /// of the sum.
    fn exit(
        &mut self,
        op: Op,
        partials: Vec<Array2<T>>,
    ) -> Result<Vec<Array2<T>>, CollectiveError> {
        if self.sp {
            self.reduce_scatter(op, partials)
        } else {
            self.all_reduce(op, partials)
        }
    }

    /// All-gather of every rank's `[t/tp, h]` rows into `[t, h]` on every rank.
    fn all_gather(
        &mut self,
        op: Op,
        parts: Vec<Array2<T>>,
    ) -> Result<Vec<Array2<T>>, CollectiveError> {
        self.issue_collective(op);
        let (rows, cols) = parts[0].dim();
        let n = parts.len();
        let algorithm = crate::trace::gather_scatter_algorithm(self.cfg);
        let out = collectives::all_gather(&to_bufs(parts), algorithm)?;
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
        let algorithm = crate::trace::gather_scatter_algorithm(self.cfg);
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

    /// Runs `f` on every rank (ranks in parallel on the thread pool, like GPUs running
    /// concurrently) and records the event.
    fn op<R: Send>(&mut self, op: Op, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
        for r in 0..self.cfg.tp {
            self.issued.push(Issued {
                layer: self.layer,
                pass: self.pass,
                op,
                ranks: vec![r],
            });
        }
        (0..self.cfg.tp).into_par_iter().map(f).collect()
    }

    /// A conjugate operator's identity side: no data moves.
    fn identity(&mut self, op: Op) {
        self.issue_collective(op);
    }

    /// Grouped-query attention with replicated KV heads: within each group of ranks holding the
    /// same KV head ([`Config::kv_replica_groups`]), all-reduce the K and V columns of the QKV
    /// weight and bias gradients (`attn.kv.grads`, one collective per group, groups side by side).
    #[allow(clippy::type_complexity)]
    fn kv_grads_all_reduce(
        &mut self,
        mut qkv: Vec<(Array2<T>, Array2<T>, Array2<T>)>,
    ) -> Result<Vec<(Array2<T>, Array2<T>, Array2<T>)>, CollectiveError> {
        let q_cols = self.cfg.heads_per_rank() * self.cfg.head_dim();
        for group in self.cfg.kv_replica_groups() {
            self.issued.push(Issued {
                layer: self.layer,
                pass: self.pass,
                op: Op::KvGrads,
                ranks: group.clone(),
            });
            let mut bufs: Vec<Vec<T>> = group
                .iter()
                .map(|&r| {
                    let (dw, db, _) = &qkv[r];
                    let kv = |m: &Array2<T>| {
                        m.slice(ndarray::s![.., q_cols..])
                            .iter()
                            .copied()
                            .collect::<Vec<T>>()
                    };
                    let mut v = kv(dw);
                    v.extend(kv(db));
                    v
                })
                .collect();
            collectives::all_reduce_in_place(&mut bufs, self.cfg.algorithm)?;
            for (&r, buf) in group.iter().zip(bufs) {
                let (dw, db, _) = &mut qkv[r];
                let mut it = buf.into_iter();
                dw.slice_mut(ndarray::s![.., q_cols..])
                    .iter_mut()
                    .chain(db.slice_mut(ndarray::s![.., q_cols..]).iter_mut())
                    .zip(it.by_ref())
                    .for_each(|(d, x)| *d = x);
            }
        }
        Ok(qkv)
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

/// [`run_on_shards`] with a [`Rounding`] hook on the forward pass.
// Layers index `[rank][layer]` tables inside per-rank closures, so the loops count layers.
#[allow(clippy::needless_range_loop)]
pub fn run_on_shards_with<T: Element>(
    cfg: &Config,
    shards: &[Vec<LayerParams<T>>],
    input: &Array2<T>,
    grad_output: &Array2<T>,
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
        sp: cfg.sequence_parallel && tp > 1,
    };
    let rows_of = |a: &Array2<T>, r: usize| a.slice(ndarray::s![cfg.token_rows(r), ..]).to_owned();
    let mut x: Vec<Array2<T>> = (0..tp).map(|r| rows_of(input, r)).collect();
    let mut caches: Vec<Vec<RankCache<T>>> = Vec::with_capacity(cfg.layers);
    for layer in 0..cfg.layers {
        ex.layer = layer;
        ex.pass = Pass::Forward;
        let p = |r: usize| &shards[r][layer];
        let ln1 = ex.op(Op::Ln1, |r| {
            let (mut y, c) = ops::layer_norm(x[r].view(), p(r).ln1_w.view(), p(r).ln1_b.view());
            hook.round(Op::Ln1, &mut y);
            (y, c)
        });
        let ln1_g = ex.enter(Op::AttnF, || ln1.iter().map(|l| l.0.clone()).collect())?;
        let qkv = ex.op(Op::Qkv, |r| {
            let ln1_in = ln1_g.as_ref().map_or(&ln1[r].0, |g| &g[r]);
            let mut y = ops::matmul(ln1_in.view(), p(r).qkv_w.view());
            ops::add_row(&mut y, p(r).qkv_b.view());
            hook.round(Op::Qkv, &mut y);
            y
        });
        let attn = ex.op(Op::AttnCore, |r| {
            let (mut ctx, c) = ops::attention(qkv[r].view(), b, s, hp, kvp, ops::matmul);
            hook.round(Op::AttnCore, &mut ctx);
            (ctx, c)
        });
        let part = ex.op(Op::AttnOut, |r| {
            let mut z = ops::matmul(attn[r].0.view(), p(r).out_w.view());
            hook.round(Op::AttnOut, &mut z);
            z
        });
        let reduced = ex.exit(Op::AttnG, part)?;
        let x1 = ex.op(Op::AttnBiasResidual, |r| {
            let mut y = &x[r] + &reduced[r];
            ops::add_row(&mut y, p(r).out_b.view());
            hook.round(Op::AttnBiasResidual, &mut y);
            y
        });
        let ln2 = ex.op(Op::Ln2, |r| {
            let (mut y, c) = ops::layer_norm(x1[r].view(), p(r).ln2_w.view(), p(r).ln2_b.view());
            hook.round(Op::Ln2, &mut y);
            (y, c)
        });
        drop(ln1_g);
        let ln2_g = ex.enter(Op::MlpF, || ln2.iter().map(|l| l.0.clone()).collect())?;
        let fc1 = ex.op(Op::Fc1, |r| {
            let ln2_in = ln2_g.as_ref().map_or(&ln2[r].0, |g| &g[r]);
            let mut y = ops::matmul(ln2_in.view(), p(r).fc1_w.view());
            ops::add_row(&mut y, p(r).fc1_b.view());
            hook.round(Op::Fc1, &mut y);
            y
        });
        let act = ex.op(Op::Gelu, |r| {
            let mut u = ops::gelu(fc1[r].view());
            hook.round(Op::Gelu, &mut u);
            u
        });
        let part = ex.op(Op::Fc2, |r| {
            let mut m = ops::matmul(act[r].view(), p(r).fc2_w.view());
            hook.round(Op::Fc2, &mut m);
            m
        });
        drop(ln2_g);
        let reduced = ex.exit(Op::MlpG, part)?;
        let y = ex.op(Op::MlpBiasResidual, |r| {
            let mut y = &x1[r] + &reduced[r];
            ops::add_row(&mut y, p(r).fc2_b.view());
            hook.round(Op::MlpBiasResidual, &mut y);
            y
        });
        let layer_cache = ln1
            .into_iter()
            .zip(qkv)
            .zip(attn)
            .zip(ln2)
            .zip(fc1)
            .zip(act)
            .map(|(((((l1, q), a), l2), f1), ac)| RankCache {
                ln1: l1.0,
                ln1_cache: l1.1,
                qkv: q,
                attn_cache: a.1,
                ctx: a.0,
                ln2: l2.0,
                ln2_cache: l2.1,
                fc1: f1,
                act: ac,
            })
            .collect();
        caches.push(layer_cache);
        x = y;
    }
    let outputs = x;
    let saved_elements_per_rank = (0..tp)
        .map(|r| caches.iter().map(|c| c[r].elements()).sum())
        .collect();

    let mut dy: Vec<Array2<T>> = (0..tp).map(|r| rows_of(grad_output, r)).collect();
    let layers_backward = if options.backward { cfg.layers } else { 0 };
    // Gradients start as copies of the shards (same shapes) and are overwritten layer by layer.
    let mut grads: Vec<Vec<LayerParams<T>>> = if options.backward {
        shards.to_vec()
    } else {
        vec![Vec::new(); tp]
    };
    for layer in (0..layers_backward).rev() {
        ex.layer = layer;
        ex.pass = Pass::Backward;
        let p = |r: usize| &shards[r][layer];
        let c = &caches[layer];
        let db2 = ex.op(Op::MlpBiasResidualBwd, |r| ops::col_sum(dy[r].view()));
        let dy_g = ex.enter(Op::MlpGBwd, || dy.clone())?;
        let fc2 = ex.op(Op::Fc2Bwd, |r| {
            let dy_in = dy_g.as_ref().map_or(&dy[r], |g| &g[r]);
            let dw = ops::matmul(c[r].act.t(), dy_in.view());
            let dact = ops::matmul(dy_in.view(), p(r).fc2_w.t());
            (dw, dact)
        });
        let dfc1 = ex.op(Op::GeluBwd, |r| {
            ops::gelu_backward(c[r].fc1.view(), fc2[r].1.view())
        });
        // With sequence parallelism only LN2's own rows were kept: gather them again.
        let ln2_full = if ex.sp {
            Some(ex.all_gather(Op::MlpFBwdGather, c.iter().map(|k| k.ln2.clone()).collect())?)
        } else {
            None
        };
        let fc1 = ex.op(Op::Fc1Bwd, |r| {
            let ln2_in = ln2_full.as_ref().map_or(&c[r].ln2, |g| &g[r]);
            let dw = ops::matmul(ln2_in.t(), dfc1[r].view());
            let db = ops::col_sum(dfc1[r].view());
            let dx = ops::matmul(dfc1[r].view(), p(r).fc1_w.t());
            (dw, db, dx)
        });
        let d_ln2 = ex.exit(Op::MlpFBwd, fc1.iter().map(|t| t.2.clone()).collect())?;
        let ln2 = ex.op(Op::Ln2Bwd, |r| {
            let (dx, dg, db) =
                ops::layer_norm_backward(d_ln2[r].view(), &c[r].ln2_cache, p(r).ln2_w.view());
            (&dy[r] + &dx, dg, db)
        });
        let dbo = ex.op(Op::AttnBiasResidualBwd, |r| ops::col_sum(ln2[r].0.view()));
        let dx1_g = ex.enter(Op::AttnGBwd, || ln2.iter().map(|t| t.0.clone()).collect())?;
        let out = ex.op(Op::AttnOutBwd, |r| {
            let dx1_in = dx1_g.as_ref().map_or(&ln2[r].0, |g| &g[r]);
            let dw = ops::matmul(c[r].ctx.t(), dx1_in.view());
            let dctx = ops::matmul(dx1_in.view(), p(r).out_w.t());
            (dw, dctx)
        });
        let dqkv = ex.op(Op::AttnCoreBwd, |r| {
            ops::attention_backward(
                c[r].qkv.view(),
                &c[r].attn_cache,
                out[r].1.view(),
                b,
                s,
                hp,
                kvp,
                ops::matmul,
            )
        });
        let ln1_full = if ex.sp {
            Some(ex.all_gather(
                Op::AttnFBwdGather,
                c.iter().map(|k| k.ln1.clone()).collect(),
            )?)
        } else {
            None
        };
        let qkv = ex.op(Op::QkvBwd, |r| {
            let ln1_in = ln1_full.as_ref().map_or(&c[r].ln1, |g| &g[r]);
            let dw = ops::matmul(ln1_in.t(), dqkv[r].view());
            let db = ops::col_sum(dqkv[r].view());
            let dx = ops::matmul(dqkv[r].view(), p(r).qkv_w.t());
            (dw, db, dx)
        });
        // Replicated KV heads (tp > kv): each copy's gradient covers only the rank's own query
        // heads; the copies' group sums them so that every copy gets the full gradient.
        let qkv = if cfg.kv_replicas() > 1 {
            ex.kv_grads_all_reduce(qkv)?
        } else {
            qkv
        };
        let d_ln1 = ex.exit(Op::AttnFBwd, qkv.iter().map(|t| t.2.clone()).collect())?;
        let ln1 = ex.op(Op::Ln1Bwd, |r| {
            let (dx, dg, db) =
                ops::layer_norm_backward(d_ln1[r].view(), &c[r].ln1_cache, p(r).ln1_w.view());
            (&ln2[r].0 + &dx, dg, db)
        });
        for r in 0..tp {
            let g = &mut grads[r][layer];
            g.fc2_b = db2[r].clone();
            g.fc2_w = fc2[r].0.clone();
            g.fc1_w = fc1[r].0.clone();
            g.fc1_b = fc1[r].1.clone();
            g.ln2_w = ln2[r].1.clone();
            g.ln2_b = ln2[r].2.clone();
            g.out_b = dbo[r].clone();
            g.out_w = out[r].0.clone();
            g.qkv_w = qkv[r].0.clone();
            g.qkv_b = qkv[r].1.clone();
            g.ln1_w = ln1[r].1.clone();
            g.ln1_b = ln1[r].2.clone();
        }
        if ex.sp {
            // Each rank's LayerNorm and row-parallel-bias gradients cover only its token rows.
            let packed: Vec<Array2<T>> = (0..tp)
                .map(|r| {
                    let g = &grads[r][layer];
                    let parts = [&g.ln1_w, &g.ln1_b, &g.ln2_w, &g.ln2_b, &g.out_b, &g.fc2_b];
                    let flat: Vec<T> = parts.iter().flat_map(|v| v.iter().copied()).collect();
                    let n = flat.len();
                    from_buf(1, n, flat)
                })
                .collect::<Result<_, _>>()?;
            let was_recording = std::mem::replace(&mut ex.record, false);
            let summed = ex.all_reduce(Op::SpGrads, packed)?;
            ex.record = was_recording;
            for (r, s) in summed.into_iter().enumerate() {
                let g = &mut grads[r][layer];
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
        }
        dy = ln1.into_iter().map(|t| t.0).collect();
    }
    Ok(ShardedRun {
        outputs,
        grad_inputs: dy,
        grads,
        token_rows: (0..tp).map(|r| cfg.token_rows(r)).collect(),
        saved_elements_per_rank,
        collectives: ex.collectives,
        issued: ex.issued,
    })
}
