//! Numeric checks of the GPU executor against the f64 CPU reference, each written once
//! ([`check_scenario`]) and run for several scenarios. Without a usable GPU each test returns
//! early with a message, except under `TPLAB_REQUIRE_GPU=1` (set by scripts/gpu-check.sh),
//! where a missing GPU fails.

use tplab_engine::block::plan::ShardPlan;
use tplab_engine::block::reference::ReferenceRun;
use tplab_engine::{config::Config, config::Preset, dtype::DType};
use tplab_kernels::verify::{compare, expected, summary, Outputs};
use tplab_kernels::{probe, DeviceMode, RunOptions};

fn gpu_available(test: &str) -> bool {
    let p = probe();
    if p.usable() {
        return true;
    }
    if std::env::var("TPLAB_REQUIRE_GPU").as_deref() == Ok("1") {
        panic!(
            "{test}: TPLAB_REQUIRE_GPU=1 but the GPU is unavailable:\n{}",
            p.report()
        );
    }
    eprintln!("{test}: skipped, no usable GPU ({})", p.headline());
    false
}

/// The numeric check, written once for both executors: every output copy, the input gradient
/// and every shard gradient against the reference.
fn check_outputs(test: &str, cfg: &Config, got: Outputs<'_>, reference: &ReferenceRun<f64>) {
    let v = compare(cfg, got, expected(reference));
    eprintln!("{test} ({}): {}", cfg.label(), summary(&v));
    for c in v.failures() {
        eprintln!(
            "  FAILED {} (rank {:?}): error {:.3e} of scale {:.3e}",
            c.name, c.rank, c.max_rel_error, c.reference_max_abs
        );
    }
    assert!(v.passed(), "{test}: {}", summary(&v));
}

/// Runs `cfg` on the CPU executor (the engine's virtual GPUs, f64) and, when present, on the
/// GPU, and checks both with [`check_outputs`]; on the GPU also the measured trace.
fn check_scenario(test: &str, cfg: &Config) {
    let model = tplab_kernels::run::device_model(cfg);
    let reference = tplab_kernels::reference::reference(cfg, &model);

    let cpu_cfg = Config {
        dtype: DType::F64,
        ..cfg.clone()
    };
    let cpu = tplab_engine::block::exec::sharded::run(&cpu_cfg, &ShardPlan::new(&cpu_cfg), &model)
        .unwrap_or_else(|e| panic!("{test}: CPU executor failed: {e}"));
    check_outputs(
        &format!("{test} [CPU executor]"),
        &cpu_cfg,
        Outputs {
            output_per_rank: &cpu.outputs,
            grad_input_per_rank: &cpu.grad_inputs,
            grads: &cpu.grads,
        },
        &reference,
    );

    if !gpu_available(test) {
        return;
    }
    let run = tplab_kernels::run(
        cfg,
        &RunOptions {
            iters: 2,
            mode: DeviceMode::SingleDevice(0),
        },
        &mut |_, _| {},
    )
    .unwrap_or_else(|e| panic!("{test}: GPU run failed: {e}"));
    check_outputs(
        &format!("{test} [GPU]"),
        cfg,
        Outputs {
            output_per_rank: &run.output_per_rank,
            grad_input_per_rank: &run.grad_input_per_rank,
            grads: &run.grads,
        },
        &reference,
    );
    // Every event measured, in issue order per rank, with non-negative durations.
    assert!(run.trace.events.iter().all(|e| e.measured.is_some()));
    for r in 0..cfg.tp {
        let mut last_end = 0.0f64;
        for e in run
            .trace
            .events
            .iter()
            .filter(|e| !e.is_collective() && e.ranks[0] == r)
        {
            let m = e.measured.unwrap_or_default();
            assert!(m.duration_s >= 0.0);
            // Events on one stream run in order (1 µs slack for event resolution).
            assert!(
                m.start_s + 1e-6 >= last_end,
                "{} starts before its predecessor ends",
                e.label()
            );
            last_end = m.start_s + m.duration_s;
        }
    }
    if !cfg.sequence_parallel && cfg.kv_replicas() == 1 {
        let counts = run.trace.collective_counts(Some(0));
        assert_eq!(
            (counts.forward_all_reduce, counts.backward_all_reduce),
            (2, 2)
        );
    }
}

fn small(tp: usize, dtype: DType) -> Config {
    Config {
        hidden: 64,
        heads: 4,
        ffn: 256,
        seq: 16,
        batch: 2,
        layers: 2,
        dtype,
        seed: 17,
        tp,
        ..Preset::Tiny.config()
    }
}

#[test]
fn f32_small_every_tp() {
    for tp in [1, 2, 4] {
        check_scenario(&format!("f32 tp={tp}"), &small(tp, DType::F32));
    }
}

#[test]
fn bf16_small() {
    for tp in [1, 2, 4] {
        check_scenario(&format!("bf16 tp={tp}"), &small(tp, DType::Bf16));
    }
}

/// Non-power-of-two TP and a sequence that is not a multiple of the warp size.
#[test]
fn f32_odd_shapes() {
    let cfg = Config {
        hidden: 96,
        heads: 6,
        ffn: 384,
        seq: 33,
        batch: 3,
        layers: 1,
        tp: 3,
        dtype: DType::F32,
        ..Preset::Tiny.config()
    };
    check_scenario("f32 odd tp=3 seq=33", &cfg);
}

/// A GPT-2-small layer at TP=4 (the app's default scenario), long rows (h = 768 > block).
#[test]
fn f32_gpt2_small_tp4() {
    check_scenario("gpt2-small tp=4", &Preset::Gpt2Small.config());
}

/// Sequence parallelism: all-gathers and reduce-scatters instead of the all-reduces, the
/// LayerNorm outputs gathered again in backward, the LayerNorm and bias gradients summed.
#[test]
fn f32_sequence_parallel() {
    for tp in [2, 4] {
        let cfg = Config {
            sequence_parallel: true,
            ..small(tp, DType::F32)
        };
        check_scenario(&format!("f32 sp tp={tp}"), &cfg);
    }
    let bf = Config {
        sequence_parallel: true,
        ..small(4, DType::Bf16)
    };
    check_scenario("bf16 sp tp=4", &bf);
}

/// Grouped-query attention: 8 query heads on 2 KV heads, split (TP 1, 2) and replicated with
/// the copies' gradient sum (TP 4), with and without sequence parallelism.
#[test]
fn f32_grouped_query_attention() {
    for (tp, sp) in [(1, false), (2, false), (4, false), (4, true)] {
        let cfg = Config {
            heads: 8,
            kv_heads: Some(2),
            sequence_parallel: sp,
            ..small(tp, DType::F32)
        };
        check_scenario(&format!("f32 gqa kv=2 tp={tp} sp={sp}"), &cfg);
    }
    // Multi-query attention (one KV head) on every rank.
    let mqa = Config {
        heads: 4,
        kv_heads: Some(1),
        ..small(4, DType::F32)
    };
    check_scenario("f32 mqa tp=4", &mqa);
}

#[test]
fn invalid_dtype_is_a_clear_error() {
    let cfg = small(2, DType::F64);
    let err = tplab_kernels::run(&cfg, &RunOptions::default(), &mut |_, _| {}).unwrap_err();
    assert!(err.to_string().contains("f32 or bf16"), "{err}");
}

/// The benchmark table at the shape (tokens 512, hidden 768, 12 heads, TP 1, 2, 4, 8).
/// Run by scripts/gpu-check.sh as a fallback when the app binary cannot start on the device.
#[test]
#[ignore = "benchmark: run on a GPU with --ignored"]
fn bench_report() {
    if !gpu_available("bench_report") {
        return;
    }
    let opts = tplab_kernels::bench::BenchOptions {
        config: Config {
            seq: 512,
            batch: 1,
            tp: 1,
            dtype: DType::F32,
            ..Preset::Gpt2Small.config()
        },
        tps: vec![1, 2, 4, 8],
        iters: 5,
        reps: 20,
        ordinal: 0,
    };
    let report = tplab_kernels::bench::bench(&opts, &mut |m| eprintln!("{m}")).unwrap();
    println!("{}", report.table());
    assert!(report.rows.iter().all(|r| r.verified));
}

/// The decode check, written once for both executors: the same tokens as the unsharded f64
/// reference and every step's logits within the engine's f32 tolerance.
fn check_generation(
    test: &str,
    got: &tplab_engine::labs::serve::Generation,
    reference: &tplab_engine::labs::serve::Generation,
    tol: &tplab_engine::block::verify::Tolerance,
) {
    let c = tplab_engine::labs::serve::compare(got, reference, tol);
    eprintln!(
        "{test}: text {:?} (reference {:?}), worst logits error {:.2e}, tolerance {:.2e}",
        got.text, reference.text, c.max_logits_error, c.tolerance
    );
    assert!(c.same_text, "{test}: tokens differ from the reference");
    assert!(c.passed, "{test}: logits error {:.3e}", c.max_logits_error);
}

/// Decode (prefill, then token by token with the KV cache split by KV heads) of the shipped
/// model at TP 1, 2, 4, and of a grouped-query model with replicated KV heads at TP 4: the CPU
/// decoder in f32 always, the GPU when present.
#[test]
fn decode_matches_the_reference() {
    use tplab_engine::collectives::Algorithm;
    use tplab_engine::labs::serve::{self, Sampling, TinyModel};
    let shipped = TinyModel::<f64>::shipped().unwrap();
    let gqa_cfg = serve::tiny_serving_config(Some(2), DType::F64);
    let gqa = TinyModel::<f64>::random(&gqa_cfg);
    let prompt = "Tensor paralelli";
    let tokens = 12;
    let cluster = tplab_engine::capacity::hardware::Cluster::covering(
        &tplab_engine::capacity::hardware::Catalogue::default(),
        "h100",
        4,
        8,
        "ib400",
    )
    .unwrap();
    for (name, model, tps) in [
        ("shipped", &shipped, vec![1, 2, 4]),
        ("gqa kv=2", &gqa, vec![4]),
    ] {
        let reference = serve::reference_generate(model, prompt, tokens, Sampling::Greedy).unwrap();
        let tol = serve::logits_tolerance(model, DType::F32);
        // The CPU decoder in f32, from the same f32 weights the GPU holds.
        let m32 = TinyModel::<f32> {
            cfg: model.cfg.clone(),
            chars: model.chars.clone(),
            full: tplab_engine::labs::train::FullModel {
                embedding: model.full.embedding.mapv(|v| v as f32),
                pos: model.full.pos.mapv(|v| v as f32),
                layers: model
                    .full
                    .layers
                    .iter()
                    .map(|l| {
                        tplab_engine::params::LayerParams::from_fn(|k| l.get(k).mapv(|v| v as f32))
                    })
                    .collect(),
                lnf_w: model.full.lnf_w.mapv(|v| v as f32),
                lnf_b: model.full.lnf_b.mapv(|v| v as f32),
            },
        };
        for &tp in &tps {
            let cpu = serve::generate(&m32, prompt, tokens, tp, Algorithm::Ring, Sampling::Greedy)
                .unwrap();
            check_generation(
                &format!("decode {name} tp={tp} [CPU f32]"),
                &cpu,
                &reference,
                &tol,
            );
            if !gpu_available("decode_matches_the_reference") {
                continue;
            }
            let run = tplab_kernels::decode::decode(
                model,
                prompt,
                &tplab_kernels::decode::DecodeOptions {
                    tp,
                    tokens,
                    sampling: Sampling::Greedy,
                    mode: DeviceMode::SingleDevice(0),
                },
                &cluster,
            )
            .unwrap_or_else(|e| panic!("decode {name} tp={tp}: GPU decode failed: {e}"));
            check_generation(
                &format!("decode {name} tp={tp} [GPU]"),
                &run.generation,
                &reference,
                &tol,
            );
            assert_eq!(run.times.len(), tokens);
            assert!(run
                .times
                .iter()
                .all(|t| t.device_ms > 0.0 && t.predicted_ms > 0.0));
            eprintln!(
                "decode {name} tp={tp} [GPU]: {:.3} ms per token measured, {:.3} ms predicted",
                run.decode_ms(),
                run.predicted_decode_ms()
            );
        }
    }
}

/// The vocabulary-parallel embedding and cross-entropy (max / sum-of-exp / target all-reduces,
/// the LM head and its backward, the embedding gradient's scatter): the engine's f32 run always,
/// the GPU's when present, each checked against the f64 reference.
#[test]
fn vocabulary_parallel_cross_entropy() {
    for tp in [1, 2, 4] {
        let cfg = tplab_engine::labs::vocab::VocabConfig {
            vocab: 5000,
            hidden: 64,
            tokens: 48,
            tp,
            ..Default::default()
        };
        let cpu = tplab_engine::labs::vocab::run::<f32>(&cfg).unwrap();
        assert!(cpu.passed(), "vocab tp={tp} [CPU f32]");
        if !gpu_available("vocabulary_parallel_cross_entropy") {
            continue;
        }
        let gpu = tplab_kernels::vocab::run(&cfg, DeviceMode::SingleDevice(0))
            .unwrap_or_else(|e| panic!("vocab tp={tp}: GPU run failed: {e}"));
        for c in gpu.checks.iter().filter(|c| !c.passed) {
            eprintln!(
                "  FAILED {} (rank {:?}): {:.3e}",
                c.name, c.rank, c.max_rel_error
            );
        }
        eprintln!(
            "vocab tp={tp} [GPU]: loss {:.6} (reference {:.6})",
            gpu.loss, gpu.reference_loss
        );
        assert!(gpu.passed(), "vocab tp={tp} [GPU]");
        assert!(gpu.events.iter().all(|e| e.measured.is_some()));
    }
}

/// Every assignment of the four weights, with and without sequence parallelism, through the
/// lowered launch list on the GPU (f32, TP 4), and copied KV heads: every tensor within
/// the tolerance of the CPU reference. The same lists pass on the CPU in `program::tests`.
#[test]
fn every_learner_plan_on_the_gpu() {
    use tplab_engine::block::design::ShardingPlan;
    if !gpu_available("every_learner_plan_on_the_gpu") {
        return;
    }
    let opts = RunOptions {
        iters: 1,
        mode: DeviceMode::SingleDevice(0),
    };
    // TP 4 only (TP 1 and 2 run on the CPU test's lists): every move has four ranks to get
    // wrong, and one device's time budget in scripts/gpu-check.sh holds 243 runs.
    let mut cases = Vec::new();
    for sp in [false, true] {
        cases.push(Config {
            sequence_parallel: sp,
            layers: 1,
            ..small(4, DType::F32)
        });
    }
    cases.push(Config {
        kv_heads: Some(1),
        layers: 1,
        ..small(4, DType::F32)
    });
    for cfg in cases {
        for plan in ShardingPlan::all_assignments(cfg.sequence_parallel) {
            let run = tplab_kernels::run_plan(&cfg, &plan, &opts, &mut |_, _| {})
                .unwrap_or_else(|e| panic!("{} at {}: {e}", plan.describe(), cfg.label()));
            let bad: Vec<String> = run
                .checks
                .iter()
                .filter(|c| !c.passed)
                .map(|c| format!("{} {:.2e}", c.name, c.max_rel_error))
                .collect();
            assert!(
                bad.is_empty(),
                "{} at {}: {bad:?}",
                plan.describe(),
                cfg.label()
            );
            assert!(run.trace.events.iter().all(|e| e.measured.is_some()));
        }
    }
}
