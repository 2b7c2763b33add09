//! Sharding propagation: from a [`ShardingPlan`] to the program of one block — every op, every
//! redistribution and why — the way PyTorch DTensor propagates placements.
//!
//! Each forward op has placement rules ([`accepts`]): a linear layer with its weight split by
//! columns needs the whole input and gives its columns of the output; split by rows it needs the
//! input's matching columns and gives a partial sum; GeLU and softmax refuse a partial sum;
//! LayerNorm needs whole rows; attention needs each head's Q, K and V on one GPU; a residual add
//! needs both sides held alike. Where an op cannot take what it is given, the cheapest
//! redistribution is inserted (auto), or the program is refused with the rule it breaks (manual).
//!
//! The backward is derived, never written: walking the forward in reverse, each op's gradient
//! rule gives the placement of its input gradients (a column-split linear's input gradient is a
//! partial sum; a row-split one's is its columns), and a gradient must reach the placement its
//! tensor had in the forward (a partial sum's gradient is the whole gradient on every GPU).
//! Megatron-LM's `f` and `g` come out of these rules for Megatron's plan: `g` is the forward
//! all-reduce the residual add asks for, whose backward is the identity; `f` is the identity
//! forward whose backward is the all-reduce LayerNorm's gradient asks for.

use super::plan::{ManualCollective, ManualKind, ShardingPlan, Site, Split, Weight};
use crate::block::op::Pass;
use crate::block::placement::{Placement, PlacementKind};
use crate::block::plan::ShardPlan;
use crate::collectives::CollectiveKind;
use crate::config::{human_bytes, Config};
use crate::params::ParamKind;
use serde::Serialize;

/// What every GPU holds of a tensor (the same kind on every GPU): DTensor's placements, with
/// the two shard dimensions of a `[tokens, features]` activation named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Place {
    /// `Replicate()`: the whole tensor.
    Replicate,
    /// `Shard(0)`: its token rows (`1/tp` of them).
    Tokens,
    /// `Shard(1)`: its features (for QKV, its heads' Q, K and V columns).
    Features,
    /// `Partial()`: a full-shape term of a sum over the GPUs.
    Partial,
}

impl Place {
    pub fn kind(self) -> PlacementKind {
        match self {
            Place::Replicate => PlacementKind::Replicate,
            Place::Tokens => PlacementKind::Shard(0),
            Place::Features => PlacementKind::Shard(1),
            Place::Partial => PlacementKind::Partial,
        }
    }

    /// What a learner reads: "the whole tensor", "its tokens", "its columns", "a partial sum".
    pub fn words(self) -> &'static str {
        match self {
            Place::Replicate => "the whole tensor",
            Place::Tokens => "its tokens (rows)",
            Place::Features => "its columns",
            Place::Partial => "a partial sum",
        }
    }

    /// The placement the gradient of a tensor held this way must reach: the same, except that a
    /// partial sum's gradient is the whole gradient (`Y = ΣPᵢ`, so `∂L/∂Pᵢ = ∂L/∂Y`).
    pub fn grad(self) -> Place {
        match self {
            Place::Partial => Place::Replicate,
            p => p,
        }
    }
}

/// The activations of a block (Megatron-LM's names), as the typed tensor names have them.
pub use crate::block::tensor::Activation as Tensor;

/// One value of the program: a tensor in one placement (a redistribution makes a new value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Value {
    pub tensor: Tensor,
    pub place: Place,
    /// A row-split linear's bias, not yet added: a partial sum's bias is added once, after the
    /// sum (Megatron's `skip_bias_add`), by the op that reads the summed value.
    pub pending_bias: Option<Weight>,
    /// Set when a learner's program left this value in a placement its reader refuses and it
    /// ran anyway (`allow_wrong`): the reader treated it as if it were held as it needs.
    pub mislabelled: bool,
}

/// Index of a [`Value`] in [`Program::values`].
pub type ValueId = usize;

/// How a redistribution moves data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Move {
    AllReduce,
    ReduceScatter,
    AllGather,
    AllToAll,
    /// `Replicate → Shard`: each GPU keeps its slice; no communication.
    Slice,
}

impl Move {
    /// The move that changes `from` into `to`, if one does.
    pub fn between(from: Place, to: Place) -> Option<Move> {
        use Place::*;
        Some(match (from, to) {
            (Partial, Replicate) => Move::AllReduce,
            (Partial, Tokens | Features) => Move::ReduceScatter,
            (Tokens | Features, Replicate) => Move::AllGather,
            (Tokens, Features) | (Features, Tokens) => Move::AllToAll,
            (Replicate, Tokens | Features) => Move::Slice,
            (Replicate, Replicate) | (Tokens, Tokens) | (Features, Features) | (_, Partial) => {
                return None
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Move::AllReduce => "all-reduce",
            Move::ReduceScatter => "reduce-scatter",
            Move::AllGather => "all-gather",
            Move::AllToAll => "all-to-all",
            Move::Slice => "local slice",
        }
    }

    /// The collectives module's kind, for the moves it schedules.
    pub fn collective(self) -> Option<CollectiveKind> {
        match self {
            Move::AllReduce => Some(CollectiveKind::AllReduce),
            Move::ReduceScatter => Some(CollectiveKind::ReduceScatter),
            Move::AllGather => Some(CollectiveKind::AllGather),
            Move::AllToAll => Some(CollectiveKind::AllToAll),
            Move::Slice => None,
        }
    }

    pub fn communicates(self) -> bool {
        self != Move::Slice
    }
}

/// The LayerNorm of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Norm {
    Ln1,
    Ln2,
}

impl Norm {
    pub fn params(self) -> (ParamKind, ParamKind) {
        match self {
            Norm::Ln1 => (ParamKind::Ln1Weight, ParamKind::Ln1Bias),
            Norm::Ln2 => (ParamKind::Ln2Weight, ParamKind::Ln2Bias),
        }
    }
}

/// A forward step.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum Step {
    LayerNorm {
        norm: Norm,
        x: ValueId,
        y: ValueId,
    },
    /// `y = x·W (+ b)`; `bias` false when the output is a partial sum (the bias waits).
    Linear {
        weight: Weight,
        x: ValueId,
        y: ValueId,
        bias: bool,
    },
    Attention {
        qkv: ValueId,
        ctx: ValueId,
    },
    Gelu {
        a: ValueId,
        u: ValueId,
    },
    /// A waiting bias added to a summed value before an op other than the residual reads it
    /// (`once`: the value is still a partial sum, so only GPU 0 adds it).
    Bias {
        x: ValueId,
        y: ValueId,
        weight: Weight,
        once: bool,
    },
    /// `y = stream + branch (+ the branch's waiting bias)`.
    Residual {
        stream: ValueId,
        branch: ValueId,
        y: ValueId,
        bias: Option<Weight>,
    },
    Redistribute(Redistribution),
}

impl Step {
    /// The values the step reads.
    pub fn reads(&self) -> Vec<ValueId> {
        match self {
            Step::LayerNorm { x, .. } | Step::Linear { x, .. } | Step::Bias { x, .. } => vec![*x],
            Step::Attention { qkv, .. } => vec![*qkv],
            Step::Gelu { a, .. } => vec![*a],
            Step::Residual { stream, branch, .. } => vec![*stream, *branch],
            Step::Redistribute(rd) => vec![rd.from],
        }
    }
}

/// A change of placement in the forward program.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Redistribution {
    pub from: ValueId,
    pub to: ValueId,
    #[serde(rename = "move")]
    pub mv: Move,
    /// Placed by the learner (manual plans), else by the rules.
    pub manual: bool,
    /// Why, in words: "the residual add needs Z whole on every GPU; it is a partial sum".
    pub reason: String,
}

/// A backward step.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum BackStep {
    /// The gradient rule of forward step `index`.
    Grad { index: usize },
    /// The gradient of `value` changes placement: `from` (what the rules produced) → `to`.
    GradMove {
        value: ValueId,
        from: Place,
        to: Place,
        #[serde(rename = "move")]
        mv: Move,
        reason: String,
    },
    /// The gradient of `value` passes back through a forward all-reduce unchanged: the
    /// all-reduce's conjugate is the identity (Megatron's `g` backward). Nothing runs; the trace
    /// draws it so that every communicating collective shows its other half.
    PassThrough { value: ValueId, place: Place },
    /// A value an all-gather produced is gathered again for a weight gradient instead of being
    /// kept (Megatron's sequence parallelism saves the memory this way).
    Regather { value: ValueId, source: ValueId },
    /// Replicated KV heads: each group of copies sums its K and V gradients.
    KvGradSum { groups: Vec<Vec<usize>> },
    /// The replicated parameters whose gradients are partial sums (computed over each GPU's
    /// tokens or partial inputs), summed in one all-reduce at the end of the layer.
    ParamGradSum { params: Vec<ParamKind> },
    /// A replicated bias whose gradient each GPU computed for its columns only: gathered.
    ParamGradGather { param: ParamKind },
}

/// A place where a program breaks a rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DesignError {
    pub pass: Pass,
    pub layer: usize,
    /// The dotted name of the op that reads the wrong placement.
    pub op: &'static str,
    /// The op in words ("GeLU").
    #[serde(skip)]
    pub op_words: &'static str,
    /// Where, as a type (the app and the challenges match on this, never on `op`).
    #[serde(skip)]
    pub at: ErrorAt,
    /// The tensor read in the wrong placement (serialized as its name, `M`).
    pub tensor: crate::block::TensorName,
    /// The first GPU that reads it wrongly (every GPU does, in these programs).
    pub rank: usize,
    /// DTensor's spelling of what the GPU holds: `Partial()`.
    pub placement: String,
    /// What it holds, in words.
    #[serde(skip)]
    pub holds: Place,
    /// The rule in a sentence a learner understands.
    pub rule: String,
    /// The cheapest fixes, cheapest first.
    pub fixes: Vec<String>,
    /// The rule, as a type (the app words it in the learner's language).
    #[serde(skip)]
    pub kind: Rule,
    /// The fixes that are actions a learner can apply (the app offers them as buttons).
    #[serde(skip)]
    pub actions: Vec<Fix>,
}

/// Which placement rule a program breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// GeLU reads a partial sum: GeLU(a)+GeLU(b) ≠ GeLU(a+b).
    GeluPartial,
    /// Attention reads a partial sum: softmax is not linear.
    AttentionPartial,
    /// Attention reads only its tokens: a token attends to every earlier token.
    AttentionTokens,
    /// LayerNorm reads a partial sum: statistics of a sum are not sums of statistics.
    NormPartial,
    /// LayerNorm reads only its columns: it needs whole rows.
    NormColumns,
    /// A column-split weight reads less than its whole input.
    ColumnSplitNeedsWhole(Weight),
    /// A row-split weight reads something other than its columns of the input.
    RowSplitNeedsColumns(Weight),
    /// A whole weight reads only columns of its input.
    WholeWeightNeedsRows(Weight),
    /// The residual add reads a partial sum while the stream is held as given.
    ResidualPartial { stream: Place },
    /// The residual add reads a branch held unlike the stream.
    ResidualMismatch { stream: Place },
    /// A hand-placed collective has nothing to do.
    NothingToDo { kind: ManualKind, after: Site },
    /// Any other refusal.
    Other,
}

/// One way to repair a refused program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fix {
    /// Place `kind` after `after`, so the reader gets `to`; each GPU sends `bytes`.
    Collective {
        after: Site,
        kind: ManualKind,
        bytes: u64,
        to: Place,
    },
    /// Take this GPU's slice (free; the rules do it for you in manual mode too).
    Slice,
    /// Split `weight` this way instead.
    Split { weight: Weight, split: Split },
    /// Remove a collective placed by hand.
    Remove { after: Site, kind: ManualKind },
}

/// The forward op whose output is `t` (where a collective on `t` is placed), if any.
pub fn site_of(t: Tensor) -> Option<Site> {
    Some(match t {
        Tensor::H1 => Site::Ln1,
        Tensor::Qkv => Site::Qkv,
        Tensor::Ctx => Site::Attention,
        Tensor::Z => Site::Out,
        Tensor::X1 => Site::AttnResidual,
        Tensor::H2 => Site::Ln2,
        Tensor::A => Site::Fc1,
        Tensor::U => Site::Gelu,
        Tensor::M => Site::Fc2,
        Tensor::X | Tensor::Y => return None,
    })
}

impl Move {
    /// The collective a learner places for this move (`None`: a local slice).
    pub fn manual_kind(self) -> Option<ManualKind> {
        match self {
            Move::AllReduce => Some(ManualKind::AllReduce),
            Move::ReduceScatter => Some(ManualKind::ReduceScatter),
            Move::AllGather => Some(ManualKind::AllGather),
            Move::AllToAll => Some(ManualKind::AllToAll),
            Move::Slice => None,
        }
    }
}

impl std::fmt::Display for DesignError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.rule)?;
        if !self.fixes.is_empty() {
            write!(f, " Fix: {}.", self.fixes.join("; or "))?;
        }
        Ok(())
    }
}

/// Where a program breaks a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorAt {
    /// An op reads a placement it refuses.
    Op(Site),
    /// A residual add reads a branch held unlike the stream.
    Residual,
    /// A hand-placed collective after this op has nothing to do.
    Collective(Site),
}

/// One block's program: its values, forward steps, derived backward steps, and the first error
/// when the learner's collectives leave an op a placement it refuses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Program {
    pub plan: ShardingPlan,
    pub tp: usize,
    pub values: Vec<Value>,
    pub forward: Vec<Step>,
    pub backward: Vec<BackStep>,
    pub errors: Vec<DesignError>,
    /// The block input and output values.
    pub input: ValueId,
    pub output: ValueId,
}

impl Program {
    pub fn valid(&self) -> bool {
        self.errors.is_empty()
    }

    pub fn value(&self, v: ValueId) -> &Value {
        &self.values[v]
    }

    /// The forward halves of the backward's own all-reduces: a value whose gradient the backward
    /// sums (a partial sum its reader needs whole) while the forward never moved it has, as that
    /// sum's conjugate, an identity in the forward (Megatron's `f`). Each is drawn before the
    /// first forward step that reads the value: (that step's index, the value). Nothing runs.
    pub fn forward_identities(&self) -> Vec<(usize, ValueId)> {
        let moved = |v: ValueId| {
            self.forward.iter().any(|s| match s {
                Step::Redistribute(r) => r.from == v || r.to == v,
                _ => false,
            })
        };
        let mut out: Vec<(usize, ValueId)> = Vec::new();
        for b in &self.backward {
            let BackStep::GradMove {
                value,
                mv: Move::AllReduce,
                ..
            } = b
            else {
                continue;
            };
            if moved(*value) || out.iter().any(|(_, v)| v == value) {
                continue;
            }
            if let Some(i) = self.forward.iter().position(|s| s.reads().contains(value)) {
                out.push((i, *value));
            }
        }
        out.sort();
        out
    }

    /// The placement of a weight (or its bias) on rank `r`, with its index ranges.
    pub fn param_placement(&self, cfg: &Config, kind: ParamKind, r: usize) -> Placement {
        let heads = matches!(kind, ParamKind::QkvWeight | ParamKind::QkvBias);
        param_layout(&self.plan, kind).placement(cfg, kind.shape(cfg), heads, r)
    }
}

/// Which weight a parameter belongs to, and whether it is that weight's bias.
pub fn weight_of(kind: ParamKind) -> Option<(Weight, bool)> {
    use ParamKind as P;
    Some(match kind {
        P::QkvWeight => (Weight::Qkv, false),
        P::QkvBias => (Weight::Qkv, true),
        P::OutWeight => (Weight::Out, false),
        P::OutBias => (Weight::Out, true),
        P::Fc1Weight => (Weight::Fc1, false),
        P::Fc1Bias => (Weight::Fc1, true),
        P::Fc2Weight => (Weight::Fc2, false),
        P::Fc2Bias => (Weight::Fc2, true),
        _ => return None,
    })
}

pub fn weight_param(w: Weight) -> (ParamKind, ParamKind) {
    use ParamKind as P;
    match w {
        Weight::Qkv => (P::QkvWeight, P::QkvBias),
        Weight::Out => (P::OutWeight, P::OutBias),
        Weight::Fc1 => (P::Fc1Weight, P::Fc1Bias),
        Weight::Fc2 => (P::Fc2Weight, P::Fc2Bias),
    }
}

/// How a parameter is laid out over the GPUs under a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamLayout {
    Whole,
    /// Its output columns: even slices, or (QKV) each GPU's heads' Q, K and V columns.
    Columns,
    /// Its input rows, even slices.
    Rows,
}

pub fn param_layout(plan: &ShardingPlan, kind: ParamKind) -> ParamLayout {
    match weight_of(kind) {
        Some((w, bias)) => match plan.split(w) {
            Split::Columns => ParamLayout::Columns,
            Split::Rows if !bias => ParamLayout::Rows,
            _ => ParamLayout::Whole,
        },
        None => ParamLayout::Whole,
    }
}

impl ParamLayout {
    /// Rank `r`'s placement of a parameter of global `shape`.
    pub fn placement(self, cfg: &Config, shape: [usize; 2], by_heads: bool, r: usize) -> Placement {
        match self {
            ParamLayout::Whole => Placement::Replicate,
            ParamLayout::Rows => Placement::Shard {
                dim: 0,
                ranges: vec![even(shape[0], cfg.tp, r)],
            },
            ParamLayout::Columns => Placement::Shard {
                dim: 1,
                ranges: feature_ranges(cfg, shape[1], by_heads, r),
            },
        }
    }
}

/// `[start, end)` of rank `r`'s even share of `n`.
pub fn even(n: usize, tp: usize, r: usize) -> [usize; 2] {
    let per = n / tp.max(1);
    [r * per, (r + 1) * per]
}

/// The feature (column) ranges rank `r` holds of a tensor `width` wide: QKV and its weight by
/// heads (`by_heads`: Megatron's split, with grouped-query attention's rules), others in even
/// slices.
pub fn feature_ranges(cfg: &Config, width: usize, by_heads: bool, r: usize) -> Vec<[usize; 2]> {
    if by_heads {
        let plan = ShardPlan::new(cfg);
        plan.param(ParamKind::QkvWeight).blocks[r]
            .iter()
            .map(|b| [b.cols.start, b.cols.end])
            .collect()
    } else {
        vec![even(width, cfg.tp, r)]
    }
}

/// Whether `op` accepts a value held as `p`, and the placement of its output.
fn linear_output(split: Split, p: Place) -> Option<Place> {
    match (split, p) {
        (Split::Columns, Place::Replicate) => Some(Place::Features),
        (Split::Rows, Place::Features) => Some(Place::Partial),
        (Split::Replicate, Place::Replicate | Place::Tokens | Place::Partial) => Some(p),
        _ => None,
    }
}

/// The forward ops' readers, for the rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reader {
    Norm(Norm),
    Linear(Weight),
    Attention,
    Gelu,
    /// A residual add whose stream is held as given.
    Residual(Place),
}

impl Reader {
    fn at(self) -> ErrorAt {
        match self {
            Reader::Norm(Norm::Ln1) => ErrorAt::Op(Site::Ln1),
            Reader::Norm(Norm::Ln2) => ErrorAt::Op(Site::Ln2),
            Reader::Linear(Weight::Qkv) => ErrorAt::Op(Site::Qkv),
            Reader::Linear(Weight::Out) => ErrorAt::Op(Site::Out),
            Reader::Linear(Weight::Fc1) => ErrorAt::Op(Site::Fc1),
            Reader::Linear(Weight::Fc2) => ErrorAt::Op(Site::Fc2),
            Reader::Attention => ErrorAt::Op(Site::Attention),
            Reader::Gelu => ErrorAt::Op(Site::Gelu),
            Reader::Residual(_) => ErrorAt::Residual,
        }
    }

    fn op(self) -> (&'static str, &'static str) {
        match self {
            Reader::Norm(Norm::Ln1) => ("ln1", "LayerNorm 1"),
            Reader::Norm(Norm::Ln2) => ("ln2", "LayerNorm 2"),
            Reader::Linear(Weight::Qkv) => ("attn.qkv", "the QKV projection"),
            Reader::Linear(Weight::Out) => ("attn.out", "the output projection"),
            Reader::Linear(Weight::Fc1) => ("mlp.fc1", "fc1"),
            Reader::Linear(Weight::Fc2) => ("mlp.fc2", "fc2"),
            Reader::Attention => ("attn.core", "attention"),
            Reader::Gelu => ("mlp.gelu", "GeLU"),
            Reader::Residual(_) => ("residual", "the residual add"),
        }
    }

    /// The placements this reader accepts, in order of preference.
    fn accepts(self, plan: &ShardingPlan) -> Vec<Place> {
        use Place::*;
        match self {
            Reader::Norm(_) => vec![Replicate, Tokens],
            Reader::Linear(w) => match plan.split(w) {
                Split::Columns => vec![Replicate],
                Split::Rows => vec![Features],
                Split::Replicate => vec![Replicate, Tokens, Partial],
            },
            Reader::Attention => vec![Features, Replicate],
            Reader::Gelu => vec![Replicate, Features, Tokens],
            Reader::Residual(stream) => vec![stream],
        }
    }

    /// Why it refuses `p`, in words, with the tensor's name.
    fn rule(self, plan: &ShardingPlan, tensor: Tensor, p: Place, rank: usize) -> String {
        let (_, words) = self.op();
        let gpu = format!("GPU {rank}");
        let t = tensor.name();
        match (self, p) {
            (Reader::Gelu, Place::Partial) => format!(
                "GeLU on {gpu} reads a partial sum of {t}: GeLU(a)+GeLU(b) ≠ GeLU(a+b), so GeLU \
                 needs the whole sum."
            ),
            (Reader::Attention, Place::Partial) => format!(
                "Attention on {gpu} reads a partial sum of {t}: softmax is not linear \
                 (softmax(a)+softmax(b) ≠ softmax(a+b)), so it needs the whole sum."
            ),
            (Reader::Attention, Place::Tokens) => format!(
                "Attention on {gpu} reads only its tokens of {t}: each token attends to every \
                 earlier token of its sequence, so attention needs all tokens of its heads."
            ),
            (Reader::Norm(_), Place::Partial) => format!(
                "{words} on {gpu} reads a partial sum of {t}: a mean and a variance of a sum are \
                 not the sums of the means and variances, so LayerNorm needs the whole sum."
            ),
            (Reader::Norm(_), Place::Features) => format!(
                "{words} on {gpu} reads only its columns of {t}: each token's mean and variance \
                 run over all its features, so LayerNorm needs whole rows."
            ),
            (Reader::Linear(w), _) => match plan.split(w) {
                Split::Columns => format!(
                    "{words} on {gpu} reads {} of {t}, but {} is split by columns: each GPU \
                     multiplies the whole input by its columns, so every GPU needs all of {t}.",
                    p.words(),
                    w.symbol()
                ),
                Split::Rows => format!(
                    "{words} on {gpu} reads {} of {t}, but {} is split by rows: each GPU \
                     multiplies its columns of {t} by its rows of {} ({t}[:, a:b]·{}[a:b, :]), so \
                     it needs exactly those columns.",
                    p.words(),
                    w.symbol(),
                    w.symbol(),
                    w.symbol()
                ),
                Split::Replicate => format!(
                    "{words} on {gpu} reads only its columns of {t}, but {} is whole: a whole \
                     weight multiplies whole rows of its input.",
                    w.symbol()
                ),
            },
            (Reader::Residual(stream), Place::Partial) => format!(
                "The residual add on {gpu} reads a partial sum of {t} while the residual stream \
                 is {}: adding every GPU's partial sum to its own copy of the stream is not the \
                 sum, so both sides must be held alike (sum {t} first).",
                stream.words()
            ),
            (Reader::Residual(stream), _) => format!(
                "The residual add on {gpu} reads {} of {t} while the residual stream is {}: a \
                 residual add needs both sides held alike.",
                p.words(),
                stream.words()
            ),
            (_, _) => format!("{words} on {gpu} cannot read {} of {t}.", p.words()),
        }
    }
    /// The rule `rule` words, as a type.
    fn rule_kind(self, plan: &ShardingPlan, p: Place) -> Rule {
        match (self, p) {
            (Reader::Gelu, Place::Partial) => Rule::GeluPartial,
            (Reader::Attention, Place::Partial) => Rule::AttentionPartial,
            (Reader::Attention, Place::Tokens) => Rule::AttentionTokens,
            (Reader::Norm(_), Place::Partial) => Rule::NormPartial,
            (Reader::Norm(_), Place::Features) => Rule::NormColumns,
            (Reader::Linear(w), _) => match plan.split(w) {
                Split::Columns => Rule::ColumnSplitNeedsWhole(w),
                Split::Rows => Rule::RowSplitNeedsColumns(w),
                Split::Replicate => Rule::WholeWeightNeedsRows(w),
            },
            (Reader::Residual(stream), Place::Partial) => Rule::ResidualPartial { stream },
            (Reader::Residual(stream), _) => Rule::ResidualMismatch { stream },
            (_, _) => Rule::Other,
        }
    }
}

/// Bytes the busiest rank sends for `mv` of a tensor of `elems` elements of `elem_bytes` over
/// `n` ranks, and the steps: from the collectives module's own schedules (all-to-all: a pairwise
/// exchange, `n−1` steps, each rank sends `1/n` of its `1/n` share to each of the `n−1` others).
pub fn move_cost(cfg: &Config, mv: Move, n: usize, elems: u64) -> (usize, u64) {
    let eb = cfg.dtype.size_bytes() as u64;
    if n <= 1 {
        return (0, 0);
    }
    match mv {
        Move::Slice => (0, 0),
        _ => {
            let kind = mv.collective().unwrap_or(CollectiveKind::AllReduce);
            let algorithm = match kind {
                CollectiveKind::AllReduce => cfg.algorithm,
                _ => crate::block::program::gather_scatter_algorithm(cfg),
            };
            let (steps, sent, _) =
                crate::block::program::collective_costs(kind, algorithm, n, elems, eb);
            (steps, sent)
        }
    }
}

/// The propagation's working state.
struct Builder<'a> {
    cfg: &'a Config,
    plan: &'a ShardingPlan,
    values: Vec<Value>,
    forward: Vec<Step>,
    errors: Vec<DesignError>,
    manual: Vec<ManualCollective>,
    /// Which forward values an all-gather produced (their source), for the backward's regathers.
    gathered_from: Vec<Option<ValueId>>,
}

impl Builder<'_> {
    fn value(&mut self, tensor: Tensor, place: Place, pending_bias: Option<Weight>) -> ValueId {
        self.values.push(Value {
            tensor,
            place,
            pending_bias,
            mislabelled: false,
        });
        self.gathered_from.push(None);
        self.values.len() - 1
    }

    fn bytes_of(&self, mv: Move, tensor: Tensor) -> u64 {
        move_cost(self.cfg, mv, self.cfg.tp, tensor.elems(self.cfg) as u64).1
    }

    fn redistribute(&mut self, v: ValueId, to: Place, manual: bool, reason: String) -> ValueId {
        let from = self.values[v];
        let Some(mv) = Move::between(from.place, to) else {
            return v;
        };
        let id = self.value(from.tensor, to, from.pending_bias);
        if mv == Move::AllGather {
            self.gathered_from[id] = Some(v);
        }
        self.forward.push(Step::Redistribute(Redistribution {
            from: v,
            to: id,
            mv,
            manual,
            reason,
        }));
        id
    }

    /// Brings `v` into a placement `reader` accepts: as it is, or by the cheapest redistribution
    /// (auto), or a free slice and else an error (manual).
    fn feed(&mut self, v: ValueId, reader: Reader) -> ValueId {
        self.feed_ahead(v, reader, None)
    }

    /// [`Builder::feed`] for an op whose output keeps its input's placement (GeLU, attention),
    /// looking one reader ahead: a choice is priced with what the next reader will then need
    /// (`next`: that reader and the tensor it reads), so a partial sum before GeLU is summed by
    /// one all-reduce when fc2 wants it whole, not reduce-scattered and gathered again.
    fn feed_ahead(
        &mut self,
        v: ValueId,
        reader: Reader,
        next: Option<(Reader, Tensor)>,
    ) -> ValueId {
        let have = self.values[v];
        let accepts = reader.accepts(self.plan);
        if accepts.contains(&have.place) {
            return v;
        }
        let tensor = have.tensor;
        let mut options: Vec<(Place, Move, u64)> = accepts
            .iter()
            .filter_map(|&to| {
                Move::between(have.place, to).map(|mv| (to, mv, self.bytes_of(mv, tensor)))
            })
            .collect();
        let ahead = |to: Place| -> (u64, usize) {
            let Some((next, t)) = next else {
                return (0, 0);
            };
            let later = next.accepts(self.plan);
            if later.contains(&to) {
                return (0, 0);
            }
            later
                .iter()
                .filter_map(|&p| Move::between(to, p))
                .map(|mv| (self.bytes_of(mv, t), usize::from(mv.communicates())))
                .min()
                .unwrap_or((u64::MAX / 4, 1))
        };
        options.sort_by_key(|o| {
            let (later_bytes, later_moves) = ahead(o.0);
            (
                o.2.saturating_add(later_bytes),
                usize::from(o.1.communicates()) + later_moves,
            )
        });
        let (op, words) = reader.op();
        let reason = format!(
            "{words} needs {} of {}; it is {}",
            accepts
                .iter()
                .map(|p| p.words())
                .collect::<Vec<_>>()
                .join(" or "),
            tensor.name(),
            have.place.words()
        );
        let manual = self.plan.manual.is_some();
        match options.first() {
            Some(&(to, mv, _)) if !manual || mv == Move::Slice => {
                self.redistribute(v, to, false, reason)
            }
            _ => {
                let mut actions: Vec<Fix> = options
                    .iter()
                    .filter_map(|&(to, mv, bytes)| match mv.manual_kind() {
                        Some(kind) => site_of(tensor).map(|after| Fix::Collective {
                            after,
                            kind,
                            bytes,
                            to,
                        }),
                        None => Some(Fix::Slice),
                    })
                    .collect();
                actions.extend(self.split_actions(reader, have.place));
                let mut fixes: Vec<String> = options
                    .iter()
                    .map(|(to, mv, bytes)| {
                        if mv.communicates() {
                            format!(
                                "{} {} first ({} of {} per GPU), so it reads {}",
                                article(mv.name()),
                                mv.name(),
                                human_bytes(*bytes),
                                tensor.name(),
                                to.words()
                            )
                        } else {
                            format!("take its slice of {}", tensor.name())
                        }
                    })
                    .collect();
                fixes.extend(self.split_fixes(reader, have.place));
                let rule = reader.rule(self.plan, tensor, have.place, 0);
                let kind = reader.rule_kind(self.plan, have.place);
                if self.errors.is_empty() {
                    self.errors.push(DesignError {
                        pass: Pass::Forward,
                        layer: 0,
                        op,
                        op_words: words,
                        at: reader.at(),
                        tensor: crate::block::TensorName::Act(tensor),
                        rank: 0,
                        placement: have.place.kind().dtensor(),
                        holds: have.place,
                        rule,
                        fixes,
                        kind,
                        actions,
                    });
                }
                // Run anyway: the reader takes what each GPU holds as if it were held as needed.
                let to = options.first().map_or(accepts[0], |o| o.0);
                let id = self.value(tensor, to, have.pending_bias);
                self.values[id].mislabelled = true;
                self.forward.push(Step::Redistribute(Redistribution {
                    from: v,
                    to: id,
                    mv: Move::Slice,
                    manual: true,
                    reason: "misread: no collective was placed".into(),
                }));
                id
            }
        }
    }

    /// [`Builder::split_fixes`] as actions.
    fn split_actions(&self, reader: Reader, have: Place) -> Vec<Fix> {
        match (reader, have) {
            (Reader::Gelu, Place::Partial) if self.plan.fc1 == Split::Rows => vec![Fix::Split {
                weight: Weight::Fc1,
                split: Split::Columns,
            }],
            (Reader::Attention, Place::Partial) if self.plan.qkv == Split::Rows => {
                vec![Fix::Split {
                    weight: Weight::Qkv,
                    split: Split::Columns,
                }]
            }
            _ => Vec::new(),
        }
    }

    /// Fixes by changing a split instead of adding a collective.
    fn split_fixes(&self, reader: Reader, have: Place) -> Vec<String> {
        match (reader, have) {
            (Reader::Gelu, Place::Partial) if self.plan.fc1 == Split::Rows => {
                vec!["split fc1 by columns, so each GPU computes whole values of its columns of A and no sum is needed".into()]
            }
            (Reader::Attention, Place::Partial) if self.plan.qkv == Split::Rows => {
                vec!["split the QKV projection by columns (by heads), so each GPU computes its heads' Q, K and V whole".into()]
            }
            _ => Vec::new(),
        }
    }

    /// Applies the learner's collectives placed after `site` to `v`.
    fn manual_after(&mut self, site: Site, mut v: ValueId) -> ValueId {
        let list: Vec<ManualKind> = self
            .manual
            .iter()
            .filter(|c| c.after == site)
            .map(|c| c.kind)
            .collect();
        for kind in list {
            let have = self.values[v];
            let stream_tokens = self.plan.sequence_parallel;
            let to = match (kind, have.place) {
                (ManualKind::AllReduce, Place::Partial) => Some(Place::Replicate),
                (ManualKind::ReduceScatter, Place::Partial) => Some(if stream_tokens {
                    Place::Tokens
                } else {
                    Place::Features
                }),
                (ManualKind::AllGather, Place::Tokens | Place::Features) => Some(Place::Replicate),
                (ManualKind::AllToAll, Place::Tokens) => Some(Place::Features),
                (ManualKind::AllToAll, Place::Features) => Some(Place::Tokens),
                _ => None,
            };
            match to {
                Some(to) if Move::between(have.place, to).is_some() => {
                    v = self.redistribute(
                        v,
                        to,
                        true,
                        format!("placed by you after {}", site.name()),
                    );
                }
                _ => {
                    if self.errors.is_empty() {
                        let what = match kind {
                            ManualKind::AllReduce | ManualKind::ReduceScatter => {
                                "sums partial sums"
                            }
                            ManualKind::AllGather => "joins slices",
                            ManualKind::AllToAll => "swaps a token split for a column split",
                        };
                        self.errors.push(DesignError {
                            pass: Pass::Forward,
                            layer: 0,
                            op: site.name(),
                            op_words: "your collective",
                            at: ErrorAt::Collective(site),
                            tensor: crate::block::TensorName::Act(have.tensor),
                            rank: 0,
                            placement: have.place.kind().dtensor(),
                            holds: have.place,
                            rule: format!(
                                "The {} after {} has nothing to do: it {what}, and every GPU \
                                 holds {} of {}.",
                                kind.name(),
                                site.name(),
                                have.place.words(),
                                have.tensor.name()
                            ),
                            fixes: vec![format!(
                                "remove the {} after {}",
                                kind.name(),
                                site.name()
                            )],
                            kind: Rule::NothingToDo { kind, after: site },
                            actions: vec![Fix::Remove { after: site, kind }],
                        });
                    }
                }
            }
        }
        v
    }

    /// A summed value's waiting bias is added before a reader other than the residual add.
    fn settle_bias(&mut self, v: ValueId) -> ValueId {
        let have = self.values[v];
        let Some(weight) = have.pending_bias else {
            return v;
        };
        let y = self.value(have.tensor, have.place, None);
        self.forward.push(Step::Bias {
            x: v,
            y,
            weight,
            once: have.place == Place::Partial,
        });
        y
    }

    fn linear(&mut self, weight: Weight, x: ValueId, out: Tensor, site: Site) -> ValueId {
        let x = self.feed(x, Reader::Linear(weight));
        // A waiting bias is added before the product (once, on GPU 0, if the value is still a
        // partial sum that a whole weight reads).
        let x = self.settle_bias(x);
        let place = linear_output(self.plan.split(weight), self.values[x].place)
            .unwrap_or(Place::Replicate);
        let bias_now = place != Place::Partial;
        let y = self.value(out, place, (!bias_now).then_some(weight));
        self.forward.push(Step::Linear {
            weight,
            x,
            y,
            bias: bias_now,
        });
        self.manual_after(site, y)
    }

    fn norm(&mut self, norm: Norm, x: ValueId, out: Tensor, site: Site) -> ValueId {
        let x = self.feed(x, Reader::Norm(norm));
        let x = self.settle_bias(x);
        let y = self.value(out, self.values[x].place, None);
        self.forward.push(Step::LayerNorm { norm, x, y });
        self.manual_after(site, y)
    }

    fn residual(
        &mut self,
        stream: ValueId,
        branch: ValueId,
        out: Tensor,
        site: Option<Site>,
    ) -> ValueId {
        let sp = self.values[stream].place;
        let branch = self.feed(branch, Reader::Residual(sp));
        let bias = self.values[branch].pending_bias;
        let y = self.value(out, sp, None);
        self.forward.push(Step::Residual {
            stream,
            branch,
            y,
            bias,
        });
        match site {
            Some(site) => self.manual_after(site, y),
            None => y,
        }
    }
}

fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// Propagates `plan` through one block of `cfg` (whose `tp` and shape rules hold): the forward
/// program, its derived backward, and the first rule a manual program breaks.
pub fn propagate(cfg: &Config, plan: &ShardingPlan) -> Program {
    let sp = plan.sequence_parallel && cfg.tp > 1;
    let plan_eff = ShardingPlan {
        sequence_parallel: sp,
        ..plan.clone()
    };
    let mut b = Builder {
        cfg,
        plan: &plan_eff,
        values: Vec::new(),
        forward: Vec::new(),
        errors: Vec::new(),
        manual: plan.manual.clone().unwrap_or_default(),
        gathered_from: Vec::new(),
    };
    let stream = if sp { Place::Tokens } else { Place::Replicate };
    let x = b.value(Tensor::X, stream, None);
    // Attention half.
    let h1 = b.norm(Norm::Ln1, x, Tensor::H1, Site::Ln1);
    let qkv = b.linear(Weight::Qkv, h1, Tensor::Qkv, Site::Qkv);
    let qkv = b.feed_ahead(
        qkv,
        Reader::Attention,
        Some((Reader::Linear(Weight::Out), Tensor::Ctx)),
    );
    let qkv = b.settle_bias(qkv);
    let ctx = b.value(Tensor::Ctx, b.values[qkv].place, None);
    b.forward.push(Step::Attention { qkv, ctx });
    let ctx = b.manual_after(Site::Attention, ctx);
    let z = b.linear(Weight::Out, ctx, Tensor::Z, Site::Out);
    let x1 = b.residual(x, z, Tensor::X1, Some(Site::AttnResidual));
    // The residual stream must come back to its placement for the next op of the stream.
    let x1 = if b.values[x1].place != stream {
        b.feed(x1, Reader::Residual(stream))
    } else {
        x1
    };
    // MLP half.
    let h2 = b.norm(Norm::Ln2, x1, Tensor::H2, Site::Ln2);
    let a = b.linear(Weight::Fc1, h2, Tensor::A, Site::Fc1);
    let a = b.feed_ahead(
        a,
        Reader::Gelu,
        Some((Reader::Linear(Weight::Fc2), Tensor::U)),
    );
    let a = b.settle_bias(a);
    let u = b.value(Tensor::U, b.values[a].place, None);
    b.forward.push(Step::Gelu { a, u });
    let u = b.manual_after(Site::Gelu, u);
    let m = b.linear(Weight::Fc2, u, Tensor::M, Site::Fc2);
    let y = b.residual(x1, m, Tensor::Y, None);
    let backward = derive_backward(cfg, &plan_eff, &b.values, &b.forward, &b.gathered_from, y);
    let (values, forward, errors) = (b.values, b.forward, b.errors);
    Program {
        plan: plan_eff,
        tp: cfg.tp,
        values,
        forward,
        backward,
        errors,
        input: x,
        output: y,
    }
}

/// The backward of a forward program: each step's gradient rule in reverse, and the gradient
/// moves that bring each gradient to the placement its reader needs.
fn derive_backward(
    cfg: &Config,
    plan: &ShardingPlan,
    values: &[Value],
    forward: &[Step],
    gathered_from: &[Option<ValueId>],
    output: ValueId,
) -> Vec<BackStep> {
    let mut out = Vec::new();
    // The placement of each value's gradient as produced so far (None: no gradient yet).
    let mut grad: Vec<Option<Place>> = vec![None; values.len()];
    let mut partial_params: Vec<ParamKind> = Vec::new();
    // The block output's gradient arrives as the output is held.
    grad[output] = Some(values[output].place.grad());
    // Brings value v's gradient to `need`, emitting a move.
    let settle =
        |v: ValueId, need: Place, grad: &mut Vec<Option<Place>>, out: &mut Vec<BackStep>| {
            let have = grad[v].unwrap_or(need);
            if let Some(mv) = Move::between(have, need) {
                out.push(BackStep::GradMove {
                    value: v,
                    from: have,
                    to: need,
                    mv,
                    reason: format!(
                        "the gradient of {} is {}; its reader needs {}",
                        values[v].tensor.name(),
                        have.words(),
                        need.words()
                    ),
                });
            }
            grad[v] = Some(need);
        };
    // The gradient a rule adds to value v. Readers' gradients meet in one placement in these
    // programs (the stream's); the executor brings a stray one to the first one's placement.
    let add = |v: ValueId, p: Place, grad: &mut Vec<Option<Place>>, _out: &mut Vec<BackStep>| {
        if grad[v].is_none() {
            grad[v] = Some(p);
        }
    };
    let param_grad = |kind: ParamKind,
                      actual: Place,
                      partial: &mut Vec<ParamKind>,
                      out: &mut Vec<BackStep>| {
        match (param_layout(plan, kind), actual) {
            (ParamLayout::Whole, Place::Partial | Place::Tokens) if !partial.contains(&kind) => {
                partial.push(kind);
            }
            (ParamLayout::Whole, Place::Features) => {
                out.push(BackStep::ParamGradGather { param: kind });
            }
            _ => {}
        }
    };
    for (index, step) in forward.iter().enumerate().rev() {
        match step {
            Step::Redistribute(r) => {
                // The conjugate: the gradient of `to` moves to the placement `from`'s gradient
                // needs (an all-gather's conjugate is a reduce-scatter, a slice's an all-gather,
                // an all-reduce's the identity), then changes hands.
                let Some(have) = grad[r.to] else {
                    continue;
                };
                let target = values[r.from].place.grad();
                if !values[r.to].mislabelled {
                    if let Some(mv) = Move::between(have, target) {
                        out.push(BackStep::GradMove {
                            value: r.to,
                            from: have,
                            to: target,
                            mv,
                            reason: format!(
                                "the conjugate of the forward's {} of {}",
                                r.mv.name(),
                                values[r.from].tensor.name()
                            ),
                        });
                    } else if have == target && r.mv.collective().is_some() {
                        out.push(BackStep::PassThrough {
                            value: r.to,
                            place: have,
                        });
                    }
                }
                out.push(BackStep::Grad { index });
                grad[r.to] = None;
                add(r.from, target, &mut grad, &mut out);
            }
            Step::Residual {
                stream,
                branch,
                y,
                bias,
            } => {
                let need = values[*y].place.grad();
                settle(*y, need, &mut grad, &mut out);
                out.push(BackStep::Grad { index });
                add(*stream, need, &mut grad, &mut out);
                add(*branch, values[*branch].place.grad(), &mut grad, &mut out);
                if let Some(w) = bias {
                    param_grad(
                        weight_param(*w).1,
                        values[*y].place,
                        &mut partial_params,
                        &mut out,
                    );
                }
            }
            Step::Bias { x, y, weight, once } => {
                let need = values[*y].place.grad();
                settle(*y, need, &mut grad, &mut out);
                out.push(BackStep::Grad { index });
                add(*x, values[*x].place.grad(), &mut grad, &mut out);
                let at = if *once {
                    Place::Replicate
                } else {
                    values[*y].place
                };
                param_grad(weight_param(*weight).1, at, &mut partial_params, &mut out);
            }
            Step::Gelu { a, u } => {
                settle(*u, values[*u].place.grad(), &mut grad, &mut out);
                out.push(BackStep::Grad { index });
                add(*a, values[*a].place.grad(), &mut grad, &mut out);
            }
            Step::Attention { qkv, ctx } => {
                settle(*ctx, values[*ctx].place.grad(), &mut grad, &mut out);
                out.push(BackStep::Grad { index });
                add(*qkv, values[*qkv].place.grad(), &mut grad, &mut out);
            }
            Step::LayerNorm { norm, x, y } => {
                settle(*y, values[*y].place.grad(), &mut grad, &mut out);
                out.push(BackStep::Grad { index });
                add(*x, values[*x].place.grad(), &mut grad, &mut out);
                let (w, b) = norm.params();
                let at = values[*x].place;
                param_grad(w, at, &mut partial_params, &mut out);
                param_grad(b, at, &mut partial_params, &mut out);
            }
            Step::Linear { weight, x, y, bias } => {
                settle(*y, values[*y].place.grad(), &mut grad, &mut out);
                if let Some(src) = gathered_from[*x] {
                    out.push(BackStep::Regather {
                        value: *x,
                        source: src,
                    });
                }
                out.push(BackStep::Grad { index });
                let (xp, yp) = (values[*x].place, values[*y].place);
                // dX = dY·Wᵀ: a partial sum when W's columns cut the sum over outputs.
                let dx = match (plan.split(*weight), xp) {
                    (Split::Columns, _) => Place::Partial,
                    (Split::Rows, _) => Place::Features,
                    (Split::Replicate, Place::Partial) => Place::Replicate,
                    (Split::Replicate, p) => p,
                };
                add(*x, dx, &mut grad, &mut out);
                let (wk, bk) = weight_param(*weight);
                // dW = Xᵀ·dY: partial when the tokens or the input are split across GPUs.
                let dw = match xp {
                    Place::Tokens | Place::Partial => Place::Partial,
                    _ => Place::Replicate,
                };
                if plan.split(*weight) == Split::Replicate {
                    param_grad(wk, dw, &mut partial_params, &mut out);
                }
                if *bias {
                    let db = match yp {
                        Place::Tokens => Place::Tokens,
                        Place::Partial => Place::Partial,
                        _ => Place::Replicate,
                    };
                    if plan.split(*weight) == Split::Replicate {
                        param_grad(bk, db, &mut partial_params, &mut out);
                    }
                }
                if *weight == Weight::Qkv && plan.qkv == Split::Columns && cfg.kv_replicas() > 1 {
                    out.push(BackStep::KvGradSum {
                        groups: cfg.kv_replica_groups(),
                    });
                }
            }
        }
    }
    // The block input's gradient leaves as the input is held.
    let input = 0;
    settle(input, values[input].place.grad(), &mut grad, &mut out);
    if !partial_params.is_empty() {
        // The LayerNorms' first, then the linear layers' (Megatron-LM's order).
        partial_params.sort_by_key(|k| (weight_of(*k).is_some(), *k));
        out.push(BackStep::ParamGradSum {
            params: partial_params,
        });
    }
    out
}
