//! Megatron-LM's split of the block on `tp` virtual GPUs, each holding only its shards: the
//! program propagation gives Megatron's plan ([`crate::block::design::propagate`] of
//! [`NamedPlan::Megatron`], sequence parallelism as the config says), run by the one executor
//! that runs every valid plan ([`super::design::walk`]). Nothing here knows the block's ops: this
//! module is the API the labs, the CLI and the views call (what a run produces, the precision
//! hook, the recorded collectives), and Megatron's plan is one input to the walk, not a special
//! case of it. Per rank and block, the program is:
//!
//! ```text
//! forward:  x ─LN1─▶ f ─▶ [x·W_qkv,r + b_r] ─▶ attn(heads of r) ─▶ [ctx_r·W_out,r] ─▶ g(all-reduce) ─▶ +b_out +x
//!           x1 ─LN2─▶ f ─▶ [x·W_1,r + b_1,r] ─▶ GeLU ─▶ [·W_2,r] ─▶ g(all-reduce) ─▶ +b_2 +x1
//! backward: the mirror image; g is the identity and f all-reduces the LayerNorm-output gradients.
//! ```

pub use super::design::ExecError;
use crate::block::design::{
    plan::{NamedPlan, ShardingPlan},
    program::{propagate, Program},
};
use crate::block::op::{Op, Pass};
use crate::block::plan::ShardPlan;
use crate::config::Config;
use crate::dtype::Element;
use crate::params::{LayerParams, Model};
use ndarray::Array2;

/// A hook on the executor's forward pass: the precision lab rounds every op's output to a
/// 2-byte dtype and sums all-reduces in that dtype, on the same walk of the program rather than a
/// copy of it ([`crate::labs::precision`]).
pub trait Rounding<T>: Sync {
    /// Called on the output each rank's forward op produces (before anything reads it).
    fn round(&self, _op: Op, _out: &mut Array2<T>) {}
    /// An all-reduce the hook sums itself, or `None` for the engine's collective.
    fn all_reduce(&self, _op: Op, _partials: &[Array2<T>]) -> Option<Array2<T>> {
        None
    }
    /// Whether [`Rounding::round`] may change an output. Only a hook that never does lets the
    /// executor fuse a bias-and-residual pass with the LayerNorm after it (which then reads the
    /// sum before any hook could see it).
    fn rounds(&self) -> bool {
        true
    }
}

/// No rounding: the executor as it is.
pub struct Exact;

impl<T> Rounding<T> for Exact {
    fn rounds(&self) -> bool {
        false
    }
}

/// One event the executor issued (compared against the trace's order in tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    pub layer: usize,
    pub pass: Pass,
    pub op: Op,
    pub ranks: Vec<usize>,
}

/// One all-reduce: every rank's partial input and the reduced result (rank 0's copy; the
/// executor checks that every rank ended with the same values).
#[derive(Debug, Clone)]
pub struct CollectiveRecord<T> {
    pub layer: usize,
    pub pass: Pass,
    pub op: Op,
    pub partials: Vec<Array2<T>>,
    pub result: Array2<T>,
    /// Largest difference between ranks' results (0 for every algorithm here: each rank receives
    /// the same reduced chunks).
    pub max_rank_disagreement: f64,
}

/// What a sharded run produces.
#[derive(Debug, Clone)]
pub struct ShardedRun<T> {
    /// Each rank's copy of the block stack's output (replicated after the last `g`); with
    /// sequence parallelism each rank's token rows of it (`token_rows`).
    pub outputs: Vec<Array2<T>>,
    /// Each rank's copy of the input gradient (replicated after the last `f`); with sequence
    /// parallelism each rank's token rows of it.
    pub grad_inputs: Vec<Array2<T>>,
    /// The token rows each rank holds outside the tensor-parallel regions
    /// ([`Config::token_rows`]).
    pub token_rows: Vec<std::ops::Range<usize>>,
    /// Elements each rank saved for the backward pass, summed over layers (what
    /// [`crate::capacity::memory::config_memory`] models).
    pub saved_elements_per_rank: Vec<usize>,
    /// Each rank's parameter-shard gradients, `[rank][layer]`.
    pub grads: Vec<Vec<LayerParams<T>>>,
    pub collectives: Vec<CollectiveRecord<T>>,
    pub issued: Vec<Issued>,
}

impl<T: Element> ShardedRun<T> {
    /// The whole output: rank 0's copy, or with sequence parallelism every rank's rows stacked.
    pub fn output(&self) -> Array2<T> {
        stack_rows(&self.outputs, &self.token_rows)
    }

    /// The whole input gradient, as [`ShardedRun::output`].
    pub fn grad_input(&self) -> Array2<T> {
        stack_rows(&self.grad_inputs, &self.token_rows)
    }
}

fn stack_rows<T: Element>(parts: &[Array2<T>], rows: &[std::ops::Range<usize>]) -> Array2<T> {
    let split = rows.len() > 1 && rows[0] != rows[1];
    if split {
        let views: Vec<_> = parts.iter().map(|a| a.view()).collect();
        if let Ok(a) = ndarray::concatenate(ndarray::Axis(0), &views) {
            return a;
        }
    }
    parts
        .first()
        .cloned()
        .unwrap_or_else(|| Array2::zeros((0, 0)))
}

/// What a sharded run does besides the forward pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Run the backward pass too.
    pub backward: bool,
    /// Keep every rank's partial input of each all-reduce (for verification and display).
    pub record_collectives: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            backward: true,
            record_collectives: true,
        }
    }
}

/// Runs forward and backward of `model` split by `plan` over `cfg.tp` virtual GPUs.
pub fn run<T: Element>(
    cfg: &Config,
    plan: &ShardPlan,
    model: &Model<T>,
) -> Result<ShardedRun<T>, ExecError> {
    run_with(cfg, plan, model, Options::default())
}

/// [`run`] with [`Options`] (benchmarks skip the recording; forward-only runs skip backward).
pub fn run_with<T: Element>(
    cfg: &Config,
    plan: &ShardPlan,
    model: &Model<T>,
    options: Options,
) -> Result<ShardedRun<T>, ExecError> {
    let shards = plan.shard_model(model); // [rank][layer]
    run_on_shards(cfg, &shards, &model.input, &model.grad_output, options)
}

/// Runs on shards already resident on each rank (`shards[rank][layer]`, from
/// [`ShardPlan::shard_model`]): what a real run does every step, without re-slicing the weights.
pub fn run_on_shards<T: Element>(
    cfg: &Config,
    shards: &[Vec<LayerParams<T>>],
    input: &Array2<T>,
    grad_output: &Array2<T>,
    options: Options,
) -> Result<ShardedRun<T>, ExecError> {
    run_on_shards_with(cfg, shards, input, grad_output, options, &Exact)
}

/// Megatron's plan for `cfg` (sequence parallelism as the config has it), propagated: the
/// program [`run_on_shards_with`] walks.
pub fn program(cfg: &Config) -> Program {
    let plan = ShardingPlan {
        sequence_parallel: cfg.sequence_parallel,
        ..NamedPlan::Megatron.plan()
    };
    propagate(cfg, &plan)
}

/// [`run_on_shards`] with a [`Rounding`] hook on the forward pass: Megatron's program
/// ([`program`]) walked by the executor of every plan ([`super::design::walk`]), which issues
/// exactly the program's trace's events in order (a test checks every one).
pub fn run_on_shards_with<T: Element>(
    cfg: &Config,
    shards: &[Vec<LayerParams<T>>],
    input: &Array2<T>,
    grad_output: &Array2<T>,
    options: Options,
    hook: &dyn Rounding<T>,
) -> Result<ShardedRun<T>, ExecError> {
    let program = program(cfg);
    if let Some(e) = program.errors.first() {
        return Err(ExecError::Refused(e.rule.clone()));
    }
    let tp = cfg.tp.max(1);
    let w = super::design::walk(
        cfg,
        &program,
        shards,
        input.view(),
        grad_output.view(),
        options,
        hook,
    )?;
    let grad_inputs = match w.grad_input {
        Some(g) => g.ranks,
        // Forward only: the output gradient as each rank would read it (nothing ran on it).
        None => (0..tp)
            .map(|r| {
                let rows = cfg.token_rows(r);
                if rows.end <= grad_output.nrows() {
                    grad_output.slice(ndarray::s![rows, ..]).to_owned()
                } else {
                    grad_output.clone()
                }
            })
            .collect(),
    };
    Ok(ShardedRun {
        outputs: w.output.ranks,
        grad_inputs,
        token_rows: (0..tp).map(|r| cfg.token_rows(r)).collect(),
        saved_elements_per_rank: w.saved_elements_per_rank,
        grads: w.grads,
        collectives: w.collectives,
        issued: w.issued,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::design::program::Step;
    use crate::config::Preset;

    fn tiny(
        tp: usize,
        sequence_parallel: bool,
    ) -> (Config, Model<f64>, Vec<Vec<LayerParams<f64>>>) {
        let cfg = Config {
            tp,
            layers: 2,
            sequence_parallel,
            ..Preset::Tiny.config()
        };
        let model = Model::<f64>::random(&cfg);
        let shards = ShardPlan::new(&cfg).shard_model(&model);
        (cfg, model, shards)
    }

    /// The walk issues exactly its program's trace, event by event (layer, pass, op, ranks), with
    /// and without sequence parallelism, and the trace's communicating collectives are the
    /// hand-written schedule's (`megatrons_plan_traces_megatrons_collectives`).
    #[test]
    fn the_walk_issues_its_programs_trace() {
        for (tp, sp) in [(1, false), (2, false), (4, false), (2, true), (4, true)] {
            let (cfg, model, shards) = tiny(tp, sp);
            let run = run_on_shards(
                &cfg,
                &shards,
                &model.input,
                &model.grad_output,
                Options::default(),
            );
            let Ok(run) = run else {
                panic!("the tiny config runs");
            };
            let trace = crate::block::design::trace::trace(&cfg, &program(&cfg));
            let Ok(trace) = trace else {
                panic!("Megatron's program has a trace");
            };
            let planned: Vec<_> = trace
                .events
                .iter()
                .map(|e| (e.layer, e.pass, e.op, e.ranks.clone()))
                .collect();
            let issued: Vec<_> = run
                .issued
                .iter()
                .map(|i| (i.layer, i.pass, i.op, i.ranks.clone()))
                .collect();
            assert_eq!(issued, planned, "tp {tp} sp {sp}");
        }
    }

    /// The walk executes the program it is given, not a list of its own: a program missing
    /// LayerNorm 1 fails at the first step that reads its output, naming the tensor; a
    /// forward-only walk issues exactly the forward events, the same output as a full run, and
    /// no gradients.
    #[test]
    fn the_walk_follows_the_program_it_is_given() {
        let (cfg, model, shards) = tiny(2, false);
        let opts = Options::default();
        let mut cut = program(&cfg);
        let Some(i) = cut
            .forward
            .iter()
            .position(|s| matches!(s, Step::LayerNorm { .. }))
        else {
            panic!("Megatron's program has a LayerNorm");
        };
        cut.forward.remove(i);
        let err = super::super::design::walk(
            &cfg,
            &cut,
            &shards,
            model.input.view(),
            model.grad_output.view(),
            opts,
            &Exact,
        )
        .err();
        let message = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("H1 is not there"), "{message}");

        let full = run_on_shards(&cfg, &shards, &model.input, &model.grad_output, opts);
        let fwd = run_on_shards(
            &cfg,
            &shards,
            &model.input,
            &model.grad_output,
            Options {
                backward: false,
                record_collectives: false,
            },
        );
        let (Ok(full), Ok(fwd)) = (full, fwd) else {
            panic!("the tiny config runs");
        };
        let forward: Vec<_> = full
            .issued
            .iter()
            .filter(|e| e.pass == Pass::Forward)
            .map(|e| (e.layer, e.op, e.ranks.clone()))
            .collect();
        let issued: Vec<_> = fwd
            .issued
            .iter()
            .map(|i| (i.layer, i.op, i.ranks.clone()))
            .collect();
        assert_eq!(issued, forward);
        assert!(issued.iter().any(|(_, op, _)| *op == Op::MlpG));
        assert_eq!(fwd.outputs, full.outputs);
        assert_eq!(fwd.saved_elements_per_rank, full.saved_elements_per_rank);
        assert!(fwd.grads.iter().all(|g| g.is_empty()));
    }

    /// The fused passes (a residual add with the LayerNorm after it, a LayerNorm backward with
    /// the residual's gradient) change nothing: a hook that keeps every op separate (it may
    /// round, so nothing is fused) but rounds nothing gives the same outputs and gradients bit
    /// for bit, and the same events.
    #[test]
    fn fused_passes_change_nothing() {
        struct Separate;
        impl Rounding<f64> for Separate {}
        for sp in [false, true] {
            let (cfg, model, shards) = tiny(2, sp);
            let (x, dy, opts) = (&model.input, &model.grad_output, Options::default());
            let fused = run_on_shards_with(&cfg, &shards, x, dy, opts, &Exact);
            let separate = run_on_shards_with(&cfg, &shards, x, dy, opts, &Separate);
            let (Ok(fused), Ok(separate)) = (fused, separate) else {
                panic!("the tiny config runs");
            };
            assert_eq!(fused.outputs, separate.outputs, "sp={sp}");
            assert_eq!(fused.grad_inputs, separate.grad_inputs, "sp={sp}");
            assert_eq!(fused.issued, separate.issued, "sp={sp}");
            for (a, b) in fused
                .grads
                .iter()
                .flatten()
                .zip(separate.grads.iter().flatten())
            {
                for k in crate::params::ParamKind::ALL {
                    assert_eq!(a.get(k), b.get(k), "{k:?} sp={sp}");
                }
            }
        }
    }

    /// Every gradient the walk returns has its parameter's shard shape (none is left 0×0), with
    /// and without sequence parallelism.
    #[test]
    fn every_gradient_is_written() {
        for sp in [false, true] {
            let (cfg, model, shards) = tiny(4, sp);
            let run = run_on_shards(
                &cfg,
                &shards,
                &model.input,
                &model.grad_output,
                Options::default(),
            );
            let Ok(run) = run else {
                panic!("the tiny config runs");
            };
            for (g, p) in run.grads.iter().flatten().zip(shards.iter().flatten()) {
                for k in crate::params::ParamKind::ALL {
                    assert_eq!(g.get(k).dim(), p.get(k).dim(), "{k:?} sp={sp}");
                }
            }
        }
    }
}
