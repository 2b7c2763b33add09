//! Collectives over the ranks of a tensor-parallel group: all-reduce (ring, recursive
//! halving/doubling, tree, direct), all-gather, reduce-scatter and broadcast.
//!
//! Every collective is first *planned* without data ([`plan`]): a list of [`Step`]s saying which
//! rank sends which element range to whom, at which step index, and whether the receiver adds or
//! overwrites. The data path ([`all_reduce`] and friends) executes exactly that plan on the
//! buffers, so the schedule the app animates, the byte counts in the trace and the numbers the
//! executor computes come from one implementation.
//!
//! # Ring all-reduce
//!
//! The buffer is cut into `n` chunks (sizes differ by at most one element when `n` does not
//! divide the length; chunks may be empty when the buffer is shorter than `n`). Each step, every
//! rank sends one chunk to its right neighbour. In the reduce-scatter phase (`n-1` steps) the
//! receiver adds; afterwards rank `r` holds the full sum of chunk `r`. In the all-gather phase
//! (`n-1` steps) the receiver overwrites, passing the finished chunks around.
//!
//! ```text
//!  3 ranks, buffer cut into chunks a|b|c; "b02" is b0+b2 and "A" the full a0+a1+a2.
//!
//!            start      RS s=0        RS s=1        AG s=0        AG s=1      (step index 0..3)
//!  rank 0:   a0 b0 c0   a0  b02 c0    A   b02 c0    A   b02 C     A B C
//!  rank 1:   a1 b1 c1   a1  b1  c01   a1  B   c01   A   B   c01   A B C
//!  rank 2:   a2 b2 c2   a12 b2  c2    a12 b2  C     a12 B   C     A B C
//!
//!      0 ──► 1 ──► 2     step s of reduce-scatter: rank r sends chunk r-s-1 to r+1, which adds;
//!      ▲           │     step s of all-gather: rank r sends chunk r-s to r+1, which overwrites.
//!      └───────────┘     2(n-1) steps; each rank sends 2(n-1)/n of the buffer.
//! ```
//!
//! # The other algorithms
//!
//! - Recursive halving/doubling: partners at distance n/2, n/4, ..., 1 swap half of the range
//!   they share and add (reduce-scatter), then at distance 1, 2, ..., n/2 swap everything they
//!   hold (all-gather): 2·log2(n) steps, 2(n-1)/n of the buffer per rank. A group that is not a
//!   power of two first folds each extra rank `p+i` into rank `i` (`p` the largest power of two
//!   `<= n`) and sends it the result last: 2·floor(log2 n) + 2 steps.
//! - Tree: a binomial tree (rank `r`'s parent is `r` minus its lowest set bit): partial sums go
//!   up to rank 0 in ceil(log2 n) steps and the result comes down the same tree in as many. The
//!   root sends the whole buffer ceil(log2 n) times.
//! - Direct: every rank sends its whole buffer to every other in one step: (n-1)× the buffer
//!   per rank.
//!
//! # Determinism
//!
//! Steps with the same index run concurrently: every payload is read before any is applied.
//! When several ranks reduce into the same range of one rank in one step (direct all-reduce), the
//! terms are added in ascending rank order, the receiver's own value at its place, so every rank
//! computes the same sum bit for bit. All-reduce outputs are therefore identical on all ranks for
//! every algorithm.

use crate::dtype::Element;
use serde::{Deserialize, Serialize};
use std::ops::Range;
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

/// The part of an algorithm a step belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Partial sums travel and accumulate until each rank owns one reduced chunk.
    ReduceScatter,
    /// Finished chunks travel and overwrite until every rank has all of them.
    AllGather,
    /// Partial sums travel up a tree towards the root.
    Reduce,
    /// Finished data travels from the root down a tree (or a chain).
    Broadcast,
    /// Recursive halving/doubling on a non-power-of-two group: extra ranks hand their buffer to a
    /// partner before the power-of-two core runs.
    FoldIn,
    /// The partners send the result back to the extra ranks.
    FoldOut,
    /// Every rank sends straight to every other in one step.
    Direct,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::ReduceScatter => "reduce-scatter",
            Phase::AllGather => "all-gather",
            Phase::Reduce => "reduce",
            Phase::Broadcast => "broadcast",
            Phase::FoldIn => "fold-in",
            Phase::FoldOut => "fold-out",
            Phase::Direct => "direct",
        }
    }
}

/// One message: `src` sends the element range `elems` (chunk `chunk`) to `dst`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Step {
    /// Step number, from 0; steps with the same index run concurrently.
    pub index: usize,
    pub phase: Phase,
    pub src: usize,
    pub dst: usize,
    /// Chunk number in the plan's chunk grid ([`Plan::chunks`]).
    pub chunk: usize,
    /// Element range in the buffer (may be empty when the buffer is shorter than the chunk count).
    pub elems: Range<usize>,
    /// Bytes on the wire: `elems.len() · elem_bytes`.
    pub bytes: u64,
    /// Whether `dst` adds the payload (true) or overwrites its range with it (false).
    pub reduce: bool,
}

/// A data-free schedule of one collective.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub kind: CollectiveKind,
    pub algorithm: Algorithm,
    /// Group size.
    pub n: usize,
    /// Buffer length in elements (for all-gather: the gathered length).
    pub elems: usize,
    pub elem_bytes: usize,
    /// How many chunks the buffer is cut into (ring: `n`; halving/doubling: the largest power of
    /// two `<= n`; tree, direct all-reduce and broadcast: 1).
    pub chunks: usize,
    /// Root of a broadcast (0 otherwise).
    pub root: usize,
    pub steps: Vec<Step>,
}

impl Plan {
    /// Number of step indices (rounds): `0` for a single rank.
    pub fn step_count(&self) -> usize {
        step_count(&self.steps)
    }

    /// Bytes each rank sends.
    pub fn bytes_sent_per_rank(&self) -> Vec<u64> {
        bytes_sent_per_rank(&self.steps, self.n)
    }

    /// Bytes each rank receives.
    pub fn bytes_received_per_rank(&self) -> Vec<u64> {
        bytes_received_per_rank(&self.steps, self.n)
    }

    /// Bytes over each directed link, `[src][dst]`.
    pub fn link_bytes(&self) -> Vec<Vec<u64>> {
        link_bytes(&self.steps, self.n)
    }

    /// Total bytes sent by all ranks.
    pub fn total_bytes(&self) -> u64 {
        self.steps.iter().map(|s| s.bytes).sum()
    }

    /// Element range of chunk `c` in this plan's chunk grid.
    pub fn chunk_range(&self, c: usize) -> Range<usize> {
        chunk_range(c, self.chunks, self.elems)
    }

    /// Contribution masks after each step index, starting from the kind's initial state
    /// (see [`contributions_from`]).
    pub fn contributions(&self) -> Result<Vec<Vec<Vec<u64>>>, CollectiveError> {
        let initial = initial_masks(self.kind, self.n, self.chunks, self.root)?;
        Ok(contributions_from(&self.steps, initial))
    }
}

/// The result of running a collective on data: each rank's output and the steps taken.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome<T> {
    /// One buffer per rank.
    pub outputs: Vec<Vec<T>>,
    pub steps: Vec<Step>,
    /// The chunk grid the steps refer to ([`Plan::chunks`]).
    pub chunks: usize,
}

/// Element range of chunk `c` when `len` elements are cut into `chunks` nearly equal parts: the
/// first `len % chunks` chunks hold one element more.
pub fn chunk_range(c: usize, chunks: usize, len: usize) -> Range<usize> {
    if chunks == 0 {
        return 0..0;
    }
    let (base, rem) = (len / chunks, len % chunks);
    let start = c * base + c.min(rem);
    let size = base + usize::from(c < rem);
    start..start + size
}

/// `ceil(log2 n)` (0 for `n <= 1`).
fn ceil_log2(n: usize) -> usize {
    if n <= 1 {
        0
    } else {
        (usize::BITS - (n - 1).leading_zeros()) as usize
    }
}

/// The largest power of two `<= n` (`n >= 1`).
fn floor_pow2(n: usize) -> usize {
    1 << (usize::BITS - 1 - n.leading_zeros())
}

/// Builds a schedule. With `record` off it only counts rounds and bytes sent per rank, so the
/// trace's per-event totals need no step list.
struct Planner {
    record: bool,
    steps: Vec<Step>,
    sent_bytes: Vec<u64>,
    last_index: Option<usize>,
    elems: usize,
    elem_bytes: usize,
    chunks: usize,
    index: usize,
}

impl Planner {
    fn new(record: bool, n: usize, elems: usize, elem_bytes: usize, chunks: usize) -> Self {
        Planner {
            record,
            steps: Vec::new(),
            sent_bytes: vec![0; n],
            last_index: None,
            elems,
            elem_bytes,
            chunks,
            index: 0,
        }
    }

    fn push(&mut self, phase: Phase, src: usize, dst: usize, chunk: usize, reduce: bool) {
        let elems = chunk_range(chunk, self.chunks, self.elems);
        let bytes = (elems.len() as u64).saturating_mul(self.elem_bytes as u64);
        self.sent_bytes[src] = self.sent_bytes[src].saturating_add(bytes);
        self.last_index = Some(self.index);
        if !self.record {
            return;
        }
        self.steps.push(Step {
            index: self.index,
            phase,
            src,
            dst,
            chunk,
            elems,
            bytes,
            reduce,
        });
    }

    /// Closes the current round if it sent anything.
    fn next_round(&mut self) {
        if self.last_index == Some(self.index) {
            self.index += 1;
        }
    }

    /// Ring reduce-scatter over `n` chunks: at step `s` rank `r` sends chunk `r-s-1` to `r+1`,
    /// so rank `r` ends holding the full sum of chunk `r`.
    fn ring_reduce_scatter(&mut self, n: usize) {
        for s in 0..n.saturating_sub(1) {
            for r in 0..n {
                self.push(
                    Phase::ReduceScatter,
                    r,
                    (r + 1) % n,
                    (r + n - 1 - s) % n,
                    true,
                );
            }
            self.next_round();
        }
    }

    /// Ring all-gather over `n` chunks, rank `r` starting with chunk `r`: at step `s` rank `r`
    /// forwards chunk `r-s` to `r+1`.
    fn ring_all_gather(&mut self, n: usize) {
        for s in 0..n.saturating_sub(1) {
            for r in 0..n {
                self.push(Phase::AllGather, r, (r + 1) % n, (r + n - s) % n, false);
            }
            self.next_round();
        }
    }

    /// Recursive halving over ranks `0..p` (`p` a power of two, `p` chunks): partners at distance
    /// p/2, p/4, ..., 1 swap halves of the range they share; the rank whose distance bit is set
    /// keeps the upper half. Rank `r` ends owning chunk `r`. Returns each rank's range.
    fn halving(&mut self, p: usize) {
        let mut range: Vec<Range<usize>> = vec![0..p; p];
        let mut d = p / 2;
        while d >= 1 {
            for (r, rg) in range.iter().enumerate() {
                let mid = (rg.start + rg.end) / 2;
                let send = if r & d == 0 {
                    mid..rg.end
                } else {
                    rg.start..mid
                };
                for c in send {
                    self.push(Phase::ReduceScatter, r, r ^ d, c, true);
                }
            }
            for (r, rg) in range.iter_mut().enumerate() {
                let mid = (rg.start + rg.end) / 2;
                *rg = if r & d == 0 {
                    rg.start..mid
                } else {
                    mid..rg.end
                };
            }
            self.next_round();
            d /= 2;
        }
    }

    /// Recursive doubling over ranks `0..p`, rank `r` starting with chunk `r`: partners at
    /// distance 1, 2, ..., p/2 swap everything they hold, which doubles it.
    fn doubling(&mut self, p: usize) {
        let mut range: Vec<Range<usize>> = (0..p).map(|r| r..r + 1).collect();
        let mut d = 1;
        while d < p {
            for (r, rg) in range.iter().enumerate() {
                for c in rg.clone() {
                    self.push(Phase::AllGather, r, r ^ d, c, false);
                }
            }
            range = (0..p)
                .map(|r| {
                    let (a, b) = (&range[r], &range[r ^ d]);
                    a.start.min(b.start)..a.end.max(b.end)
                })
                .collect();
            self.next_round();
            d *= 2;
        }
    }

    /// Binomial-tree reduce to rank 0: at round `j` (distance `d = 2^j`), ranks `r ≡ d (mod 2d)`
    /// send their partial sum to `r - d`. `ceil(log2 n)` rounds.
    fn tree_reduce(&mut self, n: usize) {
        for j in 0..ceil_log2(n) {
            let d = 1 << j;
            for r in (d..n).step_by(2 * d) {
                self.push(Phase::Reduce, r, r - d, 0, true);
            }
            self.next_round();
        }
    }

    /// Binomial-tree broadcast from `root`, down the same tree [`Planner::tree_reduce`] goes up:
    /// with `v = (r - root) mod n` and distances `d = 2^j` from the largest down, every
    /// `v ≡ 0 (mod 2d)` sends to `v + d`. `ceil(log2 n)` rounds.
    fn tree_broadcast(&mut self, n: usize, root: usize) {
        for j in (0..ceil_log2(n)).rev() {
            let d = 1 << j;
            for v in (0..n).step_by(2 * d) {
                if v + d < n {
                    self.push(
                        Phase::Broadcast,
                        (v + root) % n,
                        (v + d + root) % n,
                        0,
                        false,
                    );
                }
            }
            self.next_round();
        }
    }
}

fn unsupported(
    kind: CollectiveKind,
    algorithm: Algorithm,
    supported: &'static str,
) -> CollectiveError {
    CollectiveError::Unsupported {
        kind: kind.name(),
        algorithm,
        supported,
    }
}

/// Plans a collective of `kind` on `n` ranks over a buffer of `elems` elements of `elem_bytes`
/// bytes each (all-gather: `elems` is the gathered length). A broadcast plan has root 0; see
/// [`plan_broadcast`] for another root.
///
/// Supported: all-reduce with every [`Algorithm`]; all-gather and reduce-scatter with ring,
/// direct, and recursive halving/doubling on power-of-two groups; broadcast with tree
/// (binomial), ring (a chain) and direct; identity with any (no steps).
pub fn plan(
    kind: CollectiveKind,
    algorithm: Algorithm,
    n: usize,
    elems: usize,
    elem_bytes: usize,
) -> Result<Plan, CollectiveError> {
    plan_with_root(kind, algorithm, n, elems, elem_bytes, 0)
}

/// Plans a broadcast from `root`.
pub fn plan_broadcast(
    algorithm: Algorithm,
    n: usize,
    elems: usize,
    elem_bytes: usize,
    root: usize,
) -> Result<Plan, CollectiveError> {
    plan_with_root(
        CollectiveKind::Broadcast,
        algorithm,
        n,
        elems,
        elem_bytes,
        root,
    )
}

fn plan_with_root(
    kind: CollectiveKind,
    algorithm: Algorithm,
    n: usize,
    elems: usize,
    elem_bytes: usize,
    root: usize,
) -> Result<Plan, CollectiveError> {
    let p = build(kind, algorithm, n, elems, elem_bytes, root, true)?;
    Ok(Plan {
        kind,
        algorithm,
        n,
        elems,
        elem_bytes,
        chunks: p.chunks,
        root,
        steps: p.steps,
    })
}

/// The one implementation of every schedule (see [`plan`]).
fn build(
    kind: CollectiveKind,
    algorithm: Algorithm,
    n: usize,
    elems: usize,
    elem_bytes: usize,
    root: usize,
    record: bool,
) -> Result<Planner, CollectiveError> {
    if n == 0 {
        return Err(CollectiveError::EmptyGroup);
    }
    if root >= n {
        return Err(CollectiveError::RootOutOfRange { root, n });
    }
    let power_of_two = |kind: CollectiveKind| {
        if n.is_power_of_two() {
            Ok(())
        } else {
            Err(CollectiveError::NotPowerOfTwo {
                kind: kind.name(),
                n,
            })
        }
    };
    let chunks = match (kind, algorithm) {
        (CollectiveKind::Identity, _) => 1,
        (CollectiveKind::AllReduce, Algorithm::Ring) => n,
        (CollectiveKind::AllReduce, Algorithm::RecursiveHalvingDoubling) => floor_pow2(n),
        (CollectiveKind::AllReduce, Algorithm::Tree | Algorithm::Direct) => 1,
        (CollectiveKind::AllGather | CollectiveKind::ReduceScatter, Algorithm::Tree) => {
            return Err(unsupported(
                kind,
                algorithm,
                "ring, direct, recursive-halving-doubling",
            ))
        }
        (CollectiveKind::AllGather | CollectiveKind::ReduceScatter, _) => n,
        (CollectiveKind::Broadcast, Algorithm::RecursiveHalvingDoubling) => {
            return Err(unsupported(kind, algorithm, "tree, ring, direct"))
        }
        (CollectiveKind::Broadcast, _) => 1,
        (CollectiveKind::AllToAll, _) => n * n,
    };
    let mut p = Planner::new(record, n, elems, elem_bytes, chunks);
    match (kind, algorithm) {
        (CollectiveKind::Identity, _) => {}
        (CollectiveKind::AllReduce, Algorithm::Ring) => {
            p.ring_reduce_scatter(n);
            p.ring_all_gather(n);
        }
        (CollectiveKind::AllReduce, Algorithm::RecursiveHalvingDoubling) => {
            let core = floor_pow2(n);
            for extra in core..n {
                for c in 0..core {
                    p.push(Phase::FoldIn, extra, extra - core, c, true);
                }
            }
            p.next_round();
            p.halving(core);
            p.doubling(core);
            for extra in core..n {
                for c in 0..core {
                    p.push(Phase::FoldOut, extra - core, extra, c, false);
                }
            }
            p.next_round();
        }
        (CollectiveKind::AllReduce, Algorithm::Tree) => {
            p.tree_reduce(n);
            p.tree_broadcast(n, 0);
        }
        (CollectiveKind::AllReduce, Algorithm::Direct) => {
            for src in 0..n {
                for dst in (0..n).filter(|&d| d != src) {
                    p.push(Phase::Direct, src, dst, 0, true);
                }
            }
            p.next_round();
        }
        (CollectiveKind::AllGather, Algorithm::Ring) => p.ring_all_gather(n),
        (CollectiveKind::ReduceScatter, Algorithm::Ring) => p.ring_reduce_scatter(n),
        (CollectiveKind::AllGather, Algorithm::RecursiveHalvingDoubling) => {
            power_of_two(kind)?;
            p.doubling(n);
        }
        (CollectiveKind::ReduceScatter, Algorithm::RecursiveHalvingDoubling) => {
            power_of_two(kind)?;
            p.halving(n);
        }
        (CollectiveKind::AllGather, _) => {
            for src in 0..n {
                for dst in (0..n).filter(|&d| d != src) {
                    p.push(Phase::Direct, src, dst, src, false);
                }
            }
            p.next_round();
        }
        (CollectiveKind::ReduceScatter, _) => {
            for src in 0..n {
                for dst in (0..n).filter(|&d| d != src) {
                    p.push(Phase::Direct, src, dst, dst, true);
                }
            }
            p.next_round();
        }
        (CollectiveKind::Broadcast, Algorithm::Ring) => {
            for k in 0..n - 1 {
                p.push(
                    Phase::Broadcast,
                    (root + k) % n,
                    (root + k + 1) % n,
                    0,
                    false,
                );
                p.next_round();
            }
        }
        (CollectiveKind::Broadcast, Algorithm::Direct) => {
            for dst in (0..n).filter(|&d| d != root) {
                p.push(Phase::Direct, root, dst, 0, false);
            }
            p.next_round();
        }
        (CollectiveKind::Broadcast, _) => p.tree_broadcast(n, root),
        (CollectiveKind::AllToAll, _) => {
            for k in 1..n {
                for src in 0..n {
                    let dst = (src + k) % n;
                    p.push(Phase::Direct, src, dst, src * n + dst, false);
                }
                p.next_round();
            }
        }
    }
    Ok(p)
}

/// Number of step indices (rounds) in `steps`.
pub fn step_count(steps: &[Step]) -> usize {
    steps.iter().map(|s| s.index + 1).max().unwrap_or(0)
}

/// Bytes each of `n` ranks sends.
pub fn bytes_sent_per_rank(steps: &[Step], n: usize) -> Vec<u64> {
    let mut out = vec![0u64; n];
    for s in steps {
        out[s.src] += s.bytes;
    }
    out
}

/// Bytes each of `n` ranks receives.
pub fn bytes_received_per_rank(steps: &[Step], n: usize) -> Vec<u64> {
    let mut out = vec![0u64; n];
    for s in steps {
        out[s.dst] += s.bytes;
    }
    out
}

/// Bytes over each directed link: `link[src][dst]`.
pub fn link_bytes(steps: &[Step], n: usize) -> Vec<Vec<u64>> {
    let mut out = vec![vec![0u64; n]; n];
    for s in steps {
        out[s.src][s.dst] += s.bytes;
    }
    out
}

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

/// The contribution masks before any step: for each rank and chunk, the set of ranks (bit `r` for
/// rank `r`) whose data the chunk holds. All-reduce, reduce-scatter, identity: every rank holds
/// its own data in every chunk. All-gather: rank `r` holds only chunk `r`. Broadcast: only the
/// root holds data.
pub fn initial_masks(
    kind: CollectiveKind,
    n: usize,
    chunks: usize,
    root: usize,
) -> Result<Vec<Vec<u64>>, CollectiveError> {
    if n > MAX_MASK_RANKS {
        return Err(CollectiveError::TooManyRanks {
            n,
            max: MAX_MASK_RANKS,
        });
    }
    Ok((0..n)
        .map(|r| {
            (0..chunks)
                .map(|c| match kind {
                    CollectiveKind::AllGather if c != r => 0,
                    CollectiveKind::Broadcast if r != root => 0,
                    _ => 1u64 << r,
                })
                .collect()
        })
        .collect())
}

/// Replays `steps` symbolically for an all-reduce of `n` ranks over `chunks` chunks: element `k`
/// of the result is the state after `k` step indices (element 0 is the initial state), and
/// `state[rank][chunk]` is the bitmask of ranks whose data is summed into that chunk on that
/// rank. At the end of a correct all-reduce every mask is `(1 << n) - 1`.
pub fn contributions(
    steps: &[Step],
    n: usize,
    chunks: usize,
) -> Result<Vec<Vec<Vec<u64>>>, CollectiveError> {
    let initial = initial_masks(CollectiveKind::AllReduce, n, chunks, 0)?;
    Ok(contributions_from(steps, initial))
}

/// Replays `steps` on contribution masks from `initial` (see [`contributions`]): a reducing step
/// ORs the sender's mask into the receiver's, an overwriting step replaces it; steps of one index
/// read the state before that index.
pub fn contributions_from(steps: &[Step], initial: Vec<Vec<u64>>) -> Vec<Vec<Vec<u64>>> {
    let mut states = vec![initial];
    for group in index_groups(steps) {
        let before = &states[states.len() - 1];
        let mut next = before.clone();
        for s in group {
            let sent = before[s.src][s.chunk];
            let cell = &mut next[s.dst][s.chunk];
            *cell = if s.reduce { *cell | sent } else { sent };
        }
        states.push(next);
    }
    states
}

/// Splits steps into runs of equal index (steps are stored in index order).
fn index_groups(steps: &[Step]) -> impl Iterator<Item = &[Step]> {
    steps.chunk_by(|a, b| a.index == b.index)
}

/// Checks that there is at least one rank and all buffers have one length; returns it.
fn common_len<T>(inputs: &[Vec<T>]) -> Result<usize, CollectiveError> {
    let first = inputs.first().ok_or(CollectiveError::EmptyGroup)?;
    let expected = first.len();
    for (rank, b) in inputs.iter().enumerate() {
        if b.len() != expected {
            return Err(CollectiveError::LengthMismatch {
                rank,
                expected,
                found: b.len(),
            });
        }
    }
    Ok(expected)
}

/// How a reducing collective combines two values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum ReduceOp {
    #[default]
    Sum,
    /// Elementwise maximum (a parallel softmax's row maximum).
    Max,
}

impl ReduceOp {
    fn apply<T: Element>(self, a: &mut T, b: T) {
        match self {
            ReduceOp::Sum => *a += b,
            ReduceOp::Max => {
                if b > *a {
                    *a = b;
                }
            }
        }
    }
}

fn execute<T: Element>(steps: &[Step], bufs: &mut [Vec<T>]) {
    execute_op(steps, bufs, ReduceOp::Sum);
}

/// Elements of the pieces [`execute_op`] cuts the buffers into (fixed, so that nothing depends
/// on the number of threads).
const PIECE: usize = 1 << 14;

/// Every message applies its payload element by element, so the plan can run piece by piece of
/// the buffers: for each element, the same operations in the same order as running the whole
/// plan index after index, so the same values bit for bit. A piece of every rank's buffer
/// (`n × 64 KiB` of f32) stays in the core's cache for all the steps that touch it, instead of
/// each step streaming a chunk of every buffer from memory, and the pieces run on the thread
/// pool.
fn execute_op<T: Element>(steps: &[Step], bufs: &mut [Vec<T>], op: ReduceOp) {
    let len = bufs.first().map_or(0, Vec::len);
    let mut pieces: Vec<Vec<&mut [T]>> = Vec::new();
    if len > PIECE && bufs.iter().all(|b| b.len() == len) {
        pieces.resize_with(len.div_ceil(PIECE), || Vec::with_capacity(bufs.len()));
        for b in bufs.iter_mut() {
            for (piece, c) in pieces.iter_mut().zip(b.chunks_mut(PIECE)) {
                piece.push(c);
            }
        }
        use rayon::prelude::*;
        pieces
            .into_par_iter()
            .enumerate()
            .for_each(|(i, mut piece)| {
                execute_piece(steps, &mut piece, i * PIECE, op);
            });
    } else {
        let mut whole: Vec<&mut [T]> = bufs.iter_mut().map(|b| b.as_mut_slice()).collect();
        execute_piece(steps, &mut whole, 0, op);
    }
}

/// The part of `range` inside the piece that starts at element `base` and is `len` long,
/// relative to the piece (empty when they do not meet).
fn clip(range: &Range<usize>, base: usize, len: usize) -> Range<usize> {
    let start = range.start.clamp(base, base + len) - base;
    let end = range.end.clamp(base, base + len) - base;
    start..end.max(start)
}

/// Runs `steps` on one piece of every rank's buffer (`bufs[r]`, elements `base..` of rank `r`'s
/// buffer), with the semantics of concurrent sends: within an index, every payload is as it was
/// before the index. The chunked phases never write, within one index, a range another message
/// of that index reads (a unit test checks every plan), so they run in place; the direct exchange
/// reads snapshots and adds in ascending rank order.
fn execute_piece<T: Element>(steps: &[Step], bufs: &mut [&mut [T]], base: usize, op: ReduceOp) {
    let len = bufs.first().map_or(0, |b| b.len());
    for group in index_groups(steps) {
        if group.iter().any(|s| s.phase == Phase::Direct) {
            execute_exchange(group, bufs, base, op);
            continue;
        }
        for s in group {
            let r = clip(&s.elems, base, len);
            if r.is_empty() {
                continue;
            }
            let (src, dst) = pair_mut(bufs, s.src, s.dst);
            apply(op, s.reduce, &src[r.clone()], &mut dst[r]);
        }
    }
}

/// One message's payload applied to the receiver's range: combined by `op`, or copied.
fn apply<T: Element>(op: ReduceOp, reduce: bool, from: &[T], to: &mut [T]) {
    if reduce {
        for (a, b) in to.iter_mut().zip(from) {
            op.apply(a, *b);
        }
    } else {
        to.copy_from_slice(from);
    }
}

/// Rank `src`'s buffer to read and rank `dst`'s to write (`src != dst`, as in every plan).
fn pair_mut<'a, T>(bufs: &'a mut [&mut [T]], src: usize, dst: usize) -> (&'a [T], &'a mut [T]) {
    if src < dst {
        let (lo, hi) = bufs.split_at_mut(dst);
        (&*lo[src], &mut *hi[0])
    } else {
        let (lo, hi) = bufs.split_at_mut(src);
        (&*hi[0], &mut *lo[dst])
    }
}

/// One index of messages that may read what others write, on one piece (as
/// [`execute_piece`]): every payload is copied first; several reductions into one range of one
/// rank add in ascending rank order with the receiver's own value at its place, so every rank
/// computes the same sum bit for bit. Messages are matched by their whole ranges and applied to
/// the part inside the piece.
fn execute_exchange<T: Element>(group: &[Step], bufs: &mut [&mut [T]], base: usize, op: ReduceOp) {
    let len = bufs.first().map_or(0, |b| b.len());
    let part = |s: &Step| clip(&s.elems, base, len);
    // One copy per distinct (sender, range): the direct all-reduce sends one buffer n-1 times.
    let mut copies: Vec<(usize, Range<usize>, Vec<T>)> = Vec::new();
    let mut payload_of = Vec::with_capacity(group.len());
    for s in group {
        let found = copies
            .iter()
            .position(|(src, r, _)| *src == s.src && *r == s.elems);
        payload_of.push(found.unwrap_or_else(|| {
            copies.push((s.src, s.elems.clone(), bufs[s.src][part(s)].to_vec()));
            copies.len() - 1
        }));
    }
    let payload = |k: usize| copies[payload_of[k]].2.as_slice();
    // Reductions, grouped by (dst, range) and ordered by source rank.
    let mut order: Vec<usize> = (0..group.len()).filter(|&k| group[k].reduce).collect();
    order.sort_by_key(|&k| {
        let s = &group[k];
        (s.dst, s.elems.start, s.elems.end, s.src)
    });
    for run in
        order.chunk_by(|&a, &b| (group[a].dst, &group[a].elems) == (group[b].dst, &group[b].elems))
    {
        let (dst, range) = (group[run[0]].dst, part(&group[run[0]]));
        if range.is_empty() {
            continue;
        }
        if let [k] = run {
            // Two terms: addition is commutative, so the order does not matter.
            apply(op, true, payload(*k), &mut bufs[dst][range]);
            continue;
        }
        let own = bufs[dst][range.clone()].to_vec();
        let mut terms: Vec<(usize, &[T])> =
            run.iter().map(|&k| (group[k].src, payload(k))).collect();
        terms.push((dst, own.as_slice()));
        terms.sort_by_key(|t| t.0);
        let mut acc = terms[0].1.to_vec();
        for (_, t) in &terms[1..] {
            apply(op, true, t, &mut acc);
        }
        bufs[dst][range].copy_from_slice(&acc);
    }
    for (k, s) in group.iter().enumerate() {
        if !s.reduce {
            bufs[s.dst][part(s)].copy_from_slice(payload(k));
        }
    }
}

/// Sums `inputs` (one equal-length buffer per rank) so that every rank ends with the elementwise
/// sum, using `algorithm`.
///
/// **Errors** when the group is empty or the buffers differ in length.
pub fn all_reduce<T: Element>(
    inputs: &[Vec<T>],
    algorithm: Algorithm,
) -> Result<Outcome<T>, CollectiveError> {
    let mut bufs = inputs.to_vec();
    let p = all_reduce_in_place(&mut bufs, algorithm)?;
    Ok(Outcome {
        outputs: bufs,
        steps: p.steps,
        chunks: p.chunks,
    })
}

/// [`all_reduce`] on the callers' buffers, without copying them first; returns the plan it ran.
///
/// **Errors** when the group is empty or the buffers differ in length (buffers untouched).
pub fn all_reduce_in_place<T: Element>(
    buffers: &mut [Vec<T>],
    algorithm: Algorithm,
) -> Result<Plan, CollectiveError> {
    all_reduce_in_place_op(buffers, algorithm, ReduceOp::Sum)
}

/// [`all_reduce_in_place`] with another combining operation (e.g. [`ReduceOp::Max`]).
///
/// **Errors** as [`all_reduce_in_place`].
pub fn all_reduce_in_place_op<T: Element>(
    buffers: &mut [Vec<T>],
    algorithm: Algorithm,
    op: ReduceOp,
) -> Result<Plan, CollectiveError> {
    let len = common_len(buffers)?;
    let p = plan(
        CollectiveKind::AllReduce,
        algorithm,
        buffers.len(),
        len,
        std::mem::size_of::<T>(),
    )?;
    execute_op(&p.steps, buffers, op);
    Ok(p)
}

/// Concatenates the ranks' equal-length pieces in rank order on every rank.
///
/// **Errors** when the group is empty, the pieces differ in length, or the algorithm has no
/// all-gather schedule (tree; recursive doubling on a non-power-of-two group).
pub fn all_gather<T: Element>(
    inputs: &[Vec<T>],
    algorithm: Algorithm,
) -> Result<Outcome<T>, CollectiveError> {
    let m = common_len(inputs)?;
    let n = inputs.len();
    let p = plan(
        CollectiveKind::AllGather,
        algorithm,
        n,
        n * m,
        std::mem::size_of::<T>(),
    )?;
    let mut bufs: Vec<Vec<T>> = (0..n)
        .map(|r| {
            let mut b = vec![T::zero(); n * m];
            b[p.chunk_range(r)].copy_from_slice(&inputs[r]);
            b
        })
        .collect();
    execute(&p.steps, &mut bufs);
    Ok(Outcome {
        outputs: bufs,
        steps: p.steps,
        chunks: p.chunks,
    })
}

/// Sums `inputs` and leaves rank `r` with chunk `r` of the sum (the buffer cut into `n` nearly
/// equal chunks, see [`chunk_range`]).
///
/// **Errors** when the group is empty, the buffers differ in length, or the algorithm has no
/// reduce-scatter schedule (tree; recursive halving on a non-power-of-two group).
pub fn reduce_scatter<T: Element>(
    inputs: &[Vec<T>],
    algorithm: Algorithm,
) -> Result<Outcome<T>, CollectiveError> {
    let len = common_len(inputs)?;
    let p = plan(
        CollectiveKind::ReduceScatter,
        algorithm,
        inputs.len(),
        len,
        std::mem::size_of::<T>(),
    )?;
    let mut bufs = inputs.to_vec();
    execute(&p.steps, &mut bufs);
    let outputs = bufs
        .into_iter()
        .enumerate()
        .map(|(r, b)| b[p.chunk_range(r)].to_vec())
        .collect();
    Ok(Outcome {
        outputs,
        steps: p.steps,
        chunks: p.chunks,
    })
}

/// Copies rank `root`'s buffer to every rank (each rank passes a buffer of the same length, which
/// is overwritten).
///
/// **Errors** when the group is empty, the buffers differ in length, `root` is not a rank, or
/// the algorithm has no broadcast schedule (recursive halving/doubling).
pub fn broadcast<T: Element>(
    inputs: &[Vec<T>],
    root: usize,
    algorithm: Algorithm,
) -> Result<Outcome<T>, CollectiveError> {
    let len = common_len(inputs)?;
    let p = plan_broadcast(algorithm, inputs.len(), len, std::mem::size_of::<T>(), root)?;
    let mut bufs = inputs.to_vec();
    execute(&p.steps, &mut bufs);
    Ok(Outcome {
        outputs: bufs,
        steps: p.steps,
        chunks: p.chunks,
    })
}

/// What an all-to-all delivered, and the bytes each rank moved.
#[derive(Debug, Clone, PartialEq)]
pub struct AllToAllOutcome<T> {
    /// `outputs[dst][src]`: the piece rank `src` addressed to rank `dst`.
    pub outputs: Vec<Vec<Vec<T>>>,
    /// Bytes each rank sent to the others (its piece for itself is a local copy, not counted).
    pub bytes_sent_per_rank: Vec<u64>,
    pub bytes_received_per_rank: Vec<u64>,
    /// Rounds of the pairwise exchange: `n − 1` (in round `r` rank `i` sends to `(i + r) % n`).
    pub rounds: usize,
}

/// A personalised all-to-all (`all-to-allv`: pieces may differ in length): `send[src][dst]` is
/// the piece rank `src` sends rank `dst`; rank `dst` receives every rank's piece for it, in rank
/// order. Used by the MoE token dispatch and combine ([`crate::labs::moe`]).
///
/// **Errors** when the group is empty or a rank does not pass exactly one piece per rank.
pub fn all_to_all<T: Clone>(
    send: &[Vec<Vec<T>>],
    elem_bytes: usize,
) -> Result<AllToAllOutcome<T>, CollectiveError> {
    let n = send.len();
    if n == 0 {
        return Err(CollectiveError::EmptyGroup);
    }
    for (rank, pieces) in send.iter().enumerate() {
        if pieces.len() != n {
            return Err(CollectiveError::LengthMismatch {
                rank,
                expected: n,
                found: pieces.len(),
            });
        }
    }
    let mut sent = vec![0u64; n];
    let mut received = vec![0u64; n];
    let outputs = (0..n)
        .map(|dst| {
            (0..n)
                .map(|src| {
                    let piece = &send[src][dst];
                    if src != dst {
                        let bytes = (piece.len() as u64).saturating_mul(elem_bytes as u64);
                        sent[src] += bytes;
                        received[dst] += bytes;
                    }
                    piece.clone()
                })
                .collect()
        })
        .collect();
    Ok(AllToAllOutcome {
        outputs,
        bytes_sent_per_rank: sent,
        bytes_received_per_rank: received,
        rounds: n - 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_to_all_delivers_each_piece_and_counts_only_what_leaves_a_rank() {
        // Rank s sends rank d a piece of s + d elements, each holding 10·s + d.
        let n = 3;
        let send: Vec<Vec<Vec<f64>>> = (0..n)
            .map(|s| (0..n).map(|d| vec![(10 * s + d) as f64; s + d]).collect())
            .collect();
        let out = all_to_all(&send, 8).expect("valid");
        for d in 0..n {
            for s in 0..n {
                assert_eq!(out.outputs[d][s], vec![(10 * s + d) as f64; s + d]);
            }
        }
        // Rank 0 sends 1 + 2 elements, rank 1 sends 1 + 3, rank 2 sends 2 + 3 (8 bytes each).
        assert_eq!(out.bytes_sent_per_rank, vec![24, 32, 40]);
        assert_eq!(out.bytes_received_per_rank, vec![24, 32, 40]);
        assert_eq!(out.rounds, 2);
        assert_eq!(
            all_to_all(&[vec![vec![1.0]], vec![]], 8),
            Err(CollectiveError::LengthMismatch {
                rank: 0,
                expected: 2,
                found: 1
            })
        );
        assert_eq!(all_to_all::<f64>(&[], 8), Err(CollectiveError::EmptyGroup));
    }

    #[test]
    fn max_all_reduce_gives_every_rank_the_elementwise_max_with_every_algorithm() {
        for n in [1, 2, 3, 4, 5, 8] {
            let bufs: Vec<Vec<f64>> = (0..n)
                .map(|r| {
                    (0..13)
                        .map(|i| ((i * 7 + r * 5) % 11) as f64 - 5.0)
                        .collect()
                })
                .collect();
            let want: Vec<f64> = (0..13)
                .map(|i| bufs.iter().map(|b| b[i]).fold(f64::NEG_INFINITY, f64::max))
                .collect();
            for a in Algorithm::ALL {
                let mut got = bufs.clone();
                all_reduce_in_place_op(&mut got, a, ReduceOp::Max).unwrap();
                assert!(got.iter().all(|g| g == &want), "{a} n={n}");
            }
        }
    }

    /// Distinct small integers per rank and element: sums of a few of them are exact in f64, so
    /// these tests can compare with `==`.
    fn inputs(n: usize, len: usize) -> Vec<Vec<f64>> {
        (0..n)
            .map(|r| (0..len).map(|i| (1 + r * 1000 + i) as f64).collect())
            .collect()
    }

    fn naive_sum(inputs: &[Vec<f64>]) -> Vec<f64> {
        (0..inputs[0].len())
            .map(|i| inputs.iter().map(|b| b[i]).sum())
            .collect()
    }

    #[test]
    fn chunks_cover_the_buffer_in_order() {
        for (len, chunks) in [(10, 3), (2, 5), (0, 4), (12, 4)] {
            let ranges: Vec<_> = (0..chunks).map(|c| chunk_range(c, chunks, len)).collect();
            assert_eq!(ranges[0].start, 0);
            assert_eq!(ranges[chunks - 1].end, len);
            for w in ranges.windows(2) {
                assert_eq!(w[0].end, w[1].start);
                assert!(w[0].len() >= w[1].len() && w[0].len() - w[1].len() <= 1);
            }
        }
        assert_eq!(chunk_range(2, 3, 10), 7..10);
    }

    #[test]
    fn every_all_reduce_sums_exactly_on_integers() {
        for algorithm in Algorithm::ALL {
            for n in 1usize..=9 {
                for len in [0, 1, n - 1, n, 3 * n + 2] {
                    let x = inputs(n, len);
                    let out = all_reduce(&x, algorithm).unwrap();
                    let want = naive_sum(&x);
                    for (r, o) in out.outputs.iter().enumerate() {
                        assert_eq!(o, &want, "{algorithm} n={n} len={len} rank {r}");
                    }
                }
            }
        }
    }

    #[test]
    fn ring_of_three_matches_the_doc_diagram() {
        let p = plan(CollectiveKind::AllReduce, Algorithm::Ring, 3, 3, 4).unwrap();
        let first: Vec<_> = p.steps[..3]
            .iter()
            .map(|s| (s.src, s.dst, s.chunk, s.reduce))
            .collect();
        // Step 0: rank 0 sends c (chunk 2), rank 1 sends a (0), rank 2 sends b (1), all adding.
        assert_eq!(first, [(0, 1, 2, true), (1, 2, 0, true), (2, 0, 1, true)]);
        assert_eq!(p.step_count(), 4);
        assert!(p.steps[6..]
            .iter()
            .all(|s| !s.reduce && s.phase == Phase::AllGather));
        assert_eq!(p.bytes_sent_per_rank(), vec![16, 16, 16]);
        let c = p.contributions().unwrap();
        // After reduce-scatter (2 steps) rank r holds the full sum of chunk r only.
        for (r, row) in c[2].iter().enumerate() {
            assert_eq!(row[r], 0b111);
        }
        assert_eq!(c[2][0][1], 0b101);
        assert!(c[4].iter().flatten().all(|&m| m == 0b111));
    }

    #[test]
    fn step_counts_match_the_documented_formulas() {
        let cases = [
            (Algorithm::Ring, 8, 14),
            (Algorithm::RecursiveHalvingDoubling, 8, 6),
            (Algorithm::RecursiveHalvingDoubling, 6, 6), // fold in, 2 halving, 2 doubling, fold out
            (Algorithm::Tree, 5, 6),
            (Algorithm::Tree, 8, 6),
            (Algorithm::Direct, 4, 1),
            (Algorithm::Ring, 1, 0),
            (Algorithm::Tree, 1, 0),
        ];
        for (a, n, steps) in cases {
            assert_eq!(all_reduce_step_count(a, n), steps, "{a} n={n}");
            let p = plan(CollectiveKind::AllReduce, a, n, 100, 4).unwrap();
            assert_eq!(p.step_count(), steps, "{a} n={n}");
        }
    }

    #[test]
    fn counting_agrees_with_the_listed_plan() {
        for kind in [
            CollectiveKind::AllReduce,
            CollectiveKind::AllGather,
            CollectiveKind::ReduceScatter,
            CollectiveKind::Broadcast,
            CollectiveKind::Identity,
            CollectiveKind::AllToAll,
        ] {
            for a in Algorithm::ALL {
                for n in 1..=17 {
                    let listed = plan(kind, a, n, 1000, 1);
                    let steps = collective_step_count(kind, a, n);
                    let bytes = collective_max_bytes_sent_per_rank(kind, a, n, 1000);
                    match listed {
                        Ok(p) => {
                            assert_eq!(steps, Ok(p.step_count()));
                            let max = p.bytes_sent_per_rank().into_iter().max();
                            assert_eq!(bytes, Ok(max.unwrap_or(0)));
                        }
                        Err(e) => {
                            assert_eq!(steps, Err(e.clone()));
                            assert_eq!(bytes, Err(e));
                        }
                    }
                }
            }
        }
    }

    /// All-to-all: in each of the n−1 rounds every rank sends one piece to another, and over
    /// the rounds rank r sends its piece for rank d (chunk r·n + d) to d exactly once.
    #[test]
    fn all_to_all_sends_each_piece_to_its_rank_once() {
        for n in 2..=6 {
            let p = plan(CollectiveKind::AllToAll, Algorithm::Ring, n, 36 * 5, 2).unwrap();
            assert_eq!(p.step_count(), n - 1);
            let mut sent = vec![vec![0; n]; n];
            for s in &p.steps {
                assert_eq!(s.chunk, s.src * n + s.dst, "n {n}");
                assert!(!s.reduce);
                sent[s.src][s.dst] += 1;
            }
            for (r, row) in sent.iter().enumerate() {
                for (d, &k) in row.iter().enumerate() {
                    assert_eq!(k, usize::from(r != d), "n {n}: {r} to {d}");
                }
            }
            // Each rank sends (n−1)/n of its 1/n share.
            let total = (36 * 5 * 2) as u64;
            let want = total * (n as u64 - 1) / (n * n) as u64;
            let max = p.bytes_sent_per_rank().into_iter().max().unwrap_or(0);
            assert!(
                max.abs_diff(want) <= 2 * (n as u64),
                "n {n}: {max} vs {want}"
            );
        }
    }

    #[test]
    fn byte_totals_per_algorithm() {
        assert_eq!(
            all_reduce_max_bytes_sent_per_rank(Algorithm::Ring, 4, 4096),
            6144
        );
        assert_eq!(
            all_reduce_max_bytes_sent_per_rank(Algorithm::Direct, 4, 100),
            300
        );
        // Binomial tree: the root sends its result down ceil(log2 n) = 3 times.
        assert_eq!(
            all_reduce_max_bytes_sent_per_rank(Algorithm::Tree, 8, 100),
            300
        );
        // 6 ranks: the partners of ranks 4 and 5 send 2·3/4 of 400 in the core plus the result.
        assert_eq!(
            all_reduce_max_bytes_sent_per_rank(Algorithm::RecursiveHalvingDoubling, 6, 400),
            600 + 400
        );
        let p = plan(CollectiveKind::AllReduce, Algorithm::Ring, 4, 8, 2).unwrap();
        let links = p.link_bytes();
        assert_eq!(links[0][1], 6 * 2 * 2); // 6 chunks of 2 elements of 2 bytes
        assert_eq!(links[1][0], 0);
        assert_eq!(p.total_bytes(), 4 * 24);
        assert_eq!(p.bytes_received_per_rank(), p.bytes_sent_per_rank());
    }

    #[test]
    fn direct_all_reduce_is_bit_identical_on_every_rank() {
        // Values whose sum depends on the order of addition in f32.
        let x: Vec<Vec<f32>> = vec![vec![1.0e8], vec![1.0], vec![-1.0e8], vec![1.0]];
        let out = all_reduce(&x, Algorithm::Direct).unwrap();
        let want = ((1.0e8f32 + 1.0) + -1.0e8) + 1.0; // ascending rank order
        for o in &out.outputs {
            assert_eq!(o[0].to_bits(), want.to_bits());
        }
    }

    #[test]
    fn all_gather_reduce_scatter_and_broadcast() {
        let x = inputs(4, 3);
        for a in [
            Algorithm::Ring,
            Algorithm::Direct,
            Algorithm::RecursiveHalvingDoubling,
        ] {
            let g = all_gather(&x, a).unwrap();
            let want: Vec<f64> = x.concat();
            assert!(g.outputs.iter().all(|o| o == &want), "{a}");
            let rs = reduce_scatter(&x, a).unwrap();
            let sum = naive_sum(&x);
            for (r, o) in rs.outputs.iter().enumerate() {
                assert_eq!(o, &sum[chunk_range(r, 4, 3)], "{a} rank {r}");
            }
        }
        for a in [Algorithm::Tree, Algorithm::Ring, Algorithm::Direct] {
            for root in 0..4 {
                let b = broadcast(&x, root, a).unwrap();
                assert!(b.outputs.iter().all(|o| o == &x[root]), "{a} root {root}");
            }
        }
        assert_eq!(
            plan_broadcast(Algorithm::Tree, 5, 10, 4, 2)
                .unwrap()
                .step_count(),
            3
        );
    }

    #[test]
    fn errors_name_the_rule() {
        let empty: Vec<Vec<f64>> = Vec::new();
        assert_eq!(
            all_reduce(&empty, Algorithm::Ring).unwrap_err(),
            CollectiveError::EmptyGroup
        );
        let ragged = vec![vec![1.0f64, 2.0], vec![3.0]];
        let e = all_reduce(&ragged, Algorithm::Tree).unwrap_err();
        assert_eq!(
            e,
            CollectiveError::LengthMismatch {
                rank: 1,
                expected: 2,
                found: 1
            }
        );
        assert!(e.to_string().contains("same length"));
        let e = broadcast(&inputs(3, 2), 3, Algorithm::Tree).unwrap_err();
        assert_eq!(e, CollectiveError::RootOutOfRange { root: 3, n: 3 });
        assert!(matches!(
            all_gather(&inputs(3, 2), Algorithm::RecursiveHalvingDoubling),
            Err(CollectiveError::NotPowerOfTwo { n: 3, .. })
        ));
        assert!(matches!(
            reduce_scatter(&inputs(4, 2), Algorithm::Tree),
            Err(CollectiveError::Unsupported { .. })
        ));
        assert!(matches!(
            contributions(&[], 65, 1),
            Err(CollectiveError::TooManyRanks { n: 65, .. })
        ));
        assert!(plan(CollectiveKind::Identity, Algorithm::Ring, 4, 10, 4)
            .unwrap()
            .steps
            .is_empty());
    }

    #[test]
    fn in_place_execution_equals_snapshot_semantics() {
        // `execute` runs the chunked phases in place; the reference reads every payload first.
        let kinds = [
            CollectiveKind::AllReduce,
            CollectiveKind::ReduceScatter,
            CollectiveKind::Broadcast,
        ];
        each_plan(&kinds, 12, 29, 8, |kind, a, n, p| {
            let x = pattern(n, 29);
            let (mut fast, mut reference) = (x.clone(), x);
            execute(&p.steps, &mut fast);
            let mut whole: Vec<&mut [f64]> =
                reference.iter_mut().map(|b| b.as_mut_slice()).collect();
            for g in index_groups(&p.steps) {
                execute_exchange(g, &mut whole, 0, ReduceOp::Sum);
            }
            assert_eq!(fast, reference, "{kind:?} {a} n={n}");
        });
        let mut bufs = inputs(5, 11);
        let want = all_reduce(&bufs, Algorithm::Ring).unwrap().outputs;
        let p = all_reduce_in_place(&mut bufs, Algorithm::Ring).unwrap();
        assert_eq!(bufs, want);
        assert_eq!(p.step_count(), 8);
    }

    #[test]
    fn concurrent_steps_never_conflict() {
        // Within one index no range is both overwritten and reduced, and, except in the direct
        // exchange (which relies on payloads being read before any is applied, as a real send
        // buffer is), no range is both written and read: so the chunked algorithms may execute
        // their messages in any order within an index.
        let kinds = [
            CollectiveKind::AllReduce,
            CollectiveKind::AllGather,
            CollectiveKind::ReduceScatter,
            CollectiveKind::Broadcast,
        ];
        each_plan(&kinds, 12, 37, 4, |kind, a, n, p| {
            for g in index_groups(&p.steps) {
                for s in g {
                    for t in g {
                        let overlap = s.elems.start < t.elems.end && t.elems.start < s.elems.end;
                        if overlap && s.dst == t.src && s.phase != Phase::Direct {
                            panic!("{kind:?} {a} n={n}: {s:?} writes what {t:?} reads");
                        }
                        if overlap && s.dst == t.dst && s.reduce != t.reduce {
                            panic!("{kind:?} {a} n={n}: mixed writes {s:?} {t:?}");
                        }
                    }
                }
            }
        });
    }

    /// Every plan of `kinds`, for every algorithm and group size `1..=max_n`, over `len`
    /// elements of `elem_bytes` (combinations without a schedule are skipped).
    fn each_plan(
        kinds: &[CollectiveKind],
        max_n: usize,
        len: usize,
        elem_bytes: usize,
        mut f: impl FnMut(CollectiveKind, Algorithm, usize, Plan),
    ) {
        for &kind in kinds {
            for a in Algorithm::ALL {
                for n in 1..=max_n {
                    if let Ok(p) = plan(kind, a, n, len, elem_bytes) {
                        f(kind, a, n, p);
                    }
                }
            }
        }
    }

    /// Rank- and element-dependent values with a few distinct magnitudes (sums round).
    fn pattern(n: usize, len: usize) -> Vec<Vec<f64>> {
        (0..n)
            .map(|r| {
                (0..len)
                    .map(|i| ((r * 31 + i * 7) % 13) as f64 * 0.1)
                    .collect()
            })
            .collect()
    }

    /// Piece by piece on the thread pool (buffers longer than [`PIECE`]) gives what the whole
    /// plan run index after index on the whole buffers gives, bit for bit, for every plan: with
    /// chunk and piece edges that do not line up (a length of 2.3 pieces), and values whose sums
    /// round, so a term added twice, skipped, or in another order shows.
    #[test]
    fn piecewise_execution_equals_whole_buffer_execution() {
        let len = 2 * PIECE + PIECE / 3 + 7;
        let kinds = [
            CollectiveKind::AllReduce,
            CollectiveKind::AllGather,
            CollectiveKind::ReduceScatter,
            CollectiveKind::Broadcast,
        ];
        each_plan(&kinds, 7, len, 4, |kind, a, n, p| {
            let mut x = pattern(n, len);
            for (r, b) in x.iter_mut().enumerate() {
                b.iter_mut().for_each(|v| *v = (*v + 1.0) / (r + 3) as f64);
            }
            let (mut pieces, mut whole) = (x.clone(), x);
            execute(&p.steps, &mut pieces);
            let mut slices: Vec<&mut [f64]> = whole.iter_mut().map(|b| b.as_mut_slice()).collect();
            execute_piece(&p.steps, &mut slices, 0, ReduceOp::Sum);
            assert_eq!(pieces, whole, "{kind:?} {a} n={n}");
        });
    }

    #[test]
    fn summaries_equal_the_listed_plans_to_the_byte() {
        use CollectiveKind as K;
        let kinds = [
            K::AllReduce,
            K::AllGather,
            K::ReduceScatter,
            K::Broadcast,
            K::Identity,
            K::AllToAll,
        ];
        let algos = [
            Algorithm::Ring,
            Algorithm::RecursiveHalvingDoubling,
            Algorithm::Tree,
            Algorithm::Direct,
        ];
        let mut compared = 0;
        for n in 1..=33usize {
            for payload in [0usize, 1, 5, n.saturating_sub(1), n + 1, 1000, 4099] {
                for kind in kinds {
                    for algorithm in algos {
                        let listed = plan(kind, algorithm, n, payload, 1);
                        let fast = summary(kind, algorithm, n, payload as u64);
                        match (listed, fast) {
                            (Ok(p), Ok(s)) => {
                                let sent = p.bytes_sent_per_rank().into_iter().max().unwrap_or(0);
                                assert_eq!(
                                    (s.steps, s.max_bytes_sent),
                                    (p.step_count(), sent),
                                    "{kind:?} {algorithm:?} n={n} payload={payload}"
                                );
                                compared += 1;
                            }
                            (Err(a), Err(b)) => assert_eq!(a, b),
                            (a, b) => panic!("{kind:?} {algorithm:?} n={n}: {a:?} vs {b:?}"),
                        }
                    }
                }
            }
        }
        assert!(compared > 3000, "{compared}");
    }
}
