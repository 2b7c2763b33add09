//! End-to-end: `tplab serve` for a preset (the modeled table) and for the tiny model (decoded on
//! virtual GPUs, measured beside modeled, checked against the reference).

mod common;

use common::tplab;

#[test]
fn preset_table_shows_tp_rows_and_the_node_boundary() {
    let (ok, out, err) = tplab(&[
        "serve",
        "--model",
        "llama3-70b",
        "--gpu",
        "h100",
        "--tp",
        "1,2,4,8,16",
    ]);
    assert!(ok, "{out}{err}");
    for tp in ["    1 ", "    2 ", "    4 ", "    8 ", "   16 "] {
        assert!(out.lines().any(|l| l.starts_with(tp)), "{tp}: {out}");
    }
    assert!(out.contains("160 all-reduces"), "{out}");
    assert!(out.contains("(crosses nodes)"), "{out}");
    // 70B in bf16 does not fit one 80 GB GPU.
    let tp1 = out.lines().find(|l| l.starts_with("    1 ")).unwrap_or("");
    assert!(tp1.contains(" no "), "{tp1}");
}

#[test]
fn preset_json_has_the_sweep() {
    let (ok, out, err) = tplab(&[
        "serve",
        "--model",
        "llama3-8b",
        "--tp",
        "1,2,4",
        "--batch",
        "8",
        "--json",
    ]);
    assert!(ok, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let rows = v["sweep"]["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 3);
    let t0 = rows[0]["step_s"].as_f64().unwrap_or(0.0);
    let t1 = rows[1]["step_s"].as_f64().unwrap_or(0.0);
    assert!(t0 > 0.0 && t1 < t0, "{t0} {t1}");
    assert_eq!(rows[2]["all_reduces"].as_u64(), Some(64));
}

#[test]
fn bad_tp_and_unknown_model_name_the_fix() {
    let (ok, _, err) = tplab(&["serve", "--model", "llama3-70b", "--tp", "3"]);
    assert!(!ok);
    assert!(
        err.contains("valid TP sizes") && err.contains("heads % tp"),
        "{err}"
    );
    let (ok, _, err) = tplab(&["serve", "--model", "gpt5"]);
    assert!(!ok);
    assert!(err.contains("llama3-70b"), "{err}");
    let (ok, _, err) = tplab(&["serve", "--batch", "0"]);
    assert!(!ok);
    assert!(err.contains("batch must be at least 1"), "{err}");
    let (ok, _, err) = tplab(&["serve", "--prompt-tokens", "0"]);
    assert!(
        !ok && err.contains("--prompt-tokens must be at least 1"),
        "{err}"
    );
    // Huge numbers are refused, not looped over.
    for args in [
        ["serve", "--batch", "18446744073709551615"],
        ["serve", "--context", "18446744073709551615"],
        ["serve", "--tp", "18446744073709551615"],
    ] {
        let (ok, out, err) = tplab(&args);
        assert!(!ok, "{args:?}: {out}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn tiny_decodes_the_same_text_at_every_tp_and_passes() {
    let (ok, out, err) = tplab(&[
        "serve",
        "--tiny",
        "--prompt",
        "paralel",
        "--tokens",
        "8",
        "--tp",
        "1,2,4",
        "--train-steps",
        "30",
        "--kv-heads",
        "2",
    ]);
    assert!(ok, "{out}{err}");
    assert_eq!(out.matches("PASS").count(), 3, "{out}");
    let reference = out
        .lines()
        .find_map(|l| l.strip_prefix("reference (unsharded, no cache): "))
        .expect("reference line")
        .to_string();
    let rows: Vec<&str> = out.lines().filter(|l| l.contains("PASS")).collect();
    assert!(rows.iter().all(|r| r.ends_with(&reference)), "{out}");
    assert!(
        out.contains("CPU ms/token") && out.contains("model µs/tok"),
        "{out}"
    );
}

#[test]
fn tiny_json_and_its_errors() {
    let (ok, out, err) = tplab(&[
        "serve",
        "--tiny",
        "--prompt",
        "veri",
        "--tokens",
        "4",
        "--tp",
        "2",
        "--train-steps",
        "0",
        "--temperature",
        "0.9",
        "--json",
    ]);
    assert!(ok, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let run = &v["runs"][0];
    assert_eq!(run["comparison"]["passed"], serde_json::Value::Bool(true));
    assert_eq!(
        run["generation"]["steps"].as_array().map(|s| s.len()),
        Some(4)
    );
    assert_eq!(run["generation"]["steps"][0]["phase"], "prefill");
    let (ok, _, err) = tplab(&["serve", "--tiny", "--prompt", "x✓", "--train-steps", "0"]);
    assert!(!ok && err.contains('✓'), "{err}");
    let (ok, _, err) = tplab(&["serve", "--tiny", "--tokens", "500", "--train-steps", "0"]);
    assert!(!ok && err.contains("context of 64"), "{err}");
    let (ok, _, err) = tplab(&["serve", "--tiny", "--tokens", "0"]);
    assert!(!ok && err.contains("at least 1 token"), "{err}");
    let (ok, _, err) = tplab(&["serve", "--tiny", "--tokens", "18446744073709551615"]);
    assert!(!ok && err.contains("context of 64"), "{err}");
    let (ok, _, err) = tplab(&["serve", "--tiny", "--tp", "3", "--train-steps", "0"]);
    assert!(!ok && err.contains("valid TP sizes"), "{err}");
}

#[test]
fn tiny_defaults_to_the_shipped_model() {
    let (ok, out, err) = tplab(&["serve", "--tiny", "--tokens", "10"]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("the shipped model, trained 300 steps"),
        "{out}"
    );
    assert_eq!(out.matches("PASS").count(), 3, "{out}");
}

#[test]
fn pipeline_stages_add_sends_and_split_memory() {
    // Megatron-530B-sized GPT on A100s: TP 8 × PP 3 (3 nodes) against TP 8 alone.
    let args = |pp: &'static str| {
        vec![
            "serve",
            "--model",
            "gpt3-175b",
            "--gpu",
            "a100",
            "--tp",
            "8",
            "--pp",
            pp,
            "--json",
        ]
    };
    let row = |pp| {
        let (ok, out, err) = tplab(&args(pp));
        assert!(ok, "{out}{err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        v["sweep"]["rows"][0].clone()
    };
    let (one, three) = (row("1"), row("3"));
    assert_eq!(three["setup"]["pp"].as_u64(), Some(3));
    let f = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap_or(f64::NAN);
    assert_eq!(f(&one, "pipeline_send_s"), 0.0);
    assert!(f(&three, "pipeline_send_s") > 0.0);
    assert_eq!(three["pipeline_sends_across_nodes"].as_u64(), Some(2));
    // The stages run in turn: the same time per token plus the sends, a third of the memory.
    let extra = f(&three, "step_s") - f(&one, "step_s");
    assert!(
        (extra - f(&three, "pipeline_send_s")).abs() < 1e-9,
        "{extra}"
    );
    assert!(f(&three, "memory_per_gpu_bytes") < 0.4 * f(&one, "memory_per_gpu_bytes"));
    let (ok, out, err) = tplab(&["serve", "--model", "gpt3-175b", "--tp", "8", "--pp", "3"]);
    assert!(
        ok && out.contains("stage sends") && out.contains("3 pipeline stages"),
        "{out}{err}"
    );
}

#[test]
fn bad_pipeline_sizes_name_the_rule() {
    // Llama 3 70B has 80 layers: PP 3 does not split them.
    let (ok, _, err) = tplab(&["serve", "--model", "llama3-70b", "--tp", "8", "--pp", "3"]);
    assert!(
        !ok && err.contains("layers % pp == 0") && err.contains("valid PP sizes"),
        "{err}"
    );
    let (ok, _, err) = tplab(&["serve", "--pp", "0"]);
    assert!(!ok && err.contains("pp must be at least 1"), "{err}");
    let (ok, _, err) = tplab(&["serve", "--tiny", "--pp", "2"]);
    assert!(!ok && err.contains("drop --pp or --tiny"), "{err}");
    let (ok, out, err) = tplab(&["serve", "--pp", "18446744073709551615"]);
    assert!(!ok && !err.contains("panicked"), "{out}{err}");
}

/// Issue 39, item 7: a sweep over TP × batch × context writes CSV, reports the invalid TP with
/// its rule and goes on; a context out of any physical range is refused with the range; the
/// JSON carries its schema, version and command line.
#[test]
fn sweep_writes_csv_reports_invalid_points_and_refuses_unphysical_input() {
    let (ok, out, err) = tplab(&[
        "serve",
        "--model",
        "llama3-70b",
        "--tp",
        "6,8",
        "--batch",
        "1,8",
        "--context",
        "1024,8k",
        "--csv",
    ]);
    // 8k is not a number: refused with the rule.
    assert!(!ok && err.contains("not a whole number"), "{out}{err}");
    let (ok, out, err) = tplab(&[
        "serve",
        "--model",
        "llama3-70b",
        "--tp",
        "6,8",
        "--batch",
        "1,8",
        "--context",
        "1024,1e4",
        "--csv",
    ]);
    assert!(ok, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("schema,tplab_version,model,gpu,tp,"),
        "{out}"
    );
    // 4 valid points (TP 8) and 4 invalid ones (TP 6), each with the rule.
    assert_eq!(lines.len(), 1 + 8, "{out}");
    let valid = lines
        .iter()
        .filter(|l| l.contains(",8,1,") && l.ends_with(','))
        .count();
    assert_eq!(valid, 4, "{out}");
    let bad: Vec<&&str> = lines.iter().filter(|l| l.contains(",6,1,")).collect();
    assert_eq!(bad.len(), 4, "{out}");
    assert!(bad.iter().all(|l| l.contains("heads % tp")), "{out}");
    assert!(out.contains(",10000,"), "1e4 read as 10000: {out}");
    // The single-setting table goes on past TP 6 too, naming the rule on stderr.
    let (ok, out, err) = tplab(&["serve", "--model", "llama3-70b", "--tp", "6,8"]);
    assert!(ok, "{out}{err}");
    assert!(err.contains("skipped TP 6"), "{err}");
    assert!(out.lines().any(|l| l.starts_with("    8 ")), "{out}");
    // Out of the physical range.
    let (ok, _, err) = tplab(&["serve", "--model", "llama3-70b", "--context", "1e11"]);
    assert!(
        !ok && err.contains("physical range 1 to 100000000"),
        "{err}"
    );
    // Schema, version and the command line in the JSON.
    let (ok, out, err) = tplab(&["serve", "--model", "llama3-8b", "--tp", "1,2", "--json"]);
    assert!(ok, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["schema"].as_u64(), Some(1));
    assert!(v["tplab_version"].is_string());
    assert_eq!(v["command"], "serve");
    assert!(v["argv"].as_array().is_some_and(|a| a.len() >= 5));
}

#[test]
fn fp8_weights_fit_where_bf16_does_not_and_a100_refuses_fp8_with_the_rule() {
    // Llama 3 70B on one H200 (141 GB, 90% usable): bf16 weights do not fit, FP8 ones do.
    let run = |weights: &str| {
        tplab(&[
            "serve",
            "--model",
            "llama3-70b",
            "--gpu",
            "h200",
            "--tp",
            "1",
            "--weights",
            weights,
            "--kv-cache",
            "fp8",
            "--context",
            "8192",
        ])
    };
    let (ok, bf16, err) = run("bf16");
    assert!(ok, "{bf16}{err}");
    assert!(
        bf16.contains("TP=1") && bf16.contains("does NOT fit"),
        "{bf16}"
    );
    assert!(bf16.contains("No TP in the sweep fits"), "{bf16}");
    let (ok, fp8, err) = run("fp8");
    assert!(ok, "{fp8}{err}");
    assert!(fp8.contains("fp8 weights, fp8 KV cache"), "{fp8}");
    let line = fp8
        .lines()
        .find(|l| l.trim_start().starts_with("TP=1"))
        .unwrap_or("");
    assert!(line.ends_with(": fits"), "{line}");
    // The decode step reads half the linear bytes: faster than bf16's (which would not fit).
    let ms = |out: &str| -> f64 {
        out.lines()
            .find(|l| l.starts_with("    1 "))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    };
    assert!(ms(&fp8) < 0.6 * ms(&bf16), "{} vs {}", ms(&fp8), ms(&bf16));
    // A100 has no FP8: an error naming the rule and the fix, for serve and for plan.
    let (ok, out, err) = tplab(&[
        "serve",
        "--model",
        "llama3-8b",
        "--gpu",
        "a100",
        "--tp",
        "1",
        "--weights",
        "fp8",
    ]);
    assert!(!ok, "{out}");
    assert!(
        err.contains("needs FP8 tensor cores") && err.contains("--weights int4"),
        "{err}"
    );
    let (ok, out, err) = tplab(&[
        "serve",
        "--model",
        "llama3-8b",
        "--gpu",
        "a100",
        "--tp",
        "1",
        "--kv-cache",
        "fp8",
    ]);
    assert!(!ok && err.contains("--kv-cache bf16"), "{out}{err}");
    let (ok, out, err) = tplab(&[
        "plan",
        "--model",
        "llama3-8b",
        "--gpu",
        "a100",
        "--gpus",
        "8",
        "--gpus-per-node",
        "8",
        "--global-batch",
        "64",
        "--precision",
        "fp8",
    ]);
    assert!(!ok, "{out}");
    assert!(
        err.contains("--precision fp8") && err.contains("needs FP8 tensor cores"),
        "{err}"
    );
    // INT4 weight-only runs on the A100; a V100 has no INT4 kernel.
    let (ok, out, err) = tplab(&[
        "serve",
        "--model",
        "llama3-8b",
        "--gpu",
        "a100",
        "--tp",
        "1",
        "--weights",
        "int4",
    ]);
    assert!(ok && out.contains("int4 weights"), "{out}{err}");
    let (ok, _, err) = tplab(&[
        "serve",
        "--model",
        "llama3-8b",
        "--gpu",
        "v100",
        "--tp",
        "1",
        "--weights",
        "int4",
    ]);
    assert!(!ok && err.contains("compute capability"), "{err}");
}
