//! `tplab pipeline`: a pipeline schedule (GPipe, 1F1B, interleaved 1F1B, ZB-H1) for P stages and
//! M micro-batches: each stage's order, an ASCII timeline, the bubble measured beside its
//! formula, peak activations and the sends between stages.

use clap::Args;
use std::process::ExitCode;
use tplab_engine::pipeline::{self, Costs, PipelineConfig, Schedule, SendKind};

/// The widest ASCII timeline printed (columns); wider ones print the orders instead.
const MAX_TIMELINE_COLUMNS: usize = 160;

/// Ops shown per stage when the orders are printed as lists.
const MAX_LISTED_OPS: usize = 48;

#[derive(Args, Clone, Debug)]
pub struct PipelineArgs {
    /// gpipe, 1f1b, interleaved or zb-h1.
    #[arg(long, default_value = "1f1b")]
    pub schedule: Schedule,
    /// Pipeline stages (P).
    #[arg(long, default_value_t = 4)]
    pub stages: usize,
    /// Micro-batches per step (M).
    #[arg(long, default_value_t = 8)]
    pub microbatches: usize,
    /// Virtual stages per stage (V, interleaved only; default 2 there, 1 otherwise).
    #[arg(long = "virtual")]
    pub virtual_stages: Option<usize>,
    /// Ticks of one forward (per chunk with --virtual).
    #[arg(long, default_value_t = 1)]
    pub cost_f: u64,
    /// Ticks of the input-gradient half of a backward (B in ZB-H1).
    #[arg(long, default_value_t = 1)]
    pub cost_b: u64,
    /// Ticks of the weight-gradient half (W in ZB-H1; unsplit backwards cost both halves).
    #[arg(long, default_value_t = 1)]
    pub cost_w: u64,
    /// One JSON object instead of the text report.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: PipelineArgs) -> anyhow::Result<ExitCode> {
    let virtual_stages = a.virtual_stages.unwrap_or(match a.schedule {
        Schedule::Interleaved => 2,
        _ => 1,
    });
    let cfg = PipelineConfig {
        schedule: a.schedule,
        stages: a.stages,
        microbatches: a.microbatches,
        virtual_stages,
        costs: Costs {
            forward: a.cost_f,
            backward_input: a.cost_b,
            backward_weight: a.cost_w,
        },
    };
    let run = pipeline::run(&cfg)?;
    if a.json {
        outln!("{}", super::json_text("pipeline", &run)?);
        return Ok(ExitCode::SUCCESS);
    }
    let c = cfg.costs;
    let backward = if a.schedule.splits_backward() {
        format!(
            "B {} (input gradient), W {} (weight gradient)",
            c.backward_input, c.backward_weight
        )
    } else {
        format!(
            "B {} (input {} + weight {} gradients)",
            c.backward_input + c.backward_weight,
            c.backward_input,
            c.backward_weight
        )
    };
    let chunks = if virtual_stages > 1 {
        format!(
            ", {virtual_stages} virtual stages (stage s holds model chunks s, s+{}, …)",
            cfg.stages
        )
    } else {
        String::new()
    };
    outln!(
        "tplab pipeline: {}, {} stages, {} micro-batches{chunks}; ticks per op: F {}, {backward}",
        a.schedule.title(),
        cfg.stages,
        cfg.microbatches,
        c.forward
    );
    outln!();
    match run.ascii(MAX_TIMELINE_COLUMNS) {
        Some(t) => {
            outln!("One column per tick (F3 = forward of micro-batch 3{}; -- = still running; . = idle):", if virtual_stages > 1 { " on the stage's chunk after the colon" } else { "" });
            out!("{t}");
        }
        None => {
            outln!(
                "The timeline is {} ticks long, too wide to draw; each stage's order{}:",
                run.makespan,
                if run.stages.iter().any(|s| s.len() > MAX_LISTED_OPS) {
                    format!(" (the first {MAX_LISTED_OPS} ops; --json has them all)")
                } else {
                    String::new()
                }
            );
            for (s, ops) in run.stages.iter().enumerate() {
                let words: Vec<String> = ops
                    .iter()
                    .take(MAX_LISTED_OPS)
                    .map(|o| {
                        if virtual_stages > 1 {
                            format!("{:?}{}:{}", o.op, o.microbatch, o.chunk)
                        } else {
                            format!("{:?}{}", o.op, o.microbatch)
                        }
                    })
                    .collect();
                outln!("  stage {s}: {}", words.join(" "));
            }
        }
    }
    outln!();
    let idle: u64 = cfg.stages as u64 * run.makespan - run.busy_per_stage.iter().sum::<u64>();
    outln!(
        "Bubble (measured): {idle} idle ticks of {} stages × {} ticks = {} = {:.1}%",
        cfg.stages,
        run.makespan,
        run.bubble,
        100.0 * run.bubble_fraction
    );
    match &run.formula {
        Some(f) => outln!(
            "Bubble (formula):  {} = {} = {:.1}% ({}){}",
            f.expression,
            f.fraction,
            100.0 * f.fraction.value(),
            f.source,
            if f.fraction == run.bubble {
                ", equal"
            } else {
                ", DIFFERENT"
            }
        ),
        None => outln!(
            "Bubble (formula):  none for these costs: ZB-H1's closed form needs the W cost at \
             most the F and B costs (a W fills a gap of that size)"
        ),
    }
    let peaks: Vec<String> = run.peak_activations.iter().map(|p| p.to_string()).collect();
    outln!(
        "Peak activations held per stage ({}): {}",
        if virtual_stages > 1 {
            format!("micro-batch × chunk, each 1/{virtual_stages} of a stage's layers")
        } else {
            "micro-batches".to_string()
        },
        peaks.join(", ")
    );
    let count = |k| run.sends.iter().filter(|s| s.kind == k).count();
    outln!(
        "Sends between stages: {} activations forward, {} gradients backward",
        count(SendKind::Activation),
        count(SendKind::Gradient)
    );
    Ok(ExitCode::SUCCESS)
}
