//! The learner's language, kept in egui's persisted memory so it survives a restart, and the
//! language switch. The bundles, the lookups and the number formatter belong to
//! [`tplab_lessons::i18n`] (one owner for the app, the lessons and the quiz); they are re-exported
//! here so views write `crate::i18n::t`.

pub use tplab_lessons::i18n::{bytes, num, num_text, percent, sci, t, t_args, t_count, I18n};
use tplab_lessons::Lang;

fn lang_id() -> egui::Id {
    egui::Id::NULL.with("tplab-language")
}

/// The learner's language (English until chosen).
pub fn current_lang(ctx: &egui::Context) -> Lang {
    ctx.data_mut(|d| *d.get_persisted_mut_or_default::<Lang>(lang_id()))
}

/// Switches the language everywhere, live, and remembers it.
pub fn set_lang(ctx: &egui::Context, lang: Lang) {
    ctx.data_mut(|d| d.insert_persisted(lang_id(), lang));
}

/// An "English | Türkçe" switch; returns the language now in force.
pub fn language_switch(ui: &mut egui::Ui) -> Lang {
    let mut lang = current_lang(ui.ctx());
    ui.horizontal(|ui| {
        ui.label(t(lang, "language"));
        for l in Lang::ALL {
            if ui.selectable_label(lang == l, l.native_name()).clicked() {
                lang = l;
            }
        }
    });
    set_lang(ui.ctx(), lang);
    lang
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every message id the app's sources name literally (`t(lang, "id")`, `t_args(lang,
    /// "id", …)`, `t_count(lang, "id", …)`) is defined in both languages: a typo would show the
    /// id itself to the learner.
    #[test]
    fn every_literal_id_the_app_names_is_defined() {
        let i = I18n::load().expect("the Fluent files parse");
        let mut files = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src"
        ))];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).expect("app/src").flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("i18n.rs") {
                    // (This file names the calls in its own comments.)
                    files.push(p);
                }
            }
        }
        let mut missing = Vec::new();
        let mut checked = 0;
        for f in files {
            let src = std::fs::read_to_string(&f).expect("a source file");
            for call in ["t(lang, \"", "t_args(lang, \"", "t_count(lang, \""] {
                for (at, _) in src.match_indices(call) {
                    let rest = &src[at + call.len()..];
                    let Some(end) = rest.find('"') else { continue };
                    let id = &rest[..end];
                    checked += 1;
                    for lang in Lang::ALL {
                        if !i.has(lang, id) {
                            missing.push(format!("{}: {id} ({lang})", f.display()));
                        }
                    }
                }
            }
        }
        assert!(checked > 100, "found only {checked} lookups");
        assert!(missing.is_empty(), "{}", missing.join("\n"));
        assert_eq!(num(Lang::Tr, 1.25, 2), "1,25");
    }
}
