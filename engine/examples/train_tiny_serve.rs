//! Trains the tiny model tplab serves (`tplab_engine::labs::serve::tiny_serving_config`, multi-head
//! attention, 300 Adam steps on the guide at TP=1, in f64) and writes its weights, rounded to
//! f32, to `engine/data/tiny_serve.safetensors` (atomically).
//!
//! `cargo run --release -p tplab-engine --example train_tiny_serve [OUT]`

use tplab_engine::dtype::DType;
use tplab_engine::labs::serve::{tiny_serving_config, TinyModel};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).unwrap_or_else(|| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/data/tiny_serve.safetensors").into()
    });
    let cfg = tiny_serving_config(None, DType::F64);
    let model = TinyModel::<f64>::train(&cfg)?;
    let bytes = model.to_safetensors()?;
    tplab_engine::export::write_atomic(std::path::Path::new(&out), &bytes)?;
    println!("wrote {out}: {} bytes, {} steps", bytes.len(), cfg.steps);
    Ok(())
}
