//! Lessons: the course in English or Turkish, rendered from Markdown, with "Show me" buttons
//! that switch the app to the view and scenario each lesson points at.

use crate::i18n::{t, t_args};
use crate::lab::Shared;
use crate::lab::View;
use crate::widgets::links::target_words;
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
    /// The lesson the list has been scrolled to show (a lesson opened by a link, or one far
    /// down the list): scrolled to until it is in view, once per lesson, so that scrolling
    /// the list by hand afterwards is not fought.
    #[serde(skip)]
    shown_in_list: Option<(String, f32, f32)>,
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
            shown_in_list,
        } = self;
        // The language switch is the side bar's (the top row in presenter mode), one for the app.
        let lang = crate::i18n::current_lang(ui.ctx());
        if let Some(slug) = shared.open_lesson.take() {
            *selected = Some(slug);
        }
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
        // A phone has no room for the list beside the page: a menu of the lessons above it.
        let narrow = ui.ctx().content_rect().width() < crate::widgets::NARROW_WIDTH;
        if narrow {
            let heading = ui.heading(t(lang, "lessons-title"));
            let title = |l: &tplab_lessons::Lesson| format!("{}. {}", l.order, l.title.get(lang));
            egui::ComboBox::from_id_salt("lesson-menu")
                .selected_text(title(current))
                .width(ui.available_width() - 8.0)
                .wrap_mode(egui::TextWrapMode::Truncate)
                .show_ui(ui, |ui| {
                    for l in &cat.lessons {
                        if ui
                            .selectable_label(l.slug == current.slug, title(l))
                            .clicked()
                        {
                            pick = Some(l.slug.clone());
                        }
                    }
                })
                .response
                .labelled_by(heading.id);
            ui.vertical(|ui| lesson_page(ui, cat, current, markdown, lang, &mut pick, &mut go));
        } else {
            ui.horizontal_top(|ui| {
                ui.vertical(|ui| {
                    ui.set_width(280.0);
                    ui.heading(t(lang, "lessons-title"));
                    // Sixteen titles do not fit a 1280x720 projector in presenter mode: they
                    // scroll.
                    egui::ScrollArea::vertical()
                        .id_salt("lesson-list")
                        .show(ui, |ui| {
                            for l in &cat.lessons {
                                let text = format!("{}. {}", l.order, l.title.get(lang));
                                let on = l.slug == current.slug;
                                let r = ui.selectable_label(on, text);
                                if r.clicked() {
                                    pick = Some(l.slug.clone());
                                }
                                // The lesson on screen is in view in the list: scroll to it
                                // until it is (the first frames may not know the list's
                                // height yet), then leave the list to the learner.
                                // Keyed by the screen's size too: presenter mode's zoom
                                // or a resized window lays the list out anew.
                                let screen = ui.ctx().content_rect().size();
                                let size = (screen.x.round(), screen.y.round());
                                let shown = shown_in_list.as_ref().is_some_and(|(slug, w, h)| {
                                    *slug == l.slug && (*w, *h) == size
                                });
                                if on && !shown {
                                    if ui.clip_rect().contains_rect(r.rect) {
                                        *shown_in_list = Some((l.slug.clone(), size.0, size.1));
                                    } else {
                                        r.scroll_to_me(Some(egui::Align::Center));
                                        ui.ctx().request_repaint();
                                    }
                                }
                            }
                        });
                });
                ui.separator();
                ui.vertical(|ui| lesson_page(ui, cat, current, markdown, lang, &mut pick, &mut go));
            });
        }
        if let Some(p) = pick {
            *selected = Some(p);
        }
        if let Some(target) = go {
            // The view's lesson link leads back here, not to the view's usual lesson.
            shared.from_lesson = selected.clone();
            shared.navigate(target);
        }
    }

    fn save(&self) -> Option<String> {
        crate::lab::save_json(self)
    }

    /// The lesson on screen (its slug), or the first lesson's.
    fn export_name(&self, _shared: &Shared) -> Option<String> {
        Some(self.selected.clone().unwrap_or_else(|| "lesson-1".into()))
    }

    fn load(&mut self, json: &str) {
        crate::lab::load_json(self, json);
    }
}

/// One lesson's page: where it sits in the course, its "Show me" buttons and its text. A click
/// on a lesson sets `pick`, on a "Show me" `go`.
fn lesson_page(
    ui: &mut egui::Ui,
    cat: &Catalog,
    current: &tplab_lessons::Lesson,
    markdown: &mut egui_commonmark::CommonMarkCache,
    lang: tplab_lessons::Lang,
    pick: &mut Option<String>,
    go: &mut Option<tplab_lessons::ShowMe>,
) {
    let at = cat.lessons.iter().position(|l| l.slug == current.slug);
    let previous = at
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| cat.lessons.get(i));
    let next = at.and_then(|i| cat.lessons.get(i + 1));
    // A projector's short screen (1280×720 at presenter zoom) keeps the lesson's text in view:
    // the navigation reads short (the next lesson's title on hover) and the "Show me" buttons
    // fold into one menu. Five full-width buttons pushed the text below the fold.
    let short = crate::widgets::short_screen(ui.ctx());
    ui.horizontal_wrapped(|ui| {
        ui.label(t_args(
            lang,
            "lesson-position",
            &[
                ("n", current.order.to_string()),
                ("total", cat.lessons.len().to_string()),
            ],
        ));
        if let Some(p) = previous {
            let key = if short {
                "lesson-previous-short"
            } else {
                "lesson-previous"
            };
            if ui.button(t(lang, key)).clicked() {
                *pick = Some(p.slug.clone());
            }
        }
        if let Some(n) = next {
            let full = t_args(
                lang,
                "lesson-next",
                &[("title", n.title.get(lang).to_string())],
            );
            let clicked = if short {
                ui.button(t(lang, "lesson-next-short"))
                    .on_hover_text(full)
                    .clicked()
            } else {
                ui.add(egui::Button::new(full).wrap()).clicked()
            };
            if clicked {
                *pick = Some(n.slug.clone());
            }
        }
        // A link to this lesson to hand out: the command on the desktop, the address on the web
        // (worded only when hovered or pressed, not every frame).
        let link = || crate::platform::lesson_link(current.order);
        let key = if short {
            "lesson-copy-link-short"
        } else {
            "lesson-copy-link"
        };
        if ui
            .button(t(lang, key))
            .on_hover_ui(|ui| {
                ui.label(t_args(lang, "lesson-copy-link-hint", &[("link", link())]));
            })
            .clicked()
        {
            ui.ctx().copy_text(link());
        }
    });
    let caption = |target: &tplab_lessons::ShowMe| {
        target
            .label
            .as_ref()
            .map(|l| l.get(lang).to_string())
            .unwrap_or_else(|| target_words(lang, target))
    };
    let hint = |target: &tplab_lessons::ShowMe| {
        t_args(
            lang,
            "show-me-hint",
            &[("target", target_words(lang, target))],
        )
    };
    if short && current.show_me.len() > 1 {
        let title = t_args(
            lang,
            "show-me-menu",
            &[("n", current.show_me.len().to_string())],
        );
        ui.menu_button(title, |ui| {
            for target in &current.show_me {
                if ui
                    .add(egui::Button::new(caption(target)).wrap())
                    .on_hover_text(hint(target))
                    .clicked()
                {
                    *go = Some(target.clone());
                    ui.close();
                }
            }
        });
    } else {
        ui.horizontal_wrapped(|ui| {
            for target in &current.show_me {
                let text = format!("{}: {}", t(lang, "show-me"), caption(target));
                if ui
                    .add(egui::Button::new(text).wrap())
                    .on_hover_text(hint(target))
                    .clicked()
                {
                    *go = Some(target.clone());
                }
            }
        });
    }
    ui.separator();
    // One scroll position per lesson: a lesson opens at its top, not where the
    // previous one was left.
    egui::ScrollArea::vertical()
        .id_salt(("lesson-body", &current.slug))
        .show(ui, |ui| {
            // A wide table widens the page; the button below keeps the screen's.
            let page_w = ui.available_width();
            egui_commonmark::CommonMarkViewer::new().show(ui, markdown, current.body.get(lang));
            if let Some(n) = next {
                ui.add_space(12.0);
                let text = t_args(
                    lang,
                    "lesson-next",
                    &[("title", n.title.get(lang).to_string())],
                );
                let clicked = ui
                    .scope(|ui| {
                        ui.set_max_width(page_w);
                        ui.add(egui::Button::new(text).wrap()).clicked()
                    })
                    .inner;
                if clicked {
                    *pick = Some(n.slug.clone());
                }
            }
        });
}
