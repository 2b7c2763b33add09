//! `tplab memory`: memory per GPU by term, for the same flags as `tplab plan`.
//!
//! With `--layout` it prints that layout's table; without, one row per (TP, PP) that the shape
//! rules allow, DP filling the rest of the cluster. Training memory is counted under the same
//! stack as `tplab plan` (today's, FlashAttention included, unless its flags turn parts off),
//! so the two commands agree on a layout.

use crate::cli::plan::{
    memory_json, print_header, print_memory, with_inputs, ModelClusterArgs, StackArgs,
};
use clap::Args;
use serde_json::{json, Value};
use std::process::ExitCode;
use tplab_engine::capacity::memory::{self, Layout};
use tplab_engine::capacity::planner;
use tplab_engine::capacity::stack;
use tplab_engine::config::human_bytes;

/// Flags of `tplab memory` (the same as `tplab plan`'s).
#[derive(Args, Debug, Clone, Default)]
pub struct MemoryArgs {
    #[command(flatten)]
    pub common: ModelClusterArgs,
    #[command(flatten)]
    pub stack: StackArgs,
}

pub fn run(args: MemoryArgs) -> anyhow::Result<ExitCode> {
    let common = &args.common;
    let r = common.resolve()?;
    let limit = (r.cluster.gpu.memory_bytes() * memory::USABLE_MEMORY_FRACTION) as u64;
    if let Some(tp) = r.serve_tp {
        // Serving: the same table `tplab plan --serve` prints; the TP size was checked by
        // `resolve` with the rules training uses.
        let tp = if tp == 0 { 1 } else { tp };
        memory::check_serving_tp(&r.model, tp, r.cluster.gpus)?;
        let m = memory::serving_memory(&r.model, tp, 1, r.setup.global_batch, r.setup.seq);
        if common.json {
            outln!(
                "{}",
                super::json_text(
                    "memory",
                    &with_inputs(
                        &r,
                        json!({"tp": tp, "memory_per_gpu_bytes": memory_json(&m, limit)})
                    )
                )?
            );
        } else {
            print_header(&r);
            outln!(
                "\nserving at TP={tp}: {} sequences × {} tokens",
                r.setup.global_batch,
                r.setup.seq
            );
            print_memory(&m, limit);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let st = args.stack.stack(common.no_overlap)?;
    let layouts: Vec<Layout> = match common.fixed_layout() {
        Some(l) => {
            stack::check_layout(&r.model, &r.setup, &r.cluster, &l, &st)?;
            vec![l]
        }
        None => {
            let n = r.cluster.gpus;
            let ep = common.ep.unwrap_or(1);
            let mut v = Vec::new();
            for tp in planner::valid_tp_sizes(&r.model, &r.cluster) {
                for pp in tplab_engine::config::divisors(r.model.layers)
                    .into_iter()
                    .filter(|&p| (n / tp).is_multiple_of(p))
                {
                    let l = Layout {
                        tp,
                        pp,
                        dp: n / (tp * pp),
                        micro_batch: common.micro_batch.unwrap_or(1),
                        sp: common.sp,
                        recompute: common.recompute.unwrap_or_default(),
                        zero: common.zero,
                        ep,
                        etp: common.etp.unwrap_or(0),
                    };
                    // With --ep, the rows whose DP holds it.
                    if memory::check_layout(&r.model, &l).is_ok() {
                        v.push(l);
                    }
                }
            }
            if v.is_empty() {
                // No (TP, PP) row takes this EP: the rule, for the first one.
                let l = Layout {
                    ep,
                    etp: common.etp.unwrap_or(0),
                    ..Layout::new(1, 1, n)
                };
                memory::check_layout(&r.model, &l)?;
            }
            v
        }
    };
    let rows: Vec<(Layout, memory::MemoryBreakdown)> = layouts
        .into_iter()
        .map(|l| {
            let m = stack::training_memory(&r.model, r.setup.seq, r.setup.global_batch, &l, &st);
            (l, m)
        })
        .collect();
    if common.json {
        let v: Vec<Value> = rows
            .iter()
            .map(|(l, m)| {
                json!({"layout": l.label(), "tp": l.tp, "pp": l.pp, "dp": l.dp, "ep": l.ep,
                                 "memory_per_gpu_bytes": memory_json(m, limit)})
            })
            .collect();
        outln!(
            "{}",
            super::json_text("memory", &with_inputs(&r, json!({"layouts": v})))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    print_header(&r);
    outln!("stack    {}", st.label());
    if let [(l, m)] = rows.as_slice() {
        outln!("\nlayout   {}", l.label());
        print_memory(m, limit);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "\nmemory per GPU (training, mixed-precision Adam, ZeRO-{}), {} usable per GPU:",
        common.zero,
        human_bytes(limit)
    );
    outln!(
        "{:<44} {:>11} {:>11} {:>11} {:>11} {:>11}  fits",
        "layout",
        "weights",
        "gradients",
        "optimizer",
        "activations",
        "total"
    );
    for (l, m) in &rows {
        outln!(
            "{:<44} {:>11} {:>11} {:>11} {:>11} {:>11}  {}",
            l.label(),
            human_bytes(m.weights_bytes),
            human_bytes(m.gradients_bytes),
            human_bytes(m.optimizer_bytes),
            human_bytes(m.activations_bytes),
            human_bytes(m.total_bytes),
            if m.total_bytes <= limit { "yes" } else { "NO" }
        );
    }
    Ok(ExitCode::SUCCESS)
}
