//! Sharding as data: any split of the block is propagated, checked, run and priced.
//!
//! - [`plan`]: a [`ShardingPlan`] (per weight `replicate`/`columns`/`rows`, sequence parallelism,
//!   auto or hand-placed collectives) and the named plans a lesson can cite;
//! - [`program`]: propagation, DTensor-style: each op's placement rules insert the cheapest
//!   redistribution, or name the rule a hand-placed program breaks; the backward is derived;
//! - the executor of any propagated program on virtual GPUs is [`crate::block::exec::design`];
//! - this module: [`design`], which ties them to the unsharded reference and prices the plan
//!   (collectives per layer, bytes each GPU sends, memory per GPU, modeled time, the comparison
//!   with Megatron's plan).

pub mod challenge;
pub mod plan;
pub mod program;
pub mod trace;

pub use plan::{
    ManualCollective, ManualKind, NamedPlan, PlanError, ShardingPlan, Site, Split, Weight,
};
pub use program::{
    propagate, site_of, BackStep, DesignError, ErrorAt, Fix, Move, Norm, Place, Program, Rule,
    Step, Tensor,
};

use crate::block::exec::design as design_exec;
use crate::block::op::Pass;
use crate::block::reference;
use crate::block::verify::{compare, Check, Checked, Tolerance};
use crate::block::work;
use crate::capacity::cost;
use crate::capacity::hardware::Cluster;
use crate::config::{Config, ConfigError};
use crate::dtype::{DType, Element};
use crate::params::{LayerParams, Model, ParamKind};
use ndarray::Array2;
use program::{move_cost, param_layout, ValueId};
use serde::Serialize;
use std::collections::BTreeMap;
use thiserror::Error;

/// Why a design could not be evaluated at all.
#[derive(Debug, Error)]
pub enum DesignRunError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("the program could not run: {0}")]
    Exec(#[from] crate::block::exec::design::ExecError),
}

/// Collectives of one layer by pass and kind: `{"forward": {"all-reduce": 1}, ...}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CollectiveCounts {
    pub forward: BTreeMap<&'static str, usize>,
    pub backward: BTreeMap<&'static str, usize>,
}

impl CollectiveCounts {
    pub fn get(&self, pass: Pass, kind: &str) -> usize {
        let m = match pass {
            Pass::Forward => &self.forward,
            Pass::Backward => &self.backward,
        };
        m.get(kind).copied().unwrap_or(0)
    }
}

/// One communicating step of a layer, priced: the exports' and the learner's view of "where
/// the plan talks, and why".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PricedCollective {
    pub pass: Pass,
    pub kind: &'static str,
    pub tensor: String,
    /// Ranks taking part (a KV-copy group is smaller than the TP group).
    pub group: usize,
    pub elems: u64,
    pub steps: usize,
    pub bytes_sent_per_rank: u64,
    pub time_s: f64,
    pub reason: String,
    /// One of the KV-copy groups' sums (they run side by side).
    #[serde(skip)]
    pub kv_copies: bool,
}

/// What a plan costs per layer and per GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Price {
    pub collectives: CollectiveCounts,
    pub steps: Vec<PricedCollective>,
    /// Bytes the busiest GPU sends per layer, forward and backward.
    pub bytes_sent_per_rank: u64,
    pub bytes_sent_per_rank_forward: u64,
    pub bytes_sent_per_rank_backward: u64,
    /// Parameter bytes each GPU holds (all layers).
    pub weight_bytes_per_gpu: u64,
    /// Activation bytes each GPU keeps for the backward (all layers).
    pub activation_bytes_per_gpu: u64,
    /// Modeled time of a forward and backward pass of all layers.
    pub modeled_time_s: f64,
    pub modeled_compute_s: f64,
    pub modeled_communication_s: f64,
}

/// How a plan compares with Megatron's (same config and sequence-parallel setting).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct VsMegatron {
    /// `None` when Megatron's plan sends nothing (TP = 1).
    pub bytes_ratio: Option<f64>,
    pub time_ratio: Option<f64>,
}

/// One tensor of the run against the reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorError {
    pub tensor: String,
    pub max_rel_error: f64,
    pub passed: bool,
}

/// Everything `tplab design` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DesignReport {
    pub plan: String,
    pub named: Option<&'static str>,
    pub tp: usize,
    pub valid: bool,
    pub errors: Vec<DesignError>,
    /// `None` when the program was not run (refused, and not `allow_wrong`).
    pub equal_to_reference: Option<bool>,
    pub max_rel_error: Option<f64>,
    pub tolerance: f64,
    pub tolerance_reason: String,
    pub per_tensor: Vec<TensorError>,
    #[serde(flatten)]
    pub price: Price,
    pub vs_megatron: VsMegatron,
    #[serde(skip)]
    pub program: Program,
}

/// Options of [`design`].
#[derive(Debug, Clone)]
pub struct DesignOptions {
    /// Run a refused program anyway and report how wrong its numbers are.
    pub allow_wrong: bool,
    /// Run the program against the reference (else only propagate and price).
    pub execute: bool,
}

impl Default for DesignOptions {
    fn default() -> Self {
        Self {
            allow_wrong: false,
            execute: true,
        }
    }
}

/// Local `[rows, cols]` rank 0 holds of value `v`.
fn local_shape(cfg: &Config, p: &Program, v: ValueId) -> [usize; 2] {
    let val = p.value(v);
    let [t, w] = val.tensor.shape(cfg);
    let tp = cfg.tp.max(1);
    match val.place {
        Place::Tokens => [t / tp, w],
        Place::Features if val.tensor == Tensor::Qkv => [t, cfg.qkv_cols_per_rank()],
        Place::Features => [t, w / tp],
        _ => [t, w],
    }
}

fn local_param_elems(cfg: &Config, plan: &ShardingPlan, kind: ParamKind) -> u64 {
    let [r, c] = kind.shape(cfg);
    let tp = cfg.tp.max(1);
    let e = match param_layout(plan, kind) {
        program::ParamLayout::Whole => r * c,
        program::ParamLayout::Rows => (r / tp) * c,
        program::ParamLayout::Columns
            if matches!(kind, ParamKind::QkvWeight | ParamKind::QkvBias) =>
        {
            r * cfg.qkv_cols_per_rank()
        }
        program::ParamLayout::Columns => r * (c / tp),
    };
    e as u64
}

/// Prices a propagated program on `cluster` (the TP group's link; `None`: bytes only).
pub fn price(cfg: &Config, p: &Program, cluster: Option<&Cluster>) -> Price {
    let eb = cfg.dtype.size_bytes() as u64;
    let tp = cfg.tp.max(1);
    let layers = cfg.layers as u64;
    let mut counts = CollectiveCounts::default();
    let mut steps = Vec::new();
    let link = cluster.map(|c| c.group_link(1, tp));
    let comm_time = |mv: Move, n: usize, elems: u64| -> f64 {
        let Some(link) = link else { return 0.0 };
        if n <= 1 {
            return 0.0;
        }
        match mv.collective() {
            Some(kind) => {
                let algorithm = match kind {
                    crate::collectives::CollectiveKind::AllReduce => cfg.algorithm,
                    _ => crate::block::program::gather_scatter_algorithm(cfg),
                };
                cost::collective_time_s(kind, algorithm, n, elems * eb, link).unwrap_or(0.0)
            }
            None => {
                let (st, sent) = move_cost(cfg, mv, n, elems);
                st as f64 * link.latency_us * 1e-6
                    + sent as f64 / (link.bandwidth_bytes_per_s() * cost::LINK_EFFICIENCY)
            }
        }
    };
    let mut record = |pass: Pass,
                      mv: Move,
                      tensor: String,
                      n: usize,
                      elems: u64,
                      reason: String,
                      kv_copies: bool| {
        if !mv.communicates() || n <= 1 {
            return;
        }
        let (st, sent) = move_cost(cfg, mv, n, elems);
        let m = match pass {
            Pass::Forward => &mut counts.forward,
            Pass::Backward => &mut counts.backward,
        };
        *m.entry(mv.name()).or_default() += 1;
        steps.push(PricedCollective {
            pass,
            kind: mv.name(),
            tensor,
            group: n,
            elems,
            steps: st,
            bytes_sent_per_rank: sent,
            time_s: comm_time(mv, n, elems),
            reason,
            kv_copies,
        });
    };
    for s in &p.forward {
        if let Step::Redistribute(r) = s {
            let v = p.value(r.to);
            if !v.mislabelled {
                record(
                    Pass::Forward,
                    r.mv,
                    v.tensor.name().to_string(),
                    tp,
                    v.tensor.elems(cfg) as u64,
                    r.reason.clone(),
                    false,
                );
            }
        }
    }
    for s in &p.backward {
        match s {
            BackStep::GradMove {
                value, mv, reason, ..
            } => {
                let v = p.value(*value);
                record(
                    Pass::Backward,
                    *mv,
                    format!("d{}", v.tensor.name()),
                    tp,
                    v.tensor.elems(cfg) as u64,
                    reason.clone(),
                    false,
                );
            }
            BackStep::Regather { value, .. } => {
                let v = p.value(*value);
                record(
                    Pass::Backward,
                    Move::AllGather,
                    v.tensor.name().to_string(),
                    tp,
                    v.tensor.elems(cfg) as u64,
                    format!(
                        "{} was not kept: gathered again for the weight gradient",
                        v.tensor.name()
                    ),
                    false,
                );
            }
            BackStep::KvGradSum { groups } => {
                let kv_cols = cfg.qkv_cols_per_rank() - cfg.heads_per_rank() * cfg.head_dim();
                let elems = ((cfg.hidden + 1) * kv_cols) as u64;
                for g in groups {
                    record(
                        Pass::Backward,
                        Move::AllReduce,
                        "dW_qkv[K,V]".into(),
                        g.len(),
                        elems,
                        "copies of a KV head sum their gradients".into(),
                        true,
                    );
                }
            }
            BackStep::ParamGradSum { params } => {
                let elems: u64 = params
                    .iter()
                    .map(|k| {
                        let [r, c] = k.shape(cfg);
                        (r * c) as u64
                    })
                    .sum();
                record(
                    Pass::Backward,
                    Move::AllReduce,
                    "parameter gradients".into(),
                    tp,
                    elems,
                    "each GPU's gradients of whole parameters cover only its tokens or its \
                     partial input: summed"
                        .into(),
                    false,
                );
            }
            BackStep::ParamGradGather { param } => {
                let [r, c] = param.shape(cfg);
                record(
                    Pass::Backward,
                    Move::AllGather,
                    format!("grad.{}", param.suffix()),
                    tp,
                    (r * c) as u64,
                    "each GPU added the bias to its columns only".into(),
                    false,
                );
            }
            // Identities cost nothing: nothing moves.
            BackStep::Grad { .. } | BackStep::PassThrough { .. } => {}
        }
    }
    // KV-copy groups run side by side: the busiest GPU sends one group's bytes.
    let mut fwd_bytes = 0u64;
    let mut bwd_bytes = 0u64;
    let mut comm_s = 0.0;
    let mut seen_kv = false;
    for s in &steps {
        if s.kv_copies {
            if seen_kv {
                continue;
            }
            seen_kv = true;
        }
        match s.pass {
            Pass::Forward => fwd_bytes += s.bytes_sent_per_rank,
            Pass::Backward => bwd_bytes += s.bytes_sent_per_rank,
        }
        comm_s += s.time_s;
    }
    // Compute: every op's FLOPs and bytes on GPU 0's local shapes, by the roofline.
    let mut compute_s = 0.0;
    let mut saved: u64 = 0;
    if let Some(c) = cluster {
        let dtype = cfg.dtype;
        let rf =
            |w: work::Work| cost::roofline_s(w.flops as f64, (w.elems * eb) as f64, &c.gpu, dtype);
        for s in &p.forward {
            let (f, b) = match s {
                Step::LayerNorm { x, .. } => {
                    let [t, h] = local_shape(cfg, p, *x);
                    (
                        work::layer_norm(t as u64, h as u64),
                        work::layer_norm_backward(t as u64, h as u64),
                    )
                }
                Step::Linear { x, y, bias, .. } => {
                    let [t, k] = local_shape(cfg, p, *x);
                    let [_, n] = local_shape(cfg, p, *y);
                    (
                        work::linear(t as u64, k as u64, n as u64, *bias),
                        work::linear_backward(t as u64, k as u64, n as u64, *bias),
                    )
                }
                Step::Attention { qkv, .. } => {
                    let hl = if p.value(*qkv).place == Place::Features {
                        cfg.heads_per_rank()
                    } else {
                        cfg.heads
                    };
                    let [t, q] = local_shape(cfg, p, *qkv);
                    let flops = work::attention_flops(
                        (cfg.batch * hl) as u64,
                        (cfg.seq * cfg.seq) as u64,
                        cfg.head_dim() as u64,
                    );
                    let elems =
                        (t * q + t * hl * cfg.head_dim() + 2 * cfg.batch * hl * cfg.seq * cfg.seq)
                            as u64;
                    (
                        work::Work { flops, elems },
                        work::Work {
                            flops: 2 * flops,
                            elems: 2 * elems,
                        },
                    )
                }
                Step::Gelu { a, .. } => {
                    let [t, f] = local_shape(cfg, p, *a);
                    (
                        work::gelu(t as u64, f as u64),
                        work::gelu_backward(t as u64, f as u64),
                    )
                }
                Step::Bias { y, .. } | Step::Residual { y, .. } => {
                    let [t, h] = local_shape(cfg, p, *y);
                    (
                        work::bias_residual(t as u64, h as u64),
                        work::bias_grad(t as u64, h as u64),
                    )
                }
                Step::Redistribute(_) => continue,
            };
            compute_s += rf(f) + rf(b);
        }
    }
    // Activations kept for the backward: what each gradient rule reads, on GPU 0.
    let regathered: Vec<ValueId> = p
        .backward
        .iter()
        .filter_map(|s| match s {
            BackStep::Regather { value, .. } => Some(*value),
            _ => None,
        })
        .collect();
    let kept = |v: ValueId| -> u64 {
        let [r, c] = local_shape(cfg, p, v);
        (r * c) as u64
    };
    for s in &p.forward {
        saved += match s {
            Step::LayerNorm { x, .. } | Step::Gelu { a: x, .. } => kept(*x),
            Step::Linear { x, .. } => {
                if regathered.contains(x) {
                    // Its slice is kept (it is the LayerNorm's output, counted once here).
                    let [r, c] = local_shape(cfg, p, *x);
                    (r * c / cfg.tp.max(1)) as u64
                } else {
                    kept(*x)
                }
            }
            Step::Attention { qkv, .. } => {
                let hl = if p.value(*qkv).place == Place::Features {
                    cfg.heads_per_rank()
                } else {
                    cfg.heads
                };
                kept(*qkv) + (cfg.batch * hl * cfg.seq * cfg.seq) as u64
            }
            _ => 0,
        };
    }
    let weights: u64 = ParamKind::ALL
        .iter()
        .map(|k| local_param_elems(cfg, &p.plan, *k))
        .sum();
    Price {
        collectives: counts,
        steps,
        bytes_sent_per_rank: fwd_bytes + bwd_bytes,
        bytes_sent_per_rank_forward: fwd_bytes,
        bytes_sent_per_rank_backward: bwd_bytes,
        weight_bytes_per_gpu: weights * layers * eb,
        activation_bytes_per_gpu: saved * layers * eb,
        modeled_time_s: (compute_s + comm_s) * layers as f64,
        modeled_compute_s: compute_s * layers as f64,
        modeled_communication_s: comm_s * layers as f64,
    }
}

/// Propagates, prices and (unless refused) runs `plan` on `cfg` against the unsharded
/// reference, in `cfg.dtype` (f32 or f64).
pub fn design(
    cfg: &Config,
    plan: &ShardingPlan,
    cluster: Option<&Cluster>,
    opts: &DesignOptions,
) -> Result<DesignReport, DesignRunError> {
    cfg.validate_shapes()?;
    let program = propagate(cfg, plan);
    let priced = price(cfg, &program, cluster);
    let megatron = ShardingPlan {
        sequence_parallel: plan.sequence_parallel,
        ..NamedPlan::Megatron.plan()
    };
    let meg = price(cfg, &propagate(cfg, &megatron), cluster);
    let ratio = |a: f64, b: f64| (b > 0.0).then(|| a / b);
    let vs_megatron = VsMegatron {
        bytes_ratio: ratio(
            priced.bytes_sent_per_rank as f64,
            meg.bytes_sent_per_rank as f64,
        ),
        time_ratio: ratio(priced.modeled_time_s, meg.modeled_time_s),
    };
    let tol0 = Tolerance::for_config(cfg, cfg.dtype);
    let mut report = DesignReport {
        plan: program.plan.describe(),
        named: plan.named().map(NamedPlan::name),
        tp: cfg.tp,
        valid: program.valid(),
        errors: program.errors.clone(),
        equal_to_reference: None,
        max_rel_error: None,
        tolerance: tol0.relative,
        tolerance_reason: tol0.reason,
        per_tensor: Vec::new(),
        price: priced,
        vs_megatron,
        program,
    };
    if opts.execute && (report.valid || opts.allow_wrong) {
        cfg.validate_for_cpu()?;
        let checks = match cfg.dtype {
            DType::F64 => run_and_compare::<f64>(cfg, &report.program)?,
            _ => run_and_compare::<f32>(cfg, &report.program)?,
        };
        let (tol, checks) = checks;
        report.tolerance = tol.relative;
        report.tolerance_reason = tol.reason;
        report.max_rel_error = checks
            .iter()
            .map(|c| c.max_rel_error)
            .fold(None, |m: Option<f64>, e| Some(m.map_or(e, |m| m.max(e))));
        report.equal_to_reference = Some(report.valid && checks.iter().all(|c| c.passed));
        report.per_tensor = checks
            .into_iter()
            .map(|c| TensorError {
                tensor: c.name,
                max_rel_error: c.max_rel_error,
                passed: c.passed,
            })
            .collect();
    }
    Ok(report)
}

fn widen<T: Element>(a: &Array2<T>) -> Array2<f64> {
    a.mapv(Element::to_f64)
}

/// Runs the program and the reference on the same seeded model and compares, tensor by tensor:
/// the output and input gradient (every GPU's copy, or the joined slices), and every parameter
/// gradient of every layer (joined from the shards; every GPU's copy of a whole one).
fn run_and_compare<T: Element>(
    cfg: &Config,
    program: &Program,
) -> Result<(Tolerance, Vec<Check>), DesignRunError> {
    let cfg = Config {
        dtype: T::DTYPE,
        ..cfg.clone()
    };
    let model = Model::<T>::random(&cfg);
    let want = reference::run(&cfg, &model);
    let got = design_exec::run_program(&cfg, program, &model)?;
    let tol = Tolerance::for_run(&cfg, cfg.dtype, want.layer_norm_condition());
    let checks = compare_program_run(&cfg, program, &got, &want, &tol);
    Ok((tol, checks))
}

/// A run of `program` (any executor's: the CPU walk, the GPU's) against the unsharded
/// reference of the same model, tensor by tensor: the output and input gradient (every GPU's
/// copy, or the joined slices), and every parameter gradient of every layer (joined from the
/// shards; every GPU's copy of a whole one).
pub fn compare_program_run<T: Element, U: Element>(
    cfg: &Config,
    program: &Program,
    got: &design_exec::ProgramRun<T>,
    want: &reference::ReferenceRun<U>,
    tol: &Tolerance,
) -> Vec<Check> {
    let mut checks = Vec::new();
    for (name, what, local, reference) in [
        ("output", Checked::Output, &got.output, &want.output),
        (
            "grad.input",
            Checked::GradInput,
            &got.grad_input,
            &want.grad_input,
        ),
    ] {
        let want = widen(reference);
        let shape = [want.nrows(), want.ncols()];
        let per_rank: Vec<Array2<f64>> = match local.place {
            Place::Replicate => local.ranks.iter().map(widen).collect(),
            _ => {
                let l = design_exec::Local {
                    place: local.place,
                    ranks: local.ranks.iter().map(widen).collect(),
                };
                vec![design_exec::assemble(cfg, &l, shape, false)]
            }
        };
        let worst = per_rank
            .iter()
            .enumerate()
            .map(|(r, g)| compare(name, Some(r), g.view(), want.view(), tol).about(what))
            .max_by(|a, b| a.max_rel_error.total_cmp(&b.max_rel_error));
        checks.extend(worst);
    }
    for (layer, want_layer) in want.grads.iter().enumerate() {
        let want_layer: LayerParams<f64> = want_layer.cast();
        for kind in ParamKind::ALL {
            let layout = param_layout(&program.plan, kind);
            let shards: Vec<Array2<f64>> = got
                .grads
                .iter()
                .filter_map(|ranks| ranks.get(layer))
                .map(|g| widen(g.get(kind)))
                .collect();
            let want_full = want_layer.get(kind);
            let name = format!("grad.{}", kind.name(layer));
            let what = Checked::ParamGrad { layer, kind };
            let check = if layout == program::ParamLayout::Whole {
                shards
                    .iter()
                    .enumerate()
                    .map(|(r, g)| {
                        compare(name.clone(), Some(r), g.view(), want_full.view(), tol).about(what)
                    })
                    .max_by(|a, b| a.max_rel_error.total_cmp(&b.max_rel_error))
            } else {
                let refs: Vec<&Array2<f64>> = shards.iter().collect();
                let full = design_exec::assemble_param(cfg, layout, kind, &refs);
                Some(compare(name, None, full.view(), want_full.view(), tol).about(what))
            };
            checks.extend(check);
        }
    }
    checks
}

#[cfg(test)]
mod tests;
