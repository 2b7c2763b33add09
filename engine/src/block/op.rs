//! The block's op vocabulary: every op and collective role of a tensor-parallel transformer
//! block, forward and backward, plus the vocabulary-parallel embedding and loss; beside it the
//! words every op is described in: its [`Pass`], the [`Conjugate`] operator a collective
//! implements, how a linear layer is split ([`Parallel`]) and what a compute op does
//! ([`ComputeOp`]). This module depends on nothing else in the engine; the trace reads it.
//!
//! One closed enum: every executor, exporter and view matches on [`Op`], never on a name, so
//! adding an op makes the compiler list every place that must learn it. [`Op::name`] is the
//! dotted name the exports and the Chrome trace use (`attn.qkv`, `mlp.g.bwd`, …); [`Op::label`]
//! is the words a learner reads.

use serde::{Deserialize, Serialize};

/// Forward or backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pass {
    Forward,
    Backward,
}

impl Pass {
    pub fn name(self) -> &'static str {
        match self {
            Pass::Forward => "forward",
            Pass::Backward => "backward",
        }
    }
}

/// Megatron's conjugate operators (Shoeybi et al. 2019, Fig. 3).
///
/// `f`: identity in forward, all-reduce in backward; sits before each column-parallel layer.
/// `g`: all-reduce in forward, identity in backward; sits after each row-parallel layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Conjugate {
    F,
    G,
}

impl Conjugate {
    pub fn name(self) -> &'static str {
        match self {
            Conjugate::F => "f",
            Conjugate::G => "g",
        }
    }
}

/// How a linear layer is split (Megatron-LM's class names; PyTorch's `ColwiseParallel` /
/// `RowwiseParallel` are the same splits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Parallel {
    /// `ColumnParallelLinear`: each rank holds a block of output columns.
    Column,
    /// `RowParallelLinear`: each rank holds a block of input rows; outputs are partial sums.
    Row,
    /// Every rank holds the whole tensor (LayerNorms, row-parallel biases).
    Replicated,
    /// The op runs on rank-local data with no weight (attention core, GeLU).
    Local,
    /// Sequence parallelism: the op runs on the rank's `1/tp` of the token rows, with replicated
    /// weights (LayerNorms, row-parallel biases, residual adds).
    Sequence,
}

/// Compute op kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ComputeOp {
    LayerNorm,
    /// `y = x·W (+ b)`.
    Linear {
        bias: bool,
    },
    /// Causal multi-head attention core on the rank's heads: `softmax(QKᵀ/√d)·V`.
    Attention,
    Gelu,
    /// `y = x + a + b`: row-parallel bias added once after the all-reduce, plus the residual.
    BiasResidual,
    /// `y = x + b`: a bias added on its own (a learner's plan that sums a row-split output before
    /// an op other than the residual reads it).
    Bias,
    LayerNormBackward,
    /// Weight, bias and input gradient of a linear layer.
    LinearBackward {
        bias: bool,
    },
    AttentionBackward,
    GeluBackward,
    /// Bias gradient of a row-parallel bias (sum over tokens) and the residual's pass-through.
    BiasResidualBackward,
    /// A bias's gradient (sum over tokens) and the input gradient's pass-through.
    BiasBackward,
    /// Vocabulary-parallel embedding lookup: the rank's rows, zeros for ids it does not hold.
    Embedding,
    /// Local statistics of a vocabulary-parallel cross-entropy (row max, sum of exp, target).
    CrossEntropy,
    /// `softmax − onehot` on the rank's vocabulary columns.
    CrossEntropyBackward,
    /// Scatter-add of the embedded tokens' gradient into the rank's rows.
    EmbeddingBackward,
    /// Serving: the new rows' K and V copied into the rank's KV cache.
    CacheAppend,
}

impl ComputeOp {
    /// Words for the op, e.g. "matrix product + bias", "attention".
    pub fn label(self) -> &'static str {
        match self {
            ComputeOp::LayerNorm => "LayerNorm",
            ComputeOp::Linear { bias: true } => "matrix product + bias",
            ComputeOp::Linear { bias: false } => "matrix product",
            ComputeOp::Attention => "attention",
            ComputeOp::Gelu => "GeLU",
            ComputeOp::BiasResidual => "bias + residual",
            ComputeOp::Bias => "bias",
            ComputeOp::LayerNormBackward => "LayerNorm backward",
            ComputeOp::LinearBackward { .. } => "matrix product backward",
            ComputeOp::AttentionBackward => "attention backward",
            ComputeOp::GeluBackward => "GeLU backward",
            ComputeOp::BiasResidualBackward => "bias gradient",
            ComputeOp::BiasBackward => "bias gradient (alone)",
            ComputeOp::Embedding => "embedding lookup",
            ComputeOp::CrossEntropy => "cross-entropy statistics",
            ComputeOp::CrossEntropyBackward => "cross-entropy backward",
            ComputeOp::EmbeddingBackward => "embedding backward",
            ComputeOp::CacheAppend => "KV-cache append",
        }
    }
}

impl Parallel {
    /// Words for the split, e.g. "column-parallel".
    pub fn label(self) -> &'static str {
        match self {
            Parallel::Column => "column-parallel",
            Parallel::Row => "row-parallel",
            Parallel::Replicated => "replicated",
            Parallel::Local => "local",
            Parallel::Sequence => "sequence-parallel",
        }
    }
}

/// What an op is: a computation on each rank, or a collective over a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    Compute(ComputeOp),
    Collective(Role),
}

/// Why a collective is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Role {
    /// Megatron's `f` or `g` conjugate operator (identity one way, all-reduce the other; with
    /// sequence parallelism all-gather / reduce-scatter).
    Conjugate(Conjugate),
    /// Sequence parallelism: a LayerNorm output gathered again in backward for a column-parallel
    /// weight gradient.
    SequenceRegather,
    /// Grouped-query attention with replicated KV heads: the copies' K/V gradient sum.
    KvCopyGradSync,
    /// Sequence parallelism: the LayerNorm and row-parallel-bias gradient sum.
    LnBiasGradSync,
    /// Vocabulary parallelism: the masked lookups summed, the LM head's `f`, the loss statistics.
    Vocabulary,
    /// A change of placement a learner's sharding plan needs where Megatron's split has none
    /// ([`crate::block::design`]): e.g. the partial sum of `A` summed before GeLU when fc1 is
    /// split by rows.
    Move,
}

macro_rules! ops {
    ($( $(#[$doc:meta])* $v:ident = $name:literal, $pass:ident, $kind:expr, $label:literal; )*) => {
        /// Every op of the block program (and the vocabulary-parallel pass), in schedule order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum Op {
            $( $(#[$doc])* #[serde(rename = $name)] $v, )*
        }

        impl Op {
            /// Every op, in schedule order.
            pub const ALL: &'static [Op] = &[$(Op::$v),*];

            /// The dotted name the exports and traces use, e.g. `attn.qkv`, `mlp.f.bwd`.
            pub fn name(self) -> &'static str {
                match self { $(Op::$v => $name,)* }
            }

            /// Forward or backward.
            pub fn pass(self) -> Pass {
                match self { $(Op::$v => Pass::$pass,)* }
            }

            /// Compute or collective, and which.
            pub fn kind(self) -> OpKind {
                use Conjugate::{F, G};
                use ComputeOp::*;
                use OpKind::{Collective, Compute};
                use Role::{KvCopyGradSync, LnBiasGradSync, SequenceRegather, Vocabulary};
                match self { $(Op::$v => $kind,)* }
            }

            /// What a learner reads, e.g. "QKV projection (column-parallel)".
            pub fn label(self) -> &'static str {
                match self { $(Op::$v => $label,)* }
            }
        }
    };
}

ops! {
    Ln1 = "ln1", Forward, Compute(LayerNorm), "LayerNorm 1";
    /// `f` before the QKV projection: identity forward (all-gather with sequence parallelism).
    AttnF = "attn.f", Forward, Collective(Role::Conjugate(F)), "f before attention";
    Qkv = "attn.qkv", Forward, Compute(Linear { bias: true }), "QKV projection (column-parallel)";
    AttnCore = "attn.core", Forward, Compute(Attention), "attention on this GPU's heads";
    AttnOut = "attn.out", Forward, Compute(Linear { bias: false }), "output projection (row-parallel)";
    /// `g` after the out-projection: all-reduce forward (reduce-scatter with sequence parallelism).
    AttnG = "attn.g", Forward, Collective(Role::Conjugate(G)), "g after attention";
    AttnBiasResidual = "attn.bias_residual", Forward, Compute(BiasResidual), "output bias and residual";
    Ln2 = "ln2", Forward, Compute(LayerNorm), "LayerNorm 2";
    MlpF = "mlp.f", Forward, Collective(Role::Conjugate(F)), "f before the MLP";
    Fc1 = "mlp.fc1", Forward, Compute(Linear { bias: true }), "fc1 (column-parallel)";
    Gelu = "mlp.gelu", Forward, Compute(Gelu), "GeLU (local)";
    Fc2 = "mlp.fc2", Forward, Compute(Linear { bias: false }), "fc2 (row-parallel)";
    MlpG = "mlp.g", Forward, Collective(Role::Conjugate(G)), "g after the MLP";
    MlpBiasResidual = "mlp.bias_residual", Forward, Compute(BiasResidual), "fc2 bias and residual";

    MlpBiasResidualBwd = "mlp.bias_residual.bwd", Backward, Compute(BiasResidualBackward), "fc2 bias gradient";
    MlpGBwd = "mlp.g.bwd", Backward, Collective(Role::Conjugate(G)), "g after the MLP, backward (identity)";
    Fc2Bwd = "mlp.fc2.bwd", Backward, Compute(LinearBackward { bias: false }), "fc2 gradients";
    GeluBwd = "mlp.gelu.bwd", Backward, Compute(GeluBackward), "GeLU gradient";
    MlpFBwdGather = "mlp.f.bwd.gather", Backward, Collective(SequenceRegather), "LayerNorm 2 output gathered again";
    Fc1Bwd = "mlp.fc1.bwd", Backward, Compute(LinearBackward { bias: true }), "fc1 gradients";
    MlpFBwd = "mlp.f.bwd", Backward, Collective(Role::Conjugate(F)), "f before the MLP, backward: input gradient summed";
    Ln2Bwd = "ln2.bwd", Backward, Compute(LayerNormBackward), "LayerNorm 2 gradient";
    AttnBiasResidualBwd = "attn.bias_residual.bwd", Backward, Compute(BiasResidualBackward), "output bias gradient";
    AttnGBwd = "attn.g.bwd", Backward, Collective(Role::Conjugate(G)), "g after attention, backward (identity)";
    AttnOutBwd = "attn.out.bwd", Backward, Compute(LinearBackward { bias: false }), "output projection gradients";
    AttnCoreBwd = "attn.core.bwd", Backward, Compute(AttentionBackward), "attention gradient";
    AttnFBwdGather = "attn.f.bwd.gather", Backward, Collective(SequenceRegather), "LayerNorm 1 output gathered again";
    QkvBwd = "attn.qkv.bwd", Backward, Compute(LinearBackward { bias: true }), "QKV projection gradients";
    KvGrads = "attn.kv.grads", Backward, Collective(KvCopyGradSync), "K/V copies' gradients summed";
    AttnFBwd = "attn.f.bwd", Backward, Collective(Role::Conjugate(F)), "f before attention, backward: input gradient summed";
    Ln1Bwd = "ln1.bwd", Backward, Compute(LayerNormBackward), "LayerNorm 1 gradient";
    SpGrads = "sp.grads", Backward, Collective(LnBiasGradSync), "LayerNorm and bias gradients summed";

    EmbedLookup = "embed.lookup", Forward, Compute(Embedding), "embedding lookup (its vocabulary rows)";
    EmbedG = "embed.g", Forward, Collective(Vocabulary), "embeddings summed";
    LmHead = "lm_head", Forward, Compute(Linear { bias: false }), "LM head (its vocabulary columns)";
    CeLocal = "ce.local", Forward, Compute(CrossEntropy), "cross-entropy statistics on its columns";
    CeMax = "ce.max", Forward, Collective(Vocabulary), "row maximum across GPUs";
    CeSumExp = "ce.sumexp", Forward, Collective(Vocabulary), "sum of exponentials across GPUs";
    CeTarget = "ce.target", Forward, Collective(Vocabulary), "target logit across GPUs";
    CeBwd = "ce.bwd", Backward, Compute(CrossEntropyBackward), "cross-entropy gradient";
    LmHeadBwd = "lm_head.bwd", Backward, Compute(LinearBackward { bias: false }), "LM head gradients";
    LmHeadFBwd = "lm_head.f.bwd", Backward, Collective(Vocabulary), "LM head input gradient summed";
    EmbedBwd = "embed.bwd", Backward, Compute(EmbeddingBackward), "embedding gradient (its rows)";

    PosEmbed = "embed.pos", Forward, Compute(BiasResidual), "position embedding added";
    FinalLn = "lnf", Forward, Compute(LayerNorm), "final LayerNorm";
    LogitsGather = "lm_head.gather", Forward, Collective(Vocabulary), "logits gathered for sampling";

    // A learner's sharding plan (`block::design`): the changes of placement Megatron's split
    // does not need, and a row-split weight's bias added on its own before a reader other than
    // the residual. (Changes of H1, Z, H2 and M keep Megatron's names f and g.)
    XMove = "block.input.move", Forward, Collective(Role::Move), "block input redistributed";
    H1Move = "ln1.move", Forward, Collective(Role::Move), "LayerNorm 1 output redistributed";
    ZMove = "attn.out.move", Forward, Collective(Role::Move), "output projection's output redistributed";
    H2Move = "ln2.move", Forward, Collective(Role::Move), "LayerNorm 2 output redistributed";
    MMove = "mlp.fc2.move", Forward, Collective(Role::Move), "fc2 output redistributed";
    QkvMove = "attn.qkv.move", Forward, Collective(Role::Move), "QKV redistributed";
    CtxMove = "attn.core.move", Forward, Collective(Role::Move), "attention output redistributed";
    X1Move = "attn.residual.move", Forward, Collective(Role::Move), "residual stream redistributed";
    AMove = "mlp.fc1.move", Forward, Collective(Role::Move), "fc1 output redistributed";
    UMove = "mlp.gelu.move", Forward, Collective(Role::Move), "GeLU output redistributed";
    YMove = "block.output.move", Forward, Collective(Role::Move), "block output redistributed";
    QkvBias = "attn.qkv.bias", Forward, Compute(Bias), "QKV bias added";
    OutBias = "attn.out.bias", Forward, Compute(Bias), "output projection bias added";
    Fc1Bias = "mlp.fc1.bias", Forward, Compute(Bias), "fc1 bias added";
    Fc2Bias = "mlp.fc2.bias", Forward, Compute(Bias), "fc2 bias added";
    QkvBiasBwd = "attn.qkv.bias.bwd", Backward, Compute(BiasBackward), "QKV bias gradient";
    OutBiasBwd = "attn.out.bias.bwd", Backward, Compute(BiasBackward), "output projection bias gradient";
    Fc1BiasBwd = "mlp.fc1.bias.bwd", Backward, Compute(BiasBackward), "fc1 bias gradient";
    Fc2BiasBwd = "mlp.fc2.bias.bwd", Backward, Compute(BiasBackward), "fc2 bias gradient";
    YMoveBwd = "block.output.move.bwd", Backward, Collective(Role::Move), "output gradient redistributed";
    UMoveBwd = "mlp.gelu.move.bwd", Backward, Collective(Role::Move), "GeLU output gradient redistributed";
    AMoveBwd = "mlp.fc1.move.bwd", Backward, Collective(Role::Move), "fc1 output gradient redistributed";
    X1MoveBwd = "attn.residual.move.bwd", Backward, Collective(Role::Move), "residual stream gradient redistributed";
    CtxMoveBwd = "attn.core.move.bwd", Backward, Collective(Role::Move), "attention output gradient redistributed";
    QkvMoveBwd = "attn.qkv.move.bwd", Backward, Collective(Role::Move), "QKV gradient redistributed";
    XMoveBwd = "block.input.move.bwd", Backward, Collective(Role::Move), "input gradient redistributed";
    H1MoveBwd = "ln1.move.bwd", Backward, Collective(Role::Move), "LayerNorm 1 output gradient redistributed";
    ZMoveBwd = "attn.out.move.bwd", Backward, Collective(Role::Move), "output projection's output gradient redistributed";
    H2MoveBwd = "ln2.move.bwd", Backward, Collective(Role::Move), "LayerNorm 2 output gradient redistributed";
    MMoveBwd = "mlp.fc2.move.bwd", Backward, Collective(Role::Move), "fc2 output gradient redistributed";
    ParamGradGather = "grads.gather", Backward, Collective(Role::Move), "a bias gradient gathered";

    // The decode step of serving (`block::decode`): the new rows' K and V written into the
    // rank's KV cache, which attention then reads.
    KvAppend = "attn.kv_append", Forward, Compute(CacheAppend), "K and V appended to this GPU's cache";
}

impl Op {
    /// The forward ops of a block's attention half, in order: LayerNorm, `f`, the
    /// column-parallel linear, the local op, the row-parallel linear, `g`, bias and residual.
    pub const ATTENTION_HALF: [Op; 7] = {
        use Op::*;
        [Ln1, AttnF, Qkv, AttnCore, AttnOut, AttnG, AttnBiasResidual]
    };

    /// The forward ops of a block's MLP half, in the same order as [`Op::ATTENTION_HALF`]
    /// (Megatron-LM splits both halves alike).
    pub const MLP_HALF: [Op; 7] = {
        use Op::*;
        [Ln2, MlpF, Fc1, Gelu, Fc2, MlpG, MlpBiasResidual]
    };

    /// The op named `name` (`attn.qkv`, `mlp.g.bwd`, …), if any.
    pub fn from_name(name: &str) -> Option<Op> {
        Op::ALL.iter().copied().find(|o| o.name() == name)
    }

    pub fn is_collective(self) -> bool {
        matches!(self.kind(), OpKind::Collective(_))
    }

    /// The compute kind of a compute op.
    pub fn compute(self) -> Option<ComputeOp> {
        match self.kind() {
            OpKind::Compute(c) => Some(c),
            OpKind::Collective(_) => None,
        }
    }

    /// The conjugate operator a collective implements, if any.
    pub fn conjugate(self) -> Option<Conjugate> {
        match self.kind() {
            OpKind::Collective(Role::Conjugate(c)) => Some(c),
            _ => None,
        }
    }

    /// Whether the op belongs to the attention half of a block (else the MLP half, or neither
    /// for the sequence-parallel gradient sum and the model's ends).
    pub fn block_part(self) -> BlockPart {
        use Op::*;
        match self {
            Ln1 | AttnF | Qkv | AttnCore | AttnOut | AttnG | AttnBiasResidual
            | AttnBiasResidualBwd | AttnGBwd | AttnOutBwd | AttnCoreBwd | AttnFBwdGather
            | QkvBwd | KvGrads | AttnFBwd | Ln1Bwd | KvAppend => BlockPart::Attention,
            Ln2 | MlpF | Fc1 | Gelu | Fc2 | MlpG | MlpBiasResidual | MlpBiasResidualBwd
            | MlpGBwd | Fc2Bwd | GeluBwd | MlpFBwdGather | Fc1Bwd | MlpFBwd | Ln2Bwd => {
                BlockPart::Mlp
            }
            SpGrads | ParamGradGather => BlockPart::Block,
            XMove | H1Move | QkvMove | CtxMove | ZMove | X1Move | QkvBias | OutBias
            | QkvBiasBwd | OutBiasBwd | X1MoveBwd | ZMoveBwd | CtxMoveBwd | QkvMoveBwd
            | H1MoveBwd | XMoveBwd => BlockPart::Attention,
            H2Move | AMove | UMove | MMove | YMove | Fc1Bias | Fc2Bias | Fc1BiasBwd
            | Fc2BiasBwd | YMoveBwd | MMoveBwd | UMoveBwd | AMoveBwd | H2MoveBwd => BlockPart::Mlp,
            EmbedLookup | EmbedG | LmHead | CeLocal | CeMax | CeSumExp | CeTarget | CeBwd
            | LmHeadBwd | LmHeadFBwd | EmbedBwd | PosEmbed | FinalLn | LogitsGather => {
                BlockPart::Ends
            }
        }
    }
}

/// A pattern of every op of a learner's sharding plan that Megatron's split does not have (its
/// moves, lone biases and their gradients, the bias-gradient gather; [`crate::block::design`]):
/// the executors of the other programs (the vocabulary pass, the decode step, the GPU's walks)
/// refuse them together. A test holds it to the ops' kinds.
#[macro_export]
macro_rules! design_ops {
    () => {
        $crate::block::op::Op::XMove
            | $crate::block::op::Op::H1Move
            | $crate::block::op::Op::ZMove
            | $crate::block::op::Op::H2Move
            | $crate::block::op::Op::MMove
            | $crate::block::op::Op::H1MoveBwd
            | $crate::block::op::Op::ZMoveBwd
            | $crate::block::op::Op::H2MoveBwd
            | $crate::block::op::Op::MMoveBwd
            | $crate::block::op::Op::QkvMove
            | $crate::block::op::Op::CtxMove
            | $crate::block::op::Op::X1Move
            | $crate::block::op::Op::AMove
            | $crate::block::op::Op::UMove
            | $crate::block::op::Op::YMove
            | $crate::block::op::Op::QkvBias
            | $crate::block::op::Op::OutBias
            | $crate::block::op::Op::Fc1Bias
            | $crate::block::op::Op::Fc2Bias
            | $crate::block::op::Op::QkvBiasBwd
            | $crate::block::op::Op::OutBiasBwd
            | $crate::block::op::Op::Fc1BiasBwd
            | $crate::block::op::Op::Fc2BiasBwd
            | $crate::block::op::Op::YMoveBwd
            | $crate::block::op::Op::UMoveBwd
            | $crate::block::op::Op::AMoveBwd
            | $crate::block::op::Op::X1MoveBwd
            | $crate::block::op::Op::CtxMoveBwd
            | $crate::block::op::Op::QkvMoveBwd
            | $crate::block::op::Op::XMoveBwd
            | $crate::block::op::Op::ParamGradGather
    };
}

/// Which part of the model an op belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BlockPart {
    Attention,
    Mlp,
    /// The whole block (sequence parallelism's gradient sum).
    Block,
    /// The model's ends around the blocks: embeddings, final LayerNorm, LM head and loss.
    Ends,
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        for (i, a) in Op::ALL.iter().enumerate() {
            assert_eq!(Op::from_name(a.name()), Some(*a));
            for b in &Op::ALL[i + 1..] {
                assert_ne!(a.name(), b.name());
            }
            // The JSON form is the dotted name.
            let j = serde_json::to_string(a).unwrap_or_default();
            assert_eq!(j, format!("\"{}\"", a.name()));
        }
        assert_eq!(Op::from_name("mlp.fc3"), None);
    }

    #[test]
    fn the_halves_are_forward_in_schedule_order_with_f_and_g() {
        use super::Conjugate;
        for (half, part) in [
            (Op::ATTENTION_HALF, BlockPart::Attention),
            (Op::MLP_HALF, BlockPart::Mlp),
        ] {
            // `Op`'s order is the schedule's.
            assert!(half.windows(2).all(|w| w[0] < w[1]), "{half:?}");
            for op in half {
                assert_eq!((op.pass(), op.block_part()), (Pass::Forward, part), "{op}");
            }
            assert_eq!(half[1].conjugate(), Some(Conjugate::F));
            assert_eq!(half[5].conjugate(), Some(Conjugate::G));
        }
    }

    #[test]
    fn design_ops_are_exactly_a_plans_moves_and_lone_biases() {
        for op in Op::ALL.iter().copied() {
            let own = matches!(
                op.kind(),
                OpKind::Collective(Role::Move)
                    | OpKind::Compute(ComputeOp::Bias | ComputeOp::BiasBackward)
            );
            assert_eq!(matches!(op, crate::design_ops!()), own, "{op}");
        }
    }

    #[test]
    fn backward_ops_are_named_bwd_or_are_collectives() {
        for op in Op::ALL {
            if op.pass() == Pass::Backward && !op.is_collective() {
                assert!(op.name().ends_with(".bwd"), "{op}");
            }
        }
    }
}
