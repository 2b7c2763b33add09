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
        lines[0].starts_with("schema,tplab_version,model,gpu,gpus_per_node,tp,")
            && lines[0].ends_with(",invalid"),
        "{out}"
    );
    // Every row has the header's columns (a rule with a comma is quoted).
    let columns = lines[0].split(',').count();
    for l in lines.iter().filter(|l| !l.contains('"')) {
        assert_eq!(l.split(',').count(), columns, "{l}");
    }
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

/// `tplab serve … --json`, asserting success; the document.
fn serve_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["serve"];
    all.extend_from_slice(args);
    all.push("--json");
    let (ok, out, err) = tplab(&all);
    assert!(ok, "{args:?}: {out}{err}");
    serde_json::from_str(&out).expect("JSON")
}

/// Issue 39, item 6: `serve` takes the `--hardware` file `plan` and `memory` take, and a GPU of
/// that file serves; a file that cannot be read is an error naming it, not a panic.
#[test]
fn serve_reads_the_hardware_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("my.toml");
    std::fs::write(
        &path,
        "[[gpu]]\nname = \"my-gpu\"\npeak_bf16_tflops = 500.0\npeak_fp32_tflops = 50.0\n\
         peak_fp64_tflops = 25.0\nmemory_gb = 96.0\nmemory_bandwidth_gbs = 4000.0\n\
         intra_node_link = \"nvlink4\"\n",
    )
    .expect("write");
    let file = path.to_str().expect("utf-8 path");
    let v = serve_json(&[
        "--model",
        "llama3-8b",
        "--gpu",
        "my-gpu",
        "--hardware",
        file,
        "--tp",
        "1,2",
    ]);
    assert_eq!(v["inputs"]["gpu"], "my-gpu");
    assert_eq!(v["inputs"]["hardware"], file);
    let rows = v["sweep"]["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2);
    // 4000 GB/s at the 0.8 of the HBM peak a user GPU streams at: the 16 GB of Llama 3 8B in
    // about 5 ms, faster than the H100's 5.2 ms of weight reads.
    let weights_ms = rows[0]["weights_s"].as_f64().unwrap_or(0.0) * 1e3;
    assert!(weights_ms > 4.5 && weights_ms < 5.2, "{weights_ms}");
    let (ok, out, err) = tplab(&["serve", "--gpu", "my-gpu"]);
    assert!(!ok && err.contains("my-gpu"), "{out}{err}");
    let (ok, _, err) = tplab(&["serve", "--hardware", "/no/such.toml"]);
    assert!(
        !ok && err.contains("hardware") && !err.contains("panicked"),
        "{err}"
    );
}

/// Issue 39, item 6: `serve`, `plan --serve` and `memory --serve` answer for the same GPU,
/// node, link, batch and context when none is given (one definition:
/// `tplab_engine::capacity::defaults`).
#[test]
fn serve_plan_and_memory_share_their_defaults() {
    let serve = serve_json(&["--model", "llama3-8b", "--tp", "1"]);
    let inputs = &serve["inputs"];
    let (ok, out, err) = tplab(&["plan", "--serve", "--model", "llama3-8b", "--json"]);
    assert!(ok, "{out}{err}");
    let plan: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let (ok, out, err) = tplab(&["memory", "--serve", "--model", "llama3-8b", "--json"]);
    assert!(ok, "{out}{err}");
    let memory: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    for v in [&plan, &memory] {
        assert_eq!(v["cluster"]["gpu"], inputs["gpu"], "{v}");
        assert_eq!(v["cluster"]["gpus_per_node"], inputs["gpus_per_node"]);
        assert_eq!(v["cluster"]["inter_node"], inputs["inter_node"]);
        assert_eq!(v["inputs"]["global_batch"], inputs["batch"][0]);
        assert_eq!(v["inputs"]["seq"], inputs["context"][0]);
        assert_eq!(v["model"]["name"], "llama3-8b");
    }
    assert_eq!(inputs["gpu"], "h100-sxm");
    assert_eq!(inputs["gpus_per_node"], 8);
    assert_eq!(inputs["context"][0], 4096);
    // The KV cache memory agrees too: 1 sequence × 4096 tokens at TP 1.
    let kv = serve["sweep"]["rows"][0]["kv_memory_bytes"].as_u64();
    let plan_kv = plan["serving"][0]["memory_per_gpu_bytes"]["kv_cache"].as_u64();
    assert!(kv.is_some() && kv == plan_kv, "{kv:?} {plan_kv:?}");
    // Training still asks for its batch, and says serving has a default.
    let (ok, _, err) = tplab(&["plan", "--model", "llama3-8b"]);
    assert!(!ok && err.contains("--global-batch"), "{err}");
}

/// Issue 39, item 6: tokens/s per GPU and per node in the table and the JSON.
#[test]
fn throughput_per_gpu_and_per_node() {
    let v = serve_json(&["--model", "llama3-8b", "--tp", "1,2,8,16", "--batch", "16"]);
    for r in v["sweep"]["rows"].as_array().expect("rows") {
        let tp = r["setup"]["tp"].as_f64().unwrap_or(0.0);
        let tps = r["tokens_per_s"].as_f64().unwrap_or(0.0);
        let per_gpu = r["tokens_per_s_per_gpu"].as_f64().unwrap_or(0.0);
        let per_node = r["tokens_per_s_per_node"].as_f64().unwrap_or(0.0);
        assert!((per_gpu * tp - tps).abs() < 1e-9 * tps, "{r}");
        // A node of 8 GPUs: 8/TP replicas, or half a TP 16 replica.
        assert!((per_node - per_gpu * 8.0).abs() < 1e-9 * per_node, "{r}");
        let replicas = r["replicas_per_node"].as_u64();
        assert_eq!(replicas, Some(if tp > 8.0 { 0 } else { 8 / tp as u64 }));
    }
    let (ok, out, err) = tplab(&["serve", "--model", "llama3-8b", "--tp", "1,8"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("tok/s/GPU") && out.contains("tok/s/node"),
        "{out}"
    );
}

/// Issue 39, item 6: replicas against TP on one node. Llama 3 8B fills an 8-GPU node as 8 × TP 1,
/// 4 × TP 2, 2 × TP 4 or 1 × TP 8: TP 8 has the shortest step, 8 × TP 1 the most tokens a second;
/// Llama 3 70B does not fit at TP 1.
#[test]
fn replicas_against_tp_on_one_node() {
    let v = serve_json(&["--model", "llama3-8b", "--replicas"]);
    let rows = v["node_splits"].as_array().expect("node_splits");
    let get = |tp: u64, key: &str| {
        rows.iter()
            .find(|r| r["split"]["tp"].as_u64() == Some(tp))
            .and_then(|r| r["split"]["decode"][key].as_f64())
            .unwrap_or(f64::NAN)
    };
    let tps: Vec<u64> = rows
        .iter()
        .filter_map(|r| r["split"]["tp"].as_u64())
        .collect();
    assert_eq!(tps, vec![1, 2, 4, 8]);
    let reps: Vec<u64> = rows
        .iter()
        .filter_map(|r| r["split"]["replicas"].as_u64())
        .collect();
    assert_eq!(reps, vec![8, 4, 2, 1]);
    assert!(get(8, "step_s") < get(4, "step_s") && get(4, "step_s") < get(1, "step_s"));
    let node = |tp| get(tp, "tokens_per_s_per_node");
    assert!(node(1) > node(2) && node(2) > node(4) && node(4) > node(8));
    let (ok, out, err) = tplab(&["serve", "--model", "llama3-70b", "--replicas"]);
    assert!(ok, "{err}");
    for want in ["8 × TP1", "4 × TP2", "2 × TP4", "1 × TP8", "tok/s/node"] {
        assert!(out.contains(want), "{want}: {out}");
    }
    // 141 GB of bf16 weights: not on one 80 GB GPU; on two, just (66.3 of 67.1 GiB usable).
    let tp1 = out.lines().find(|l| l.contains("8 × TP1")).unwrap_or("");
    assert!(tp1.trim_end().ends_with("no"), "{tp1}");
    let tp2 = out.lines().find(|l| l.contains("4 × TP2")).unwrap_or("");
    assert!(tp2.trim_end().ends_with("yes"), "{tp2}");
    // A TP size the heads do not split is a row with its rule (a node of 6: TP 6 and TP 3).
    let (ok, out, err) = tplab(&[
        "serve",
        "--model",
        "llama3-8b",
        "--replicas",
        "--gpus-per-node",
        "6",
    ]);
    assert!(ok, "{err}");
    let tp3 = out.lines().find(|l| l.contains("2 × TP3")).unwrap_or("");
    assert!(
        tp3.contains("invalid") && tp3.contains("heads % tp"),
        "{out}"
    );
}

/// Issue 39, item 6: the time to first token with chunked prefill, vLLM's default chunk on the
/// GPU (8192 tokens on an H100, 2048 on an A100), `--prefill-chunk 0` for the prompts at once.
#[test]
fn time_to_first_token_with_chunked_prefill() {
    let ttft = |args: &[&str]| {
        let mut all = vec![
            "--model",
            "llama3-8b",
            "--tp",
            "1",
            "--prompt-tokens",
            "32768",
        ];
        all.extend_from_slice(args);
        let v = serve_json(&all);
        let p = v["prefill"][0].clone();
        (
            p["total_s"].as_f64().unwrap_or(f64::NAN),
            p["passes"].as_u64().unwrap_or(0),
            p["chunk_tokens"].as_u64().unwrap_or(0),
        )
    };
    let (chunked, passes, chunk) = ttft(&[]);
    assert_eq!((passes, chunk), (4, 8192));
    let (whole, passes, chunk) = ttft(&["--prefill-chunk", "0"]);
    assert_eq!((passes, chunk), (1, 32768));
    // Each pass reads the weights and pays the fixed costs again, and the later chunks attend
    // to the earlier ones' cache: chunking costs a little, not much (compute-bound passes).
    assert!(
        chunked > whole && chunked < 1.2 * whole,
        "{chunked} {whole}"
    );
    let (_, passes, chunk) = ttft(&["--gpu", "a100"]);
    assert_eq!((passes, chunk), (16, 2048));
    let (_, passes, _) = ttft(&["--prefill-chunk", "1000"]);
    assert_eq!(passes, 33);
    let (ok, out, err) = tplab(&["serve", "--model", "llama3-8b", "--tp", "1"]);
    assert!(ok, "{err}");
    assert!(out.contains("in chunks of up to 8192 tokens"), "{out}");
    let (ok, _, err) = tplab(&["serve", "--prompt-tokens", "1e11"]);
    assert!(!ok && err.contains("physical range"), "{err}");
}

/// Issue 39, item 6: a latency–throughput curve over the batch, as a table or CSV: each TP over
/// batch 1, 2, 4, … 1024 (vLLM's max_num_seqs on an H100); the time per token grows with the
/// batch, the tokens a second grow faster.
#[test]
fn latency_throughput_curve_over_the_batch() {
    let (ok, out, err) = tplab(&[
        "serve",
        "--model",
        "llama3-8b",
        "--tp",
        "1,8",
        "--curve",
        "--csv",
    ]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or(usize::MAX);
    let (tp, batch, ms, tps) = (
        col("tp"),
        col("batch"),
        col("ms_per_token"),
        col("tokens_per_s"),
    );
    assert_eq!(lines.len(), 1 + 2 * 11, "{out}");
    for want_tp in ["1", "8"] {
        let curve: Vec<(f64, f64, f64)> = lines[1..]
            .iter()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|f| f[tp] == want_tp)
            .map(|f| {
                let n = |i: usize| f[i].parse::<f64>().unwrap_or(f64::NAN);
                (n(batch), n(ms), n(tps))
            })
            .collect();
        assert_eq!(curve.first().map(|c| c.0), Some(1.0));
        assert_eq!(curve.last().map(|c| c.0), Some(1024.0));
        for w in curve.windows(2) {
            assert!(w[1].1 >= w[0].1 && w[1].2 > w[0].2, "{w:?}");
        }
    }
    let (ok, out, err) = tplab(&["serve", "--model", "llama3-8b", "--tp", "1", "--curve"]);
    assert!(ok, "{err}");
    assert!(out.contains("latency against throughput"), "{out}");
}

/// Issue 39, item 6: the fixed costs of an engine whose host turn the GPU waits for
/// (`--launch graphs-sync`, SGLang before v0.4) add HOST_STEP_S a step: SGLang's Llama-3-8B at
/// TP 8, batch 1 (3.35 ms published, sgl-project/sglang #1008) is predicted within 10%.
#[test]
fn graphs_sync_prices_the_host_turn() {
    let step = |launch: &str| {
        let v = serve_json(&[
            "--model",
            "llama3-8b",
            "--tp",
            "8",
            "--context",
            "132",
            "--all-reduce",
            "custom",
            "--launch",
            launch,
        ]);
        v["sweep"]["rows"][0]["step_s"].as_f64().unwrap_or(f64::NAN) * 1e3
    };
    let (overlapped, sync) = (step("graphs"), step("graphs-sync"));
    assert!(
        (sync - overlapped - 1.0).abs() < 1e-6,
        "{sync} {overlapped}"
    );
    assert!((sync / 3.35 - 1.0).abs() < 0.10, "{sync}");
    let (ok, _, err) = tplab(&["serve", "--launch", "lazy"]);
    assert!(!ok && err.contains("graphs-sync"), "{err}");
}
