//! Lessons: the course in English or Turkish, rendered from Markdown, with "Show me" buttons
//! that switch the app to the view and scenario each lesson points at.

use super::{Shared, View};
use crate::i18n::{t, t_args};
use serde::{Deserialize, Serialize};
use tplab_lessons::{Catalog, Diagnostics};

/// The embedded lessons, parsed once for the links other views draw.
fn embedded() -> Option<&'static Catalog> {
    static CATALOG: std::sync::OnceLock<Option<Catalog>> = std::sync::OnceLock::new();
    CATALOG.get_or_init(|| Catalog::embedded().ok()).as_ref()
}

/// A link "Lesson N: title" to the lesson `slug`; clicking it opens the Lessons view on it.
/// Draws nothing for a slug the lessons do not have.
pub fn lesson_link(ui: &mut egui::Ui, shared: &mut Shared, slug: &str) {
    let Some(lesson) = embedded().and_then(|c| c.get(slug)) else {
        return;
    };
    let lang = crate::i18n::current_lang(ui.ctx());
    let text = t_args(
        lang,
        "lesson-link",
        &[
            ("n", lesson.order.to_string()),
            ("title", lesson.title.get(lang).to_string()),
        ],
    );
    if ui.link(text).clicked() {
        open(shared, slug);
    }
}

/// Where a "Show me" target goes, in the learner's words: "Walkthrough, GPT-2 small, TP=4,
/// forward pass at "g after the MLP"" (the lessons crate's `describe_in` is the CLI's, with the
/// trace's op names).
pub fn target_words(lang: tplab_lessons::Lang, target: &super::ShowMe) -> String {
    let cfg = target.config();
    let view = match t(lang, &format!("view-{}", target.view.name())) {
        s if s.starts_with("view-") => target.view.title().to_string(),
        s => s,
    };
    let mut parts = vec![
        view,
        super::preset_name(lang, target.scenario.preset()),
        format!("TP={}", cfg.tp),
    ];
    let n = |id: &str, v: usize| t_args(lang, id, &[("n", v.to_string())]);
    if cfg.layers != 1 {
        parts.push(n("sm-layers", cfg.layers));
    }
    if cfg.is_gqa() {
        parts.push(n("sm-kv", cfg.kv_heads()));
    }
    if cfg.sequence_parallel {
        parts.push(t(lang, "sm-sp"));
    }
    if let Some(a) = target.scenario.algorithm {
        let algorithm = super::algorithm_name(lang, a);
        parts.push(t_args(lang, "sm-algorithm", &[("algorithm", algorithm)]));
    }
    if let Some(m) = &target.model {
        parts.push(super::model_name(m));
    }
    if let Some(g) = &target.gpu {
        parts.push(super::gpu_name(g));
    }
    if let Some(v) = target.gpus {
        parts.push(n("sm-gpus", v));
    }
    if let Some(v) = target.gpus_per_node {
        parts.push(n("sm-per-node", v));
    }
    if let Some(e) = &target.event {
        let op = tplab_engine::block::Op::from_name(e)
            .map_or_else(|| e.clone(), |op| super::op_label(lang, op));
        let pass = super::pass_name(lang, target.pass());
        parts.push(t_args(lang, "sm-event", &[("pass", pass), ("op", op)]));
    }
    parts.join(", ")
}

/// The lesson that explains the view `view_id`: the one whose Show me buttons open it most
/// often (the earliest on a tie), from the lessons' own targets. `None` for the Lessons and
/// Quiz views and for a view no lesson opens.
pub fn lesson_for_view(view_id: &str) -> Option<&'static tplab_lessons::Lesson> {
    if matches!(view_id, "lessons" | "quiz") {
        return None;
    }
    let cat = embedded()?;
    let count = |l: &tplab_lessons::Lesson| {
        l.show_me
            .iter()
            .filter(|t| t.view.name() == view_id)
            .count()
    };
    cat.lessons
        .iter()
        .filter(|l| count(l) > 0)
        .min_by_key(|l| (std::cmp::Reverse(count(l)), l.order))
}

/// A small link "Lesson N: title" at the top right of a view's page, to the lesson that
/// explains the view ([`lesson_for_view`]). Drawn over the page's first row without taking
/// room from it (the view's own heading starts at the left edge as before).
pub fn view_lesson_link(ui: &mut egui::Ui, shared: &mut Shared, view_id: &str) {
    let Some(lesson) = lesson_for_view(view_id) else {
        return;
    };
    let lang = crate::i18n::current_lang(ui.ctx());
    let text = t_args(
        lang,
        "lesson-link",
        &[
            ("n", lesson.order.to_string()),
            ("title", lesson.title.get(lang).to_string()),
        ],
    );
    let font = egui::TextStyle::Body.resolve(ui.style());
    let resp_id = egui::Id::NULL.with(("view-lesson-link", view_id));
    let hovered = ui.ctx().read_response(resp_id).is_some_and(|r| r.hovered());
    let color = ui.visuals().hyperlink_color;
    let galley = ui.painter().layout_no_wrap(text.clone(), font, color);
    // Clear of a view's vertical scroll bar, which is drawn over the page's right edge.
    let mut area = ui.max_rect();
    area.max.x -= ui.spacing().scroll.allocated_width();
    let rect = egui::Align2::RIGHT_TOP.align_size_within_rect(galley.size(), area);
    let resp = ui
        .interact(rect, resp_id, egui::Sense::click())
        .on_hover_cursor(egui::CursorIcon::PointingHand);
    if hovered {
        ui.painter()
            .hline(rect.x_range(), rect.bottom(), egui::Stroke::new(1.0, color));
    }
    ui.painter().galley(rect.min, galley, color);
    resp.widget_info(|| egui::WidgetInfo::labeled(egui::Role::Link, true, &text));
    if resp.clicked() {
        open(shared, &lesson.slug);
    }
}

/// Opens the Lessons view on the lesson `slug`.
pub fn open(shared: &mut Shared, slug: &str) {
    shared.open_lesson = Some(slug.to_string());
    shared.navigate(super::ShowMe {
        view: tplab_lessons::View::Lessons,
        ..Default::default()
    });
}

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
                let at = cat.lessons.iter().position(|l| l.slug == current.slug);
                let previous = at
                    .and_then(|i| i.checked_sub(1))
                    .and_then(|i| cat.lessons.get(i));
                let next = at.and_then(|i| cat.lessons.get(i + 1));
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
                        if ui.button(t(lang, "lesson-previous")).clicked() {
                            pick = Some(p.slug.clone());
                        }
                    }
                    if let Some(n) = next {
                        let text = t_args(
                            lang,
                            "lesson-next",
                            &[("title", n.title.get(lang).to_string())],
                        );
                        if ui.button(text).clicked() {
                            pick = Some(n.slug.clone());
                        }
                    }
                });
                ui.horizontal_wrapped(|ui| {
                    for target in &current.show_me {
                        let caption = target
                            .label
                            .as_ref()
                            .map(|l| l.get(lang).to_string())
                            .unwrap_or_else(|| target_words(lang, target));
                        let text = format!("{}: {caption}", t(lang, "show-me"));
                        let hint = t_args(
                            lang,
                            "show-me-hint",
                            &[("target", target_words(lang, target))],
                        );
                        if ui.button(text).on_hover_text(hint).clicked() {
                            go = Some(target.clone());
                        }
                    }
                });
                ui.separator();
                // One scroll position per lesson: a lesson opens at its top, not where the
                // previous one was left.
                egui::ScrollArea::vertical()
                    .id_salt(("lesson-body", &current.slug))
                    .show(ui, |ui| {
                        egui_commonmark::CommonMarkViewer::new().show(
                            ui,
                            markdown,
                            current.body.get(lang),
                        );
                        if let Some(n) = next {
                            ui.add_space(12.0);
                            let text = t_args(
                                lang,
                                "lesson-next",
                                &[("title", n.title.get(lang).to_string())],
                            );
                            if ui.button(text).clicked() {
                                pick = Some(n.slug.clone());
                            }
                        }
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
