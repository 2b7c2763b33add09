//! A learner's program as a [`Trace`]: the same events, placements, shapes, FLOPs and bytes the
//! views draw and the exports write for Megatron's split, written out from any valid
//! [`Program`] the rules propagated. So the walkthrough steps through a learner's own plan and
//! the Chrome trace shows it, with nothing drawn from a second model of the block.
//!
//! Changes of placement on `H1`, `Z`, `H2` and `M` keep Megatron's names (`attn.f`, `attn.g`,
//! `mlp.f`, `mlp.g` and their backward); the others are the plan's own moves
//! ([`Op::AMove`], …). A local slice (`Replicate → Shard`, no communication) is an identity
//! event whose writes show the slice; a move between tokens and features is the collectives
//! module's all-to-all. A communicating collective whose conjugate moves nothing has that
//! identity half drawn too (Megatron's `f` forward, `g` backward;
//! [`Program::forward_identities`], [`BackStep::PassThrough`]). Megatron's plan's trace is
//! [`crate::block::program::schedule`], byte for byte the hand-written schedule it replaced
//! (`tests/megatron_trace.rs`).

use super::plan::{Split, Weight};
use super::program::{
    feature_ranges, weight_param, BackStep, Move, Norm, Place, Program, Step, Tensor, ValueId,
};
use crate::block::exec::design::linear_grad_input;
use crate::block::op::Op;
use crate::block::placement::{Placement, TensorPlacement};
use crate::block::program::{collective_event, compute_event};
use crate::block::tensor::TensorName;
use crate::block::work::{self, Work};
use crate::collectives::CollectiveKind;
use crate::config::Config;
use crate::params::ParamKind;
use crate::{
    block::op::Parallel,
    block::op::Pass,
    trace::{proportional_duration_s, Event, EventKind, TimeSource, Trace},
};
use thiserror::Error;

/// Why a program has no trace.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TraceError {
    #[error(
        "this plan is refused ({0}); only a program every op can read has a trace to step through"
    )]
    Refused(String),
}

/// The trace of `program` on `cfg` (its TP, layers and scenario), every layer alike.
pub fn trace(cfg: &Config, program: &Program) -> Result<Trace, TraceError> {
    if let Some(e) = program.errors.first() {
        return Err(TraceError::Refused(e.rule.clone()));
    }
    let mut b = Builder {
        cfg,
        p: program,
        events: Vec::new(),
        layer: 0,
        pass: Pass::Forward,
    };
    // Layer by layer forward, then layer by layer in reverse for the backward pass.
    let identities = program.forward_identities();
    for layer in 0..cfg.layers {
        b.layer = layer;
        b.pass = Pass::Forward;
        for (i, s) in program.forward.iter().enumerate() {
            for &(_, v) in identities.iter().filter(|(at, _)| *at == i) {
                b.identity(v);
            }
            b.forward(s);
        }
    }
    for layer in (0..cfg.layers).rev() {
        b.layer = layer;
        b.pass = Pass::Backward;
        for s in &program.backward {
            b.backward(s);
        }
    }
    let mut trace = Trace {
        config: cfg.clone(),
        events: b.events,
        time_source: TimeSource::Proportional,
    };
    trace.assign_times(TimeSource::Proportional, proportional_duration_s);
    Ok(trace)
}

/// The op that changes the placement of `t` (forward) or of its gradient (backward). Megatron's
/// names f and g are kept where they mean what they mean: before a column-split QKV or fc1 (on
/// H1, H2) and after a row-split out-projection or fc2 (on Z, M).
fn move_op(plan: &super::plan::ShardingPlan, t: Tensor, pass: Pass) -> Op {
    let fwd = pass == Pass::Forward;
    let megatron = match t {
        Tensor::H1 => plan.qkv == Split::Columns,
        Tensor::Z => plan.out == Split::Rows,
        Tensor::H2 => plan.fc1 == Split::Columns,
        Tensor::M => plan.fc2 == Split::Rows,
        _ => true,
    };
    if !megatron {
        return match (t, fwd) {
            (Tensor::H1, true) => Op::H1Move,
            (Tensor::H1, false) => Op::H1MoveBwd,
            (Tensor::Z, true) => Op::ZMove,
            (Tensor::Z, false) => Op::ZMoveBwd,
            (Tensor::H2, true) => Op::H2Move,
            (Tensor::H2, false) => Op::H2MoveBwd,
            (Tensor::M, true) => Op::MMove,
            _ => Op::MMoveBwd,
        };
    }
    match t {
        Tensor::X if fwd => Op::XMove,
        Tensor::X => Op::XMoveBwd,
        Tensor::H1 if fwd => Op::AttnF,
        Tensor::H1 => Op::AttnFBwd,
        Tensor::Qkv if fwd => Op::QkvMove,
        Tensor::Qkv => Op::QkvMoveBwd,
        Tensor::Ctx if fwd => Op::CtxMove,
        Tensor::Ctx => Op::CtxMoveBwd,
        Tensor::Z if fwd => Op::AttnG,
        Tensor::Z => Op::AttnGBwd,
        Tensor::X1 if fwd => Op::X1Move,
        Tensor::X1 => Op::X1MoveBwd,
        Tensor::H2 if fwd => Op::MlpF,
        Tensor::H2 => Op::MlpFBwd,
        Tensor::A if fwd => Op::AMove,
        Tensor::A => Op::AMoveBwd,
        Tensor::U if fwd => Op::UMove,
        Tensor::U => Op::UMoveBwd,
        Tensor::M if fwd => Op::MlpG,
        Tensor::M => Op::MlpGBwd,
        Tensor::Y if fwd => Op::YMove,
        Tensor::Y => Op::YMoveBwd,
    }
}

/// The op a forward step is, in the trace and in the executor's events (one source for both).
pub fn forward_op(p: &Program, s: &Step) -> Op {
    match s {
        Step::LayerNorm {
            norm: Norm::Ln1, ..
        } => Op::Ln1,
        Step::LayerNorm {
            norm: Norm::Ln2, ..
        } => Op::Ln2,
        Step::Linear { weight, .. } => match weight {
            Weight::Qkv => Op::Qkv,
            Weight::Out => Op::AttnOut,
            Weight::Fc1 => Op::Fc1,
            Weight::Fc2 => Op::Fc2,
        },
        Step::Attention { .. } => Op::AttnCore,
        Step::Gelu { .. } => Op::Gelu,
        Step::Bias { weight, .. } => match weight {
            Weight::Qkv => Op::QkvBias,
            Weight::Out => Op::OutBias,
            Weight::Fc1 => Op::Fc1Bias,
            Weight::Fc2 => Op::Fc2Bias,
        },
        Step::Residual { y, .. } => {
            if p.value(*y).tensor == Tensor::X1 {
                Op::AttnBiasResidual
            } else {
                Op::MlpBiasResidual
            }
        }
        Step::Redistribute(rd) => move_op(&p.plan, p.value(rd.from).tensor, Pass::Forward),
    }
}

/// The op of a forward step's gradient rule (`None` for a redistribution, whose conjugate is a
/// backward step of its own, and for a residual add without a bias, which computes nothing).
pub fn grad_op(p: &Program, s: &Step) -> Option<Op> {
    Some(match s {
        Step::LayerNorm {
            norm: Norm::Ln1, ..
        } => Op::Ln1Bwd,
        Step::LayerNorm {
            norm: Norm::Ln2, ..
        } => Op::Ln2Bwd,
        Step::Linear { weight, .. } => match weight {
            Weight::Qkv => Op::QkvBwd,
            Weight::Out => Op::AttnOutBwd,
            Weight::Fc1 => Op::Fc1Bwd,
            Weight::Fc2 => Op::Fc2Bwd,
        },
        Step::Attention { .. } => Op::AttnCoreBwd,
        Step::Gelu { .. } => Op::GeluBwd,
        Step::Bias { weight, .. } => match weight {
            Weight::Qkv => Op::QkvBiasBwd,
            Weight::Out => Op::OutBiasBwd,
            Weight::Fc1 => Op::Fc1BiasBwd,
            Weight::Fc2 => Op::Fc2BiasBwd,
        },
        // Without its bias the residual's backward computes nothing: the sum's gradient passes
        // to both sides unchanged.
        Step::Residual { bias: None, .. } => return None,
        Step::Residual { y, .. } => {
            if p.value(*y).tensor == Tensor::X1 {
                Op::AttnBiasResidualBwd
            } else {
                Op::MlpBiasResidualBwd
            }
        }
        Step::Redistribute(_) => return None,
    })
}

/// The op of a backward step that is not a gradient rule (for [`BackStep::Grad`], the forward
/// step's [`grad_op`]).
pub fn back_op(p: &Program, s: &BackStep) -> Option<Op> {
    Some(match s {
        BackStep::Grad { index } => return p.forward.get(*index).and_then(|f| grad_op(p, f)),
        BackStep::GradMove { value, .. } => {
            move_op(&p.plan, p.value(*value).tensor, Pass::Backward)
        }
        BackStep::Regather { value, .. } => match p.value(*value).tensor {
            Tensor::H1 => Op::AttnFBwdGather,
            Tensor::H2 => Op::MlpFBwdGather,
            other => move_op(&p.plan, other, Pass::Backward),
        },
        BackStep::PassThrough { value, .. } => identity_op(p, *value, Pass::Backward),
        BackStep::KvGradSum { .. } => Op::KvGrads,
        BackStep::ParamGradSum { .. } => Op::SpGrads,
        BackStep::ParamGradGather { .. } => Op::ParamGradGather,
    })
}

/// The op of an identity half (a conjugate that moves nothing) on `value` in `pass`: `f` in the
/// forward before a column-split QKV or fc1, `g` in the backward after a row-split
/// out-projection or fc2 ([`Program::forward_identities`], [`BackStep::PassThrough`]).
pub fn identity_op(p: &Program, value: ValueId, pass: Pass) -> Op {
    move_op(&p.plan, p.value(value).tensor, pass)
}

/// The collective a change of placement is, for the trace (a slice is an identity: nothing
/// moves between GPUs).
fn kind_of(mv: Move) -> CollectiveKind {
    mv.collective().unwrap_or(CollectiveKind::Identity)
}

/// What rank `r` holds of activation `t` held as `place`.
pub fn placement(cfg: &Config, t: Tensor, place: Place, r: usize) -> Placement {
    match place {
        Place::Replicate => Placement::Replicate,
        Place::Partial => Placement::Partial,
        // An even share of the token rows, with or without sequence parallelism (the
        // rules may leave a sum split by tokens in any plan).
        Place::Tokens => {
            let [a, b] = super::program::even(cfg.tokens(), cfg.tp.max(1), r);
            Placement::shard(0, a..b)
        }
        Place::Features => Placement::Shard {
            dim: 1,
            ranges: feature_ranges(cfg, t.shape(cfg)[1], t == Tensor::Qkv, r),
        },
    }
}

struct Builder<'a> {
    cfg: &'a Config,
    p: &'a Program,
    events: Vec<Event>,
    layer: usize,
    pass: Pass,
}

/// A tensor an event reads or writes: its name, global shape and what each rank holds.
struct Tn {
    name: TensorName,
    shape: [usize; 2],
    per_rank: Vec<Placement>,
}

impl Builder<'_> {
    fn tp(&self) -> usize {
        self.cfg.tp.max(1)
    }

    fn placement(&self, t: Tensor, place: Place, r: usize) -> Placement {
        placement(self.cfg, t, place, r)
    }

    fn act(&self, t: Tensor, place: Place) -> Tn {
        Tn {
            name: TensorName::Act(t),
            shape: t.shape(self.cfg),
            per_rank: (0..self.tp())
                .map(|r| self.placement(t, place, r))
                .collect(),
        }
    }

    fn value(&self, v: ValueId) -> Tn {
        let v = self.p.value(v);
        self.act(v.tensor, v.place)
    }

    /// The gradient of `t` held as `place`. A residual branch's gradient is the residual
    /// sum's (`Y = X1 + M` gives `dM = dY`), and is named so, as Megatron-LM writes it: the
    /// `g` moves carry `dY` and `dX1`.
    fn grad(&self, t: Tensor, place: Place) -> Tn {
        let named = match t {
            Tensor::M => Tensor::Y,
            Tensor::Z => Tensor::X1,
            t => t,
        };
        Tn {
            name: TensorName::Grad(named),
            ..self.act(t, place)
        }
    }

    /// Each copy's K and V weight and bias gradients, packed (`[h + 1, kv columns]`), held as
    /// `pl` on every GPU.
    fn kv_grad(&self, pl: Placement) -> Tn {
        let kv_cols =
            self.cfg.qkv_cols_per_rank() - self.cfg.heads_per_rank() * self.cfg.head_dim();
        Tn {
            name: TensorName::KvGrad,
            shape: [self.cfg.hidden + 1, kv_cols],
            per_rank: vec![pl; self.tp()],
        }
    }

    /// An identity half on `value`: what each GPU holds stays as it is.
    fn identity(&mut self, value: ValueId) {
        let v = self.p.value(value);
        let t = if self.pass == Pass::Forward {
            self.value(value)
        } else {
            self.grad(v.tensor, v.place.grad())
        };
        let op = identity_op(self.p, value, self.pass);
        let ranks = self.all();
        self.collective(op, CollectiveKind::Identity, ranks, &[&t], &[&t]);
    }

    fn param(&self, kind: ParamKind) -> Tn {
        Tn {
            name: TensorName::Param(kind),
            shape: kind.shape(self.cfg),
            per_rank: (0..self.tp())
                .map(|r| self.p.param_placement(self.cfg, kind, r))
                .collect(),
        }
    }

    /// A parameter's gradient: where the parameter is split, its gradient is split alike; a
    /// whole parameter's gradient is a partial sum when each GPU saw only part of its input
    /// (`partial`), until the layer's gradient sum.
    fn param_grad(&self, kind: ParamKind, partial: bool) -> Tn {
        let mut t = self.param(kind);
        t.name = TensorName::ParamGrad(kind);
        if partial {
            for pl in t
                .per_rank
                .iter_mut()
                .filter(|pl| **pl == Placement::Replicate)
            {
                *pl = Placement::Partial;
            }
        }
        t
    }

    /// A whole bias's gradient computed from the gradient of the output it was added to, held
    /// as `y`: each GPU's columns of it when the output is split by features (gathered later),
    /// a partial sum when each GPU saw part of the tokens or of a sum, else whole.
    fn bias_grad(&self, kind: ParamKind, y: Place, once: bool) -> Tn {
        if once || y != Place::Features {
            return self.param_grad(kind, !once && Self::partial_from(y));
        }
        let mut t = self.param_grad(kind, false);
        let cols = t.shape[1];
        t.per_rank = (0..self.tp())
            .map(|r| match &t.per_rank[r] {
                Placement::Replicate => Placement::Shard {
                    dim: 1,
                    ranges: feature_ranges(self.cfg, cols, kind == ParamKind::QkvBias, r),
                },
                other => other.clone(),
            })
            .collect();
        t
    }

    fn local(t: &Tn, r: usize) -> [usize; 2] {
        t.per_rank[r].local_shape(t.shape)
    }

    fn resolve(ts: &[&Tn], r: Option<usize>, ranks: &[usize]) -> Vec<TensorPlacement> {
        ts.iter()
            .map(|t| TensorPlacement {
                tensor: t.name,
                shape: t.shape,
                per_rank: match r {
                    Some(r) => vec![t.per_rank[r].clone()],
                    None => ranks.iter().map(|&q| t.per_rank[q].clone()).collect(),
                },
            })
            .collect()
    }

    /// One compute event per rank; `work(r)` is rank `r`'s FLOPs and elements. The event's
    /// input shapes are those of the first `shown` reads (a LayerNorm's or a linear layer's bias
    /// is read but, as in Megatron's trace, not listed among the inputs); its output is the
    /// first write's shape, or the first read's for an op that writes nothing.
    fn compute(
        &mut self,
        op: Op,
        parallel: Parallel,
        (shown, reads): (usize, &[&Tn]),
        writes: &[&Tn],
        work: impl Fn(usize) -> Work,
    ) {
        let Some(compute) = op.compute() else {
            return;
        };
        for r in 0..self.tp() {
            let w = work(r);
            let inputs = reads
                .iter()
                .take(shown)
                .map(|t| Self::local(t, r))
                .collect();
            let output = writes
                .first()
                .or(reads.first())
                .map_or([0, 0], |t| Self::local(t, r));
            self.events.push(compute_event(
                self.cfg,
                (self.events.len(), self.layer, self.pass, op),
                EventKind::Compute {
                    op: compute,
                    parallel,
                },
                r,
                (inputs, output),
                w,
                Self::resolve(reads, Some(r), &[]),
                Self::resolve(writes, Some(r), &[]),
            ));
        }
    }

    /// A collective over `ranks` that changes `from` into `to` (same tensors, new placement).
    /// Several tensors are packed into one buffer.
    fn collective(
        &mut self,
        op: Op,
        kind: CollectiveKind,
        ranks: Vec<usize>,
        from: &[&Tn],
        to: &[&Tn],
    ) {
        let shapes: Vec<[usize; 2]> = from.iter().map(|t| t.shape).collect();
        let (reads, writes) = (
            Self::resolve(from, None, &ranks),
            Self::resolve(to, None, &ranks),
        );
        self.events.push(collective_event(
            self.cfg,
            self.events.len(),
            self.layer,
            self.pass,
            op,
            kind,
            ranks,
            &shapes,
            reads,
            writes,
        ));
    }

    fn all(&self) -> Vec<usize> {
        (0..self.tp()).collect()
    }

    /// How an op runs over the GPUs, from what it reads and (for a linear) its weight's split.
    fn parallel(&self, x: Place, split: Option<Split>) -> Parallel {
        match (split, x) {
            (Some(Split::Columns), _) => Parallel::Column,
            (Some(Split::Rows), _) => Parallel::Row,
            (_, Place::Tokens) => Parallel::Sequence,
            (None, Place::Features) => Parallel::Local,
            _ => Parallel::Replicated,
        }
    }

    /// Attention runs on each GPU's own heads (QKV split by heads), or on every head.
    fn heads_parallel(&self, qkv: Place) -> Parallel {
        match qkv {
            Place::Features => Parallel::Local,
            _ => Parallel::Replicated,
        }
    }

    /// Rows of `t` rank `r` holds (tokens) and its columns.
    fn rc(t: &Tn, r: usize) -> (u64, u64) {
        let [a, b] = Self::local(t, r);
        (a as u64, b as u64)
    }

    fn forward(&mut self, s: &Step) {
        let cfg = self.cfg;
        match s {
            Step::LayerNorm { norm, x, y } => {
                let (op, (wk, bk)) = (forward_op(self.p, s), norm.params());
                let (xt, yt) = (self.value(*x), self.value(*y));
                let (w, b) = (self.param(wk), self.param(bk));
                let par = self.parallel(self.p.value(*x).place, None);
                self.compute(op, par, (2, &[&xt, &w, &b]), &[&yt], |r| {
                    let (t, h) = Self::rc(&xt, r);
                    work::layer_norm(t, h)
                });
            }
            Step::Linear { weight, x, y, bias } => {
                let op = forward_op(self.p, s);
                let (wk, bk) = weight_param(*weight);
                let (xt, yt, w) = (self.value(*x), self.value(*y), self.param(wk));
                let bt = self.param(bk);
                let mut reads = vec![&xt, &w];
                if *bias {
                    reads.push(&bt);
                }
                let par = self.parallel(self.p.value(*x).place, Some(self.p.plan.split(*weight)));
                let with_bias = *bias;
                // The rank's tokens times its block of the weight (`[k, n]` as it holds it).
                self.compute(op, par, (2, &reads), &[&yt], |r| {
                    let (t, _) = Self::rc(&xt, r);
                    let [k, n] = Self::local(&w, r);
                    work::linear(t, k as u64, n as u64, with_bias)
                });
            }
            Step::Attention { qkv, ctx } => {
                let (qt, ct) = (self.value(*qkv), self.value(*ctx));
                let local_heads = |r: usize| -> u64 {
                    let cols = Self::local(&ct, r)[1];
                    (cols / cfg.head_dim().max(1)) as u64
                };
                let (bt, s, d) = (cfg.batch as u64, cfg.seq as u64, cfg.head_dim() as u64);
                // Each GPU's own heads, or (QKV whole) every head on every GPU.
                let par = self.heads_parallel(self.p.value(*qkv).place);
                self.compute(Op::AttnCore, par, (1, &[&qt]), &[&ct], |r| {
                    let hl = local_heads(r);
                    let (t, qc) = Self::rc(&qt, r);
                    let (_, hc) = Self::rc(&ct, r);
                    Work {
                        flops: work::attention_flops(bt * hl, s * s, d),
                        elems: t * qc + t * hc + 2 * bt * hl * s * s,
                    }
                });
            }
            Step::Gelu { a, u } => {
                let (at, ut) = (self.value(*a), self.value(*u));
                let par = self.parallel(self.p.value(*a).place, None);
                self.compute(forward_op(self.p, s), par, (1, &[&at]), &[&ut], |r| {
                    let (t, f) = Self::rc(&at, r);
                    work::gelu(t, f)
                });
            }
            Step::Bias { x, y, weight, .. } => {
                let op = forward_op(self.p, s);
                let (xt, yt, bt) = (
                    self.value(*x),
                    self.value(*y),
                    self.param(weight_param(*weight).1),
                );
                let par = self.parallel(self.p.value(*x).place, None);
                self.compute(op, par, (2, &[&xt, &bt]), &[&yt], |r| {
                    let (t, h) = Self::rc(&xt, r);
                    Work {
                        flops: t * h,
                        elems: 2 * t * h + h,
                    }
                });
            }
            Step::Residual {
                stream,
                branch,
                y,
                bias,
            } => {
                let op = forward_op(self.p, s);
                let (st, bt, yt) = (self.value(*stream), self.value(*branch), self.value(*y));
                let bias_t = bias.map(|w| self.param(weight_param(w).1));
                let mut reads = vec![&st, &bt];
                if let Some(b) = &bias_t {
                    reads.push(b);
                }
                let par = self.parallel(self.p.value(*y).place, None);
                self.compute(op, par, (reads.len(), &reads), &[&yt], |r| {
                    let (t, h) = Self::rc(&yt, r);
                    work::bias_residual(t, h)
                });
            }
            Step::Redistribute(rd) => {
                let (ft, tt) = (self.value(rd.from), self.value(rd.to));
                let op = forward_op(self.p, s);
                let ranks = self.all();
                self.collective(op, kind_of(rd.mv), ranks, &[&ft], &[&tt]);
            }
        }
    }

    fn backward(&mut self, s: &BackStep) {
        let cfg = self.cfg;
        let values = &self.p.values;
        match s {
            BackStep::GradMove {
                value,
                from,
                to,
                mv,
                ..
            } => {
                let t = values[*value].tensor;
                let (ft, tt) = (self.grad(t, *from), self.grad(t, *to));
                let ranks = self.all();
                let Some(op) = back_op(self.p, s) else { return };
                self.collective(op, kind_of(*mv), ranks, &[&ft], &[&tt]);
            }
            BackStep::Regather { value, source } => {
                let (ft, tt) = (self.value(*source), self.value(*value));
                let Some(op) = back_op(self.p, s) else { return };
                let mv = Move::between(values[*source].place, values[*value].place)
                    .unwrap_or(Move::AllGather);
                let ranks = self.all();
                self.collective(op, kind_of(mv), ranks, &[&ft], &[&tt]);
            }
            BackStep::PassThrough { value, .. } => self.identity(*value),
            BackStep::KvGradSum { groups } => {
                // Each copy's K/V weight and bias gradients (packed as in Megatron's trace):
                // a partial sum over its group of copies.
                let (partial, whole) = (
                    self.kv_grad(Placement::Partial),
                    self.kv_grad(Placement::Replicate),
                );
                for g in groups {
                    self.collective(
                        Op::KvGrads,
                        CollectiveKind::AllReduce,
                        g.clone(),
                        &[&partial],
                        &[&whole],
                    );
                }
            }
            BackStep::ParamGradSum { params } => {
                let from: Vec<Tn> = params.iter().map(|k| self.param_grad(*k, true)).collect();
                let to: Vec<Tn> = params.iter().map(|k| self.param_grad(*k, false)).collect();
                let ranks = self.all();
                self.collective(
                    Op::SpGrads,
                    CollectiveKind::AllReduce,
                    ranks,
                    &from.iter().collect::<Vec<_>>(),
                    &to.iter().collect::<Vec<_>>(),
                );
            }
            BackStep::ParamGradGather { param } => {
                let mut from = self.param_grad(*param, false);
                let shape = from.shape;
                from.per_rank = (0..self.tp())
                    .map(|r| Placement::Shard {
                        dim: 1,
                        ranges: feature_ranges(
                            cfg,
                            shape[1],
                            matches!(param, ParamKind::QkvBias | ParamKind::QkvWeight),
                            r,
                        ),
                    })
                    .collect();
                let to = self.param_grad(*param, false);
                let ranks = self.all();
                self.collective(
                    Op::ParamGradGather,
                    CollectiveKind::AllGather,
                    ranks,
                    &[&from],
                    &[&to],
                );
            }
            BackStep::Grad { index } => {
                let step = &self.p.forward[*index];
                self.grad_step(step);
            }
        }
    }

    /// Whether a whole parameter's gradient, computed from an input held as `x`, is a partial
    /// sum on each GPU.
    fn partial_from(x: Place) -> bool {
        matches!(x, Place::Tokens | Place::Partial | Place::Features)
    }

    fn grad_step(&mut self, s: &Step) {
        let cfg = self.cfg;
        let values = &self.p.values;
        match s {
            Step::LayerNorm { norm, x, y } => {
                let Some(op) = grad_op(self.p, s) else { return };
                let (wk, bk) = norm.params();
                let (xv, yv) = (values[*x], values[*y]);
                let dy = self.grad(yv.tensor, yv.place.grad());
                let xt = self.value(*x);
                let w = self.param(wk);
                let dx = self.grad(xv.tensor, xv.place.grad());
                let partial = Self::partial_from(xv.place);
                let (dw, db) = (self.param_grad(wk, partial), self.param_grad(bk, partial));
                let par = self.parallel(xv.place, None);
                // The residual stream's own gradient, which the LayerNorm's backward adds to
                // the gradient it computes (the stream feeds both the LayerNorm and the
                // residual add after it).
                let stream = self.p.forward.iter().find_map(|f| match f {
                    Step::Residual { stream, y, .. } if values[*stream].tensor == xv.tensor => {
                        let yv = values[*y];
                        Some(self.grad(yv.tensor, yv.place.grad()))
                    }
                    _ => None,
                });
                let mut reads = vec![&dy, &xt, &w];
                if let Some(st) = &stream {
                    reads.push(st);
                }
                self.compute(op, par, (3, &reads), &[&dx, &dw, &db], |r| {
                    let (t, h) = Self::rc(&xt, r);
                    work::layer_norm_backward(t, h)
                });
            }
            Step::Linear { weight, x, y, bias } => {
                let Some(op) = grad_op(self.p, s) else { return };
                let split = self.p.plan.split(*weight);
                let (xv, yv) = (values[*x], values[*y]);
                let (wk, bk) = weight_param(*weight);
                let dy = self.grad(yv.tensor, yv.place.grad());
                let xt = self.value(*x);
                let w = self.param(wk);
                let dx = self.grad(xv.tensor, linear_grad_input(split, xv.place));
                let whole = split == Split::Replicate;
                let dw = self.param_grad(wk, whole && Self::partial_from(xv.place));
                let db = self.param_grad(bk, whole && Self::partial_from(yv.place));
                let mut writes = vec![&dx, &dw];
                if *bias {
                    writes.push(&db);
                }
                // Replicated KV heads: each copy's K/V gradient covers only its GPU's query
                // heads, a partial sum over the copies until the KV gradient sum.
                let kv =
                    (*weight == Weight::Qkv && split == Split::Columns && cfg.kv_replicas() > 1)
                        .then(|| self.kv_grad(Placement::Partial));
                if let Some(kv) = &kv {
                    writes.push(kv);
                }
                let par = self.parallel(xv.place, Some(split));
                let with_bias = *bias;
                self.compute(op, par, (3, &[&dy, &xt, &w]), &writes, |r| {
                    let (t, _) = Self::rc(&xt, r);
                    let [k, n] = Self::local(&w, r);
                    work::linear_backward(t, k as u64, n as u64, with_bias)
                });
            }
            Step::Attention { qkv, ctx } => {
                let (qv, cv) = (values[*qkv], values[*ctx]);
                let dctx = self.grad(cv.tensor, cv.place.grad());
                let qt = self.value(*qkv);
                let dq = self.grad(qv.tensor, qv.place.grad());
                let ct = self.value(*ctx);
                let (bt, s, d) = (cfg.batch as u64, cfg.seq as u64, cfg.head_dim() as u64);
                let par = self.heads_parallel(qv.place);
                self.compute(Op::AttnCoreBwd, par, (2, &[&dctx, &qt]), &[&dq], |r| {
                    let hl = (Self::local(&ct, r)[1] / cfg.head_dim().max(1)) as u64;
                    let (t, qc) = Self::rc(&qt, r);
                    let (_, hc) = Self::rc(&ct, r);
                    Work {
                        flops: 2 * work::attention_flops(bt * hl, s * s, d),
                        elems: 2 * (t * qc + t * hc + 2 * bt * hl * s * s),
                    }
                });
            }
            Step::Gelu { a, u } => {
                let (av, uv) = (values[*a], values[*u]);
                let du = self.grad(uv.tensor, uv.place.grad());
                let at = self.value(*a);
                let da = self.grad(av.tensor, av.place.grad());
                let par = self.parallel(av.place, None);
                self.compute(Op::GeluBwd, par, (2, &[&at, &du]), &[&da], |r| {
                    let (t, f) = Self::rc(&at, r);
                    work::gelu_backward(t, f)
                });
            }
            Step::Bias { x, y, weight, once } => {
                let Some(op) = grad_op(self.p, s) else { return };
                let (xv, yv) = (values[*x], values[*y]);
                let dy = self.grad(yv.tensor, yv.place.grad());
                let dx = self.grad(xv.tensor, xv.place.grad());
                let db = self.bias_grad(weight_param(*weight).1, yv.place, *once);
                let par = self.parallel(yv.place, None);
                self.compute(op, par, (1, &[&dy]), &[&dx, &db], |r| {
                    let (t, h) = Self::rc(&dy, r);
                    work::bias_grad(t, h)
                });
            }
            Step::Residual { y, bias, .. } => {
                let Some(op) = grad_op(self.p, s) else { return };
                // The sum's gradient passes to the stream and the branch unchanged (both are
                // `dY`, read by the LayerNorm's backward and by the branch); what this op
                // computes is the bias gradient, a sum over the token rows.
                let yv = values[*y];
                let dy = self.grad(yv.tensor, yv.place.grad());
                let bias_g = bias.map(|w| self.bias_grad(weight_param(w).1, yv.place, false));
                let writes: Vec<&Tn> = bias_g.iter().collect();
                let par = self.parallel(yv.place, None);
                self.compute(op, par, (1, &[&dy]), &writes, |r| {
                    let (t, h) = Self::rc(&dy, r);
                    work::bias_grad(t, h)
                });
            }
            // The conjugate is its own gradient move; the gradient only changes hands here.
            Step::Redistribute(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::design::{price, propagate, NamedPlan, ShardingPlan};
    use crate::config::Preset;

    fn tiny(tp: usize, sp: bool, layers: usize) -> Config {
        Config {
            tp,
            layers,
            sequence_parallel: sp,
            ..Preset::Tiny.config()
        }
    }

    /// A communicating collective as the views and exports see it: its op, pass, kind, group,
    /// bytes, and what each GPU holds of what it reads and writes (names aside: Megatron's
    /// trace calls the gradient `g` moves `dX1`, the plan's program calls it `dZ`).
    type Seen = (
        usize,
        Pass,
        Op,
        CollectiveKind,
        Vec<usize>,
        u64,
        Vec<Vec<Placement>>,
        Vec<Vec<Placement>>,
    );

    fn communicating(t: &Trace) -> Vec<Seen> {
        t.events
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::Collective { kind, .. } if kind != CollectiveKind::Identity => Some((
                    e.layer,
                    e.pass,
                    e.op,
                    kind,
                    e.ranks.clone(),
                    e.bytes_sent_per_rank,
                    e.reads.iter().map(|p| p.per_rank.clone()).collect(),
                    e.writes.iter().map(|p| p.per_rank.clone()).collect(),
                )),
                _ => None,
            })
            .collect()
    }

    /// Every plan of the 81 × sequence parallelism on and off × TP 2 and 4 has a trace that
    /// passes the placement checker (every read finds the tensor in a placement an earlier
    /// event left on that GPU, every weight as the plan places it, every collective exactly the
    /// change its kind makes, every shape as placed), and whose
    /// collectives (all-to-alls included) are the ones the plan is priced by: the same kinds,
    /// groups and bytes, in order.
    #[test]
    fn every_plan_traces_what_it_reads_and_is_priced_by() {
        let mut traced = 0;
        let mut all_to_alls = 0;
        for tp in [2, 4] {
            for sp in [false, true] {
                let cfg = tiny(tp, sp, 2);
                for plan in ShardingPlan::all_assignments(sp) {
                    let p = propagate(&cfg, &plan);
                    let t = trace(&cfg, &p).unwrap_or_else(|e| panic!("{}: {e}", plan.describe()));
                    all_to_alls += communicating(&t)
                        .iter()
                        .filter(|s| s.3 == CollectiveKind::AllToAll)
                        .count();
                    traced += 1;
                    let name = plan.describe();
                    // The placement checker Megatron's trace passes passes every plan's.
                    if let Err(e) = crate::block::check::check_program_placements(&t, &p) {
                        panic!("{name} tp {tp} sp {sp}: {e}");
                    }
                    let priced: Vec<(Pass, &str, usize, u64)> = price(&cfg, &p, None)
                        .steps
                        .iter()
                        .map(|s| (s.pass, s.kind, s.group, s.bytes_sent_per_rank))
                        .collect();
                    let seen: Vec<(Pass, &str, usize, u64)> = communicating(&t)
                        .into_iter()
                        .filter(|s| s.0 == 0)
                        .map(|s| (s.1, s.3.name(), s.4.len(), s.5))
                        .collect();
                    assert_eq!(seen, priced, "{name} tp {tp} sp {sp}");
                }
            }
        }
        assert_eq!(traced, 324);
        // Most plans with sequence parallelism move a tensor between tokens and features.
        assert!(all_to_alls > 0);
    }

    #[test]
    fn a_refused_program_has_no_trace_and_says_why() {
        let cfg = tiny(2, false, 1);
        let plan = ShardingPlan {
            manual: Some(Vec::new()),
            ..NamedPlan::Megatron.plan()
        };
        let e = trace(&cfg, &propagate(&cfg, &plan)).expect_err("refused");
        assert!(e.to_string().contains("refused"), "{e}");
    }
}
