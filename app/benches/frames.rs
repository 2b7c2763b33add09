//! Frame benchmark: the app headless for 600 frames on the step-through view, TP=8 playing,
//! printing the median and 95th-percentile CPU time per frame (target: median ≤ 4 ms): the
//! egui pass (app logic, layout, painting) plus tessellation, i.e. all CPU work before upload.
//!
//! Run: `cargo bench -p tplab --bench frames`. Uses egui_kittest's harness without a GPU.

use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use std::time::Instant;
use tplab::lab::ShowMe;
use tplab::TplabApp;

const FRAMES: usize = 600;
const TARGET_MEDIAN_MS: f64 = 4.0;

fn main() {
    let mut app = TplabApp::default();
    // TP=8 needs a head count it divides: a GPT-2-medium-sized layer (h=1024, 16 heads).
    let mut cfg = app.shared.scenario.config().clone();
    cfg.heads = 16;
    cfg.hidden = 1024;
    cfg.ffn = 4096;
    cfg.tp = 8;
    app.shared.scenario.set_config(cfg);
    app.shared.navigate(ShowMe {
        view: tplab_lessons::View::Step,
        ..Default::default()
    });
    let mut harness = Harness::builder()
        .with_size([1280.0, 820.0])
        .with_max_steps(FRAMES as u64 * 2)
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    harness.run_steps(2);
    harness.key_press(egui::Key::Space); // play
    let mut frame_ms = Vec::with_capacity(FRAMES);
    let mut primitives = 0usize;
    let mut playing_frames = 0usize;
    for _ in 0..FRAMES {
        let t0 = Instant::now();
        harness.step();
        // Tessellation is CPU work every real frame does before the GPU upload.
        let out = harness.output();
        let clipped = harness
            .ctx
            .tessellate(out.shapes.clone(), out.pixels_per_point);
        frame_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        primitives += clipped.len();
        if harness.query_by_label("Pause").is_some() {
            playing_frames += 1;
        } else {
            // The pass ended: Space plays it again from the start.
            harness.key_press(egui::Key::Space);
        }
    }
    frame_ms.sort_by(f64::total_cmp);
    let median = frame_ms[FRAMES / 2];
    let p95 = frame_ms[FRAMES * 95 / 100];
    println!(
        "{FRAMES} frames on view '{}' at TP=8, playing in {playing_frames}; {} clipped \
         primitives per frame",
        harness.state().active_id(),
        primitives / FRAMES
    );
    let verdict = if median <= TARGET_MEDIAN_MS {
        "met"
    } else {
        "NOT met"
    };
    println!(
        "CPU time per frame (egui pass + tessellation): median {median:.3} ms, p95 {p95:.3} ms; \
         target median <= {TARGET_MEDIAN_MS} ms: {verdict}"
    );
}
