//! What the integration tests share (each test binary uses a part of it).
#![allow(dead_code)]

use egui_kittest::Harness;
use std::process::Command;
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

/// Runs the `tplab` binary: whether it succeeded, its stdout and its stderr.
pub fn tplab(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_tplab"))
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
