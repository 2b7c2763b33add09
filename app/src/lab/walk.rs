//! The walkthrough's steps, derived from a trace: an op on every GPU, or one collective.

use tplab_engine::block::op::Pass;
use tplab_engine::block::Op;
use tplab_engine::trace::Trace;

/// One step of the walk: an op on every GPU (all ranks' events), or one collective.
#[derive(Debug, Clone)]
pub struct WalkStep {
    /// Index of the first trace event of this step.
    pub first_event: usize,
    /// Number of trace events (one per rank for compute, one for a collective).
    pub events: usize,
    pub layer: usize,
    pub pass: Pass,
    pub op: Op,
}

/// Groups the trace into steps: consecutive events of the same layer, pass and name.
pub fn walk_steps(trace: &Trace) -> Vec<WalkStep> {
    let mut out: Vec<WalkStep> = Vec::new();
    // One GPU communicates nothing: its collectives (groups of one) are not steps.
    for e in trace
        .events
        .iter()
        .filter(|e| !e.is_collective() || e.ranks.len() > 1)
    {
        match out.last_mut() {
            Some(s)
                if s.layer == e.layer && s.pass == e.pass && s.op == e.op && !e.is_collective() =>
            {
                s.events += 1;
            }
            _ => out.push(WalkStep {
                first_event: e.index,
                events: 1,
                layer: e.layer,
                pass: e.pass,
                op: e.op,
            }),
        }
    }
    out
}
