//! The block program: [`schedule`] writes out, for one configuration, every op and collective a
//! Megatron-style tensor-parallel forward and backward pass issues, in issue order, with each
//! tensor's placement on every rank ([`crate::block::placement`]), its shapes, FLOPs and bytes —
//! the [`Trace`] every executor walks, the views draw and the exports write.
//!
//! Per block, forward: `ln1, f, qkv, attn.core, attn.out, g (all-reduce), bias+residual, ln2, f,
//! fc1, gelu, fc2, g (all-reduce), bias+residual`. Backward mirrors it; there `g` is the identity
//! and `f` is the all-reduce. So each block issues two all-reduces forward and two backward.

use crate::block::op::Op;
use crate::block::placement::{Placement, TensorPlacement};
use crate::block::plan::ShardPlan;
use crate::block::tensor::TensorName;
use crate::block::work::{self, Work};
use crate::collectives::{Algorithm, CollectiveKind};
use crate::config::Config;
use crate::params::ParamKind;
use crate::{
    block::op::Parallel,
    block::op::Pass,
    trace::{proportional_duration_s, Event, EventKind, TimeSource, Timing, Trace},
};

/// Bytes per element used by the trace's byte counts.
fn elem_bytes(cfg: &Config) -> u64 {
    cfg.dtype.size_bytes() as u64
}

/// What each rank holds of a tensor, independent of the rank: resolved per rank by
/// [`Builder::place`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Every rank holds it all.
    Whole,
    /// Every rank holds a full-shape term of a sum.
    Partial,
    /// The token rows: the rank's rows with sequence parallelism, else all of them.
    Tokens,
    /// A parameter, as the shard plan splits it.
    Param(ParamKind),
    /// A parameter's gradient: as the parameter, except that a replicated vector's gradient is a
    /// partial sum over the ranks' token rows with sequence parallelism (until `sp.grads`).
    Grad(ParamKind),
    /// An activation whose columns follow a parameter's split: a column-parallel weight's columns,
    /// or a row-parallel weight's rows (the attention context's columns are `W_out`'s rows).
    ColsOf(ParamKind),
}

/// A tensor an op reads or writes: its name, global shape and what each rank holds.
#[derive(Debug, Clone)]
struct Tn {
    name: TensorName,
    shape: [usize; 2],
    hold: Hold,
}

fn tn(name: TensorName, shape: [usize; 2], hold: Hold) -> Tn {
    Tn { name, shape, hold }
}

/// The costs of a collective of `kind` by `algorithm` over `n` ranks on a buffer of `elems`
/// elements of `elem_bytes` bytes, from the collectives module's plan: (steps, bytes the busiest
/// rank sends, additions each rank does). All-gather: `elems` is the gathered size.
pub fn collective_costs(
    kind: CollectiveKind,
    algorithm: Algorithm,
    n: usize,
    elems: u64,
    elem_bytes: u64,
) -> (usize, u64, u64) {
    let payload = elems.saturating_mul(elem_bytes);
    // Each rank ends up adding n-1 partial buffers' worth of its 1/n share in total (spread over
    // steps for ring): the same count for every algorithm.
    let reduced = if n > 1 {
        elems.saturating_mul(n as u64 - 1) / n as u64
    } else {
        0
    };
    match kind {
        CollectiveKind::Identity => (0, 0, 0),
        _ => (
            crate::collectives::collective_step_count(kind, algorithm, n).unwrap_or(0),
            crate::collectives::collective_max_bytes_sent_per_rank(kind, algorithm, n, payload)
                .unwrap_or(0),
            if matches!(
                kind,
                CollectiveKind::AllReduce | CollectiveKind::ReduceScatter
            ) {
                reduced
            } else {
                0
            },
        ),
    }
}

struct Builder<'a> {
    cfg: &'a Config,
    plan: ShardPlan,
    sp: bool,
    events: Vec<Event>,
    layer: usize,
    pass: Pass,
}

impl Builder<'_> {
    /// What rank `r` holds under `hold`.
    fn place(&self, hold: Hold, r: usize) -> Placement {
        match hold {
            Hold::Whole => Placement::Replicate,
            Hold::Partial => Placement::Partial,
            Hold::Tokens if self.sp => Placement::shard(0, self.cfg.token_rows(r)),
            Hold::Tokens => Placement::Replicate,
            Hold::Grad(kind)
                if self.sp && self.plan.param(kind).parallel == Parallel::Replicated =>
            {
                Placement::Partial
            }
            Hold::Param(kind) | Hold::Grad(kind) => self.plan.placement(kind, r),
            Hold::ColsOf(kind) => self.plan.columns_of(kind, r),
        }
    }

    fn resolve(&self, tensors: &[Tn], ranks: &[usize]) -> Vec<TensorPlacement> {
        tensors
            .iter()
            .map(|t| TensorPlacement {
                tensor: t.name,
                shape: t.shape,
                per_rank: ranks.iter().map(|&r| self.place(t.hold, r)).collect(),
            })
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn compute(
        &mut self,
        op: Op,
        parallel: Parallel,
        inputs: Vec<[usize; 2]>,
        output: [usize; 2],
        work: Work,
        reads: &[Tn],
        writes: &[Tn],
    ) {
        let Some(compute) = op.compute() else {
            return;
        };
        for rank in 0..self.cfg.tp {
            let (reads, writes) = (self.resolve(reads, &[rank]), self.resolve(writes, &[rank]));
            let (layer, pass, index) = (self.layer, self.pass, self.events.len());
            self.events.push(compute_event(
                self.cfg,
                (index, layer, pass, op),
                EventKind::Compute {
                    op: compute,
                    parallel,
                },
                rank,
                (inputs.clone(), output),
                work,
                reads,
                writes,
            ));
        }
    }

    /// A collective over all `tp` ranks that changes `tensor` from `from` to `to`.
    fn collective(&mut self, op: Op, kind: CollectiveKind, tensor: Tn, to: Hold) {
        self.collective_over(op, kind, (0..self.cfg.tp).collect(), &[tensor], to);
    }

    /// A collective over the group `ranks` (all of them, or the copies of one replicated KV
    /// head) that changes each of `tensors` to `to`. Shapes, bytes and FLOPs are the first
    /// tensor's, or all of them packed into one buffer when there are several.
    fn collective_over(
        &mut self,
        op: Op,
        kind: CollectiveKind,
        ranks: Vec<usize>,
        tensors: &[Tn],
        to: Hold,
    ) {
        let reads = self.resolve(tensors, &ranks);
        let moved: Vec<Tn> = tensors
            .iter()
            .map(|t| Tn {
                hold: to,
                ..t.clone()
            })
            .collect();
        let writes = self.resolve(&moved, &ranks);
        let shapes: Vec<[usize; 2]> = tensors.iter().map(|t| t.shape).collect();
        let (layer, pass, index) = (self.layer, self.pass, self.events.len());
        self.events.push(collective_event(
            self.cfg, index, layer, pass, op, kind, ranks, &shapes, reads, writes,
        ));
    }
}

/// The trace event of a compute op on `rank`: `at` is (index, layer, pass, op), `shapes` its
/// local input shapes and output shape, `work` its FLOPs and elements touched. Megatron's
/// schedule and a learner's plan's trace write their compute events with it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn compute_event(
    cfg: &Config,
    (index, layer, pass, op): (usize, usize, Pass, Op),
    kind: EventKind,
    rank: usize,
    (inputs, output): (Vec<[usize; 2]>, [usize; 2]),
    work: Work,
    reads: Vec<TensorPlacement>,
    writes: Vec<TensorPlacement>,
) -> Event {
    Event {
        index,
        layer,
        pass,
        op,
        kind,
        ranks: vec![rank],
        inputs,
        output,
        flops: work.flops,
        bytes: work.elems * elem_bytes(cfg),
        bytes_sent_per_rank: 0,
        conjugate: None,
        reads,
        writes,
        timing: Timing::default(),
        measured: None,
    }
}

/// The trace event of a collective `op` of `kind` over the group `ranks` on tensors of global
/// `shapes` (packed into one buffer when there are several), reading and writing the given
/// placements: its algorithm (the configured one; sequence parallelism's rule for gathers and
/// scatters), steps, bytes and additions from the collectives module's schedule, and the
/// buffer each rank starts from and ends with. Megatron's schedule and a learner's plan's trace
/// ([`crate::block::design::trace`]) both write their collectives with it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn collective_event(
    cfg: &Config,
    index: usize,
    layer: usize,
    pass: Pass,
    op: Op,
    kind: CollectiveKind,
    ranks: Vec<usize>,
    shapes: &[[usize; 2]],
    reads: Vec<TensorPlacement>,
    writes: Vec<TensorPlacement>,
) -> Event {
    let n = ranks.len();
    let algorithm = match kind {
        CollectiveKind::AllGather | CollectiveKind::ReduceScatter => gather_scatter_algorithm(cfg),
        _ => cfg.algorithm,
    };
    let shape = match shapes {
        [one] => *one,
        many => [1, many.iter().map(|s| s[0] * s[1]).sum()],
    };
    let elems = (shape[0] * shape[1]) as u64;
    let (steps, sent, flops) = collective_costs(kind, algorithm, n, elems, elem_bytes(cfg));
    // `shape` is the full `[t, h]` buffer; a reduce-scatter leaves, and an all-gather starts
    // from, each rank's `1/n` of its rows.
    let part = [shape[0] / n.max(1), shape[1]];
    let (input, output) = match kind {
        CollectiveKind::AllGather => (part, shape),
        CollectiveKind::ReduceScatter => (shape, part),
        _ => (shape, shape),
    };
    Event {
        index,
        layer,
        pass,
        op,
        kind: EventKind::Collective {
            kind,
            algorithm,
            steps,
        },
        ranks,
        inputs: vec![input],
        output,
        flops,
        bytes: elems * elem_bytes(cfg),
        bytes_sent_per_rank: sent,
        conjugate: op.conjugate(),
        reads,
        writes,
        timing: Timing::default(),
        measured: None,
    }
}

/// The algorithm of sequence parallelism's all-gathers and reduce-scatters: the configured one
/// when it has such a schedule for the group (ring, direct, halving/doubling on a power of two),
/// else ring.
pub fn gather_scatter_algorithm(cfg: &Config) -> Algorithm {
    let ok = |kind| crate::collectives::collective_step_count(kind, cfg.algorithm, cfg.tp).is_ok();
    if ok(CollectiveKind::AllGather) && ok(CollectiveKind::ReduceScatter) {
        cfg.algorithm
    } else {
        Algorithm::Ring
    }
}

/// Vectors of width `h` whose gradients sequence parallelism all-reduces after each layer's
/// backward: ln1 and ln2 weight and bias, and the out-proj and fc2 biases.
pub const SP_GRAD_VECTORS: usize = 6;

/// The tensor names of the block program (the same in every layer). Activations are named as
/// in Megatron-LM's paper: `X` the block input, `H1 = LN1(X)`, `Z` the attention output, `X1`
/// the residual stream after attention, `H2 = LN2(X1)`, `A = H2·W1`, `U = GeLU(A)`, `M = U·W2`,
/// `Y` the block output; `dT` is the gradient of `T` ([`TensorName`]).
pub mod tensors {
    use crate::block::tensor::{Activation as Act, TensorName};
    pub const X: TensorName = TensorName::Act(Act::X);
    pub const H1: TensorName = TensorName::Act(Act::H1);
    pub const QKV: TensorName = TensorName::Act(Act::Qkv);
    pub const CTX: TensorName = TensorName::Act(Act::Ctx);
    pub const Z: TensorName = TensorName::Act(Act::Z);
    pub const X1: TensorName = TensorName::Act(Act::X1);
    pub const H2: TensorName = TensorName::Act(Act::H2);
    pub const A: TensorName = TensorName::Act(Act::A);
    pub const U: TensorName = TensorName::Act(Act::U);
    pub const M: TensorName = TensorName::Act(Act::M);
    pub const Y: TensorName = TensorName::Act(Act::Y);
    pub const DY: TensorName = TensorName::Grad(Act::Y);
    pub const DU: TensorName = TensorName::Grad(Act::U);
    pub const DA: TensorName = TensorName::Grad(Act::A);
    pub const DH2: TensorName = TensorName::Grad(Act::H2);
    pub const DX1: TensorName = TensorName::Grad(Act::X1);
    pub const DCTX: TensorName = TensorName::Grad(Act::Ctx);
    pub const DQKV: TensorName = TensorName::Grad(Act::Qkv);
    pub const DH1: TensorName = TensorName::Grad(Act::H1);
    pub const DX: TensorName = TensorName::Grad(Act::X);
    /// The K and V columns of the QKV gradients that replicated KV heads sum within their group.
    pub const DKV: TensorName = TensorName::KvGrad;
}

/// The events of a forward and backward pass of `cfg`, in issue order, with proportional times.
pub fn schedule(cfg: &Config) -> Trace {
    use tensors::*;
    use ParamKind as P;
    let tp = cfg.tp.max(1);
    let sp = cfg.sequence_parallel && tp > 1;
    let mut b = Builder {
        cfg,
        plan: ShardPlan::new(cfg),
        sp,
        events: Vec::new(),
        layer: 0,
        pass: Pass::Forward,
    };
    let (t, h, f) = (cfg.tokens(), cfg.hidden, cfg.ffn);
    let (hr, fr) = (h / tp, f / tp); // attention width and FFN width per rank
    let (bt, s, hp, d) = (cfg.batch, cfg.seq, cfg.heads / tp, cfg.head_dim());
    // QKV columns per rank: its query heads plus its (possibly replicated) KV heads; `3·hr`
    // without grouped-query attention.
    let qc = cfg.qkv_cols_per_rank();
    let qw = cfg.qkv_width();
    let (t64, h64, hr64, fr64) = (t as u64, h as u64, hr as u64, fr as u64);
    let qc64 = qc as u64;
    // Sequence parallelism: LayerNorm, bias and residual work on `tl` of the `t` token rows.
    let tl = if sp { t / tp } else { t };
    let tl64 = tl as u64;
    let rows = if sp {
        Parallel::Sequence
    } else {
        Parallel::Replicated
    };
    let (enter, exit) = if sp {
        (CollectiveKind::AllGather, CollectiveKind::ReduceScatter)
    } else {
        (CollectiveKind::Identity, CollectiveKind::AllReduce)
    };
    let (tok, whole, partial) = (Hold::Tokens, Hold::Whole, Hold::Partial);
    let param = |k: P| Tn {
        name: TensorName::Param(k),
        shape: k.shape(cfg),
        hold: Hold::Param(k),
    };
    let grad = |k: P| Tn {
        name: TensorName::ParamGrad(k),
        shape: k.shape(cfg),
        hold: Hold::Grad(k),
    };
    let act = |name: TensorName, shape: [usize; 2], hold: Hold| tn(name, shape, hold);
    // FLOPs of the full s×s score matrix per head: what the GPU executor computes (the CPU kernel
    // skips the masked blocks above the diagonal, about half at long sequences).
    let attn_flops = work::attention_flops((bt * hp) as u64, (s * s) as u64, d as u64);
    let attn_elems = (t * qc + t * hr + 2 * bt * hp * s * s) as u64;
    let qkv_cols = Hold::ColsOf(P::QkvWeight);
    let ctx_cols = Hold::ColsOf(P::OutWeight);
    let ffn_cols = Hold::ColsOf(P::Fc1Weight);

    for layer in 0..cfg.layers {
        b.layer = layer;
        b.pass = Pass::Forward;
        let x = [t, h];
        let xl = [tl, h];
        b.compute(
            Op::Ln1,
            rows,
            vec![xl, [1, h]],
            xl,
            work::layer_norm(tl64, h64),
            &[act(X, x, tok), param(P::Ln1Weight), param(P::Ln1Bias)],
            &[act(H1, x, tok)],
        );
        b.collective(Op::AttnF, enter, act(H1, x, tok), whole);
        b.compute(
            Op::Qkv,
            Parallel::Column,
            vec![x, [h, qc]],
            [t, qc],
            work::linear(t64, h64, qc64, true),
            &[act(H1, x, whole), param(P::QkvWeight), param(P::QkvBias)],
            &[act(QKV, [t, qw], qkv_cols)],
        );
        b.compute(
            Op::AttnCore,
            Parallel::Local,
            vec![[t, qc]],
            [t, hr],
            Work {
                flops: attn_flops,
                elems: attn_elems,
            },
            &[act(QKV, [t, qw], qkv_cols)],
            &[act(CTX, x, ctx_cols)],
        );
        b.compute(
            Op::AttnOut,
            Parallel::Row,
            vec![[t, hr], [hr, h]],
            x,
            work::linear(t64, hr64, h64, false),
            &[act(CTX, x, ctx_cols), param(P::OutWeight)],
            &[act(Z, x, partial)],
        );
        b.collective(Op::AttnG, exit, act(Z, x, partial), tok);
        b.compute(
            Op::AttnBiasResidual,
            rows,
            vec![xl, xl, [1, h]],
            xl,
            work::bias_residual(tl64, h64),
            &[act(X, x, tok), act(Z, x, tok), param(P::OutBias)],
            &[act(X1, x, tok)],
        );
        b.compute(
            Op::Ln2,
            rows,
            vec![xl, [1, h]],
            xl,
            work::layer_norm(tl64, h64),
            &[act(X1, x, tok), param(P::Ln2Weight), param(P::Ln2Bias)],
            &[act(H2, x, tok)],
        );
        b.collective(Op::MlpF, enter, act(H2, x, tok), whole);
        b.compute(
            Op::Fc1,
            Parallel::Column,
            vec![x, [h, fr]],
            [t, fr],
            work::linear(t64, h64, fr64, true),
            &[act(H2, x, whole), param(P::Fc1Weight), param(P::Fc1Bias)],
            &[act(A, [t, f], ffn_cols)],
        );
        b.compute(
            Op::Gelu,
            Parallel::Local,
            vec![[t, fr]],
            [t, fr],
            work::gelu(t64, fr64),
            &[act(A, [t, f], ffn_cols)],
            &[act(U, [t, f], ffn_cols)],
        );
        b.compute(
            Op::Fc2,
            Parallel::Row,
            vec![[t, fr], [fr, h]],
            x,
            work::linear(t64, fr64, h64, false),
            &[act(U, [t, f], ffn_cols), param(P::Fc2Weight)],
            &[act(M, x, partial)],
        );
        b.collective(Op::MlpG, exit, act(M, x, partial), tok);
        b.compute(
            Op::MlpBiasResidual,
            rows,
            vec![xl, xl, [1, h]],
            xl,
            work::bias_residual(tl64, h64),
            &[act(X1, x, tok), act(M, x, tok), param(P::Fc2Bias)],
            &[act(Y, x, tok)],
        );
    }
    for layer in (0..cfg.layers).rev() {
        b.layer = layer;
        b.pass = Pass::Backward;
        let x = [t, h];
        let xl = [tl, h];
        b.compute(
            Op::MlpBiasResidualBwd,
            rows,
            vec![xl],
            [1, h],
            work::bias_grad(tl64, h64),
            &[act(DY, x, tok)],
            &[grad(P::Fc2Bias)],
        );
        b.collective(Op::MlpGBwd, enter, act(DY, x, tok), whole);
        b.compute(
            Op::Fc2Bwd,
            Parallel::Row,
            vec![x, [t, fr], [fr, h]],
            [t, fr],
            work::linear_backward(t64, fr64, h64, false),
            &[
                act(DY, x, whole),
                act(U, [t, f], ffn_cols),
                param(P::Fc2Weight),
            ],
            &[act(DU, [t, f], ffn_cols), grad(P::Fc2Weight)],
        );
        b.compute(
            Op::GeluBwd,
            Parallel::Local,
            vec![[t, fr], [t, fr]],
            [t, fr],
            work::gelu_backward(t64, fr64),
            &[act(A, [t, f], ffn_cols), act(DU, [t, f], ffn_cols)],
            &[act(DA, [t, f], ffn_cols)],
        );
        if sp {
            // fc1's weight gradient needs LN2's whole output: gathered again rather than kept.
            b.collective(
                Op::MlpFBwdGather,
                CollectiveKind::AllGather,
                act(H2, x, tok),
                whole,
            );
        }
        b.compute(
            Op::Fc1Bwd,
            Parallel::Column,
            vec![[t, fr], x, [h, fr]],
            x,
            work::linear_backward(t64, h64, fr64, true),
            &[
                act(DA, [t, f], ffn_cols),
                act(H2, x, whole),
                param(P::Fc1Weight),
            ],
            &[act(DH2, x, partial), grad(P::Fc1Weight), grad(P::Fc1Bias)],
        );
        b.collective(Op::MlpFBwd, exit, act(DH2, x, partial), tok);
        b.compute(
            Op::Ln2Bwd,
            rows,
            vec![xl, xl, [1, h]],
            xl,
            work::layer_norm_backward(tl64, h64),
            &[
                act(DH2, x, tok),
                act(X1, x, tok),
                param(P::Ln2Weight),
                act(DY, x, tok),
            ],
            &[act(DX1, x, tok), grad(P::Ln2Weight), grad(P::Ln2Bias)],
        );
        b.compute(
            Op::AttnBiasResidualBwd,
            rows,
            vec![xl],
            [1, h],
            work::bias_grad(tl64, h64),
            &[act(DX1, x, tok)],
            &[grad(P::OutBias)],
        );
        b.collective(Op::AttnGBwd, enter, act(DX1, x, tok), whole);
        b.compute(
            Op::AttnOutBwd,
            Parallel::Row,
            vec![x, [t, hr], [hr, h]],
            [t, hr],
            work::linear_backward(t64, hr64, h64, false),
            &[
                act(DX1, x, whole),
                act(CTX, x, ctx_cols),
                param(P::OutWeight),
            ],
            &[act(DCTX, x, ctx_cols), grad(P::OutWeight)],
        );
        b.compute(
            Op::AttnCoreBwd,
            Parallel::Local,
            vec![[t, hr], [t, qc]],
            [t, qc],
            Work {
                flops: 2 * attn_flops,
                elems: 2 * attn_elems,
            },
            &[act(DCTX, x, ctx_cols), act(QKV, [t, qw], qkv_cols)],
            &[act(DQKV, [t, qw], qkv_cols)],
        );
        if sp {
            b.collective(
                Op::AttnFBwdGather,
                CollectiveKind::AllGather,
                act(H1, x, tok),
                whole,
            );
        }
        // Replicated KV heads: each copy's K/V gradient covers only its rank's query heads, a
        // partial sum over the copies.
        let kv_cols = qc - hr;
        let replicated = cfg.kv_replicas() > 1;
        let mut qkv_writes = vec![act(DH1, x, partial), grad(P::QkvWeight), grad(P::QkvBias)];
        if replicated {
            qkv_writes.push(act(DKV, [h + 1, kv_cols], partial));
        }
        b.compute(
            Op::QkvBwd,
            Parallel::Column,
            vec![[t, qc], x, [h, qc]],
            x,
            work::linear_backward(t64, h64, qc64, true),
            &[
                act(DQKV, [t, qw], qkv_cols),
                act(H1, x, whole),
                param(P::QkvWeight),
            ],
            &qkv_writes,
        );
        // Each group of copies all-reduces its K and V weight and bias gradients (the groups
        // are disjoint and run side by side).
        if replicated {
            for group in cfg.kv_replica_groups() {
                b.collective_over(
                    Op::KvGrads,
                    CollectiveKind::AllReduce,
                    group,
                    &[act(DKV, [h + 1, kv_cols], partial)],
                    whole,
                );
            }
        }
        b.collective(Op::AttnFBwd, exit, act(DH1, x, partial), tok);
        b.compute(
            Op::Ln1Bwd,
            rows,
            vec![xl, xl, [1, h]],
            xl,
            work::layer_norm_backward(tl64, h64),
            &[
                act(DH1, x, tok),
                act(X, x, tok),
                param(P::Ln1Weight),
                act(DX1, x, tok),
            ],
            &[act(DX, x, tok), grad(P::Ln1Weight), grad(P::Ln1Bias)],
        );
        if sp {
            // Each rank's LayerNorm and row-parallel-bias gradients cover only its token rows:
            // one all-reduce of the six small vectors (ln1, ln2 weight and bias; out, fc2 bias).
            let vectors = [
                P::Ln1Weight,
                P::Ln1Bias,
                P::Ln2Weight,
                P::Ln2Bias,
                P::OutBias,
                P::Fc2Bias,
            ]
            .map(grad);
            debug_assert_eq!(vectors.len(), SP_GRAD_VECTORS);
            b.collective_over(
                Op::SpGrads,
                CollectiveKind::AllReduce,
                (0..tp).collect(),
                &vectors,
                whole,
            );
        }
    }
    let mut trace = Trace {
        config: cfg.clone(),
        events: b.events,
        time_source: TimeSource::Proportional,
    };
    trace.assign_times(TimeSource::Proportional, proportional_duration_s);
    trace
}
