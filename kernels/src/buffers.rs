//! The buffers of one rank of the CUDA executor, and which of them each op of the block program
//! reads and writes. Host logic only: the executor allocates exactly [`RankLayout::buffers`] and
//! takes every operand from [`RankLayout::io`] and [`RankLayout::collective`], and the tests
//! here check both against the engine's own program (`tplab_engine::block::program::schedule`): every
//! tensor an event reads or writes is bound to a buffer whose shape is that rank's placement of
//! it (`Placement::local_shape`), for TP 1, 2, 4, with and without sequence parallelism and
//! grouped-query attention.
//!
//! Token-row tensors (the LayerNorm, bias and residual regions) hold `tl` rows: all `t` tokens,
//! or the rank's `t/tp` with sequence parallelism; the tensor-parallel regions hold all `t`.
//! With sequence parallelism `f` all-gathers into a `[t, h]` buffer ([`BufId::Gathered`]), `g`
//! reduce-scatters a `[t, h]` partial into a `[tl, h]` one ([`BufId::Reduced`]), and the
//! backward gathers the output gradients into [`BufId::DFull`].

use tplab_engine::block::plan::ShardPlan;
use tplab_engine::block::{Op, TensorName};
use tplab_engine::collectives::CollectiveKind;
use tplab_engine::config::Config;
use tplab_engine::params::ParamKind;

// The engine's op vocabulary in the three parts the executor treats apart, as patterns, so that a
// match on `Op` names each part once and stays exhaustive: an op added to the engine is
// refused by the compiler until it joins one of them or gets an arm of its own. The test
// `op_parts_match_the_engines_kinds` holds them to the engine's `Op::kind` and `Op::block_part`.

/// The compute ops of the block program (what [`RankLayout::io`] binds).
macro_rules! block_compute {
    () => {
        ::tplab_engine::block::Op::Ln1
            | ::tplab_engine::block::Op::Qkv
            | ::tplab_engine::block::Op::AttnCore
            | ::tplab_engine::block::Op::AttnOut
            | ::tplab_engine::block::Op::AttnBiasResidual
            | ::tplab_engine::block::Op::Ln2
            | ::tplab_engine::block::Op::Fc1
            | ::tplab_engine::block::Op::Gelu
            | ::tplab_engine::block::Op::Fc2
            | ::tplab_engine::block::Op::MlpBiasResidual
            | ::tplab_engine::block::Op::MlpBiasResidualBwd
            | ::tplab_engine::block::Op::Fc2Bwd
            | ::tplab_engine::block::Op::GeluBwd
            | ::tplab_engine::block::Op::Fc1Bwd
            | ::tplab_engine::block::Op::Ln2Bwd
            | ::tplab_engine::block::Op::AttnBiasResidualBwd
            | ::tplab_engine::block::Op::AttnOutBwd
            | ::tplab_engine::block::Op::AttnCoreBwd
            | ::tplab_engine::block::Op::QkvBwd
            | ::tplab_engine::block::Op::Ln1Bwd
    };
}

/// The collectives of the block program (what [`RankLayout::collective`] plans).
macro_rules! block_collectives {
    () => {
        ::tplab_engine::block::Op::AttnF
            | ::tplab_engine::block::Op::AttnG
            | ::tplab_engine::block::Op::MlpF
            | ::tplab_engine::block::Op::MlpG
            | ::tplab_engine::block::Op::MlpGBwd
            | ::tplab_engine::block::Op::MlpFBwdGather
            | ::tplab_engine::block::Op::MlpFBwd
            | ::tplab_engine::block::Op::AttnGBwd
            | ::tplab_engine::block::Op::AttnFBwdGather
            | ::tplab_engine::block::Op::KvGrads
            | ::tplab_engine::block::Op::AttnFBwd
            | ::tplab_engine::block::Op::SpGrads
    };
}

/// The model's ends around the blocks (embeddings, final LayerNorm, LM head, loss): not part
/// of the block program ([`crate::vocab`] and [`crate::decode`] run them).
macro_rules! model_ends {
    () => {
        ::tplab_engine::block::Op::EmbedLookup
            | ::tplab_engine::block::Op::EmbedG
            | ::tplab_engine::block::Op::LmHead
            | ::tplab_engine::block::Op::CeLocal
            | ::tplab_engine::block::Op::CeMax
            | ::tplab_engine::block::Op::CeSumExp
            | ::tplab_engine::block::Op::CeTarget
            | ::tplab_engine::block::Op::CeBwd
            | ::tplab_engine::block::Op::LmHeadBwd
            | ::tplab_engine::block::Op::LmHeadFBwd
            | ::tplab_engine::block::Op::EmbedBwd
            | ::tplab_engine::block::Op::PosEmbed
            | ::tplab_engine::block::Op::FinalLn
            | ::tplab_engine::block::Op::LogitsGather
    };
}

/// The serving decode step's own ops (the engine's `block::decode`): the GPU decode
/// (`cuda::exec::decode`) runs them, not the block's executor.
macro_rules! decode_ops {
    () => {
        ::tplab_engine::block::Op::KvAppend
    };
}
pub(crate) use tplab_engine::design_ops;
pub(crate) use {block_collectives, decode_ops, model_ends};

/// The activations and activation gradients of the block program (the engine's
/// `block::program::tensors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tensor {
    X,
    H1,
    Qkv,
    Ctx,
    Z,
    X1,
    H2,
    A,
    U,
    M,
    Y,
    DY,
    DU,
    DA,
    DH2,
    DX1,
    DCtx,
    DQkv,
    DH1,
    DX,
    /// The K and V columns of the QKV weight and bias gradients (replicated KV heads only).
    DKv,
}

impl Tensor {
    /// The engine's name of the tensor (what its placements are recorded under).
    pub fn name(self) -> TensorName {
        use tplab_engine::block::program::tensors as n;
        match self {
            Tensor::X => n::X,
            Tensor::H1 => n::H1,
            Tensor::Qkv => n::QKV,
            Tensor::Ctx => n::CTX,
            Tensor::Z => n::Z,
            Tensor::X1 => n::X1,
            Tensor::H2 => n::H2,
            Tensor::A => n::A,
            Tensor::U => n::U,
            Tensor::M => n::M,
            Tensor::Y => n::Y,
            Tensor::DY => n::DY,
            Tensor::DU => n::DU,
            Tensor::DA => n::DA,
            Tensor::DH2 => n::DH2,
            Tensor::DX1 => n::DX1,
            Tensor::DCtx => n::DCTX,
            Tensor::DQkv => n::DQKV,
            Tensor::DH1 => n::DH1,
            Tensor::DX => n::DX,
            Tensor::DKv => n::DKV,
        }
    }
}

/// What a rank holds of an activation at the point an op uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hold {
    /// The token rows (all of them, or the rank's with sequence parallelism).
    Tok,
    /// Every token (after `f`'s all-gather with sequence parallelism).
    Whole,
    /// A full-shape partial sum (before `g`, or an input gradient before `f`'s backward).
    Partial,
    /// The rank's columns of a tensor-parallel activation (one buffer whatever the mode).
    Cols,
}

/// One operand of an op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operand {
    Act(Tensor, Hold),
    Param(ParamKind),
    Grad(ParamKind),
}

impl Operand {
    /// The engine's name of the tensor.
    pub fn name(self) -> TensorName {
        match self {
            Operand::Act(t, _) => t.name(),
            Operand::Param(k) => TensorName::Param(k),
            Operand::Grad(k) => TensorName::ParamGrad(k),
        }
    }
}

/// A buffer of one rank (elements of the storage dtype).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BufId {
    /// The input of layer `l` (`X(layers)` is the stack's output): `[tl, h]`.
    X(usize),
    H1(usize),
    Qkv(usize),
    /// Attention probabilities `[batch·hp·seq, seq]`, saved for the backward.
    Probs(usize),
    Ctx(usize),
    /// The attention output before `g` (a partial sum): `[t, h]`.
    Z(usize),
    X1(usize),
    H2(usize),
    A(usize),
    U(usize),
    /// The MLP output before `g`: `[t, h]`.
    M(usize),
    /// A parameter shard.
    W(usize, ParamKind),
    /// A parameter shard's gradient.
    G(usize, ParamKind),
    /// Sequence parallelism: a LayerNorm output gathered to every token, `[t, h]`.
    Gathered,
    /// Sequence parallelism: the rank's rows of a reduce-scattered sum, `[tl, h]`.
    Reduced,
    /// Sequence parallelism: an output gradient gathered to every token, `[t, h]`.
    DFull,
    /// The gradient arriving at the last layer's output (uploaded), `[tl, h]`.
    DOut,
    /// The two buffers the gradient flows through between layers, `[tl, h]`.
    Flow(usize),
    DU,
    DA,
    /// The partial input gradient of a column-parallel layer (`dH2`, `dH1`), `[t, h]`.
    DH,
    DX1,
    DCtx,
    DProbs,
    DQkv,
    /// Replicated KV heads: the K/V columns of the QKV weight and bias gradients, packed.
    KvPack,
    /// Sequence parallelism: the six LayerNorm and bias gradients, packed.
    SpPack,
}

/// What a collective event does on the executor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollPlan {
    pub kind: CollectiveKind,
    /// Read on every rank of the group.
    pub send: BufId,
    /// Written on every rank of the group (`send` for an in-place all-reduce).
    pub recv: BufId,
    /// Elements: of the buffer for an all-reduce, of each rank's part for an all-gather (what
    /// each rank sends) and a reduce-scatter (what each rank keeps).
    pub count: usize,
    /// Data packed into `send` before and unpacked after.
    pub pack: Option<Pack>,
}

/// Gradients that are not contiguous and are packed for their all-reduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pack {
    /// The K and V columns (from `q_cols` on) of layer `l`'s QKV weight and bias gradients.
    KvCols(usize),
    /// Layer `l`'s [`SP_VECTORS`] gradients, one after the other.
    SpVectors(usize),
}

/// The vectors sequence parallelism sums after each layer's backward, in the engine's order.
pub const SP_VECTORS: [ParamKind; 6] = [
    ParamKind::Ln1Weight,
    ParamKind::Ln1Bias,
    ParamKind::Ln2Weight,
    ParamKind::Ln2Bias,
    ParamKind::OutBias,
    ParamKind::Fc2Bias,
];

/// Shapes of one scenario on one rank, and its buffers.
#[derive(Debug, Clone)]
pub struct RankLayout {
    pub layers: usize,
    /// Sequence parallelism is on (and `tp > 1`).
    pub sp: bool,
    /// Tokens `b·s`.
    pub t: usize,
    /// Token rows outside the tensor-parallel regions (`t/tp` with sequence parallelism).
    pub tl: usize,
    pub h: usize,
    /// Attention width on the rank (`hp·d`).
    pub hr: usize,
    /// QKV columns on the rank (`(hp + 2·kvp)·d`).
    pub qc: usize,
    pub fr: usize,
    pub batch: usize,
    pub seq: usize,
    pub hp: usize,
    pub kvp: usize,
    pub d: usize,
    /// Replicated KV heads (their gradients are summed within each group of copies).
    pub kv_replicated: bool,
    plan: ShardPlan,
}

impl RankLayout {
    pub fn new(cfg: &Config) -> Self {
        let tp = cfg.tp.max(1);
        let sp = cfg.sequence_parallel && tp > 1;
        let t = cfg.tokens();
        Self {
            layers: cfg.layers,
            sp,
            t,
            tl: if sp { t / tp } else { t },
            h: cfg.hidden,
            hr: cfg.heads_per_rank() * cfg.head_dim(),
            qc: cfg.qkv_cols_per_rank(),
            fr: cfg.ffn_per_rank(),
            batch: cfg.batch,
            seq: cfg.seq,
            hp: cfg.heads_per_rank(),
            kvp: cfg.kv_heads_per_rank(),
            d: cfg.head_dim(),
            kv_replicated: cfg.kv_replicas() > 1,
            plan: ShardPlan::new(cfg),
        }
    }

    /// K/V columns of the rank's QKV (after its `hp·d` query columns).
    pub fn kv_cols(&self) -> usize {
        self.qc - self.hr
    }

    /// Score elements per layer: `batch·hp·seq·seq`.
    pub fn scores(&self) -> usize {
        self.batch * self.hp * self.seq * self.seq
    }

    /// The gradient arriving at layer `l`'s output.
    pub fn dy(&self, l: usize) -> BufId {
        if l + 1 >= self.layers {
            BufId::DOut
        } else {
            BufId::Flow((self.layers - 2 - l) % 2)
        }
    }

    /// The gradient layer `l` passes to its input (`dy(l - 1)`; `dx(0)` is the input gradient).
    pub fn dx(&self, l: usize) -> BufId {
        BufId::Flow((self.layers - 1 - l) % 2)
    }

    /// Every buffer the rank allocates, in allocation order.
    pub fn buffers(&self) -> Vec<BufId> {
        use BufId::*;
        let mut v = vec![X(0), DOut];
        for l in 0..self.layers {
            for k in ParamKind::ALL {
                v.push(W(l, k));
                v.push(G(l, k));
            }
            v.extend([
                H1(l),
                Qkv(l),
                Probs(l),
                Ctx(l),
                Z(l),
                X1(l),
                H2(l),
                A(l),
                U(l),
                M(l),
                X(l + 1),
            ]);
        }
        v.extend([Flow(0), Flow(1), DU, DA, DH, DX1, DCtx, DProbs, DQkv]);
        if self.sp {
            v.extend([Gathered, Reduced, DFull, SpPack]);
        }
        if self.kv_replicated {
            v.push(KvPack);
        }
        v
    }

    /// The shape `[rows, cols]` of a buffer.
    pub fn shape(&self, id: BufId) -> [usize; 2] {
        use BufId::*;
        let (t, tl, h) = (self.t, self.tl, self.h);
        match id {
            X(_) | H1(_) | X1(_) | H2(_) | Reduced | DOut | Flow(_) | DX1 => [tl, h],
            Z(_) | M(_) | Gathered | DFull | DH => [t, h],
            Qkv(_) | DQkv => [t, self.qc],
            Ctx(_) | DCtx => [t, self.hr],
            A(_) | U(_) | DU | DA => [t, self.fr],
            Probs(_) | DProbs => [self.batch * self.hp * self.seq, self.seq],
            W(_, k) | G(_, k) => self.plan.param(k).shard_shape(0),
            KvPack => [h + 1, self.kv_cols()],
            SpPack => [1, SP_VECTORS.len() * h],
        }
    }

    /// Elements of a buffer.
    pub fn len(&self, id: BufId) -> usize {
        let [r, c] = self.shape(id);
        r * c
    }

    /// Device bytes one rank allocates: every buffer in `elem` bytes, and the four LayerNorm
    /// statistics of `tl` f32 values per layer.
    pub fn bytes(&self, elem: usize) -> u64 {
        let elems: usize = self.buffers().into_iter().map(|b| self.len(b)).sum();
        (elems * elem + self.layers * 4 * self.tl * 4) as u64
    }

    /// The buffer holding `o` at layer `layer`.
    pub fn buffer(&self, o: Operand, layer: usize) -> BufId {
        use BufId as B;
        use Hold::*;
        use Tensor as T;
        let sp = self.sp;
        let l = layer;
        match o {
            Operand::Param(k) => B::W(l, k),
            Operand::Grad(k) => B::G(l, k),
            Operand::Act(t, hold) => match (t, hold) {
                (T::X, _) => B::X(l),
                (T::H1, Whole) if sp => B::Gathered,
                (T::H1, _) => B::H1(l),
                (T::Qkv, _) => B::Qkv(l),
                (T::Ctx, _) => B::Ctx(l),
                (T::Z, Tok) if sp => B::Reduced,
                (T::Z, _) => B::Z(l),
                (T::X1, _) => B::X1(l),
                (T::H2, Whole) if sp => B::Gathered,
                (T::H2, _) => B::H2(l),
                (T::A, _) => B::A(l),
                (T::U, _) => B::U(l),
                (T::M, Tok) if sp => B::Reduced,
                (T::M, _) => B::M(l),
                (T::Y, _) => B::X(l + 1),
                (T::DY, Whole) if sp => B::DFull,
                (T::DY, _) => self.dy(l),
                (T::DU, _) => B::DU,
                (T::DA, _) => B::DA,
                (T::DH2 | T::DH1, Tok) if sp => B::Reduced,
                (T::DH2 | T::DH1, _) => B::DH,
                (T::DX1, Whole) if sp => B::DFull,
                (T::DX1, _) => B::DX1,
                (T::DCtx, _) => B::DCtx,
                (T::DQkv, _) => B::DQkv,
                (T::DX, _) => self.dx(l),
                (T::DKv, _) => B::KvPack,
            },
        }
    }

    /// What a compute op reads and writes, in the engine's order (`None` for the ops outside
    /// the block: the vocabulary-parallel ends and collectives).
    pub fn io(&self, op: Op) -> Option<(Vec<Operand>, Vec<Operand>)> {
        use Hold::*;
        use Operand::{Act, Grad, Param};
        use ParamKind as P;
        use Tensor as T;
        let io = |r: &[Operand], w: &[Operand]| Some((r.to_vec(), w.to_vec()));
        // The block's two halves read and write alike; each kind of op, once.
        let ln = |x, w, b, y| io(&[Act(x, Tok), Param(w), Param(b)], &[Act(y, Tok)]);
        // Column-parallel: every token in, the rank's columns out.
        let col_linear = |x, w, b, y| io(&[Act(x, Whole), Param(w), Param(b)], &[Act(y, Cols)]);
        // Row-parallel: the rank's columns in, a full-shape partial sum out (before `g`).
        let row_linear = |x, w, y| io(&[Act(x, Cols), Param(w)], &[Act(y, Partial)]);
        let bias_residual =
            |res, z, b, y| io(&[Act(res, Tok), Act(z, Tok), Param(b)], &[Act(y, Tok)]);
        let row_linear_bwd = |dy, x, w, dx| {
            io(
                &[Act(dy, Whole), Act(x, Cols), Param(w)],
                &[Act(dx, Cols), Grad(w)],
            )
        };
        let col_linear_bwd = |dy, x, w, b, dx| {
            (
                vec![Act(dy, Cols), Act(x, Whole), Param(w)],
                vec![Act(dx, Partial), Grad(w), Grad(b)],
            )
        };
        let ln_bwd = |dh, x, w, b, dres, dx| {
            io(
                &[Act(dh, Tok), Act(x, Tok), Param(w), Act(dres, Tok)],
                &[Act(dx, Tok), Grad(w), Grad(b)],
            )
        };
        match op {
            Op::Ln1 => ln(T::X, P::Ln1Weight, P::Ln1Bias, T::H1),
            Op::Qkv => col_linear(T::H1, P::QkvWeight, P::QkvBias, T::Qkv),
            Op::AttnCore => io(&[Act(T::Qkv, Cols)], &[Act(T::Ctx, Cols)]),
            Op::AttnOut => row_linear(T::Ctx, P::OutWeight, T::Z),
            Op::AttnBiasResidual => bias_residual(T::X, T::Z, P::OutBias, T::X1),
            Op::Ln2 => ln(T::X1, P::Ln2Weight, P::Ln2Bias, T::H2),
            Op::Fc1 => col_linear(T::H2, P::Fc1Weight, P::Fc1Bias, T::A),
            Op::Gelu => io(&[Act(T::A, Cols)], &[Act(T::U, Cols)]),
            Op::Fc2 => row_linear(T::U, P::Fc2Weight, T::M),
            Op::MlpBiasResidual => bias_residual(T::X1, T::M, P::Fc2Bias, T::Y),
            Op::MlpBiasResidualBwd => io(&[Act(T::DY, Tok)], &[Grad(P::Fc2Bias)]),
            Op::Fc2Bwd => row_linear_bwd(T::DY, T::U, P::Fc2Weight, T::DU),
            Op::GeluBwd => io(&[Act(T::A, Cols), Act(T::DU, Cols)], &[Act(T::DA, Cols)]),
            Op::Fc1Bwd => Some(col_linear_bwd(
                T::DA,
                T::H2,
                P::Fc1Weight,
                P::Fc1Bias,
                T::DH2,
            )),
            Op::Ln2Bwd => ln_bwd(T::DH2, T::X1, P::Ln2Weight, P::Ln2Bias, T::DY, T::DX1),
            Op::AttnBiasResidualBwd => io(&[Act(T::DX1, Tok)], &[Grad(P::OutBias)]),
            Op::AttnOutBwd => row_linear_bwd(T::DX1, T::Ctx, P::OutWeight, T::DCtx),
            Op::AttnCoreBwd => io(
                &[Act(T::DCtx, Cols), Act(T::Qkv, Cols)],
                &[Act(T::DQkv, Cols)],
            ),
            Op::QkvBwd => {
                let (r, mut w) = col_linear_bwd(T::DQkv, T::H1, P::QkvWeight, P::QkvBias, T::DH1);
                if self.kv_replicated {
                    w.push(Act(T::DKv, Partial));
                }
                Some((r, w))
            }
            Op::Ln1Bwd => ln_bwd(T::DH1, T::X, P::Ln1Weight, P::Ln1Bias, T::DX1, T::DX),
            block_collectives!() | model_ends!() | design_ops!() | decode_ops!() => None,
        }
    }

    /// The executor's buffers of a compute op: reads, then writes.
    pub fn io_buffers(&self, op: Op, layer: usize) -> Option<(Vec<BufId>, Vec<BufId>)> {
        let (r, w) = self.io(op)?;
        let map = |v: Vec<Operand>| v.into_iter().map(|o| self.buffer(o, layer)).collect();
        Some((map(r), map(w)))
    }

    /// What a collective of the block program does at `layer` (`None` for ops that are not the
    /// block's collectives).
    pub fn collective(&self, op: Op, layer: usize) -> Option<CollPlan> {
        use BufId as B;
        use CollectiveKind as K;
        let (t, tl, h) = (self.t, self.tl, self.h);
        let sp = self.sp;
        let plain = |kind, send, recv, count| {
            Some(CollPlan {
                kind,
                send,
                recv,
                count,
                pack: None,
            })
        };
        // `f` forward / `g` backward: all-gather with sequence parallelism, else nothing moves.
        let enter = |local: BufId, full: BufId| {
            if sp {
                plain(K::AllGather, local, full, tl * h)
            } else {
                plain(K::Identity, local, local, 0)
            }
        };
        // `g` forward / `f` backward: reduce-scatter with sequence parallelism, else all-reduce.
        let exit = |partial: BufId| {
            if sp {
                plain(K::ReduceScatter, partial, B::Reduced, tl * h)
            } else {
                plain(K::AllReduce, partial, partial, t * h)
            }
        };
        match op {
            Op::AttnF => enter(B::H1(layer), B::Gathered),
            Op::MlpF => enter(B::H2(layer), B::Gathered),
            Op::MlpGBwd => enter(self.dy(layer), B::DFull),
            Op::AttnGBwd => enter(B::DX1, B::DFull),
            Op::AttnG => exit(B::Z(layer)),
            Op::MlpG => exit(B::M(layer)),
            Op::MlpFBwd | Op::AttnFBwd => exit(B::DH),
            Op::MlpFBwdGather => plain(K::AllGather, B::H2(layer), B::Gathered, tl * h),
            Op::AttnFBwdGather => plain(K::AllGather, B::H1(layer), B::Gathered, tl * h),
            Op::KvGrads => Some(CollPlan {
                kind: K::AllReduce,
                send: B::KvPack,
                recv: B::KvPack,
                count: self.len(B::KvPack),
                pack: Some(Pack::KvCols(layer)),
            }),
            Op::SpGrads => Some(CollPlan {
                kind: K::AllReduce,
                send: B::SpPack,
                recv: B::SpPack,
                count: self.len(B::SpPack),
                pack: Some(Pack::SpVectors(layer)),
            }),
            block_compute!() | model_ends!() | design_ops!() | decode_ops!() => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tplab_engine::config::Preset;
    use tplab_engine::{block::program::schedule, trace::EventKind};

    /// TP 1, 2, 4 × sequence parallelism × (multi-head, GQA split, GQA replicated).
    fn scenarios() -> Vec<Config> {
        let mut v = Vec::new();
        for tp in [1, 2, 4] {
            for sp in [false, true] {
                for kv in [None, Some(4), Some(2)] {
                    v.push(Config {
                        hidden: 64,
                        heads: 8,
                        kv_heads: kv,
                        ffn: 128,
                        seq: 8,
                        batch: 2,
                        layers: 3,
                        tp,
                        sequence_parallel: sp,
                        ..Preset::Tiny.config()
                    });
                }
            }
        }
        v
    }

    /// Every tensor every event of the engine's program reads or writes is bound to a buffer of
    /// exactly that rank's placement shape; compute ops list the same tensors in the same order.
    #[test]
    fn every_buffer_has_the_engines_placement_shape() {
        for cfg in scenarios() {
            cfg.validate_shapes().unwrap();
            let lay = RankLayout::new(&cfg);
            let all = lay.buffers();
            let trace = schedule(&cfg).expect("Megatron's plan propagates");
            let mut collectives = 0;
            for e in &trace.events {
                let what = format!("{} ({})", e.label(), cfg.label());
                match &e.kind {
                    EventKind::Compute { .. } => {
                        let (r, w) = lay.io(e.op).expect("a compute op of the block");
                        let (rb, wb) = lay.io_buffers(e.op, e.layer).unwrap();
                        for (list, bufs, placed) in [(&r, &rb, &e.reads), (&w, &wb, &e.writes)] {
                            let names: Vec<TensorName> = list.iter().map(|o| o.name()).collect();
                            let want: Vec<TensorName> = placed.iter().map(|p| p.tensor).collect();
                            assert_eq!(names, want, "{what}");
                            for (b, p) in bufs.iter().zip(placed.iter()) {
                                assert!(all.contains(b), "{what}: {b:?} is not allocated");
                                let local = p.on(0).unwrap().local_shape(p.shape);
                                assert_eq!(lay.shape(*b), local, "{what}: {}", p.tensor);
                            }
                        }
                    }
                    EventKind::Collective { kind, .. } => {
                        collectives += 1;
                        let c = lay.collective(e.op, e.layer).expect("a block collective");
                        assert_eq!(c.kind, *kind, "{what}");
                        assert!(all.contains(&c.send) && all.contains(&c.recv), "{what}");
                        let elems = |p: &tplab_engine::block::TensorPlacement| {
                            let [a, b] = p.on(0).unwrap().local_shape(p.shape);
                            a * b
                        };
                        let read: usize = e.reads.iter().map(elems).sum();
                        let written: usize = e.writes.iter().map(elems).sum();
                        assert_eq!(lay.len(c.send), read, "{what}: send");
                        assert_eq!(lay.len(c.recv), written, "{what}: recv");
                        if e.reads.len() == 1 {
                            let p = &e.reads[0];
                            assert_eq!(lay.shape(c.send), p.on(0).unwrap().local_shape(p.shape));
                        }
                        match kind {
                            CollectiveKind::AllReduce => {
                                assert_eq!(c.send, c.recv);
                                assert_eq!(c.count, lay.len(c.send), "{what}");
                            }
                            CollectiveKind::AllGather => {
                                assert_eq!(c.count * e.ranks.len(), lay.len(c.recv), "{what}");
                                assert_eq!(c.count, lay.len(c.send), "{what}");
                            }
                            CollectiveKind::ReduceScatter => {
                                assert_eq!(c.count * e.ranks.len(), lay.len(c.send), "{what}");
                                assert_eq!(c.count, lay.len(c.recv), "{what}");
                            }
                            CollectiveKind::Identity => assert_eq!(c.send, c.recv),
                            other => panic!("{what}: unexpected {other:?}"),
                        }
                    }
                }
            }
            assert!(collectives >= 8 * cfg.layers, "{}", cfg.label());
        }
    }

    /// The layout holds exactly what the engine's placements say a rank holds: with sequence
    /// parallelism the saved token-row activations are `1/tp` of the tokens.
    #[test]
    fn sequence_parallel_rows_and_gqa_columns() {
        let base = Config {
            hidden: 64,
            heads: 8,
            ffn: 128,
            seq: 8,
            batch: 2,
            layers: 2,
            ..Preset::Tiny.config()
        };
        let sp = RankLayout::new(&Config {
            tp: 4,
            sequence_parallel: true,
            ..base.clone()
        });
        assert_eq!(sp.shape(BufId::H1(0)), [4, 64]);
        assert_eq!(sp.shape(BufId::Gathered), [16, 64]);
        assert_eq!(sp.shape(BufId::Z(1)), [16, 64]);
        assert_eq!(sp.shape(BufId::Reduced), [4, 64]);
        // GQA, TP=4 > 2 KV heads: two query heads and one KV head copy per rank, summed in
        // pairs of copies.
        let g = RankLayout::new(&Config {
            tp: 4,
            kv_heads: Some(2),
            ..base.clone()
        });
        assert_eq!((g.hp, g.kvp, g.d), (2, 1, 8));
        assert_eq!(g.shape(BufId::Qkv(0)), [16, 4 * 8]);
        assert_eq!(g.shape(BufId::KvPack), [65, 16]);
        assert!(g.buffers().contains(&BufId::KvPack));
        // GQA at TP=2 = KV heads: whole KV heads, nothing to sum.
        let g2 = RankLayout::new(&Config {
            tp: 2,
            kv_heads: Some(2),
            ..base
        });
        assert!(!g2.kv_replicated && !g2.buffers().contains(&BufId::KvPack));
    }

    /// The three op patterns split the engine's vocabulary as the engine does: the model's ends
    /// are `BlockPart::Ends`, the rest splits into compute ops and collectives by `Op::kind`.
    #[test]
    fn op_parts_match_the_engines_kinds() {
        use tplab_engine::block::BlockPart;
        for &op in Op::ALL {
            let ends = op.block_part() == BlockPart::Ends;
            let design = matches!(op, design_ops!() | decode_ops!());
            let parts = [
                matches!(op, block_compute!()),
                matches!(op, block_collectives!()),
                matches!(op, model_ends!()),
            ];
            let want = [
                !ends && !design && !op.is_collective(),
                !ends && !design && op.is_collective(),
                ends,
            ];
            assert_eq!(parts, want, "{op}");
        }
        let lay = RankLayout::new(&Preset::Tiny.config());
        for &op in Op::ALL {
            assert_eq!(lay.io(op).is_some(), matches!(op, block_compute!()), "{op}");
            assert_eq!(
                lay.collective(op, 0).is_some(),
                matches!(op, block_collectives!()),
                "{op}"
            );
        }
    }

    #[test]
    fn gradient_flow_alternates_and_ends_at_the_input() {
        for layers in [1, 2, 3, 4] {
            let lay = RankLayout::new(&Config {
                layers,
                ..Preset::Tiny.config()
            });
            assert_eq!(lay.dy(layers - 1), BufId::DOut);
            for l in 0..layers {
                assert_ne!(lay.dy(l), lay.dx(l));
                if l > 0 {
                    assert_eq!(lay.dx(l), lay.dy(l - 1));
                }
            }
        }
    }

    #[test]
    fn memory_shrinks_with_tp_and_sequence_parallelism() {
        let cfg = Preset::Gpt2Small.config();
        let at = |tp, sp| {
            RankLayout::new(&Config {
                tp,
                sequence_parallel: sp,
                ..cfg.clone()
            })
            .bytes(4)
        };
        assert!(at(1, false) > at(2, false) && at(2, false) > at(4, false));
        // The saved [tl, h] activations shrink 4x; the gathered scratch buffers are per rank,
        // not per layer, so with 12 layers the total shrinks.
        let deep = |sp| {
            RankLayout::new(&Config {
                tp: 4,
                layers: 12,
                sequence_parallel: sp,
                ..cfg.clone()
            })
            .bytes(4)
        };
        assert!(deep(true) < deep(false));
    }
}
