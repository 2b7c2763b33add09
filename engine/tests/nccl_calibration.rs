//! The NCCL model against published nccl-tests all-reduce runs (docs/calibration.md, "NCCL
//! collectives"): Azure's AI-benchmarking-guide, `Azure_Results/ND_{A100_v4,H100_v5,H200_v5}_results.md`
//! (samuel-bohman/AI-benchmarking-guide): 8 GPUs in one node, in-place all-reduce bus bandwidth,
//! NCCL_ALGO=NVLS on the Hopper nodes. Every point within ±15% but the 64–512 KiB ones, where the
//! H100 and H200 tables disagree by more than a ±15% window can span (there: within ±17% of each).

// Helpers outside #[test] fns unwrap the fixed, known-good fixtures (clippy.toml allows it
// only inside tests).
#![allow(clippy::unwrap_used)]

use tplab_engine::capacity::nccl::{self, Fabric, NcclAlgo};
use tplab_engine::hardware::Catalogue;
use tplab_engine::trace::CollectiveKind;

/// (GPU's intra-node link, forced algorithm, size in bytes, published busbw GB/s).
type Point = (&'static str, Option<NcclAlgo>, u64, f64);

const K: u64 = 1 << 10;
const M: u64 = 1 << 20;
const G: u64 = 1 << 30;

/// Every published point but the eight in [`DISAGREE`]: H100 and H200 NVLS from 1 KiB to 8 GiB,
/// the A100 ring from 256 MiB.
const POINTS: [Point; 46] = [
    // ND H100 v5 (NVLink 4, NVLS, NCCL 2.18.5)
    ("nvlink4", Some(NcclAlgo::Nvls), K, 0.07),
    ("nvlink4", Some(NcclAlgo::Nvls), 2 * K, 0.14),
    ("nvlink4", Some(NcclAlgo::Nvls), 4 * K, 0.27),
    ("nvlink4", Some(NcclAlgo::Nvls), 8 * K, 0.53),
    ("nvlink4", Some(NcclAlgo::Nvls), 16 * K, 0.95),
    ("nvlink4", Some(NcclAlgo::Nvls), 32 * K, 1.71),
    ("nvlink4", Some(NcclAlgo::Nvls), M, 43.70),
    ("nvlink4", Some(NcclAlgo::Nvls), 2 * M, 81.93),
    ("nvlink4", Some(NcclAlgo::Nvls), 4 * M, 128.73),
    ("nvlink4", Some(NcclAlgo::Nvls), 8 * M, 172.13),
    ("nvlink4", Some(NcclAlgo::Nvls), 16 * M, 234.45),
    ("nvlink4", Some(NcclAlgo::Nvls), 32 * M, 295.53),
    ("nvlink4", Some(NcclAlgo::Nvls), 64 * M, 361.78),
    ("nvlink4", Some(NcclAlgo::Nvls), 128 * M, 400.61),
    ("nvlink4", Some(NcclAlgo::Nvls), 256 * M, 423.38),
    ("nvlink4", Some(NcclAlgo::Nvls), 512 * M, 438.46),
    ("nvlink4", Some(NcclAlgo::Nvls), G, 466.35),
    ("nvlink4", Some(NcclAlgo::Nvls), 2 * G, 472.36),
    ("nvlink4", Some(NcclAlgo::Nvls), 4 * G, 475.54),
    ("nvlink4", Some(NcclAlgo::Nvls), 8 * G, 478.87),
    // ND H200 v5 (NVLink 4, NVLS, NCCL 2.20.5)
    ("nvlink4", Some(NcclAlgo::Nvls), K, 0.06),
    ("nvlink4", Some(NcclAlgo::Nvls), 2 * K, 0.12),
    ("nvlink4", Some(NcclAlgo::Nvls), 4 * K, 0.23),
    ("nvlink4", Some(NcclAlgo::Nvls), 8 * K, 0.47),
    ("nvlink4", Some(NcclAlgo::Nvls), 16 * K, 0.93),
    ("nvlink4", Some(NcclAlgo::Nvls), 32 * K, 1.84),
    ("nvlink4", Some(NcclAlgo::Nvls), M, 52.96),
    ("nvlink4", Some(NcclAlgo::Nvls), 2 * M, 88.78),
    ("nvlink4", Some(NcclAlgo::Nvls), 4 * M, 138.44),
    ("nvlink4", Some(NcclAlgo::Nvls), 8 * M, 181.94),
    ("nvlink4", Some(NcclAlgo::Nvls), 16 * M, 240.41),
    ("nvlink4", Some(NcclAlgo::Nvls), 32 * M, 300.91),
    ("nvlink4", Some(NcclAlgo::Nvls), 64 * M, 368.11),
    ("nvlink4", Some(NcclAlgo::Nvls), 128 * M, 412.45),
    ("nvlink4", Some(NcclAlgo::Nvls), 256 * M, 432.24),
    ("nvlink4", Some(NcclAlgo::Nvls), 512 * M, 442.72),
    ("nvlink4", Some(NcclAlgo::Nvls), G, 467.58),
    ("nvlink4", Some(NcclAlgo::Nvls), 2 * G, 472.57),
    ("nvlink4", Some(NcclAlgo::Nvls), 4 * G, 477.41),
    ("nvlink4", Some(NcclAlgo::Nvls), 8 * G, 479.98),
    // ND A100 v4 (NVLink 3; no NVLS on Ampere: NCCL's tuner picks ring)
    ("nvlink3", None, 256 * M, 213.87),
    ("nvlink3", None, 512 * M, 221.58),
    ("nvlink3", None, G, 228.10),
    ("nvlink3", None, 2 * G, 230.22),
    ("nvlink3", None, 4 * G, 230.48),
    ("nvlink3", None, 8 * G, 231.58),
];

fn fabric(link: &str) -> Fabric {
    let cat = Catalogue::default();
    let l = cat.link(link).unwrap();
    let nvls = nccl::nvls_capable(&l);
    Fabric::new(8, 8, l, cat.link("ib400").unwrap(), nvls).unwrap()
}

#[test]
fn nccl_tests_allreduce_busbw_within_15_percent() {
    let mut worst = 0.0f64;
    for (link, algo, size, busbw) in POINTS {
        let c = nccl::predict(CollectiveKind::AllReduce, size, &fabric(link), algo, None).unwrap();
        let err = c.busbw / 1e9 / busbw - 1.0;
        eprintln!(
            "{link} {:>6} {:>12} B  published {busbw:>8.2}  predicted {:>8.2} GB/s ({} {})  {:+.1}%",
            algo.map_or("auto", |a| a.name()),
            size,
            c.busbw / 1e9,
            c.algo.name(),
            c.proto.name(),
            100.0 * err
        );
        assert!(
            err.abs() < 0.15,
            "{link} {size} B: {} vs {busbw}",
            c.busbw / 1e9
        );
        worst = worst.max(err.abs());
    }
    eprintln!("worst {:.1}%", 100.0 * worst);
}

/// (size, H100 busbw, H200 busbw) from 64 KiB to 512 KiB, where the two published tables
/// disagree by 36–38% (both NVLink 4 with NVLS; NCCL 2.18.5 vs 2.20.5): a ±15% window spans
/// at most 1.15/0.85 = 1.353×, so no single prediction is within ±15% of both. The best any
/// prediction can do is the middle, ±15.1–15.8%.
const DISAGREE: [(u64, f64, f64); 4] = [
    (64 * K, 2.72, 3.72),
    (128 * K, 5.40, 7.39),
    (256 * K, 10.86, 14.75),
    (512 * K, 21.35, 29.38),
];

/// The window the data allow, plus the model's constant floor over the four sizes (the
/// published H100 times rise from 42.2 to 43.0 µs, H200 from 30.8 to 31.2 µs, the model's stay
/// at 36.9 µs): ±17%.
const DISAGREE_TOLERANCE: f64 = 0.17;

#[test]
fn h100_h200_disagreement_is_beyond_15_percent_and_the_model_sits_between() {
    for (size, h100, h200) in DISAGREE {
        // The data: H200 is faster than one ±15% window around any value can cover.
        assert!(h200 / h100 > 1.15 / 0.85, "{size}: {h200} / {h100}");
        let c = nccl::predict(
            CollectiveKind::AllReduce,
            size,
            &fabric("nvlink4"),
            Some(NcclAlgo::Nvls),
            None,
        )
        .unwrap();
        let bw = c.busbw / 1e9;
        eprintln!(
            "{size:>8} B  H100 {h100:>6.2}  H200 {h200:>6.2}  predicted {bw:>6.2}  {:+.1}% / {:+.1}%",
            100.0 * (bw / h100 - 1.0),
            100.0 * (bw / h200 - 1.0)
        );
        assert!(
            h100 < bw && bw < h200,
            "{size}: {bw} not between {h100} and {h200}"
        );
        for published in [h100, h200] {
            assert!(
                (bw / published - 1.0).abs() < DISAGREE_TOLERANCE,
                "{size}: {bw} vs {published}"
            );
        }
    }
}

/// Small all-reduces with NCCL's own choice of algorithm and protocol (no NCCL_ALGO), the sizes
/// a decode step all-reduces: (GPUs, size in bytes, published µs, source).
const SMALL: [(usize, u64, f64, &str); 3] = [
    // vllm-project/vllm PR #24532, "TP = 4" table, H100, vLLM's PyNccl inside a CUDA graph,
    // bf16 tensors of (32..256, 8192).
    (4, 512 * K, 21.0, "vLLM PR #24532 pynccl"),
    (4, M, 23.0, "vLLM PR #24532 pynccl"),
    // 8×H200 nccl-tests, 32 KiB: the figure tplab issue 25 quotes (~18 µs).
    (8, 32 * K, 18.0, "issue 25 (8xH200 nccl-tests)"),
];

/// vLLM PR #24532's 2 and 4 MB PyNccl points, 28 and 39 µs: not reproduced (the model's NCCL
/// gives about 36 and 47 µs; NCCL 2.29's own tuner, read in the log cited at
/// `nccl::HOPPER_LL_BUS_BW`, gives 32.5 and 42 µs: the measured times beat NCCL's own model
/// there).
const MID_NOT_REPRODUCED: [(u64, f64); 2] = [(2 * M, 28.0), (4 * M, 39.0)];

/// 4×H100, eager nccl-tests on a shared cloud host (waynehacking8/nccl-collectives-bench,
/// `results/quiet/all_reduce.txt`, NCCL 2.18.3, out-of-place µs): launch-bound, 23–28 µs from
/// 8 B to 512 KiB. Not reproduced: the model's per-call overhead (7 µs) is the graph-captured
/// one; these are listed to show by how much an eager, launch-bound host is slower.
const EAGER_FLOOR: [(u64, f64); 4] = [
    (8, 23.30),
    (8 * K, 23.75),
    (32 * K, 25.05),
    (512 * K, 27.88),
];

fn node(n: usize) -> Fabric {
    let cat = Catalogue::default();
    let l = cat.link("nvlink4").unwrap();
    Fabric::new(n, n, l, cat.link("ib400").unwrap(), true).unwrap()
}

#[test]
fn small_all_reduces_within_15_percent_of_published_times() {
    for (n, size, us, source) in SMALL {
        let c = nccl::predict(CollectiveKind::AllReduce, size, &node(n), None, None).unwrap();
        let got = c.time_s * 1e6;
        let err = got / us - 1.0;
        eprintln!(
            "{n} GPUs {size:>8} B  published {us:>5.1} µs  predicted {got:>5.1} µs ({} {})  {:+.1}%  [{source}]",
            c.algo.name(),
            c.proto.name(),
            100.0 * err
        );
        assert!(err.abs() < 0.15, "{n} GPUs {size} B: {got} vs {us}");
    }
    for (size, us) in MID_NOT_REPRODUCED {
        let c = nccl::predict(CollectiveKind::AllReduce, size, &node(4), None, None).unwrap();
        let got = c.time_s * 1e6;
        eprintln!(
            "4 GPUs {size:>8} B  published {us:>5.1} µs  predicted {got:>5.1} µs  {:+.1}% (not reproduced)",
            100.0 * (got / us - 1.0)
        );
        assert!(got > us && got < 1.35 * us, "{size}: {got} vs {us}");
    }
    for (size, us) in EAGER_FLOOR {
        let c = nccl::predict(CollectiveKind::AllReduce, size, &node(4), None, None).unwrap();
        let got = c.time_s * 1e6;
        eprintln!(
            "4 GPUs {size:>8} B  eager nccl-tests {us:>5.1} µs  predicted {got:>5.1} µs  {:+.1}% (not reproduced: launch-bound host)",
            100.0 * (got / us - 1.0)
        );
        // The model stays below the launch-bound floor, and above half of it.
        assert!(got < us && got > 0.45 * us, "{size}: {got} vs {us}");
    }
}
