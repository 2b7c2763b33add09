//! Tables from a measured trace: per op, measured time beside the trace's own (proportional or
//! modeled) time.

use serde::Serialize;
use tplab_engine::block::Op;
use tplab_engine::{block::op::Pass, trace::Trace};

/// Every compute op the GPU executor implements.
pub const GPU_COMPUTE_OPS: [Op; 20] = [
    Op::Ln1,
    Op::Qkv,
    Op::AttnCore,
    Op::AttnOut,
    Op::AttnBiasResidual,
    Op::Ln2,
    Op::Fc1,
    Op::Gelu,
    Op::Fc2,
    Op::MlpBiasResidual,
    Op::MlpBiasResidualBwd,
    Op::Fc2Bwd,
    Op::GeluBwd,
    Op::Fc1Bwd,
    Op::Ln2Bwd,
    Op::AttnBiasResidualBwd,
    Op::AttnOutBwd,
    Op::AttnCoreBwd,
    Op::QkvBwd,
    Op::Ln1Bwd,
];

/// The all-reduces the GPU executor performs (the rest are identities): `g` forward and `f`
/// backward, the K/V copies' gradients with replicated KV heads, and the LayerNorm and bias
/// gradients with sequence parallelism.
pub const GPU_ALL_REDUCES: [Op; 6] = [
    Op::AttnG,
    Op::MlpG,
    Op::MlpFBwd,
    Op::AttnFBwd,
    Op::KvGrads,
    Op::SpGrads,
];

/// The all-gathers and reduce-scatters of sequence parallelism on the GPU.
pub const GPU_GATHER_SCATTER: [Op; 10] = [
    Op::AttnF,
    Op::AttnG,
    Op::MlpF,
    Op::MlpG,
    Op::MlpGBwd,
    Op::MlpFBwdGather,
    Op::MlpFBwd,
    Op::AttnGBwd,
    Op::AttnFBwdGather,
    Op::AttnFBwd,
];

/// One op of the per-op table, summed over layers (compute: mean over ranks).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpRow {
    pub pass: Pass,
    /// The op; serialised as its trace name under `name`.
    #[serde(rename = "name")]
    pub op: Op,
    pub collective: bool,
    /// Measured on the GPU, ms (None if the trace has no measurement).
    pub measured_ms: Option<f64>,
    /// The trace's own time (proportional or modeled), ms.
    pub predicted_ms: f64,
    /// Measured share of the total over predicted share of the total (1.0: the model gets
    /// this op's weight right).
    pub share_ratio: Option<f64>,
}

/// Per-op rows in first-appearance order, with shares of the totals.
pub fn op_table(trace: &Trace) -> Vec<OpRow> {
    let mut rows: Vec<OpRow> = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    for e in &trace.events {
        let idx = match rows.iter().position(|r| r.op == e.op) {
            Some(i) => i,
            None => {
                rows.push(OpRow {
                    pass: e.pass,
                    op: e.op,
                    collective: e.is_collective(),
                    measured_ms: Some(0.0),
                    predicted_ms: 0.0,
                    share_ratio: None,
                });
                counts.push(0);
                rows.len() - 1
            }
        };
        // Compute events repeat per rank: average over ranks by dividing by tp at the end.
        let row = &mut rows[idx];
        row.predicted_ms += e.timing.duration_s * 1e3;
        row.measured_ms = match (row.measured_ms, e.measured) {
            (Some(m), Some(t)) => Some(m + t.duration_s * 1e3),
            _ => None,
        };
        counts[idx] += 1;
    }
    let tp = trace.config.tp.max(1) as f64;
    for r in rows.iter_mut().filter(|r| !r.collective) {
        r.predicted_ms /= tp;
        r.measured_ms = r.measured_ms.map(|m| m / tp);
    }
    let total_pred: f64 = rows.iter().map(|r| r.predicted_ms).sum();
    let total_meas: Option<f64> = rows.iter().map(|r| r.measured_ms).sum();
    if let Some(tm) = total_meas {
        for r in &mut rows {
            if let Some(m) = r.measured_ms {
                if r.predicted_ms > 0.0 && tm > 0.0 && total_pred > 0.0 {
                    r.share_ratio = Some((m / tm) / (r.predicted_ms / total_pred));
                }
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use tplab_engine::{block::program::schedule, collectives::CollectiveKind, trace::Timing};
    use tplab_engine::{config::Config, config::Preset};

    #[test]
    fn the_executor_covers_every_event_of_the_trace() {
        let lay_of = |cfg: &Config| crate::buffers::RankLayout::new(cfg);
        for layers in [1, 3] {
            for (sp, kv) in [
                (false, None),
                (true, None),
                (false, Some(2)),
                (true, Some(1)),
            ] {
                let cfg = Config {
                    layers,
                    tp: 4,
                    heads: 4,
                    kv_heads: kv,
                    sequence_parallel: sp,
                    ..Preset::Tiny.config()
                };
                let lay = lay_of(&cfg);
                for e in &schedule(&cfg).expect("Megatron's plan propagates").events {
                    match e.collective_kind() {
                        None => {
                            assert!(
                                GPU_COMPUTE_OPS.contains(&e.op),
                                "no GPU kernel for {}",
                                e.label()
                            );
                            assert!(lay.io(e.op).is_some(), "{}", e.label());
                        }
                        Some(k) => {
                            let plan = lay.collective(e.op, e.layer).unwrap();
                            assert_eq!(plan.kind, k, "{}", e.label());
                            match k {
                                CollectiveKind::AllReduce => {
                                    assert!(GPU_ALL_REDUCES.contains(&e.op), "{}", e.label())
                                }
                                CollectiveKind::AllGather | CollectiveKind::ReduceScatter => {
                                    assert!(sp, "{}", e.label());
                                    assert!(GPU_GATHER_SCATTER.contains(&e.op), "{}", e.label())
                                }
                                CollectiveKind::Identity => {}
                                k => panic!("unexpected collective {k:?}"),
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn op_table_sums_layers_and_averages_ranks() {
        let cfg = Config {
            layers: 2,
            tp: 2,
            ..Preset::Tiny.config()
        };
        let mut tr = schedule(&cfg).expect("Megatron's plan propagates");
        for e in &mut tr.events {
            // Rank 1 twice as slow as rank 0; collectives 1 ms.
            let d = if e.is_collective() {
                1e-3
            } else {
                (1 + e.ranks[0]) as f64 * 1e-3
            };
            e.measured = Some(Timing {
                start_s: 0.0,
                duration_s: d,
            });
        }
        let rows = op_table(&tr);
        let fc1 = rows.iter().find(|r| r.op == Op::Fc1).unwrap();
        // Two layers × mean(1, 2) ms.
        assert!((fc1.measured_ms.unwrap() - 3.0).abs() < 1e-9);
        let g = rows.iter().find(|r| r.op == Op::MlpG).unwrap();
        assert!((g.measured_ms.unwrap() - 2.0).abs() < 1e-9);
        assert!(rows
            .iter()
            .all(|r| r.share_ratio.is_some() || r.predicted_ms == 0.0));
        assert_eq!(rows.len(), 28, "14 forward and 14 backward names");
    }
}
