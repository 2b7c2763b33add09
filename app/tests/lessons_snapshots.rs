//! Snapshots of the Lessons view on the lessons with the widest tables and the longest Show me
//! rows (8: the TP table; 9: sequence parallelism), in English and Turkish, light and dark, at
//! the three window sizes the brief names. Rendered on the CPU (wgpu on Mesa's llvmpipe through
//! GL) and compared with the PNGs under `tests/snapshots/`; regenerate with
//! `UPDATE_SNAPSHOTS=1 cargo test -p tplab --test lessons_snapshots`.

mod common;
use egui_kittest::{Harness, SnapshotResults};
use tplab::app::ThemeChoice;
use tplab::TplabApp;

use common::{gl_harness_in, snapshot};

/// The Lessons view on lesson `slug` in `turkish` or English, `theme`, `w`×`h`.
fn lesson(
    slug: &str,
    turkish: bool,
    theme: ThemeChoice,
    w: f32,
    h: f32,
) -> Harness<'static, TplabApp> {
    let mut app = TplabApp::default();
    app.set_theme(theme);
    app.select("lessons");
    let state = serde_json::json!({ "selected": slug });
    assert!(app.load_view_state("lessons", &state.to_string()));
    gl_harness_in(app, w, h, turkish)
}

#[test]
fn lesson_snapshots() {
    let mut results = SnapshotResults::new();
    for (slug, turkish, theme, w, h, name) in [
        (
            "sequence-parallel",
            false,
            ThemeChoice::Light,
            1280.0,
            720.0,
            "lesson9_1280x720_en",
        ),
        (
            "sequence-parallel",
            true,
            ThemeChoice::Dark,
            1280.0,
            720.0,
            "lesson9_1280x720_tr_dark",
        ),
        (
            "inside-a-node",
            false,
            ThemeChoice::Light,
            1920.0,
            1080.0,
            "lesson8_1920x1080_en",
        ),
        (
            "inside-a-node",
            true,
            ThemeChoice::Light,
            1600.0,
            1000.0,
            "lesson8_1600x1000_tr",
        ),
    ] {
        let mut harness = lesson(slug, turkish, theme, w, h);
        snapshot(&mut harness, name);
        results.extend_harness(&mut harness);
    }
    results.unwrap();
}

/// A lesson opened far down the list (by a link, `--lesson 16`) is in view in the list on a
/// projector, where the sixteen titles do not all fit: the list scrolls to it.
#[test]
fn a_linked_lesson_is_in_view_in_the_list() {
    use egui_kittest::kittest::Queryable;
    for size in [(1280.0, 720.0), (1920.0, 1080.0)] {
        let mut app = TplabApp::default();
        app.shared.presenter = true;
        app.select("lessons");
        app.shared.open_lesson = Some("pipeline-and-experts".into());
        let mut harness =
            common::gl_harness_pixels(app, size, tplab_lessons::Lang::En, "linked lesson");
        harness.run_steps(6);
        let window = harness.ctx.content_rect();
        let item = harness.get_by_label_contains("16. ");
        let r = item.rect();
        assert!(
            r.min.y >= window.min.y && r.max.y <= window.max.y,
            "{size:?}: lesson 16's title at {r:?}, window {window:?}"
        );
    }
}
