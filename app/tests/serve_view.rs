//! The Serve view: a request decodes at TP 1, 2 and 4 off the UI thread and every column matches
//! the reference; snapshots of the view (before a request, so that no measured time enters the
//! picture) at 1280x720, 1600x1000 and 1920x1080, English and Turkish, light and dark, presenter
//! mode included; a published run beside its prediction; greedy and sampled decoding. Regenerate the PNGs with
//! `UPDATE_SNAPSHOTS=1 cargo test -p tplab --test serve_view`.

mod common;
use egui_kittest::kittest::Queryable;
use egui_kittest::{Harness, SnapshotResults};
use tplab::app::ThemeChoice;
use tplab::TplabApp;

use common::{gl_setup, snapshot};

fn serve_harness(
    w: f32,
    h: f32,
    state: serde_json::Value,
    wgpu: bool,
) -> Harness<'static, TplabApp> {
    serve_harness_themed(w, h, state, wgpu, ThemeChoice::Light)
}

fn serve_harness_themed(
    w: f32,
    h: f32,
    state: serde_json::Value,
    wgpu: bool,
    theme: ThemeChoice,
) -> Harness<'static, TplabApp> {
    let mut app = TplabApp::default();
    app.set_theme(theme);
    assert!(app.select("serve"));
    assert!(app.load_view_state("serve", &state.to_string()));
    let mut b = Harness::builder().with_size([w, h]);
    if wgpu {
        b = b.wgpu_setup(gl_setup());
    }
    let mut harness = b.build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    harness.run_steps(2);
    harness
}

use common::wait_until;

/// Clicks Generate on a Serve view opened with `state` and waits until the request has run at
/// TP 1, 2 and 4 with the reference's text every time.
fn generate_matching(state: serde_json::Value) -> Harness<'static, TplabApp> {
    generate_matching_in(state, 820.0)
}

/// [`generate_matching`] in a window `height` points tall (a tall one shows the whole page).
fn generate_matching_in(state: serde_json::Value, height: f32) -> Harness<'static, TplabApp> {
    let mut h = serve_harness(1280.0, height, state, false);
    h.get_by_label("Generate").click();
    let done = wait_until(&mut h, 3000, 20, |h| {
        h.query_all_by_label_contains("Same text as the reference: yes")
            .count()
            == 3
    });
    assert!(done, "the request never finished");
    h
}

#[test]
fn a_request_decodes_at_every_tp_and_matches_the_reference() {
    let state =
        serde_json::json!({"prompt": "paralel", "tokens": 6, "train_steps": 0, "gqa": true});
    let h = generate_matching(state);
    assert!(h
        .query_by_label_contains("Differs from the reference")
        .is_none());
    h.get_by_label_contains("Unsharded reference: paralel");
    // The KV cache of 7 prompt + 5 decoded positions, per GPU.
    assert_eq!(
        h.query_all_by_label_contains("(12 of 64 positions)")
            .count(),
        3
    );
    for tp in ["TP = 1", "TP = 2", "TP = 4"] {
        h.get_by_label(tp);
    }
    // The 70B scenario at TP=4 and where more GPUs stop helping.
    h.get_by_label_contains("Llama-3 70B on 4 × H100 SXM");
    h.get_by_label_contains("doubling the GPUs saves less than 10%");
}

/// Both charts offer their numbers as a table (what a screen reader reads): the per-token bars
/// of each TP, and the 70B curve, whose TP 4 row is the time the scenario's sentence quotes.
#[test]
fn the_charts_offer_their_numbers_as_tables() {
    let state =
        serde_json::json!({"prompt": "paralel", "tokens": 6, "train_steps": 0, "gqa": true});
    // Tall enough for the whole page: a control below the fold is not clicked.
    let mut h = generate_matching_in(state, 3000.0);
    let tables = h
        .query_all_by_label("The bars as numbers (ms per token)")
        .count();
    assert_eq!(tables, 3, "one per TP");
    let heads = h.query_all_by_label("collectives").count();
    h.get_all_by_label("The bars as numbers (ms per token)")
        .next()
        .expect("a table")
        .click();
    h.run_steps(3);
    assert_eq!(
        h.query_all_by_label("collectives").count(),
        heads + 1,
        "the opened table's column head"
    );
    h.get_by_label("The curves as numbers (ms per token, per TP)")
        .click();
    h.run_steps(20);
    h.get_by_label("fits in memory");
    // The sentence's TP 4 time ("… 16.8 ms per token …") is the table's TP 4 row.
    let sentence = h
        .query_all_by(|n| {
            n.value()
                .is_some_and(|v| v.contains("Llama-3 70B on 4 × H100 SXM"))
        })
        .find_map(|n| n.value())
        .expect("the scenario's sentence");
    let ms: String = sentence
        .split("CUDA graphs: ")
        .nth(1)
        .and_then(|rest| rest.split(" ms").next())
        .expect("the TP 4 time")
        .to_string();
    assert!(
        h.query_all_by(|n| n
            .value()
            .is_some_and(|v| v.starts_with(&ms) && v.len() == ms.len() + 1))
            .count()
            >= 1,
        "a table cell {ms}x for TP 4"
    );
}

#[test]
fn the_shipped_model_answers_at_every_tp() {
    let state = serde_json::json!({"prompt": "Tensor paralel", "tokens": 8});
    let h = generate_matching(state);
    assert_eq!(
        h.query_all_by_label_contains("(21 of 64 positions)")
            .count(),
        3
    );
}

#[test]
fn a_bad_prompt_names_the_character() {
    let state = serde_json::json!({"prompt": "x#", "tokens": 3, "train_steps": 0});
    let mut h = serve_harness(1280.0, 820.0, state, false);
    h.get_by_label("Generate").click();
    let done = wait_until(&mut h, 500, 20, |h| {
        h.query_by_label_contains("The request failed").is_some()
    });
    assert!(done, "no error shown");
    h.get_by_label_contains("'#'");
}

#[test]
fn saved_state_out_of_range_is_clamped() {
    let mut app = TplabApp::default();
    let state = serde_json::json!({"tokens": 1_000_000, "train_steps": u64::MAX});
    assert!(app.load_view_state("serve", &state.to_string()));
    let saved: serde_json::Value =
        serde_json::from_str(&app.view_state("serve").unwrap_or_default()).unwrap_or_default();
    assert_eq!(saved["tokens"], 48);
    assert_eq!(saved["train_steps"], 2000);
}

/// The published figure shown by default: the one nearest to the guide's 70B TP=4 scenario.
fn published_row(model: &str, tp: usize, pp: usize, prompt: usize) -> (f64, f64) {
    let p = tplab_engine::labs::serve_published::published()
        .into_iter()
        .find(|p| p.model == model && p.tp == tp && p.pp == pp && p.prompt == prompt)
        .expect("a published row");
    let r = p.prediction().expect("a prediction");
    (p.published_ms, r.predicted_ms)
}

#[test]
fn a_published_run_sits_beside_its_prediction() {
    let h = serve_harness(1280.0, 900.0, serde_json::json!({}), false);
    // Preselected: Llama-2 70B on 4 A100s, the nearest to the scenario, first token.
    let (published, predicted) = published_row("llama2-70b", 4, 1, 2048);
    h.get_by_label_contains("Source: NVIDIA TensorRT-LLM");
    h.get_by_label(&format!("{published:.1} ms"));
    h.get_by_label(&format!("{predicted:.1} ms"));
    h.get_by_label_contains("Held out: nothing in the model was fitted");
    h.get_by_label_contains("held-out runs");
    // FasterTransformer's Megatron 530B at TP 8 × PP 3 on 3 nodes, picked (the picker keeps
    // its choice in the view's state).
    let index = tplab_engine::labs::serve_published::published()
        .iter()
        .position(|p| p.model == "megatron-530b" && p.pp == 3 && p.prompt == 20)
        .expect("the TP 8 × PP 3 row");
    let mut h = serve_harness(
        1280.0,
        900.0,
        serde_json::json!({"published": index}),
        false,
    );
    let (published, predicted) = published_row("megatron-530b", 8, 3, 20);
    h.get_by_label(&format!("{published:.1} ms"));
    h.get_by_label(&format!("{predicted:.1} ms"));
    h.get_by_label_contains("Source: NVIDIA FasterTransformer");
    h.get_by_label_contains("summed over the 3 pipeline stages");
    let err = 100.0 * (predicted - published) / published;
    assert!(err.abs() < 25.0, "{err}");
    // Back to the scenario's nearest run.
    h.get_by_label("Nearest to the scenario").click();
    h.run_steps(3);
    h.get_by_label_contains("Source: NVIDIA TensorRT-LLM");
}

#[test]
fn greedy_text_is_explained_and_sampling_still_matches_at_every_tp() {
    let state = serde_json::json!({"prompt": "paralel", "tokens": 10, "train_steps": 0,
        "temperature": 0.8});
    let mut h = generate_matching(state);
    h.get_by_label_contains("Sampled at temperature 0.80");
    assert!(h.query_by_label_contains("Greedy decoding").is_none());
    // A picture of the finished columns (measured times vary by machine, so it is looked at,
    // not compared): the token charts' y axes carry several values.
    h.run_steps(2);
    if let Ok(img) = h.render() {
        let path =
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve_after_request.png");
        let _ = img.save(&path);
    }
    let state = serde_json::json!({"prompt": "paralel", "tokens": 4, "train_steps": 0});
    let h = generate_matching(state);
    h.get_by_label_contains("Greedy decoding: every step takes the most likely");
}

#[test]
fn serve_snapshots() {
    use tplab_lessons::Lang;
    let mut results = SnapshotResults::new();
    for (w, hgt) in [(1280.0f32, 720.0f32), (1600.0, 1000.0), (1920.0, 1080.0)] {
        for lang in [Lang::En, Lang::Tr] {
            for theme in [ThemeChoice::Light, ThemeChoice::Dark] {
                for presenter in [false, true] {
                    let state = serde_json::json!({"prompt": "Tensor paralelliği"});
                    let mut app = TplabApp::default();
                    app.set_theme(theme);
                    app.shared.presenter = presenter;
                    assert!(app.select("serve"));
                    assert!(app.load_view_state("serve", &state.to_string()));
                    let mut h = common::gl_harness_pixels(app, (w, hgt), lang, "serve");
                    h.run_steps(2);
                    let name = common::shot_name("serve", (w, hgt), lang, theme, presenter);
                    if presenter {
                        // No side bar on a projector: the whole window is the view.
                        h.snapshot_options(&name, &common::snapshot_options());
                    } else {
                        snapshot(&mut h, &name);
                    }
                    results.extend_harness(&mut h);
                }
            }
        }
    }
    // A run with pipeline stages picked: its parts, summed over the stages, below the numbers.
    let index = tplab_engine::labs::serve_published::published()
        .iter()
        .position(|p| p.model == "megatron-530b" && p.pp == 3 && p.prompt == 20)
        .expect("the TP 8 × PP 3 row");
    for (lang, theme) in [
        (Lang::En, ThemeChoice::Light),
        (Lang::Tr, ThemeChoice::Dark),
    ] {
        let mut app = TplabApp::default();
        app.set_theme(theme);
        assert!(app.select("serve"));
        let state = serde_json::json!({"published": index});
        assert!(app.load_view_state("serve", &state.to_string()));
        let mut h = common::gl_harness_pixels(app, (1600.0, 1000.0), lang, "serve");
        h.run_steps(2);
        let name = common::shot_name("serve_pp", (1600.0, 1000.0), lang, theme, false);
        snapshot(&mut h, &name);
        results.extend_harness(&mut h);
    }
    results.unwrap();
}
