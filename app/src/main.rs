//! `tplab`: the desktop lab (no arguments) and its command-line tools; in a browser (wasm32) the
//! web edition, started on the page's canvas (`tplab::app::web::start`).

// The web edition has no command line: everything else in this file is the desktop's.
#[cfg(target_arch = "wasm32")]
fn main() {
    tplab::app::web::start();
}

#[cfg(not(target_arch = "wasm32"))]
mod cli;

#[cfg(not(target_arch = "wasm32"))]
use clap::{Parser, Subcommand};
#[cfg(not(target_arch = "wasm32"))]
use std::process::ExitCode;

#[cfg(not(target_arch = "wasm32"))]
#[derive(Parser)]
#[command(
    name = "tplab",
    version,
    about = "A lab for Megatron-style tensor parallelism"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Open the app on this view (e.g. walkthrough, playground, collectives, lessons, quiz).
    #[arg(long, global = false)]
    view: Option<String>,
    /// Open in presenter mode (full screen, large type; F11 toggles it).
    #[arg(long)]
    presenter: bool,
    /// The app's language: en or tr.
    #[arg(long)]
    lang: Option<tplab_lessons::Lang>,
    /// light or dark.
    #[arg(long)]
    theme: Option<tplab::app::ThemeChoice>,
    /// Open a challenge of the design lab (1 to 8; the Design view).
    #[arg(long)]
    challenge: Option<usize>,
    /// Open a lesson by its number or name (e.g. 7, or lesson-7-ring-all-reduce).
    #[arg(long)]
    lesson: Option<String>,
    /// Open the walkthrough at this step (from 1).
    #[arg(long)]
    step: Option<usize>,
    /// Join a live class: a student's join address (http://<address>:8036/?class=CODE) opens
    /// the student's screen; the teacher's link (…/#teacher=SECRET) opens the Class view.
    #[arg(long, value_name = "URL")]
    join: Option<String>,
}

/// One variant per subcommand; each lives in `cli/<name>.rs` with `Args` and `run`.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Subcommand)]
enum Command {
    /// Run a scenario on virtual GPUs: op/collective table and verification against the CPU reference.
    Run(cli::run::RunArgs),
    /// Design a split: any plan (--qkv/--out/--fc1/--fc2 replicate|columns|rows, or --file
    /// PLAN.toml) propagated, checked against the reference and priced beside Megatron's.
    Design(cli::design::DesignArgs),
    /// Rank 3D-parallel layouts (TP, PP, DP) for a model on a cluster, or evaluate one with --layout.
    Plan(cli::plan::PlanArgs),
    /// Memory per GPU by term (weights, gradients, optimizer, activations, KV cache).
    Memory(cli::memory::MemoryArgs),
    /// A collective as NCCL runs it: time, algbw and busbw over message sizes (nccl-tests style).
    Collective(cli::collective::CollectiveArgs),
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
    /// Pipeline schedules (gpipe, 1f1b, interleaved, zb-h1): each stage's order, the timeline,
    /// the bubble measured beside its formula, peak activations and sends.
    Pipeline(cli::pipeline::PipelineArgs),
    /// Mixture-of-Experts on virtual GPUs: expert parallelism (all-to-all dispatch and combine)
    /// and expert-tensor parallelism, checked against the unsharded reference.
    Moe(cli::moe::MoeArgs),
    /// Train a tiny character-level GPT on the guide at TP 1, 2, 4: the loss curves coincide;
    /// with --pp/--dp/--schedule, on TP × PP × DP virtual GPUs beside one GPU.
    Train(cli::train::TrainArgs),
    /// Serving with TP: modeled time per token for a model, or the tiny model decoded on virtual GPUs (--tiny).
    Serve(cli::serve::ServeArgs),
    /// A live class: students join from their devices, vote and design; prints the join
    /// address, code and QR code, and the teacher's console link.
    Class(cli::class::ClassArgs),
}

/// The panic message `println!` raises when stdout cannot be written.
#[cfg(not(target_arch = "wasm32"))]
const PRINT_PANIC: &str = "failed printing to stdout";

#[cfg(not(target_arch = "wasm32"))]
fn main() -> ExitCode {
    // A safety net for printing not routed through `cli::write_stdout`: `println!` panics when
    // stdout fails; that panic is turned into the same quiet exit or message, never shown.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !panic_text(info.payload()).starts_with(PRINT_PANIC) {
            default_hook(info);
        }
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    let result = std::panic::catch_unwind(|| dispatch(cli));
    let result = match result {
        Ok(r) => r,
        Err(payload) => {
            let text = panic_text(payload.as_ref());
            if let Some(reason) = text.strip_prefix(PRINT_PANIC) {
                if reason.contains("Broken pipe") {
                    std::process::exit(cli::BROKEN_PIPE_EXIT);
                }
                eprintln!(
                    "error: cannot write to standard output: {}",
                    reason.trim_start_matches(':').trim()
                );
                return ExitCode::FAILURE;
            }
            std::panic::resume_unwind(payload);
        }
    };
    cli::flush_stdout();
    match result {
        Ok(code) => code,
        Err(err) => {
            // The message may quote an input file (a name, a key): shown escaped, and a long
            // argument it quotes shortened to its ends and its length.
            let message = tplab_engine::text::shorten_long_words(&format!("{err:#}"));
            eprintln!(
                "error: {}",
                tplab_engine::text::escape_unsafe_keep_lines(&message)
            );
            ExitCode::FAILURE
        }
    }
}

/// What clap's parse ended with: `--help` and `--version` print to stdout and exit 0, unless
/// stdout cannot take them (a full disk, `> /dev/full`): then 1 with a message, or 141 for a
/// closed pipe, as every other command; a usage error prints to stderr with clap's status (2).
#[cfg(not(target_arch = "wasm32"))]
fn clap_exit(e: &clap::Error) -> ExitCode {
    use std::io::IsTerminal;
    if e.use_stderr() {
        // A usage error quotes the value it refuses: a long one is shortened to its ends.
        eprint!(
            "{}",
            tplab_engine::text::shorten_long_words(&e.render().to_string())
        );
        return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
    }
    if std::io::stdout().is_terminal() {
        // Colours on a terminal, as clap prints them.
        if let Err(err) = e.print() {
            cli::stdout_failed(&err);
        }
    } else {
        cli::write_stdout(format_args!("{}", e.render()));
    }
    cli::flush_stdout();
    ExitCode::SUCCESS
}

#[cfg(not(target_arch = "wasm32"))]
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        String::new()
    }
}

/// `tplab class --console`: the class server on a thread, and this app as the teacher's
/// console connected to it. Closing the window pauses the class (the next `tplab class` on the
/// same data folder resumes it).
#[cfg(not(target_arch = "wasm32"))]
fn class_console(
    args: cli::class::ClassArgs,
    launch: tplab::app::Launch,
) -> anyhow::Result<ExitCode> {
    use anyhow::Context as _;
    let (tx, rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        let result = cli::class::run(args, Some(tx));
        // Ctrl-C paused the class: the console goes with its server (the next start resumes
        // the class, and its console).
        if cli::class::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
            std::process::exit(0);
        }
        result
    });
    let link = match rx.recv_timeout(std::time::Duration::from_secs(60)) {
        Ok(link) => link,
        Err(_) => {
            // The server stopped before it was ready: its own error says why.
            return match server.join() {
                Ok(result) => result,
                Err(_) => anyhow::bail!("the class server stopped unexpectedly"),
            };
        }
    };
    // The console opens as the command line asks (`tplab --presenter --lang tr class
    // --console`), on the Class view.
    tplab::run(
        launch
            .with_class(Some(&link))
            .context("the console's own link")?,
    )
}

#[cfg(not(target_arch = "wasm32"))]
fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        None => tplab::run(
            tplab::app::Launch::new(cli.view.as_deref(), cli.presenter, cli.lang, cli.theme)?
                .with_challenge(cli.challenge)?
                .with_link(cli.lesson.as_deref(), cli.step)?
                .with_class(cli.join.as_deref())?,
        ),
        Some(Command::Run(args)) => cli::run::run(args),
        Some(Command::Design(args)) => cli::design::run(args),
        Some(Command::Plan(args)) => cli::plan::run(args),
        Some(Command::Memory(args)) => cli::memory::run(args),
        Some(Command::Collective(args)) => cli::collective::run(args),
        Some(Command::Gpu(args)) => cli::gpu::run(args),
        Some(Command::Quiz(args)) => cli::quiz::run(args),
        Some(Command::Lessons(args)) => cli::lessons::run(args),
        Some(Command::Cert(args)) => cli::cert::run(args),
        Some(Command::Precision(args)) => cli::precision::run(args),
        Some(Command::Vocab(args)) => cli::vocab::run(args),
        Some(Command::Pipeline(args)) => cli::pipeline::run(args),
        Some(Command::Moe(args)) => cli::moe::run(args),
        Some(Command::Train(args)) => cli::train::run(args),
        Some(Command::Serve(args)) => cli::serve::run(args),
        Some(Command::Class(args)) if args.console => class_console(
            args,
            tplab::app::Launch::new(Some("class"), cli.presenter, cli.lang, cli.theme)?,
        ),
        Some(Command::Class(args)) => cli::class::run(args, None),
    }
}
