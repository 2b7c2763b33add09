//! Tensor names as a type: every tensor an op of a program reads or writes is a [`TensorName`],
//! so executors, checks and views match on a variant, never on a string. [`TensorName::name`]
//! is the name the exports, the Chrome trace and the JSON write (`X`, `dH1`,
//! `attn.qkv.weight`, `grad.mlp.fc1.weight`, `logits`), and serde writes and reads exactly that
//! string.
//!
//! The names fall in families, one variant each: a block's activations ([`Activation`]) and
//! their gradients, its parameters ([`ParamKind`]) and their gradients, the packed K/V gradient
//! of replicated KV heads, and the vocabulary pass's tensors ([`VocabTensor`]). A new program
//! (the serving decode step's KV cache, say) adds its own family: an enum of its tensors and a
//! variant here holding it, listed in [`TensorName::all`].

use crate::config::Config;
use crate::params::ParamKind;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The activations of a block (Megatron-LM's names): `X` the block input, `H1 = LN1(X)`,
/// `QKV`, the attention context `Ctx`, `Z = Ctx·W_out`, `X1` the residual stream after
/// attention, `H2 = LN2(X1)`, `A = H2·W1`, `U = GeLU(A)`, `M = U·W2`, `Y` the block output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Activation {
    /// The block input.
    X,
    /// `LN1(X)`.
    H1,
    /// `H1·W_qkv + b`.
    Qkv,
    /// Attention's context (heads side by side).
    Ctx,
    /// `Ctx·W_out` (before its bias).
    Z,
    /// `X + Z + b_out`.
    X1,
    /// `LN2(X1)`.
    H2,
    /// `H2·W1 + b1`.
    A,
    /// `GeLU(A)`.
    U,
    /// `U·W2` (before its bias).
    M,
    /// The block output `X1 + M + b2`.
    Y,
}

impl Activation {
    /// Every activation, in the block's order.
    pub const ALL: [Activation; 11] = {
        use Activation::*;
        [X, H1, Qkv, Ctx, Z, X1, H2, A, U, M, Y]
    };

    pub fn name(self) -> &'static str {
        match self {
            Activation::X => "X",
            Activation::H1 => "H1",
            Activation::Qkv => "QKV",
            Activation::Ctx => "Ctx",
            Activation::Z => "Z",
            Activation::X1 => "X1",
            Activation::H2 => "H2",
            Activation::A => "A",
            Activation::U => "U",
            Activation::M => "M",
            Activation::Y => "Y",
        }
    }

    /// The name of its gradient: `dX`, `dQKV`, `dCtx`.
    pub fn grad_name(self) -> &'static str {
        match self {
            Activation::X => "dX",
            Activation::H1 => "dH1",
            Activation::Qkv => "dQKV",
            Activation::Ctx => "dCtx",
            Activation::Z => "dZ",
            Activation::X1 => "dX1",
            Activation::H2 => "dH2",
            Activation::A => "dA",
            Activation::U => "dU",
            Activation::M => "dM",
            Activation::Y => "dY",
        }
    }

    /// The global shape `[tokens, features]`.
    pub fn shape(self, cfg: &Config) -> [usize; 2] {
        let t = cfg.tokens();
        match self {
            Activation::Qkv => [t, cfg.qkv_width()],
            Activation::A | Activation::U => [t, cfg.ffn],
            _ => [t, cfg.hidden],
        }
    }

    pub fn elems(self, cfg: &Config) -> usize {
        let [r, c] = self.shape(cfg);
        r * c
    }
}

/// The tensors of the vocabulary-parallel pass ([`crate::labs::vocab`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VocabTensor {
    /// Token ids `[T, 1]`.
    Ids,
    /// Each token's target id `[T, 1]` (the next token).
    Targets,
    /// The (tied) embedding table `[Vp, h]`.
    Embedding,
    /// The embedded tokens `[T, h]`.
    E,
    /// The logits `[T, Vp]`.
    Logits,
    /// Each token's row maximum `[1, T]`.
    RowMax,
    /// Each token's sum of `exp(logit − max)` `[1, T]`.
    SumExp,
    /// Each token's target logit `[1, T]`.
    TargetLogit,
    /// The gradient of the logits.
    DLogits,
    /// The gradient of the embedded tokens.
    DE,
    /// The gradient of the embedding table.
    EmbeddingGrad,
}

impl VocabTensor {
    pub const ALL: [VocabTensor; 11] = {
        use VocabTensor::*;
        [
            Ids,
            Targets,
            Embedding,
            E,
            Logits,
            RowMax,
            SumExp,
            TargetLogit,
            DLogits,
            DE,
            EmbeddingGrad,
        ]
    };

    pub fn name(self) -> &'static str {
        match self {
            VocabTensor::Ids => "ids",
            VocabTensor::Targets => "targets",
            VocabTensor::Embedding => "embedding",
            VocabTensor::E => "E",
            VocabTensor::Logits => "logits",
            VocabTensor::RowMax => "row max",
            VocabTensor::SumExp => "sum of exp",
            VocabTensor::TargetLogit => "target logit",
            VocabTensor::DLogits => "dlogits",
            VocabTensor::DE => "dE",
            VocabTensor::EmbeddingGrad => "grad.embedding",
        }
    }
}

/// The tensors of the serving decode step ([`crate::block::decode`]) that the block and the
/// vocabulary pass do not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServeTensor {
    /// The learned position table's rows up to the cache length.
    Pos,
    /// A layer's KV cache before the step.
    KvPast,
    /// A layer's KV cache after the step's append.
    Kv,
    /// The final LayerNorm's weight and bias.
    LnfWeight,
    LnfBias,
    /// The final LayerNorm's output at the last position.
    Hf,
}

impl ServeTensor {
    pub const ALL: [ServeTensor; 6] = {
        use ServeTensor::*;
        [Pos, KvPast, Kv, LnfWeight, LnfBias, Hf]
    };

    pub fn name(self) -> &'static str {
        match self {
            ServeTensor::Pos => "pos",
            ServeTensor::KvPast => "KV (past)",
            ServeTensor::Kv => "KV",
            ServeTensor::LnfWeight => "lnf.weight",
            ServeTensor::LnfBias => "lnf.bias",
            ServeTensor::Hf => "Hf",
        }
    }
}

/// The name of a tensor of a program (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TensorName {
    /// A block activation: `X`, `H1`, …
    Act(Activation),
    /// An activation's gradient: `dY`, `dH2`, …
    Grad(Activation),
    /// The K and V columns of the QKV weight and bias gradients that replicated KV heads sum
    /// within their group (`dW_qkv[K,V]`).
    KvGrad,
    /// A block parameter: `attn.qkv.weight`.
    Param(ParamKind),
    /// A block parameter's gradient: `grad.attn.qkv.weight`.
    ParamGrad(ParamKind),
    /// A tensor of the vocabulary pass.
    Vocab(VocabTensor),
    /// A tensor of the serving decode step (its KV cache, positions, final LayerNorm).
    Serve(ServeTensor),
}

impl TensorName {
    /// Every tensor name.
    pub fn all() -> Vec<TensorName> {
        let mut out: Vec<TensorName> = Activation::ALL.map(TensorName::Act).to_vec();
        out.extend(Activation::ALL.map(TensorName::Grad));
        out.push(TensorName::KvGrad);
        out.extend(ParamKind::ALL.map(TensorName::Param));
        out.extend(ParamKind::ALL.map(TensorName::ParamGrad));
        out.extend(VocabTensor::ALL.map(TensorName::Vocab));
        out.extend(ServeTensor::ALL.map(TensorName::Serve));
        out
    }

    /// The name the exports and traces write.
    pub fn name(self) -> &'static str {
        match self {
            TensorName::Act(a) => a.name(),
            TensorName::Grad(a) => a.grad_name(),
            TensorName::KvGrad => "dW_qkv[K,V]",
            TensorName::Param(k) => k.suffix(),
            TensorName::ParamGrad(k) => k.grad_name(),
            TensorName::Vocab(v) => v.name(),
            TensorName::Serve(v) => v.name(),
        }
    }

    /// The tensor written `name` (reading an export or a file back), if any.
    pub fn from_name(name: &str) -> Option<TensorName> {
        Self::all().into_iter().find(|t| t.name() == name)
    }

    /// Whether it is a weight or a weight's gradient (a split along dim 0 is then "its rows";
    /// for an activation "its tokens").
    pub fn is_parameter(self) -> bool {
        matches!(
            self,
            TensorName::Param(_)
                | TensorName::ParamGrad(_)
                | TensorName::KvGrad
                | TensorName::Vocab(VocabTensor::Embedding | VocabTensor::EmbeddingGrad)
                | TensorName::Serve(ServeTensor::LnfWeight | ServeTensor::LnfBias)
        )
    }

    /// The short symbol a learner reads: `W1` for `mlp.fc1.weight`, `dW1` for its gradient;
    /// activations and the vocabulary pass's tensors keep their names (`X`, `dH1`, `logits`).
    pub fn symbol(self) -> String {
        match self {
            TensorName::Param(k) => k.symbol().to_string(),
            TensorName::ParamGrad(k) => format!("d{}", k.symbol()),
            TensorName::Vocab(VocabTensor::EmbeddingGrad) => "dembedding".to_string(),
            other => other.name().to_string(),
        }
    }
}

impl std::fmt::Display for TensorName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for TensorName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for TensorName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        TensorName::from_name(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown tensor name {name:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_unique_and_round_trips_through_its_string_and_serde() {
        let all = TensorName::all();
        assert_eq!(all.len(), 11 + 11 + 1 + 12 + 12 + 11 + 6);
        for (i, t) in all.iter().enumerate() {
            assert_eq!(TensorName::from_name(t.name()), Some(*t), "{t}");
            assert_eq!(t.to_string(), t.name());
            let json = serde_json::to_string(t).unwrap_or_default();
            assert_eq!(json, serde_json::to_string(t.name()).unwrap_or_default());
            let back: Option<TensorName> = serde_json::from_str(&json).ok();
            assert_eq!(back, Some(*t), "{json}");
            for u in &all[i + 1..] {
                assert_ne!(t.name(), u.name());
            }
        }
        assert!(serde_json::from_str::<TensorName>("\"W9\"").is_err());
        assert_eq!(TensorName::from_name("W9"), None);
    }

    #[test]
    fn names_are_todays_strings() {
        use Activation::*;
        let want = [
            (TensorName::Act(Qkv), "QKV"),
            (TensorName::Grad(Ctx), "dCtx"),
            (TensorName::Grad(H1), "dH1"),
            (TensorName::KvGrad, "dW_qkv[K,V]"),
            (TensorName::Param(ParamKind::QkvWeight), "attn.qkv.weight"),
            (
                TensorName::ParamGrad(ParamKind::Fc1Bias),
                "grad.mlp.fc1.bias",
            ),
            (TensorName::Vocab(VocabTensor::RowMax), "row max"),
            (
                TensorName::Vocab(VocabTensor::EmbeddingGrad),
                "grad.embedding",
            ),
        ];
        for (t, s) in want {
            assert_eq!(t.name(), s);
        }
        for k in ParamKind::ALL {
            assert_eq!(
                TensorName::ParamGrad(k).name(),
                format!("grad.{}", k.suffix())
            );
        }
        assert_eq!(TensorName::ParamGrad(ParamKind::Fc1Weight).symbol(), "dW1");
        assert!(TensorName::Vocab(VocabTensor::Embedding).is_parameter());
        assert!(!TensorName::Act(X).is_parameter());
    }
}
