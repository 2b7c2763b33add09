//! Execution: the data path runs exactly the planned steps on the ranks' buffers, piece by piece
//! of the buffers and deterministically (see the module's "Determinism").

use super::kinds::{Algorithm, CollectiveError, CollectiveKind};
use super::plan::{index_groups, plan, plan_broadcast, Phase, Plan, Step};
use crate::dtype::Element;
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// The result of running a collective on data: each rank's output and the steps taken.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome<T> {
    /// One buffer per rank.
    pub outputs: Vec<Vec<T>>,
    pub steps: Vec<Step>,
    /// The chunk grid the steps refer to ([`Plan::chunks`]).
    pub chunks: usize,
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

pub(super) fn execute<T: Element>(steps: &[Step], bufs: &mut [Vec<T>]) {
    execute_op(steps, bufs, ReduceOp::Sum);
}

/// Elements of the pieces [`execute_op`] cuts the buffers into (fixed, so that nothing depends
/// on the number of threads).
pub(super) const PIECE: usize = 1 << 14;

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
pub(super) fn execute_piece<T: Element>(
    steps: &[Step],
    bufs: &mut [&mut [T]],
    base: usize,
    op: ReduceOp,
) {
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
pub(super) fn execute_exchange<T: Element>(
    group: &[Step],
    bufs: &mut [&mut [T]],
    base: usize,
    op: ReduceOp,
) {
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
