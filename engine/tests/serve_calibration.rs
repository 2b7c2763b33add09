//! The serving cost model against published latencies of tensor-parallel inference
//! ([`tplab_engine::labs::serve_published`]: FasterTransformer, NeMo/TensorRT-LLM, each row with its
//! source). Run with `-- --nocapture` to reprint the table of docs/calibration.md ("Serving").
//!
//! The held-out rows set nothing in the model; the targets are issue 25's: within ±25% for at
//! least 80% of them and a mean absolute error of at most 15%.

#![allow(clippy::unwrap_used)]

use tplab_engine::labs::serve_published::{
    published, published_fp8, published_graphs, summary, Measure, Prediction, Split,
};

fn predictions(split: Split) -> Vec<Prediction> {
    published()
        .iter()
        .filter(|p| p.split == split)
        .map(|p| p.prediction().unwrap())
        .collect()
}

fn print(rows: &[Prediction]) {
    println!(
        "| source | model | GPU | TP | batch | in / out | measure | published ms | predicted ms | error |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        let f = &r.figure;
        println!(
            "| {} | {} | {} | {} | {} | {} / {} | {} | {} | {:.1} | {:+.1}% |",
            f.source,
            f.model,
            f.gpu,
            if f.pp > 1 {
                format!("{} × PP {}", f.tp, f.pp)
            } else {
                f.tp.to_string()
            },
            f.batch,
            f.prompt,
            f.output,
            match f.measure {
                Measure::FirstToken => "first token".to_string(),
                Measure::Request { decode_steps } => format!("request ({decode_steps} steps)"),
                Measure::Step => "one decode step".to_string(),
            },
            f.published_ms,
            r.predicted_ms,
            r.error * 100.0
        );
    }
}

#[test]
fn fit_rows_are_reproduced() {
    let rows = predictions(Split::Fit);
    print(&rows);
    for r in &rows {
        assert!(r.error.abs() < 0.10, "{:?}", r);
    }
}

#[test]
fn held_out_published_latencies_within_issue_targets() {
    let rows = predictions(Split::HeldOut);
    print(&rows);
    let (within, n, mae) = summary(&rows, 0.25);
    println!(
        "held out: {within} of {n} within ±25% ({:.0}%), mean absolute error {:.1}%",
        100.0 * within as f64 / n as f64,
        100.0 * mae
    );
    assert!(n >= 30, "the held-out set shrank to {n}");
    assert!(
        within as f64 >= 0.8 * n as f64,
        "{within} of {n} within ±25%"
    );
    assert!(mae <= 0.15, "mean absolute error {mae}");
}

#[test]
fn tp_stops_paying_off_and_crossing_nodes_is_the_cliff() {
    // GPT-20B, 80 in / 200 out, batch 1: published TP8/TP1 = 2053/5609 = 0.37; the model must
    // flatten as the measurement does (not scale 8x), and the 530B's TP32 over InfiniBand must
    // still be faster than its TP16 (as published: 431 vs 565 ms) but far from 2x.
    let all = published();
    let find = |model: &str, tp: usize, prompt: usize, output: usize| {
        all.iter()
            .find(|p| {
                p.model == model
                    && p.tp == tp
                    && p.pp == 1
                    && p.batch == 1
                    && p.prompt == prompt
                    && p.output == output
            })
            .unwrap()
            .prediction()
            .unwrap()
    };
    let r1 = find("gpt-20b", 1, 80, 200);
    let r8 = find("gpt-20b", 8, 80, 200);
    let ratio = r8.predicted_ms / r1.predicted_ms;
    let want = r8.figure.published_ms / r1.figure.published_ms;
    println!("GPT-20B TP8/TP1: predicted {ratio:.2}, published {want:.2}");
    assert!((ratio - want).abs() < 0.1, "{ratio} vs {want}");
    let t16 = find("megatron-530b", 16, 20, 8);
    let t32 = find("megatron-530b", 32, 20, 8);
    let ratio = t32.predicted_ms / t16.predicted_ms;
    let want = t32.figure.published_ms / t16.figure.published_ms;
    println!("530B TP32/TP16: predicted {ratio:.2}, published {want:.2}");
    assert!(ratio < 1.0 && ratio > 0.55, "{ratio} vs {want}");
}

#[test]
fn pipeline_stages_add_memory_not_speed() {
    // FasterTransformer's Megatron-530B at TP 8 × PP 3 (3 nodes): a token passes the three
    // stages in turn, so it decodes at about TP 8's pace, slower than TP 16 on 2 nodes
    // (published 842 vs 565 ms for 20 in / 8 out). Held out: nothing was fitted on these rows.
    let rows: Vec<Prediction> = published()
        .iter()
        .filter(|p| p.pp > 1)
        .map(|p| p.prediction().unwrap())
        .collect();
    print(&rows);
    let (within, n, mae) = summary(&rows, 0.25);
    println!(
        "pipeline rows: {within} of {n} within ±25%, mean absolute error {:.1}%",
        100.0 * mae
    );
    assert!(n >= 3 && rows.iter().all(|r| r.figure.split == Split::HeldOut));
    assert_eq!(within, n, "every TP × PP row within ±25%");
    let all = published();
    let get = |tp: usize, pp: usize| {
        all.iter()
            .find(|p| {
                p.model == "megatron-530b"
                    && p.tp == tp
                    && p.pp == pp
                    && p.prompt == 20
                    && p.output == 8
            })
            .unwrap()
            .prediction()
            .unwrap()
    };
    let (pp3, tp16) = (get(8, 3), get(16, 1));
    let ratio = pp3.predicted_ms / tp16.predicted_ms;
    let want = pp3.figure.published_ms / tp16.figure.published_ms;
    println!("530B TP8×PP3 / TP16: predicted {ratio:.2}, published {want:.2}");
    assert!(
        ratio > 1.2 && (ratio - want).abs() < 0.25,
        "{ratio} vs {want}"
    );
}

/// The FP8 rows (issue 39): H100 FP8 first tokens (TensorRT-LLM), FP8 decode steps (NIM,
/// SGLang) and the 16-bit twin of the SGLang row, each with its address. Every row held out.
#[test]
fn fp8_published_latencies() {
    let rows: Vec<Prediction> = published_fp8()
        .iter()
        .map(|p| p.prediction().unwrap())
        .collect();
    println!("| source | model | GPU | TP | batch | in / out | weights / KV | measure | published ms | predicted ms | error | address |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let f = &r.figure;
        println!(
            "| {} | {} | {} | {} | {} | {} / {} | {} / {} | {} | {} | {:.1} | {:+.1}% | {} |",
            f.source,
            f.model,
            f.gpu,
            f.tp,
            f.batch,
            f.prompt,
            f.output,
            f.weights.name(),
            f.kv_cache.name(),
            match f.measure {
                Measure::FirstToken => "first token".to_string(),
                Measure::Request { decode_steps } => format!("request ({decode_steps} steps)"),
                Measure::Step => "one decode step".to_string(),
            },
            f.published_ms,
            r.predicted_ms,
            r.error * 100.0,
            f.url
        );
        assert_eq!(f.split, Split::HeldOut);
        assert!(f.url.starts_with("https://"), "{}", f.url);
    }
    let (within, n, mae) = summary(&rows, 0.25);
    println!(
        "FP8 rows: {within} of {n} within ±25%, mean absolute error {:.1}%",
        100.0 * mae
    );
    assert!(n >= 10, "the FP8 set shrank to {n}");
    // What the FP8 set reaches today, NOT issue 39's target (80%, 15%), which only the whole
    // serving set meets (`serving_calibration_summary`): every FP8 row is predicted low
    // (docs/calibration.md, "FP8 serving", says what is missing). Guards against regressions.
    assert!(within >= 8, "{within} of {n} within ±25%");
    assert!(mae <= 0.25, "mean absolute error {mae}");
    // The SGLang pair (same GPU, engine and load, bf16 against FP8 weights): FP8 is faster by
    // less than half, the fixed costs and attention staying.
    let pair: Vec<&Prediction> = rows
        .iter()
        .filter(|r| r.figure.model == "qwen3-8b")
        .collect();
    let (b, f) = (pair[0], pair[1]);
    let predicted = f.predicted_ms / b.predicted_ms;
    let published = f.figure.published_ms / b.figure.published_ms;
    println!("Qwen3-8B FP8 / bf16 step: predicted {predicted:.2}, published {published:.2}");
    assert!(predicted > 0.5 && (predicted - published).abs() < 0.15);
}

/// Issue 39: a small model at TP 8 under a CUDA-graph engine (SGLang's Llama-3-8B, batch 1,
/// 3.35 ms a step) was predicted 2.2 ms: the fixed costs of an engine whose host turn is not
/// overlapped with the GPU were missing. The TP 1 row fixes that turn (`HOST_STEP_S`); the TP 8
/// row and the batch-128 row are held out.
#[test]
fn sglang_cuda_graph_rows() {
    let rows: Vec<Prediction> = published_graphs()
        .iter()
        .map(|p| p.prediction().unwrap())
        .collect();
    println!("| source | model | GPU | TP | batch | in / out | launch | split | published ms | predicted ms | error |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let f = &r.figure;
        println!(
            "| {} | {} | {} | {} | {} | {} / {} | {} | {:?} | {} | {:.2} | {:+.1}% |",
            f.source,
            f.model,
            f.gpu,
            f.tp,
            f.batch,
            f.prompt,
            f.output,
            f.launch.name(),
            f.split,
            f.published_ms,
            r.predicted_ms,
            r.error * 100.0
        );
        assert!(f.url.starts_with("https://"), "{}", f.url);
    }
    // The fit row: one constant, one row; 2% is the rounding of HOST_STEP_S to 1.0 ms.
    let fit = &rows[0];
    assert_eq!(fit.figure.split, Split::Fit);
    assert!(fit.error.abs() < 0.02, "{fit:?}");
    // TP 8, batch 1, held out: within 10% (the bytes are 0.65 ms of 3.35; a wrong fixed cost
    // of 1 ms would miss by 30%).
    let tp8 = &rows[1];
    assert_eq!((tp8.figure.tp, tp8.figure.batch), (8, 1));
    assert!(tp8.error.abs() < 0.10, "{tp8:?}");
    // The same rows with the host's turn hidden (today's engines) miss it by about a third:
    // the fixed costs the issue said were missing.
    let mut graphs = tp8.figure.clone();
    graphs.launch = tplab_engine::labs::serve_cost::Launch::Graphs;
    let hidden = graphs.prediction().unwrap();
    println!(
        "TP 8 with the host's turn overlapped: {:.2} ms ({:+.1}%)",
        hidden.predicted_ms,
        100.0 * hidden.error
    );
    assert!(hidden.error < -0.25, "{hidden:?}");
}

/// The serving calibration, per set and overall: the issue-25 rows (held out), the FP8 rows,
/// the CUDA-graph rows (held out) and all together (issue 39's target: ≥ 80% within ±25%, mean
/// ≤ 15%, FP8 rows included).
#[test]
fn serving_calibration_summary() {
    let old = predictions(Split::HeldOut);
    let fp8: Vec<Prediction> = published_fp8()
        .iter()
        .map(|p| p.prediction().unwrap())
        .collect();
    let graphs: Vec<Prediction> = published_graphs()
        .iter()
        .filter(|p| p.split == Split::HeldOut)
        .map(|p| p.prediction().unwrap())
        .collect();
    let all: Vec<Prediction> = old.iter().chain(&fp8).chain(&graphs).cloned().collect();
    println!("| set | rows | within ±25% | mean absolute error |");
    println!("|---|---|---|---|");
    for (name, rows) in [
        (
            "issue 25's held-out rows (A100/H100, bf16/fp16, eager)",
            &old,
        ),
        ("FP8 rows (issue 39)", &fp8),
        ("CUDA-graph rows, SGLang #1008 (issue 39)", &graphs),
        ("all held-out rows", &all),
    ] {
        let (within, n, mae) = summary(rows, 0.25);
        println!(
            "| {name} | {n} | {within} ({:.0}%) | {:.1}% |",
            100.0 * within as f64 / n as f64,
            100.0 * mae
        );
    }
    let (within, n, mae) = summary(&all, 0.25);
    assert!(within as f64 >= 0.8 * n as f64 && mae <= 0.15);
}
