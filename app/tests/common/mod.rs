//! What the integration tests share (each test binary uses a part of it).
#![allow(dead_code)]

use egui_kittest::kittest::Queryable;
use egui_kittest::{Harness, SnapshotOptions};
use std::process::Command;
use tplab::app::SIDE_BAR_WIDTH;
use tplab::TplabApp;

/// kittest's wgpu setup pinned to the GL backend: the committed PNGs were rendered by Mesa's
/// llvmpipe through EGL (Debian: libegl1, libegl-mesa0, libgl1-mesa-dri). Without the pin a
/// machine that also has lavapipe (Vulkan) would render through it and differ by a few pixels.
pub fn gl_setup() -> eframe::egui_wgpu::WgpuSetup {
    match egui_kittest::wgpu::default_wgpu_setup() {
        eframe::egui_wgpu::WgpuSetup::CreateNew(mut setup) => {
            setup.instance_descriptor.backends = eframe::wgpu::Backends::GL;
            eframe::egui_wgpu::WgpuSetup::CreateNew(setup)
        }
        other => other,
    }
}

/// `app` in a `w`×`h` window, rendered through [`gl_setup`]: for the snapshot tests.
pub fn gl_harness(app: TplabApp, w: f32, h: f32) -> Harness<'static, TplabApp> {
    Harness::builder()
        .with_size([w, h])
        .wgpu_setup(gl_setup())
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app)
}

/// [`gl_harness`] after two frames, switched to Turkish (by clicking "Türkçe", as a learner
/// does) when `turkish`, then after two more frames: how the snapshot tests of a view opened
/// from its saved state start.
pub fn gl_harness_in(app: TplabApp, w: f32, h: f32, turkish: bool) -> Harness<'static, TplabApp> {
    let mut harness = gl_harness(app, w, h);
    harness.run_steps(2);
    if turkish {
        click(&mut harness, "Türkçe", 2);
    }
    harness.run_steps(2);
    harness
}

/// [`gl_harness`] with `app` in a window of exactly `w`×`h` pixels (presenter mode's zoom makes
/// them fewer, larger points), in `lang`, after six frames; checks the size (`what`: for the
/// message).
pub fn gl_harness_pixels(
    app: TplabApp,
    (w, h): (f32, f32),
    lang: tplab_lessons::Lang,
    what: &str,
) -> Harness<'static, TplabApp> {
    let zoom = if app.shared.presenter {
        tplab::app::presenter_zoom_for(h)
    } else {
        1.0
    };
    let mut harness = gl_harness(app, w / zoom, h / zoom);
    tplab::i18n::set_lang(&harness.ctx, lang);
    harness.run_steps(4);
    // Presenter mode's zoom arrives in the first frame; egui then rescales the window it was
    // given. Give it again, in the zoomed points, so the window is exactly `w × h` pixels.
    harness.set_size(egui::vec2(w / zoom, h / zoom));
    harness.run_steps(2);
    let z = harness.ctx.zoom_factor();
    if (z - zoom).abs() > 0.01 {
        harness.set_size(egui::vec2(w / z, h / z));
        harness.run_steps(2);
    }
    assert_eq!(
        (harness.ctx.content_rect().size() * harness.ctx.pixels_per_point()).round(),
        egui::vec2(w, h),
        "{what}: the window is not {w}x{h} pixels"
    );
    harness
}

/// Font rasterisation and anti-aliasing differ slightly between Mesa versions: allow a small
/// per-pixel difference and a few hundred differing pixels (of ~1M), far below what a moved or
/// recoloured shape changes.
pub fn snapshot_options() -> SnapshotOptions {
    SnapshotOptions::new().threshold(1.0).max_failed_pixels(400)
}

/// Compares with `tests/snapshots/{name}.png` (with [`snapshot_options`]), after the last frame
/// has run (a mask lasts one frame). The side bar lists every view, and views are added over
/// time: it is masked, the view alone is compared.
pub fn snapshot(harness: &mut Harness<'static, TplabApp>, name: &str) {
    let h = harness.ctx.content_rect().height();
    harness.mask(egui::Rect::from_min_max(
        egui::pos2(0.0, 0.0),
        egui::pos2(SIDE_BAR_WIDTH + 2.0, h),
    ));
    harness.snapshot_options(name, &snapshot_options());
}

/// Clicks the widget labelled `label`, then runs `steps` frames.
pub fn click(harness: &mut Harness<'static, TplabApp>, label: &str, steps: usize) {
    harness.get_by_label(label).click();
    harness.run_steps(steps);
}

/// Presses `key`, then runs `steps` frames.
pub fn press(harness: &mut Harness<'static, TplabApp>, key: egui::Key, steps: usize) {
    harness.key_press(key);
    harness.run_steps(steps);
}

/// Grouped-query attention at TP=8: hidden 512, 8 heads sharing 2 KV heads (4 GPUs hold a copy
/// of each), FFN 2048.
pub fn gqa_tp8() -> tplab_engine::config::Config {
    tplab_engine::config::Config {
        hidden: 512,
        heads: 8,
        kv_heads: Some(2),
        ffn: 2048,
        tp: 8,
        ..Default::default()
    }
}

/// Runs the `tplab` binary: whether it succeeded, its stdout and its stderr.
pub fn tplab(args: &[&str]) -> (bool, String, String) {
    // `option_env!`: the `all_views` example includes this module too, and cargo names the
    // binary to integration tests only.
    let Some(exe) = option_env!("CARGO_BIN_EXE_tplab") else {
        panic!("cargo sets CARGO_BIN_EXE_tplab for integration tests, not for examples");
    };
    let o = Command::new(exe)
        .args(args)
        .output()
        .expect("the tplab binary runs");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Runs frames (sleeping `ms` between them, at most `tries` of them) until `ready` holds: for
/// work the views run off the UI thread. Returns whether it did.
pub fn wait_until(
    harness: &mut Harness<'static, TplabApp>,
    tries: usize,
    ms: u64,
    ready: impl Fn(&Harness<'static, TplabApp>) -> bool,
) -> bool {
    for _ in 0..tries {
        harness.run_steps(1);
        if ready(harness) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    false
}

/// [`tplab`] with the words of `cmd` (split at whitespace) as its arguments.
pub fn tplab_words(cmd: &str) -> (bool, String, String) {
    tplab(&cmd.split_whitespace().collect::<Vec<_>>())
}

/// Runs the `tplab` binary with the words of `cmd`, asserting that it succeeded and that its
/// check passed ("result: PASS"); returns its stdout.
pub fn tplab_passes(cmd: &str) -> String {
    let (ok, out, err) = tplab_words(cmd);
    assert!(
        ok && out.contains("result: PASS"),
        "tplab {cmd}: {out}{err}"
    );
    out
}

/// `<view>_<w>x<h>_<lang>_<theme>[_presenter]`: how the view snapshots (`view_` before it) and the
/// `all_views` example (`.png` after it) name a picture of `view` in a `w`×`h`-pixel window.
pub fn shot_name(
    view: &str,
    (w, h): (f32, f32),
    lang: tplab_lessons::Lang,
    theme: tplab::app::ThemeChoice,
    presenter: bool,
) -> String {
    let theme = match theme {
        tplab::app::ThemeChoice::Light => "light",
        tplab::app::ThemeChoice::Dark => "dark",
    };
    let presenter = if presenter { "_presenter" } else { "" };
    format!(
        "{view}_{}x{}_{}_{theme}{presenter}",
        w as u32,
        h as u32,
        lang.code()
    )
}

/// Opens the walkthrough on `plan` as a learner does: the design lab's free design at `tp` GPUs
/// with the plan's splits, then "Step through my plan".
#[allow(dead_code)]
pub fn walk_my_plan(
    app: &mut TplabApp,
    tp: usize,
    plan: &tplab_engine::block::design::ShardingPlan,
) {
    use tplab::lab::design::DesignAction;
    use tplab::lab::Action;
    use tplab_engine::block::design::Weight;
    let d = &mut app.shared.design;
    d.apply(&DesignAction::SelectStage(0));
    d.apply(&DesignAction::SetFreeTp(tp));
    for w in Weight::ALL {
        d.apply(&DesignAction::SetSplit(w, plan.split(w)));
    }
    d.apply(&DesignAction::SetSequenceParallel(plan.sequence_parallel));
    app.shared.act(Action::StepThroughMyPlan);
    app.shared.apply_actions();
    for target in app.shared.take_navigation() {
        app.show_me(&target);
    }
}

/// A machine the GPU view can show the same on every computer: CUDA compiled in, the driver and
/// NVRTC working with one H200, cuBLAS missing, NCCL only under a versioned name.
pub fn fixed_probe() -> tplab_kernels::Probe {
    use tplab_kernels::{Advice, DeviceInfo, Library, LibraryStatus, Probe, Problem};
    let versioned = Advice::OnlyVersioned {
        found: vec!["/usr/lib/x86_64-linux-gnu/libnccl.so.2".into()],
        looked_for: "libnccl.so".into(),
        symlink: "libnccl.so".into(),
    };
    Probe {
        compiled_with_cuda: true,
        libraries: vec![
            LibraryStatus::found(Library::Driver, "libcuda.so, libcuda.so.1", "13.0"),
            LibraryStatus::found(Library::Nvrtc, "libnvrtc.so, libnvrtc.so.13", "13.0"),
            LibraryStatus::missing(
                Library::Cublas,
                "libcublas.so, libcublas.so.13",
                Advice::NotFound {
                    library: Library::Cublas,
                },
            ),
            LibraryStatus::missing(Library::Nccl, "libnccl.so", versioned),
        ],
        devices: vec![DeviceInfo {
            ordinal: 0,
            name: "NVIDIA H200".into(),
            total_memory_bytes: 150_119_858_176,
            free_memory_bytes: 149_458_403_328,
            compute_capability: (9, 0),
        }],
        problems: vec![Problem::Missing {
            library: Library::Cublas,
            file: "libcublas.so".into(),
        }],
    }
}

/// Frames (10 ms apart) a view's background work may take: 300 s (the Verify view's run on a
/// loaded machine).
pub const WAIT_FRAMES: usize = 30_000;

/// Frames until a label containing one of `labels` shows (the view's background work has
/// answered); fails the test after [`WAIT_FRAMES`].
pub fn wait_for(harness: &mut Harness<'static, TplabApp>, labels: &[&str]) {
    let done = wait_until(harness, WAIT_FRAMES, 10, |h| {
        labels
            .iter()
            .any(|l| h.query_by_label_contains(l).is_some())
    });
    assert!(done, "none of {labels:?} ever showed");
}

/// Brings `view` to a state that does not depend on the machine's speed before a snapshot:
/// the Verify view's run and the Planner's search finished (the Collectives view is paused
/// before its first round), and the numbers that depend on the CPU masked (rounding errors depend on
/// the SIMD width, the summation order inside the GEMMs).
pub fn settle_view(harness: &mut Harness<'static, TplabApp>, view: &str) {
    match view {
        "verify" => wait_for(harness, &["Error heatmap", "Hata ısı haritası"]),
        "planner" => wait_for(harness, &["Why the winner wins", "Kazanan neden kazanır"]),
        "collectives" => {
            // Paused before the first round (it moves only while playing): the frame does not
            // depend on the clock.
            let first = harness
                .query_all_by_label_contains("Before round 1")
                .next()
                .is_some()
                || harness
                    .query_all_by_label_contains("1. turdan önce")
                    .next()
                    .is_some();
            assert!(first, "{view}: not before the first round");
        }
        _ => {}
    }
    harness.run_steps(2);
    if view == "verify" {
        for rect in verify_masks(harness) {
            harness.mask(rect);
        }
    }
}

/// Where the Verify view shows numbers that depend on the CPU (rounding errors depend on the
/// SIMD width and the summation order inside the GEMMs), in either language: the worst check,
/// the error numbers, the error heatmap, and the tolerance's line (the engine's wording).
pub fn verify_masks(harness: &Harness<'static, TplabApp>) -> Vec<egui::Rect> {
    const STARTS: [&str; 8] = [
        "worst: ",
        "en kötüsü: ",
        "|after - reference|",
        "|sonra - referans|",
        "Error heatmap",
        "Hata ısı haritası",
        "tolerance: ",
        "tolerans: ",
    ];
    // A label's text is its value; a figure's words are its label. The text runs inside a
    // label repeat its words and are left out.
    harness
        .query_all_by(|n| {
            n.role() != egui::accesskit::Role::TextRun
                && n.label()
                    .filter(|l| !l.is_empty())
                    .or_else(|| n.value())
                    .is_some_and(|l| STARTS.iter().any(|s| l.starts_with(s)))
        })
        .map(|n| n.rect())
        .collect()
}
