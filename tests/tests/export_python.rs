//! The export can be loaded outside tplab: numpy alone recomputes the block from
//! `tensors.safetensors` and finds each rank's shards to be the Megatron slices.
//!
//! Needs `python3` with numpy. Under CI (env `CI` set) a missing numpy fails the test; elsewhere
//! the test says so and passes, so `cargo test --workspace` works on a fresh machine.

use std::path::PathBuf;
use std::process::Command;
use tplab_engine::run::run_typed;
use tplab_engine::{config::Config, config::Preset, dtype::DType};

fn numpy_available() -> bool {
    Command::new("python3")
        .args(["-c", "import numpy"])
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether numpy is there; under CI its absence fails the test.
fn numpy_or_skip() -> bool {
    if !numpy_available() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must provide python3 with numpy (pip install numpy)"
        );
        eprintln!("skipping: python3 with numpy not found (pip install numpy)");
        return false;
    }
    true
}

/// Runs `scripts/check_export.py DIR`, asserts it succeeded and returns what it printed.
fn check_script(dir: &std::path::Path) -> String {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/check_export.py");
    let o = Command::new("python3")
        .arg(script)
        .arg(dir)
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    text
}

fn check(cfg: Config, dtype: DType) {
    if !numpy_or_skip() {
        return;
    }
    let tmp = tempdir(&format!("{}-{dtype}", cfg.label()));
    let dir = tmp.path();
    let out = match dtype {
        DType::F64 => {
            let r = run_typed::<f64>(&cfg, &|_, _| {}).expect("run");
            tplab_engine::export::export(&r, dir).expect("export")
        }
        _ => {
            let r = run_typed::<f32>(&cfg, &|_, _| {}).expect("run");
            tplab_engine::export::export(&r, dir).expect("export")
        }
    };
    assert_eq!(out.len(), 3);
    let text = check_script(dir);
    assert!(text.contains("Megatron slices"), "{text}");
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("trace.json")).expect("trace.json"))
            .expect("trace.json is JSON");
    let events = trace["traceEvents"].as_array().cloned().unwrap_or_default();
    assert!(!events.is_empty());
    // Collective slices say what they do; every slice names its op and what each rank holds.
    let slice = |name: &str| events.iter().find(|e| e["name"] == name).cloned();
    let g = slice("attn.g all-reduce").expect("an attn.g all-reduce slice");
    assert_eq!(g["args"]["op"], "attn.g");
    assert_eq!(g["args"]["reads"][0]["placement"], "Partial()");
    assert_eq!(g["args"]["writes"][0]["placement"], "Replicate()");
    if cfg.tp == 4 {
        let fc1 = events
            .iter()
            .find(|e| e["name"] == "mlp.fc1" && e["tid"] == 1)
            .expect("rank 1's fc1");
        let w1 = &fc1["args"]["reads"][1];
        let quarter = cfg.ffn / 4;
        assert_eq!(
            w1["holds"],
            format!("mlp.fc1.weight[:, {quarter}:{}]", 2 * quarter),
            "{fc1}"
        );
    }
}

/// A fresh folder under the system's temporary folder, removed when the test ends.
fn tempdir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("tplab-export-{name}-"))
        .tempdir()
        .expect("a temporary folder")
}

/// The tiny preset with `hidden`, `heads`, `ffn` and `tp`.
fn tiny(hidden: usize, heads: usize, ffn: usize, tp: usize) -> Config {
    Config {
        hidden,
        heads,
        ffn,
        tp,
        ..Preset::Tiny.config()
    }
}

#[test]
fn numpy_recomputes_exported_block_f64_tp4() {
    let cfg = Config {
        tp: 4,
        heads: 4,
        layers: 2,
        ..Preset::Tiny.config()
    };
    check(cfg, DType::F64);
}

#[test]
fn numpy_recomputes_exported_block_f32_tp2() {
    let cfg = Config {
        seq: 16,
        batch: 2,
        ..tiny(64, 4, 256, 2)
    };
    check(cfg, DType::F32);
}

/// Grouped-query attention: 8 query heads, 2 KV heads. TP=2 splits the KV heads; TP=4 replicates
/// each on two ranks. numpy repeats the KV heads itself and checks each rank's K/V columns.
#[test]
fn numpy_recomputes_exported_gqa_block_split_and_replicated() {
    for tp in [2, 4] {
        let cfg = Config {
            kv_heads: Some(2),
            layers: 2,
            ..tiny(32, 8, 64, tp)
        };
        check(cfg, DType::F64);
    }
}

/// Vocabulary parallelism: V = 1000 padded to 1024 at TP=4 (granularity 8): numpy finds each
/// rank's rows, the padding, the logits, the loss and the tied embedding's gradient.
#[test]
fn numpy_checks_the_vocabulary_parallel_export() {
    if !numpy_or_skip() {
        return;
    }
    for dtype in [DType::F64, DType::F32] {
        let cfg = tplab_engine::labs::vocab::VocabConfig {
            vocab: 1000,
            hidden: 32,
            tokens: 24,
            tp: 4,
            granularity: 8,
            ..Default::default()
        };
        let tmp = tempdir(&format!("vocab-{dtype}"));
        let dir = tmp.path();
        match dtype {
            DType::F64 => tplab_engine::export::export_vocab::<f64>(&cfg, dir),
            _ => tplab_engine::export::export_vocab::<f32>(&cfg, dir),
        }
        .expect("export");
        let text = check_script(dir);
        assert!(
            text.contains("V=1000 padded to 1024, 256 rows per rank; ok"),
            "{text}"
        );
    }
}
