//! Times the sharded executor and its matrix products in one process and prints JSON for
//! `scripts/bench-ratios.sh`, which adds numpy/OpenBLAS on the same shapes and prints ratios.
//!
//! Shapes: one GPT-2-small layer, tokens 512 (batch 1 × seq 512), hidden 768, 12 heads, f32.
//! Medians over `REPS` runs after a warm-up.

use std::time::Instant;
use tplab_engine::ops::matmul;
use tplab_engine::params::Model;
use tplab_engine::plan::ShardPlan;
use tplab_engine::sharded::{run_on_shards, Options};
use tplab_engine::{Config, DType};

const REPS: usize = 15;

fn median_s(mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..REPS)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[REPS / 2]
}

fn main() {
    let base = Config {
        hidden: 768,
        heads: 12,
        ffn: 3072,
        seq: 512,
        batch: 1,
        layers: 1,
        dtype: DType::F32,
        ..Config::default()
    };
    let mut fwd_bwd = Vec::new();
    for tp in [1usize, 2, 3, 4, 6] {
        let cfg = Config { tp, ..base.clone() };
        let model = Model::<f32>::random(&cfg);
        let shards = ShardPlan::new(&cfg).shard_model(&model);
        let opts = Options {
            backward: true,
            record_collectives: false,
        };
        let s = median_s(|| {
            let _ = std::hint::black_box(run_on_shards(
                &cfg,
                &shards,
                &model.input,
                &model.grad_output,
                opts,
            ));
        });
        fwd_bwd.push(format!("\"{tp}\": {s:.6}"));
    }
    let cfg = Config {
        tp: 1,
        ..base.clone()
    };
    let model = Model::<f32>::random(&cfg);
    let shards = ShardPlan::new(&cfg).shard_model(&model);
    let opts = Options {
        backward: false,
        record_collectives: false,
    };
    let fwd = median_s(|| {
        let _ = std::hint::black_box(run_on_shards(
            &cfg,
            &shards,
            &model.input,
            &model.grad_output,
            opts,
        ));
    });
    // The block's four forward products: (m, k, n).
    let shapes = [
        (512, 768, 2304),
        (512, 768, 768),
        (512, 768, 3072),
        (512, 3072, 768),
    ];
    let mut gemm = Vec::new();
    for (m, k, n) in shapes {
        let a = ndarray::Array2::<f32>::from_shape_fn((m, k), |(i, j)| {
            ((i * 7 + j * 3) % 13) as f32 - 6.0
        });
        let b = ndarray::Array2::<f32>::from_shape_fn((k, n), |(i, j)| {
            ((i * 5 + j * 11) % 17) as f32 - 8.0
        });
        let s = median_s(|| {
            let _ = std::hint::black_box(matmul(a.view(), b.view()));
        });
        gemm.push(format!(
            "\"{m}x{k}x{n}\": {:.3}",
            2.0 * (m * k * n) as f64 / s / 1e9
        ));
    }
    println!(
        "{{\"threads\": {}, \"fwd_bwd_s\": {{{}}}, \"fwd_s\": {fwd:.6}, \"gemm_gflops\": {{{}}}}}",
        rayon_threads(),
        fwd_bwd.join(", "),
        gemm.join(", ")
    );
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
