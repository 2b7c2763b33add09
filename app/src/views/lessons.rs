//! Lessons: the course in English or Turkish, rendered from Markdown, with "Show me" buttons
//! that switch the app to the view and scenario each lesson points at.

use super::{Shared, View};
use crate::i18n::{t, t_args};
use serde::{Deserialize, Serialize};
use tplab_lessons::{Catalog, Diagnostics};

/// The lessons view; the language is shared with the quiz through [`crate::i18n`].
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Lessons {
    /// Slug of the lesson on screen.
    selected: Option<String>,
    #[serde(skip)]
    catalog: Option<Result<Catalog, Diagnostics>>,
    #[serde(skip)]
    markdown: egui_commonmark::CommonMarkCache,
}

impl View for Lessons {
    fn id(&self) -> &'static str {
        "lessons"
    }

    fn title(&self) -> &'static str {
        "Lessons"
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let Self {
            selected,
            catalog,
            markdown,
        } = self;
        // The language switch is the side bar's (the top row in presenter mode), one for the app.
        let lang = crate::i18n::current_lang(ui.ctx());
        ui.separator();
        let catalog = catalog.get_or_insert_with(Catalog::embedded);
        let cat = match catalog {
            Ok(c) => &*c,
            Err(d) => {
                ui.colored_label(ui.visuals().error_fg_color, t(lang, "lessons-invalid"));
                ui.monospace(d.to_string());
                return;
            }
        };
        let Some(first) = cat.lessons.first() else {
            return;
        };
        let current = selected
            .as_deref()
            .and_then(|s| cat.get(s))
            .unwrap_or(first);
        let mut pick = None;
        let mut go = None;
        ui.horizontal_top(|ui| {
            ui.vertical(|ui| {
                ui.set_width(280.0);
                ui.heading(t(lang, "lessons-title"));
                // Thirteen titles do not fit a 1280x720 projector in presenter mode: they scroll.
                egui::ScrollArea::vertical()
                    .id_salt("lesson-list")
                    .show(ui, |ui| {
                        for l in &cat.lessons {
                            let text = format!("{}. {}", l.order, l.title.get(lang));
                            if ui.selectable_label(l.slug == current.slug, text).clicked() {
                                pick = Some(l.slug.clone());
                            }
                        }
                    });
            });
            ui.separator();
            ui.vertical(|ui| {
                ui.label(t_args(
                    lang,
                    "lesson-position",
                    &[
                        ("n", current.order.to_string()),
                        ("total", cat.lessons.len().to_string()),
                    ],
                ));
                ui.horizontal_wrapped(|ui| {
                    for target in &current.show_me {
                        let caption = target
                            .label
                            .as_ref()
                            .map(|l| l.get(lang).to_string())
                            .unwrap_or_else(|| target.describe_in(lang));
                        let text = format!("{}: {caption}", t(lang, "show-me"));
                        let hint = t_args(
                            lang,
                            "show-me-hint",
                            &[("target", target.describe_in(lang))],
                        );
                        if ui.button(text).on_hover_text(hint).clicked() {
                            go = Some(target.clone());
                        }
                    }
                });
                ui.separator();
                egui::ScrollArea::vertical()
                    .id_salt("lesson-body")
                    .show(ui, |ui| {
                        egui_commonmark::CommonMarkViewer::new().show(
                            ui,
                            markdown,
                            current.body.get(lang),
                        );
                    });
            });
        });
        if let Some(p) = pick {
            *selected = Some(p);
        }
        if let Some(target) = go {
            shared.navigate(target);
        }
    }

    fn save(&self) -> Option<String> {
        super::save_json(self)
    }

    /// The lesson on screen (its slug), or the first lesson's.
    fn export_name(&self, _shared: &Shared) -> Option<String> {
        Some(self.selected.clone().unwrap_or_else(|| "lesson-1".into()))
    }

    fn load(&mut self, json: &str) {
        super::load_json(self, json);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lesson_target_maps_to_an_app_view() {
        let cat = Catalog::embedded().unwrap();
        let ids: Vec<&str> = super::super::all_views().iter().map(|v| v.id()).collect();
        for (l, t) in cat.show_me_targets() {
            assert!(
                ids.contains(&t.view.name()),
                "{}: no view '{}'",
                l.slug,
                t.view
            );
            // A lesson's target names its scenario: the button lands where the lesson says.
            assert!(t.scenario.preset.is_some(), "{}", l.slug);
        }
        // And every view a target can name is one of the app's.
        for v in tplab_lessons::View::ALL {
            assert!(ids.contains(&v.name()), "no app view '{v}'");
        }
    }
}
