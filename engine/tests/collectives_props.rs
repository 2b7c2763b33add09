//! Property tests of the collectives: every algorithm's result equals a naive sum within a
//! tolerance argued from summation order, all ranks agree, the schedules have the documented step
//! counts and byte totals, and the symbolic replay ends with every chunk holding every rank.
//!
//! 6 properties × 64 cases = 384 proptest cases per run, plus an exhaustive sweep over every
//! algorithm and group sizes 1..=16.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tplab_engine::collectives::{
    all_gather, all_reduce, broadcast, chunk_range, plan, reduce_scatter, Algorithm, Plan,
};
use tplab_engine::dtype::Element;
use tplab_engine::{collectives::CollectiveKind, trace::all_reduce_steps};

const CASES: u32 = 64;

/// Seeded data with magnitudes spread over six decades and both signs, so summation order
/// matters and a wrong or missing term is far outside the tolerance.
fn data<T: Element>(n: usize, len: usize, seed: u64) -> Vec<Vec<T>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            (0..len)
                .map(|_| {
                    let mantissa: f64 = rng.random_range(-1.0..1.0);
                    let decade: i32 = rng.random_range(-3..3);
                    T::from_f64(mantissa * 10f64.powi(decade))
                })
                .collect()
        })
        .collect()
}

/// Sum and sum of magnitudes of element `i` over ranks, in f64 (the inputs convert exactly).
fn naive<T: Element>(inputs: &[Vec<T>], i: usize) -> (f64, f64) {
    inputs.iter().fold((0.0, 0.0), |(s, a), b| {
        (s + b[i].to_f64(), a + b[i].to_f64().abs())
    })
}

/// Tolerance for an n-term sum in `T` against the naive f64 sum. Recursive summation of n terms
/// in any order is off by at most γ_{n-1}·Σ|x| ≈ (n-1)·(ε/2)·Σ|x| (Higham, Accuracy and
/// Stability, §4.2). For f64 both sides carry such an error, so they differ by at most
/// (n-1)·ε·Σ|x|; for f32 the f64 reference is ~2^29 times more precise and the f32 result's own
/// bound is half of (n-1)·ε₃₂·Σ|x|, leaving the other half for the second-order terms.
/// One rank: an exact copy, tolerance 0.
fn tolerance<T: Element>(n: usize, abs_sum: f64) -> f64 {
    (n - 1) as f64 * T::DTYPE.epsilon() * abs_sum
}

/// Checks every output of an all-reduce against the naive sum and all ranks against rank 0.
fn check_all_reduce<T: Element>(
    algorithm: Algorithm,
    n: usize,
    len: usize,
    seed: u64,
) -> Result<(), TestCaseError> {
    let x = data::<T>(n, len, seed);
    let out = all_reduce(&x, algorithm).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(out.outputs.len(), n);
    for (r, o) in out.outputs.iter().enumerate() {
        prop_assert_eq!(o.len(), len);
        // Every algorithm sums each element once and copies it, so ranks agree bit for bit.
        prop_assert!(
            o == &out.outputs[0],
            "{} n={} rank {} differs",
            algorithm,
            n,
            r
        );
    }
    for i in 0..len {
        let (sum, abs_sum) = naive(&x, i);
        let got = out.outputs[0][i].to_f64();
        let tol = tolerance::<T>(n, abs_sum);
        prop_assert!(
            (got - sum).abs() <= tol,
            "{} n={} len={} elem {}: got {} want {} tol {}",
            algorithm,
            n,
            len,
            i,
            got,
            sum,
            tol
        );
    }
    Ok(())
}

/// Step counts and per-rank bytes against the closed forms.
fn check_formulas(p: &Plan) -> Result<(), TestCaseError> {
    let (n, len, eb) = (p.n, p.elems as u64, p.elem_bytes as u64);
    let sent = p.bytes_sent_per_rank();
    let log2_ceil = (n as f64).log2().ceil() as usize;
    let log2_floor = (n as f64).log2().floor() as usize;
    prop_assert_eq!(p.step_count(), all_reduce_steps(p.algorithm, n));
    if n == 1 {
        prop_assert!(p.steps.is_empty());
        return Ok(());
    }
    match p.algorithm {
        Algorithm::Ring => {
            prop_assert_eq!(p.step_count(), 2 * (n - 1));
            for (r, &s) in sent.iter().enumerate() {
                // Reduce-scatter sends every chunk but r, all-gather every chunk but r+1.
                let own =
                    chunk_range(r, n, p.elems).len() + chunk_range((r + 1) % n, n, p.elems).len();
                prop_assert_eq!(s, (2 * len - own as u64) * eb);
                prop_assert!(s <= 2 * (n as u64 - 1) * len.div_ceil(n as u64) * eb);
                if len / n as u64 * n as u64 == len {
                    // Bandwidth-optimal: 2(n-1)/n of the buffer.
                    prop_assert_eq!(s, 2 * (n as u64 - 1) * len / n as u64 * eb);
                }
            }
        }
        Algorithm::RecursiveHalvingDoubling => {
            let core = 1usize << log2_floor;
            let expected_steps = if n == core {
                2 * log2_floor
            } else {
                2 * log2_floor + 2
            };
            prop_assert_eq!(p.step_count(), expected_steps);
            if len / core as u64 * core as u64 == len {
                let core_bytes = 2 * (core as u64 - 1) * len / core as u64 * eb;
                for (r, &s) in sent.iter().enumerate() {
                    let want = if r >= core {
                        len * eb // an extra rank sends its buffer once, to its partner
                    } else if r + core < n {
                        core_bytes + len * eb // a partner also sends the result back
                    } else {
                        core_bytes
                    };
                    prop_assert_eq!(s, want, "rank {}", r);
                }
            }
        }
        Algorithm::Tree => {
            prop_assert_eq!(p.step_count(), 2 * log2_ceil);
            // n-1 whole-buffer messages up, n-1 down; the root sends ceil(log2 n) of them.
            prop_assert_eq!(p.total_bytes(), 2 * (n as u64 - 1) * len * eb);
            prop_assert_eq!(
                sent.iter().copied().max(),
                Some(log2_ceil as u64 * len * eb)
            );
            prop_assert_eq!(sent[0], log2_ceil as u64 * len * eb);
        }
        Algorithm::Direct => {
            prop_assert_eq!(p.step_count(), 1);
            for &s in &sent {
                prop_assert_eq!(s, (n as u64 - 1) * len * eb);
            }
        }
    }
    prop_assert_eq!(
        p.bytes_received_per_rank().iter().sum::<u64>(),
        p.total_bytes()
    );
    Ok(())
}

fn algorithm() -> impl Strategy<Value = Algorithm> {
    prop::sample::select(Algorithm::ALL.to_vec())
}

/// Group sizes: mostly the TP sizes the app shows (1..=8), some up to 16.
fn group() -> impl Strategy<Value = usize> {
    prop_oneof![3 => 1usize..=8, 1 => 9usize..=16]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn all_reduce_f64_matches_naive_sum(a in algorithm(), n in group(), len in 0usize..200, seed in any::<u64>()) {
        check_all_reduce::<f64>(a, n, len, seed)?;
    }

    #[test]
    fn all_reduce_f32_matches_naive_sum(a in algorithm(), n in group(), len in 0usize..200, seed in any::<u64>()) {
        check_all_reduce::<f32>(a, n, len, seed)?;
    }

    #[test]
    fn schedules_match_step_and_byte_formulas(a in algorithm(), n in group(), len in 0usize..200, f64_elems in any::<bool>()) {
        let eb = if f64_elems { 8 } else { 4 };
        let p = plan(CollectiveKind::AllReduce, a, n, len, eb).map_err(|e| TestCaseError::fail(e.to_string()))?;
        check_formulas(&p)?;
        // Steps are stored in index order and indices are contiguous from 0.
        for w in p.steps.windows(2) {
            prop_assert!(w[1].index == w[0].index || w[1].index == w[0].index + 1);
        }
        for s in &p.steps {
            prop_assert_eq!(s.bytes, (s.elems.len() * eb) as u64);
            prop_assert!(s.src != s.dst && s.src < n && s.dst < n);
        }
    }

    #[test]
    fn contributions_grow_to_every_rank(a in algorithm(), n in group(), len in 0usize..200) {
        let p = plan(CollectiveKind::AllReduce, a, n, len, 4).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let states = p.contributions().map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(states.len(), p.step_count() + 1);
        let full = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
        for w in states.windows(2) {
            for (before, after) in w[0].iter().flatten().zip(w[1].iter().flatten()) {
                // A chunk never loses a contribution (overwrites bring a superset).
                prop_assert_eq!(before & after, *before);
            }
        }
        let last = &states[states.len() - 1];
        prop_assert!(last.iter().flatten().all(|&m| m == full), "{} n={}: {:?}", a, n, last);
    }

    #[test]
    fn reduce_scatter_and_all_gather_match_naive(n in group(), len in 0usize..200, seed in any::<u64>(), direct in any::<bool>()) {
        let a = if direct { Algorithm::Direct } else { Algorithm::Ring };
        let x = data::<f64>(n, len, seed);
        let rs = reduce_scatter(&x, a).map_err(|e| TestCaseError::fail(e.to_string()))?;
        for (r, o) in rs.outputs.iter().enumerate() {
            let range = chunk_range(r, n, len);
            prop_assert_eq!(o.len(), range.len());
            for (k, i) in range.enumerate() {
                let (sum, abs_sum) = naive(&x, i);
                prop_assert!((o[k] - sum).abs() <= tolerance::<f64>(n, abs_sum));
            }
        }
        let rs_masks = rs_plan_masks(n, len, a)?;
        for (r, row) in rs_masks.iter().enumerate() {
            prop_assert_eq!(row[r], if n == 64 { u64::MAX } else { (1u64 << n) - 1 });
        }
        // All-gather moves data without arithmetic: exact concatenation on every rank.
        let pieces = data::<f32>(n, len / n.max(1), seed ^ 1);
        let g = all_gather(&pieces, a).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let want = pieces.concat();
        prop_assert!(g.outputs.iter().all(|o| o == &want));
        let gp = plan(CollectiveKind::AllGather, a, n, want.len(), 4).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let masks = gp.contributions().map_err(|e| TestCaseError::fail(e.to_string()))?;
        for row in &masks[masks.len() - 1] {
            for (c, &m) in row.iter().enumerate() {
                prop_assert_eq!(m, 1u64 << c);
            }
        }
        if a == Algorithm::Ring {
            prop_assert_eq!(gp.step_count(), n - 1);
        }
    }

    #[test]
    fn broadcast_copies_the_root(n in group(), len in 0usize..200, seed in any::<u64>(), root_pick in any::<usize>(), a in prop::sample::select(vec![Algorithm::Tree, Algorithm::Ring, Algorithm::Direct])) {
        let root = root_pick % n;
        let x = data::<f64>(n, len, seed);
        let b = broadcast(&x, root, a).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(b.outputs.iter().all(|o| o == &x[root]));
        let expected_steps = match a {
            Algorithm::Tree => (n as f64).log2().ceil() as usize,
            Algorithm::Ring => n - 1,
            _ => usize::from(n > 1),
        };
        prop_assert_eq!(tplab_engine::collectives::step_count(&b.steps), expected_steps);
        // Every non-root rank receives the buffer exactly once.
        let received = tplab_engine::collectives::bytes_received_per_rank(&b.steps, n);
        for (r, &got) in received.iter().enumerate() {
            prop_assert_eq!(got, if r == root { 0 } else { (len * 8) as u64 });
        }
    }
}

/// Final contribution masks of a reduce-scatter plan.
fn rs_plan_masks(n: usize, len: usize, a: Algorithm) -> Result<Vec<Vec<u64>>, TestCaseError> {
    let p = plan(CollectiveKind::ReduceScatter, a, n, len, 8)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut states = p
        .contributions()
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    states
        .pop()
        .ok_or_else(|| TestCaseError::fail("no states".to_string()))
}

/// Every algorithm and every group size 1..=16, on lengths around the chunk boundaries.
#[test]
fn exhaustive_small_groups() {
    for a in Algorithm::ALL {
        for n in 1..=16usize {
            for len in [0, 1, n - 1, n, n + 1, 5 * n + 3] {
                for seed in 0..2 {
                    check_all_reduce::<f64>(a, n, len, seed).unwrap();
                    check_all_reduce::<f32>(a, n, len, seed).unwrap();
                }
                let p = plan(CollectiveKind::AllReduce, a, n, len, 4).unwrap();
                check_formulas(&p).unwrap();
            }
        }
    }
}

/// Recursive halving/doubling reduce-scatter and all-gather on power-of-two groups.
#[test]
fn halving_and_doubling_alone() {
    for n in [1usize, 2, 4, 8, 16] {
        let x = data::<f64>(n, 3 * n + 1, 7);
        let rs = reduce_scatter(&x, Algorithm::RecursiveHalvingDoubling).unwrap();
        for (r, o) in rs.outputs.iter().enumerate() {
            for (k, i) in chunk_range(r, n, x[0].len()).enumerate() {
                let (sum, abs_sum) = naive(&x, i);
                assert!((o[k] - sum).abs() <= tolerance::<f64>(n, abs_sum));
            }
        }
        let g = all_gather(&x, Algorithm::RecursiveHalvingDoubling).unwrap();
        assert!(g.outputs.iter().all(|o| o == &x.concat()));
        assert_eq!(
            tplab_engine::collectives::step_count(&g.steps),
            n.trailing_zeros() as usize
        );
    }
}
