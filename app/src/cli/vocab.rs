//! `tplab vocab`: vocabulary parallelism — the embedding split by vocabulary rows (with
//! Megatron's padding) and the cross-entropy over vocabulary-sharded logits, checked against the
//! unsharded reference.

use clap::Args;
use std::process::ExitCode;
use tplab_engine::config::human_bytes;
use tplab_engine::labs::vocab::{self, VocabConfig, VocabReport};
use tplab_engine::trace::EventKind;
use tplab_engine::{collectives::Algorithm, dtype::DType};

/// The vocabulary-parallel shape flags, shared by `tplab vocab` and `tplab gpu vocab`.
#[derive(Args, Clone, Debug)]
pub struct VocabShapeArgs {
    /// Vocabulary size (GPT-2: 50257).
    #[arg(long, default_value_t = 50257)]
    pub vocab: usize,
    #[arg(long, default_value_t = 768)]
    pub hidden: usize,
    /// Tokens (batch × sequence).
    #[arg(long, default_value_t = 128)]
    pub tokens: usize,
    #[arg(long, default_value_t = 4)]
    pub tp: usize,
    /// Pad the vocabulary to a multiple of this × TP (Megatron's --make-vocab-size-divisible-by).
    #[arg(long, default_value_t = vocab::DEFAULT_GRANULARITY)]
    pub granularity: usize,
}

impl VocabShapeArgs {
    /// The shape, with the engine's defaults for the rest (seed 42, ring).
    pub fn config(&self) -> VocabConfig {
        VocabConfig {
            vocab: self.vocab,
            hidden: self.hidden,
            tokens: self.tokens,
            tp: self.tp,
            granularity: self.granularity,
            ..VocabConfig::default()
        }
    }
}

#[derive(Args, Clone, Debug)]
pub struct VocabArgs {
    #[command(flatten)]
    pub shape: VocabShapeArgs,
    /// f32 or f64.
    #[arg(long, default_value = "f32")]
    pub dtype: DType,
    #[arg(long, default_value = "ring")]
    pub algorithm: Algorithm,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Also write the tensors (table, each rank's rows and logits, loss, gradients) to
    /// DIR/vocab.safetensors; `python3 scripts/check_export.py DIR` checks them with numpy.
    #[arg(long, value_name = "DIR")]
    pub export: Option<std::path::PathBuf>,
}

fn print(report: &VocabReport) {
    let c = &report.config;
    outln!(
        "vocabulary parallelism: V={} padded to {} (a multiple of {} × TP {}: {} padding rows), \
         hidden {}, {} tokens, {}",
        c.vocab,
        report.padded_vocab,
        c.granularity,
        c.tp,
        report.padded_vocab - c.vocab,
        c.hidden,
        c.tokens,
        report.dtype
    );
    outln!("\n  rank  token ids            real rows  padding rows");
    for r in 0..c.tp {
        let range = c.rank_range(r);
        let real = c.real_range(r).len();
        outln!(
            "  {r:>4}  {:>7}..{:<9}  {real:>9}  {:>12}",
            range.start,
            range.end,
            range.len() - real
        );
    }
    outln!(
        "\n  pass      event            kind                                           shape    sent/rank"
    );
    for e in report
        .events
        .iter()
        .filter(|e| e.ranks.len() > 1 || e.ranks[0] == 0)
    {
        let kind = match &e.kind {
            EventKind::Compute { op, parallel } => {
                format!("{} ({})", op.label(), parallel.label())
            }
            EventKind::Collective {
                kind, algorithm, ..
            } => {
                format!("{} ({algorithm})", kind.name())
            }
        };
        outln!(
            "  {:<9} {:<16} {:<42} {:>9} {:>12}",
            e.pass.name(),
            e.name(),
            kind,
            format!("{}x{}", e.output[0], e.output[1]),
            if e.is_collective() {
                human_bytes(e.bytes_sent_per_rank)
            } else {
                "-".into()
            }
        );
    }
    outln!(
        "\ncross-entropy without gathering the logits: each rank sends {} for the max, sum-exp and \
         target reductions; an all-gather of the [{}, {}] logits would send {} ({:.0}× more)",
        human_bytes(report.ce_bytes_sent_per_rank),
        c.tokens,
        report.padded_vocab,
        human_bytes(report.gather_bytes_sent_per_rank),
        report.gather_bytes_sent_per_rank as f64 / report.ce_bytes_sent_per_rank.max(1) as f64
    );
    outln!(
        "\nloss {:.9} (reference {:.9}); tolerance {:.3e} relative ({})",
        report.loss,
        report.reference_loss,
        report.tolerance.relative,
        report.tolerance.reason
    );
    for ch in &report.checks {
        outln!(
            "  {:<24} {:<7} max|Δ| {:.3e} (rel {:.3e}) {}",
            ch.name,
            ch.rank.map_or(String::new(), |r| format!("rank {r}")),
            ch.max_abs_error,
            ch.max_rel_error,
            if ch.passed { "ok" } else { "FAILED" }
        );
    }
    let failed = report.checks.iter().filter(|c| !c.passed).count();
    outln!(
        "result: {} ({} checks, {failed} failed)",
        if failed == 0 { "PASS" } else { "FAIL" },
        report.checks.len()
    );
}

pub fn run(args: VocabArgs) -> anyhow::Result<ExitCode> {
    let cfg = VocabConfig {
        seed: args.seed,
        algorithm: args.algorithm,
        ..args.shape.config()
    };
    let report = match args.dtype {
        DType::F64 => vocab::run::<f64>(&cfg)?,
        DType::F32 => vocab::run::<f32>(&cfg)?,
        d => anyhow::bail!("the CPU engine runs f32 or f64, not {d}; pass --dtype f32 or f64"),
    };
    print(&report);
    if let Some(dir) = &args.export {
        let path = match args.dtype {
            DType::F64 => tplab_engine::export::export_vocab::<f64>(&cfg, dir)?,
            _ => tplab_engine::export::export_vocab::<f32>(&cfg, dir)?,
        };
        outln!("wrote {}", path.display());
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
