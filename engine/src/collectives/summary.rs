//! The closed-form account of a schedule: rounds and the busiest rank's bytes in O(log n), equal
//! to what [`super::plan`] lists step by step (tested to the byte).

use super::kinds::{Algorithm, CollectiveError, CollectiveKind};
use super::plan::{ceil_log2, floor_pow2, unsupported};

/// Rounds and the busiest rank's bytes of a schedule, from the schedule's structure: what
/// [`plan`] would count, in O(log n) instead of listing O(n²) steps, so that the cost model can
/// price a data-parallel group of thousands of ranks with the very schedules the Collectives view
/// draws. A test checks every (kind, algorithm) against the listed plan for small groups and odd
/// payloads, to the byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Rounds (step indices).
    pub steps: usize,
    /// Bytes the busiest rank sends.
    pub max_bytes_sent: u64,
}

/// The [`Summary`] of `kind` by `algorithm` on `n` ranks over `payload_bytes` (all-gather: the
/// gathered size), planned at byte granularity.
///
/// **Errors** as [`plan`] does (empty group, unsupported algorithm, non-power-of-two group for
/// halving/doubling gathers and scatters).
pub fn summary(
    kind: CollectiveKind,
    algorithm: Algorithm,
    n: usize,
    payload_bytes: u64,
) -> Result<Summary, CollectiveError> {
    // The same admission rules as the planner: ask it with an empty buffer (no steps listed,
    // and the counting loops it runs are over chunks of zero bytes: O(1) for the refusals).
    if n == 0 {
        return Err(CollectiveError::EmptyGroup);
    }
    let refuse = |supported| Err(unsupported(kind, algorithm, supported));
    let (pow2, log2) = (n.is_power_of_two(), ceil_log2(n));
    let p = payload_bytes;
    let n64 = n as u64;
    // Byte sizes of the planner's chunks: `chunks` pieces, the first `rem` one byte larger.
    let split = |chunks: u64| (p / chunks, p % chunks);
    // Bytes of the aligned block of `2^j` chunks starting at chunk 0 (the largest such block).
    let block0 = |chunks: u64, j: usize| {
        let (base, rem) = split(chunks);
        let len = 1u64 << j;
        len.saturating_mul(base) + len.min(rem)
    };
    let one = u64::from(n > 1);
    let s = match (kind, algorithm) {
        (CollectiveKind::Identity, _) => Summary {
            steps: 0,
            max_bytes_sent: 0,
        },
        (CollectiveKind::AllToAll, _) => {
            // Rank 0 sends chunks 1..n of the n² (the lowest indices, so the largest).
            let (base, rem) = split(n64 * n64);
            Summary {
                steps: n - 1,
                max_bytes_sent: (n64 - 1) * base + rem.min(n64).saturating_sub(1),
            }
        }
        (CollectiveKind::AllReduce, Algorithm::Ring) => {
            // Rank r sends every chunk but r in the reduce-scatter and every chunk but r+1 in the
            // all-gather: 2P − (c_r + c_{r+1}), largest where two adjacent chunks are smallest.
            let (base, rem) = split(n64);
            let min_pair = if n == 1 {
                2 * p
            } else if rem + 1 == n64 {
                2 * base + 1
            } else {
                2 * base
            };
            Summary {
                steps: 2 * (n - 1),
                max_bytes_sent: (2 * p).saturating_sub(min_pair),
            }
        }
        (CollectiveKind::AllReduce, Algorithm::RecursiveHalvingDoubling) => {
            // Rank 0 of the power-of-two core: the whole buffer but its own chunk in the
            // halving, its growing aligned blocks in the doubling, and the whole buffer back to
            // the rank it folded in, if there is one.
            let core = floor_pow2(n);
            let k = ceil_log2(core);
            let chunks = core as u64;
            let doubling: u64 = (1..k).map(|j| block0(chunks, j)).sum();
            let halving_plus_own = if core > 1 { p } else { 0 };
            let extra = u64::from(n > core);
            Summary {
                steps: 2 * k + 2 * extra as usize,
                max_bytes_sent: halving_plus_own + doubling + extra * p,
            }
        }
        (CollectiveKind::AllReduce, Algorithm::Tree)
        | (CollectiveKind::Broadcast, Algorithm::Tree) => {
            // The root sends the whole buffer once per level of the broadcast.
            let reduce = if kind == CollectiveKind::AllReduce {
                log2
            } else {
                0
            };
            Summary {
                steps: reduce + log2,
                max_bytes_sent: log2 as u64 * p,
            }
        }
        (CollectiveKind::AllReduce, Algorithm::Direct) => Summary {
            steps: one as usize,
            max_bytes_sent: (n64 - 1) * p,
        },
        (CollectiveKind::AllGather | CollectiveKind::ReduceScatter, Algorithm::Tree) => {
            return refuse("ring, direct, recursive-halving-doubling")
        }
        (
            CollectiveKind::AllGather | CollectiveKind::ReduceScatter,
            Algorithm::RecursiveHalvingDoubling,
        ) if !pow2 => {
            return Err(CollectiveError::NotPowerOfTwo {
                kind: kind.name(),
                n,
            })
        }
        (CollectiveKind::AllGather, Algorithm::Ring)
        | (CollectiveKind::ReduceScatter, Algorithm::Ring) => {
            // Every chunk but one (the rank's own, or the next rank's): P − the smallest chunk.
            let (base, _) = split(n64);
            Summary {
                steps: n - 1,
                max_bytes_sent: if n > 1 { p - base } else { 0 },
            }
        }
        (CollectiveKind::ReduceScatter, Algorithm::RecursiveHalvingDoubling) => Summary {
            steps: log2,
            max_bytes_sent: if n > 1 { p - split(n64).0 } else { 0 },
        },
        (CollectiveKind::AllGather, Algorithm::RecursiveHalvingDoubling) => Summary {
            steps: log2,
            max_bytes_sent: (0..log2).map(|j| block0(n64, j)).sum(),
        },
        (CollectiveKind::AllGather, Algorithm::Direct) => {
            // Rank r sends its chunk to each of the others; chunk 0 is the largest.
            let (base, rem) = split(n64);
            Summary {
                steps: one as usize,
                max_bytes_sent: (n64 - 1) * (base + u64::from(rem > 0)),
            }
        }
        (CollectiveKind::ReduceScatter, Algorithm::Direct) => Summary {
            steps: one as usize,
            max_bytes_sent: if n > 1 { p - split(n64).0 } else { 0 },
        },
        (CollectiveKind::Broadcast, Algorithm::RecursiveHalvingDoubling) => {
            return refuse("tree, ring, direct")
        }
        (CollectiveKind::Broadcast, Algorithm::Ring) => Summary {
            steps: n - 1,
            max_bytes_sent: one * p,
        },
        (CollectiveKind::Broadcast, Algorithm::Direct) => Summary {
            steps: one as usize,
            max_bytes_sent: (n64 - 1) * p,
        },
    };
    Ok(s)
}

/// Step indices (rounds) of `kind` on `n` ranks by `algorithm` ([`summary`]).
///
/// **Errors** as [`plan`] does (empty group, unsupported algorithm).
pub fn collective_step_count(
    kind: CollectiveKind,
    algorithm: Algorithm,
    n: usize,
) -> Result<usize, CollectiveError> {
    summary(kind, algorithm, n, 0).map(|s| s.steps)
}

/// Bytes the busiest rank sends in `kind` over a buffer of `payload_bytes` (all-gather: the
/// gathered size) on `n` ranks, planned at byte granularity ([`summary`]).
///
/// **Errors** as [`plan`] does (empty group, unsupported algorithm).
pub fn collective_max_bytes_sent_per_rank(
    kind: CollectiveKind,
    algorithm: Algorithm,
    n: usize,
    payload_bytes: u64,
) -> Result<u64, CollectiveError> {
    summary(kind, algorithm, n, payload_bytes).map(|s| s.max_bytes_sent)
}

/// Steps of an all-reduce of `n` ranks by `algorithm` (0 for `n <= 1`).
pub fn all_reduce_step_count(algorithm: Algorithm, n: usize) -> usize {
    collective_step_count(CollectiveKind::AllReduce, algorithm, n).unwrap_or(0)
}

/// Bytes the busiest rank sends in an all-reduce of `payload_bytes` over `n` ranks, planned at
/// byte granularity (0 for `n <= 1`).
pub fn all_reduce_max_bytes_sent_per_rank(
    algorithm: Algorithm,
    n: usize,
    payload_bytes: u64,
) -> u64 {
    collective_max_bytes_sent_per_rank(CollectiveKind::AllReduce, algorithm, n, payload_bytes)
        .unwrap_or(0)
}
