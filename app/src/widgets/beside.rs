//! The picker of what is drawn beside the scenario (another TP size, or Megatron's split beside
//! a learner's plan).

use crate::i18n::{t, t_args};
use crate::lab::beside::{choices, Beside, BesideState};
use tplab_engine::config::Config;
use tplab_lessons::Lang;

/// A choice's name in the picker.
pub fn choice_name(lang: Lang, with: Beside) -> String {
    match with {
        Beside::Nothing => t(lang, "beside-nothing"),
        Beside::Tp(tp) => t_args(lang, "beside-tp", &[("tp", tp.to_string())]),
        Beside::Megatron => t(lang, "beside-megatron"),
    }
}

/// The picker: "Beside it: nothing / TP = 2 / …". Returns whether the choice changed.
pub fn picker(
    ui: &mut egui::Ui,
    lang: Lang,
    id: &str,
    state: &mut BesideState,
    base: &Config,
    walking: bool,
) -> bool {
    let options = choices(base, walking);
    let before = state.with;
    let shown = if options.contains(&state.with) {
        state.with
    } else {
        Beside::Nothing
    };
    egui::ComboBox::new(("beside", id), t(lang, "beside-label"))
        .selected_text(choice_name(lang, shown))
        .show_ui(ui, |ui| {
            for o in &options {
                ui.selectable_value(&mut state.with, *o, choice_name(lang, *o));
            }
        });
    before != state.with
}
