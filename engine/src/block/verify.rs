//! Comparing the sharded run with the reference, with tolerances that say why.
//!
//! The sharded executor and the reference compute the same sums in a different order (the split
//! cuts every row-parallel dot product into `tp` partial sums that the all-reduce adds; the
//! executors also use different matrix-product kernels). The worst-case rounding error of a
//! length-`K` dot product is `K·u·Σ|aᵢbᵢ|`, but with independent rounding errors it grows like a
//! random walk: `λ·√K·u·Σ|aᵢbᵢ|` with probability at least `1 − 2·exp(−λ²/2)` (Higham & Mary,
//! "A new approach to probabilistic rounding error analysis", SIAM J. Sci. Comput. 2019). So the
//! tolerance, relative to the largest value of the reference tensor, is
//!
//! `max|got − want| ≤ 16 · ε · √K · (L + 1) · max(max|want|, 1)`
//!
//! with `ε` the dtype's machine epsilon, `K` the longest reduction in the block (`max(h, f, s, b·s)`: weight gradients sum over every token),
//! `L + 1` for the depth the error passes through (forward through `L` blocks, then back), and 16 =
//! 2 executors × λ = 4 (failure probability < 1e-3 per sum) × 2 for `Σ|ab|/|Σab|` of random data.
//! For f32 at GPT-2-small width (K = 3072, L = 1) that is 2.1e-4; measured errors there are about
//! 1e-6. For f64 it is ≈ 3e-13, the "agree to ~1e-12" the engine promises.
//!
//! One more factor comes from the data: LayerNorm's conditioning `κ = max_t rms(x_t)/σ(x_t)` over
//! every token row entering a LayerNorm (forward caches of the reference). Subtracting the mean
//! and dividing by `σ` amplify rounding errors by that ratio, and the LayerNorm backward cancels
//! its terms (`g − mean(g) − x̂·mean(g·x̂)`) down to a fraction of their size. With random data at
//! realistic widths `κ ≈ 1` and the bound is unchanged (it is multiplied by `max(1, κ)`); at toy widths it is not:
//! over `h = 2` features LayerNorm outputs exactly ±1, its gradient is zero and what flows back
//! through it is rounding noise scaled by `1/σ`, which is unbounded when the two features are
//! close. [`Tolerance::for_run`] measures `κ` and widens the bound by it, so a degenerate toy does
//! not report a false failure and the reason says why.

use crate::config::Config;
use crate::dtype::DType;
use ndarray::{Array2, ArrayView2};
use serde::Serialize;

/// The tolerance of one run and its reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tolerance {
    /// Allowed `max|got − want| / max(max|want|, 1)`.
    pub relative: f64,
    pub reason: String,
    /// The factors of the rounding bound, when the tolerance is [`Tolerance::for_run`]'s
    /// (`reason` is their English), for a view to word in the learner's language.
    #[serde(skip)]
    pub bound: Option<RoundingBound>,
}

/// `relative = 16 · ε · √K · depth · conditioning`, factor by factor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundingBound {
    pub dtype: DType,
    pub epsilon: f64,
    /// The longest reduction.
    pub k: usize,
    /// Layers + 1.
    pub depth: usize,
    /// `max(1, κ)`.
    pub conditioning: f64,
}

impl Tolerance {
    /// The tolerance for comparing a `dtype` run of `cfg` with its reference, for well-conditioned
    /// LayerNorm inputs (`κ ≤ 1`, see module docs).
    pub fn for_config(cfg: &Config, dtype: DType) -> Self {
        Self::for_run(cfg, dtype, 1.0)
    }

    /// The tolerance for a run whose LayerNorm inputs have conditioning `kappa`
    /// (`max_t rms(x_t)/σ(x_t)`, see [`layer_norm_condition`]).
    pub fn for_run(cfg: &Config, dtype: DType, kappa: f64) -> Self {
        let eps = dtype.epsilon();
        // The longest reduction: a dot product over hidden or ffn, attention over seq, and every
        // weight and bias gradient, which sums over all batch·seq tokens.
        let k = cfg.hidden.max(cfg.ffn).max(cfg.seq).max(cfg.tokens());
        let depth = cfg.layers + 1;
        let conditioning = if kappa.is_finite() {
            kappa.max(1.0)
        } else {
            1.0
        };
        let relative = 16.0 * eps * (k as f64).sqrt() * depth as f64 * conditioning;
        let reason = format!(
            "{dtype} ε={eps:.2e} × √K (K={k}, longest reduction: hidden, ffn, or the tokens a \
             gradient sums over; rounding errors add like a random walk) × depth (layers+1)={depth} × 16 (two executors × λ=4 × Σ|ab|/|Σab|) \
             × max(1, κ)={conditioning:.2} (LayerNorm conditioning κ = max rms(x)/σ(x), large \
             only when a row's features are nearly equal, as at tiny hidden sizes): the split \
             reorders every row-parallel sum, so results differ by rounding only"
        );
        Self {
            relative,
            reason,
            bound: Some(RoundingBound {
                dtype,
                epsilon: eps,
                k,
                depth,
                conditioning,
            }),
        }
    }
}

/// LayerNorm conditioning of `rows` (one token per row): `max_t rms(x_t) · rstd_t`, where `rstd`
/// is the `1/sqrt(var + eps)` the LayerNorm used. 1 for zero-mean rows, large for rows whose
/// features are nearly equal (the mean subtraction cancels).
pub fn layer_norm_condition(rows: ArrayView2<f64>, rstd: &[f64]) -> f64 {
    rows.outer_iter()
        .zip(rstd)
        .map(|(row, &r)| {
            let n = row.len().max(1) as f64;
            (row.iter().map(|v| v * v).sum::<f64>() / n).sqrt() * r
        })
        .fold(0.0, f64::max)
}

/// What a check compares, as a type: the views word it from this, never from the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Checked {
    /// The block stack's output.
    Output,
    /// The gradient of the stack's input.
    GradInput,
    /// The number of ranks that produced results.
    RankCount,
    /// The gradient of parameter `kind` of layer `layer`.
    ParamGrad {
        layer: usize,
        kind: crate::params::ParamKind,
    },
    /// What op `op` of layer `layer` produced (a collective's result).
    OpResult { layer: usize, op: crate::block::Op },
    /// Anything else (the labs' own checks), known by its name only.
    #[default]
    Other,
}

/// One tensor compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// Tensor name, e.g. `output`, `grad.layers.0.mlp.fc1.weight`, `layers.0.mlp.g`.
    pub name: String,
    /// What it compares, as a type (not exported: the name is).
    #[serde(skip)]
    pub what: Checked,
    /// The rank whose copy or shard was compared (`None` for replicated values checked on rank 0).
    pub rank: Option<usize>,
    pub max_abs_error: f64,
    /// `max_abs_error / max(max|want|, 1)`.
    pub max_rel_error: f64,
    pub reference_max_abs: f64,
    pub tolerance: f64,
    pub passed: bool,
}

/// All checks of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verification {
    pub tolerance: Tolerance,
    pub checks: Vec<Check>,
}

impl Verification {
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }

    /// The check with the largest relative error.
    pub fn worst(&self) -> Option<&Check> {
        self.checks
            .iter()
            .max_by(|a, b| a.max_rel_error.total_cmp(&b.max_rel_error))
    }

    pub fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| !c.passed)
    }
}

impl Check {
    /// The check, saying what it compares.
    pub fn about(self, what: Checked) -> Self {
        Self { what, ..self }
    }
}

/// Compares `got` with `want` (shapes must match; a mismatch fails the check with infinite error).
pub fn compare(
    name: impl Into<String>,
    rank: Option<usize>,
    got: ArrayView2<'_, f64>,
    want: ArrayView2<'_, f64>,
    tol: &Tolerance,
) -> Check {
    let reference_max_abs = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let max_abs_error = if got.dim() == want.dim() {
        got.iter()
            .zip(want.iter())
            .map(|(a, b)| {
                let d = (a - b).abs();
                if d.is_nan() {
                    f64::INFINITY
                } else {
                    d
                }
            })
            .fold(0.0f64, f64::max)
    } else {
        f64::INFINITY
    };
    let max_rel_error = max_abs_error / reference_max_abs.max(1.0);
    Check {
        name: name.into(),
        what: Checked::Other,
        rank,
        max_abs_error,
        max_rel_error,
        reference_max_abs,
        tolerance: tol.relative,
        passed: max_rel_error <= tol.relative,
    }
}

/// What an executor produced, widened to f64: every rank's copy of the output (with sequence
/// parallelism its token rows), the input gradient (one full copy, or every rank's token rows),
/// and every rank's shard gradients `[rank][layer]`.
#[derive(Debug, Clone, Copy)]
pub struct Outputs<'a> {
    pub output_per_rank: &'a [Array2<f64>],
    pub grad_input_per_rank: &'a [Array2<f64>],
    pub grads: &'a [Vec<crate::params::LayerParams<f64>>],
}

/// The unsharded reference's results the outputs are checked against.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    pub output: &'a Array2<f64>,
    pub grad_input: &'a Array2<f64>,
    /// Full gradients per layer.
    pub grads: &'a [crate::params::LayerParams<f64>],
    /// LayerNorm conditioning of the data ([`crate::block::reference::ReferenceRun::layer_norm_condition`]).
    pub layer_norm_condition: f64,
}

/// The one verification of an executor against the reference, for the CPU and the GPU alike:
/// every rank's output (its token rows with sequence parallelism), the input gradient, and every
/// rank's shard of every parameter gradient against the same slice of the reference's, as the
/// shard plan cuts it; a wrong number of ranks fails too.
pub fn check_outputs(
    cfg: &Config,
    got: Outputs<'_>,
    want: Expected<'_>,
    tol: &Tolerance,
) -> Vec<Check> {
    let plan = crate::block::plan::ShardPlan::new(cfg);
    let tp = cfg.tp.max(1);
    // A copy that covers every token, or rank `r`'s rows of them.
    let rows_of = |a: &Array2<f64>, r: usize, full: &Array2<f64>| {
        if a.nrows() == full.nrows() {
            0..full.nrows()
        } else {
            cfg.token_rows(r)
        }
    };
    let mut checks = Vec::new();
    for (r, y) in got.output_per_rank.iter().enumerate() {
        let rows = rows_of(y, r, want.output);
        checks.push(
            compare(
                "output",
                Some(r),
                y.view(),
                want.output.slice(ndarray::s![rows, ..]),
                tol,
            )
            .about(Checked::Output),
        );
    }
    for (r, dx) in got.grad_input_per_rank.iter().enumerate() {
        let rows = rows_of(dx, r, want.grad_input);
        checks.push(
            compare(
                "grad.input",
                Some(r),
                dx.view(),
                want.grad_input.slice(ndarray::s![rows, ..]),
                tol,
            )
            .about(Checked::GradInput),
        );
    }
    for (layer, full) in want.grads.iter().enumerate() {
        for k in crate::params::ParamKind::ALL {
            let shard = plan.param(k);
            for (r, layers) in got.grads.iter().enumerate() {
                let Some(lp) = layers.get(layer) else {
                    continue;
                };
                let slice = shard.extract(full.get(k).view(), r);
                checks.push(
                    compare(
                        format!("grad.{}", k.name(layer)),
                        Some(r),
                        lp.get(k).view(),
                        slice.view(),
                        tol,
                    )
                    .about(Checked::ParamGrad { layer, kind: k }),
                );
            }
        }
    }
    if got.grads.len() != tp || got.output_per_rank.len() != tp {
        checks.push(
            compare(
                "rank count",
                None,
                Array2::from_elem((1, 1), got.grads.len() as f64).view(),
                Array2::from_elem((1, 1), tp as f64).view(),
                tol,
            )
            .about(Checked::RankCount),
        );
    }
    checks
}

/// `|got − want|` elementwise, for heatmaps.
pub fn error_matrix(got: ArrayView2<'_, f64>, want: ArrayView2<'_, f64>) -> Array2<f64> {
    if got.dim() != want.dim() {
        return Array2::from_elem(want.dim(), f64::INFINITY);
    }
    let mut e = &got - &want;
    e.mapv_inplace(f64::abs);
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn layer_norm_condition_is_one_for_centred_rows_and_large_for_near_equal_features() {
        // Centred row: rms = σ, so κ = rms·rstd ≈ 1 (eps aside).
        let centred = array![[1.0, -1.0, 2.0, -2.0]];
        let var: f64 = 2.5;
        let k = layer_norm_condition(centred.view(), &[1.0 / (var + 1e-5).sqrt()]);
        assert!((k - 1.0).abs() < 1e-5, "{k}");
        // Two nearly equal features: σ = 0.005, rms ≈ 3, κ ≈ 600.
        let flat = array![[3.0, 3.01]];
        let var = 0.005f64.powi(2);
        let k = layer_norm_condition(flat.view(), &[1.0 / (var + 1e-5).sqrt()]);
        assert!(k > 500.0, "{k}");
        let cfg = Config::default();
        let wide = Tolerance::for_run(&cfg, DType::F64, k);
        let base = Tolerance::for_config(&cfg, DType::F64);
        assert!((wide.relative / base.relative - k).abs() < 1e-9);
        assert!(wide.reason.contains("κ"));
    }

    #[test]
    fn compare_flags_errors_above_tolerance_and_nan() {
        let tol = Tolerance {
            relative: 1e-6,
            reason: String::new(),
            bound: None,
        };
        let want = array![[1.0, -4.0], [2.0, 0.5]];
        let mut got = want.clone();
        got[(0, 1)] += 3e-6; // 3e-6 / 4 = 7.5e-7 relative: passes
        assert!(compare("a", None, got.view(), want.view(), &tol).passed);
        got[(1, 0)] += 1e-5;
        let c = compare("a", None, got.view(), want.view(), &tol);
        assert!(!c.passed && (c.max_abs_error - 1e-5).abs() < 1e-12);
        got[(1, 1)] = f64::NAN;
        assert!(!compare("a", None, got.view(), want.view(), &tol).passed);
    }
}
