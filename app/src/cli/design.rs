//! `tplab design`: any split of the block, from a TOML file or flags, propagated, checked against
//! the unsharded reference and priced beside Megatron's plan.

use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use tplab_engine::block::design::{
    self, challenge, DesignOptions, DesignReport, ManualCollective, ManualKind, NamedPlan, Place,
    ShardingPlan, Site, Split, Step,
};
use tplab_engine::block::op::Pass;
use tplab_engine::capacity::models::read_input_file;
use tplab_engine::config::human_bytes;
use tplab_engine::{dtype::DType, overrides::Overrides};

/// A plan file is a few lines; anything larger is not one.
const MAX_PLAN_FILE_BYTES: u64 = 64 * 1024;

#[derive(Args, Clone, Debug)]
pub struct DesignArgs {
    /// A plan file (TOML; see the README's "Design a split"). Flags below override it.
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// A named plan and each weight's split.
    #[command(flatten)]
    pub splits: SplitArgs,
    /// Place the collectives yourself (with --collective); the rules then only check.
    #[arg(long)]
    pub manual: bool,
    /// A collective you place: OP:KIND, e.g. attn.out:all-reduce (repeatable; implies --manual).
    #[arg(long = "collective", value_name = "OP:KIND")]
    pub collectives: Vec<String>,
    /// Run a refused program anyway and report how wrong its outputs and gradients are.
    #[arg(long)]
    pub allow_wrong: bool,
    /// Grade the plan against a design-lab challenge (1-8; its scenario and starting plan, the
    /// flags change the weights it lets you choose). `--challenge 0` lists them.
    #[arg(long, value_name = "N")]
    pub challenge: Option<usize>,
    /// With --challenge: show the hint (a solution found after it earns one star less).
    #[arg(long)]
    pub hint: bool,
    /// The scenario flags `tplab run` takes.
    #[command(flatten)]
    pub scenario: Overrides,
    /// Precision of the CPU run: f32 or f64.
    #[arg(long, default_value = "f32")]
    pub dtype: DType,
    /// Write tensors.safetensors, shards.safetensors and trace.json (the Chrome trace of the
    /// plan's program) into this folder; any plan other than Megatron's adds design.json.
    #[arg(long)]
    pub export: Option<PathBuf>,
    /// One JSON object instead of the text report.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub cluster: super::run::ClusterArgs,
}

/// A plan named on the command line: a named plan, then each weight's split (`tplab design`,
/// `tplab gpu run`).
#[derive(Args, Clone, Debug, Default)]
pub struct SplitArgs {
    /// A named plan: megatron, replicated, rows-then-columns, columns-columns (default megatron).
    #[arg(long)]
    pub plan: Option<String>,
    /// How the QKV projection's weight is split: replicate, columns (by heads) or rows.
    #[arg(long)]
    pub qkv: Option<String>,
    /// How the output projection's weight is split.
    #[arg(long)]
    pub out: Option<String>,
    /// How fc1's weight is split.
    #[arg(long)]
    pub fc1: Option<String>,
    /// How fc2's weight is split.
    #[arg(long)]
    pub fc2: Option<String>,
}

impl SplitArgs {
    /// Whether any of the flags is given.
    pub fn given(&self) -> bool {
        self.plan.is_some() || self.weights().iter().any(|(_, s)| s.is_some())
    }

    fn weights(&self) -> [(design::Weight, &Option<String>); 4] {
        [
            (design::Weight::Qkv, &self.qkv),
            (design::Weight::Out, &self.out),
            (design::Weight::Fc1, &self.fc1),
            (design::Weight::Fc2, &self.fc2),
        ]
    }

    /// `plan` with the named plan's splits (its sequence parallelism and hand-placed
    /// collectives kept), then each weight's flag.
    pub fn apply(&self, mut plan: ShardingPlan) -> anyhow::Result<ShardingPlan> {
        if let Some(name) = &self.plan {
            let base = NamedPlan::parse(name)?.plan();
            plan = ShardingPlan {
                sequence_parallel: plan.sequence_parallel,
                manual: plan.manual,
                ..base
            };
        }
        for (w, s) in self.weights() {
            if let Some(s) = s {
                plan.set_split(w, Split::parse(s)?);
            }
        }
        Ok(plan)
    }
}

/// The plan the arguments describe.
pub fn plan_from_args(args: &DesignArgs) -> anyhow::Result<ShardingPlan> {
    plan_from(args, NamedPlan::Megatron.plan())
}

fn plan_from(args: &DesignArgs, start: ShardingPlan) -> anyhow::Result<ShardingPlan> {
    let mut plan = match &args.file {
        Some(path) => {
            let text = read_input_file(path, "plan TOML", MAX_PLAN_FILE_BYTES)?;
            ShardingPlan::from_toml(&text)
                .with_context(|| format!("reading the plan {}", path.display()))?
        }
        None => start,
    };
    plan = args.splits.apply(plan)?;
    if let Some(sp) = args.scenario.sequence_parallel {
        plan.sequence_parallel = sp;
    }
    if args.manual || !args.collectives.is_empty() {
        let mut list = if args.collectives.is_empty() {
            plan.manual.clone().unwrap_or_default()
        } else {
            Vec::new()
        };
        for c in &args.collectives {
            let (site, kind) = c.split_once(':').ok_or_else(|| {
                anyhow::anyhow!(
                    "--collective {:?}: write OP:KIND, e.g. attn.out:all-reduce",
                    c.chars().take(40).collect::<String>()
                )
            })?;
            list.push(ManualCollective {
                after: Site::parse(site)?,
                kind: ManualKind::parse(kind)?,
            });
        }
        if list.len() > design::plan::MAX_MANUAL {
            anyhow::bail!(design::PlanError::TooManyCollectives(list.len()));
        }
        plan.manual = Some(list);
    }
    Ok(plan)
}

fn place_words(p: Place) -> &'static str {
    match p {
        Place::Replicate => "whole",
        Place::Tokens => "its tokens",
        Place::Features => "its columns",
        Place::Partial => "partial sum",
    }
}

fn print_program(report: &DesignReport) {
    let p = &report.program;
    let v = |id: usize| {
        let val = p.value(id);
        format!("{} ({})", val.tensor.name(), place_words(val.place))
    };
    outln!("\nthe program of one layer, forward");
    for s in &p.forward {
        let line = match s {
            Step::LayerNorm { norm, x, y } => format!(
                "{:<15} {} -> {}",
                match norm {
                    design::program::Norm::Ln1 => "LayerNorm 1",
                    design::program::Norm::Ln2 => "LayerNorm 2",
                },
                v(*x),
                v(*y)
            ),
            Step::Linear { weight, x, y, bias } => format!(
                "{:<15} {} x {} ({}) -> {}{}",
                weight.label(),
                v(*x),
                weight.symbol(),
                p.plan.split(*weight),
                v(*y),
                if *bias {
                    ""
                } else {
                    ", bias added after the sum"
                }
            ),
            Step::Attention { qkv, ctx } => {
                format!("{:<15} {} -> {}", "attention", v(*qkv), v(*ctx))
            }
            Step::Gelu { a, u } => format!("{:<15} {} -> {}", "GeLU", v(*a), v(*u)),
            Step::Bias {
                x, weight, once, ..
            } => format!(
                "{:<15} {} + {}'s bias{}",
                "bias",
                v(*x),
                weight.label(),
                if *once { " (on GPU 0 only)" } else { "" }
            ),
            Step::Residual {
                stream, branch, y, ..
            } => {
                format!(
                    "{:<15} {} + {} -> {}",
                    "residual add",
                    v(*stream),
                    v(*branch),
                    v(*y)
                )
            }
            Step::Redistribute(r) => {
                let to = p.value(r.to);
                if to.mislabelled {
                    format!(
                        "{:<15} {} read as {} (no collective: WRONG)",
                        "",
                        v(r.from),
                        place_words(to.place)
                    )
                } else {
                    format!(
                        "  {:<13} {} -> {}   ({}{})",
                        r.mv.name(),
                        v(r.from),
                        place_words(to.place),
                        if r.manual { "yours" } else { "inserted" },
                        if r.manual {
                            String::new()
                        } else {
                            format!(": {}", r.reason)
                        }
                    )
                }
            }
        };
        outln!("  {line}");
    }
    outln!("backward (derived), its collectives");
    let mut any = false;
    for s in &report.price.steps {
        if s.pass == Pass::Backward {
            any = true;
            outln!(
                "  {:<15} {:<20} {:>10}   {}",
                s.kind,
                s.tensor,
                human_bytes(s.bytes_sent_per_rank),
                s.reason
            );
        }
    }
    if !any {
        outln!("  none");
    }
}

fn counts_line(m: &std::collections::BTreeMap<&'static str, usize>) -> String {
    if m.is_empty() {
        return "none".into();
    }
    m.iter()
        .map(|(k, n)| format!("{n} {k}{}", if *n == 1 { "" } else { "s" }))
        .collect::<Vec<_>>()
        .join(", ")
}

fn list_challenges() {
    for c in challenge::all() {
        outln!("{}. {}\n   {}", c.stage, c.title, c.goal_text);
    }
}

fn run_challenge(args: &DesignArgs, stage: usize) -> anyhow::Result<ExitCode> {
    if stage == 0 {
        list_challenges();
        return Ok(ExitCode::SUCCESS);
    }
    let c = challenge::stage(stage)?;
    let plan = plan_from(args, c.start.clone())?;
    let grade = c.grade(&plan, args.hint)?;
    if args.json {
        outln!("{}", super::json_text("design", &grade)?);
    } else {
        outln!("challenge {}: {}", c.stage, c.title);
        outln!("  goal: {}", c.goal_text);
        outln!(
            "  you choose: {}",
            if c.free.is_empty() {
                "the collectives (--collective OP:KIND)".to_string()
            } else {
                c.free
                    .iter()
                    .map(|w| w.label())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
        if args.hint {
            outln!("  hint: {}", c.hint);
        }
        outln!("  your plan: {}", plan.describe());
        if grade.solved {
            outln!(
                "SOLVED, {} star{} of 3",
                grade.stars,
                if grade.stars == 1 { "" } else { "s" }
            );
            if let Some(why) = grade.why {
                outln!("  why: {why}");
            }
        } else {
            outln!("not yet:");
            for m in &grade.missing {
                outln!("  - {m}");
            }
        }
    }
    Ok(if grade.solved {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub fn run(args: DesignArgs) -> anyhow::Result<ExitCode> {
    if let Some(stage) = args.challenge {
        return run_challenge(&args, stage);
    }
    let plan = plan_from_args(&args)?;
    let cfg = tplab_engine::config::Config {
        dtype: args.dtype,
        sequence_parallel: plan.sequence_parallel,
        ..args.scenario.config()
    };
    cfg.validate_for_cpu()?;
    let cluster = args.cluster.cluster(cfg.tp)?;
    let report = design::design(
        &cfg,
        &plan,
        Some(&cluster),
        &DesignOptions {
            allow_wrong: args.allow_wrong,
            execute: true,
        },
    )?;
    let ok = report.valid && report.equal_to_reference == Some(true);
    if args.json {
        outln!("{}", super::json_text("design", &report)?);
    } else {
        outln!(
            "tplab design: {}{} on {} (TP={}, {}{})",
            report.plan,
            report.named.map_or(String::new(), |n| format!(" ({n})")),
            cfg.label(),
            cfg.tp,
            cfg.dtype,
            if cfg.sequence_parallel {
                ", sequence parallel"
            } else {
                ""
            }
        );
        print_program(&report);
        for e in &report.errors {
            outln!(
                "\nREFUSED: {} pass, layer {}, {} on GPU {} reads {} ({}).",
                e.pass.name(),
                e.layer,
                e.op,
                e.rank,
                e.tensor,
                e.placement
            );
            outln!("  {}", e.rule);
            for f in &e.fixes {
                outln!("  fix: {f}");
            }
        }
        let pr = &report.price;
        outln!(
            "\ncollectives per layer: forward {}; backward {}",
            counts_line(&pr.collectives.forward),
            counts_line(&pr.collectives.backward)
        );
        outln!(
            "each GPU sends {} per layer ({} forward, {} backward)",
            human_bytes(pr.bytes_sent_per_rank),
            human_bytes(pr.bytes_sent_per_rank_forward),
            human_bytes(pr.bytes_sent_per_rank_backward)
        );
        outln!(
            "per GPU: weights {}, activations kept for the backward {}",
            human_bytes(pr.weight_bytes_per_gpu),
            human_bytes(pr.activation_bytes_per_gpu)
        );
        outln!(
            "modeled forward+backward on {} x {}: {:.3} ms ({:.3} ms compute, {:.3} ms communication)",
            cfg.tp,
            cluster.gpu.name,
            pr.modeled_time_s * 1e3,
            pr.modeled_compute_s * 1e3,
            pr.modeled_communication_s * 1e3
        );
        match (
            report.vs_megatron.bytes_ratio,
            report.vs_megatron.time_ratio,
        ) {
            (Some(b), Some(t)) => {
                outln!("against Megatron's plan: {b:.2}x the bytes, {t:.2}x the modeled time")
            }
            _ => outln!("against Megatron's plan: it sends nothing here (TP=1)"),
        }
        match report.equal_to_reference {
            Some(eq) => outln!(
                "\nagainst the unsharded reference: {} (max relative error {:.3e}, tolerance {:.3e})",
                if eq { "EQUAL" } else { "DIFFERENT" },
                report.max_rel_error.unwrap_or(f64::NAN),
                report.tolerance
            ),
            None => outln!(
                "\nnot run: the program is refused (add --allow-wrong to run it anyway and see \
                 how wrong its numbers are)"
            ),
        }
        if report.equal_to_reference == Some(false) {
            for t in report.per_tensor.iter().filter(|t| !t.passed).take(8) {
                outln!("  {:<40} relative error {:.3e}", t.tensor, t.max_rel_error);
            }
        }
    }
    if let Some(dir) = &args.export {
        if report.valid {
            let megatron = plan.named() == Some(NamedPlan::Megatron);
            let paths = if megatron {
                match cfg.dtype {
                    DType::F64 => export_run::<f64>(&cfg, dir)?,
                    _ => export_run::<f32>(&cfg, dir)?,
                }
            } else {
                match cfg.dtype {
                    DType::F64 => tplab_engine::export::export_design::<f64>(&cfg, &report, dir),
                    _ => tplab_engine::export::export_design::<f32>(&cfg, &report, dir),
                }
                .with_context(|| format!("exporting to {}", dir.display()))?
            };
            if !args.json {
                for p in paths {
                    outln!("wrote {}", p.display());
                }
            }
        } else {
            eprintln!("note: a refused program is not exported");
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Megatron's plan exports exactly what `tplab run --export` writes.
fn export_run<T: tplab_engine::dtype::Element>(
    cfg: &tplab_engine::config::Config,
    dir: &std::path::Path,
) -> anyhow::Result<Vec<PathBuf>> {
    let r = tplab_engine::run::run_typed::<T>(cfg, &|_, _| {})?;
    tplab_engine::export::export(&r, dir).with_context(|| format!("exporting to {}", dir.display()))
}
