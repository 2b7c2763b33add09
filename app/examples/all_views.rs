//! Renders every view of the app on the CPU (wgpu on Mesa's llvmpipe, as the snapshot tests) at
//! 1280×720, 1600×1000 and 1920×1080 pixels, in English and Turkish, light and dark, with and
//! without presenter mode, into a folder, to look at them all (overlap, clipping, contrast, words
//! left in English or in code).
//!
//! `cargo run -p tplab --example all_views -- /tmp/tplab-views [view ...]`
//!
//! Files are named `<view>_<width>x<height>_<lang>_<theme>[_presenter].png`, `width × height`
//! being the window in pixels: presenter mode's zoom makes the same window fewer, larger points.
//! Views with work off the UI thread (Verify, Precision, Vocabulary, Train, Serve, Planner) are
//! started and waited for first, once per view.

#[path = "../tests/common/mod.rs"]
mod common;
use common::{gl_harness, shot_name, wait_until};
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;
use tplab::app::ThemeChoice;
use tplab::TplabApp;
use tplab_lessons::Lang;

const SIZES: [(f32, f32); 3] = [(1280.0, 720.0), (1600.0, 1000.0), (1920.0, 1080.0)];

/// Starts the view's background work in English and waits for it.
fn prepare(harness: &mut Harness<'static, TplabApp>, view: &str) {
    let (button, done): (Option<&str>, &str) = match view {
        "verify" => (None, "checks within tolerance"),
        "precision" => (Some("Run the sweep"), "What the numbers say"),
        "vocab" => (Some("Check against the reference"), "PASSED: loss"),
        "train" => (Some("Start training"), "Finished: loss"),
        "serve" => (Some("Generate"), "Same text as the reference"),
        "planner" => (None, "Why the winner wins"),
        _ => return,
    };
    if view == "train" {
        // 40 steps: enough for the curves, quick on a CPU.
        if let Some(json) = harness.state().view_state("train") {
            if let Ok(mut v) = serde_json::from_str::<serde_json::Value>(&json) {
                v["config"]["steps"] = 40.into();
                harness.state_mut().load_view_state("train", &v.to_string());
            }
        }
        harness.run_steps(2);
    }
    if let Some(label) = button {
        match harness.query_by_label(label) {
            Some(b) => b.click(),
            None => eprintln!("{view}: no '{label}' button"),
        }
    }
    let label = done.to_string();
    // At most 300 s (frames 20 ms apart).
    if !wait_until(harness, 15_000, 20, move |h| {
        h.query_all_by_label_contains(&label).next().is_some()
    }) {
        eprintln!("{view}: '{done}' never appeared");
    }
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = std::path::PathBuf::from(args.next().unwrap_or_else(|| "/tmp/tplab-views".into()));
    let only: Vec<String> = args.collect();
    std::fs::create_dir_all(&out)?;
    // Every view, in the side bar's order.
    let views: Vec<&str> = tplab::app::all_views().iter().map(|v| v.id()).collect();
    for view in views {
        if !only.is_empty() && !only.iter().any(|v| v == view) {
            continue;
        }
        let mut app = TplabApp::default();
        app.select(view);
        let mut harness = gl_harness(app, 1280.0, 720.0);
        tplab::i18n::set_lang(&harness.ctx, Lang::En);
        harness.run_steps(3);
        prepare(&mut harness, view);
        for presenter in [false, true] {
            harness.state_mut().shared.presenter = presenter;
            // The zoom is applied in the next frame's logic.
            harness.run_steps(2);
            for (w, h) in SIZES {
                let zoom = if presenter {
                    tplab::app::presenter_zoom_for(h)
                } else {
                    1.0
                };
                harness.set_size(egui::vec2(w / zoom, h / zoom));
                harness.state_mut().shared.presenter = presenter;
                for lang in [Lang::En, Lang::Tr] {
                    for theme in [ThemeChoice::Light, ThemeChoice::Dark] {
                        tplab::i18n::set_lang(&harness.ctx, lang);
                        harness.state_mut().set_theme(theme);
                        harness.run_steps(4);
                        let image = harness.render().map_err(anyhow::Error::msg)?;
                        let name =
                            format!("{}.png", shot_name(view, (w, h), lang, theme, presenter));
                        image.save(out.join(&name))?;
                        println!("{name} {}x{}", image.width(), image.height());
                    }
                }
            }
        }
    }
    Ok(())
}
