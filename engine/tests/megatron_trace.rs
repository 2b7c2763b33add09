//! Megatron's trace is the propagated program's, and it is, to the byte, the trace the
//! hand-written schedule wrote before the rules replaced it (`tests/fixtures/megatron-trace-*`,
//! serialised from commit aaba2de's `block::program::schedule`): every event, placement on
//! every GPU, shape, FLOP and byte count and proportional time the views draw and the exports
//! write — with and without sequence parallelism and with grouped-query attention.

use tplab_engine::block::design::trace::trace;
use tplab_engine::block::exec::sharded::program;
use tplab_engine::block::program::schedule;
use tplab_engine::config::{Config, Preset};

fn configs() -> [(&'static str, Config); 3] {
    let tiny = Preset::Tiny.config();
    [
        (
            "tiny-tp2",
            Config {
                tp: 2,
                layers: 1,
                ..tiny.clone()
            },
        ),
        (
            "tiny-tp4-sp",
            Config {
                tp: 4,
                layers: 1,
                sequence_parallel: true,
                ..tiny.clone()
            },
        ),
        (
            "gqa-tp4-sp",
            Config {
                hidden: 32,
                heads: 8,
                kv_heads: Some(2),
                ffn: 64,
                tp: 4,
                layers: 1,
                sequence_parallel: true,
                ..tiny
            },
        ),
    ]
}

#[test]
fn megatrons_trace_is_the_hand_written_schedules_to_the_byte() {
    for (name, cfg) in configs() {
        let path = format!(
            "{}/tests/fixtures/megatron-trace-{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let want = std::fs::read_to_string(&path).expect("the fixture is in the repository");
        let got = schedule(&cfg).expect("Megatron's plan propagates");
        let got = serde_json::to_string(&got).expect("a trace serialises");
        assert!(got == want, "{name}: the trace differs from {path}");
        // `schedule` is the design trace of the program the executor walks, not a copy.
        let same = trace(&cfg, &program(&cfg)).expect("Megatron's plan propagates");
        assert_eq!(serde_json::to_string(&same).expect("serialises"), got);
    }
}

/// Every config the shape rules accept propagates under Megatron's plan: the views, which
/// draw any config that passes `validate_shapes`, always have a trace.
#[test]
fn every_config_the_shape_rules_accept_has_megatrons_trace() {
    let mut checked = 0;
    for tp in 1..=8 {
        for heads in [1, 2, 3, 4, 6, 8, 12, 16] {
            for kv in [None, Some(1), Some(2), Some(4)] {
                for sp in [false, true] {
                    let cfg = Config {
                        tp,
                        heads,
                        kv_heads: kv,
                        hidden: heads * 8,
                        ffn: 96,
                        seq: 24,
                        batch: 1,
                        layers: 1,
                        sequence_parallel: sp,
                        ..Preset::Tiny.config()
                    };
                    if cfg.validate_shapes().is_err() {
                        continue;
                    }
                    checked += 1;
                    if let Err(e) = schedule(&cfg) {
                        panic!("tp {tp} heads {heads} kv {kv:?} sp {sp}: {e}");
                    }
                }
            }
        }
    }
    assert!(checked > 50, "{checked}");
}
