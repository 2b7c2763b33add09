//! The trace: one ordered list of every op and collective of a run, per rank.
//!
//! [`schedule`] (the block program, [`crate::block::program`]) lays out the events a
//! Megatron-style tensor-parallel forward and backward pass issues, in the order a real run issues
//! them: layer by layer forward, then layer by layer in
//! reverse for the backward pass. Compute events are per rank; a collective is one event for the
//! whole group. Each event carries its shapes, FLOPs and bytes. Times come from a duration model
//! ([`Trace::assign_times`]): until a cost model is applied they are only *proportional* to FLOPs
//! and bytes ([`TimeSource::Proportional`]); the cost model fills modeled times, and the GPU
//! executor fills [`Event::measured`].
//!
//! The app draws this type, the exports write it, and the executors follow it; the CPU executor's
//! tests check that it issues exactly these events in this order.
//!
//! Per block, forward: `ln1, f, qkv, attn.core, attn.out, g (all-reduce), bias+residual, ln2, f,
//! fc1, gelu, fc2, g (all-reduce), bias+residual`. Backward mirrors it; there `g` is the identity
//! and `f` is the all-reduce. So each block issues two all-reduces forward and two backward.

mod chrome;

// The op vocabulary, the passes and the splits live beside `Op` in the block; reachable here too.
use crate::block::op::Op;
use crate::block::op::{ComputeOp, Conjugate, Parallel, Pass};
use crate::block::placement::TensorPlacement;
use crate::collectives::Algorithm;
use crate::config::Config;
use serde::{Deserialize, Serialize};

use crate::collectives::CollectiveKind;

/// Communication steps of an all-reduce of `n` ranks by `algorithm`, from the collectives
/// module's plan ([`crate::collectives::plan`]).
pub fn all_reduce_steps(algorithm: Algorithm, n: usize) -> usize {
    crate::collectives::all_reduce_step_count(algorithm, n)
}

/// Bytes the busiest rank sends in an all-reduce of `payload_bytes` over `n` ranks, from the
/// collectives module's plan (ring: 2(n-1)/n of the payload; tree: the root's ceil(log2 n) sends).
pub fn all_reduce_bytes_sent_per_rank(algorithm: Algorithm, n: usize, payload_bytes: u64) -> u64 {
    crate::collectives::all_reduce_max_bytes_sent_per_rank(algorithm, n, payload_bytes)
}

/// What an event does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum EventKind {
    Compute {
        op: ComputeOp,
        parallel: Parallel,
    },
    Collective {
        kind: CollectiveKind,
        algorithm: Algorithm,
        /// Communication steps the algorithm takes for this group size.
        steps: usize,
    },
}

/// Where an event's times came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum TimeSource {
    /// Proportional to FLOPs and bytes at nominal rates: for ordering and shape only, not a
    /// prediction of any hardware.
    #[default]
    Proportional,
    /// From the cost model for named hardware.
    CostModel,
    /// Measured on a GPU with CUDA events.
    Measured,
}

/// A start and a duration in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Timing {
    pub start_s: f64,
    pub duration_s: f64,
}

impl Timing {
    pub fn end_s(&self) -> f64 {
        self.start_s + self.duration_s
    }
}

/// One op on one rank, or one collective over a group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the trace.
    pub index: usize,
    pub layer: usize,
    pub pass: Pass,
    /// The op; serialised as its dotted name (`mlp.fc1`, `attn.g`, `mlp.f.bwd`) under `name`.
    #[serde(rename = "name")]
    pub op: Op,
    pub kind: EventKind,
    /// The rank of a compute event, or the group of a collective.
    pub ranks: Vec<usize>,
    /// Input shapes `[rows, cols]` (activations first, then weights).
    pub inputs: Vec<[usize; 2]>,
    /// Output shape `[rows, cols]`.
    pub output: [usize; 2],
    /// Floating-point operations on this rank (compute), or additions done by the reduction on
    /// each rank (collectives).
    pub flops: u64,
    /// Compute: bytes read plus written on this rank. Collective: payload bytes per rank.
    pub bytes: u64,
    /// Bytes each rank sends over links (collectives; 0 for compute).
    pub bytes_sent_per_rank: u64,
    /// Which conjugate operator this collective implements, if any.
    pub conjugate: Option<Conjugate>,
    /// The tensors the event reads, with each rank's placement (weights and activations; a
    /// collective reads its tensor in the placement it changes).
    #[serde(default)]
    pub reads: Vec<TensorPlacement>,
    /// The tensors the event writes, with each rank's placement (a collective writes the same
    /// tensor in its new placement: `Partial → Replicate` for an all-reduce).
    #[serde(default)]
    pub writes: Vec<TensorPlacement>,
    /// Times from [`Trace::time_source`].
    pub timing: Timing,
    /// Times measured on hardware, if the event ran there.
    pub measured: Option<Timing>,
}

impl Event {
    /// The op's dotted name.
    pub fn name(&self) -> &'static str {
        self.op.name()
    }

    /// What Perfetto shows on the slice: the op, and for a collective what it does, e.g.
    /// `attn.g all-reduce`, `attn.f identity`.
    pub fn slice_name(&self) -> String {
        match self.collective_kind() {
            Some(kind) => format!("{} {}", self.op.name(), kind.name()),
            None => self.op.name().to_string(),
        }
    }

    pub fn is_collective(&self) -> bool {
        matches!(self.kind, EventKind::Collective { .. })
    }

    /// An identity that leaves every tensor as each GPU holds it: the half of a conjugate pair
    /// that moves nothing (Megatron's `f` forward, `g` backward), drawn beside the all-reduce in
    /// the other pass. A local slice (`Replicate → Shard`) is an identity too, but not a half.
    pub fn is_identity_half(&self) -> bool {
        self.collective_kind() == Some(CollectiveKind::Identity)
            && self.reads.len() == self.writes.len()
            && self
                .reads
                .iter()
                .zip(&self.writes)
                .all(|(a, b)| a.per_rank == b.per_rank)
    }

    pub fn collective_kind(&self) -> Option<CollectiveKind> {
        match self.kind {
            EventKind::Collective { kind, .. } => Some(kind),
            EventKind::Compute { .. } => None,
        }
    }

    /// Whether this event involves `rank`.
    pub fn on_rank(&self, rank: usize) -> bool {
        self.ranks.contains(&rank)
    }

    /// A label for tables: `L0 fwd mlp.fc1 r2`.
    pub fn label(&self) -> String {
        let pass = match self.pass {
            Pass::Forward => "fwd",
            Pass::Backward => "bwd",
        };
        if self.is_collective() {
            format!("L{} {pass} {}", self.layer, self.op)
        } else {
            format!("L{} {pass} {} r{}", self.layer, self.op, self.ranks[0])
        }
    }
}

/// Counts of collectives, per pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CollectiveCounts {
    /// All-reduces forward (the `g` operators without sequence parallelism).
    pub forward_all_reduce: usize,
    /// All-reduces backward: the `f` operators, or sequence parallelism's LayerNorm and bias
    /// gradient sum; not the KV copies' syncs, counted in `kv_copy_grad_all_reduce`.
    pub backward_all_reduce: usize,
    /// All-gathers and reduce-scatters (sequence parallelism; the vocabulary pass has none).
    pub forward_other: usize,
    pub backward_other: usize,
    /// Grouped-query attention with replicated KV heads: one small all-reduce per group of copies.
    #[serde(default)]
    pub kv_copy_grad_all_reduce: usize,
}

impl CollectiveCounts {
    /// The sentence the CLI and every view print: `forward 2, backward 2`, then the KV copies'
    /// gradient syncs and sequence parallelism's gathers and scatters when there are any.
    pub fn describe(&self) -> String {
        let mut text = format!(
            "forward {}, backward {}",
            self.forward_all_reduce, self.backward_all_reduce
        );
        let kv = self.kv_copy_grad_all_reduce;
        if kv > 0 {
            text.push_str(&format!(
                "; plus all-reduces of replicated KV heads' gradients, one per group of copies: {kv}"
            ));
        }
        if self.forward_other + self.backward_other > 0 {
            text.push_str(&format!(
                "; all-gathers and reduce-scatters: forward {}, backward {}",
                self.forward_other, self.backward_other
            ));
        }
        text
    }
}

/// The ordered events of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub config: Config,
    pub events: Vec<Event>,
    pub time_source: TimeSource,
}

/// Nominal rates for [`TimeSource::Proportional`]: 1 TFLOP/s, 100 GB/s for memory and 50 GB/s
/// per link. Only ratios between events mean anything.
pub fn proportional_duration_s(e: &Event) -> f64 {
    match &e.kind {
        EventKind::Compute { .. } => e.flops as f64 / 1e12 + e.bytes as f64 / 100e9,
        EventKind::Collective { kind, steps, .. } => match kind {
            CollectiveKind::Identity => 0.0,
            _ => e.bytes_sent_per_rank as f64 / 50e9 + *steps as f64 * 5e-6,
        },
    }
}

impl Trace {
    /// Lays events on per-rank timelines with durations from `duration_s`: each rank runs its
    /// compute events in order; a collective starts when every rank of its group is ready and
    /// ends for all of them together.
    pub fn assign_times(&mut self, source: TimeSource, mut duration_s: impl FnMut(&Event) -> f64) {
        let mut clock = vec![0.0f64; self.config.tp.max(1)];
        for e in &mut self.events {
            let d = duration_s(e).max(0.0);
            let start = e.ranks.iter().map(|&r| clock[r]).fold(0.0f64, f64::max);
            for &r in &e.ranks {
                clock[r] = start + d;
            }
            e.timing = Timing {
                start_s: start,
                duration_s: d,
            };
        }
        self.time_source = source;
    }

    /// End of the last event.
    pub fn makespan_s(&self) -> f64 {
        self.events
            .iter()
            .map(|e| e.timing.end_s())
            .fold(0.0, f64::max)
    }

    /// Events of one layer and pass.
    pub fn layer_events(&self, layer: usize, pass: Pass) -> impl Iterator<Item = &Event> {
        self.events
            .iter()
            .filter(move |e| e.layer == layer && e.pass == pass)
    }

    /// Collectives by pass, over the whole trace or one layer; a group of one rank (TP=1)
    /// communicates nothing and is not counted.
    pub fn collective_counts(&self, layer: Option<usize>) -> CollectiveCounts {
        let mut c = CollectiveCounts::default();
        for e in &self.events {
            if layer.is_some_and(|l| l != e.layer) {
                continue;
            }
            // One GPU communicates nothing: its collectives are a group of one.
            if e.ranks.len() < 2 {
                continue;
            }
            if e.op == Op::KvGrads {
                c.kv_copy_grad_all_reduce += 1;
                continue;
            }
            match (e.collective_kind(), e.pass) {
                (Some(CollectiveKind::AllReduce), Pass::Forward) => c.forward_all_reduce += 1,
                (Some(CollectiveKind::AllReduce), Pass::Backward) => c.backward_all_reduce += 1,
                (Some(CollectiveKind::Identity) | None, _) => {}
                (Some(_), Pass::Forward) => c.forward_other += 1,
                (Some(_), Pass::Backward) => c.backward_other += 1,
            }
        }
        c
    }

    /// Total FLOPs over all ranks.
    pub fn total_flops(&self) -> u64 {
        self.events.iter().map(|e| e.flops).sum()
    }

    /// Total bytes sent over links by all ranks.
    pub fn total_bytes_sent(&self) -> u64 {
        self.events
            .iter()
            .map(|e| e.bytes_sent_per_rank * e.ranks.len() as u64)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::program::schedule;
    use crate::config::Preset;

    #[test]
    fn two_all_reduces_each_way_per_layer() {
        for tp in [1, 2, 4] {
            let cfg = Config {
                layers: 3,
                tp,
                ..Preset::Tiny.config()
            };
            let tr = schedule(&cfg).expect("Megatron's plan propagates");
            // One GPU has nothing to combine.
            let each = if tp > 1 { 2 } else { 0 };
            for l in 0..3 {
                let c = tr.collective_counts(Some(l));
                assert_eq!((c.forward_all_reduce, c.backward_all_reduce), (each, each));
            }
            assert_eq!(tr.collective_counts(None).forward_all_reduce, 3 * each);
        }
    }

    #[test]
    fn ring_sends_two_n_minus_one_over_n() {
        assert_eq!(
            all_reduce_bytes_sent_per_rank(Algorithm::Ring, 4, 4096),
            6144
        );
        assert_eq!(all_reduce_steps(Algorithm::Ring, 8), 14);
        assert_eq!(all_reduce_steps(Algorithm::RecursiveHalvingDoubling, 8), 6);
        assert_eq!(all_reduce_steps(Algorithm::Tree, 5), 6);
        assert_eq!(
            all_reduce_bytes_sent_per_rank(Algorithm::Direct, 4, 100),
            300
        );
    }

    #[test]
    fn collectives_synchronise_ranks() {
        let tr = schedule(&Preset::Tiny.config()).expect("Megatron's plan propagates");
        for e in tr.events.iter().filter(|e| e.is_collective()) {
            for r in &e.ranks {
                let before = tr.events[..e.index]
                    .iter()
                    .filter(|p| p.on_rank(*r))
                    .map(|p| p.timing.end_s())
                    .fold(0.0, f64::max);
                assert!(e.timing.start_s >= before - 1e-15);
            }
        }
        let json = tr.to_chrome_json();
        assert!(json["traceEvents"].as_array().is_some_and(|a| a.len() > 10));
    }
}
