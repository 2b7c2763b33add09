//! The GPU view of the web edition: real GPUs need the desktop app.

use crate::lab::{Shared, View};

/// The GPU view of the web edition: real GPUs need the desktop app.
#[derive(Default)]
pub struct GpuNotice;

impl View for GpuNotice {
    fn id(&self) -> &'static str {
        "gpu"
    }

    fn title(&self) -> &'static str {
        "GPU"
    }

    fn ui(&mut self, ui: &mut egui::Ui, _shared: &mut Shared) {
        let lang = crate::i18n::current_lang(ui.ctx());
        crate::widgets::links::view_heading(ui, crate::i18n::t(lang, "web-gpu-title"));
        ui.add(egui::Label::new(crate::i18n::t(lang, "web-gpu-body")).wrap());
        ui.add_space(8.0);
        ui.code("cargo run --release\ntplab gpu info\ntplab gpu run --preset gpt2-small --tp 4");
    }
}
