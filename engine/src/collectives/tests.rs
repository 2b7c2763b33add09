//! Tests of planning, the closed-form summary and execution.

use super::exec::{execute, execute_exchange, execute_piece, PIECE};
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
        let mut whole: Vec<&mut [f64]> = reference.iter_mut().map(|b| b.as_mut_slice()).collect();
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
