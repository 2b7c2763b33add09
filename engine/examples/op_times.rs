//! Prints the median time of each forward kernel of one GPT-2-small layer (t=512) on the CPU,
//! at TP=1, as the sharded executor runs them ([`tplab_engine::block::kernels`]): where the
//! block's forward time goes. (For the executor's time per op and per TP, profile
//! `bench_ratios` with `perf`.)
use std::time::Instant;
use tplab_engine::block::kernels;
use tplab_engine::params::Model;
use tplab_engine::{Config, DType};

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

fn main() {
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
