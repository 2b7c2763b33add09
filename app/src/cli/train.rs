//! `tplab train`: a tiny character-level GPT trained on the guide at several TP sizes in
//! lockstep; the loss curves must coincide.

use super::gpu::progress_bar;
use clap::Args;
use std::io::IsTerminal;
use std::process::ExitCode;
use tplab_engine::train::{self, Corpus, Optimizer, TrainConfig};
use tplab_engine::{Algorithm, DType};

#[derive(Args, Clone, Debug)]
pub struct TrainArgs {
    #[arg(long, default_value_t = 64)]
    pub hidden: usize,
    #[arg(long, default_value_t = 4)]
    pub heads: usize,
    /// Grouped-query attention: KV heads shared by groups of query heads (default: one per head).
    #[arg(long)]
    pub kv_heads: Option<usize>,
    #[arg(long, default_value_t = 256)]
    pub ffn: usize,
    /// Context length in characters.
    #[arg(long, default_value_t = 32)]
    pub seq: usize,
    /// Sequences per step.
    #[arg(long, default_value_t = 4)]
    pub batch: usize,
    #[arg(long, default_value_t = 2)]
    pub layers: usize,
    #[arg(long, default_value_t = 200)]
    pub steps: usize,
    #[arg(long, default_value_t = 3e-3)]
    pub lr: f64,
    /// sgd or adam.
    #[arg(long, default_value = "adam")]
    pub optimizer: Optimizer,
    /// f32 or f64.
    #[arg(long, default_value = "f32")]
    pub dtype: DType,
    /// Comma-separated TP sizes trained side by side (the first is the baseline).
    #[arg(long = "tp", value_delimiter = ',', default_value = "1,2,4")]
    pub tps: Vec<usize>,
    #[arg(long, default_value = "ring")]
    pub algorithm: Algorithm,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print the curves as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: TrainArgs) -> anyhow::Result<ExitCode> {
    let cfg = TrainConfig {
        hidden: a.hidden,
        heads: a.heads,
        kv_heads: a.kv_heads,
        ffn: a.ffn,
        seq: a.seq,
        batch: a.batch,
        layers: a.layers,
        tp: 1,
        dtype: a.dtype,
        steps: a.steps,
        lr: a.lr,
        optimizer: a.optimizer,
        seed: a.seed,
        algorithm: a.algorithm,
    };
    if a.tps.is_empty() {
        anyhow::bail!("give at least one TP size (--tp 1,2,4)");
    }
    let corpus = Corpus::guide();
    let show = std::io::stderr().is_terminal() && !a.json;
    let steps = cfg.steps;
    let mut progress = |step: usize, losses: &[Vec<f64>]| {
        if show {
            let last = losses[0].last().copied().unwrap_or(f64::NAN);
            progress_bar(
                &format!("step {step}/{steps}, loss {last:.4}"),
                step as f64 / steps as f64,
            );
        }
        true
    };
    let curves = match a.dtype {
        DType::F64 => train::train_curves::<f64>(&cfg, &corpus, &a.tps, &mut progress),
        DType::F32 => train::train_curves::<f32>(&cfg, &corpus, &a.tps, &mut progress),
        d => anyhow::bail!("training runs in f32 or f64, not {d}; pass --dtype f32 or f64"),
    };
    let curves = match curves {
        Ok(c) => c,
        Err(e) => {
            if show {
                eprintln!(); // end the progress bar's line before the error
            }
            return Err(e.into());
        }
    };
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&curves)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "tplab train: {} layers, hidden {}, {} heads, ffn {}, seq {}, batch {}, {} steps of {:?} \
         (lr {}), {}; corpus: the guide, {} characters, vocabulary {}",
        cfg.layers,
        cfg.hidden,
        cfg.heads,
        cfg.ffn,
        cfg.seq,
        cfg.batch,
        cfg.steps,
        cfg.optimizer,
        cfg.lr,
        cfg.dtype,
        corpus.ids.len(),
        corpus.vocab()
    );
    out!("\n  step");
    for tp in &curves.tps {
        out!("  {:>12}", format!("loss TP={tp}"));
    }
    outln!();
    let n = curves.losses[0].len();
    let every = (n / 10).max(1);
    for s in (0..n).filter(|s| s % every == 0 || *s == n - 1) {
        out!("  {:>4}", s + 1);
        for c in &curves.losses {
            out!("  {:>12.6}", c[s]);
        }
        outln!();
    }
    let gaps = curves.max_rel_gap();
    outln!();
    for (tp, g) in curves.tps.iter().zip(&gaps).skip(1) {
        outln!(
            "TP={tp} vs TP={}: largest relative gap over {n} steps {g:.2e}",
            curves.tps[0]
        );
    }
    outln!(
        "The split only reorders additions, so the curves differ by rounding; see \
         tplab_engine::train for the argument."
    );
    Ok(ExitCode::SUCCESS)
}
