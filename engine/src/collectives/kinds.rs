//! What a collective is: its kind, the all-reduce algorithm, and why one cannot run.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Collective kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CollectiveKind {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    /// A conjugate operator's no-communication side (f forward, g backward): drawn, costs nothing.
    Identity,
    /// Each rank's share split `n` ways, piece `d` sent to rank `d`: a tensor split by tokens
    /// becomes one split by features (a learner's plan that moves between the two). Pairwise
    /// exchange: `n − 1` rounds, in round `k` rank `r` sends to rank `r + k`. The buffer is the
    /// whole tensor (every rank's share): `n²` chunks, chunk `r·n + d` what rank `r` holds for
    /// rank `d`.
    AllToAll,
}

impl CollectiveKind {
    pub fn name(self) -> &'static str {
        match self {
            CollectiveKind::AllReduce => "all-reduce",
            CollectiveKind::AllGather => "all-gather",
            CollectiveKind::ReduceScatter => "reduce-scatter",
            CollectiveKind::Broadcast => "broadcast",
            CollectiveKind::Identity => "identity",
            CollectiveKind::AllToAll => "all-to-all",
        }
    }
}

/// All-reduce algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// Reduce-scatter then all-gather around a ring: 2(n-1) steps, each rank sends 2(n-1)/n of the data.
    #[default]
    Ring,
    /// Recursive halving (reduce-scatter) then recursive doubling (all-gather): 2·log2(n) steps.
    RecursiveHalvingDoubling,
    /// Reduce up a binomial tree to rank 0, then broadcast down: 2·ceil(log2 n) steps.
    Tree,
    /// Every rank sends its whole buffer to every other rank and sums locally: 1 step.
    Direct,
}

impl Algorithm {
    pub const ALL: [Algorithm; 4] = [
        Algorithm::Ring,
        Algorithm::RecursiveHalvingDoubling,
        Algorithm::Tree,
        Algorithm::Direct,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Ring => "ring",
            Algorithm::RecursiveHalvingDoubling => "recursive-halving-doubling",
            Algorithm::Tree => "tree",
            Algorithm::Direct => "direct",
        }
    }
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Algorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ring" => Ok(Algorithm::Ring),
            "recursive-halving-doubling" | "rhd" | "halving-doubling" => {
                Ok(Algorithm::RecursiveHalvingDoubling)
            }
            "tree" => Ok(Algorithm::Tree),
            "direct" => Ok(Algorithm::Direct),
            other => Err(format!(
                "unknown algorithm '{other}'; expected one of: ring, recursive-halving-doubling, tree, direct"
            )),
        }
    }
}

/// The most ranks a contribution bitmask ([`contributions`]) can hold.
pub const MAX_MASK_RANKS: usize = 64;

/// Why a collective cannot run.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CollectiveError {
    #[error(
        "a collective needs at least one rank, but the group is empty; pass one buffer per rank"
    )]
    EmptyGroup,
    #[error(
        "every rank must pass a buffer of the same length: rank 0 has {expected} elements but \
         rank {rank} has {found}; pad or split the tensor so all ranks match"
    )]
    LengthMismatch {
        rank: usize,
        expected: usize,
        found: usize,
    },
    #[error(
        "broadcast root {root} is out of range for a group of {n} ranks; choose a root in 0..{n}"
    )]
    RootOutOfRange { root: usize, n: usize },
    #[error("{kind} has no {algorithm} schedule; use one of: {supported}")]
    Unsupported {
        kind: &'static str,
        algorithm: Algorithm,
        supported: &'static str,
    },
    #[error(
        "recursive halving/doubling {kind} needs a power-of-two group, got {n} ranks; use ring or \
         direct (the all-reduce folds extra ranks in and supports any group size)"
    )]
    NotPowerOfTwo { kind: &'static str, n: usize },
    #[error(
        "contribution masks track at most {max} ranks, got {n}; animate a group of at most {max}"
    )]
    TooManyRanks { n: usize, max: usize },
    /// An executor's walk of its program (the block's, the vocabulary pass's) found an op before
    /// the op that writes its input (the program and the executor disagree: a bug, not a user
    /// error).
    #[error(
        "the program runs {op} before any op produced {tensor}: the schedule and its executor \
         disagree; this is a bug in tplab, please report it"
    )]
    ProgramOrder {
        op: crate::block::Op,
        tensor: crate::block::TensorName,
    },
    /// An executor met an op of another program (the block's executor an op of the vocabulary
    /// pass or of a learner's sharding plan): a bug, not a user error.
    #[error(
        "the executor met {op}, an op its program does not have: the schedule and the executor \
         disagree; this is a bug in tplab, please report it"
    )]
    ForeignOp { op: crate::block::Op },
}
