//! One call: the sharded pass on virtual GPUs, the reference, their comparison and the trace.

use crate::block::exec::sharded::{self, ShardedRun};
use crate::block::plan::ShardPlan;
use crate::block::reference::{self, ReferenceRun};
use crate::block::verify::{compare, error_matrix, Check, Tolerance, Verification};
use crate::block::Op;
use crate::collectives::CollectiveError;
use crate::config::{Config, ConfigError};
use crate::dtype::{DType, Element};
use crate::params::{LayerParams, Model};
use crate::{block::op::Pass, block::program::schedule, trace::Trace};
use ndarray::Array2;
use thiserror::Error;

/// Why a run could not happen.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum EngineError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("collective failed: {0}")]
    Collective(#[from] CollectiveError),
    #[error(transparent)]
    Exec(#[from] crate::block::exec::design::ExecError),
    #[error(transparent)]
    Trace(#[from] crate::block::program::TraceError),
    #[error("export failed: {0}")]
    Export(String),
}

/// One all-reduce seen from every rank, in f64 for display.
#[derive(Debug, Clone)]
pub struct CollectiveView {
    /// Index of the collective's event in the trace.
    pub event_index: usize,
    pub layer: usize,
    pub pass: Pass,
    pub op: Op,
    /// Each rank's partial input before the all-reduce.
    pub partials: Vec<Array2<f64>>,
    /// The reduced result after it (identical on every rank).
    pub result: Array2<f64>,
    /// The same quantity in the reference.
    pub reference: Array2<f64>,
    pub check: Check,
    pub max_rank_disagreement: f64,
}

/// What the app and the CLI show of a run.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub config: Config,
    pub plan: ShardPlan,
    pub trace: Trace,
    pub verification: Verification,
    pub collectives: Vec<CollectiveView>,
    /// The block stack's output (rank 0's copy) and the reference's, in f64.
    pub output: Array2<f64>,
    pub reference_output: Array2<f64>,
    /// `|output − reference|` elementwise.
    pub output_error: Array2<f64>,
}

/// A typed run: the model, both executors' results and the report (used by exports).
#[derive(Debug, Clone)]
pub struct Run<T> {
    pub model: Model<T>,
    pub reference: ReferenceRun<T>,
    pub sharded: ShardedRun<T>,
    pub report: RunReport,
}

/// Progress of a run: a stage name and the fraction done.
pub type Progress<'a> = &'a (dyn Fn(&str, f32) + Sync);

fn to_f64<T: Element>(a: &Array2<T>) -> Array2<f64> {
    a.mapv(Element::to_f64)
}

/// Runs `cfg` in its dtype (f32 or f64) and returns the report.
pub fn run(cfg: &Config) -> Result<RunReport, EngineError> {
    run_with_progress(cfg, &|_, _| {})
}

/// [`run`], reporting progress.
pub fn run_with_progress(cfg: &Config, progress: Progress<'_>) -> Result<RunReport, EngineError> {
    cfg.validate_for_cpu()?;
    Ok(match cfg.dtype {
        DType::F64 => run_typed::<f64>(cfg, progress)?.report,
        _ => run_typed::<f32>(cfg, progress)?.report,
    })
}

/// Runs `cfg` computing in `T` (its `dtype` field is overridden to `T`'s).
pub fn run_typed<T: Element>(cfg: &Config, progress: Progress<'_>) -> Result<Run<T>, EngineError> {
    let cfg = Config {
        dtype: T::DTYPE,
        ..cfg.clone()
    };
    cfg.validate_for_cpu()?;
    progress("weights", 0.0);
    let model = Model::<T>::random(&cfg);
    let plan = ShardPlan::new(&cfg);
    progress("reference", 0.1);
    let reference = reference::run(&cfg, &model);
    progress("sharded", 0.45);
    let sharded = sharded::run(&cfg, &plan, &model)?;
    progress("verify", 0.85);
    let trace = schedule(&cfg)?;
    let kappa = reference.layer_norm_condition();
    let tol = Tolerance::for_run(&cfg, cfg.dtype, kappa);
    let output = to_f64(&sharded.output());
    let reference_output = to_f64(&reference.output);
    let reference_grad_input = to_f64(&reference.grad_input);
    let outputs: Vec<Array2<f64>> = sharded.outputs.iter().map(to_f64).collect();
    let grad_inputs: Vec<Array2<f64>> = sharded.grad_inputs.iter().map(to_f64).collect();
    let grads: Vec<Vec<LayerParams<f64>>> = sharded
        .grads
        .iter()
        .map(|layers| layers.iter().map(LayerParams::cast).collect())
        .collect();
    let reference_grads: Vec<LayerParams<f64>> =
        reference.grads.iter().map(LayerParams::cast).collect();
    let mut checks = crate::block::verify::check_outputs(
        &cfg,
        crate::block::verify::Outputs {
            output_per_rank: &outputs,
            grad_input_per_rank: &grad_inputs,
            grads: &grads,
        },
        crate::block::verify::Expected {
            output: &reference_output,
            grad_input: &reference_grad_input,
            grads: &reference_grads,
            layer_norm_condition: kappa,
        },
        &tol,
    );
    let mut collectives = Vec::new();
    for c in &sharded.collectives {
        // The four activation collectives are recorded: the g of each half forward and the f
        // of each half backward.
        let want = match c.op {
            Op::AttnG => &reference.caches[c.layer].attn_proj,
            Op::MlpG => &reference.caches[c.layer].mlp_proj,
            Op::MlpFBwd => &reference.backward[c.layer].d_ln2,
            Op::AttnFBwd => &reference.backward[c.layer].d_ln1,
            _ => continue,
        };
        let want = to_f64(want);
        let result = to_f64(&c.result);
        let check = compare(
            format!("layers.{}.{}", c.layer, c.op),
            None,
            result.view(),
            want.view(),
            &tol,
        )
        .about(crate::block::verify::Checked::OpResult {
            layer: c.layer,
            op: c.op,
        });
        checks.push(check.clone());
        let event_index = trace
            .events
            .iter()
            .position(|e| e.layer == c.layer && e.pass == c.pass && e.op == c.op)
            .unwrap_or(0);
        collectives.push(CollectiveView {
            event_index,
            layer: c.layer,
            pass: c.pass,
            op: c.op,
            partials: c.partials.iter().map(to_f64).collect(),
            result,
            reference: want,
            check,
            max_rank_disagreement: c.max_rank_disagreement,
        });
    }
    let output_error = error_matrix(output.view(), reference_output.view());
    let report = RunReport {
        config: cfg.clone(),
        plan,
        trace,
        verification: Verification {
            tolerance: tol,
            checks,
        },
        collectives,
        output,
        reference_output,
        output_error,
    };
    progress("done", 1.0);
    Ok(Run {
        model,
        reference,
        sharded,
        report,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Preset;
    use crate::params::ParamKind;

    type Issue = (usize, Pass, Op, Vec<usize>);

    /// What the executor issued and what its program's trace planned: (layer, pass, op, ranks)
    /// each. The program is Megatron's plan propagated; its trace has the report's trace's
    /// communicating collectives and compute events (`megatrons_plan_traces_megatrons_collectives`),
    /// without the identity halves of f and g the report draws.
    fn issued_and_planned<T: Element>(run: &Run<T>) -> (Vec<Issue>, Vec<Issue>) {
        let issued = run
            .sharded
            .issued
            .iter()
            .map(|i| (i.layer, i.pass, i.op, i.ranks.clone()))
            .collect();
        let cfg = &run.report.config;
        let trace =
            crate::block::design::trace::trace(cfg, &crate::block::exec::sharded::program(cfg));
        let planned = trace
            .map(|t| {
                t.events
                    .iter()
                    .map(|e| (e.layer, e.pass, e.op, e.ranks.clone()))
                    .collect()
            })
            .unwrap_or_default();
        (issued, planned)
    }

    #[test]
    fn tiny_f64_agrees_to_1e12_and_issues_the_trace_order() {
        for tp in [1, 2, 4] {
            let cfg = Config {
                tp,
                layers: 2,
                ..Preset::Tiny.config()
            };
            let run = run_typed::<f64>(&cfg, &|_, _| {}).unwrap();
            let v = &run.report.verification;
            assert!(v.passed(), "{:?}", v.failures().collect::<Vec<_>>());
            let worst = v.worst().unwrap();
            assert!(worst.max_rel_error < 1e-12, "{worst:?}");
            let (issued, planned) = issued_and_planned(&run);
            assert_eq!(issued, planned);
            assert_eq!(run.report.collectives.len(), 8);
        }
    }

    #[test]
    fn sequence_parallel_matches_the_reference_with_gathers_and_scatters() {
        use crate::collectives::CollectiveKind as K;
        for tp in [2, 4] {
            let cfg = Config {
                tp,
                layers: 2,
                sequence_parallel: true,
                ..Preset::Tiny.config()
            };
            let run = run_typed::<f64>(&cfg, &|_, _| {}).unwrap();
            let v = &run.report.verification;
            assert!(v.passed(), "{:?}", v.failures().collect::<Vec<_>>());
            assert!(v.worst().unwrap().max_rel_error < 1e-12);
            let issued: Vec<_> = run.sharded.issued.iter().map(|i| i.op).collect();
            let planned: Vec<_> = run.report.trace.events.iter().map(|e| e.op).collect();
            assert_eq!(issued, planned);
            // Per layer: forward f = all-gather, g = reduce-scatter (twice); backward g = all-gather,
            // the two extra all-gathers for the weight gradients, f = reduce-scatter, and one
            // all-reduce of the LayerNorm and bias gradients. No all-reduce of activations.
            let kinds = |op: Op| -> Vec<K> {
                let trace = &run.report.trace;
                trace
                    .events
                    .iter()
                    .filter(|e| e.layer == 0 && e.op == op)
                    .filter_map(|e| e.collective_kind())
                    .collect()
            };
            for (op, kind) in [
                (Op::AttnF, K::AllGather),
                (Op::AttnG, K::ReduceScatter),
                (Op::MlpF, K::AllGather),
                (Op::MlpG, K::ReduceScatter),
                (Op::MlpGBwd, K::AllGather),
                (Op::MlpFBwdGather, K::AllGather),
                (Op::MlpFBwd, K::ReduceScatter),
                (Op::AttnGBwd, K::AllGather),
                (Op::AttnFBwdGather, K::AllGather),
                (Op::AttnFBwd, K::ReduceScatter),
                (Op::SpGrads, K::AllReduce),
            ] {
                assert_eq!(kinds(op), vec![kind], "{op}");
            }
            // Each rank holds only its token rows outside the TP regions.
            let t = cfg.tokens();
            assert!(run.sharded.outputs.iter().all(|o| o.nrows() == t / tp));
            assert_eq!(run.report.collectives.len(), 4 * cfg.layers);
        }
    }

    #[test]
    fn sequence_parallel_forward_equals_the_all_reduce_forward_bit_for_bit() {
        // A ring all-reduce is a reduce-scatter then an all-gather: the same additions in the same
        // order, so the forward output cannot change by a bit (the backward's LayerNorm and bias
        // gradients are summed in a different order and may).
        let cfg = Config {
            tp: 4,
            dtype: DType::F32,
            ..Preset::Tiny.config()
        };
        let plain = run_typed::<f32>(&cfg, &|_, _| {}).unwrap();
        let sp_cfg = Config {
            sequence_parallel: true,
            ..cfg.clone()
        };
        let sp = run_typed::<f32>(&sp_cfg, &|_, _| {}).unwrap();
        assert_eq!(plain.sharded.output(), sp.sharded.output());
        assert!(sp.report.verification.passed());
    }

    #[test]
    fn the_memory_model_counts_what_the_executor_saves_and_sp_divides_it_by_tp() {
        for sequence_parallel in [false, true] {
            let base = Config {
                sequence_parallel,
                layers: 2,
                ..Preset::Tiny.config()
            };
            let mut per_tp = Vec::new();
            for tp in [1, 2, 4] {
                let cfg = Config { tp, ..base.clone() };
                let run = run_typed::<f64>(&cfg, &|_, _| {}).unwrap();
                let modeled =
                    crate::capacity::memory::config_memory(&cfg).activations_bytes_per_rank;
                for &n in &run.sharded.saved_elements_per_rank {
                    assert_eq!(n as u64 * 8, modeled, "tp={tp} sp={sequence_parallel}");
                }
                per_tp.push(modeled);
            }
            if sequence_parallel {
                // Everything is split: TP=4 keeps exactly a quarter (Korthikanti et al.'s sbh·34/t).
                assert_eq!(per_tp[2] * 4, per_tp[0]);
            } else {
                assert!(per_tp[2] * 4 > per_tp[0]);
            }
        }
    }

    /// Grouped-query attention, 8 query heads and 2 KV heads: TP=2 splits whole KV heads
    /// (Megatron-LM), TP=4 and 8 replicate each KV head on 2 and 4 ranks (vLLM) and all-reduce the
    /// copies' gradients within each group. Every rank's gradient equals the slice of the
    /// reference's, the executor issues the trace's events, and the memory model counts what it
    /// saves.
    #[test]
    fn grouped_query_attention_split_and_replicated_matches_the_reference() {
        for (tp, groups) in [(1, 0), (2, 0), (4, 2), (8, 2)] {
            for sequence_parallel in [false, true] {
                let cfg = Config {
                    hidden: 32,
                    heads: 8,
                    kv_heads: Some(2),
                    ffn: 64,
                    tp,
                    layers: 2,
                    sequence_parallel,
                    ..Preset::Tiny.config()
                };
                let run = run_typed::<f64>(&cfg, &|_, _| {}).unwrap();
                let v = &run.report.verification;
                assert!(v.passed(), "{:?}", v.failures().collect::<Vec<_>>());
                assert!(v.worst().unwrap().max_rel_error < 1e-12, "tp={tp}");
                let (issued, planned) = issued_and_planned(&run);
                assert_eq!(issued, planned);
                let kv_grads = planned
                    .iter()
                    .filter(|e| e.0 == 0 && e.2 == Op::KvGrads)
                    .count();
                assert_eq!(kv_grads, groups, "tp={tp}");
                let modeled =
                    crate::capacity::memory::config_memory(&cfg).activations_bytes_per_rank;
                for &n in &run.sharded.saved_elements_per_rank {
                    assert_eq!(n as u64 * 8, modeled, "tp={tp}");
                }
                // Replicated copies end the step with identical gradients.
                if groups > 0 {
                    let g = |r: usize| run.sharded.grads[r][0].qkv_w.clone();
                    let q = cfg.heads_per_rank() * cfg.head_dim();
                    let kv = |r: usize| g(r).slice(ndarray::s![.., q..]).to_owned();
                    assert_eq!(kv(0), kv(1));
                }
            }
        }
    }

    #[test]
    fn grouped_query_attention_rules_name_megatron_and_vllm() {
        let cfg = Config {
            hidden: 96,
            heads: 12,
            kv_heads: Some(4),
            ffn: 384,
            tp: 6,
            ..Preset::Tiny.config()
        };
        let err = cfg.validate().unwrap_err().to_string();
        assert_eq!(
            err,
            "4 KV heads cannot be spread over 6 GPUs: each GPU needs whole KV heads \
             (kv_heads % tp == 0) or an equal share of one (tp % kv_heads == 0: vLLM and tplab \
             replicate the KV weights, current Megatron-Core all-gathers the QKV activations; \
             older Megatron-LM allowed only the first); neither holds; valid TP sizes: 1, 2, 4, 12"
        );
        let cfg = Config {
            kv_heads: Some(5),
            tp: 1,
            ..cfg
        };
        let err = cfg.validate().unwrap_err().to_string();
        assert!(err.contains("heads % kv_heads == 0"), "{err}");
        assert!(err.contains("1, 2, 3, 4, 6, 12"), "{err}");
    }

    #[test]
    fn a_wrong_shard_is_caught() {
        let cfg = Preset::Tiny.config();
        let mut run = run_typed::<f64>(&cfg, &|_, _| {}).unwrap();
        // Perturb one rank's weight gradient and re-compare: the check must fail.
        let g = &mut run.sharded.grads[1][0].fc1_w;
        g[(0, 0)] += 1e-6;
        let tol = Tolerance::for_config(&cfg, DType::F64);
        let want = run
            .report
            .plan
            .param(ParamKind::Fc1Weight)
            .extract(run.reference.grads[0].fc1_w.view(), 1);
        assert!(!compare("x", Some(1), g.view(), want.view(), &tol).passed);
    }
}
