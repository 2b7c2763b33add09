//! Snapshot tests: the Playground (plain and with grouped-query attention), Collectives and Verify views rendered on the CPU (wgpu on
//! Mesa's llvmpipe) and compared with the PNGs committed under `tests/snapshots/`.
//! Regenerate with `UPDATE_SNAPSHOTS=1 cargo test -p tplab --test snapshots`.

mod common;
use egui_kittest::kittest::Queryable;
use egui_kittest::{Harness, SnapshotOptions};
use tplab::app::{ThemeChoice, SIDE_BAR_WIDTH};
use tplab::views::ShowMe;
use tplab::TplabApp;

use common::gl_setup;

fn harness_on(view: &str) -> Harness<'static, TplabApp> {
    let mut app = TplabApp::default();
    app.set_theme(ThemeChoice::Light);
    app.shared.navigate(ShowMe {
        view: tplab_lessons::View::from_name(view).expect("a view id"),
        ..Default::default()
    });
    let mut harness = Harness::builder()
        .with_size([1280.0, 820.0])
        .wgpu_setup(gl_setup())
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    harness.run_steps(3);
    harness
}

/// Compares with `tests/snapshots/{name}.png`, after the last frame has run (a mask lasts one
/// frame). The side bar lists every view, and views are added over time: compare the view only.
fn snapshot(harness: &mut Harness<'static, TplabApp>, name: &str) {
    harness.mask(egui::Rect::from_min_max(
        egui::pos2(0.0, 0.0),
        egui::pos2(SIDE_BAR_WIDTH + 2.0, 820.0),
    ));
    harness.snapshot_options(name, &options());
}

/// Font rasterisation and anti-aliasing differ slightly between Mesa versions: allow a small
/// per-pixel difference and a few hundred differing pixels (of ~1M), far below what a moved or
/// recoloured shape changes.
fn options() -> SnapshotOptions {
    SnapshotOptions::new().threshold(1.0).max_failed_pixels(400)
}

#[test]
fn playground_snapshot() {
    let mut harness = harness_on("playground");
    snapshot(&mut harness, "playground");
}

/// Grouped-query attention at TP=8 with 2 KV heads: each KV head's K and V columns drawn as four
/// bands, one per GPU holding a copy.
#[test]
fn playground_gqa_snapshot() {
    let mut harness = harness_on("playground");
    harness
        .state_mut()
        .shared
        .scenario
        .set_config(tplab_engine::Config {
            hidden: 512,
            heads: 8,
            kv_heads: Some(2),
            ffn: 2048,
            tp: 8,
            ..Default::default()
        });
    harness.run_steps(3);
    snapshot(&mut harness, "playground_gqa");
}

#[test]
fn collectives_snapshot() {
    let mut harness = harness_on("collectives");
    snapshot(&mut harness, "collectives");
}

#[test]
fn verify_snapshot() {
    let mut harness = harness_on("verify");
    let mut done = false;
    for _ in 0..3000 {
        harness.run_steps(1);
        if harness
            .query_by_label_contains("checks within tolerance")
            .is_some()
        {
            done = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(done, "the run never finished");
    harness.run_steps(2);
    // Rounding errors depend on the CPU's SIMD width (summation order inside the GEMMs): mask
    // the error numbers and the error heatmap, keep everything else.
    let mut masks: Vec<egui::Rect> = ["worst check", "error numbers", "error heatmap"]
        .into_iter()
        .map(|label| harness.get_by_label(label).rect())
        .collect();
    // The tolerance's wording is the engine's and evolves with it.
    masks.push(harness.get_by_label_contains("tolerance: relative").rect());
    for rect in masks {
        harness.mask(rect);
    }
    snapshot(&mut harness, "verify");
}

/// The walkthrough at fc2 (row-parallel, partial sums) on GPT-2 small at TP=4, as a learner and a
/// projector see it: 1280×720, 1600×1000 and 1920×1080, English and Turkish, light and dark.
#[test]
fn walkthrough_snapshots() {
    use tplab_lessons::Lang;
    // Twelve harnesses: their results merged into one, as kittest asks.
    let mut results = egui_kittest::SnapshotResults::new();
    for (w, h) in [(1280.0, 720.0), (1600.0, 1000.0), (1920.0, 1080.0)] {
        for lang in [Lang::En, Lang::Tr] {
            for theme in [ThemeChoice::Light, ThemeChoice::Dark] {
                let mut app = TplabApp::default();
                app.set_theme(theme);
                app.shared.navigate(ShowMe {
                    view: tplab_lessons::View::Step,
                    pass: Some(tplab_engine::trace::Pass::Forward),
                    event: Some("mlp.fc2".into()),
                    ..Default::default()
                });
                let mut harness = Harness::builder()
                    .with_size([w, h])
                    .wgpu_setup(gl_setup())
                    .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
                tplab::i18n::set_lang(&harness.ctx, lang);
                harness.run_steps(3);
                harness.mask(egui::Rect::from_min_max(
                    egui::pos2(0.0, 0.0),
                    egui::pos2(SIDE_BAR_WIDTH + 2.0, h),
                ));
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
                harness.snapshot_options(&name, &options());
                results.extend_harness(&mut harness);
            }
        }
    }
    // A collective: g after the MLP, partial sums in, whole copies out.
    let mut app = TplabApp::default();
    app.set_theme(ThemeChoice::Light);
    app.shared.navigate(ShowMe {
        view: tplab_lessons::View::Step,
        pass: Some(tplab_engine::trace::Pass::Forward),
        event: Some("mlp.g".into()),
        ..Default::default()
    });
    let mut harness = Harness::builder()
        .with_size([1600.0, 1000.0])
        .wgpu_setup(gl_setup())
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    harness.run_steps(3);
    harness.mask(egui::Rect::from_min_max(
        egui::pos2(0.0, 0.0),
        egui::pos2(SIDE_BAR_WIDTH + 2.0, 1000.0),
    ));
    harness.snapshot_options("walkthrough_all_reduce_1600x1000_en_light", &options());
    results.extend_harness(&mut harness);
    results.unwrap();
}

/// The first screen, as a new learner meets it, in English (light, 1280×720) and Turkish (dark,
/// 1920×1080).
#[test]
fn welcome_snapshots() {
    use tplab_lessons::Lang;
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
        let mut harness = Harness::builder()
            .with_size([w, h])
            .wgpu_setup(gl_setup())
            .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
        tplab::i18n::set_lang(&harness.ctx, lang);
        harness.run_steps(3);
        harness.mask(egui::Rect::from_min_max(
            egui::pos2(0.0, 0.0),
            egui::pos2(SIDE_BAR_WIDTH + 2.0, h),
        ));
        harness.snapshot_options(name, &options());
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
    app.shared.navigate(ShowMe {
        view: tplab_lessons::View::Step,
        pass: Some(tplab_engine::trace::Pass::Forward),
        event: Some("mlp.g".into()),
        ..Default::default()
    });
    let mut harness = Harness::builder()
        .with_size([1600.0, 1000.0])
        .wgpu_setup(gl_setup())
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    harness.run_steps(3);
    harness.get_by_label_contains("the partial sums add up");
    harness.mask(egui::Rect::from_min_max(
        egui::pos2(0.0, 0.0),
        egui::pos2(SIDE_BAR_WIDTH + 2.0, 1000.0),
    ));
    // The last digits of the error depend on the CPU's SIMD width: mask the verdict line.
    let verdict = harness
        .get_by_label_contains("the partial sums add up")
        .rect();
    harness.mask(verdict);
    harness.snapshot_options("walkthrough_numbers_1600x1000_en_light", &options());
}
