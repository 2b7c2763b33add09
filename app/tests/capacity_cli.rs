//! `tplab collective --json` and `tplab plan --json` under today's stack, through the binary.

mod common;
use common::tplab_words;
use serde_json::Value;

/// Runs `tplab` with the words of `cmd`, asserting that it succeeded; its stdout as JSON.
fn json(cmd: &str) -> Value {
    let (ok, out, err) = tplab_words(cmd);
    assert!(ok, "{cmd}: {err}");
    serde_json::from_str(&out).expect("JSON on stdout")
}

/// Llama 3.1 405B on 2048 H100s at layout TP 8, PP 16, DP 16 (126 layers on 16 pipeline stages).
const PLAN_405B_8_16_16: &str = "plan --model llama3.1-405b --gpu h100 --gpus 2048 \
    --gpus-per-node 8 --seq 8192 --global-batch 2048 --layout 8,16,16";

#[test]
fn collective_json_prints_the_sweep() {
    let v = json("collective --json");
    let pts = v["points"].as_array().expect("points");
    assert_eq!(pts.len(), 32, "8 B .. 16 GiB in powers of two");
    assert_eq!(pts[0]["size_bytes"].as_u64(), Some(8));
    assert_eq!(pts[31]["size_bytes"].as_u64(), Some(16 << 30));
    for p in pts {
        let (alg, bus) = (
            p["algbw_gbs"].as_f64().unwrap(),
            p["busbw_gbs"].as_f64().unwrap(),
        );
        assert!((bus - alg * 1.75).abs() <= 1e-9 * bus.max(1.0), "{p}");
        assert!(p["algorithm"].is_string() && p["protocol"].is_string());
    }
    // Small messages take a low-latency protocol, large ones NVLS on H100.
    assert_eq!(pts[0]["protocol"], "LL");
    assert_eq!(pts[31]["algorithm"], "nvls");
    let ag = json("collective --op all-gather --gpus 16 --json --size 1G");
    assert_eq!(ag["nodes"].as_u64(), Some(2));
    let p = &ag["points"][0];
    let (alg, bus) = (
        p["algbw_gbs"].as_f64().unwrap(),
        p["busbw_gbs"].as_f64().unwrap(),
    );
    assert!((bus - alg * 15.0 / 16.0).abs() < 1e-9 * bus);
}

#[test]
fn plan_json_keeps_its_keys_and_adds_the_stack() {
    // 126 layers on 16 pipeline stages (Llama 3.1 405B): planned, not refused.
    let v = json(&format!("{PLAN_405B_8_16_16} --sp --recompute full --json"));
    for key in [
        "iteration_time_s",
        "tflops_per_gpu",
        "mfu",
        "tokens_per_s",
        "micro_batches",
    ] {
        assert!(v[key].as_f64().is_some(), "{key}");
    }
    for key in [
        "compute",
        "tp_comm",
        "pp_comm",
        "pipeline_bubble",
        "dp_comm",
        "optimizer",
    ] {
        assert!(v["time_split_s"][key].as_f64().is_some(), "{key}");
    }
    assert_eq!(v["breakdown"]["stage_layers"][0].as_u64(), Some(7));
    assert!(v["breakdown"]["gemm"]["share"]
        .as_f64()
        .is_some_and(|s| s > 0.0 && s < 1.0));
    assert_eq!(v["stack"]["flash_attention"], true);
    let wi = v["what_if"].as_array().expect("what_if");
    assert!(wi.iter().any(|w| w["switch"] == "flash_attention"));
    // The 2021 stack refuses the same layout with the rule and the fix.
    let (ok, _, err) = tplab_words(&format!("{PLAN_405B_8_16_16} --stack megatron-2021"));
    assert!(!ok);
    assert!(err.contains("divide the 126 layers"), "{err}");
}
