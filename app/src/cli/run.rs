//! `tplab run`: a scenario on virtual GPUs, its op/collective table and the verification.

use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use tplab_engine::block::verify::Checked;
use tplab_engine::capacity::hardware::{Catalogue, Cluster};
use tplab_engine::capacity::{cost, defaults};
use tplab_engine::config::human_bytes;
use tplab_engine::{
    block::op::Pass,
    trace::{EventKind, Trace},
};
use tplab_engine::{dtype::DType, dtype::Element, overrides::Overrides, run};

#[derive(Args, Clone, Debug)]
pub struct RunArgs {
    /// The scenario flags: a preset, then the fields that differ (one type with the lessons'
    /// Show me targets).
    #[command(flatten)]
    pub scenario: Overrides,
    /// Precision of the CPU run: f32 or f64.
    #[arg(long, default_value = "f32")]
    pub dtype: DType,
    /// Write tensors.safetensors, shards.safetensors and trace.json into this folder.
    #[arg(long)]
    pub export: Option<PathBuf>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// The machine whose cost model times a scenario (`run`, `design`).
#[derive(Args, Clone, Debug)]
pub struct ClusterArgs {
    /// GPU whose cost model times the trace (v100, a100, h100, h200, b200, ...).
    #[arg(long, default_value = "h100")]
    pub gpu: String,
    /// GPUs per NVLink node: a TP group larger than this pays the inter-node link.
    #[arg(long, default_value_t = 8)]
    pub gpus_per_node: usize,
    /// Link between nodes: ib200, ib400, ... (default: the GPU's own node's, as every
    /// command: ib200 for A100s, ib400 otherwise).
    #[arg(long)]
    pub inter_node: Option<String>,
}

impl ClusterArgs {
    /// The cluster for a TP group of `tp` GPUs.
    pub fn cluster(&self, tp: usize) -> anyhow::Result<Cluster> {
        let catalogue = Catalogue::default();
        let inter = defaults::inter_node(&catalogue, &self.gpu, self.inter_node.as_deref())?;
        Ok(Cluster::covering(
            &catalogue,
            &self.gpu,
            tp,
            self.gpus_per_node,
            &inter,
        )?)
    }
}

/// Prints the op/collective table of every layer and pass.
pub fn print_trace_table(trace: &Trace) {
    let cfg = &trace.config;
    for pass in [Pass::Forward, Pass::Backward] {
        for layer in 0..cfg.layers {
            outln!("\nlayer {layer}, {} pass", pass.name());
            outln!(
                "  {:<24} {:<42} {:>10} {:>12} {:>11} {:>11} {:>10}",
                "op",
                "kind",
                "out/rank",
                "GFLOP/rank",
                "bytes/rank",
                "sent/rank",
                "time µs"
            );
            for e in trace.layer_events(layer, pass) {
                // Compute events repeat per rank with the same shapes: print rank 0's.
                if !e.is_collective() && e.ranks[0] != 0 {
                    continue;
                }
                let kind = match &e.kind {
                    EventKind::Compute { op, parallel } => {
                        format!("{} ({})", op.label(), parallel.label())
                    }
                    EventKind::Collective {
                        kind,
                        algorithm,
                        steps,
                    } => {
                        let op = e
                            .conjugate
                            .map_or(String::new(), |c| format!("{}: ", c.name()));
                        if *steps > 0 {
                            format!("{op}{} {algorithm} {steps}st", kind.name())
                        } else {
                            format!("{op}{}", kind.name())
                        }
                    }
                };
                outln!(
                    "  {:<24} {:<42} {:>10} {:>12.4} {:>11} {:>11} {:>10.2}",
                    e.name(),
                    kind,
                    format!("{}x{}", e.output[0], e.output[1]),
                    e.flops as f64 / 1e9,
                    human_bytes(e.bytes),
                    if e.is_collective() {
                        human_bytes(e.bytes_sent_per_rank)
                    } else {
                        "-".into()
                    },
                    e.timing.duration_s * 1e6,
                );
            }
        }
    }
    let whole = trace.collective_counts(None);
    outln!(
        "\nall-reduces per layer: {} (f and g, Megatron-LM); whole run: {}",
        trace.collective_counts(Some(0)).describe(),
        whole.forward_all_reduce + whole.backward_all_reduce + whole.kv_copy_grad_all_reduce
    );
    let c = trace.collective_counts(Some(0));
    if c.forward_other + c.backward_other > 0 {
        outln!(
            "sequence parallel: the backward all-reduce sums the LayerNorm and bias gradients of \
             each rank's tokens"
        );
    }
}

fn run_typed<T: Element>(
    cfg: &tplab_engine::config::Config,
    args: &RunArgs,
) -> anyhow::Result<bool> {
    let cluster = args.cluster.cluster(cfg.tp)?;
    let mut r = run::run_typed::<T>(cfg, &|_, _| {})?;
    cost::apply_to_trace(&mut r.report.trace, &cluster);
    let export = args.export.as_ref();
    let report = &r.report;
    outln!(
        "tplab run: {} (hidden {}, {} heads, ffn {}, seq {}, batch {}, {} layer(s), TP={}, {}, {} all-reduce{})",
        cfg.label(), cfg.hidden, cfg.heads, cfg.ffn, cfg.seq, cfg.batch, cfg.layers, cfg.tp, cfg.dtype, cfg.algorithm,
        if cfg.sequence_parallel { ", sequence parallel" } else { "" }
    );
    if let Some(note) = cfg.gqa_note() {
        outln!("{note}");
    }
    print_trace_table(&report.trace);
    outln!(
        "times: tplab cost model for {} × {} ({} GPUs per node, {} between nodes); modeled step {:.3} ms",
        cfg.tp,
        cluster.gpu.name,
        cluster.gpus_per_node,
        cluster.inter_node.name,
        report.trace.makespan_s() * 1e3
    );
    let v = &report.verification;
    outln!("\nverification against the unsharded CPU reference");
    outln!(
        "  tolerance: max|Δ| ≤ {:.3e} × max(max|ref|, 1)",
        v.tolerance.relative
    );
    outln!("  because:   {}", v.tolerance.reason);
    for c in &report.collectives {
        outln!(
            "  {:<5} L{} {:<10} partials on {} ranks -> max|Δ| {:.3e} (rel {:.3e}) {}",
            if c.pass == Pass::Forward {
                "fwd"
            } else {
                "bwd"
            },
            c.layer,
            c.op,
            c.partials.len(),
            c.check.max_abs_error,
            c.check.max_rel_error,
            if c.check.passed { "ok" } else { "FAIL" }
        );
    }
    for (name, what) in [
        ("output", Checked::Output),
        ("grad.input", Checked::GradInput),
    ] {
        if let Some(c) = v
            .checks
            .iter()
            .filter(|c| c.what == what)
            .max_by(|a, b| a.max_rel_error.total_cmp(&b.max_rel_error))
        {
            outln!(
                "  {:<22} max|Δ| {:.3e} (rel {:.3e}) {}",
                name,
                c.max_abs_error,
                c.max_rel_error,
                if c.passed { "ok" } else { "FAIL" }
            );
        }
    }
    let grads: Vec<_> = v
        .checks
        .iter()
        .filter(|c| matches!(c.what, Checked::ParamGrad { .. }))
        .collect();
    if let Some(w) = grads
        .iter()
        .max_by(|a, b| a.max_rel_error.total_cmp(&b.max_rel_error))
    {
        outln!(
            "  {} weight-gradient shards, worst {} on rank {}: rel {:.3e}",
            grads.len(),
            w.name,
            w.rank.unwrap_or(0),
            w.max_rel_error
        );
    }
    let passed = v.passed();
    outln!(
        "  result: {} ({} checks, {} failed)",
        if passed { "PASS" } else { "FAIL" },
        v.checks.len(),
        v.failures().count()
    );
    if let Some(dir) = export {
        let paths = tplab_engine::export::export(&r, dir)
            .with_context(|| format!("exporting to {}", dir.display()))?;
        for p in paths {
            outln!("wrote {}", p.display());
        }
    }
    Ok(passed)
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let cfg = tplab_engine::config::Config {
        dtype: args.dtype,
        ..args.scenario.config()
    };
    cfg.validate_for_cpu()?;
    let passed = match cfg.dtype {
        DType::F64 => run_typed::<f64>(&cfg, &args)?,
        _ => run_typed::<f32>(&cfg, &args)?,
    };
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
