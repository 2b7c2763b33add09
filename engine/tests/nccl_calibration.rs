//! The NCCL model against published nccl-tests all-reduce runs (docs/calibration.md, "NCCL
//! collectives"): Azure's AI-benchmarking-guide, `Azure_Results/ND_{A100_v4,H100_v5,H200_v5}_results.md`
//! (samuel-bohman/AI-benchmarking-guide; `Benchmarks/NVIDIA/NCCLBandwidth.py`:
//! `NCCL_ALGO=NVLS all_reduce_perf -b 8 -e 8G -f 2 -g 8 -n 40`, one process driving the 8 GPUs
//! of one node, eager, in-place busbw), each with the NCCL release its table states. The
//! ND H200 v5 table exists twice in that repository's history: NCCL 2.20.5 (commit 5e2c4e5) and
//! NCCL 2.26.2 (commit b408bf8, "Update ND_H200_v5_results.md to new cuda version").

// Helpers outside #[test] fns unwrap the fixed, known-good fixtures (clippy.toml allows it
// only inside tests).
#![allow(clippy::unwrap_used)]

use tplab_engine::capacity::hardware::Catalogue;
use tplab_engine::capacity::nccl::{self, Fabric, NcclAlgo, NcclVersion};
use tplab_engine::collectives::CollectiveKind;

const K: u64 = 1 << 10;
const M: u64 = 1 << 20;
const G: u64 = 1 << 30;

/// What a row is to the model: a point a constant was fitted on, or a check it was not.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    Fit,
    Check,
}
use Role::{Check, Fit};

/// One published table: its name, the GPU's intra-node link, the NCCL release it states, the
/// algorithm it forced (None: NCCL's own choice), and its (size, published busbw GB/s, role)
/// rows.
struct Table {
    name: &'static str,
    link: &'static str,
    nccl: NcclVersion,
    algo: Option<NcclAlgo>,
    rows: &'static [(u64, f64, Role)],
}

/// 1–8 KiB fit `NVLS_LATENCY_US`; 4 MiB–8 GiB fit `NVLS_START_EFFICIENCY` / `NVLS_EFFICIENCY`;
/// 16 KiB–2 MiB are checks of NCCL 2.18's strided NVLS partition with the channel rate fitted
/// on the 2.20.5 table.
const H100_2_18: &[(u64, f64, Role)] = &[
    (K, 0.07, Fit),
    (2 * K, 0.14, Fit),
    (4 * K, 0.27, Fit),
    (8 * K, 0.53, Fit),
    (16 * K, 0.95, Check),
    (32 * K, 1.71, Check),
    (64 * K, 2.72, Check),
    (128 * K, 5.40, Check),
    (256 * K, 10.86, Check),
    (512 * K, 21.35, Check),
    (M, 43.70, Check),
    (2 * M, 81.93, Check),
    (4 * M, 128.73, Fit),
    (8 * M, 172.13, Fit),
    (16 * M, 234.45, Fit),
    (32 * M, 295.53, Fit),
    (64 * M, 361.78, Fit),
    (128 * M, 400.61, Fit),
    (256 * M, 423.38, Fit),
    (512 * M, 438.46, Fit),
    (G, 466.35, Fit),
    (2 * G, 472.36, Fit),
    (4 * G, 475.54, Fit),
    (8 * G, 478.87, Fit),
];

/// 1–8 KiB fit the latency, 1 and 2 MiB `NVLS_CHANNEL_BYTES_PER_S`, 4 MiB–8 GiB the
/// efficiencies; 16–512 KiB are checks.
const H200_2_20: &[(u64, f64, Role)] = &[
    (K, 0.06, Fit),
    (2 * K, 0.12, Fit),
    (4 * K, 0.23, Fit),
    (8 * K, 0.47, Fit),
    (16 * K, 0.93, Check),
    (32 * K, 1.84, Check),
    (64 * K, 3.72, Check),
    (128 * K, 7.39, Check),
    (256 * K, 14.75, Check),
    (512 * K, 29.38, Check),
    (M, 52.96, Fit),
    (2 * M, 88.78, Fit),
    (4 * M, 138.44, Fit),
    (8 * M, 181.94, Fit),
    (16 * M, 240.41, Fit),
    (32 * M, 300.91, Fit),
    (64 * M, 368.11, Fit),
    (128 * M, 412.45, Fit),
    (256 * M, 432.24, Fit),
    (512 * M, 442.72, Fit),
    (G, 467.58, Fit),
    (2 * G, 472.57, Fit),
    (4 * G, 477.41, Fit),
    (8 * G, 479.98, Fit),
];

/// Held out: nothing was fitted on this rerun.
const H200_2_26: &[(u64, f64, Role)] = &[
    (K, 0.06, Check),
    (2 * K, 0.12, Check),
    (4 * K, 0.25, Check),
    (8 * K, 0.49, Check),
    (16 * K, 0.98, Check),
    (32 * K, 2.03, Check),
    (64 * K, 3.97, Check),
    (128 * K, 7.57, Check),
    (256 * K, 15.10, Check),
    (512 * K, 30.02, Check),
    (M, 57.15, Check),
    (2 * M, 88.73, Check),
    (4 * M, 137.77, Check),
    (8 * M, 179.84, Check),
    (16 * M, 240.37, Check),
    (32 * M, 298.12, Check),
    (64 * M, 367.56, Check),
    (128 * M, 413.01, Check),
    (256 * M, 434.72, Check),
    (512 * M, 445.62, Check),
    (G, 468.11, Check),
    (2 * G, 474.83, Check),
    (4 * G, 478.73, Check),
    (8 * G, 480.94, Check),
];

/// NVLink 3 (no NVLS on Ampere: ring); from 256 MiB (below, see docs/calibration.md).
const A100_2_18: &[(u64, f64, Role)] = &[
    (256 * M, 213.87, Check),
    (512 * M, 221.58, Check),
    (G, 228.10, Check),
    (2 * G, 230.22, Check),
    (4 * G, 230.48, Check),
    (8 * G, 231.58, Check),
];

const TABLES: [Table; 4] = [
    Table {
        name: "ND H100 v5, NCCL 2.18.5",
        link: "nvlink4",
        nccl: NcclVersion::new(2, 18),
        algo: Some(NcclAlgo::Nvls),
        rows: H100_2_18,
    },
    Table {
        name: "ND H200 v5, NCCL 2.20.5",
        link: "nvlink4",
        nccl: NcclVersion::new(2, 20),
        algo: Some(NcclAlgo::Nvls),
        rows: H200_2_20,
    },
    Table {
        name: "ND H200 v5, NCCL 2.26.2",
        link: "nvlink4",
        nccl: NcclVersion::new(2, 26),
        algo: Some(NcclAlgo::Nvls),
        rows: H200_2_26,
    },
    Table {
        name: "ND A100 v4, NCCL 2.18.5",
        link: "nvlink3",
        nccl: NcclVersion::new(2, 18),
        algo: None,
        rows: A100_2_18,
    },
];

/// The rows outside ±15%, each with why (docs/calibration.md): (table, size).
const AZURE_MISSES: [(&str, u64); 1] = [
    // NCCL 2.18's 64 KiB all-reduce fills only 4 of channel 0's 8 heads (64 KiB), yet takes
    // the 42 µs of a full 128 KiB channel; the model gives 34.7 µs.
    ("ND H100 v5, NCCL 2.18.5", 64 * K),
];

fn fabric(link: &str, n: usize, nccl: NcclVersion) -> Fabric {
    let cat = Catalogue::default();
    let l = cat.link(link).unwrap();
    let nvls = nccl::nvls_capable(&l);
    Fabric::new(n, n, l, cat.link("ib400").unwrap(), nvls)
        .unwrap()
        .with_nccl(nccl)
}

/// (within ±15%, rows, sum of |error|) over the Azure tables; prints the table.
fn azure_table() -> (usize, usize, f64, Vec<(&'static str, u64)>) {
    let (mut within, mut rows, mut sum) = (0, 0, 0.0);
    let mut misses = Vec::new();
    for t in &TABLES {
        let f = fabric(t.link, 8, t.nccl);
        let (mut tw, mut ts, mut tc, mut tcw) = (0, 0.0, 0, 0);
        for &(size, busbw, role) in t.rows {
            let c = nccl::predict(CollectiveKind::AllReduce, size, &f, t.algo, None).unwrap();
            let err = c.busbw / 1e9 / busbw - 1.0;
            let ok = err.abs() < 0.15;
            eprintln!(
                "{:<24} {:>11} B  published {busbw:>7.2}  predicted {:>7.2} GB/s  {:>8.1} µs ({} {})  {:+6.1}%  {}{}",
                t.name,
                size,
                c.busbw / 1e9,
                c.time_s * 1e6,
                c.algo.name(),
                c.proto.name(),
                100.0 * err,
                if role == Fit { "fit" } else { "check" },
                if ok { "" } else { "  MISS" }
            );
            rows += 1;
            sum += err.abs();
            ts += err.abs();
            if ok {
                within += 1;
                tw += 1;
            } else {
                misses.push((t.name, size));
            }
            if role == Check {
                tc += 1;
                tcw += usize::from(ok);
            }
        }
        eprintln!(
            "{:<24} {tw}/{} within ±15% (checks {tcw}/{tc}), mean |error| {:.1}%",
            t.name,
            t.rows.len(),
            100.0 * ts / t.rows.len() as f64
        );
    }
    (within, rows, sum, misses)
}

#[test]
fn nccl_tests_allreduce_busbw_within_15_percent() {
    let (within, rows, sum, misses) = azure_table();
    eprintln!(
        "Azure nccl-tests: {within}/{rows} within ±15%, mean |error| {:.1}%",
        100.0 * sum / rows as f64
    );
    // Every miss is a known, explained one.
    assert_eq!(misses, AZURE_MISSES.to_vec(), "rows outside ±15%");
    assert!(
        sum / (rows as f64) < 0.06,
        "mean |error| {}",
        sum / rows as f64
    );
}

/// The ND H100 v5 (NCCL 2.18.5) and ND H200 v5 (NCCL 2.20.5) tables differ by 36–38% from
/// 64 KiB to 512 KiB (~42 µs against ~31 µs) on the same NVLink 4 NVSwitch fabric (the GPUs
/// share the GH100 die, SM count and clocks; 512 KiB at either HBM rate is < 0.2 µs). With one
/// NCCL release for both, no prediction is within ±15% of both; with the release of each,
/// the model follows both.
#[test]
fn nccl_release_explains_the_h100_h200_difference() {
    for (size, h100, h200) in [
        (128 * K, 5.40, 7.39),
        (256 * K, 10.86, 14.75),
        (512 * K, 21.35, 29.38),
    ] {
        assert!(h200 / h100 > 1.15 / 0.85, "{size}: {h200} / {h100}");
        let at = |v: NcclVersion| {
            nccl::predict(
                CollectiveKind::AllReduce,
                size,
                &fabric("nvlink4", 8, v),
                Some(NcclAlgo::Nvls),
                None,
            )
            .unwrap()
            .busbw
                / 1e9
        };
        let (old, new) = (at(NcclVersion::new(2, 18)), at(NcclVersion::new(2, 20)));
        eprintln!(
            "{size:>8} B  H100/2.18 {h100:>6.2} predicted {old:>6.2} ({:+.1}%)  H200/2.20 {h200:>6.2} predicted {new:>6.2} ({:+.1}%)",
            100.0 * (old / h100 - 1.0),
            100.0 * (new / h200 - 1.0)
        );
        assert!((old / h100 - 1.0).abs() < 0.15 && (new / h200 - 1.0).abs() < 0.15);
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

/// vLLM PR #24532's 2 and 4 MB PyNccl points, 28 and 39 µs: not reproduced (the model gives
/// about 36 and 48 µs, as nccl-tests itself measures on 4×H100 in a CUDA graph, 34.6 and
/// 47.8 µs: [`GRAPH_4XH100`]; NCCL 2.29's own tuner, read in the log cited at
/// `nccl::HOPPER_LL_BUS_BW`, gives 32.5 and 42 µs: vLLM's times beat both).
const MID_NOT_REPRODUCED: [(u64, f64); 2] = [(2 * M, 28.0), (4 * M, 39.0)];

/// 4×H100, eager nccl-tests on a shared cloud host (waynehacking8/nccl-collectives-bench,
/// `results/quiet/all_reduce.txt`: nccl-tests 2.18.3 with NCCL 2.29.2, `nccl-library=22902`;
/// `nThread 1 nGpus 4`, one thread driving the 4 GPUs; `graph: 0`; out-of-place µs):
/// launch-bound, 23–28 µs from 8 B to 512 KiB. Not reproduced: the model's per-call overhead
/// (3.8 µs) is the graph-captured one (the same host with a CUDA graph: [`GRAPH_4XH100`]); these
/// are listed to show by how much an eager, launch-bound host is slower.
const EAGER_FLOOR: [(u64, f64); 4] = [
    (8, 23.30),
    (8 * K, 23.75),
    (32 * K, 25.05),
    (512 * K, 27.88),
];

/// The same 4×H100 host, the same nccl-tests and NCCL 2.29.2, the sweep captured in a CUDA graph
/// (`results/symmetric/all_reduce_reg0_graph1.txt`: `graph: 1`, no buffer registration;
/// out-of-place µs), NCCL's own algorithm and protocol: (size, published µs). Held out: nothing
/// was fitted on it.
const GRAPH_4XH100: [(u64, f64); 22] = [
    (8, 16.08),
    (16, 15.33),
    (32, 15.76),
    (64, 16.40),
    (128, 16.34),
    (256, 17.03),
    (512, 16.78),
    (K, 16.88),
    (2 * K, 15.25),
    (4 * K, 15.52),
    (8 * K, 15.46),
    (16 * K, 16.19),
    (32 * K, 16.77),
    (64 * K, 16.76),
    (128 * K, 17.26),
    (256 * K, 17.38),
    (512 * K, 20.12),
    (M, 24.00),
    (2 * M, 34.62),
    (4 * M, 47.78),
    (8 * M, 67.73),
    (16 * M, 105.81),
];

#[test]
fn graph_captured_4xh100_nccl_tests_sweep() {
    let f = node(4);
    let (mut within, mut sum) = (0, 0.0);
    let mut misses = Vec::new();
    for (size, us) in GRAPH_4XH100 {
        let c = nccl::predict(CollectiveKind::AllReduce, size, &f, None, None).unwrap();
        let got = c.time_s * 1e6;
        let err = got / us - 1.0;
        let ok = err.abs() < 0.15;
        within += usize::from(ok);
        sum += err.abs();
        if !ok {
            misses.push(size);
        }
        eprintln!(
            "4xH100 graph {size:>9} B  published {us:>6.2} µs  predicted {got:>6.2} µs ({} {})  {:+.1}%{}",
            c.algo.name(),
            c.proto.name(),
            100.0 * err,
            if ok { "" } else { "  MISS" }
        );
    }
    eprintln!(
        "4xH100 CUDA-graph nccl-tests: {within}/{} within ±15%, mean |error| {:.1}%",
        GRAPH_4XH100.len(),
        100.0 * sum / GRAPH_4XH100.len() as f64
    );
    // The only misses: three tiny sizes where the table itself scatters (15.3 to 17.0 µs).
    assert_eq!(misses, vec![256, 512, K], "rows outside ±15%");
    assert!(sum / (GRAPH_4XH100.len() as f64) < 0.11);
}

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

/// Issue 25's count over every published row above: the Azure tables, the small-message rows
/// (fit, not reproduced and eager alike) and the CUDA-graph sweep, within ±15%.
#[test]
fn overall_share_within_15_percent() {
    let (azure_within, azure_rows, _, _) = azure_table();
    let f4 = node(4);
    let time_us = |n: usize, size: u64| {
        let f = if n == 4 { f4.clone() } else { node(n) };
        nccl::predict(CollectiveKind::AllReduce, size, &f, None, None)
            .unwrap()
            .time_s
            * 1e6
    };
    let mut small: Vec<(usize, u64, f64)> = SMALL.iter().map(|&(n, s, us, _)| (n, s, us)).collect();
    small.extend(MID_NOT_REPRODUCED.iter().map(|&(s, us)| (4, s, us)));
    small.extend(EAGER_FLOOR.iter().map(|&(s, us)| (4, s, us)));
    small.extend(GRAPH_4XH100.iter().map(|&(s, us)| (4, s, us)));
    let small_within = small
        .iter()
        .filter(|&&(n, s, us)| (time_us(n, s) / us - 1.0).abs() < 0.15)
        .count();
    let within = azure_within + small_within;
    let rows = azure_rows + small.len();
    eprintln!(
        "overall: {within} of {rows} published rows within ±15% ({:.1}%): Azure {azure_within}/{azure_rows}, small-message {small_within}/{}",
        100.0 * within as f64 / rows as f64,
        small.len()
    );
    assert!(within * 10 >= rows * 9, "{within} of {rows}");
}
