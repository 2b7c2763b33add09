//! Property tests: random small configs (grouped-query attention and sequence parallelism
//! included) at every valid TP in 1..=8, sharded vs reference, forward and backward, f64 and f32;
//! invalid TPs give the specific error.

use proptest::prelude::*;
use tplab_engine::run::run_typed;
use tplab_engine::{collectives::Algorithm, config::Config, config::ConfigError, dtype::DType};

fn small_config() -> impl Strategy<Value = Config> {
    (
        1usize..=8,   // heads
        1usize..=4,   // head size
        1usize..=4,   // ffn multiplier
        1usize..=6,   // seq
        1usize..=3,   // batch
        1usize..=2,   // layers
        any::<u64>(), // seed
        prop::sample::select(Algorithm::ALL.to_vec()),
        (any::<bool>(), 0usize..8), // sequence parallelism, KV heads (a divisor of heads)
    )
        .prop_map(
            |(heads, d, fm, seq, batch, layers, seed, algorithm, (sequence_parallel, kv))| Config {
                hidden: heads * d,
                heads,
                kv_heads: {
                    let divisors: Vec<usize> = (1..=heads).filter(|k| heads % k == 0).collect();
                    Some(divisors[kv % divisors.len()])
                },
                ffn: heads * d * fm,
                seq,
                batch,
                layers,
                dtype: DType::F64,
                seed,
                tp: 1,
                algorithm,
                sequence_parallel,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Every valid TP in 1..=8: outputs, input gradient, every weight-gradient shard and every
    /// all-reduce result match the reference within the argued tolerance (f64 and f32).
    #[test]
    fn sharded_matches_reference_at_every_valid_tp(cfg in small_config()) {
        for tp in cfg.valid_tp_sizes().into_iter().filter(|&t| t <= 8) {
            let c = Config { tp, ..cfg.clone() };
            let r = run_typed::<f64>(&c, &|_, _| {}).unwrap();
            let v = &r.report.verification;
            prop_assert!(v.passed(), "tp={tp}: {:?}", v.failures().next());
            prop_assert_eq!(r.report.collectives.len(), 4 * c.layers);
            let r32 = run_typed::<f32>(&c, &|_, _| {}).unwrap();
            let v32 = &r32.report.verification;
            prop_assert!(v32.passed(), "f32 tp={tp}: {:?}", v32.failures().next());
        }
    }

    /// A TP that does not divide the heads names the heads rule and lists the valid sizes.
    #[test]
    fn invalid_tp_names_the_rule(cfg in small_config(), tp in 1usize..=64) {
        let c = Config { tp, ..cfg };
        match c.validate_shapes() {
            Ok(()) => prop_assert!(
                c.heads.is_multiple_of(tp)
                    && c.ffn.is_multiple_of(tp)
                    && (c.kv_heads().is_multiple_of(tp) || tp.is_multiple_of(c.kv_heads()))
                    && (!c.sequence_parallel || c.seq.is_multiple_of(tp))
            ),
            Err(ConfigError::HeadsNotDivisible { valid, .. }) => {
                prop_assert!(!c.heads.is_multiple_of(tp));
                prop_assert!(valid.iter().all(|t| c.heads.is_multiple_of(*t) && c.ffn.is_multiple_of(*t)));
            }
            Err(ConfigError::KvHeadsNotSplittable { valid, kv_heads, .. }) => {
                prop_assert!(!kv_heads.is_multiple_of(tp) && !tp.is_multiple_of(kv_heads));
                prop_assert!(valid.iter().all(|t| kv_heads.is_multiple_of(*t) || t.is_multiple_of(kv_heads)));
            }
            Err(ConfigError::FfnNotDivisible { .. }) => prop_assert!(!c.ffn.is_multiple_of(tp)),
            Err(ConfigError::SeqNotDivisible { valid, .. }) => {
                prop_assert!(c.sequence_parallel && !c.seq.is_multiple_of(tp));
                prop_assert!(valid.iter().all(|t| c.seq.is_multiple_of(*t)));
            }
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }
}
