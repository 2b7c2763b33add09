//! `tplab precision`: the same block in f64, f32, bf16 and f16 at several TP sizes; errors against
//! f64, the effect of summation order, and why it is not a bug.

use clap::Args;
use std::process::ExitCode;
use tplab_engine::config::Preset;
use tplab_engine::labs::precision::{self, UlpHistogram};
use tplab_engine::{dtype::DType, overrides::Overrides};

#[derive(Args, Clone, Debug)]
pub struct PrecisionArgs {
    /// Starting point: gpt2-small or tiny.
    #[arg(long, default_value = "gpt2-small")]
    pub preset: Preset,
    #[arg(long)]
    pub hidden: Option<usize>,
    #[arg(long)]
    pub heads: Option<usize>,
    /// MLP width (default: 4 × hidden when --hidden is given, else the preset's).
    #[arg(long)]
    pub ffn: Option<usize>,
    #[arg(long)]
    pub seq: Option<usize>,
    #[arg(long)]
    pub batch: Option<usize>,
    #[arg(long)]
    pub layers: Option<usize>,
    #[arg(long)]
    pub seed: Option<u64>,
    /// Comma-separated TP sizes to compare (TP=1 is the order baseline); default: every valid
    /// size in 1..=8 for the shape (gpt2-small's 12 heads: 1,2,3,4,6).
    #[arg(long = "tp", value_delimiter = ',')]
    pub tps: Vec<usize>,
    /// Comma-separated dtypes: f64, f32, bf16, f16 (bf16/f16 emulated on the CPU).
    #[arg(long, default_value = "f64,f32,bf16,f16", value_delimiter = ',')]
    pub dtypes: Vec<DType>,
    /// Print the report as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

const BAR_WIDTH: usize = 40;
/// TP sizes one run compares (the app's Precision view offers 1 to 8).
const MAX_TPS: usize = 16;

fn bin_label(lo: f64, hi: f64) -> String {
    if hi == 0.0 {
        "       0".to_string()
    } else if hi.is_infinite() {
        format!("> {lo:>6}")
    } else {
        format!("≤ {hi:>6}")
    }
}

fn print_histogram(h: &UlpHistogram) {
    let total = h.total().max(1);
    let max = h.bins.iter().map(|b| b.count).max().unwrap_or(0).max(1);
    // Drop empty bins at both ends so the chart stays short.
    let first = h.bins.iter().position(|b| b.count > 0).unwrap_or(0);
    let last = h.bins.iter().rposition(|b| b.count > 0).unwrap_or(0);
    for b in &h.bins[first..=last] {
        let n = (b.count * BAR_WIDTH).div_ceil(max);
        outln!(
            "    {} ULP |{:<w$}| {:>7} ({:>5.1}%)",
            bin_label(b.lower_ulps, b.upper_ulps),
            "█".repeat(n),
            b.count,
            100.0 * b.count as f64 / total as f64,
            w = BAR_WIDTH
        );
    }
}

pub fn run(args: PrecisionArgs) -> anyhow::Result<ExitCode> {
    // The sweep sets TP and dtype itself; its own --tp is the list of sizes.
    let scenario = Overrides {
        preset: Some(args.preset),
        hidden: args.hidden,
        heads: args.heads,
        ffn: args.ffn,
        seq: args.seq,
        batch: args.batch,
        layers: args.layers,
        tp: Some(1),
        seed: args.seed,
        ..Overrides::default()
    };
    let cfg = tplab_engine::config::Config {
        dtype: DType::F64,
        ..scenario.config()
    };
    if args.dtypes.is_empty() {
        anyhow::bail!("give at least one dtype (--dtypes f32,bf16)");
    }
    if let Some(d) = super::first_repeat(&args.dtypes) {
        anyhow::bail!("--dtypes lists {d} more than once: give each dtype once");
    }
    let tps = if args.tps.is_empty() {
        cfg.valid_tp_sizes()
            .into_iter()
            .filter(|&t| t <= 8)
            .collect()
    } else {
        super::check_list("--tp", &args.tps, MAX_TPS)?;
        args.tps.clone()
    };
    let report = precision::sweep(&cfg, &args.dtypes, &tps)?;
    if args.json {
        outln!("{}", super::json_text("precision", &report)?);
        return Ok(ExitCode::SUCCESS);
    }
    let c = &report.config;
    outln!(
        "Precision lab: h={} heads={} ffn={} seq={} batch={} layers={} seed={}; reference: f64, TP=1, \
         unsharded (max|ref| = {:.3}); K = {} (longest reduction)",
        c.hidden,
        c.heads,
        c.ffn,
        c.seq,
        c.batch,
        c.layers,
        c.seed,
        report.reference_max_abs,
        report.reduction_len
    );
    outln!("bf16/f16: f32 arithmetic, rounded to the dtype at every op boundary and in the all-reduce.\n");
    outln!(
        "{:<5} {:>3} | {:>10} {:>10} {:>10} {:>8} | {:>9} {:>8} {:>8} {:>9}",
        "dtype",
        "tp",
        "max abs",
        "max rel",
        "rms",
        "ε·max",
        "≠ TP=1",
        "med ULP",
        "max ULP",
        "ε·max"
    );
    for row in &report.rows {
        let e = &row.vs_reference;
        let order = match &row.vs_tp1 {
            Some(o) => format!(
                "{:>8.1}% {:>8.1} {:>8.1} {:>9.2}",
                100.0 * o.differing as f64 / o.elements.max(1) as f64,
                o.median_ulps,
                o.max_ulps,
                o.max_diff_rel_ulps
            ),
            None => format!("{:>9} {:>8} {:>8} {:>9}", "-", "-", "-", "-"),
        };
        outln!(
            "{:<5} {:>3} | {:>10.3e} {:>10.3e} {:>10.3e} {:>8.2} | {}",
            row.dtype.name(),
            row.tp,
            e.max_abs,
            e.max_rel,
            e.rms,
            e.max_rel_ulps,
            order
        );
    }
    outln!(
        "\n(columns: error against f64 — max abs, max rel = max abs / max|ref|, RMS, and max abs in \
         units of ε·max|ref|; then TP=k vs TP=1 in the same dtype — share of elements that differ, \
         median ULPs over those that differ, max ULPs, max diff in ε·max|ref|; ULPs are counted at no less than the reference's RMS, since near \
         zero one ULP is arbitrarily small)\n"
    );
    outln!(
        "Error distribution against f64 (|error| in ULPs of the dtype at max(|value|, RMS of the reference)):"
    );
    for row in &report.rows {
        outln!("  {} TP={}:", row.dtype, row.tp);
        print_histogram(&row.vs_reference.histogram);
    }
    outln!("\nWhy TP=1 and TP=2 differ:\n{}\n", report.explanation);
    outln!("Measured:");
    for f in report.findings() {
        outln!("  - {f}");
    }
    Ok(ExitCode::SUCCESS)
}
