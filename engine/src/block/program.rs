//! The block program: [`schedule`] is, for one configuration, every op and collective a
//! Megatron-style tensor-parallel forward and backward pass issues, in issue order, with each
//! tensor's placement on every rank ([`crate::block::placement`]), its shapes, FLOPs and bytes —
//! the [`Trace`] every executor walks, the views draw and the exports write. It is the trace of
//! Megatron's sharding plan as the rules propagate it ([`crate::block::design`]): nothing here
//! writes the block out by hand. This module keeps what every trace's events share: the costs
//! of a collective, the event constructors, the tensor names.
//!
//! Per block, forward: `ln1, f, qkv, attn.core, attn.out, g (all-reduce), bias+residual, ln2, f,
//! fc1, gelu, fc2, g (all-reduce), bias+residual`. Backward mirrors it; there `g` is the identity
//! and `f` is the all-reduce. So each block issues two all-reduces forward and two backward.

use crate::block::design::trace::trace;
pub use crate::block::design::trace::TraceError;
use crate::block::op::Op;
use crate::block::placement::TensorPlacement;
use crate::block::work::Work;
use crate::collectives::{Algorithm, CollectiveKind};
use crate::config::Config;
use crate::{
    block::op::Pass,
    trace::{Event, EventKind, Timing, Trace},
};

/// Bytes per element used by the trace's byte counts.
fn elem_bytes(cfg: &Config) -> u64 {
    cfg.dtype.size_bytes() as u64
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

/// The events of a forward and backward pass of `cfg` under Megatron-LM's split, in issue order,
/// with proportional times: the trace of Megatron's plan as the sharding rules propagate it
/// ([`crate::block::exec::sharded::program`], [`crate::block::design::trace::trace`]), the
/// same program the executor walks. The rules refuse no config that passes
/// [`Config::validate_shapes`]; an error names the rule a config breaks.
pub fn schedule(cfg: &Config) -> Result<Trace, TraceError> {
    trace(cfg, &crate::block::exec::sharded::program(cfg))
}
