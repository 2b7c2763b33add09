//! The trace as Chrome's Trace Event Format, which Perfetto and chrome://tracing open.

use super::{EventKind, TensorPlacement, TimeSource, Trace};

impl Trace {
    /// Chrome trace JSON (the Trace Event Format that Perfetto and chrome://tracing open): one
    /// thread per rank, complete (`"X"`) events in microseconds. A collective appears on each rank
    /// of its group. Measured times are used when every event has one, else the trace's times;
    /// the metadata says which.
    pub fn to_chrome_json(&self) -> serde_json::Value {
        use serde_json::json;
        let measured = !self.events.is_empty() && self.events.iter().all(|e| e.measured.is_some());
        let source = if measured {
            "measured on GPU (CUDA events)"
        } else {
            match self.time_source {
                TimeSource::Proportional => {
                    "proportional to FLOPs and bytes at nominal rates; not a prediction"
                }
                TimeSource::CostModel => "modeled by the tplab cost model",
                TimeSource::Measured => "measured on GPU (CUDA events)",
            }
        };
        let mut out = Vec::new();
        for r in 0..self.config.tp.max(1) {
            out.push(json!({"ph": "M", "pid": 0, "tid": r, "name": "thread_name", "args": {"name": format!("GPU {r}")}}));
        }
        for e in &self.events {
            let t = if measured {
                e.measured.unwrap_or(e.timing)
            } else {
                e.timing
            };
            let cat = if e.is_collective() {
                "collective"
            } else {
                "compute"
            };
            let kind = match &e.kind {
                EventKind::Compute { op, parallel } => {
                    json!({"op": op.label(), "parallel": parallel.label()})
                }
                EventKind::Collective {
                    kind,
                    algorithm,
                    steps,
                } => {
                    json!({"collective": kind.name(), "algorithm": algorithm.name(), "steps": steps})
                }
            };
            let slice = e.slice_name();
            for (i, &r) in e.ranks.iter().enumerate() {
                // What this rank holds of each tensor, in index notation: `W1[:, 768:1536]`.
                let held = |ts: &[TensorPlacement]| -> Vec<serde_json::Value> {
                    ts.iter()
                        .filter_map(|t| {
                            let p = t.on(i)?;
                            Some(json!({
                                "tensor": t.tensor, "shape": t.shape,
                                "placement": p.kind().dtensor(),
                                "holds": p.index_notation(t.tensor.name()),
                            }))
                        })
                        .collect()
                };
                out.push(json!({
                    "name": slice, "cat": cat, "ph": "X", "pid": 0, "tid": r,
                    "ts": t.start_s * 1e6, "dur": t.duration_s * 1e6,
                    "args": {
                        "index": e.index, "layer": e.layer, "pass": e.pass.name(),
                        "inputs": e.inputs, "output": e.output, "flops": e.flops,
                        "bytes": e.bytes, "bytes_sent_per_rank": e.bytes_sent_per_rank,
                        "conjugate": e.conjugate.map(|c| c.name()), "kind": kind,
                        "op": e.op.name(), "label": e.op.label(),
                        "reads": held(&e.reads), "writes": held(&e.writes),
                    }
                }));
            }
        }
        json!({
            "traceEvents": out,
            "displayTimeUnit": "ms",
            "otherData": {"tplab_time_source": source, "config": self.config, "label": self.config.label()},
        })
    }
}
