//! Links to lessons: a "Lesson N" link that opens the lesson and remembers where the learner came
//! from, a "Show me" target in words, and each view's own lesson at the right of its heading.

use crate::i18n::{t, t_args};
use crate::lab::{Shared, ShowMe};
use tplab_lessons::Catalog;

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
pub fn target_words(lang: tplab_lessons::Lang, target: &ShowMe) -> String {
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

/// The lesson that explains the page on screen, as its link reads: "Lesson N: title".
#[derive(Clone, Debug, PartialEq)]
struct PageLesson {
    slug: String,
    text: String,
}

fn page_lesson_id() -> egui::Id {
    egui::Id::NULL.with("tplab-page-lesson")
}

fn page_lesson_clicked_id() -> egui::Id {
    egui::Id::NULL.with("tplab-page-lesson-clicked")
}

/// Names the lesson that explains the view `view_id` for this frame: the lesson the learner
/// came from by a "Show me", else the design lab's challenge's own lesson, else the view's
/// ([`lesson_for_view`]). The view's heading ([`view_heading`]) draws it as a link at the top
/// right of the page; call [`follow_page_lesson`] after the view to act on a click.
pub fn set_page_lesson(ctx: &egui::Context, shared: &Shared, view_id: &str) {
    // A learner who came from a lesson's "Show me" goes back to that lesson.
    let from = shared
        .from_lesson
        .as_deref()
        .and_then(|slug| embedded().and_then(|c| c.get(slug)));
    // The design lab's challenge on screen has its own lesson (the one whose "Try it yourself"
    // opens it): the attention's challenge links to the attention's lesson, not the MLP's.
    let challenge = (view_id == "design")
        .then(|| shared.design.challenge().map(|c| c.stage))
        .flatten()
        .and_then(lesson_for_challenge);
    let lang = crate::i18n::current_lang(ctx);
    let page = from
        .or(challenge)
        .or_else(|| lesson_for_view(view_id))
        .map(|lesson| PageLesson {
            slug: lesson.slug.clone(),
            text: t_args(
                lang,
                "lesson-link",
                &[
                    ("n", lesson.order.to_string()),
                    ("title", lesson.title.get(lang).to_string()),
                ],
            ),
        });
    ctx.data_mut(|d| match page {
        Some(p) => {
            d.insert_temp(page_lesson_id(), p);
        }
        None => d.remove::<PageLesson>(page_lesson_id()),
    });
}

/// Opens the lesson whose link the view's heading drew, if it was clicked this frame.
pub fn follow_page_lesson(ctx: &egui::Context, shared: &mut Shared) {
    if let Some(slug) = ctx.data_mut(|d| d.remove_temp::<String>(page_lesson_clicked_id())) {
        open(shared, &slug);
    }
}

/// A view's heading, with the link to the lesson that explains the view
/// ([`set_page_lesson`]) at the right of the same row. Where the two do not fit on one row (a
/// long title on a projector, a Turkish one) the link takes its own row above the heading, at
/// the right; on a phone it wraps. The link belongs to the page: it scrolls with it, and
/// nothing is ever drawn under it.
pub fn view_heading(ui: &mut egui::Ui, text: impl Into<String>) -> egui::Response {
    let text = text.into();
    let Some(page) = ui
        .ctx()
        .data(|d| d.get_temp::<PageLesson>(page_lesson_id()))
    else {
        return ui.heading(text);
    };
    let link = |ui: &mut egui::Ui| {
        let resp = ui.add(egui::Link::new(&page.text));
        if resp.clicked() {
            let slug = page.slug.clone();
            ui.ctx()
                .data_mut(|d| d.insert_temp(page_lesson_clicked_id(), slug));
        }
    };
    if ui.ctx().content_rect().width() < crate::widgets::NARROW_WIDTH {
        link(ui);
        return ui.heading(text);
    }
    let width = |s: &str, style: egui::TextStyle| {
        let font = style.resolve(ui.style());
        ui.painter()
            .layout_no_wrap(s.to_string(), font, egui::Color32::PLACEHOLDER)
            .size()
            .x
    };
    let needed = width(&text, egui::TextStyle::Heading)
        + 2.0 * ui.spacing().item_spacing.x
        + width(&page.text, egui::TextStyle::Body);
    if needed <= ui.available_width() {
        ui.horizontal(|ui| {
            let heading = ui.heading(text);
            ui.with_layout(egui::Layout::right_to_left(egui::Align::Center), link);
            heading
        })
        .inner
    } else {
        ui.with_layout(egui::Layout::right_to_left(egui::Align::Min), link);
        ui.heading(text)
    }
}

/// The embedded lessons, parsed once for the links other views draw.
pub fn embedded() -> Option<&'static Catalog> {
    static CATALOG: std::sync::OnceLock<Option<Catalog>> = std::sync::OnceLock::new();
    CATALOG.get_or_init(|| Catalog::embedded().ok()).as_ref()
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

/// The lesson that opens the design lab's challenge `stage` (its "Try it yourself"), the first
/// in order where several do.
pub fn lesson_for_challenge(stage: usize) -> Option<&'static tplab_lessons::Lesson> {
    embedded()?.lessons.iter().find(|l| {
        l.show_me
            .iter()
            .any(|t| t.view == tplab_lessons::View::Design && t.challenge == Some(stage))
    })
}

/// Opens the Lessons view on the lesson `slug`.
pub fn open(shared: &mut Shared, slug: &str) {
    shared.open_lesson = Some(slug.to_string());
    shared.navigate(crate::lab::ShowMe {
        view: tplab_lessons::View::Lessons,
        ..Default::default()
    });
}
