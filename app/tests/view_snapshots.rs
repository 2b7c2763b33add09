//! Every view as a learner at a desk sees it (1280×720, English, light) and as a class sees it on
//! a projector (1920×1080 pixels, Turkish, dark, presenter mode: 1.6× zoom, the navigation in one
//! row on top), rendered on the CPU (wgpu on Mesa's llvmpipe) and compared with the PNGs under
//! `tests/snapshots/`. Regenerate with `UPDATE_SNAPSHOTS=1 cargo test -p tplab --test
//! view_snapshots`; to look at every size, language and theme, run the `all_views` example.
//!
//! Work that runs off the UI thread is shown before it starts (Precision, Vocabulary, Train,
//! Serve), except Verify, which starts by itself and is waited for. Left out: the GPU view (it
//! shows the machine's CUDA libraries), the Quiz (it draws its questions at random; its
//! snapshots are the exam's, `tests/exam.rs`), and Collectives and Planner, whose frames
//! depend on wall-clock time (their own snapshot is `collectives.png`; look at both with the
//! `all_views` example).

use egui_kittest::kittest::Queryable;
use egui_kittest::{Harness, SnapshotOptions, SnapshotResults};
use tplab::app::{ThemeChoice, SIDE_BAR_WIDTH};
use tplab::TplabApp;
use tplab_lessons::Lang;

const VIEWS: [&str; 10] = [
    "playground",
    "step",
    "timeline",
    "memory",
    "verify",
    "precision",
    "vocab",
    "train",
    "serve",
    "lessons",
];

/// Presenter mode's zoom factor (the app's).
const ZOOM: f32 = 1.6;

fn gl_setup() -> eframe::egui_wgpu::WgpuSetup {
    match egui_kittest::wgpu::default_wgpu_setup() {
        eframe::egui_wgpu::WgpuSetup::CreateNew(mut setup) => {
            setup.instance_descriptor.backends = eframe::wgpu::Backends::GL;
            eframe::egui_wgpu::WgpuSetup::CreateNew(setup)
        }
        other => other,
    }
}

/// As the other snapshot tests: a small per-pixel difference and a few hundred pixels allowed
/// for Mesa's font rasterisation.
fn options() -> SnapshotOptions {
    SnapshotOptions::new().threshold(1.0).max_failed_pixels(400)
}

/// Frames until `ready` holds (at most `seconds`).
fn wait(
    harness: &mut Harness<'static, TplabApp>,
    seconds: u64,
    ready: impl Fn(&Harness<'static, TplabApp>) -> bool,
) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed().as_secs() < seconds {
        harness.run_steps(1);
        if ready(harness) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    false
}

/// One view at `size` window pixels; masks what depends on the machine.
fn shot(
    results: &mut SnapshotResults,
    view: &str,
    (w, h): (f32, f32),
    lang: Lang,
    theme: ThemeChoice,
    presenter: bool,
) {
    let zoom = if presenter { ZOOM } else { 1.0 };
    let mut app = TplabApp::default();
    app.set_theme(theme);
    app.shared.presenter = presenter;
    assert!(app.select(view), "no view {view}");
    let mut harness = Harness::builder()
        .with_size([w / zoom, h / zoom])
        .wgpu_setup(gl_setup())
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    tplab::i18n::set_lang(&harness.ctx, lang);
    harness.run_steps(4);
    // Presenter mode's zoom arrives in the first frame; egui then rescales the window it was
    // given. Give it again, in the zoomed points, so the window is exactly `w × h` pixels.
    harness.set_size(egui::vec2(w / zoom, h / zoom));
    harness.run_steps(2);
    assert_eq!(
        (harness.ctx.content_rect().size() * harness.ctx.pixels_per_point()).round(),
        egui::vec2(w, h),
        "{view}: the window is not {w}x{h} pixels"
    );
    match view {
        "verify" => {
            let done = wait(&mut harness, 300, |h| {
                h.query_by_label("error heatmap").is_some()
            });
            assert!(done, "{view}: the run never finished");
        }
        "planner" => {
            let done = wait(&mut harness, 300, |h| {
                h.query_by_label_contains("Why the winner wins").is_some()
                    || h.query_by_label_contains("Kazanan neden kazanır").is_some()
            });
            assert!(done, "{view}: the plan never finished");
        }
        _ => {}
    }
    harness.run_steps(2);
    if view == "verify" {
        // Rounding errors depend on the CPU's SIMD width (summation order inside the GEMMs).
        let masks: Vec<egui::Rect> = [
            "worst check",
            "error numbers",
            "error heatmap",
            "tolerance: relative",
        ]
        .into_iter()
        .filter_map(|label| harness.query_by_label(label).map(|n| n.rect()))
        .collect();
        for rect in masks {
            harness.mask(rect);
        }
    }
    if !presenter {
        // The side bar lists every view, and views are added over time.
        harness.mask(egui::Rect::from_min_max(
            egui::pos2(0.0, 0.0),
            egui::pos2(SIDE_BAR_WIDTH + 2.0, h),
        ));
    }
    let name = format!(
        "view_{view}_{}x{}_{}_{}{}",
        w as u32,
        h as u32,
        lang.code(),
        match theme {
            ThemeChoice::Light => "light",
            ThemeChoice::Dark => "dark",
        },
        if presenter { "_presenter" } else { "" }
    );
    harness.snapshot_options(&name, &options());
    results.extend_harness(&mut harness);
}

#[test]
fn every_view_at_a_desk_and_on_a_projector() {
    let mut results = SnapshotResults::new();
    for view in VIEWS {
        shot(
            &mut results,
            view,
            (1280.0, 720.0),
            Lang::En,
            ThemeChoice::Light,
            false,
        );
        shot(
            &mut results,
            view,
            (1920.0, 1080.0),
            Lang::Tr,
            ThemeChoice::Dark,
            true,
        );
    }
    results.unwrap();
}
