//! Property tests: every validation a CLI entry point relies on gets arbitrary numbers — zero,
//! one, powers of two, `u64::MAX`, NaN and infinities — and must answer with a result or an
//! error, within a watchdog bound, never a panic (an overflow in these debug-assertion builds is
//! a panic) and never a wrong "fits". Plus arbitrary bytes for the config.json and hardware TOML
//! parsers (cargo-fuzz targets in `fuzz/` run the same parsers for longer).

use proptest::prelude::*;
use std::sync::mpsc;
use std::time::Duration;
use tplab_engine::capacity::cost::{self, TrainSetup};
use tplab_engine::capacity::hardware::{Catalogue, Cluster};
use tplab_engine::capacity::memory::{self, Layout, Recompute};
use tplab_engine::capacity::models::{ModelPreset, ModelSpec};
use tplab_engine::capacity::planner::{self, PlanRequest};
use tplab_engine::labs::train::{Corpus, TrainConfig};
use tplab_engine::labs::vocab::VocabConfig;
use tplab_engine::{config::Config, dtype::DType};

/// A hang guard, not a speed target: the call must return within a minute even in a loaded,
/// unoptimised build (each takes milliseconds). A panic inside re-raises here.
fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("no answer within 60 s: a hang"),
        Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Err(p) => std::panic::resume_unwind(p),
            Ok(()) => panic!("the call ended without an answer"),
        },
    }
}

/// Sizes a user can type: edge values, powers of two around every limit, and anything at all.
fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        prop::sample::select(vec![
            0usize,
            1,
            2,
            3,
            7,
            8,
            64,
            96,
            4096,
            1 << 16,
            1 << 20,
            (1 << 24) + 1,
            1 << 32,
            100_000_000_000,
            1 << 62,
            usize::MAX - 1,
            usize::MAX,
        ]),
        1usize..=4096,
        any::<usize>(),
    ]
}

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        prop::sample::select(vec![
            0.0,
            -0.0,
            -1.0,
            1e-300,
            1e-3,
            1.0,
            400.0,
            1e300,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ]),
        any::<f64>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// `tplab run` / `gpu run` / `precision`: the scenario's validation.
    #[test]
    fn scenario_validation_answers(
        hidden in size(), heads in size(), ffn in size(), seq in size(), batch in size(),
        layers in size(), tp in size(), kv in proptest::option::of(size()), sp in any::<bool>(),
    ) {
        let cfg = Config {
            hidden, heads, ffn, seq, batch, layers, tp, kv_heads: kv, sequence_parallel: sp,
            ..Config::default()
        };
        let c = cfg.clone();
        let (ok, needed) = within(move || {
            let _ = (c.tokens(), c.params_per_layer(), c.label(), c.valid_tp_sizes());
            let ok = c.validate_for_cpu();
            if let Err(e) = &ok {
                assert!(!e.to_string().is_empty());
            }
            (ok.is_ok(), c.execution_bytes_estimate())
        });
        if ok {
            prop_assert!(needed <= tplab_engine::config::DEFAULT_MEMORY_GUARD_BYTES);
            let m = within(move || memory::config_memory(&cfg));
            prop_assert!(m.total_bytes_per_rank >= m.weights_bytes_per_rank);
        }
    }

    /// `tplab plan` / `memory`: a custom model, a cluster and a training setup.
    #[test]
    fn planner_validation_answers(
        layers in size(), hidden in size(), heads in size(), vocab in size(), seq in size(),
        gpus in size(), per_node in size(), global_batch in size(),
        micro in proptest::option::of(size()), zero in any::<u8>(),
    ) {
        let r = within(move || {
            let mut m = ModelSpec::gpt("custom", layers, hidden, heads, vocab, seq.max(1));
            m.kv_heads = heads;
            m.validate().map_err(|e| e.to_string())?;
            assert!(m.params() <= tplab_engine::capacity::models::MAX_PARAMS);
            let cluster = Cluster::new(&Catalogue::default(), "a100", gpus, per_node, "ib400")
                .map_err(|e| e.to_string())?;
            let setup = TrainSetup { seq, global_batch, overlap_dp: true };
            setup.validate().map_err(|e| e.to_string())?;
            let req = PlanRequest {
                model: m, setup, cluster, micro_batch: micro, sp: None, recompute: None, zero,
            };
            let plan = planner::plan(&req);
            for it in &plan.ranked {
                assert!(it.fits && it.memory.total_bytes <= it.memory_limit_bytes);
                assert!(it.iteration_time_s.is_finite() && it.iteration_time_s > 0.0);
                assert!(it.tokens_per_s.is_finite() && it.tokens_per_s > 0.0);
            }
            Ok::<(), String>(())
        });
        // Either outcome is fine; a rejected input must say why.
        if let Err(e) = r {
            prop_assert!(!e.is_empty());
        }
    }

    /// `--layout TP,PP,DP` for training and serving on a preset model.
    #[test]
    fn layout_validation_answers(
        tp in size(), pp in size(), dp in size(), micro in size(), zero in any::<u8>(),
        seq in size(), global_batch in size(), sequences in size(), preset in 0usize..6,
    ) {
        within(move || {
            let model = ModelPreset::ALL[preset].spec();
            let cluster =
                Cluster::new(&Catalogue::default(), "h100", 64, 8, "ib400").expect("cluster");
            let layout = Layout {
                tp, pp, dp, micro_batch: micro, sp: true, recompute: Recompute::Selective, zero,
                ep: 1,
                etp: 0,
            };
            let setup = TrainSetup { seq, global_batch, overlap_dp: true };
            if let Ok(it) = cost::iteration_time(&model, &setup, &cluster, &layout) {
                assert_eq!(layout.gpus(), 64);
                assert!(it.iteration_time_s.is_finite());
            }
            let _ = memory::training_memory(&model, seq, global_batch, &layout);
            if memory::check_serving_tp(&model, tp, cluster.gpus).is_ok() {
                assert!(tp <= 64 && model.heads.is_multiple_of(tp));
                let m = memory::serving_memory(&model, tp, 1, sequences, seq);
                assert!(m.total_bytes >= m.weights_bytes);
            }
        });
    }

    /// `tplab vocab`.
    #[test]
    fn vocab_validation_answers(
        vocab in size(), hidden in size(), tokens in size(), tp in size(), granularity in size(),
    ) {
        let cfg = VocabConfig { vocab, hidden, tokens, tp, granularity, ..VocabConfig::default() };
        let c = cfg.clone();
        let ok = within(move || c.validate().is_ok());
        if ok {
            let padded = cfg.padded_vocab();
            prop_assert!(padded >= vocab && padded.is_multiple_of(granularity * tp));
            prop_assert!(cfg.bytes_estimate() <= tplab_engine::config::DEFAULT_MEMORY_GUARD_BYTES);
        }
    }

    /// `tplab train`.
    #[test]
    fn train_validation_answers(
        hidden in size(), heads in size(), seq in size(), batch in size(), layers in size(),
        steps in size(), lr in float(), tp in size(),
    ) {
        let cfg = TrainConfig {
            hidden, heads, ffn: hidden.saturating_mul(4), seq, batch, layers, steps, lr, tp,
            dtype: DType::F32, ..TrainConfig::default()
        };
        let ok = within(move || cfg.validate(&Corpus::guide()).is_ok());
        if ok {
            prop_assert!(lr.is_finite() && lr > 0.0 && steps >= 1);
        }
    }

    /// `--hardware FILE`: every number of a GPU and a link.
    #[test]
    fn hardware_values_answer(values in prop::collection::vec(float(), 8)) {
        let text = format!(
            "[[link]]\nname = \"l\"\nbandwidth_gbs = {:?}\nlatency_us = {:?}\n\n\
             [[gpu]]\nname = \"g\"\npeak_bf16_tflops = {:?}\npeak_tf32_tflops = {:?}\n\
             peak_fp32_tflops = {:?}\npeak_fp64_tflops = {:?}\nmemory_gb = {:?}\n\
             memory_bandwidth_gbs = {:?}\nintra_node_link = \"l\"\n",
            values[0], values[1], values[2], values[3], values[4], values[5], values[6],
            values[7]
        )
        .replace("NaN", "nan");
        let r = within(move || Catalogue::default().from_toml(&text).map_err(|e| e.to_string()));
        if let Ok(cat) = r {
            let g = cat.gpu("G").expect("named GPU selectable, case-insensitively");
            for v in [g.peak_bf16_tflops, g.peak_fp32_tflops, g.memory_gb] {
                prop_assert!(v.is_finite() && v > 0.0);
            }
        }
    }
}

/// The key names `ModelSpec::from_hf_config` reads.
const HF_KEYS: [&str; 17] = [
    "model_type",
    "n_layer",
    "n_embd",
    "n_head",
    "n_inner",
    "n_positions",
    "vocab_size",
    "num_hidden_layers",
    "hidden_size",
    "num_attention_heads",
    "num_key_value_heads",
    "intermediate_size",
    "max_position_embeddings",
    "num_local_experts",
    "num_experts_per_tok",
    "tie_word_embeddings",
    "junk",
];

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        size().prop_map(|n| serde_json::json!(n)),
        any::<i64>().prop_map(|n| serde_json::json!(n)),
        any::<f64>().prop_map(|x| serde_json::json!(x)),
        any::<bool>().prop_map(|b| serde_json::json!(b)),
        ".{0,8}".prop_map(|s| serde_json::json!(s)),
        Just(serde_json::Value::Null),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// config.json: arbitrary bytes never panic.
    #[test]
    fn hf_config_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        within(move || {
            let _ = ModelSpec::from_hf_config(&text);
        });
    }

    /// config.json: objects of the known keys with arbitrary values; what parses is valid and
    /// plans without overflow.
    #[test]
    fn hf_config_objects_answer(
        entries in prop::collection::vec((prop::sample::select(HF_KEYS.to_vec()), json_value()), 0..16)
    ) {
        let obj: serde_json::Map<String, serde_json::Value> =
            entries.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let text = serde_json::Value::Object(obj).to_string();
        within(move || {
            if let Ok(m) = ModelSpec::from_hf_config(&text) {
                assert!(m.validate().is_ok());
                let _ = (m.summary(), m.active_params(), m.kv_cache_bytes_per_token(2));
                let cluster =
                    Cluster::new(&Catalogue::default(), "h100", 16, 8, "ib400").expect("cluster");
                let setup = TrainSetup { seq: m.seq.min(4096), global_batch: 16, overlap_dp: true };
                let req = PlanRequest {
                    model: m, setup, cluster, micro_batch: Some(1), sp: None, recompute: None,
                    zero: 1,
                };
                let _ = planner::plan(&req);
            }
        });
    }

    /// Hardware TOML: arbitrary text never panics; what parses has every value in range.
    #[test]
    fn hardware_toml_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        within(move || {
            if let Ok(cat) = Catalogue::default().from_toml(&text) {
                assert!(cat.gpus.iter().all(|g| g.memory_gb.is_finite() && g.memory_gb > 0.0));
            }
        });
    }
}
