//! Snapshot tests: the Playground, Collectives and Verify views rendered on the CPU (wgpu on
//! Mesa's llvmpipe) and compared with the PNGs committed under `tests/snapshots/`.
//! Regenerate with `UPDATE_SNAPSHOTS=1 cargo test -p tplab --test snapshots`.

use egui_kittest::{Harness, SnapshotOptions};
use tplab::app::ThemeChoice;
use tplab::views::ShowMe;
use tplab::TplabApp;

fn harness_on(view: &str) -> Harness<'static, TplabApp> {
    let mut app = TplabApp::default();
    app.set_theme(ThemeChoice::Light);
    app.shared.navigate(ShowMe {
        view: view.into(),
        ..Default::default()
    });
    let mut harness = Harness::builder()
        .with_size([1280.0, 820.0])
        .wgpu()
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    harness.run_steps(3);
    harness
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
    harness.snapshot_options("playground", &options());
}

#[test]
fn collectives_snapshot() {
    let mut harness = harness_on("collectives");
    harness.snapshot_options("collectives", &options());
}
