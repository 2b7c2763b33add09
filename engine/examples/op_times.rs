//! Prints the median time of each forward kernel of one GPT-2-small layer (t=512) on the CPU,
//! at TP=1, as the sharded executor runs them ([`tplab_engine::block::exec::kernels`]): where the
//! block's forward time goes. `op_times walk TP [REPS]` instead times the sharded executor's
//! forward and backward of that layer at one TP (REPS medians of 9 runs, default 3), to profile one TP
//! alone: `perf record -g target/release/examples/op_times walk 6`.
use std::time::Instant;
use tplab_engine::block::exec::kernels;
use tplab_engine::block::exec::sharded::{run_on_shards, Options};
use tplab_engine::block::plan::ShardPlan;
use tplab_engine::params::{LayerParams, Model};
use tplab_engine::{config::Config, dtype::DType};

fn med(mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..9)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[4]
}

/// The sharded forward and backward at `tp`: prints the median of `reps` medians.
fn walk(tp: usize, reps: usize) {
    let cfg = Config {
        seq: 512,
        dtype: DType::F32,
        tp,
        ..Config::default()
    };
    let model = Model::<f32>::random(&cfg);
    let shards: Vec<Vec<LayerParams<f32>>> = ShardPlan::new(&cfg).shard_model(&model);
    let opts = Options {
        backward: true,
        record_collectives: false,
    };
    let run = || {
        let out = run_on_shards(&cfg, &shards, &model.input, &model.grad_output, opts);
        std::hint::black_box(out.is_ok());
    };
    let mut times: Vec<f64> = (0..reps.max(1)).map(|_| med(run)).collect();
    times.sort_by(f64::total_cmp);
    let m = times[times.len() / 2];
    println!(
        "tp {tp} fwd+bwd {m:.2} ms (median of {} medians of 9)",
        times.len()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("walk") {
        let num = |i: usize, d: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
        walk(num(1, 1), num(2, 3));
        return;
    }
    let cfg = Config {
        seq: 512,
        dtype: DType::F32,
        tp: 1,
        ..Config::default()
    };
    let m = Model::<f32>::random(&cfg);
    let p = &m.layers[0];
    let x = &m.input;
    let (ln, _) = kernels::layer_norm(x.view(), p.ln1_w.view(), p.ln1_b.view());
    let qkv = kernels::linear_bias(ln.view(), p.qkv_w.view(), p.qkv_b.view());
    let fc1 = kernels::linear_bias(ln.view(), p.fc1_w.view(), p.fc1_b.view());
    println!(
        "ln      {:.2} ms",
        med(|| drop(kernels::layer_norm(
            x.view(),
            p.ln1_w.view(),
            p.ln1_b.view()
        )))
    );
    println!(
        "qkv     {:.2} ms",
        med(|| drop(kernels::linear_bias(
            ln.view(),
            p.qkv_w.view(),
            p.qkv_b.view()
        )))
    );
    println!(
        "attn    {:.2} ms",
        med(|| drop(kernels::attention(qkv.view(), 1, 512, 12, 12)))
    );
    println!(
        "fc1     {:.2} ms",
        med(|| drop(kernels::linear_bias(
            ln.view(),
            p.fc1_w.view(),
            p.fc1_b.view()
        )))
    );
    println!("gelu    {:.2} ms", med(|| drop(kernels::gelu(fc1.view()))));
    println!(
        "fc2     {:.2} ms",
        med(|| drop(kernels::matmul(fc1.view(), p.fc2_w.view())))
    );
}
