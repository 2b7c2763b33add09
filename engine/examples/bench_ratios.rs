//! Times the sharded executor and its matrix products in one process and prints JSON for
//! `scripts/bench-ratios.sh`, which adds numpy/OpenBLAS on the same shapes and prints ratios.
//!
//! Shapes: one GPT-2-small layer, tokens 512 (batch 1 × seq 512), hidden 768, 12 heads, f32.
//! Every case runs once per round, round after round (`REPS` rounds after a warm-up), and each
//! case's median is printed: on a machine shared with other work, a burst of load then slows
//! every case of a round alike instead of one case, so the ratios between cases hold.

use std::time::Instant;
use tplab_engine::block::design::{plan::ShardingPlan, program::propagate};
use tplab_engine::block::exec::design::run_program;
use tplab_engine::block::exec::sharded::{run_on_shards, Options};
use tplab_engine::block::ops::matmul;
use tplab_engine::block::plan::ShardPlan;
use tplab_engine::params::{LayerParams, Model};
use tplab_engine::{config::Config, dtype::DType};

const REPS: usize = 15;

fn median(mut t: Vec<f64>) -> f64 {
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// One timed case.
struct Case {
    run: Box<dyn Fn()>,
    times: Vec<f64>,
}

fn case(run: impl Fn() + 'static) -> Case {
    Case {
        run: Box::new(run),
        times: Vec::with_capacity(REPS),
    }
}

fn layer_case(cfg: Config, backward: bool) -> Case {
    let model = Model::<f32>::random(&cfg);
    let shards: Vec<Vec<LayerParams<f32>>> = ShardPlan::new(&cfg).shard_model(&model);
    let opts = Options {
        backward,
        record_collectives: false,
    };
    case(move || {
        let _ = std::hint::black_box(run_on_shards(
            &cfg,
            &shards,
            &model.input,
            &model.grad_output,
            opts,
        ));
    })
}

/// Megatron's plan as data, propagated and walked as `tplab design` runs any plan: forward and
/// backward, the parameters sharded inside the call (the run above reads resident shards).
fn design_case(cfg: Config) -> Case {
    let model = Model::<f32>::random(&cfg);
    let program = propagate(&cfg, &ShardingPlan::default());
    case(move || {
        let _ = std::hint::black_box(run_program(&cfg, &program, &model));
    })
}

fn main() {
    // GPT-2 small's layer (the default config) at tokens 512.
    let base = Config {
        seq: 512,
        ..Config::default()
    };
    if (
        base.hidden,
        base.heads,
        base.ffn,
        base.batch,
        base.layers,
        base.dtype,
    ) != (768, 12, 3072, 1, 1, DType::F32)
    {
        eprintln!("bench_ratios: the default config is no longer GPT-2 small's f32 layer (h 768, 12 heads, ffn 3072, batch 1, 1 layer): set those fields here");
        std::process::exit(2);
    }
    let tps = [1usize, 2, 3, 4, 6];
    let mut cases: Vec<Case> = tps
        .iter()
        .map(|&tp| layer_case(Config { tp, ..base.clone() }, true))
        .collect();
    cases.push(layer_case(
        Config {
            tp: 1,
            ..base.clone()
        },
        false,
    ));
    let design_tps = [1usize, 2, 4];
    for &tp in &design_tps {
        cases.push(design_case(Config { tp, ..base.clone() }));
    }
    // The block's four forward products: (m, k, n).
    let shapes = [
        (512, 768, 2304),
        (512, 768, 768),
        (512, 768, 3072),
        (512, 3072, 768),
    ];
    for (m, k, n) in shapes {
        let a = ndarray::Array2::<f32>::from_shape_fn((m, k), |(i, j)| {
            ((i * 7 + j * 3) % 13) as f32 - 6.0
        });
        let b = ndarray::Array2::<f32>::from_shape_fn((k, n), |(i, j)| {
            ((i * 5 + j * 11) % 17) as f32 - 8.0
        });
        cases.push(case(move || {
            let _ = std::hint::black_box(matmul(a.view(), b.view()));
        }));
    }
    for c in &cases {
        (c.run)();
    }
    for _ in 0..REPS {
        for c in &mut cases {
            let s = Instant::now();
            (c.run)();
            c.times.push(s.elapsed().as_secs_f64());
        }
    }
    let med: Vec<f64> = cases.iter().map(|c| median(c.times.clone())).collect();
    let fwd_bwd: Vec<String> = tps
        .iter()
        .zip(&med)
        .map(|(tp, s)| format!("\"{tp}\": {s:.6}"))
        .collect();
    let fwd = med[tps.len()];
    // `tplab design`'s call over the run on resident shards, same TP (both fwd+bwd, one walk).
    let design: Vec<String> = design_tps
        .iter()
        .enumerate()
        .map(|(i, &tp)| {
            let sharded = med[tps.iter().position(|&t| t == tp).unwrap_or(0)];
            format!("\"{tp}\": {:.3}", med[tps.len() + 1 + i] / sharded)
        })
        .collect();
    let gemm: Vec<String> = shapes
        .iter()
        .zip(&med[tps.len() + 1 + design_tps.len()..])
        .map(|((m, k, n), s)| format!("\"{m}x{k}x{n}\": {:.3}", 2.0 * (m * k * n) as f64 / s / 1e9))
        .collect();
    println!(
        "{{\"threads\": {}, \"fwd_bwd_s\": {{{}}}, \"fwd_s\": {fwd:.6}, \"fwd_bwd_gflop\": {:.4}, \"gemm_gflops\": {{{}}}, \"design_over_sharded\": {{{}}}}}",
        rayon_threads(),
        fwd_bwd.join(", "),
        model_gflop(&base),
        gemm.join(", "),
        design.join(", ")
    );
}

/// The products of one forward and backward, in GFLOP: the four linear layers (forward, and the
/// input and weight gradients: 3 × `2·t·h·(3h + h + 2f)`) and attention's causal score entries
/// only (`QKᵀ` and `PV` forward, four products backward, each `2·d·s(s+1)/2` per head). No
/// element-wise work is counted, so this is the rate of useful matrix work, comparable with
/// sgemm's.
fn model_gflop(cfg: &Config) -> f64 {
    let (t, h, f) = (cfg.tokens() as f64, cfg.hidden as f64, cfg.ffn as f64);
    let (s, d) = (cfg.seq as f64, cfg.head_dim() as f64);
    let heads = (cfg.batch * cfg.heads) as f64;
    let linear = 3.0 * 2.0 * t * h * (3.0 * h + h + 2.0 * f);
    let attention = 3.0 * 2.0 * heads * 2.0 * d * s * (s + 1.0) / 2.0;
    (linear + attention) / 1e9
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
