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

mod exec;
mod kinds;
mod plan;
mod summary;
#[cfg(test)]
mod tests;

pub use exec::*;
pub use kinds::*;
pub use plan::*;
pub use summary::*;
