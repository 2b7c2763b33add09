//! The precision lab: rounding helpers, the emulated paths, and the size of summation-order
//! effects on seeded random data.

use proptest::prelude::*;
use tplab_engine::block::exec::sharded::{self, Options};
use tplab_engine::block::plan::ShardPlan;
use tplab_engine::config::{Config, Preset};
use tplab_engine::dtype::DType;
use tplab_engine::labs::precision::{self, round_bf16, ulp_distance};
use tplab_engine::params::Model;

/// A tiny block (h=16, 4 heads, ffn 64, 16 tokens): fast in debug builds.
fn tiny(seed: u64) -> Config {
    Config {
        seed,
        ..Preset::Tiny.config()
    }
}

/// A slightly wider block so that the fc2 reduction (K = 256) has room to reorder.
fn small(seed: u64) -> Config {
    Config {
        hidden: 64,
        heads: 8,
        ffn: 256,
        seq: 8,
        batch: 2,
        seed,
        ..Preset::Tiny.config()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]
    #[test]
    fn bf16_rounding_matches_half(bits in any::<u32>()) {
        let x = f32::from_bits(bits);
        let want = half::bf16::from_f32(x).to_f32();
        let got = round_bf16(x);
        if x.is_nan() {
            prop_assert!(got.is_nan());
        } else {
            prop_assert_eq!(got.to_bits(), want.to_bits(), "x = {:e}", x);
        }
    }

    #[test]
    fn ulp_distance_counts_representable_steps(x in -1e3f32..1e3f32, k in 0u32..50) {
        // Stepping k representable f32 values up from x is k ULPs away.
        let mut y = x;
        for _ in 0..k {
            y = f32::from_bits(if y >= 0.0 { y.to_bits() + 1 } else if y.to_bits() == 0x8000_0000 { 1 } else { y.to_bits() - 1 });
        }
        let d = ulp_distance(DType::F32, f64::from(x), f64::from(y));
        // -0.0 and +0.0 are 1 apart in the ordered-integer map; stepping through zero adds one.
        prop_assert!(d == u64::from(k) || (x <= 0.0 && y >= 0.0 && d == u64::from(k) + 1), "{} vs {}", d, k);
    }
}

#[test]
fn bf16_ties_go_to_even() {
    // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1 + 2^-7: ties to even gives 1.0.
    assert_eq!(round_bf16(1.0 + 2f32.powi(-8)), 1.0);
    // 1 + 3·2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
    assert_eq!(round_bf16(1.0 + 3.0 * 2f32.powi(-8)), 1.0 + 2f32.powi(-6));
}

#[test]
fn emulated_f32_equals_the_engine_f32_run_bit_for_bit() {
    for tp in [1, 2, 4] {
        let cfg = Config {
            tp,
            layers: 2,
            dtype: DType::F32,
            ..tiny(11)
        };
        let model = Model::<f32>::random(&cfg);
        let opts = Options {
            backward: false,
            record_collectives: false,
        };
        let engine = sharded::run_with(&cfg, &ShardPlan::new(&cfg), &model, opts).unwrap();
        let emulated = precision::forward_emulated(&cfg, DType::F32, &model).unwrap();
        assert_eq!(emulated, engine.outputs[0], "tp={tp}");
        assert!(emulated.iter().any(|v| v.abs() > 0.1), "not trivial data");
    }
}

#[test]
fn errors_grow_as_precision_drops() {
    let r = precision::sweep(&small(3), &DType::ALL, &[1, 2]).unwrap();
    for tp in [1, 2] {
        let e = |d| r.row(d, tp).unwrap().vs_reference.max_rel;
        let (f64e, f32e, bf16e, f16e) =
            (e(DType::F64), e(DType::F32), e(DType::Bf16), e(DType::F16));
        assert!(f64e < 1e-13, "f64 {f64e}");
        assert!(
            f64e < f32e && f32e < f16e && f16e < bf16e,
            "{f64e} {f32e} {f16e} {bf16e}"
        );
        // Each dtype within a few hundred ε of max|ref| (K = 256 terms, errors mostly cancel:
        // √K·ε = 16ε typical; LayerNorm and GeLU add a few ε more) and above 0.1 ε (a real rounding).
        for d in DType::ALL {
            let ulps = r.row(d, tp).unwrap().vs_reference.max_rel_ulps;
            assert!(ulps < 256.0, "{d} tp={tp}: {ulps} ε");
        }
        assert!(r.row(DType::Bf16, tp).unwrap().vs_reference.max_rel_ulps > 0.1);
        let hist = &r.row(DType::F32, tp).unwrap().vs_reference.histogram;
        assert_eq!(hist.total(), 16 * 64);
    }
}

#[test]
fn summation_order_changes_f32_by_a_few_ulps_and_f64_by_nothing_visible() {
    for seed in [1, 2, 3] {
        let r = precision::sweep(
            &small(seed),
            &[DType::F64, DType::F32, DType::Bf16],
            &[1, 2, 4, 8],
        )
        .unwrap();
        for tp in [2, 4, 8] {
            let o = r.row(DType::F32, tp).unwrap().vs_tp1.clone().unwrap();
            // Reordering is real: some elements round differently...
            assert!(o.differing > 0, "seed {seed} tp {tp}: all identical");
            // ...but only by a few ULPs: both orders are within ~√K·ε = 16ε of the exact sum of
            // the fc2 reduction (K=256), so their difference stays far below 64ε·max|ref|.
            assert!(o.max_diff_rel_ulps <= 64.0, "seed {seed} tp {tp}: {o:?}");
            assert!(o.median_ulps <= 8.0, "seed {seed} tp {tp}: {o:?}");
            let f = r.row(DType::F64, tp).unwrap().vs_tp1.clone().unwrap();
            assert!(f.max_abs_diff / r.reference_max_abs <= 1e-12, "{f:?}");
            // bf16: the reorder moves results by at most a few bf16 ULPs of max|ref|.
            let b = r.row(DType::Bf16, tp).unwrap().vs_tp1.clone().unwrap();
            assert!(b.max_diff_rel_ulps <= 64.0, "{b:?}");
        }
        assert!(!r.findings().is_empty());
    }
}

#[test]
fn invalid_tp_is_refused_with_the_valid_list() {
    let err = precision::sweep(&tiny(1), &[DType::F32], &[1, 3]).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("valid TP sizes"), "{msg}");
}

#[test]
fn ulp_sizes_match_the_formats() {
    use precision::ulp_at;
    assert_eq!(ulp_at(DType::F32, 1.0), 2f64.powi(-23));
    assert_eq!(ulp_at(DType::F32, 1.99), 2f64.powi(-23));
    assert_eq!(ulp_at(DType::Bf16, 3.0), 2f64.powi(-6));
    assert_eq!(ulp_at(DType::F16, -1000.0), 0.5);
    // Below f16's smallest normal (2^-14) the spacing is the subnormal step 2^-24.
    assert_eq!(ulp_at(DType::F16, 1e-6), 2f64.powi(-24));
    assert_eq!(ulp_at(DType::F64, 0.0), 2f64.powi(-1074));
}
