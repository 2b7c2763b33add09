//! Comparing a GPU run with the CPU reference, through the engine's own verification
//! (`tplab_engine::block::verify::compare`): every rank's output copy, the input gradient and each
//! rank's shard gradients against the matching slice of the reference gradient.
//!
//! Tolerances per dtype (error relative to `max(max|ref|, 1)`, as the engine measures it):
//! - f32: the engine's own f32 tolerance (`Tolerance::for_config`, see `tplab_engine::block::verify`):
//!   the GPU, like the sharded CPU run, only reorders sums (cuBLAS runs in full f32, no TF32;
//!   kernels use IEEE division and `expf`, not the fast intrinsics).
//! - bf16: stored with 8 mantissa bits (unit roundoff 2⁻⁹ ≈ 2e-3), rounded at each of about 12
//!   op boundaries on the way to the input gradient, products accumulated in f32. Independent
//!   roundings add like a random walk (√12·2e-3 ≈ 7e-3); LayerNorm's division by the standard
//!   deviation and the softmax backward amplify that a few times, and each extra layer by
//!   √layers: `4e-2·√layers`. A wrong index, a missing bias or a missed all-reduce gives errors
//!   of order 1, far above either.

use tplab_engine::block::verify::{check_outputs, Tolerance, Verification};
use tplab_engine::{config::Config, dtype::DType};

/// An executor's results and the reference's: the engine's own types
/// ([`tplab_engine::block::verify::Outputs`], [`tplab_engine::block::verify::Expected`]).
pub use tplab_engine::block::verify::{Expected, Outputs};

/// The reference results of a CPU reference run.
pub fn expected(r: &tplab_engine::block::reference::ReferenceRun<f64>) -> Expected<'_> {
    Expected {
        output: &r.output,
        grad_input: &r.grad_input,
        grads: &r.grads,
        layer_norm_condition: r.layer_norm_condition(),
    }
}

/// A GPU run against the CPU reference of the same model: every rank's output, the input
/// gradient and every shard gradient, through [`compare`].
pub fn verify_run(
    cfg: &Config,
    run: &crate::run::GpuRun,
    reference: &tplab_engine::block::reference::ReferenceRun<f64>,
) -> Verification {
    compare(
        cfg,
        Outputs {
            output_per_rank: &run.output_per_rank,
            grad_input_per_rank: &run.grad_input_per_rank,
            grads: &run.grads,
        },
        expected(reference),
    )
}

/// Why a 16-bit GPU run (bf16, f16) is allowed `4e-2·√layers` (the module docs' argument): the
/// [`Tolerance::reason`] of such a run is this `Display`; a view words it from the fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LowPrecisionReason {
    pub dtype: DType,
}

impl std::fmt::Display for LowPrecisionReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: rounding to 8 mantissa bits at ~12 op boundaries (2^-9 each, adding like a \
             random walk) with f32 accumulation, amplified by LayerNorm and softmax backward, \
             ×√layers",
            self.dtype
        )
    }
}

/// The reason behind [`tolerance`] for a 16-bit run of `cfg`; `None` for f32 and f64 (whose
/// tolerance is the engine's rounding bound, [`Tolerance::bound`]).
pub fn low_precision_reason(cfg: &Config) -> Option<LowPrecisionReason> {
    matches!(cfg.dtype, DType::Bf16 | DType::F16).then_some(LowPrecisionReason { dtype: cfg.dtype })
}

/// The tolerance for a GPU run of `cfg` in `cfg.dtype` on data with LayerNorm conditioning
/// `kappa` (see the module docs; pass 1 for well-conditioned data).
pub fn tolerance(cfg: &Config, kappa: f64) -> Tolerance {
    match low_precision_reason(cfg) {
        Some(reason) => Tolerance {
            bound: None,
            relative: 4e-2 * (cfg.layers as f64).sqrt(),
            reason: reason.to_string(),
        },
        None => Tolerance::for_run(cfg, cfg.dtype, kappa),
    }
}

/// Compares an executor's results with the reference, tensor by tensor.
pub fn compare(cfg: &Config, got: Outputs<'_>, want: Expected<'_>) -> Verification {
    // The one verification path: the engine's, with the GPU's tolerance.
    let tol = tolerance(cfg, want.layer_norm_condition);
    let checks = check_outputs(cfg, got, want, &tol);
    Verification {
        tolerance: tol,
        checks,
    }
}

/// `PASS: 41 tensors, worst error 3.1e-6 (grad.layers.0.… rank 1) ≤ 2.9e-3 (reason)`.
pub fn summary(v: &Verification) -> String {
    let verdict = if v.passed() { "PASS" } else { "FAIL" };
    match v.worst() {
        Some(w) => format!(
            "{verdict}: {} tensors, worst error {:.2e} ({}{}), tolerance {:.2e} ({})",
            v.checks.len(),
            w.max_rel_error,
            w.name,
            w.rank.map(|r| format!(" rank {r}")).unwrap_or_default(),
            v.tolerance.relative,
            v.tolerance.reason
        ),
        None => format!("{verdict}: nothing compared"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;
    use tplab_engine::block::plan::ShardPlan;
    use tplab_engine::config::Preset;
    use tplab_engine::params::{LayerParams, Model};

    fn fake(cfg: &Config) -> (Array2<f64>, Array2<f64>, Vec<LayerParams<f64>>) {
        let m = Model::<f64>::random(cfg);
        (m.input, m.grad_output, m.layers)
    }

    #[test]
    fn sharded_gradients_are_compared_with_their_slices() {
        let cfg = Config {
            dtype: DType::F32,
            ..Preset::Tiny.config()
        };
        let (y, dx, grads) = fake(&cfg);
        let want = Expected {
            output: &y,
            grad_input: &dx,
            grads: &grads,
            layer_norm_condition: 1.0,
        };
        let plan = ShardPlan::new(&cfg);
        let shards = plan.shard_model(&Model {
            input: y.clone(),
            layers: grads.clone(),
            grad_output: dx.clone(),
        });
        let outs = vec![y.clone(); cfg.tp];
        let got = Outputs {
            output_per_rank: &outs,
            grad_input_per_rank: std::slice::from_ref(&dx),
            grads: &shards,
        };
        let v = compare(&cfg, got, want);
        assert!(v.passed(), "{}", summary(&v));
        assert_eq!(v.checks.len(), cfg.tp + 1 + cfg.tp * 12);

        // Swap two ranks' shards: every split tensor must now fail.
        let mut swapped = shards.clone();
        swapped.swap(0, 1);
        let v = compare(
            &cfg,
            Outputs {
                grads: &swapped,
                ..got
            },
            want,
        );
        assert!(!v.passed());
        assert_eq!(
            v.failures().count(),
            2 * 6,
            "6 split tensors on each of 2 ranks"
        );
    }

    #[test]
    fn tolerances_order_by_precision() {
        let cfg = Config {
            dtype: DType::F32,
            ..Preset::Tiny.config()
        };
        let f32_tol = tolerance(&cfg, 1.0).relative;
        let bf16_tol = tolerance(
            &Config {
                dtype: DType::Bf16,
                ..cfg.clone()
            },
            1.0,
        )
        .relative;
        let f64_tol = tolerance(
            &Config {
                dtype: DType::F64,
                ..cfg.clone()
            },
            1.0,
        )
        .relative;
        assert!(bf16_tol > f32_tol && f32_tol > f64_tol);
        // bf16 must still catch an order-1 error.
        assert!(bf16_tol < 0.1);
    }

    /// A 16-bit run's reason is data ([`LowPrecisionReason`], for a view to word) and its
    /// English is the tolerance's sentence; f32 and f64 carry the engine's bound instead.
    #[test]
    fn a_16_bit_tolerance_gives_its_reason_as_data() {
        for dtype in [DType::Bf16, DType::F16] {
            let cfg = Config {
                dtype,
                ..Preset::Tiny.config()
            };
            let reason = low_precision_reason(&cfg).expect("a 16-bit reason");
            assert_eq!(reason, LowPrecisionReason { dtype });
            let tol = tolerance(&cfg, 1.0);
            assert_eq!(tol.reason, reason.to_string());
            assert!(tol.bound.is_none() && tol.reason.starts_with(&format!("{dtype}: ")));
        }
        for dtype in [DType::F32, DType::F64] {
            let cfg = Config {
                dtype,
                ..Preset::Tiny.config()
            };
            assert_eq!(low_precision_reason(&cfg), None);
            assert!(tolerance(&cfg, 1.0).bound.is_some());
        }
    }
}
