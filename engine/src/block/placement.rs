//! Placements: which part of a tensor each rank holds.
//!
//! The vocabulary is PyTorch DTensor's (`Replicate`, `Shard(dim)`, `Partial`) with the exact
//! index ranges added, so a placement reads like the JAX scaling book's `A[I, J_X]`: rank 1 of 4
//! holding `W1[:, 768:1536]` is `Shard { dim: 1, ranges: [[768, 1536]] }` of `W1 [768, 3072]`.
//!
//! | placement | meaning | example (TP=4, rank 1) |
//! |---|---|---|
//! | `Replicate` | the whole tensor | LayerNorm weight; `X` before `f` |
//! | `Shard { dim, ranges }` | the given index ranges along `dim` | `W1[:, 768:1536]` |
//! | `Partial` | one term of a sum over ranks | `fc2`'s output before `g` |
//!
//! A collective is a change of placement: `Partial → Replicate` is an all-reduce, `Partial →
//! Shard` a reduce-scatter, `Shard → Replicate` an all-gather ([`change_kind`]).
//!
//! Packed QKV under tensor parallelism holds three column blocks per rank (its heads' Q, K and V
//! columns), so a shard carries a list of ranges. Replicated KV heads (grouped-query attention with
//! `tp > kv_heads`) are a shard several ranks hold the same range of.

use super::tensor::TensorName;
use crate::collectives::CollectiveKind;
use serde::{Deserialize, Serialize};

/// What one rank holds of a tensor.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "placement", rename_all = "snake_case")]
pub enum Placement {
    /// The whole tensor.
    Replicate,
    /// The half-open index ranges `[start, end)` along `dim` (0 rows, 1 columns), in order; the
    /// rank's local tensor is those slices concatenated.
    Shard { dim: usize, ranges: Vec<[usize; 2]> },
    /// A full-shape tensor that is one rank's term of a sum over the group.
    Partial,
}

impl Placement {
    /// A shard of one range.
    pub fn shard(dim: usize, range: std::ops::Range<usize>) -> Self {
        Placement::Shard {
            dim,
            ranges: vec![[range.start, range.end]],
        }
    }

    /// The placement's kind without its ranges.
    pub fn kind(&self) -> PlacementKind {
        match self {
            Placement::Replicate => PlacementKind::Replicate,
            Placement::Shard { dim, .. } => PlacementKind::Shard(*dim),
            Placement::Partial => PlacementKind::Partial,
        }
    }

    /// The local shape a rank holds of a tensor of global shape `global`.
    pub fn local_shape(&self, global: [usize; 2]) -> [usize; 2] {
        match self {
            Placement::Replicate | Placement::Partial => global,
            Placement::Shard { dim, ranges } => {
                let mut s = global;
                s[(*dim).min(1)] = ranges.iter().map(|[a, b]| b.saturating_sub(*a)).sum();
                s
            }
        }
    }

    /// The JAX-scaling-book-style index of a tensor called `name`: `W1[:, 768:1536]`,
    /// `X[0:64, :]`, `Y (partial sum)`, `LN1.w` (whole).
    pub fn index_notation(&self, name: &str) -> String {
        match self {
            Placement::Replicate => name.to_string(),
            Placement::Partial => format!("{name} (partial sum)"),
            Placement::Shard { dim, ranges } => {
                let r = ranges
                    .iter()
                    .map(|[a, b]| format!("{a}:{b}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                if *dim == 0 {
                    format!("{name}[{r}, :]")
                } else {
                    format!("{name}[:, {r}]")
                }
            }
        }
    }
}

/// A placement without its ranges: DTensor's `Replicate()`, `Shard(dim)`, `Partial()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PlacementKind {
    Replicate,
    Shard(usize),
    Partial,
}

impl PlacementKind {
    /// DTensor's spelling: `Replicate()`, `Shard(1)`, `Partial()`.
    pub fn dtensor(self) -> String {
        match self {
            PlacementKind::Replicate => "Replicate()".into(),
            PlacementKind::Shard(d) => format!("Shard({d})"),
            PlacementKind::Partial => "Partial()".into(),
        }
    }
}

/// The collective that changes `from` into `to`, if one does; `None` for a pair no single
/// collective makes (e.g. `Replicate → Partial`). `Replicate → Replicate` is the identity, and
/// so is `Replicate → Shard`: each rank keeps its slice, nothing moves between ranks.
/// `Shard(i) → Shard(j)` is an all-to-all.
pub fn change_kind(from: PlacementKind, to: PlacementKind) -> Option<CollectiveKind> {
    use PlacementKind::*;
    match (from, to) {
        (Partial, Replicate) => Some(CollectiveKind::AllReduce),
        (Partial, Shard(_)) => Some(CollectiveKind::ReduceScatter),
        (Shard(_), Replicate) => Some(CollectiveKind::AllGather),
        (Replicate, Replicate | Shard(_)) => Some(CollectiveKind::Identity),
        (Shard(a), Shard(b)) if a != b => Some(CollectiveKind::AllToAll),
        _ => None,
    }
}

/// One tensor an op reads or writes, with what each rank of the op holds of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorPlacement {
    /// The tensor, e.g. `X`, `dY`, `attn.qkv.weight` (serialized as that name).
    pub tensor: TensorName,
    /// The global (unsharded) shape `[rows, cols]`.
    pub shape: [usize; 2],
    /// One placement per rank of the event, in the event's rank order.
    pub per_rank: Vec<Placement>,
}

impl TensorPlacement {
    /// The placement on the `i`-th rank of the event.
    pub fn on(&self, i: usize) -> Option<&Placement> {
        self.per_rank.get(i)
    }

    /// The placement kind, when every rank's is the same kind (always, in this program).
    pub fn kind(&self) -> Option<PlacementKind> {
        let first = self.per_rank.first()?.kind();
        self.per_rank
            .iter()
            .all(|p| p.kind() == first)
            .then_some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collectives_are_placement_changes() {
        use PlacementKind::*;
        assert_eq!(
            change_kind(Partial, Replicate),
            Some(CollectiveKind::AllReduce)
        );
        assert_eq!(
            change_kind(Partial, Shard(0)),
            Some(CollectiveKind::ReduceScatter)
        );
        assert_eq!(
            change_kind(Shard(0), Replicate),
            Some(CollectiveKind::AllGather)
        );
        assert_eq!(change_kind(Replicate, Partial), None);
        assert_eq!(
            change_kind(Replicate, Shard(1)),
            Some(CollectiveKind::Identity)
        );
        assert_eq!(
            change_kind(Shard(0), Shard(1)),
            Some(CollectiveKind::AllToAll)
        );
        assert_eq!(change_kind(Shard(1), Shard(1)), None);
    }

    #[test]
    fn notation_and_local_shape() {
        let p = Placement::shard(1, 768..1536);
        assert_eq!(p.index_notation("W1"), "W1[:, 768:1536]");
        assert_eq!(p.local_shape([768, 3072]), [768, 768]);
        let q = Placement::Shard {
            dim: 1,
            ranges: vec![[0, 64], [768, 832], [1536, 1600]],
        };
        assert_eq!(q.local_shape([768, 2304]), [768, 192]);
        assert_eq!(Placement::Partial.index_notation("Y"), "Y (partial sum)");
        let j = serde_json::to_value(&p).unwrap_or_default();
        assert_eq!(j["placement"], "shard");
        assert_eq!(j["dim"], 1);
    }
}
