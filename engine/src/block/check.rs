//! A cheap, strong check of the block program: walk a trace and verify that every tensor an op
//! reads is held, on each rank, in a placement an earlier op produced (or, for a weight, the
//! placement the shard plan gives it), that every collective is exactly the change of
//! placement its kind makes, and that the placements agree with the events' local shapes.
//!
//! A missing `g` shows up as a partial sum entering a residual add; a wrong shard as a weight
//! placement that differs from the plan's; a collective of the wrong kind as a change that kind
//! does not make.

use super::placement::{change_kind, Placement, TensorPlacement};
use crate::block::plan::ShardPlan;
use crate::block::tensor::TensorName;
use crate::{
    block::op::Pass,
    trace::{Event, EventKind, Trace},
};
use std::collections::HashMap;
use thiserror::Error;

/// Where the program is inconsistent.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{event}: {problem}")]
pub struct PlacementError {
    /// The event's label, e.g. `L0 fwd attn.bias_residual r1`.
    pub event: String,
    pub problem: String,
}

/// Walks `trace` (a block program from [`crate::block::program::schedule`]) and checks it: the
/// checks of [`check_program_placements`] against Megatron's program for the trace's config.
pub fn check_placements(trace: &Trace) -> Result<(), PlacementError> {
    check_program_placements(trace, &crate::block::exec::sharded::program(&trace.config))
}

/// Walks the trace of any program the sharding rules propagated ([`crate::block::design`]) and
/// checks it as [`check_placements`] checks Megatron's: the weights read as the program's plan
/// places them, the block input and the output gradient held as the program receives them.
pub fn check_program_placements(
    trace: &Trace,
    program: &crate::block::design::Program,
) -> Result<(), PlacementError> {
    use crate::block::design::trace::placement;
    use crate::block::program::tensors::{DX, DY, X, Y};
    let cfg = &trace.config;
    let (input, output) = (program.value(program.input), program.value(program.output));
    let mut inputs = Vec::new();
    for r in 0..cfg.tp.max(1) {
        inputs.push((0, X, r, placement(cfg, input.tensor, input.place, r)));
        if let Some(last) = cfg.layers.checked_sub(1) {
            let held = placement(cfg, output.tensor, output.place.grad(), r);
            inputs.push((last, DY, r, held));
        }
    }
    let weights = |t: TensorName, r: usize| match t {
        TensorName::Param(kind) => Some(program.param_placement(cfg, kind, r)),
        _ => None,
    };
    let carry = |pass: Pass, t: TensorName, layer: usize| match (pass, t) {
        (Pass::Forward, t) if t == Y => Some((layer + 1, X)),
        (Pass::Backward, t) if t == DX && layer > 0 => Some((layer - 1, DY)),
        _ => None,
    };
    check_events(&trace.events, &inputs, &weights, &carry)
}

/// Checks a block-shaped program whose ranks start out holding `inputs` (each on its layer,
/// placed on ranks `0..tp`) besides the shard plan's parameters, e.g. the decode step's
/// ([`crate::block::decode::inputs`]); a block's output is the next block's input.
pub fn check_placements_from(
    trace: &Trace,
    inputs: &[(usize, TensorPlacement)],
) -> Result<(), PlacementError> {
    use crate::block::program::tensors::{X, Y};
    let plan = ShardPlan::new(&trace.config);
    let inputs: Vec<(usize, TensorName, usize, Placement)> = inputs
        .iter()
        .flat_map(|(layer, t)| {
            t.per_rank
                .iter()
                .enumerate()
                .map(move |(r, p)| (*layer, t.tensor, r, p.clone()))
        })
        .collect();
    let weights = |t: TensorName, r: usize| match t {
        TensorName::Param(kind) => Some(plan.placement(kind, r)),
        _ => None,
    };
    let carry = |pass: Pass, t: TensorName, layer: usize| match (pass, t) {
        (Pass::Forward, t) if t == Y => Some((layer + 1, X)),
        _ => None,
    };
    check_events(&trace.events, &inputs, &weights, &carry)
}

/// Whether a rank holding `have` holds `want`: the same placement, or rows or columns of a
/// tensor it holds whole.
fn holds(have: &[Placement], want: &Placement) -> bool {
    have.contains(want)
        || (matches!(want, Placement::Shard { .. }) && have.contains(&Placement::Replicate))
}

/// The checks of [`check_placements`] on any program's `events`: `inputs` are the tensors held
/// before the first event (layer, tensor, rank, placement), `weights` the placement a weight
/// must be read in on a rank (`None` for a tensor that is not a fixed weight), and `carry`
/// where a tensor a pass writes is read again under another layer and name (a block's output
/// as the next block's input).
///
/// A compute op's output is its first write's local shape, or, for an op that writes several
/// statistics of one row each (the cross-entropy's), those rows packed: `[writes, n]`.
pub fn check_events(
    events: &[Event],
    inputs: &[(usize, TensorName, usize, Placement)],
    weights: &dyn Fn(TensorName, usize) -> Option<Placement>,
    carry: &dyn Fn(Pass, TensorName, usize) -> Option<(usize, TensorName)>,
) -> Result<(), PlacementError> {
    // (layer, tensor, rank) -> every placement produced so far.
    let mut held: HashMap<(usize, TensorName, usize), Vec<Placement>> = HashMap::new();
    for (layer, t, r, p) in inputs {
        held.entry((*layer, *t, *r)).or_default().push(p.clone());
    }
    for e in events {
        let fail = |problem: String| PlacementError {
            event: e.label(),
            problem,
        };
        // Reads.
        for t in &e.reads {
            for (i, &r) in e.ranks.iter().enumerate() {
                let Some(p) = t.on(i) else {
                    return Err(fail(format!("{} has no placement for rank {r}", t.tensor)));
                };
                if let Some(want) = weights(t.tensor, r) {
                    if *p != want {
                        return Err(fail(format!(
                            "rank {r} reads {} but the shard plan gives it {}",
                            p.index_notation(t.tensor.name()),
                            want.index_notation(t.tensor.name())
                        )));
                    }
                    continue;
                }
                let have = held.get(&(e.layer, t.tensor, r));
                if !have.is_some_and(|h| holds(h, p)) {
                    return Err(fail(format!(
                        "rank {r} reads {} but holds {}",
                        p.index_notation(t.tensor.name()),
                        have.map_or("nothing of it".to_string(), |h| h
                            .iter()
                            .map(|q| q.index_notation(t.tensor.name()))
                            .collect::<Vec<_>>()
                            .join(" and "))
                    )));
                }
            }
        }
        match &e.kind {
            EventKind::Collective { kind, .. } => {
                if e.reads.len() != e.writes.len() {
                    return Err(fail("a collective must write each tensor it reads".into()));
                }
                for (a, b) in e.reads.iter().zip(&e.writes) {
                    let (Some(from), Some(to)) = (a.kind(), b.kind()) else {
                        return Err(fail(format!("{} has mixed placements", a.tensor)));
                    };
                    if a.tensor != b.tensor || change_kind(from, to) != Some(*kind) {
                        return Err(fail(format!(
                            "{} does not turn {} {} into {}",
                            kind.name(),
                            a.tensor,
                            from.dtensor(),
                            to.dtensor()
                        )));
                    }
                }
            }
            EventKind::Compute { .. } => {
                let Some(first) = e.writes.first() else {
                    return Err(fail("a compute op must write a tensor".into()));
                };
                let local = first.on(0).map(|p| p.local_shape(first.shape));
                let packed = e.writes.len() > 1
                    && local.is_some_and(|[rows, n]| {
                        rows == 1
                            && e.output == [e.writes.len(), n]
                            && e.writes
                                .iter()
                                .all(|w| w.on(0).map(|p| p.local_shape(w.shape)) == Some([1, n]))
                    });
                if local != Some(e.output) && !packed {
                    return Err(fail(format!(
                        "writes {} of local shape {local:?}, but the event's output is {:?}",
                        first.tensor, e.output
                    )));
                }
                for (t, shape) in e.reads.iter().zip(&e.inputs) {
                    let local = t.on(0).map(|p| p.local_shape(t.shape));
                    if local != Some(*shape) {
                        return Err(fail(format!(
                            "reads {} of local shape {local:?}, but the event's input is {shape:?}",
                            t.tensor
                        )));
                    }
                }
            }
        }
        // Writes.
        for t in &e.writes {
            for (i, &r) in e.ranks.iter().enumerate() {
                if let Some(p) = t.on(i) {
                    held.entry((e.layer, t.tensor, r))
                        .or_default()
                        .push(p.clone());
                }
            }
            if let Some((layer, name)) = carry(e.pass, t.tensor, e.layer) {
                for (i, &r) in e.ranks.iter().enumerate() {
                    if let Some(p) = t.on(i) {
                        held.entry((layer, name, r)).or_default().push(p.clone());
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::op::Op;
    use crate::block::program::schedule;
    use crate::config::{Config, Preset};

    fn configs() -> Vec<Config> {
        let mut out = Vec::new();
        for tp in [1, 2, 4] {
            for sp in [false, true] {
                for kv in [None, Some(2), Some(1)] {
                    let cfg = Config {
                        layers: 2,
                        tp,
                        sequence_parallel: sp,
                        kv_heads: kv,
                        ..Preset::Tiny.config()
                    };
                    if cfg.validate_shapes().is_ok() {
                        out.push(cfg);
                    }
                }
            }
        }
        out
    }

    #[test]
    fn every_schedule_is_consistent() {
        let cfgs = configs();
        assert!(cfgs.len() >= 10, "{}", cfgs.len());
        for cfg in cfgs {
            let tr = schedule(&cfg).expect("Megatron's plan propagates");
            if let Err(e) = check_placements(&tr) {
                panic!("{}: {e}", cfg.label());
            }
        }
    }

    #[test]
    fn a_missing_g_is_caught() {
        let cfg = Config {
            tp: 2,
            ..Preset::Tiny.config()
        };
        let mut tr = schedule(&cfg).expect("Megatron's plan propagates");
        tr.events.retain(|e| e.op != Op::AttnG);
        let err = check_placements(&tr)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("attn.bias_residual") && err.contains("partial"),
            "{err}"
        );
    }

    #[test]
    fn a_wrong_shard_is_caught() {
        let cfg = Config {
            tp: 2,
            ..Preset::Tiny.config()
        };
        let mut tr = schedule(&cfg).expect("Megatron's plan propagates");
        // Give rank 1's fc1 rank 0's columns of W1.
        let ev = tr
            .events
            .iter_mut()
            .find(|e| e.op == Op::Fc1 && e.ranks == [1]);
        if let Some(ev) = ev {
            ev.reads[1].per_rank[0] = Placement::shard(1, 0..cfg.ffn / 2);
        }
        let err = check_placements(&tr)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("shard plan"), "{err}");
    }

    #[test]
    fn a_collective_of_the_wrong_kind_is_caught() {
        let cfg = Config {
            tp: 2,
            ..Preset::Tiny.config()
        };
        let mut tr = schedule(&cfg).expect("Megatron's plan propagates");
        if let Some(ev) = tr.events.iter_mut().find(|e| e.op == Op::MlpG) {
            if let EventKind::Collective { kind, .. } = &mut ev.kind {
                *kind = crate::collectives::CollectiveKind::AllGather;
            }
        }
        let err = check_placements(&tr)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("all-gather does not turn M"), "{err}");
    }
}
