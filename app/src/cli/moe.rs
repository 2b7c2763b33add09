//! `tplab moe`: a Mixture-of-Experts MLP on EP × ETP virtual GPUs (expert parallelism with its
//! all-to-all dispatch and combine, expert-tensor parallelism inside each expert), checked
//! against the unsharded f64 reference: error, tokens per expert, dropped tokens, and the bytes
//! each collective moves per GPU.

use clap::Args;
use std::process::ExitCode;
use tplab_engine::collectives::Algorithm;
use tplab_engine::config::human_bytes;
use tplab_engine::labs::moe::{self, Gate, MoeConfig, MoeReport};

#[derive(Args, Clone, Debug)]
pub struct MoeArgs {
    /// Number of experts E.
    #[arg(long, default_value_t = 8)]
    pub experts: usize,
    /// Experts each token is sent to (k ≤ E; Mixtral: 2, Switch Transformer: 1).
    #[arg(long = "top-k", default_value_t = 2)]
    pub top_k: usize,
    /// Expert-parallel size: experts and tokens split over this many ranks (E % EP == 0).
    #[arg(long, default_value_t = 4)]
    pub ep: usize,
    /// Expert-tensor-parallel size: each expert's fc1 split by columns, fc2 by rows (FFN % ETP
    /// == 0). The run uses EP × ETP virtual GPUs.
    #[arg(long, default_value_t = 1)]
    pub etp: usize,
    /// Capacity factor C: each expert takes at most ceil(C·k·T/E) tokens, the rest are dropped
    /// in token order. Without it nothing is dropped.
    #[arg(long = "capacity-factor", allow_hyphen_values = true)]
    pub capacity_factor: Option<f64>,
    /// Tokens T (batch × sequence).
    #[arg(long, default_value_t = 64)]
    pub tokens: usize,
    #[arg(long, default_value_t = 32)]
    pub hidden: usize,
    /// Each expert's MLP width.
    #[arg(long, default_value_t = 64)]
    pub ffn: usize,
    /// Gate weights: renormalized (Mixtral: softmax over the top-k) or softmax (Switch).
    #[arg(long, default_value = "renormalized")]
    pub gate: Gate,
    /// All-reduce algorithm (ETP group and router gradient).
    #[arg(long, default_value = "ring")]
    pub algorithm: Algorithm,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Print the report as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

impl MoeArgs {
    fn config(&self) -> MoeConfig {
        MoeConfig {
            tokens: self.tokens,
            hidden: self.hidden,
            ffn: self.ffn,
            experts: self.experts,
            top_k: self.top_k,
            ep: self.ep,
            etp: self.etp,
            capacity_factor: self.capacity_factor,
            gate: self.gate,
            seed: self.seed,
            algorithm: self.algorithm,
        }
    }
}

/// GPUs listed one by one up to this many; beyond, the busiest one.
const MAX_GPU_ROWS: usize = 16;
/// Dropped assignments listed one by one up to this many.
const MAX_DROPPED_LISTED: usize = 12;

fn json(report: &MoeReport) -> serde_json::Value {
    let c = &report.config;
    serde_json::json!({
        "experts": c.experts,
        "top_k": c.top_k,
        "ep": c.ep,
        "etp": c.etp,
        "gpus": c.gpus(),
        "tokens": c.tokens,
        "hidden": c.hidden,
        "ffn": c.ffn,
        "gate": c.gate,
        "capacity_factor": c.capacity_factor,
        "capacity": report.capacity,
        "seed": c.seed,
        "routed_per_expert": report.routing.routed_per_expert,
        "tokens_per_expert": report.routing.tokens_per_expert,
        "dropped": report.routing.dropped,
        "max_rel_error": report.max_rel_error,
        "tolerance": report.tolerance,
        "routing_equal_to_reference": report.routing_equal,
        "equal_to_reference": report.passed(),
        "collectives": report.comms,
    })
}

fn print(report: &MoeReport) {
    let c = &report.config;
    let cap = match c.capacity_factor {
        Some(f) => format!(
            "capacity factor {f} → at most {} tokens per expert (ceil(C·k·T/E))",
            report.capacity
        ),
        None => "no capacity limit".to_string(),
    };
    outln!(
        "MoE MLP: {} tokens, hidden {}, FFN {} per expert, {} experts, top-{} ({} gates), {cap}",
        c.tokens,
        c.hidden,
        c.ffn,
        c.experts,
        c.top_k,
        c.gate.name()
    );
    outln!(
        "{} virtual GPUs: EP {} × ETP {}; EP rank e holds experts e·{}..(e+1)·{} and a shard of \
         the tokens; each ETP rank holds {} of each expert's {} FFN columns (fc1) and rows (fc2)",
        c.gpus(),
        c.ep,
        c.etp,
        c.experts_per_rank(),
        c.experts_per_rank(),
        c.ffn / c.etp.max(1),
        c.ffn
    );
    outln!("\n  expert  EP rank  routed  computed  dropped");
    for j in 0..c.experts {
        let routed = report.routing.routed_per_expert[j];
        let kept = report.routing.tokens_per_expert[j];
        outln!(
            "  {j:>6}  {:>7}  {routed:>6}  {kept:>8}  {:>7}",
            j / c.experts_per_rank().max(1),
            routed - kept
        );
    }
    let dropped = &report.routing.dropped;
    if dropped.is_empty() {
        outln!("\ndropped: none");
    } else {
        let list: Vec<String> = dropped
            .iter()
            .take(MAX_DROPPED_LISTED)
            .map(|d| {
                format!(
                    "token {} → expert {} (choice {})",
                    d.token,
                    d.expert,
                    d.choice + 1
                )
            })
            .collect();
        let more = dropped.len().saturating_sub(MAX_DROPPED_LISTED);
        outln!(
            "\ndropped: {} of {} assignments, in token order (the residual carries them): {}{}",
            dropped.len(),
            c.tokens * c.top_k,
            list.join(", "),
            if more > 0 {
                format!(", and {more} more")
            } else {
                String::new()
            }
        );
    }
    outln!("\nbytes each GPU sends (an all-to-all's rows for the GPU itself stay local):");
    out!(
        "  {:<18} {:<9} {:<11} {:<6}",
        "collective",
        "pass",
        "kind",
        "group"
    );
    let gpus = c.gpus();
    let listed = gpus <= MAX_GPU_ROWS;
    if listed {
        for g in 0..gpus {
            out!(" {:>10}", format!("GPU {g}"));
        }
    } else {
        out!(" {:>10}", "busiest");
    }
    outln!();
    for rec in &report.comms {
        out!(
            "  {:<18} {:<9} {:<11} {:<6}",
            rec.name,
            rec.pass,
            rec.kind,
            rec.group
        );
        if listed {
            for b in &rec.bytes_sent_per_gpu {
                out!(" {:>10}", human_bytes(*b));
            }
        } else {
            out!(" {:>10}", human_bytes(rec.max_bytes_sent()));
        }
        outln!();
    }
    let verdict = if report.passed() { "PASS" } else { "FAIL" };
    outln!(
        "\nagainst the unsharded f64 reference: max relative error {:.1e} over {} tensors \
         (tolerance {:.0e}: reordered sums differ by rounding only); routing and drops {}\n\
         result: {verdict}",
        report.max_rel_error,
        report.checks.len(),
        report.tolerance,
        if report.routing_equal {
            "identical"
        } else {
            "DIFFER"
        }
    );
}

pub fn run(args: MoeArgs) -> anyhow::Result<ExitCode> {
    let report = moe::run(&args.config())?;
    if args.json {
        outln!("{}", super::json_text("moe", &json(&report))?);
    } else {
        print(&report);
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
