//! End-to-end: the `tplab` binary's `run` subcommand on small scenarios.

mod common;
use std::process::Command;

use common::{tplab, tplab_passes};

#[test]
fn run_prints_the_table_and_passes_verification() {
    let out = tplab_passes("run --preset tiny --tp 4 --layers 2 --dtype f64");
    assert!(
        out.contains("all-reduces per layer: forward 2, backward 2"),
        "{out}"
    );
    assert!(out.contains("mlp.fc1"), "{out}");
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
        tplab_passes(&format!(
            "run --preset tiny --tp 4 --heads 4 --algorithm {alg}"
        ));
    }
}

#[test]
fn sequence_parallel_swaps_all_reduces_for_gathers_and_scatters_and_names_the_seq_rule() {
    let out = tplab_passes("run --preset tiny --tp 4 --sequence-parallel --dtype f64");
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
    let out = tplab_passes(
        "vocab --vocab 1000 --hidden 32 --tokens 24 --tp 3 --granularity 16 --dtype f64",
    );
    // 1000 pads to a multiple of 16 × 3 = 48: 1008, 336 rows per rank.
    assert!(out.contains("V=1000 padded to 1008"), "{out}");
    assert!(out.contains("ce.sumexp"), "{out}");
    let (ok, _, err) = tplab(&["vocab", "--vocab", "256000", "--hidden", "8192"]);
    assert!(!ok && err.contains("reduce vocab or hidden"), "{err}");
    // --export writes the tensors next to the report.
    let tmp = tempfile::Builder::new()
        .prefix("tplab-cli-vocab-")
        .tempdir()
        .expect("a temporary folder");
    let dir = tmp.path();
    let d = dir.to_string_lossy().to_string();
    let (ok, out, err) = tplab(&[
        "vocab", "--vocab", "100", "--hidden", "8", "--tokens", "4", "--tp", "2", "--export", &d,
    ]);
    assert!(ok && out.contains("vocab.safetensors"), "{out}{err}");
    assert!(dir.join("vocab.safetensors").is_file());
}

#[test]
fn run_with_grouped_query_attention_explains_the_kv_placement() {
    let out = tplab_passes(
        "run --preset tiny --hidden 32 --heads 8 --kv-heads 2 --ffn 64 --tp 4 --dtype f64",
    );
    assert!(
        out.contains("GPU 0, 1 hold KV head 0; GPU 2, 3 hold KV head 1"),
        "{out}"
    );
    assert!(out.contains("attn.kv.grads"), "{out}");
    let (ok, _, err) = tplab(&["run", "--heads", "12", "--kv-heads", "4", "--tp", "6"]);
    assert!(
        !ok && err.contains("vLLM and tplab replicate the KV weights"),
        "{err}"
    );
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

#[test]
fn moe_runs_expert_parallel_against_the_reference_and_counts_the_all_to_all_bytes() {
    for (ep, etp) in [("1", "1"), ("2", "2"), ("4", "1"), ("4", "2")] {
        let out = tplab_passes(&format!(
            "moe --experts 8 --top-k 2 --ep {ep} --etp {etp} --capacity-factor 1.0 --tokens 32 \
             --hidden 8 --ffn 16"
        ));
        assert!(out.contains("PASS"), "{out}");
        assert!(
            out.contains("moe.dispatch") && out.contains("moe.combine.bwd"),
            "{out}"
        );
    }
    // JSON: the hand-checked numbers of a drop-free run (every assignment computed) and of
    // a capacity of 1.0 (each expert takes at most ceil(1·2·32/8) = 8).
    let (ok, out, err) = tplab(&[
        "moe",
        "--experts",
        "8",
        "--ep",
        "4",
        "--tokens",
        "32",
        "--hidden",
        "8",
        "--ffn",
        "16",
        "--capacity-factor",
        "1",
        "--json",
    ]);
    assert!(ok, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["capacity"], 8);
    assert_eq!(v["equal_to_reference"], true);
    let per_expert: Vec<u64> = v["tokens_per_expert"]
        .as_array()
        .map(|a| a.iter().filter_map(|x| x.as_u64()).collect())
        .unwrap_or_default();
    assert!(per_expert.iter().all(|&n| n <= 8), "{per_expert:?}");
    let dropped = v["dropped"].as_array().map_or(0, |a| a.len()) as u64;
    assert_eq!(per_expert.iter().sum::<u64>() + dropped, 64, "{out}");
    // Dispatch bytes: every row that leaves its rank is hidden (8) × 8 bytes, and the combine
    // sends the same rows back.
    let records = v["collectives"].as_array().cloned().unwrap_or_default();
    let sent = |name: &str| -> Vec<u64> {
        records
            .iter()
            .find(|r| r["name"] == name)
            .and_then(|r| r["bytes_sent_per_gpu"].as_array())
            .map(|a| a.iter().filter_map(|x| x.as_u64()).collect())
            .unwrap_or_default()
    };
    let dispatch = sent("moe.dispatch");
    assert_eq!(dispatch.len(), 4);
    assert!(dispatch.iter().all(|b| b % 64 == 0) && dispatch.iter().any(|&b| b > 0));
    let mut back = sent("moe.combine");
    back.sort_unstable();
    let mut there = dispatch.clone();
    there.sort_unstable();
    assert_eq!(back.iter().sum::<u64>(), there.iter().sum::<u64>());
}

/// `tplab memory --ep`: Mixtral 8x7B at TP 1, DP 8, EP 8 holds 7,242,780,672 parameters per GPU
/// (hand count in `engine/src/capacity/memory.rs`), an EP that does not divide the experts is
/// refused with the valid sizes.
#[test]
fn memory_takes_an_expert_parallel_size() {
    let base = [
        "memory",
        "--model",
        "mixtral-8x7b",
        "--gpu",
        "h100",
        "--gpus",
        "8",
        "--gpus-per-node",
        "8",
        "--global-batch",
        "64",
        "--seq",
        "4096",
        "--layout",
        "1,1,8",
    ];
    let (ok, out, err) = tplab(&[&base[..], &["--ep", "8", "--json"]].concat());
    assert!(ok, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let row = &v["layouts"][0];
    assert_eq!(row["ep"], 8);
    assert_eq!(
        row["memory_per_gpu_bytes"]["params_per_gpu"],
        7_242_780_672u64
    );
    assert_eq!(row["memory_per_gpu_bytes"]["weights"], 14_485_561_344u64);
    let (ok, _, err) = tplab(&[&base[..], &["--ep", "3"]].concat());
    assert!(!ok && err.contains("valid EP sizes: [1, 2, 4, 8]"), "{err}");
}

#[test]
fn moe_refuses_invalid_layouts_with_the_rule() {
    for (args, want) in [
        ("moe --experts 6 --ep 4", "valid EP sizes: 1, 2, 3, 6"),
        ("moe --ffn 30 --etp 4", "ffn % etp == 0"),
        ("moe --experts 4 --ep 1 --top-k 5", "k ≤ experts"),
        (
            "moe --capacity-factor 0",
            "capacity factor 0 must be a number above 0",
        ),
        ("moe --capacity-factor -1", "must be a number above 0"),
        ("moe --capacity-factor nan", "must be a number above 0"),
        ("moe --tokens 100000000", "tokens 100000000 is over"),
        (
            "moe --experts 256 --ep 1 --hidden 4096 --ffn 4096",
            "reduce experts, hidden or ffn",
        ),
        ("moe --ep 0", "ep must be at least 1"),
        ("moe --gate sigmoid", "renormalized"),
    ] {
        let argv: Vec<&str> = args.split(' ').collect();
        let (ok, out, err) = tplab(&argv);
        assert!(!ok, "{args}: {out}");
        assert!(err.contains(want), "{args}: {err}");
        assert!(!err.contains("panicked"), "{args}: {err}");
    }
}

/// Runs `tplab` with a 60 s watchdog (a hang fails the test instead of blocking it), returning
/// (exit code, stdout, stderr).
fn tplab_within(args: &[&str]) -> (Option<i32>, String, String) {
    use std::io::Read;
    let mut child = Command::new(env!("CARGO_BIN_EXE_tplab"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the tplab binary runs");
    let (mut out, mut err) = (String::new(), String::new());
    let mut so = child.stdout.take().expect("stdout");
    let mut se = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("waits") {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("tplab {args:?} did not finish within 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    out.push_str(&t_out.join().expect("stdout thread"));
    err.push_str(&t_err.join().expect("stderr thread"));
    (status.code(), out, err)
}

/// The cluster most `plan` cases below run on: eight A100s in one node, a global batch of 8.
const A100_X8: &str = "--gpu a100 --gpus 8 --gpus-per-node 8 --global-batch 8";

/// `tplab plan --model gpt3-175b --gpu a100` on `gpus` GPUs (`per_node` a node, global batch
/// `batch`), then `extra`.
fn plan_175b(gpus: &str, per_node: &str, batch: &str, extra: &str) -> String {
    format!(
        "plan --model gpt3-175b --gpu a100 --gpus {gpus} --gpus-per-node {per_node} \
         --global-batch {batch} {extra}"
    )
}

/// `tplab memory --model llama3-70b --serve` on eight H100s (batch 8, seq 4096) with `--layout`.
fn serve_70b(layout: &str) -> String {
    format!(
        "memory --model llama3-70b --serve --gpu h100 --gpus 8 --gpus-per-node 8 \
         --global-batch 8 --seq 4096 --layout {layout}"
    )
}

/// The issue's examples of bad or extreme input: each is a clear error (exit 1, "error:" on
/// stderr, naming the value or rule), never a hang, a panic or a wrong answer.
#[test]
fn extreme_input_gets_a_clear_error() {
    let cases: Vec<(String, &str)> = vec![
        (
            "run --hidden 100000000000 --heads 7".into(),
            "over the limit",
        ),
        (
            "vocab --granularity 4611686018427387904 --tp 4".into(),
            "granularity 4611686018427387904 is over the limit",
        ),
        ("vocab --vocab 18446744073709551615".into(), "vocab"),
        (
            "vocab --tokens 18446744073709551615".into(),
            "tokens 18446744073709551615 is over the limit",
        ),
        ("vocab --tokens 100000000".into(), "guard"),
        (plan_175b("100000000000", "8", "1536", ""), "over the limit"),
        (serve_70b("1000,1,1"), "larger than the cluster"),
        (serve_70b("7,1,1"), "valid TP sizes"),
        (
            format!("plan --layers 96 --hidden 4294967296 --heads 96 --vocab 51200 {A100_X8}"),
            "hidden 4294967296 is over the limit",
        ),
        (
            plan_175b("64", "8", "64", "--seq 0"),
            "seq must be at least 1",
        ),
        (
            plan_175b("64", "8", "0", ""),
            "global_batch must be at least 1",
        ),
        (
            plan_175b("64", "8", "64", "--micro-batch 0"),
            "--micro-batch must be at least 1",
        ),
        (
            plan_175b("64", "8", "64", "--zero 9"),
            "--zero must be 0, 1, 2 or 3",
        ),
        (plan_175b("64", "0", "64", ""), "0 per node"),
        ("run --preset tiny --gpus-per-node 0".into(), "0 per node"),
        ("train --lr 1e300 --steps 20".into(), "diverged at step"),
        (
            "train --steps 18446744073709551615".into(),
            "over the limit",
        ),
    ];
    for (cmd, needle) in &cases {
        let args: Vec<&str> = cmd.split_whitespace().collect();
        let (code, out, err) = tplab_within(&args);
        assert_eq!(code, Some(1), "{args:?}: {out}{err}");
        assert!(
            err.starts_with("error:") && err.contains(needle),
            "{args:?}: {err}"
        );
        assert!(
            !err.contains("panicked") && !out.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn model_and_hardware_files_are_checked() {
    let dir = std::env::temp_dir().join(format!("tplab-cli-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let plan = |extra: &[&str]| {
        let mut args = vec!["plan"];
        args.extend_from_slice(extra);
        args.extend(A100_X8.split_whitespace());
        tplab_within(&args)
    };
    // A missing config.json says "not found".
    let missing = dir.join("nope.json");
    let (code, _, err) = plan(&["--model", missing.to_str().expect("utf-8")]);
    assert_eq!(code, Some(1));
    assert!(err.contains("not found"), "{err}");
    // A FIFO as --model is refused at once instead of blocking forever.
    let fifo = dir.join("fifo.json");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let (code, _, err) = plan(&["--model", fifo.to_str().expect("utf-8")]);
    assert_eq!(code, Some(1));
    assert!(err.contains("FIFO"), "{err}");
    // num_hidden_layers near u64::MAX used to plan "0.81B params, 56 layouts fit".
    let huge = dir.join("huge.json");
    std::fs::write(
        &huge,
        r#"{"model_type":"llama","num_hidden_layers":18446744073709551615,"hidden_size":4096,
            "num_attention_heads":32,"intermediate_size":14336,"vocab_size":128256,
            "max_position_embeddings":8192}"#,
    )
    .expect("write");
    let (code, _, err) = plan(&["--model", huge.to_str().expect("utf-8")]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("layers 18446744073709551615 is over the limit"),
        "{err}"
    );
    // A hardware TOML: a misspelt table is an error; a GPU named "MyGPU" is selectable.
    let gpu = "name = \"MyGPU\"\npeak_bf16_tflops = 400.0\npeak_fp32_tflops = 40.0\n\
               peak_fp64_tflops = 20.0\nmemory_gb = 96.0\nmemory_bandwidth_gbs = 3000.0\n\
               intra_node_link = \"nvlink4\"\n";
    let toml = dir.join("hw.toml");
    let toml_path = toml.to_str().expect("utf-8");
    let plan_my_gpu = || {
        let mut args = vec!["plan", "--model", "gpt2-small", "--hardware", toml_path];
        args.extend(["--gpu", "MyGPU", "--gpus", "8", "--gpus-per-node", "8"]);
        args.extend(["--global-batch", "8"]);
        tplab_within(&args)
    };
    std::fs::write(&toml, format!("[[gpus]]\n{gpu}")).expect("write");
    let (code, _, err) = plan_my_gpu();
    assert_eq!(code, Some(1));
    assert!(err.contains("unknown field `gpus`"), "{err}");
    std::fs::write(&toml, format!("[[gpu]]\n{gpu}")).expect("write");
    let (code, out, err) = plan_my_gpu();
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("8 × MyGPU"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `tplab … | head -1`: a closed pipe ends the program quietly (status 141, as a tool killed by
/// SIGPIPE); `> /dev/full` is an error message and status 1. Never "panicked".
#[test]
fn closed_pipe_and_full_disk_are_handled() {
    use std::io::{BufRead, BufReader};
    let commands: &[&[&str]] = &[
        &["plan", "--scenario", "1t-3d"],
        &["run", "--preset", "tiny"],
        &["memory", "--scenario", "70b-serve-tp4"],
        &[
            "vocab", "--tokens", "16", "--vocab", "500", "--hidden", "32",
        ],
        &["precision", "--preset", "tiny", "--tp", "1,2"],
        &["train", "--steps", "3"],
        &["moe", "--tokens", "16"],
        &["lessons", "list"],
        &["gpu", "info"],
    ];
    for args in commands {
        // Read one line, then close the pipe.
        let mut child = Command::new(env!("CARGO_BIN_EXE_tplab"))
            .args(*args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("runs");
        let stdout = child.stdout.take().expect("stdout");
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("one line");
        // The reader is dropped here: the pipe is closed.
        let o = child.wait_with_output().expect("waits");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            matches!(o.status.code(), Some(0) | Some(141)),
            "{args:?}: {:?} {err}",
            o.status
        );
        assert!(
            !err.contains("panicked") && !err.contains("error"),
            "{args:?}: {err}"
        );

        // A full disk.
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full exists on Linux");
        let o = Command::new(env!("CARGO_BIN_EXE_tplab"))
            .args(*args)
            .stdout(full)
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("error: cannot write to standard output") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

/// A libcuda that loads but lacks `cuInit`: the probe says so, without cudarc's panic text.
#[cfg(feature = "cuda")]
#[test]
fn a_broken_cuda_library_is_reported_without_panic_text() {
    let dir = std::env::temp_dir().join(format!("tplab-fake-cuda-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let src = dir.join("empty.c");
    std::fs::write(&src, "int tplab_fake_symbol(void) { return 0; }\n").expect("write");
    for name in ["libcuda.so", "libcuda.so.1"] {
        let built = Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(dir.join(name))
            .arg(&src)
            .status()
            .expect("a C compiler (cc) is installed: Rust needs it to link");
        assert!(built.success());
    }
    let o = Command::new(env!("CARGO_BIN_EXE_tplab"))
        .args(["gpu", "info"])
        .env("LD_LIBRARY_PATH", &dir)
        .output()
        .expect("runs");
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(o.status.success(), "{out}{err}");
    assert!(out.contains("loads but lacks cuInit"), "{out}");
    assert!(
        !out.contains("panicked") && !err.contains("panicked"),
        "{out}{err}"
    );
}

#[test]
fn an_unknown_view_flag_names_the_views_before_any_window_opens() {
    let (ok, out, err) = tplab(&["--view", "nosuch"]);
    assert!(!ok, "{out}");
    assert!(
        err.contains("unknown view 'nosuch'") && err.contains("walkthrough"),
        "{err}"
    );
    let (ok, _, err) = tplab(&["--lang", "de"]);
    assert!(!ok);
    assert!(err.contains("unknown language 'de'"), "{err}");
}

// `tplab design`: the split as data, from flags and from a plan file.

fn json(args: &[&str]) -> (bool, serde_json::Value, String) {
    let mut all = vec!["design", "--json"];
    all.extend_from_slice(args);
    let (ok, out, err) = tplab(&all);
    let v = serde_json::from_str(&out).unwrap_or(serde_json::Value::Null);
    (ok, v, err)
}

#[test]
fn megatron_design_counts_as_run_does_and_equals_the_reference() {
    let (ok, v, err) = json(&["--preset", "tiny", "--tp", "4", "--dtype", "f64"]);
    assert!(ok, "{err}");
    assert_eq!(v["valid"], true);
    assert_eq!(v["equal_to_reference"], true);
    assert_eq!(v["collectives"]["forward"]["all-reduce"], 2);
    assert_eq!(v["collectives"]["backward"]["all-reduce"], 2);
    assert_eq!(v["vs_megatron"]["bytes_ratio"], 1.0);
    for key in [
        "errors",
        "max_rel_error",
        "tolerance",
        "bytes_sent_per_rank",
        "weight_bytes_per_gpu",
        "activation_bytes_per_gpu",
        "modeled_time_s",
    ] {
        assert!(!v[key].is_null(), "{key} missing: {v}");
    }
    // With sequence parallelism: two gathers and two reduce-scatters forward, no all-reduce.
    let (ok, v, err) = json(&["--preset", "tiny", "--tp", "4", "--sequence-parallel"]);
    assert!(ok, "{err}");
    assert_eq!(v["collectives"]["forward"]["all-gather"], 2);
    assert_eq!(v["collectives"]["forward"]["reduce-scatter"], 2);
    assert!(v["collectives"]["forward"]["all-reduce"].is_null(), "{v}");
}

#[test]
fn the_wrong_way_round_is_valid_and_costs_more() {
    let (ok, v, err) = json(&[
        "--preset", "tiny", "--tp", "4", "--dtype", "f64", "--qkv", "rows", "--out", "columns",
        "--fc1", "rows", "--fc2", "columns",
    ]);
    assert!(ok, "{err}");
    assert_eq!(v["named"], "rows-then-columns");
    assert_eq!(v["equal_to_reference"], true);
    let ratio = v["vs_megatron"]["bytes_ratio"].as_f64().unwrap_or(0.0);
    assert!(ratio > 3.0, "{v}");
}

#[test]
fn a_missing_g_is_refused_and_runs_wrong_when_allowed() {
    let args = [
        "--preset",
        "tiny",
        "--tp",
        "2",
        "--dtype",
        "f64",
        "--collective",
        "attn.out:all-reduce",
    ];
    let (ok, v, _) = json(&args);
    assert!(!ok);
    assert_eq!(v["valid"], false);
    assert!(v["equal_to_reference"].is_null());
    let e = &v["errors"][0];
    assert_eq!(e["op"], "residual");
    assert_eq!(e["tensor"], "M");
    assert_eq!(e["placement"], "Partial()");
    assert_eq!(e["pass"], "forward");
    let mut wrong = args.to_vec();
    wrong.push("--allow-wrong");
    let (ok, v, _) = json(&wrong);
    assert!(!ok);
    assert_eq!(v["equal_to_reference"], false);
    let err = v["max_rel_error"].as_f64().unwrap_or(0.0);
    let tol = v["tolerance"].as_f64().unwrap_or(1.0);
    assert!(err > 1e6 * tol, "{err} vs {tol}");
}

#[test]
fn plan_files_are_read_bounded_and_checked() {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let good = dir.path().join("plan.toml");
    std::fs::write(
        &good,
        "qkv = \"columns\"\nout = \"rows\"\nfc1 = \"rows\"\nfc2 = \"columns\"\n",
    )
    .expect("write");
    let good = good.to_string_lossy().into_owned();
    let (ok, v, err) = json(&["--preset", "tiny", "--file", &good]);
    assert!(ok, "{err}");
    assert_eq!(v["plan"], "qkv=columns out=rows fc1=rows fc2=columns");
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "fc1 = \"diagonal\"\n").expect("write");
    let (ok, out, err) = tplab(&["design", "--file", &bad.to_string_lossy()]);
    assert!(!ok, "{out}");
    assert!(
        err.contains("replicate") && err.contains("columns"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let big = dir.path().join("big.toml");
    std::fs::write(&big, vec![b'#'; 200_000]).expect("write");
    let (ok, _, err) = tplab(&["design", "--file", &big.to_string_lossy()]);
    assert!(!ok && err.contains("limit"), "{err}");
    let (ok, _, err) = tplab(&["design", "--collective", "attn.out"]);
    assert!(!ok && err.contains("OP:KIND"), "{err}");
}

#[test]
fn design_export_of_another_plan_writes_its_shards_and_program() {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let out = dir.path().join("x");
    let out_s = out.to_string_lossy().into_owned();
    let (ok, _, err) = tplab(&[
        "design",
        "--preset",
        "tiny",
        "--tp",
        "2",
        "--plan",
        "columns-columns",
        "--export",
        &out_s,
    ]);
    assert!(ok, "{err}");
    for f in [
        "tensors.safetensors",
        "shards.safetensors",
        "design.json",
        "trace.json",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    // The plan's own Chrome trace: the all-gathers its column-split out-projection and fc2 need
    // (Megatron's plan has none).
    let trace = std::fs::read_to_string(out.join("trace.json")).expect("trace.json");
    let v: serde_json::Value = serde_json::from_str(&trace).expect("JSON");
    let names: Vec<String> = v["traceEvents"]
        .as_array()
        .expect("traceEvents")
        .iter()
        .filter_map(|e| e["name"].as_str().map(str::to_string))
        .collect();
    assert!(
        names.iter().any(|n| n.contains("all-gather")),
        "{:?}",
        &names[..names.len().min(40)]
    );
}

#[test]
fn design_challenges_grade_plans() {
    let (ok, out, err) = tplab(&[
        "design",
        "--challenge",
        "1",
        "--fc1",
        "columns",
        "--fc2",
        "rows",
    ]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("SOLVED, 3 stars"), "{out}");
    let (ok, out, _) = tplab(&[
        "design",
        "--challenge",
        "1",
        "--fc1",
        "rows",
        "--fc2",
        "columns",
    ]);
    assert!(!ok);
    assert!(
        out.contains("not yet") && out.contains("all-reduce"),
        "{out}"
    );
    let (ok, _, err) = tplab(&["design", "--challenge", "1", "--qkv", "columns"]);
    assert!(!ok && err.contains("fc1 and fc2"), "{err}");
    let (ok, _, err) = tplab(&["design", "--challenge", "12"]);
    assert!(!ok && err.contains("1 to 8"), "{err}");
}

// ----- files a stranger made: certificates, keys, escapes, exit codes -----

/// Runs `cmd` with a 60 s watchdog (a hang fails the test), returning (exit code, stdout,
/// stderr). Its stdout is piped unless the caller set it.
fn within(cmd: &mut Command) -> (Option<i32>, String, String) {
    let child = cmd
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the tplab binary runs");
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let o = match rx.recv_timeout(std::time::Duration::from_secs(60)) {
        Ok(o) => o.expect("waits"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(id.to_string()).status();
            panic!("tplab did not finish within 60 s: {cmd:?}");
        }
    };
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn tplab_cmd(args: &[&str], data: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tplab"));
    c.args(args)
        .env("TPLAB_DATA_DIR", data)
        .env_remove("TPLAB_ISSUER_KEY")
        .stdout(std::process::Stdio::piped());
    c
}

fn fresh_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("tplab-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn mkfifo(p: &std::path::Path) {
    assert!(Command::new("mkfifo")
        .arg(p)
        .status()
        .expect("mkfifo runs")
        .success());
}

/// `cert verify`: 0 signed and valid, 3 unsigned, 1 invalid, 2 when the certificate or the
/// issuer key cannot be read or the verdict cannot be written.
#[test]
fn cert_verify_exit_codes_say_what_happened() {
    use tplab_quiz::cert::{Certificate, IssuerKey};
    let dir = fresh_dir("verify");
    let key = IssuerKey::from_seed([5; 32]);
    let issue = |signed: bool| {
        Certificate::issue(
            "Ece",
            "2026-11-30",
            90,
            "exam-v2",
            1,
            tplab_quiz::Lang::En,
            signed.then_some(&key),
        )
        .expect("issued")
        .write(&dir.join(if signed { "signed" } else { "unsigned" }))
        .expect("written")
    };
    let (signed_json, signed_png) = issue(true);
    let (unsigned_json, _) = issue(false);
    let forged = dir.join("forged.json");
    let text = std::fs::read_to_string(&signed_json).expect("read");
    std::fs::write(
        &forged,
        text.replace("\"score_percent\": 90", "\"score_percent\": 99"),
    )
    .expect("write");
    let fifo = dir.join("fifo.png");
    mkfifo(&fifo);
    let garbage_key = dir.join("garbage.pub");
    std::fs::write(&garbage_key, "not a key").expect("write");
    let p = |p: &std::path::Path| p.to_str().expect("utf-8").to_string();
    let missing = dir.join("missing.png");
    for (args, want) in [
        (vec![p(&signed_png)], 0),
        (vec![p(&signed_json)], 0),
        (vec![p(&unsigned_json)], 3),
        (vec![p(&forged)], 1),
        (vec![p(&missing)], 2),
        (vec![p(&fifo)], 2),
        (vec![p(&dir)], 2),
        (vec![p(&signed_png), "--issuer".into(), p(&garbage_key)], 2),
    ] {
        let mut all = vec!["cert", "verify"];
        all.extend(args.iter().map(String::as_str));
        let (code, out, err) = within(&mut tplab_cmd(&all, &dir));
        assert_eq!(code, Some(want), "{args:?}: {out}{err}");
        if want == 2 {
            assert!(err.contains("no verdict"), "{args:?}: {err}");
        }
    }
    // A verdict that cannot be written: 2, with a message.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full exists on Linux");
    let (code, _, err) = within(tplab_cmd(&["cert", "verify", &p(&signed_png)], &dir).stdout(full));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot write"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--help` and `--version` to a full disk fail like every other command (they printed nothing
/// and exited 0).
#[test]
fn help_and_version_to_a_full_stdout_exit_non_zero() {
    let dir = fresh_dir("help");
    for args in [
        &["--version"][..],
        &["--help"],
        &["cert", "--help"],
        &["quiz", "-h"],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full exists on Linux");
        let (code, _, err) = within(tplab_cmd(args, &dir).stdout(full));
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(
            err.contains("cannot write to standard output"),
            "{args:?}: {err}"
        );
        // To a pipe they still print and succeed.
        let (code, out, _) = within(&mut tplab_cmd(args, &dir));
        assert_eq!(code, Some(0), "{args:?}");
        assert!(
            out.contains("tplab") || out.contains("Usage"),
            "{args:?}: {out}"
        );
    }
    // A usage error is still clap's status 2 on stderr.
    let (code, _, err) = within(&mut tplab_cmd(&["--no-such-flag"], &dir));
    assert_eq!(code, Some(2), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `cert keygen --out mykey`: a bare name is the current folder; both files or neither.
#[test]
fn keygen_with_a_bare_file_name_writes_both_files_in_the_current_folder() {
    use std::os::unix::fs::PermissionsExt;
    let dir = fresh_dir("keygen");
    let (code, out, err) =
        within(tplab_cmd(&["cert", "keygen", "--out", "mykey"], &dir).current_dir(&dir));
    assert_eq!(code, Some(0), "{out}{err}");
    let secret = dir.join("mykey");
    let public = dir.join("mykey.pub");
    let mode = std::fs::metadata(&secret)
        .expect("secret")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    assert!(std::fs::read_to_string(&public)
        .expect("public")
        .starts_with("tplab-issuer-public-key-v2"));
    let before = std::fs::read(&secret).expect("read");
    // Again: refused, and nothing changes.
    let (code, _, err) =
        within(tplab_cmd(&["cert", "keygen", "--out", "mykey"], &dir).current_dir(&dir));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&secret).expect("read"), before);
    // Only the public file in the way: no orphan secret key is left.
    std::fs::write(dir.join("other.pub"), "x").expect("write");
    let (code, _, err) =
        within(tplab_cmd(&["cert", "keygen", "--out", "other"], &dir).current_dir(&dir));
    assert_eq!(code, Some(1), "{err}");
    assert!(!dir.join("other").exists());
    let names: Vec<String> = std::fs::read_dir(&dir)
        .expect("list")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains(".tmp-")), "{names:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A config.json whose `model_type` holds escape sequences, and a hardware file with one in a
/// link name: printed escaped (`\u{1b}`), never raw, by `memory`, `plan`, `serve` and errors.
#[test]
fn escape_sequences_from_input_files_are_printed_escaped() {
    let dir = fresh_dir("escapes");
    let config = dir.join("config.json");
    std::fs::write(
        &config,
        r#"{"model_type":"llama\u001b]0;owned\u0007\u001b[2J\u202e","num_hidden_layers":32,
            "hidden_size":4096,"num_attention_heads":32,"num_key_value_heads":8,
            "intermediate_size":14336,"vocab_size":128256,"max_position_embeddings":8192}"#,
    )
    .expect("write");
    let c = config.to_str().expect("utf-8");
    let runs: [&[&str]; 3] = [
        &[
            "memory",
            "--model",
            c,
            "--gpu",
            "h100",
            "--gpus",
            "8",
            "--gpus-per-node",
            "8",
            "--global-batch",
            "8",
            "--layout",
            "8,1,1",
        ],
        &[
            "plan",
            "--model",
            c,
            "--gpu",
            "h100",
            "--gpus",
            "8",
            "--gpus-per-node",
            "8",
            "--global-batch",
            "8",
        ],
        &["serve", "--model", c, "--gpu", "h100", "--tp", "1,8"],
    ];
    for args in runs {
        let (code, out, err) = within(&mut tplab_cmd(args, &dir));
        assert_eq!(code, Some(0), "{args:?}: {out}{err}");
        for text in [&out, &err] {
            assert!(
                !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{202e}'),
                "{args:?}: raw escape in {text:?}"
            );
        }
        assert!(
            out.contains("llama\\u001b]0;owned\\u0007"),
            "{args:?}: {out}"
        );
    }
    let hw = dir.join("hw.toml");
    std::fs::write(
        &hw,
        "[[gpu]]\nname = \"MyGPU\"\npeak_bf16_tflops = 400.0\npeak_fp32_tflops = 40.0\n\
         peak_fp64_tflops = 20.0\nmemory_gb = 96.0\nmemory_bandwidth_gbs = 3000.0\n\
         intra_node_link = \"nv\\u001b[2Jlink\"\n",
    )
    .expect("write");
    let (code, out, err) = within(&mut tplab_cmd(
        &[
            "plan",
            "--model",
            "gpt2-small",
            "--hardware",
            hw.to_str().expect("utf-8"),
            "--gpu",
            "MyGPU",
            "--gpus",
            "8",
            "--gpus-per-node",
            "8",
            "--global-batch",
            "8",
        ],
        &dir,
    ));
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(!err.contains('\u{1b}'), "raw escape in {err:?}");
    assert!(err.contains("nv\\u001b[2Jlink"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A FIFO in place of a progress file, a certificate or a key file is refused at once: every
/// reader checks the file's kind before opening it.
#[test]
fn fifos_are_refused_by_every_reader() {
    let dir = fresh_dir("fifos");
    let learners = dir.join("learners");
    std::fs::create_dir_all(&learners).expect("mkdir");
    let slug = tplab_quiz::progress::learner_slug("Ece").expect("slug");
    mkfifo(&learners.join(format!("{slug}.json")));
    let (code, _, err) = within(&mut tplab_cmd(
        &["quiz", "--name", "Ece", "--count", "1"],
        &dir,
    ));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("FIFO"), "{err}");
    let key = dir.join("fifo.key");
    mkfifo(&key);
    let (code, _, err) = within(&mut tplab_cmd(
        &[
            "quiz",
            "--exam",
            "--name",
            "Can",
            "--issuer-key",
            key.to_str().expect("utf-8"),
        ],
        &dir,
    ));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("FIFO"), "{err}");
    let (code, _, err) = within(&mut tplab_cmd(
        &["cert", "verify", key.to_str().expect("utf-8")],
        &dir,
    ));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("FIFO"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `gpu run` with a sharding plan: a bad split names the rule, and on a machine without a GPU
/// the refusal points at `tplab design`, which runs the same plan on virtual GPUs (never a
/// panic). On a GPU machine the plan runs and is checked against the reference.
#[test]
fn gpu_run_takes_a_learners_plan() {
    let (ok, out, err) = tplab(&["gpu", "run", "--tp", "2", "--fc1", "sideways"]);
    assert!(!ok, "{out}");
    assert!(err.contains("replicate") && err.contains("rows"), "{err}");
    let (ok, out, err) = tplab(&["gpu", "run", "--tp", "2", "--plan", "rows-then-columns"]);
    assert!(
        !out.contains("panicked") && !err.contains("panicked"),
        "{err}"
    );
    if !ok {
        assert!(
            err.contains("tplab design") || err.contains("verification"),
            "{out}{err}"
        );
    }
}
