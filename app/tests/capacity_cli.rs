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

/// Issue 39, item 7: `plan --layout … --json` carries the model and the cluster it answers for
/// (with every default filled in), beside the schema, version and command line.
#[test]
fn plan_layout_json_carries_the_model_and_the_cluster() {
    let v = json(&format!("{PLAN_405B_8_16_16} --json"));
    assert_eq!(v["schema"].as_u64(), Some(1));
    assert!(v["tplab_version"].is_string());
    assert_eq!(v["model"]["name"], "llama3.1-405b");
    assert_eq!(v["model"]["layers"].as_u64(), Some(126));
    assert_eq!(v["cluster"]["gpu"], "h100-sxm");
    assert_eq!(v["cluster"]["gpus"].as_u64(), Some(2048));
    assert_eq!(v["cluster"]["inter_node"], "ib-ndr-400");
    assert_eq!(v["inputs"]["seq"].as_u64(), Some(8192));
    assert_eq!(v["inputs"]["global_batch"].as_u64(), Some(2048));
    // The memory command's JSON too.
    let m = json("memory --model llama3-8b --gpus 8 --global-batch 8 --layout 8,1,1 --json");
    assert_eq!(m["model"]["name"], "llama3-8b");
    assert_eq!(m["cluster"]["gpus_per_node"].as_u64(), Some(8));
}

/// Issue 39, item 7: with `--cp 3`, a layout whose GPU count does not add up names the DP the
/// user gave (not DP × CP) and the DP that fits; a layout that adds up keeps the user's DP.
/// Where `--inter-node` is not given, every command prices the GPU's own node's network: an
/// A100 cluster on InfiniBand HDR 200 (DGX A100), an H100 one on NDR 400; a named link wins.
#[test]
fn every_command_defaults_to_the_gpu_s_own_network() {
    let plan = |extra: &str| {
        json(&format!(
            "plan --model gpt3-175b --seq 2048 --global-batch 512 --gpus 64 --layout 8,8,1 --json {extra}"
        ))["cluster"]["inter_node"]
            .clone()
    };
    assert_eq!(plan("--gpu a100"), "ib-hdr-200");
    assert_eq!(plan("--gpu h100"), "ib-ndr-400");
    assert_eq!(plan("--gpu a100 --inter-node ib400"), "ib-ndr-400");
    let coll = |gpu: &str| {
        json(&format!("collective --gpus 16 --gpu {gpu} --max 1K --json"))["inter_node"].clone()
    };
    assert_eq!(coll("a100"), "ib-hdr-200");
    assert_eq!(coll("b200"), "ib-ndr-400");
    let serve = json("serve --model llama3-8b --gpu a100 --json");
    assert_eq!(serve["inputs"]["inter_node"], "ib-hdr-200", "{serve}");
}

#[test]
fn context_parallel_keeps_the_users_dp() {
    let base = "plan --model llama3-8b --gpus 24 --global-batch 48 --seq 6144";
    let (ok, out, err) = tplab_words(&format!("{base} --layout 8,1,2 --cp 3"));
    assert!(!ok, "{out}");
    assert!(
        err.contains("TP=8 × PP=1 × DP=2 × CP=3 = 48 GPUs") && err.contains("give DP=1"),
        "{err}"
    );
    assert!(!err.contains("DP=6"), "{err}");
    let v = json(&format!("{base} --layout 8,1,1 --cp 3 --json"));
    assert_eq!(v["layout"]["dp"].as_u64(), Some(1));
    assert_eq!(v["layout"]["cp"].as_u64(), Some(3));
    assert!(v["layout"]["label"]
        .as_str()
        .is_some_and(|l| l.starts_with("TP=8 PP=1 DP=1 CP=3")));
    assert_eq!(v["breakdown"]["context_parallel"].as_u64(), Some(3));
    assert_eq!(v["cluster"]["gpus"].as_u64(), Some(24));
    // The search's table shows CP beside DP, so that its layouts add up to the 24 GPUs.
    let (ok, out, err) = tplab_words(&format!("{base} --cp 3 --top 3"));
    assert!(ok, "{err}");
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| {
            let mut w = l.split_whitespace();
            w.next().is_some_and(|n| n.parse::<usize>().is_ok())
                && w.next().is_some_and(|t| t.starts_with("TP="))
        })
        .collect();
    assert_eq!(rows.len(), 3, "{out}");
    for row in rows {
        let n = |key: &str| {
            row.split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0)
        };
        assert_eq!(n("TP=") * n("PP=") * n("DP=") * n("CP="), 24, "{row}");
    }
    // So do the planner's sentences about them.
    assert!(!out.contains("DP=8 b="), "{out}");
}

/// Issue 39, item 7: a plan sweep over three axes (GPUs, batch, sequence) writes one CSV row a
/// point with the schema and version; a point that breaks a rule (2 GPUs for 8-GPU nodes is
/// fine; 12 GPUs are a node and a half) is a row with the rule, and the sweep goes on; the
/// same sweep as JSON carries the inputs.
#[test]
fn plan_sweeps_three_axes_into_csv_and_json() {
    let cmd = "plan --model llama3-8b --global-batch 64 --sweep gpus=8,12,16 \
               --sweep batch=64,128 --sweep seq=2048,4096";
    let (ok, out, err) = tplab_words(&format!("{cmd} --csv"));
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("schema,tplab_version,"), "{out}");
    assert_eq!(lines.len(), 1 + 3 * 2 * 2, "{out}");
    // The GPU count is the fifth column.
    let bad: Vec<&&str> = lines
        .iter()
        .filter(|l| l.split(',').nth(4) == Some("12"))
        .collect();
    assert_eq!(bad.len(), 4, "{out}");
    assert!(bad.iter().all(|l| l.contains("whole nodes of 8")), "{out}");
    let good = lines[1..]
        .iter()
        .filter(|l| l.split(',').nth(4) != Some("12"))
        .all(|l| l.ends_with(','));
    assert!(good, "{out}");
    let v = json(&format!("{cmd} --json"));
    assert_eq!(v["points"].as_array().map(Vec::len), Some(12));
    assert_eq!(v["model"]["name"], "llama3-8b");
    assert_eq!(v["sweep"]["gpus"][1].as_u64(), Some(12));
}

/// `--cp` that cannot divide the GPUs, or a sequence it cannot split into `2·cp` chunks, is an
/// error that names the rule and the fix, not an empty plan with a hint that ignores CP.
#[test]
fn plan_refuses_a_context_parallel_size_that_cannot_split() {
    let base = "plan --model llama3-8b --gpu h100 --gpus 64 --global-batch 256";
    let out = refused(
        &format!("{base} --seq 8190 --cp 3"),
        &["--cp 3 must divide --gpus 64", "2, 4, 8, 16, 32, 64"],
    );
    assert!(!out.contains("it fits"), "{out}");
    refused(
        &format!("{base} --seq 8190 --cp 2"),
        &[
            "--seq 8190 must be a multiple of 2 × --cp = 4",
            "--seq 8192",
        ],
    );
    let (ok, out, err) = tplab_words(&format!("{base} --seq 8192 --cp 2"));
    assert!(ok && out.contains("winner"), "{out}{err}");
}

/// From an attacker's probes of the CLI: each bad request is refused with its rule and fix
/// (no panic, no unbounded work, no silent override), and `memory` agrees with `plan`.
#[test]
fn probed_requests_get_their_rule() {
    let refused = |cmd: &str, want: &str| {
        refused(cmd, &[want]);
    };
    // Rank arithmetic once overflowed past 2^63 GPUs.
    refused(
        "collective --gpus 18446744073709551615 --gpus-per-node 1",
        "1 to 16777216 GPUs",
    );
    // Sweeps are bounded before any point is computed, and do not fight other flags.
    let values = (1..=70)
        .map(|i| (8 * i).to_string())
        .collect::<Vec<_>>()
        .join(",");
    let plan = "plan --model llama3-8b --global-batch 64";
    refused(
        &format!("{plan} --sweep gpus={values} --sweep batch={values} --csv"),
        "at most 4096",
    );
    refused(
        &format!("{plan} --sweep gpus=8,16 --layout 2,1,4"),
        "give one or the other",
    );
    refused(
        &format!("{plan} --sweep v=2 --virtual-stages 3"),
        "both set the interleaving depth",
    );
    refused(
        &format!("serve --model llama3-70b --batch {values} --context {values}"),
        "at most 4096",
    );
    refused("serve --model llama3-70b --tp 0", "--tp must be at least 1");
    refused("serve --tiny --train-steps 6000", "0 to 5000");
    refused(
        "memory --model mixtral-8x7b --gpus 8 --global-batch 64 --ep 2 --etp 0",
        "--etp must be at least 1",
    );
    refused(
        "memory --model llama3-70b --gpus 1 --serve --layout 1,1,1 --global-batch 16777216 \
         --seq 16777216",
        "at most 1099511627776 (2^40) tokens",
    );
    // `memory` counts activations as `plan` does (FlashAttention on by default).
    let layout = "--model llama3-8b --global-batch 64 --gpus 8 --layout 2,1,4 --sp --json";
    let m = json(&format!("memory {layout}"));
    let p = json(&format!("plan {layout}"));
    assert_eq!(
        m["layouts"][0]["memory_per_gpu_bytes"]["activations"],
        p["memory_per_gpu_bytes"]["activations"],
        "{m}\n{p}"
    );
    // Near-ties are said as ties, not as a win by -0.0%.
    let (ok, out, _) = tplab_words("plan --model llama3-8b --global-batch 64 --gpus 8");
    assert!(ok && !out.contains("by -0.0%"), "{out}");
}

/// `tplab` refuses `cmd` (no panic) with an error that says each of `wants`; its stdout.
fn refused(cmd: &str, wants: &[&str]) -> String {
    let (ok, out, err) = tplab_words(cmd);
    assert!(!ok, "{cmd}: {out}");
    for want in wants {
        assert!(err.contains(want), "{cmd}: {err}");
    }
    assert!(!err.contains("panicked"), "{cmd}: {err}");
    out
}
