//! `tplab gpu info|run|bench`: the engine's shards on a real GPU.

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tplab_engine::{config::Config, config::Preset, dtype::DType, overrides::Overrides};
use tplab_kernels::bench::{BenchOptions, ALL_REDUCE_TARGET, GEMM_TARGET};
use tplab_kernels::{DeviceMode, RunOptions};

/// `tplab gpu ...`
#[derive(Args)]
pub struct GpuArgs {
    #[command(subcommand)]
    pub command: GpuCommand,
}

#[derive(Subcommand)]
pub enum GpuCommand {
    /// What this machine offers: CUDA libraries, their versions, devices, and what is missing.
    Info(InfoArgs),
    /// Run a scenario's forward and backward pass on the GPU and compare with the CPU reference.
    Run(GpuRunArgs),
    /// TP 1, 2, 4, 8 on one device: time per op, error, GEMM rate and all-reduce bandwidth.
    Bench(GpuBenchArgs),
    /// The vocabulary-parallel embedding and cross-entropy on the GPU (f32), checked against
    /// the CPU reference.
    Vocab(GpuVocabArgs),
}

#[derive(Args)]
pub struct GpuVocabArgs {
    /// The same shape flags as `tplab vocab`.
    #[command(flatten)]
    pub shape: super::vocab::VocabShapeArgs,
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// One rank per GPU with NCCL (needs TP devices) instead of streams on one.
    #[arg(long)]
    pub one_rank_per_device: bool,
}

#[derive(Args)]
pub struct InfoArgs {
    /// Print the probe as JSON.
    #[arg(long)]
    pub json: bool,
}

fn parse_gpu_dtype(s: &str) -> Result<DType, String> {
    match s.parse::<DType>()? {
        d @ (DType::F32 | DType::Bf16) => Ok(d),
        d => Err(format!("the GPU runs f32 or bf16, not {d}")),
    }
}

#[derive(Args)]
pub struct GpuRunArgs {
    /// The scenario flags: a preset, then the fields that differ (one type with the lessons'
    /// Show me targets).
    #[command(flatten)]
    pub scenario: Overrides,
    /// Storage precision on the GPU: f32 or bf16 (products accumulate in f32 either way).
    #[arg(long, default_value = "f32", value_parser = parse_gpu_dtype)]
    pub dtype: DType,
    /// Timed iterations after one warm-up; times come from the median iteration.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub iters: u32,
    /// CUDA device for the single-device mode (ranks as streams).
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// One rank per GPU with NCCL all-reduce (needs TP devices) instead of streams on one.
    #[arg(long)]
    pub one_rank_per_device: bool,
    /// Write the measured trace as Chrome trace JSON (trace-gpu.json) into DIR.
    #[arg(long, value_name = "DIR")]
    pub export: Option<PathBuf>,
    /// Run a sharding plan through the general launch list instead of Megatron's fused one:
    /// a named plan (megatron, replicated, rows-then-columns, columns-columns) and/or each
    /// weight's split, any valid plan (`tplab design` checks one on the CPU).
    #[command(flatten)]
    pub splits: super::design::SplitArgs,
}

impl GpuRunArgs {
    /// Iterations and where the ranks run.
    fn options(&self) -> RunOptions {
        RunOptions {
            iters: self.iters as usize,
            mode: if self.one_rank_per_device {
                DeviceMode::OneRankPerDevice
            } else {
                DeviceMode::SingleDevice(self.device)
            },
        }
    }

    /// The sharding plan the flags name, if any (none: Megatron's fused walk).
    fn plan(&self) -> anyhow::Result<Option<tplab_engine::block::design::ShardingPlan>> {
        if !self.splits.given() {
            return Ok(None);
        }
        let megatron = tplab_engine::block::design::NamedPlan::Megatron.plan();
        Ok(Some(self.splits.apply(megatron)?))
    }
}

#[derive(Args)]
pub struct GpuBenchArgs {
    /// Hidden size of the benchmark layer.
    #[arg(long, default_value_t = 768)]
    pub hidden: usize,
    #[arg(long, default_value_t = 12)]
    pub heads: usize,
    /// Tokens: sequence length (batch 1).
    #[arg(long, default_value_t = 512)]
    pub seq: usize,
    #[arg(long, default_value_t = 1)]
    pub layers: usize,
    /// Comma-separated TP sizes.
    #[arg(long, default_value = "1,2,4,8", value_delimiter = ',')]
    pub tps: Vec<usize>,
    #[arg(long, default_value = "f32", value_parser = parse_gpu_dtype)]
    pub dtype: DType,
    #[arg(long, default_value_t = 5)]
    pub iters: usize,
    /// Repetitions of each isolated GEMM, all-reduce and copy.
    #[arg(long, default_value_t = 20)]
    pub reps: usize,
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

pub fn run(args: GpuArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        GpuCommand::Info(a) => info(a),
        GpuCommand::Run(a) => run_scenario(a),
        GpuCommand::Bench(a) => bench(a),
        GpuCommand::Vocab(a) => vocab(a),
    }
}

fn vocab(a: GpuVocabArgs) -> anyhow::Result<ExitCode> {
    let cfg = a.shape.config();
    cfg.validate()?;
    require_gpu("the GPU mode is unavailable on this machine (see above); `tplab vocab` runs the same pass on virtual GPUs")?;
    let mode = if a.one_rank_per_device {
        DeviceMode::OneRankPerDevice
    } else {
        DeviceMode::SingleDevice(a.device)
    };
    let r = tplab_kernels::vocab::run(&cfg, mode)?;
    outln!(
        "vocabulary {} padded to {} ({} rows per GPU), hidden {}, {} tokens, TP={}, f32 on the GPU",
        cfg.vocab,
        r.padded_vocab,
        r.rows_per_rank,
        cfg.hidden,
        cfg.tokens,
        cfg.tp
    );
    outln!("{:<16} {:>12}", "op", "measured ms");
    for e in r
        .events
        .iter()
        .filter(|e| e.is_collective() || e.ranks.first() == Some(&0))
    {
        outln!(
            "{:<16} {:>12}",
            e.op.name(),
            e.measured
                .map(|m| format!("{:.4}", m.duration_s * 1e3))
                .unwrap_or_else(|| "-".into())
        );
    }
    outln!("loss {:.6} (reference {:.6})", r.loss, r.reference_loss);
    let worst = r
        .checks
        .iter()
        .max_by(|a, b| a.max_rel_error.total_cmp(&b.max_rel_error));
    outln!(
        "verification: {} ({} tensors, worst {:.2e}, tolerance {:.2e}: {})",
        if r.passed() { "PASS" } else { "FAIL" },
        r.checks.len(),
        worst.map_or(0.0, |c| c.max_rel_error),
        r.tolerance.relative,
        r.tolerance.reason
    );
    Ok(if r.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn info(a: InfoArgs) -> anyhow::Result<ExitCode> {
    let p = tplab_kernels::probe();
    if a.json {
        outln!("{}", super::json_text("gpu", &p)?);
    } else {
        out!("{}", p.report());
    }
    Ok(ExitCode::SUCCESS)
}

/// Fails with `unavailable` (what cannot run, and what to use instead) unless the probe finds a
/// usable NVIDIA GPU (driver, NVRTC, cuBLAS); its report is printed first, saying what is missing.
pub(crate) fn require_gpu(unavailable: &str) -> anyhow::Result<()> {
    let probe = tplab_kernels::probe();
    if !probe.usable() {
        eprint!("{}", probe.report());
        bail!("{unavailable}");
    }
    Ok(())
}

/// Writes `bytes` to `path` atomically (the engine's export writer: temporary file, fsync,
/// rename; the temporary file is removed if anything fails).
fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    tplab_engine::export::write_atomic(path, bytes)
        .with_context(|| format!("cannot write {}", path.display()))
}

/// The host side of a GPU run (the seeded model and the f64 CPU reference it is checked
/// against) passes the CPU engine's memory guard, before anything is allocated.
fn host_memory_guard(cfg: &Config) -> anyhow::Result<()> {
    Config {
        dtype: DType::F64,
        ..cfg.clone()
    }
    .validate()
    .context("the CPU reference of this GPU run would not fit")
}

pub(crate) fn progress_bar(stage: &str, fraction: f64) {
    let width = 30;
    let filled = ((fraction.clamp(0.0, 1.0)) * width as f64).round() as usize;
    eprint!(
        "\r[{}{}] {:>3.0}% {:<45}",
        "#".repeat(filled),
        " ".repeat(width - filled),
        100.0 * fraction,
        stage
    );
    if fraction >= 1.0 {
        eprintln!();
    }
}

fn run_scenario(a: GpuRunArgs) -> anyhow::Result<ExitCode> {
    let cfg = Config {
        dtype: a.dtype,
        ..a.scenario.config()
    };
    tplab_kernels::run::check_config(&cfg)?;
    host_memory_guard(&cfg)?;
    if let Some(mut plan) = a.plan()? {
        plan.sequence_parallel = cfg.sequence_parallel;
        return run_plan(&a, &cfg, &plan);
    }
    require_gpu("the GPU mode is unavailable on this machine (see above); `tplab run` runs the same scenario on virtual GPUs")?;
    let opts = a.options();
    eprintln!("scenario {} on the GPU", cfg.label());
    let run = tplab_kernels::run(&cfg, &opts, &mut progress_bar)?;
    eprintln!("computing the CPU reference (f64) ...");
    let model = tplab_kernels::run::device_model(&cfg);
    let reference = tplab_kernels::reference::reference(&cfg, &model);
    let v = tplab_kernels::verify::verify_run(&cfg, &run, &reference);
    outln!("{} — {}", run.devices.join(", "), run.mode);
    report(&run.trace, &run.iteration_ms, &v, a.export.as_deref())
}

/// The per-op table of a measured trace, the median iteration, the verdict against the CPU
/// reference and the export: what `gpu run` prints, whichever split ran. Fails (exit 1) when
/// the verification does.
fn report(
    trace: &tplab_engine::trace::Trace,
    iteration_ms: &[f64],
    v: &tplab_engine::block::verify::Verification,
    export: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let source = match trace.time_source {
        tplab_engine::trace::TimeSource::CostModel => "modeled",
        _ => "proportional",
    };
    outln!(
        "{:<9} {:<24} {:>12} {:>14} {:>12}",
        "pass",
        "op",
        "measured ms",
        format!("{source} ms"),
        "share ratio"
    );
    for r in tplab_kernels::summary::op_table(trace) {
        outln!(
            "{:<9} {:<24} {:>12} {:>14.4} {:>12}",
            r.pass.name(),
            r.op,
            r.measured_ms
                .map(|m| format!("{m:.4}"))
                .unwrap_or_else(|| "-".into()),
            r.predicted_ms,
            r.share_ratio
                .map(|s| format!("{s:.2}"))
                .unwrap_or_else(|| "-".into())
        );
    }
    let mut its = iteration_ms.to_vec();
    its.sort_by(f64::total_cmp);
    outln!(
        "iteration (forward + backward): median {:.3} ms over {} runs",
        its.get(its.len() / 2).copied().unwrap_or(0.0),
        its.len()
    );
    outln!("share ratio: the op's share of measured time / its share of the {source} time");
    outln!(
        "verification vs the CPU reference: {}",
        tplab_kernels::verify::summary(v)
    );
    if let Some(dir) = export {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the export directory {}", dir.display()))?;
        let path = dir.join("trace-gpu.json");
        write_atomic(&path, &serde_json::to_vec_pretty(&trace.to_chrome_json())?)?;
        outln!("wrote {} (open in https://ui.perfetto.dev)", path.display());
    }
    Ok(if v.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `gpu run` with a sharding plan: the plan's launch list on the GPU, its trace's measured
/// times, and every tensor against the CPU reference.
fn run_plan(
    a: &GpuRunArgs,
    cfg: &Config,
    plan: &tplab_engine::block::design::ShardingPlan,
) -> anyhow::Result<ExitCode> {
    // Refused plans and uneven splits are named before any device is looked for.
    let program = tplab_engine::block::design::program::propagate(cfg, plan);
    if let Some(e) = program.errors.first() {
        bail!(
            "the plan {} is refused: {e} (`tplab design` shows why)",
            plan.describe()
        );
    }
    tplab_kernels::program::lower(cfg, &program)?;
    require_gpu("the GPU mode is unavailable on this machine (see above); `tplab design` runs the same plan on virtual GPUs")?;
    let opts = a.options();
    eprintln!(
        "plan {} on the GPU, scenario {}",
        plan.describe(),
        cfg.label()
    );
    let run = tplab_kernels::run_plan(cfg, plan, &opts, &mut progress_bar)?;
    outln!("{} — {}", run.devices.join(", "), run.mode);
    let v = tplab_engine::block::verify::Verification {
        tolerance: run.tolerance.clone(),
        checks: run.checks.clone(),
    };
    report(&run.trace, &run.iteration_ms, &v, a.export.as_deref())
}

fn bench(a: GpuBenchArgs) -> anyhow::Result<ExitCode> {
    let config = Config {
        hidden: a.hidden,
        heads: a.heads,
        ffn: a.hidden.saturating_mul(4),
        seq: a.seq,
        batch: 1,
        layers: a.layers,
        dtype: a.dtype,
        tp: 1,
        ..Preset::Gpt2Small.config()
    };
    tplab_kernels::run::check_config(&config)?;
    host_memory_guard(&config)?;
    // Every flag is checked before the GPU is looked for: a wrong one is named on any machine.
    for (flag, v) in [("--iters", a.iters), ("--reps", a.reps)] {
        if v == 0 || v > 10_000 {
            bail!("{flag} must be between 1 and 10000 (got {v})");
        }
    }
    // (A TP size the layer cannot use is reported as skipped by the bench, as a sweep does.)
    super::check_list("--tps", &a.tps, 16)?;
    require_gpu("the GPU mode is unavailable on this machine (see above)")?;
    let opts = BenchOptions {
        config,
        tps: a.tps.clone(),
        iters: a.iters,
        reps: a.reps,
        ordinal: a.device,
    };
    let report = tplab_kernels::bench::bench(&opts, &mut |m| eprintln!("{m}"))?;
    out!("{}", report.table());
    if let Some(p) = &a.json {
        write_atomic(p, &serde_json::to_vec_pretty(&report)?)?;
        outln!("wrote {}", p.display());
    }
    let targets_met = report.rows.iter().all(|r| {
        r.gemms.iter().all(|g| g.ratio >= GEMM_TARGET)
            && r.all_reduce
                .as_ref()
                .is_none_or(|b| b.ratio >= ALL_REDUCE_TARGET)
    });
    outln!(
        "targets (GEMM ≥ {:.0}%, all-reduce ≥ {:.0}%): {}",
        100.0 * GEMM_TARGET,
        100.0 * ALL_REDUCE_TARGET,
        if targets_met { "met" } else { "NOT met" }
    );
    let verified = report.rows.iter().all(|r| r.verified);
    Ok(if verified {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
