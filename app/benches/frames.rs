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
    accessibility_cost(harness.state().shared.scenario.config().clone());
}

/// What the screen readers' tree (AccessKit) costs a frame: the same playing walkthrough run
/// on a plain egui context in alternating blocks of frames with the tree built and without,
/// medians of each, and their ratio (one run, one machine: the anchor is the app without it).
fn accessibility_cost(cfg: tplab_engine::config::Config) {
    const BLOCK: usize = 50;
    const BLOCKS: usize = 6;
    let mut app = TplabApp::default();
    app.shared.scenario.set_config(cfg);
    app.shared.navigate(ShowMe {
        view: tplab_lessons::View::Step,
        ..Default::default()
    });
    let ctx = egui::Context::default();
    let mut time = 0.0;
    let mut frame = |ctx: &egui::Context, app: &mut TplabApp, events: Vec<egui::Event>| {
        time += 1.0 / 60.0;
        let input = egui::RawInput {
            screen_rect: Some(egui::Rect::from_min_size(
                egui::Pos2::ZERO,
                egui::vec2(1280.0, 820.0),
            )),
            time: Some(time),
            predicted_dt: 1.0 / 60.0,
            events,
            ..Default::default()
        };
        let t0 = Instant::now();
        let mut out = ctx.run_ui(input, |ui| app.frame(ui));
        let _ = ctx.tessellate(std::mem::take(&mut out.shapes), out.pixels_per_point);
        // No renderer here: the font atlas's updates are dropped.
        out.textures_delta.clear();
        t0.elapsed().as_secs_f64() * 1e3
    };
    frame(&ctx, &mut app, Vec::new());
    let space = egui::Event::Key {
        key: egui::Key::Space,
        physical_key: None,
        pressed: true,
        repeat: false,
        modifiers: egui::Modifiers::NONE,
    };
    frame(&ctx, &mut app, vec![space]); // play
    let mut with = Vec::new();
    let mut without = Vec::new();
    for b in 0..2 * BLOCKS {
        let on = b % 2 == 0;
        if on {
            ctx.enable_accesskit();
        } else {
            ctx.disable_accesskit();
        }
        for _ in 0..BLOCK {
            let ms = frame(&ctx, &mut app, Vec::new());
            if on {
                with.push(ms);
            } else {
                without.push(ms);
            }
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (a, b) = (median(&mut with), median(&mut without));
    println!(
        "AccessKit tree: median {a:.3} ms per frame with it, {b:.3} ms without ({} frames each, \
         alternating blocks of {BLOCK}): {:.2}x",
        with.len(),
        a / b
    );
}
