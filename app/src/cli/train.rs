//! `tplab train`: a tiny character-level GPT trained on the guide at several TP sizes in
//! lockstep; the loss curves must coincide. With `--pp`, `--dp`, `--schedule` or
//! `--microbatches`: the same model on TP × PP × DP virtual GPUs, micro-batches in the
//! schedule's order, beside one GPU ([`tplab_engine::labs::train3d`]).

use super::gpu::progress_bar;
use clap::Args;
use std::io::IsTerminal;
use std::process::ExitCode;
use tplab_engine::labs::train::{self, Corpus, Optimizer, TrainConfig};
use tplab_engine::labs::train3d::{self, Layout};
use tplab_engine::pipeline::Schedule;
use tplab_engine::{collectives::Algorithm, dtype::DType};

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
    /// Comma-separated TP sizes trained side by side (the first is the baseline; default 1,2,4).
    /// With a 3D run, the one TP size of each pipeline stage (default 1).
    #[arg(long = "tp", value_delimiter = ',')]
    pub tps: Vec<usize>,
    /// Pipeline stages: a 3D run (TP × PP × DP virtual GPUs) beside one GPU (default 1).
    #[arg(long)]
    pub pp: Option<usize>,
    /// Data-parallel replicas of the 3D run (default 1).
    #[arg(long)]
    pub dp: Option<usize>,
    /// The 3D run's pipeline schedule: gpipe, 1f1b, interleaved or zb-h1 (default 1f1b).
    #[arg(long)]
    pub schedule: Option<Schedule>,
    /// Micro-batches per replica and step in the 3D run (default: the pipeline stages).
    #[arg(long)]
    pub microbatches: Option<usize>,
    /// Virtual stages per pipeline stage (interleaved only; default 2 there).
    #[arg(long = "virtual")]
    pub virtual_stages: Option<usize>,
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
    let three_d = a.pp.is_some()
        || a.dp.is_some()
        || a.schedule.is_some()
        || a.microbatches.is_some()
        || a.virtual_stages.is_some();
    if three_d {
        return run_3d(&a, &cfg);
    }
    let tps = if a.tps.is_empty() {
        vec![1, 2, 4]
    } else {
        // Each TP size trains a model of its own, side by side.
        super::check_list("--tp", &a.tps, 8)?;
        a.tps.clone()
    };
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
        DType::F64 => train::train_curves::<f64>(&cfg, &corpus, &tps, &mut progress),
        DType::F32 => train::train_curves::<f32>(&cfg, &corpus, &tps, &mut progress),
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
        outln!("{}", super::json_text("train", &curves)?);
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
         tplab_engine::labs::train for the argument."
    );
    Ok(ExitCode::SUCCESS)
}

/// The 3D run beside one GPU: the two loss curves and their largest gap.
fn run_3d(a: &TrainArgs, cfg: &TrainConfig) -> anyhow::Result<ExitCode> {
    let tp = match a.tps.as_slice() {
        [] => 1,
        [tp] => *tp,
        _ => anyhow::bail!(
            "a 3D run takes one TP size (e.g. --tp 2), not a list; lists compare TP sizes \
             without --pp/--dp/--schedule"
        ),
    };
    let pp = a.pp.unwrap_or(1);
    let schedule = a.schedule.unwrap_or(Schedule::OneFOneB);
    let layout = Layout {
        tp,
        pp,
        dp: a.dp.unwrap_or(1),
        schedule,
        microbatches: a.microbatches.unwrap_or(pp.max(1)),
        virtual_stages: a.virtual_stages.unwrap_or(match schedule {
            Schedule::Interleaved => 2,
            _ => 1,
        }),
    };
    let corpus = Corpus::guide();
    let show = std::io::stderr().is_terminal() && !a.json;
    let steps = cfg.steps;
    let mut progress = |step: usize, _: f64, loss: f64| {
        if show {
            progress_bar(
                &format!("step {step}/{steps}, loss {loss:.4}"),
                step as f64 / steps as f64,
            );
        }
        true
    };
    let cmp = match cfg.dtype {
        DType::F64 => train3d::compare::<f64>(cfg, layout, &corpus, &mut progress),
        DType::F32 => train3d::compare::<f32>(cfg, layout, &corpus, &mut progress),
        d => anyhow::bail!("training runs in f32 or f64, not {d}; pass --dtype f32 or f64"),
    };
    let cmp = match cmp {
        Ok(c) => c,
        Err(e) => {
            if show {
                eprintln!();
            }
            return Err(e.into());
        }
    };
    if a.json {
        outln!("{}", super::json_text("train", &cmp)?);
        return Ok(ExitCode::SUCCESS);
    }
    let l = cmp.layout;
    outln!(
        "tplab train, 3D: TP {} × PP {} × DP {} = {} virtual GPUs; {} schedule, {} micro-batches \
         per replica{}; {} layers, hidden {}, batch {}, {} steps of {:?} (lr {}), {}",
        l.tp,
        l.pp,
        l.dp,
        cmp.gpus,
        l.schedule,
        l.microbatches,
        if l.virtual_stages > 1 {
            format!(", {} virtual stages", l.virtual_stages)
        } else {
            String::new()
        },
        cfg.layers,
        cfg.hidden,
        cfg.batch,
        cfg.steps,
        cfg.optimizer,
        cfg.lr,
        cfg.dtype
    );
    outln!("\n  step  {:>12}  {:>12}", "loss 1 GPU", "loss 3D");
    let n = cmp.single.len();
    let every = (n / 10).max(1);
    for s in (0..n).filter(|s| s % every == 0 || *s == n - 1) {
        outln!(
            "  {:>4}  {:>12.6}  {:>12.6}",
            s + 1,
            cmp.single[s],
            cmp.three_d[s]
        );
    }
    outln!();
    outln!(
        "3D vs 1 GPU: largest relative gap over {n} steps {:.2e}",
        cmp.max_rel_gap
    );
    outln!(
        "The schedule changes time (its bubble: {:.1}% with unit costs, see tplab pipeline), \
         never the numbers: the curves differ by rounding; see tplab_engine::labs::train3d.",
        100.0 * cmp.bubble_fraction
    );
    Ok(ExitCode::SUCCESS)
}
