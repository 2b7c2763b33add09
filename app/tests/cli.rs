//! End-to-end: the `tplab` binary's `run` subcommand on small scenarios.

use std::process::Command;

fn tplab(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_tplab"))
        .args(args)
        .output()
        .expect("the tplab binary runs");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn run_prints_the_table_and_passes_verification() {
    let (ok, out, err) = tplab(&[
        "run", "--preset", "tiny", "--tp", "4", "--layers", "2", "--dtype", "f64",
    ]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("all-reduces per layer: forward 2, backward 2"),
        "{out}"
    );
    assert!(out.contains("mlp.fc1"), "{out}");
    assert!(out.contains("result: PASS"), "{out}");
    assert_eq!(out.matches("layer 1, backward pass").count(), 1, "{out}");
}

#[test]
fn invalid_tp_names_the_rule_and_valid_sizes() {
    let (ok, out, err) = tplab(&["run", "--tp", "8"]);
    assert!(!ok, "{out}");
    assert!(
        err.contains("12 heads cannot be split over 8 GPUs")
            && err.contains("valid TP sizes: 1, 2, 3, 4, 6, 12"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn every_algorithm_runs() {
    for alg in ["ring", "recursive-halving-doubling", "tree", "direct"] {
        let (ok, out, err) = tplab(&[
            "run",
            "--preset",
            "tiny",
            "--tp",
            "4",
            "--heads",
            "4",
            "--algorithm",
            alg,
        ]);
        assert!(ok && out.contains("result: PASS"), "{alg}: {out}{err}");
    }
}

#[test]
fn sequence_parallel_swaps_all_reduces_for_gathers_and_scatters_and_names_the_seq_rule() {
    let (ok, out, err) = tplab(&[
        "run",
        "--preset",
        "tiny",
        "--tp",
        "4",
        "--sequence-parallel",
        "--dtype",
        "f64",
    ]);
    assert!(ok && out.contains("result: PASS"), "{out}{err}");
    assert!(out.contains("f: all-gather"), "{out}");
    assert!(out.contains("g: reduce-scatter"), "{out}");
    assert!(
        out.contains("all-reduces per layer: forward 0, backward 1"),
        "{out}"
    );
    // gpt2-small has seq 128: 128 tokens cannot be split over 3 GPUs.
    let (ok, out, err) = tplab(&["run", "--tp", "3", "--seq", "100", "--sequence-parallel"]);
    assert!(!ok, "{out}");
    assert!(
        err.contains("seq 100 cannot be split over 3 GPUs")
            && err.contains("valid TP sizes: 1, 2, 4"),
        "{err}"
    );
}

#[test]
fn vocab_pads_splits_and_checks_the_parallel_cross_entropy() {
    let (ok, out, err) = tplab(&[
        "vocab",
        "--vocab",
        "1000",
        "--hidden",
        "32",
        "--tokens",
        "24",
        "--tp",
        "3",
        "--granularity",
        "16",
        "--dtype",
        "f64",
    ]);
    assert!(ok && out.contains("result: PASS"), "{out}{err}");
    // 1000 pads to a multiple of 16 × 3 = 48: 1008, 336 rows per rank.
    assert!(out.contains("V=1000 padded to 1008"), "{out}");
    assert!(out.contains("ce.sumexp"), "{out}");
    let (ok, _, err) = tplab(&["vocab", "--vocab", "256000", "--hidden", "8192"]);
    assert!(!ok && err.contains("reduce vocab or hidden"), "{err}");
    // --export writes the tensors next to the report.
    let dir = std::env::temp_dir().join(format!("tplab-cli-vocab-{}", std::process::id()));
    let d = dir.to_string_lossy().to_string();
    let (ok, out, err) = tplab(&[
        "vocab", "--vocab", "100", "--hidden", "8", "--tokens", "4", "--tp", "2", "--export", &d,
    ]);
    assert!(ok && out.contains("vocab.safetensors"), "{out}{err}");
    assert!(dir.join("vocab.safetensors").is_file());
}

#[test]
fn run_with_grouped_query_attention_explains_the_kv_placement() {
    let args = [
        "run",
        "--preset",
        "tiny",
        "--hidden",
        "32",
        "--heads",
        "8",
        "--kv-heads",
        "2",
        "--ffn",
        "64",
        "--tp",
        "4",
        "--dtype",
        "f64",
    ];
    let (ok, out, err) = tplab(&args);
    assert!(ok && out.contains("result: PASS"), "{out}{err}");
    assert!(
        out.contains("GPU 0, 1 hold KV head 0; GPU 2, 3 hold KV head 1"),
        "{out}"
    );
    assert!(out.contains("attn.kv.grads"), "{out}");
    let (ok, _, err) = tplab(&["run", "--heads", "12", "--kv-heads", "4", "--tp", "6"]);
    assert!(!ok && err.contains("vLLM and tplab replicate the KV weights"), "{err}");
    assert!(err.contains("valid TP sizes: 1, 2, 4, 12"), "{err}");
}

#[test]
fn train_prints_coinciding_curves_and_refuses_an_invalid_tp() {
    let (ok, out, err) = tplab(&[
        "train", "--steps", "20", "--hidden", "32", "--ffn", "64", "--seq", "16", "--dtype", "f64",
    ]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("loss TP=4"), "{out}");
    let gap_line = out
        .lines()
        .find(|l| l.starts_with("TP=4 vs TP=1"))
        .unwrap_or_default();
    let gap: f64 = gap_line
        .rsplit(' ')
        .next()
        .and_then(|g| g.parse().ok())
        .unwrap_or(1.0);
    assert!(gap < 1e-10, "{gap_line}");
    let (ok, _, err) = tplab(&["train", "--tp", "3", "--steps", "2"]);
    assert!(!ok && err.contains("valid TP sizes"), "{err}");
}
