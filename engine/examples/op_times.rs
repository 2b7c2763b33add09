//! Prints the median time of each forward op of one GPT-2-small layer (t=512) on the CPU: where
//! the block's forward time goes.
use std::time::Instant;
use tplab_engine::ops;
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
    let (ln, _) = ops::layer_norm(x.view(), p.ln1_w.view(), p.ln1_b.view());
    let qkv = ops::matmul(ln.view(), p.qkv_w.view());
    let fc1 = ops::matmul(ln.view(), p.fc1_w.view());
    println!(
        "ln      {:.2} ms",
        med(|| drop(ops::layer_norm(x.view(), p.ln1_w.view(), p.ln1_b.view())))
    );
    println!(
        "qkv     {:.2} ms",
        med(|| drop(ops::matmul(ln.view(), p.qkv_w.view())))
    );
    println!(
        "attn    {:.2} ms",
        med(|| drop(ops::attention(qkv.view(), 1, 512, 12, 12, ops::matmul)))
    );
    println!(
        "fc1     {:.2} ms",
        med(|| drop(ops::matmul(ln.view(), p.fc1_w.view())))
    );
    println!("gelu    {:.2} ms", med(|| drop(ops::gelu(fc1.view()))));
    println!(
        "fc2     {:.2} ms",
        med(|| drop(ops::matmul(fc1.view(), p.fc2_w.view())))
    );
}
