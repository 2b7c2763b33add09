//! Collectives over the ranks of a tensor-parallel group (placeholder: being written).

use serde::{Deserialize, Serialize};

/// All-reduce algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Algorithm {
    /// Reduce-scatter then all-gather around a ring: 2(n-1) steps, each rank sends 2(n-1)/n of the data.
    #[default]
    Ring,
    /// Recursive halving (reduce-scatter) then recursive doubling (all-gather): 2·log2(n) steps.
    RecursiveHalvingDoubling,
    /// Reduce up a binary tree to rank 0, then broadcast down: 2·ceil(log2 n) steps.
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
