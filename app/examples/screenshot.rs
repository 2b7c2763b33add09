//! Renders the README's screenshot on the CPU (wgpu on Mesa's llvmpipe, as the snapshot tests):
//! the whole window at 1280×820, the walkthrough at fc2 on GPT-2 small at TP=4.
//!
//! `cargo run -p tplab --example screenshot -- docs/screenshot.png`

use egui_kittest::Harness;
use tplab::lab::ShowMe;
use tplab::TplabApp;

fn main() -> anyhow::Result<()> {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "docs/screenshot.png".into());
    let mut app = TplabApp::default();
    app.shared.navigate(ShowMe {
        view: tplab_lessons::View::Step,
        pass: Some(tplab_engine::block::op::Pass::Forward),
        event: Some("mlp.fc2".into()),
        ..Default::default()
    });
    let setup = match egui_kittest::wgpu::default_wgpu_setup() {
        eframe::egui_wgpu::WgpuSetup::CreateNew(mut s) => {
            s.instance_descriptor.backends = eframe::wgpu::Backends::GL;
            eframe::egui_wgpu::WgpuSetup::CreateNew(s)
        }
        other => other,
    };
    let mut harness = Harness::builder()
        .with_size([1280.0, 820.0])
        .wgpu_setup(setup)
        .build_ui_state(|ui, app: &mut TplabApp| app.frame(ui), app);
    harness.run_steps(3);
    let image = harness.render().map_err(anyhow::Error::msg)?;
    image.save(&out)?;
    println!("wrote {out}");
    Ok(())
}
