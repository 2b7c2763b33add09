//! The Serve view: a request decodes at TP 1, 2 and 4 off the UI thread and every column matches
//! the reference; snapshots of the view (before a request, so that no measured time enters the
//! picture) at 1280x720 and 1920x1080 in English and Turkish. Regenerate the PNGs with
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
    let mut h = serve_harness(1280.0, 820.0, state, false);
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

#[test]
fn serve_snapshots() {
    let mut results = SnapshotResults::new();
    for (w, hgt, theme) in [
        (1280.0f32, 720.0f32, ThemeChoice::Light),
        (1920.0, 1080.0, ThemeChoice::Light),
        (1600.0, 1000.0, ThemeChoice::Dark),
    ] {
        for lang in ["en", "tr"] {
            let state = serde_json::json!({"prompt": "Tensor paralelliği"});
            let mut h = serve_harness_themed(w, hgt, state, true, theme);
            if lang == "tr" {
                tplab::i18n::set_lang(&h.ctx, tplab_lessons::Lang::Tr);
                h.run_steps(2);
            }
            h.run_steps(2);
            let dark = if theme == ThemeChoice::Dark {
                "_dark"
            } else {
                ""
            };
            let name = format!("serve_{}x{}_{lang}{dark}", w as u32, hgt as u32);
            snapshot(&mut h, &name);
            results.extend_harness(&mut h);
        }
    }
    results.unwrap();
}
