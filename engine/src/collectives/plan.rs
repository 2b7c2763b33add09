//! Planning: every collective as a data-free list of [`Step`]s (which rank sends which chunk to
//! whom, at which step index, adding or overwriting), and the symbolic replay of those steps on
//! contribution masks that the Collectives view animates.

use super::kinds::{Algorithm, CollectiveError, CollectiveKind, MAX_MASK_RANKS};
use serde::{Deserialize, Serialize};
use std::ops::Range;

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
pub(super) fn ceil_log2(n: usize) -> usize {
    if n <= 1 {
        0
    } else {
        (usize::BITS - (n - 1).leading_zeros()) as usize
    }
}

/// The largest power of two `<= n` (`n >= 1`).
pub(super) fn floor_pow2(n: usize) -> usize {
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

pub(super) fn unsupported(
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
pub(super) fn index_groups(steps: &[Step]) -> impl Iterator<Item = &[Step]> {
    steps.chunk_by(|a, b| a.index == b.index)
}
