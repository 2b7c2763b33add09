//! Tables from a measured trace: per op, measured time beside the trace's own (proportional or
//! modeled) time.

use serde::Serialize;
use tplab_engine::trace::{Pass, Trace};

/// Every compute op the GPU executor implements, by pass and trace name.
pub const GPU_COMPUTE_OPS: [(Pass, &str); 20] = [
    (Pass::Forward, "ln1"),
    (Pass::Forward, "attn.qkv"),
    (Pass::Forward, "attn.core"),
    (Pass::Forward, "attn.out"),
    (Pass::Forward, "attn.bias_residual"),
    (Pass::Forward, "ln2"),
    (Pass::Forward, "mlp.fc1"),
    (Pass::Forward, "mlp.gelu"),
    (Pass::Forward, "mlp.fc2"),
    (Pass::Forward, "mlp.bias_residual"),
    (Pass::Backward, "mlp.bias_residual.bwd"),
    (Pass::Backward, "mlp.fc2.bwd"),
    (Pass::Backward, "mlp.gelu.bwd"),
    (Pass::Backward, "mlp.fc1.bwd"),
    (Pass::Backward, "ln2.bwd"),
    (Pass::Backward, "attn.bias_residual.bwd"),
    (Pass::Backward, "attn.out.bwd"),
    (Pass::Backward, "attn.core.bwd"),
    (Pass::Backward, "attn.qkv.bwd"),
    (Pass::Backward, "ln1.bwd"),
];

/// Trace names of the all-reduces the GPU executor performs (the rest are identities).
pub const GPU_ALL_REDUCES: [&str; 4] = ["attn.g", "mlp.g", "mlp.f.bwd", "attn.f.bwd"];

/// One op of the per-op table, summed over layers (compute: mean over ranks).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpRow {
    pub pass: Pass,
    pub name: String,
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
        let idx = match rows
            .iter()
            .position(|r| r.pass == e.pass && r.name == e.name)
        {
            Some(i) => i,
            None => {
                rows.push(OpRow {
                    pass: e.pass,
                    name: e.name.clone(),
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
    use tplab_engine::trace::{schedule, CollectiveKind, Timing};
    use tplab_engine::{Config, Preset};

    #[test]
    fn the_executor_covers_every_event_of_the_trace() {
        for layers in [1, 3] {
            let cfg = Config {
                layers,
                tp: 4,
                ..Preset::Tiny.config()
            };
            for e in &schedule(&cfg).events {
                match e.collective_kind() {
                    None => assert!(
                        GPU_COMPUTE_OPS.contains(&(e.pass, e.name.as_str())),
                        "no GPU kernel for {}",
                        e.label()
                    ),
                    Some(CollectiveKind::AllReduce) => {
                        assert!(GPU_ALL_REDUCES.contains(&e.name.as_str()), "{}", e.label())
                    }
                    Some(CollectiveKind::Identity) => {}
                    Some(k) => panic!("unexpected collective {k:?}"),
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
        let mut tr = schedule(&cfg);
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
        let fc1 = rows.iter().find(|r| r.name == "mlp.fc1").unwrap();
        // Two layers × mean(1, 2) ms.
        assert!((fc1.measured_ms.unwrap() - 3.0).abs() < 1e-9);
        let g = rows.iter().find(|r| r.name == "mlp.g").unwrap();
        assert!((g.measured_ms.unwrap() - 2.0).abs() < 1e-9);
        assert!(rows
            .iter()
            .all(|r| r.share_ratio.is_some() || r.predicted_ms == 0.0));
        assert_eq!(rows.len(), 28, "14 forward and 14 backward names");
    }
}
