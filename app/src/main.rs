//! `tplab`: the desktop lab (no arguments) and its command-line tools.

mod cli;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "tplab",
    version,
    about = "A lab for Megatron-style tensor parallelism"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

/// One variant per subcommand; each lives in `cli/<name>.rs` with `Args` and `run`.
#[derive(Subcommand)]
enum Command {
    /// Run a scenario on virtual GPUs: op/collective table and verification against the CPU reference.
    Run(cli::run::RunArgs),
    /// Rank 3D-parallel layouts (TP, PP, DP) for a model on a cluster, or evaluate one with --layout.
    Plan(cli::plan::PlanArgs),
    /// Memory per GPU by term (weights, gradients, optimizer, activations, KV cache).
    Memory(cli::memory::MemoryArgs),
    /// The same shards on a real NVIDIA GPU: `gpu info`, `gpu run`, `gpu bench`.
    Gpu(cli::gpu::GpuArgs),
    /// Quiz in the terminal with instant feedback; `--exam` for the certificate exam.
    Quiz(cli::quiz::QuizArgs),
    /// Lessons: `lessons list`, `lessons show N`, `lessons check` (validates all content).
    Lessons(cli::lessons::LessonsArgs),
    /// Certificates: `cert keygen` (an issuer key pair), `cert verify FILE [--issuer KEY]`.
    Cert(cli::cert::CertArgs),
    /// The same layer in f64, f32, bf16 and f16 at TP 1..8: errors and summation-order effects.
    Precision(cli::precision::PrecisionArgs),
    /// Vocabulary parallelism: split embedding and cross-entropy over sharded logits.
    Vocab(cli::vocab::VocabArgs),
    /// Train a tiny character-level GPT on the guide at TP 1, 2, 4: the loss curves coincide.
    Train(cli::train::TrainArgs),
    /// Serving with TP: modeled time per token for a model, or the tiny model decoded on virtual GPUs (--tiny).
    Serve(cli::serve::ServeArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => tplab::run(),
        Some(Command::Run(args)) => cli::run::run(args),
        Some(Command::Plan(args)) => cli::plan::run(args),
        Some(Command::Memory(args)) => cli::memory::run(args),
        Some(Command::Gpu(args)) => cli::gpu::run(args),
        Some(Command::Quiz(args)) => cli::quiz::run(args),
        Some(Command::Lessons(args)) => cli::lessons::run(args),
        Some(Command::Cert(args)) => cli::cert::run(args),
        Some(Command::Precision(args)) => cli::precision::run(args),
        Some(Command::Vocab(args)) => cli::vocab::run(args),
        Some(Command::Train(args)) => cli::train::run(args),
        Some(Command::Serve(args)) => cli::serve::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
