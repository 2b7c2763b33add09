//! `tplab gpu bench`: for TP 1, 2, 4, 8 on one device, time per op and collective, error vs the
//! CPU reference, shard GEMM rate vs the unsharded GEMM, and the single-device all-reduce's
//! bandwidth vs a device-to-device copy.

use crate::error::GpuError;
use crate::summary::OpRow;
use serde::Serialize;
use tplab_engine::block::Op;
use tplab_engine::config::Config;

/// What to benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchOptions {
    /// The scenario (its `tp` is replaced by each of `tps`).
    pub config: Config,
    pub tps: Vec<usize>,
    /// Timed iterations of the full pass per TP.
    pub iters: usize,
    /// Repetitions of each isolated GEMM / all-reduce / copy.
    pub reps: usize,
    pub ordinal: usize,
}

/// Target ratios (issue 6).
pub const GEMM_TARGET: f64 = 0.70;
pub const ALL_REDUCE_TARGET: f64 = 0.70;

/// One linear layer's shard GEMM against the unsharded one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GemmRate {
    /// The linear layer; serialised as its trace name (`attn.qkv`, …) under `name`.
    #[serde(rename = "name")]
    pub op: Op,
    /// `[m, n, k]` of the shard and of the full product.
    pub shard: [usize; 3],
    pub full: [usize; 3],
    pub shard_tflops: f64,
    pub full_tflops: f64,
    /// `shard_tflops / full_tflops`.
    pub ratio: f64,
}

/// The single-device all-reduce against a copy of the same bytes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BandwidthCheck {
    pub ranks: usize,
    /// Bytes read plus written by the sum (`2·n·len·elem`), the same as the copy moves.
    pub bytes_moved: u64,
    pub sum_gbps: f64,
    pub copy_gbps: f64,
    pub ratio: f64,
}

/// One forward and backward step captured in a CUDA graph against the same step's plain
/// launches, mean ms of `reps` back-to-back steps each (one device).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraphTiming {
    pub reps: usize,
    pub plain_ms: f64,
    pub graph_ms: f64,
}

/// Results at one TP size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchRow {
    pub tp: usize,
    /// Median iteration (forward + backward), ms.
    pub iteration_ms: f64,
    pub ops: Vec<OpRow>,
    /// Verification summary and verdict.
    pub verification: String,
    pub verified: bool,
    pub gemms: Vec<GemmRate>,
    pub all_reduce: Option<BandwidthCheck>,
    /// The step as a CUDA graph against plain launches (`None` if the capture failed: the
    /// reason is in `graph_error`).
    pub graph: Option<GraphTiming>,
    pub graph_error: Option<String>,
}

/// The benchmark's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchReport {
    pub device: String,
    pub label: String,
    pub rows: Vec<BenchRow>,
    /// TP sizes skipped and why (invalid for the shape).
    pub skipped: Vec<String>,
}

/// FLOPs of a `[m, k]·[k, n]` product.
pub fn gemm_flops([m, n, k]: [usize; 3]) -> f64 {
    2.0 * m as f64 * n as f64 * k as f64
}

/// The forward linear layers' shard and full shapes at `tp` (Megatron's split).
pub fn linear_shapes(cfg: &Config, tp: usize) -> Vec<(Op, [usize; 3], [usize; 3])> {
    let (t, h, f) = (cfg.tokens(), cfg.hidden, cfg.ffn);
    vec![
        (Op::Qkv, [t, 3 * h / tp, h], [t, 3 * h, h]),
        (Op::AttnOut, [t, h, h / tp], [t, h, h]),
        (Op::Fc1, [t, f / tp, h], [t, f, h]),
        (Op::Fc2, [t, h, f / tp], [t, h, f]),
    ]
}

/// Runs the benchmark; `log` receives progress lines.
pub fn bench(opts: &BenchOptions, log: &mut dyn FnMut(&str)) -> Result<BenchReport, GpuError> {
    #[cfg(feature = "cuda")]
    {
        crate::cuda::bench::bench(opts, log)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (opts, log);
        Err(GpuError::NotCompiled)
    }
}

impl BenchReport {
    /// The printed table.
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "tplab gpu bench on {} — {}", self.device, self.label);
        let _ = writeln!(
            s,
            "{:>3} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  verification",
            "TP", "iter ms", "qkv gemm", "out gemm", "fc1 gemm", "fc2 gemm", "allreduce"
        );
        for r in &self.rows {
            let g = |op: Op| {
                r.gemms
                    .iter()
                    .find(|g| g.op == op)
                    .map(|g| format!("{:.0}%", 100.0 * g.ratio))
                    .unwrap_or_else(|| "-".into())
            };
            let ar = r
                .all_reduce
                .as_ref()
                .map(|a| format!("{:.0}%", 100.0 * a.ratio))
                .unwrap_or_else(|| "n/a".into());
            let _ = writeln!(
                s,
                "{:>3} {:>10.3} {:>10} {:>10} {:>10} {:>10} {:>10}  {}",
                r.tp,
                r.iteration_ms,
                g(Op::Qkv),
                g(Op::AttnOut),
                g(Op::Fc1),
                g(Op::Fc2),
                ar,
                r.verification
            );
        }
        let _ = writeln!(
            s,
            "gemm columns: shard GEMM rate / unsharded GEMM rate (target ≥ {:.0}%); allreduce: \
             single-device sum bandwidth / device-to-device copy (target ≥ {:.0}%)",
            100.0 * GEMM_TARGET,
            100.0 * ALL_REDUCE_TARGET
        );
        for r in &self.rows {
            let _ = writeln!(
                s,
                "\nTP={} per op (ms, summed over layers, mean over ranks):",
                r.tp
            );
            for o in &r.ops {
                if let Some(m) = o.measured_ms {
                    let _ = writeln!(s, "  {:<9} {:<24} {:>10.4}", o.pass.name(), o.op, m);
                }
            }
            for g in &r.gemms {
                let _ = writeln!(
                    s,
                    "  gemm {:<8} shard {:?}: {:.1} TFLOP/s, full {:?}: {:.1} TFLOP/s, ratio {:.2}",
                    g.op, g.shard, g.shard_tflops, g.full, g.full_tflops, g.ratio
                );
            }
            if let Some(a) = &r.all_reduce {
                let _ = writeln!(
                    s,
                    "  all-reduce of {} ranks, {} moved: sum {:.0} GB/s, copy {:.0} GB/s, ratio {:.2}",
                    a.ranks,
                    tplab_engine::config::human_bytes(a.bytes_moved),
                    a.sum_gbps,
                    a.copy_gbps,
                    a.ratio
                );
            }
            match (&r.graph, &r.graph_error) {
                (Some(g), _) => {
                    let _ = writeln!(
                        s,
                        "  step as a CUDA graph: {:.3} ms, plain launches {:.3} ms ({:.2}x), mean of {}",
                        g.graph_ms,
                        g.plain_ms,
                        g.plain_ms / g.graph_ms.max(1e-12),
                        g.reps
                    );
                }
                (None, Some(e)) => {
                    let _ = writeln!(s, "  step as a CUDA graph: not measured ({e})");
                }
                (None, None) => {}
            }
        }
        for sk in &self.skipped {
            let _ = writeln!(s, "skipped: {sk}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_shapes_split_flops_evenly() {
        let cfg = tplab_engine::config::Preset::Gpt2Small.config();
        for tp in [1, 2, 4, 8] {
            for (name, shard, full) in linear_shapes(&cfg, tp) {
                let ratio = gemm_flops(full) / gemm_flops(shard);
                assert!((ratio - tp as f64).abs() < 1e-9, "{name} at tp={tp}");
            }
        }
    }
}
