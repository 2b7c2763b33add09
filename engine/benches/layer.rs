//! Forward+backward of one GPT-2-small layer (tokens 512 = batch 1 × seq 512, hidden 768, 12
//! heads, f32) on the sharded executor at every valid TP up to 6 (1, 2, 3, 4, 6: 12 heads cannot be
//! split over 8 GPUs), and the forward alone.
//! Ratios against numpy/OpenBLAS: `scripts/bench-ratios.sh`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use tplab_engine::block::exec::sharded::{run_on_shards, Options};
use tplab_engine::block::plan::ShardPlan;
use tplab_engine::params::Model;
use tplab_engine::{config::Config, dtype::DType};

/// GPT-2 small's layer (the default config: hidden 768, 12 heads, ffn 3072, batch 1, one layer,
/// f32) at tokens 512.
fn bench_config(tp: usize) -> Config {
    let cfg = Config {
        seq: 512,
        tp,
        ..Config::default()
    };
    debug_assert_eq!(
        (cfg.hidden, cfg.heads, cfg.ffn, cfg.batch, cfg.layers, cfg.dtype),
        (768, 12, 3072, 1, 1, DType::F32)
    );
    cfg
}

fn layer(c: &mut Criterion) {
    let mut g = c.benchmark_group("layer_fwd_bwd_t512_h768");
    g.sample_size(10);
    for tp in [1, 2, 3, 4, 6] {
        let cfg = bench_config(tp);
        let model = Model::<f32>::random(&cfg);
        let shards = ShardPlan::new(&cfg).shard_model(&model);
        let opts = Options {
            backward: true,
            record_collectives: false,
        };
        g.bench_with_input(BenchmarkId::new("tp", tp), &tp, |b, _| {
            b.iter(|| run_on_shards(&cfg, &shards, &model.input, &model.grad_output, opts))
        });
    }
    g.finish();
    let mut g = c.benchmark_group("layer_fwd_t512_h768");
    g.sample_size(10);
    let cfg = bench_config(1);
    let model = Model::<f32>::random(&cfg);
    let shards = ShardPlan::new(&cfg).shard_model(&model);
    let opts = Options {
        backward: false,
        record_collectives: false,
    };
    g.bench_function("tp1", |b| {
        b.iter(|| run_on_shards(&cfg, &shards, &model.input, &model.grad_output, opts))
    });
    g.finish();
}

criterion_group!(benches, layer);
criterion_main!(benches);
