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

use crate::collectives::{self, CollectiveError};
use crate::config::Config;
use crate::dtype::Element;
use crate::ops::{self, AttnCache, LnCache};
use crate::params::{LayerParams, Model};
use crate::plan::ShardPlan;
use crate::trace::Pass;
use ndarray::Array2;
use rayon::prelude::*;

/// One event the executor issued (compared against the trace's order in tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    pub layer: usize,
    pub pass: Pass,
    pub name: &'static str,
    pub ranks: Vec<usize>,
}

/// One all-reduce: every rank's partial input and the reduced result (rank 0's copy; the
/// executor checks that every rank ended with the same values).
#[derive(Debug, Clone)]
pub struct CollectiveRecord<T> {
    pub layer: usize,
    pub pass: Pass,
    pub name: &'static str,
    pub partials: Vec<Array2<T>>,
    pub result: Array2<T>,
    /// Largest difference between ranks' results (0 for every algorithm here: each rank receives
    /// the same reduced chunks).
    pub max_rank_disagreement: f64,
}

/// What a sharded run produces.
#[derive(Debug, Clone)]
pub struct ShardedRun<T> {
    /// Each rank's copy of the block stack's output (replicated after the last `g`).
    pub outputs: Vec<Array2<T>>,
    /// Each rank's copy of the input gradient (replicated after the last `f`).
    pub grad_inputs: Vec<Array2<T>>,
    /// Each rank's parameter-shard gradients, `[rank][layer]`.
    pub grads: Vec<Vec<LayerParams<T>>>,
    pub collectives: Vec<CollectiveRecord<T>>,
    pub issued: Vec<Issued>,
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
    issued: Vec<Issued>,
    collectives: Vec<CollectiveRecord<T>>,
    layer: usize,
    pass: Pass,
    record: bool,
}

impl<T: Element> Exec<'_, T> {
    /// Runs `f` on every rank (ranks in parallel on the thread pool, like GPUs running
    /// concurrently) and records the event.
    fn op<R: Send>(&mut self, name: &'static str, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
        for r in 0..self.cfg.tp {
            self.issued.push(Issued {
                layer: self.layer,
                pass: self.pass,
                name,
                ranks: vec![r],
            });
        }
        (0..self.cfg.tp).into_par_iter().map(f).collect()
    }

    /// A conjugate operator's identity side: no data moves.
    fn identity(&mut self, name: &'static str) {
        self.issued.push(Issued {
            layer: self.layer,
            pass: self.pass,
            name,
            ranks: (0..self.cfg.tp).collect(),
        });
    }

    /// All-reduce of every rank's `[t, h]` partial; returns each rank's copy of the sum.
    fn all_reduce(
        &mut self,
        name: &'static str,
        partials: Vec<Array2<T>>,
    ) -> Result<Vec<Array2<T>>, CollectiveError> {
        self.issued.push(Issued {
            layer: self.layer,
            pass: self.pass,
            name,
            ranks: (0..self.cfg.tp).collect(),
        });
        let dim = partials[0].dim();
        let kept = if self.record {
            partials.clone()
        } else {
            Vec::new()
        };
        let mut bufs: Vec<Vec<T>> = partials
            .into_iter()
            .map(|p| {
                if p.is_standard_layout() {
                    p.into_raw_vec_and_offset().0
                } else {
                    p.iter().copied().collect()
                }
            })
            .collect();
        collectives::all_reduce_in_place(&mut bufs, self.cfg.algorithm)?;
        let results: Vec<Array2<T>> = bufs
            .into_iter()
            .map(|v| Array2::from_shape_vec(dim, v))
            .collect::<Result<_, _>>()
            .map_err(|_| CollectiveError::LengthMismatch {
                rank: 0,
                expected: dim.0 * dim.1,
                found: 0,
            })?;
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
                name,
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
// Layers index `[rank][layer]` tables inside per-rank closures, so the loops count layers.
#[allow(clippy::needless_range_loop)]
pub fn run_on_shards<T: Element>(
    cfg: &Config,
    shards: &[Vec<LayerParams<T>>],
    input: &Array2<T>,
    grad_output: &Array2<T>,
    options: Options,
) -> Result<ShardedRun<T>, CollectiveError> {
    let tp = cfg.tp;
    let (b, s) = (cfg.batch, cfg.seq);
    let hp = cfg.heads_per_rank();
    let mut ex = Exec {
        cfg,
        issued: Vec::new(),
        collectives: Vec::new(),
        layer: 0,
        pass: Pass::Forward,
        record: options.record_collectives,
    };
    let mut x: Vec<Array2<T>> = vec![input.clone(); tp];
    let mut caches: Vec<Vec<RankCache<T>>> = Vec::with_capacity(cfg.layers);
    for layer in 0..cfg.layers {
        ex.layer = layer;
        ex.pass = Pass::Forward;
        let p = |r: usize| &shards[r][layer];
        let ln1 = ex.op("ln1", |r| {
            ops::layer_norm(x[r].view(), p(r).ln1_w.view(), p(r).ln1_b.view())
        });
        ex.identity("attn.f");
        let qkv = ex.op("attn.qkv", |r| {
            let mut y = ops::matmul(ln1[r].0.view(), p(r).qkv_w.view());
            ops::add_row(&mut y, p(r).qkv_b.view());
            y
        });
        let attn = ex.op("attn.core", |r| {
            ops::attention(qkv[r].view(), b, s, hp, ops::matmul)
        });
        let part = ex.op("attn.out", |r| {
            ops::matmul(attn[r].0.view(), p(r).out_w.view())
        });
        let reduced = ex.all_reduce("attn.g", part)?;
        let x1 = ex.op("attn.bias_residual", |r| {
            let mut y = &x[r] + &reduced[r];
            ops::add_row(&mut y, p(r).out_b.view());
            y
        });
        let ln2 = ex.op("ln2", |r| {
            ops::layer_norm(x1[r].view(), p(r).ln2_w.view(), p(r).ln2_b.view())
        });
        ex.identity("mlp.f");
        let fc1 = ex.op("mlp.fc1", |r| {
            let mut y = ops::matmul(ln2[r].0.view(), p(r).fc1_w.view());
            ops::add_row(&mut y, p(r).fc1_b.view());
            y
        });
        let act = ex.op("mlp.gelu", |r| ops::gelu(fc1[r].view()));
        let part = ex.op("mlp.fc2", |r| ops::matmul(act[r].view(), p(r).fc2_w.view()));
        let reduced = ex.all_reduce("mlp.g", part)?;
        let y = ex.op("mlp.bias_residual", |r| {
            let mut y = &x1[r] + &reduced[r];
            ops::add_row(&mut y, p(r).fc2_b.view());
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

    let mut dy: Vec<Array2<T>> = vec![grad_output.clone(); tp];
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
        let db2 = ex.op("mlp.bias_residual.bwd", |r| ops::col_sum(dy[r].view()));
        ex.identity("mlp.g.bwd");
        let fc2 = ex.op("mlp.fc2.bwd", |r| {
            let dw = ops::matmul(c[r].act.t(), dy[r].view());
            let dact = ops::matmul(dy[r].view(), p(r).fc2_w.t());
            (dw, dact)
        });
        let dfc1 = ex.op("mlp.gelu.bwd", |r| {
            ops::gelu_backward(c[r].fc1.view(), fc2[r].1.view())
        });
        let fc1 = ex.op("mlp.fc1.bwd", |r| {
            let dw = ops::matmul(c[r].ln2.t(), dfc1[r].view());
            let db = ops::col_sum(dfc1[r].view());
            let dx = ops::matmul(dfc1[r].view(), p(r).fc1_w.t());
            (dw, db, dx)
        });
        let d_ln2 = ex.all_reduce("mlp.f.bwd", fc1.iter().map(|t| t.2.clone()).collect())?;
        let ln2 = ex.op("ln2.bwd", |r| {
            let (dx, dg, db) =
                ops::layer_norm_backward(d_ln2[r].view(), &c[r].ln2_cache, p(r).ln2_w.view());
            (&dy[r] + &dx, dg, db)
        });
        let dbo = ex.op("attn.bias_residual.bwd", |r| ops::col_sum(ln2[r].0.view()));
        ex.identity("attn.g.bwd");
        let out = ex.op("attn.out.bwd", |r| {
            let dw = ops::matmul(c[r].ctx.t(), ln2[r].0.view());
            let dctx = ops::matmul(ln2[r].0.view(), p(r).out_w.t());
            (dw, dctx)
        });
        let dqkv = ex.op("attn.core.bwd", |r| {
            ops::attention_backward(
                c[r].qkv.view(),
                &c[r].attn_cache,
                out[r].1.view(),
                b,
                s,
                hp,
                ops::matmul,
            )
        });
        let qkv = ex.op("attn.qkv.bwd", |r| {
            let dw = ops::matmul(c[r].ln1.t(), dqkv[r].view());
            let db = ops::col_sum(dqkv[r].view());
            let dx = ops::matmul(dqkv[r].view(), p(r).qkv_w.t());
            (dw, db, dx)
        });
        let d_ln1 = ex.all_reduce("attn.f.bwd", qkv.iter().map(|t| t.2.clone()).collect())?;
        let ln1 = ex.op("ln1.bwd", |r| {
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
        dy = ln1.into_iter().map(|t| t.0).collect();
    }
    Ok(ShardedRun {
        outputs,
        grad_inputs: dy,
        grads,
        collectives: ex.collectives,
        issued: ex.issued,
    })
}
