//! `tplab pipeline` and `tplab train --pp/--dp/--schedule` through the binary: the JSON's shape,
//! the text report, and the errors that name the rule.

mod common;
use common::{tplab, tplab_words};
use serde_json::Value;

fn json(cmd: &str) -> Value {
    let (ok, out, err) = tplab_words(cmd);
    assert!(ok, "{cmd}: {err}");
    serde_json::from_str(&out).expect("JSON on stdout")
}

#[test]
fn pipeline_json_has_the_issue_shape_for_every_schedule() {
    for (cmd, passes, v) in [
        ("--schedule gpipe", 2, 1),
        ("--schedule 1f1b", 2, 1),
        ("--schedule interleaved --virtual 2", 2, 2),
        ("--schedule zb-h1", 3, 1),
    ] {
        let j = json(&format!(
            "pipeline {cmd} --stages 4 --microbatches 8 --json"
        ));
        let stages = j["stages"].as_array().expect("stages");
        assert_eq!(stages.len(), 4, "{cmd}");
        for s in stages {
            let ops = s.as_array().unwrap();
            assert_eq!(ops.len(), 8 * passes * v, "{cmd}");
            for o in ops {
                let op = o["op"].as_str().unwrap();
                assert!(["F", "B", "W"].contains(&op), "{o}");
                if op == "W" {
                    assert_eq!(passes, 3, "W only where the backward is split: {cmd}");
                }
                assert!(o["microbatch"].as_u64().unwrap() < 8, "{o}");
                assert!(o["chunk"].as_u64().unwrap() < v as u64, "{o}");
            }
        }
        let measured = j["bubble_fraction"].as_f64().unwrap();
        let formula = j["bubble_formula"].as_f64().unwrap();
        assert_eq!(measured, formula, "{cmd}");
        assert_eq!(j["peak_activations"].as_array().unwrap().len(), 4);
        assert!(!j["sends"].as_array().unwrap().is_empty());
    }
    // (P−1)/(M+P−1) = 3/11 for 1F1B at P=4, M=8; peaks 4, 3, 2, 1.
    let j = json("pipeline --schedule 1f1b --stages 4 --microbatches 8 --json");
    assert!((j["bubble_fraction"].as_f64().unwrap() - 3.0 / 11.0).abs() < 1e-15);
    assert_eq!(j["peak_activations"], serde_json::json!([4, 3, 2, 1]));
    assert_eq!(
        j["stages"][3][0],
        serde_json::json!({"op": "F", "microbatch": 0, "chunk": 0})
    );
    assert_eq!(
        j["stages"][3][1],
        serde_json::json!({"op": "B", "microbatch": 0, "chunk": 0})
    );
}

#[test]
fn pipeline_text_draws_the_timeline_and_the_bubble() {
    let (ok, out, err) = tplab_words("pipeline --schedule zb-h1 --stages 4 --microbatches 8");
    assert!(ok, "{err}");
    assert!(out.contains("stage 3  .  .  .  F0 B0 F1 B1"), "{out}");
    assert!(out.contains("Bubble (measured): 12 idle ticks"), "{out}");
    assert!(out.contains("= 1/9"), "{out}");
    assert!(out.contains("equal"), "{out}");
    // Too wide to draw: the orders instead, cut with a pointer to --json.
    let (ok, out, err) = tplab_words("pipeline --schedule gpipe --stages 8 --microbatches 32");
    assert!(ok, "{err}");
    assert!(
        out.contains("too wide to draw") && out.contains("--json has them all"),
        "{out}"
    );
}

#[test]
fn pipeline_refuses_bad_input_with_the_rule_and_the_fix() {
    for (cmd, want) in [
        ("pipeline --stages 0", "at least 1 stage"),
        ("pipeline --microbatches 0", "at least 1 micro-batch"),
        (
            "pipeline --schedule 1f1b --virtual 2",
            "use --schedule interleaved",
        ),
        (
            "pipeline --schedule interleaved --stages 4 --microbatches 6",
            "multiple of the stages (Megatron-LM's rule): 6 micro-batches over 4 stages; use 4 or 8",
        ),
        (
            "pipeline --stages 200 --microbatches 100000000",
            "over the limit of 200000 ops",
        ),
        ("pipeline --schedule zero", "use gpipe, 1f1b, interleaved or zb-h1"),
        ("pipeline --cost-f 0", "forward cost"),
    ] {
        let (ok, out, err) = tplab_words(cmd);
        assert!(!ok, "{cmd}: {out}");
        assert!(err.contains(want), "{cmd}: {err}");
        assert!(!err.contains("panicked"), "{cmd}: {err}");
    }
}

#[test]
fn train_3d_matches_one_gpu_and_refuses_a_bad_layout() {
    let (ok, out, err) = tplab(&[
        "train",
        "--tp",
        "2",
        "--pp",
        "2",
        "--dp",
        "2",
        "--schedule",
        "1f1b",
        "--microbatches",
        "2",
        "--layers",
        "2",
        "--hidden",
        "16",
        "--ffn",
        "32",
        "--seq",
        "8",
        "--batch",
        "4",
        "--steps",
        "5",
        "--dtype",
        "f64",
        "--json",
    ]);
    assert!(ok, "{err}");
    let j: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(j["gpus"], 8);
    assert_eq!(j["three_d"].as_array().unwrap().len(), 5);
    assert!(j["max_rel_gap"].as_f64().unwrap() < 1e-12, "{j}");
    let (ok, _, err) = tplab(&["train", "--pp", "4", "--layers", "2", "--steps", "1"]);
    assert!(
        !ok && err.contains("2 layers cannot be cut into 4"),
        "{err}"
    );
    let (ok, _, err) = tplab(&["train", "--tp", "1,2", "--pp", "2", "--steps", "1"]);
    assert!(!ok && err.contains("one TP size"), "{err}");
}
