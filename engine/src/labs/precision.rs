//! The precision lab: the same block in f64, f32, bf16 and f16 at several TP sizes, and what
//! summation order across ranks does to the result.
//!
//! # Why TP=1 and TP=2 differ, and why that is not a bug
//! Floating-point addition is not associative: `(a + b) + c` and `a + (b + c)` are rounded at
//! different points. The row-parallel layers (out-proj and fc2) at TP=2 compute
//! `(Σ first half) + (Σ second half)` instead of one running sum over all K terms, so each output
//! element is rounded differently. The difference is a few ULPs: bounded by about `K·ε` in the
//! worst case and `√K·ε` typically, the same size as the error each order has against the exact
//! result. Neither order is "more correct"; [`sweep`] measures both against an f64 reference.
//!
//! # How bf16 and f16 are emulated (exactly what is rounded where)
//! The CPU computes in f32 with the engine's own kernels ([`crate::block::ops`]) and rounds to the
//! 2-byte dtype (round to nearest, ties to even) at every op boundary — what a GPU stores:
//! - the input and every weight and bias are rounded once (storage precision);
//! - each op's output is rounded: LN1, QKV (product + bias), attention context, LN2, fc1
//!   (product + bias), GeLU, and the residual outputs `x + reduced + b`;
//! - inside an op everything is f32: matrix products accumulate in f32 (as cuBLAS does for
//!   bf16/f16 with f32 compute), LayerNorm statistics and softmax are f32;
//! - the row-parallel partial products `ctx_r·W_out,r` and `act_r·W_2,r` are rounded before the
//!   all-reduce, and the all-reduce adds the ranks' buffers in the low dtype: rank 0 + rank 1,
//!   rounded, + rank 2, rounded, ... (as NCCL does for bf16 buffers; a ring starts each chunk at a
//!   different rank, which changes which elements move but not the size of the effect).
//!
//! f32 goes through the same path with no rounding and the engine's own all-reduce, so it equals
//! the engine's f32 sharded run bit for bit. f64 runs the engine's sharded executor in f64. The
//! reference is the unsharded f64 block ([`crate::block::reference::forward`]) on the unrounded weights.

use crate::block::exec::sharded::{self, Options, Rounding};
use crate::block::plan::ShardPlan;
use crate::block::Op;
use crate::config::Config;
use crate::dtype::DType;
use crate::params::{LayerParams, Model};
use crate::run::EngineError;
use ndarray::Array2;
use serde::Serialize;

/// The explanation the CLI prints and the app shows.
pub const EXPLANATION: &str = "\
Floating-point addition is not associative: (a + b) + c and a + (b + c) round at different points.
The row-parallel layers (attention out-proj and fc2) at TP=2 compute (sum of the first half of K
terms) + (sum of the second half) and add the two in the all-reduce, instead of one running sum over
all K terms. So every output element is rounded differently, by a few ULPs. The rounding error of a
K-term sum is at most about K*eps (worst case) and about sqrt(K)*eps typically, for ANY order; the
TP=1 and TP=2 results are two equally valid roundings of the same exact value, each as close to the
f64 result as the other. TP=1 is not \"more correct\", and the difference is not a bug. A bug (a
wrong shard, a missing bias, a double all-reduce) shows up as an error far above K*eps.";

/// Rounds an f32 to the nearest bf16 (ties to even) and widens it back: keeps the top 16 bits.
pub fn round_bf16(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    let bits = x.to_bits();
    // Add half of the dropped range, minus one when the kept LSB is 0 (ties go to even).
    let lsb = (bits >> 16) & 1;
    let rounded = bits.wrapping_add(0x7fff + lsb) & 0xffff_0000;
    f32::from_bits(rounded)
}

/// Rounds an f32 to the nearest f16 (ties to even; overflow to ±∞) and widens it back.
pub fn round_f16(x: f32) -> f32 {
    half::f16::from_f32(x).to_f32()
}

/// Rounds to `dtype`'s storage precision (identity for f32 and f64).
pub fn round_to(dtype: DType, x: f32) -> f32 {
    match dtype {
        DType::Bf16 => round_bf16(x),
        DType::F16 => round_f16(x),
        DType::F32 | DType::F64 => x,
    }
}

/// Distance in units in the last place between two values of `dtype` (both must be
/// representable in it): how many representable numbers lie between them, plus one.
pub fn ulp_distance(dtype: DType, a: f64, b: f64) -> u64 {
    fn ordered(bits: u64, sign: u64) -> i128 {
        if bits & sign != 0 {
            -i128::from(bits & !sign)
        } else {
            i128::from(bits)
        }
    }
    let key = |v: f64| -> i128 {
        match dtype {
            DType::F64 => ordered(v.to_bits(), 1 << 63),
            DType::F32 => ordered(u64::from((v as f32).to_bits()), 1 << 31),
            DType::Bf16 => ordered(u64::from(half::bf16::from_f64(v).to_bits()), 1 << 15),
            DType::F16 => ordered(u64::from(half::f16::from_f64(v).to_bits()), 1 << 15),
        }
    };
    key(a).abs_diff(key(b)).try_into().unwrap_or(u64::MAX)
}

/// Size of one ULP of `dtype` at magnitude `v` (subnormal spacing below the smallest normal).
pub fn ulp_at(dtype: DType, v: f64) -> f64 {
    let min_exp = match dtype {
        DType::F64 => -1022,
        DType::F32 | DType::Bf16 => -126,
        DType::F16 => -14,
    };
    let a = v.abs();
    let exp = if a > 0.0 && a.is_finite() {
        // Exponent of an f64 (exact for normal numbers; every dtype here widens to normal f64s
        // except f64 subnormals, which the clamp below handles).
        ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023
    } else {
        min_exp
    };
    2f64.powi(exp.max(min_exp)) * dtype.epsilon()
}

/// One bin of an error histogram: errors in `(lower_ulps, upper_ulps]` (the first bin holds
/// exact zeros: `lower_ulps = upper_ulps = 0`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UlpBin {
    pub lower_ulps: f64,
    pub upper_ulps: f64,
    pub count: usize,
}

/// Log-spaced histogram of `|error|` in ULPs of the dtype at `max(|reference value|, RMS of the
/// reference)` (near zero one ULP is arbitrarily small, see [`ulps_between`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UlpHistogram {
    pub bins: Vec<UlpBin>,
}

/// Upper edges after the zero bin: 1/4, 1/2, 1, 2, 4, ..., 2^14, then ∞.
const HIST_LOWEST_POW2: i32 = -2;
const HIST_HIGHEST_POW2: i32 = 14;

impl UlpHistogram {
    fn new() -> Self {
        let mut bins = vec![UlpBin {
            lower_ulps: 0.0,
            upper_ulps: 0.0,
            count: 0,
        }];
        let mut lower = 0.0;
        for p in HIST_LOWEST_POW2..=HIST_HIGHEST_POW2 {
            let upper = 2f64.powi(p);
            bins.push(UlpBin {
                lower_ulps: lower,
                upper_ulps: upper,
                count: 0,
            });
            lower = upper;
        }
        bins.push(UlpBin {
            lower_ulps: lower,
            upper_ulps: f64::INFINITY,
            count: 0,
        });
        Self { bins }
    }

    fn add(&mut self, ulps: f64) {
        let i = if ulps == 0.0 {
            0
        } else {
            self.bins
                .iter()
                .skip(1)
                .position(|b| ulps <= b.upper_ulps)
                .map_or(self.bins.len() - 1, |i| i + 1)
        };
        self.bins[i].count += 1;
    }

    /// Total count.
    pub fn total(&self) -> usize {
        self.bins.iter().map(|b| b.count).sum()
    }
}

/// A result against the f64 TP=1 reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorStats {
    pub max_abs: f64,
    /// `max_abs / max|reference|`.
    pub max_rel: f64,
    pub rms: f64,
    /// `max_abs / (ε·max|reference|)`: the error in ULPs of the largest output.
    pub max_rel_ulps: f64,
    pub histogram: UlpHistogram,
}

/// TP=k against TP=1 in the same dtype: the effect of summation order alone.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrderStats {
    pub elements: usize,
    /// Elements whose bits differ.
    pub differing: usize,
    /// Largest difference, in ULPs at `max(|value|, RMS of the reference)` (see [`ulps_between`]).
    pub max_ulps: f64,
    /// Median difference in the same ULPs over the differing elements (0 when none differ).
    pub median_ulps: f64,
    pub max_abs_diff: f64,
    /// `max_abs_diff / (ε·max|reference|)`.
    pub max_diff_rel_ulps: f64,
}

/// One (dtype, TP) run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrecisionRow {
    pub dtype: DType,
    pub tp: usize,
    pub epsilon: f64,
    pub vs_reference: ErrorStats,
    /// `None` for TP=1 itself, or when TP=1 is not in the sweep.
    pub vs_tp1: Option<OrderStats>,
}

/// Everything [`sweep`] measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrecisionReport {
    pub config: Config,
    pub dtypes: Vec<DType>,
    pub tps: Vec<usize>,
    /// Longest reduction in the block, `max(hidden, ffn)`: the `K` of the error bounds.
    pub reduction_len: usize,
    /// `max|reference output|`.
    pub reference_max_abs: f64,
    /// RMS of the reference output: ULPs are counted at no less than this magnitude.
    pub reference_rms: f64,
    pub rows: Vec<PrecisionRow>,
    pub explanation: String,
}

impl PrecisionReport {
    /// The row for `(dtype, tp)`.
    pub fn row(&self, dtype: DType, tp: usize) -> Option<&PrecisionRow> {
        self.rows.iter().find(|r| r.dtype == dtype && r.tp == tp)
    }

    /// One measured sentence per dtype: how TP=k differs from TP=1 against how far both are
    /// from f64.
    pub fn findings(&self) -> Vec<String> {
        let k = self.reduction_len as f64;
        let mut out = Vec::new();
        for &d in &self.dtypes {
            let Some(base) = self.row(d, 1) else { continue };
            for row in self.rows.iter().filter(|r| r.dtype == d && r.tp != 1) {
                let Some(o) = &row.vs_tp1 else { continue };
                out.push(format!(
                    "{d}: TP={} vs TP=1 differ in {} of {} elements ({:.1}%), median {:.1} ULP, \
                     max {:.1} ULPs (max diff {:.2e} = {:.1} ε·max|ref|); against f64, TP=1 is \
                     within {:.2e} and TP={} within {:.2e} (max rel, {:.1} and {:.1} ε); \
                     bounds: √K·ε = {:.2e}, K·ε = {:.2e} (K = {})",
                    row.tp,
                    o.differing,
                    o.elements,
                    100.0 * o.differing as f64 / o.elements.max(1) as f64,
                    o.median_ulps,
                    o.max_ulps,
                    o.max_abs_diff,
                    o.max_diff_rel_ulps,
                    base.vs_reference.max_rel,
                    row.tp,
                    row.vs_reference.max_rel,
                    base.vs_reference.max_rel_ulps,
                    row.vs_reference.max_rel_ulps,
                    k.sqrt() * row.epsilon,
                    k * row.epsilon,
                    self.reduction_len,
                ));
            }
        }
        out
    }
}

/// The precision lab's hook on the sharded executor: every forward op's output rounded to
/// `dtype`, and every all-reduce summed rank by rank in `dtype` with a rounding after each
/// addition (f32: no rounding and the engine's own collective).
struct Emulate(DType);

impl Emulate {
    fn low(&self) -> bool {
        matches!(self.0, DType::Bf16 | DType::F16)
    }
}

impl Rounding<f32> for Emulate {
    fn round(&self, _op: Op, out: &mut Array2<f32>) {
        if self.low() {
            out.mapv_inplace(|v| round_to(self.0, v));
        }
    }

    fn all_reduce(&self, _op: Op, partials: &[Array2<f32>]) -> Option<Array2<f32>> {
        if !self.low() {
            return None;
        }
        let (first, rest) = partials.split_first()?;
        let mut acc = first.clone();
        for p in rest {
            ndarray::Zip::from(&mut acc)
                .and(p)
                .for_each(|a, &b| *a = round_to(self.0, *a + b));
        }
        Some(acc)
    }
}

/// The block stack's forward on `cfg.tp` ranks in f32, rounding to `dtype` where the module docs
/// say: the sharded executor itself with the `Emulate` hook, on rounded weights and input. With
/// `dtype = F32` this is exactly [`sharded::run_with`]'s forward in f32.
pub fn forward_emulated(
    cfg: &Config,
    dtype: DType,
    model: &Model<f32>,
) -> Result<Array2<f32>, EngineError> {
    let hook = Emulate(dtype);
    let rnd = |a: &Array2<f32>| -> Array2<f32> {
        let mut a = a.clone();
        hook.round(Op::Ln1, &mut a);
        a
    };
    let plan = ShardPlan::new(cfg);
    let shards: Vec<Vec<LayerParams<f32>>> = plan
        .shard_model(model)
        .into_iter()
        .map(|layers| {
            layers
                .into_iter()
                .map(|p| LayerParams::from_fn(|k| rnd(p.get(k))))
                .collect()
        })
        .collect();
    let opts = Options {
        backward: false,
        record_collectives: false,
    };
    let run = sharded::run_on_shards_with(
        cfg,
        &shards,
        &rnd(&model.input),
        &model.grad_output,
        opts,
        &hook,
    )?;
    Ok(run.output())
}

/// The block stack's output for `(dtype, cfg.tp)`, widened to f64.
pub fn forward_in(
    cfg: &Config,
    dtype: DType,
    model: &Model<f64>,
) -> Result<Array2<f64>, EngineError> {
    if dtype == DType::F64 {
        let opts = Options {
            backward: false,
            record_collectives: false,
        };
        let run = sharded::run_with(cfg, &ShardPlan::new(cfg), model, opts)?;
        return Ok(run.output());
    }
    let m32 = Model::<f32> {
        input: model.input.mapv(|v| v as f32),
        layers: model.layers.iter().map(LayerParams::cast).collect(),
        grad_output: model.grad_output.mapv(|v| v as f32),
    };
    Ok(forward_emulated(cfg, dtype, &m32)?.mapv(f64::from))
}

/// What the sweep measures errors against: the precision, the reference output's largest
/// magnitude (the relative errors' scale) and its RMS (the ULP floor, see [`ulps_between`]).
#[derive(Debug, Clone, Copy)]
struct Scale {
    dtype: DType,
    ref_max: f64,
    floor: f64,
}

impl Scale {
    /// `abs` in ULPs of `dtype` at the reference's largest magnitude.
    fn rel_ulps(&self, abs: f64) -> f64 {
        abs / (self.dtype.epsilon() * self.ref_max.max(f64::MIN_POSITIVE))
    }
}

fn error_stats(sc: Scale, got: &Array2<f64>, want: &Array2<f64>) -> ErrorStats {
    let Scale {
        dtype,
        ref_max,
        floor,
    } = sc;
    let mut hist = UlpHistogram::new();
    let (mut max_abs, mut sq) = (0.0f64, 0.0f64);
    for (&g, &w) in got.iter().zip(want.iter()) {
        let e = (g - w).abs();
        max_abs = max_abs.max(e);
        sq += e * e;
        // The reference is not a value of `dtype`: measure the continuous distance.
        hist.add(e / ulp_at(dtype, w.abs().max(floor)));
    }
    let n = got.len().max(1) as f64;
    let scale = ref_max.max(f64::MIN_POSITIVE);
    ErrorStats {
        max_abs,
        max_rel: max_abs / scale,
        rms: (sq / n).sqrt(),
        max_rel_ulps: sc.rel_ulps(max_abs),
        histogram: hist,
    }
}

/// `|a − b|` in ULPs of `dtype` at `max(|a|, |b|, floor)`. Near zero one ULP is arbitrarily
/// small (the residual sums cancel to tiny values), so per-element counts there say nothing;
/// [`sweep`] uses the RMS of the reference output as `floor`.
/// Above `floor`, for values of `dtype`, this is the exact count of representable steps
/// ([`ulp_distance`]); below it, `|a − b| / ulp(floor)`.
pub fn ulps_between(dtype: DType, a: f64, b: f64, floor: f64) -> f64 {
    let m = a.abs().max(b.abs());
    if m >= floor && a.signum() == b.signum() {
        ulp_distance(dtype, a, b) as f64
    } else {
        (a - b).abs() / ulp_at(dtype, m.max(floor))
    }
}

fn order_stats(sc: Scale, got: &Array2<f64>, base: &Array2<f64>) -> OrderStats {
    let mut dists: Vec<f64> = got
        .iter()
        .zip(base.iter())
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .map(|(&a, &b)| ulps_between(sc.dtype, a, b, sc.floor))
        .collect();
    dists.sort_unstable_by(f64::total_cmp);
    let median_ulps = match dists.len() {
        0 => 0.0,
        n if n % 2 == 1 => dists[n / 2],
        n => (dists[n / 2 - 1] + dists[n / 2]) / 2.0,
    };
    let max_abs_diff = got
        .iter()
        .zip(base.iter())
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    OrderStats {
        elements: got.len(),
        differing: dists.len(),
        max_ulps: dists.last().copied().unwrap_or(0.0),
        median_ulps,
        max_abs_diff,
        max_diff_rel_ulps: sc.rel_ulps(max_abs_diff),
    }
}

/// Runs `cfg`'s block stack in every dtype at every TP size and measures each output against the
/// unsharded f64 reference and against TP=1 in the same dtype. `cfg.tp` and `cfg.dtype` are
/// ignored. **Errors** when a TP size is invalid for the shape (the error lists the valid ones)
/// or the scenario exceeds the memory guard.
pub fn sweep(
    cfg: &Config,
    dtypes: &[DType],
    tps: &[usize],
) -> Result<PrecisionReport, EngineError> {
    // Summation order is the subject: sequence parallelism's reduce-scatter adds the same partial
    // sums as the all-reduce, so the lab runs without it.
    let base = Config {
        dtype: DType::F64,
        tp: 1,
        sequence_parallel: false,
        ..cfg.clone()
    };
    base.validate()?;
    let cfgs: Vec<Config> = tps
        .iter()
        .map(|&tp| {
            let c = Config { tp, ..base.clone() };
            c.validate().map(|()| c)
        })
        .collect::<Result<_, _>>()?;
    let model = Model::<f64>::random(&base);
    let reference = crate::block::reference::forward(&base, &model);
    let ref_max = reference.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let ref_rms =
        (reference.iter().map(|v| v * v).sum::<f64>() / reference.len().max(1) as f64).sqrt();
    let mut rows = Vec::new();
    for &dtype in dtypes {
        let outs: Vec<Array2<f64>> = cfgs
            .iter()
            .map(|c| forward_in(c, dtype, &model))
            .collect::<Result<_, _>>()?;
        let tp1 = tps.iter().position(|&t| t == 1).map(|i| &outs[i]);
        let sc = Scale {
            dtype,
            ref_max,
            floor: ref_rms,
        };
        for (c, out) in cfgs.iter().zip(&outs) {
            rows.push(PrecisionRow {
                dtype,
                tp: c.tp,
                epsilon: dtype.epsilon(),
                vs_reference: error_stats(sc, out, &reference),
                vs_tp1: match tp1 {
                    Some(b) if c.tp != 1 => Some(order_stats(sc, out, b)),
                    _ => None,
                },
            });
        }
    }
    Ok(PrecisionReport {
        config: base.clone(),
        dtypes: dtypes.to_vec(),
        tps: tps.to_vec(),
        reduction_len: base.hidden.max(base.ffn),
        reference_max_abs: ref_max,
        reference_rms: ref_rms,
        rows,
        explanation: EXPLANATION.to_string(),
    })
}
