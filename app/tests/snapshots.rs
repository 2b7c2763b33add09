//! Snapshot tests: the Playground (plain and with grouped-query attention), Collectives and Verify views rendered on the CPU (wgpu on
//! Mesa's llvmpipe) and compared with the PNGs committed under `tests/snapshots/`.
//! Regenerate with `UPDATE_SNAPSHOTS=1 cargo test -p tplab --test snapshots`.

mod common;
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use tplab::app::ThemeChoice;
use tplab::lab::ShowMe;
use tplab::TplabApp;
use tplab_lessons::Lang;

use common::{gl_harness, gqa_tp8, snapshot, wait_until};

/// `app` at `w`×`h` in `lang`, after three frames.
fn harness_of(app: TplabApp, w: f32, h: f32, lang: Lang) -> Harness<'static, TplabApp> {
    let mut harness = gl_harness(app, w, h);
    tplab::i18n::set_lang(&harness.ctx, lang);
    harness.run_steps(3);
    harness
}

/// The app in `theme`, gone to `show_me`.
fn app_at(theme: ThemeChoice, show_me: ShowMe) -> TplabApp {
    let mut app = TplabApp::default();
    app.set_theme(theme);
    app.shared.navigate(show_me);
    app
}

/// The Walkthrough at the forward pass's `event`.
fn walkthrough_at(event: &str) -> ShowMe {
    ShowMe {
        view: tplab_lessons::View::Step,
        pass: Some(tplab_engine::block::op::Pass::Forward),
        event: Some(event.into()),
        ..Default::default()
    }
}

fn harness_on(view: &str) -> Harness<'static, TplabApp> {
    let show_me = ShowMe {
        view: tplab_lessons::View::from_name(view).expect("a view id"),
        ..Default::default()
    };
    harness_of(app_at(ThemeChoice::Light, show_me), 1280.0, 820.0, Lang::En)
}

#[test]
fn playground_snapshot() {
    snapshot(&mut harness_on("playground"), "playground");
}

/// Grouped-query attention at TP=8 with 2 KV heads: each KV head's K and V columns drawn as four
/// bands, one per GPU holding a copy.
#[test]
fn playground_gqa_snapshot() {
    let mut harness = harness_on("playground");
    harness.state_mut().shared.scenario.set_config(gqa_tp8());
    harness.run_steps(3);
    snapshot(&mut harness, "playground_gqa");
}

#[test]
fn collectives_snapshot() {
    snapshot(&mut harness_on("collectives"), "collectives");
}

#[test]
fn verify_snapshot() {
    let mut harness = harness_on("verify");
    let done = wait_until(&mut harness, 3000, 10, |h| {
        h.query_by_label_contains("checks within tolerance")
            .is_some()
    });
    assert!(done, "the run never finished");
    harness.run_steps(2);
    // Rounding errors depend on the CPU's SIMD width (summation order inside the GEMMs): mask
    // the error numbers and the error heatmap, keep everything else.
    // The tolerance's wording is the engine's and evolves with it.
    let masks = common::verify_masks(&harness);
    assert_eq!(
        masks.len(),
        4,
        "the worst check, the numbers, the heatmap, the tolerance"
    );
    for rect in masks {
        harness.mask(rect);
    }
    snapshot(&mut harness, "verify");
}

/// The walkthrough at fc2 (row-parallel, partial sums) on GPT-2 small at TP=4, as a learner and a
/// projector see it: 1280×720, 1600×1000 and 1920×1080, English and Turkish, light and dark.
#[test]
fn walkthrough_snapshots() {
    // Twelve harnesses: their results merged into one, as kittest asks.
    let mut results = egui_kittest::SnapshotResults::new();
    for (w, h) in [(1280.0, 720.0), (1600.0, 1000.0), (1920.0, 1080.0)] {
        for lang in [Lang::En, Lang::Tr] {
            for theme in [ThemeChoice::Light, ThemeChoice::Dark] {
                let app = app_at(theme, walkthrough_at("mlp.fc2"));
                let mut harness = harness_of(app, w, h, lang);
                let theme = match theme {
                    ThemeChoice::Light => "light",
                    ThemeChoice::Dark => "dark",
                };
                let name = format!(
                    "walkthrough_{}x{}_{}_{theme}",
                    w as u32,
                    h as u32,
                    lang.code()
                );
                snapshot(&mut harness, &name);
                results.extend_harness(&mut harness);
            }
        }
    }
    // A collective: g after the MLP, partial sums in, whole copies out.
    let app = app_at(ThemeChoice::Light, walkthrough_at("mlp.g"));
    let mut harness = harness_of(app, 1600.0, 1000.0, Lang::En);
    snapshot(&mut harness, "walkthrough_all_reduce_1600x1000_en_light");
    results.extend_harness(&mut harness);
    results.unwrap();
}

/// The first screen, as a new learner meets it, in English (light, 1280×720) and Turkish (dark,
/// 1920×1080).
#[test]
fn welcome_snapshots() {
    let mut results = egui_kittest::SnapshotResults::new();
    for (w, h, lang, theme, name) in [
        (
            1280.0,
            720.0,
            Lang::En,
            ThemeChoice::Light,
            "welcome_1280x720_en_light",
        ),
        (
            1920.0,
            1080.0,
            Lang::Tr,
            ThemeChoice::Dark,
            "welcome_1920x1080_tr_dark",
        ),
    ] {
        let mut app = TplabApp::default();
        app.set_theme(theme);
        app.welcome = true;
        let mut harness = harness_of(app, w, h, lang);
        snapshot(&mut harness, name);
        results.extend_harness(&mut harness);
    }
    results.unwrap();
}

/// Numbers mode at fc2's all-reduce on the numbers layer: both GPUs' partial sums, the sum and the
/// reference.
#[test]
fn walkthrough_numbers_snapshot() {
    let mut app = TplabApp::default();
    app.set_theme(ThemeChoice::Light);
    app.shared
        .scenario
        .set_config(tplab::views::step::numbers_config());
    app.load_view_state("step", r#"{"numbers": true}"#);
    app.shared.navigate(walkthrough_at("mlp.g"));
    let mut harness = harness_of(app, 1600.0, 1000.0, Lang::En);
    // The last digits of the error depend on the CPU's SIMD width: mask the verdict line.
    let verdict = harness
        .get_by_label_contains("the partial sums add up")
        .rect();
    harness.mask(verdict);
    snapshot(&mut harness, "walkthrough_numbers_1600x1000_en_light");
}
