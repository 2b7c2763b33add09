//! A live class's pictures: a round's distribution as bars (one per choice, the right one
//! marked once the answer is known), and the connection's state in words.

use crate::i18n::{t, t_args};
use crate::lab::class::Status;
use tplab_class::protocol::{Bin, Dist};
use tplab_lessons::Lang;

/// A choice's letter (A for 0).
pub fn letter(i: usize) -> &'static str {
    tplab_class::protocol::LETTERS
        .get(i)
        .copied()
        .unwrap_or("?")
}

/// The connection's state in the learner's words, and whether it is a problem.
pub fn status_words(lang: Lang, status: &Status) -> (String, bool) {
    match status {
        Status::Connecting { attempt: 0 } => (t(lang, "class-connecting"), false),
        Status::Connecting { attempt } => (
            t_args(
                lang,
                "class-reconnecting",
                &[("attempt", attempt.to_string())],
            ),
            true,
        ),
        Status::Joined => (t(lang, "class-connected"), false),
        Status::Ended => (t(lang, "class-ended"), true),
        Status::Refused { code, message } => {
            let id = format!("class-error-{}", code.name().replace('_', "-"));
            let words = t(lang, &id);
            // A code this app has no words for: the server's own English message.
            (if words == id { message.clone() } else { words }, true)
        }
    }
}

/// A bin's range in words: `2–4`, `< 2`, `≥ 8`.
fn bin_label(lang: Lang, b: &Bin) -> String {
    let n = |x: f64| crate::i18n::num(lang, x, if x.fract() == 0.0 { 0 } else { 2 });
    match (b.lo, b.hi) {
        (Some(lo), Some(hi)) => format!("{}–{}", n(lo), n(hi)),
        (None, Some(hi)) => format!("< {}", n(hi)),
        (Some(lo), None) => format!("≥ {}", n(lo)),
        (None, None) => "—".to_string(),
    }
}

/// The labels and counts of a distribution, and which bar is right (`right`: the answer's
/// choice, or bins marked right).
fn bars(lang: Lang, dist: &Dist, right: Option<usize>) -> Vec<(String, u32, bool)> {
    match dist {
        Dist::Choice { counts } => counts
            .iter()
            .enumerate()
            .map(|(i, &c)| (letter(i).to_string(), c, right == Some(i)))
            .collect(),
        Dist::Histogram { bins } => bins
            .iter()
            .map(|b| (bin_label(lang, b), b.count, b.right))
            .collect(),
    }
}

/// Draws one or two rounds' distributions as horizontal bars, the second beside the first
/// (`rounds`: the caption and the distribution of each), `height` points per bar.
pub fn distribution(
    ui: &mut egui::Ui,
    lang: Lang,
    rounds: &[(String, &Dist)],
    right: Option<usize>,
    bar_height: f32,
) {
    let total_of = |d: &Dist| -> u32 {
        match d {
            Dist::Choice { counts } => counts.iter().sum(),
            Dist::Histogram { bins } => bins.iter().map(|b| b.count).sum(),
        }
    };
    let ok = super::ok_ink(ui);
    let bar_fill = ui.visuals().selection.bg_fill;
    let ink = ui.visuals().text_color();
    let columns = rounds.len().max(1);
    super::columns(ui, columns, |cols| {
        for (col, (caption, dist)) in cols.iter_mut().zip(rounds) {
            let total = total_of(dist);
            col.strong(t_args(
                lang,
                "class-dist-caption",
                &[("round", caption.clone()), ("votes", total.to_string())],
            ));
            let rows = bars(lang, dist, right);
            // The labels' column as wide as the widest label (a histogram's ranges, "13,30–14,70
            // ✔", are wider than a letter), at most 45% of the row.
            let font = egui::FontId::proportional(bar_height * 0.55);
            let widest = rows
                .iter()
                .map(|(label, _, _)| {
                    col.painter()
                        .layout_no_wrap(format!("{label} ✔"), font.clone(), ink)
                        .size()
                        .x
                })
                .fold(0.0f32, f32::max);
            for (label, count, is_right) in rows {
                let (rect, resp) = col.allocate_exact_size(
                    egui::vec2(col.available_width(), bar_height),
                    egui::Sense::hover(),
                );
                let share = if total == 0 {
                    0.0
                } else {
                    count as f32 / total as f32
                };
                let label_w = (widest + 0.4 * bar_height)
                    .max(bar_height * 3.0)
                    .min(rect.width() * 0.45);
                let track = egui::Rect::from_min_max(
                    egui::pos2(rect.left() + label_w, rect.top() + 2.0),
                    egui::pos2(rect.right() - bar_height * 2.5, rect.bottom() - 2.0),
                );
                let painter = col.painter();
                painter.rect_filled(track, 2.0, col.visuals().faint_bg_color);
                let fill = egui::Rect::from_min_size(
                    track.min,
                    egui::vec2(track.width() * share, track.height()),
                );
                painter.rect_filled(fill, 2.0, if is_right { ok } else { bar_fill });
                painter.text(
                    egui::pos2(rect.left(), rect.center().y),
                    egui::Align2::LEFT_CENTER,
                    if is_right {
                        format!("{label} ✔")
                    } else {
                        label.clone()
                    },
                    font.clone(),
                    if is_right { ok } else { ink },
                );
                let words = format!(
                    "{count} ({})",
                    crate::i18n::percent(lang, 100.0 * f64::from(share), 0)
                );
                painter.text(
                    egui::pos2(rect.right(), rect.center().y),
                    egui::Align2::RIGHT_CENTER,
                    &words,
                    font.clone(),
                    ink,
                );
                resp.widget_info(|| {
                    egui::WidgetInfo::labeled(egui::Role::Label, true, format!("{label}: {words}"))
                });
            }
        }
    });
}

/// How many were right in each vote ("Right in the first vote: 12 of 28; in the second: 21 of
/// 27"), the second only when there was one.
pub fn summary_words(lang: Lang, s: &tplab_class::protocol::Summary) -> String {
    t_args(
        lang,
        if s.voted_second > 0 {
            "class-summary"
        } else {
            "class-summary-one"
        },
        &[
            ("right1", s.right_first.to_string()),
            ("voted1", s.voted_first.to_string()),
            ("right2", s.right_second.to_string()),
            ("voted2", s.voted_second.to_string()),
        ],
    )
}

/// The answer in words: a choice's letter, or a number with its tolerance and unit.
pub fn answer_words(lang: Lang, answer: &tplab_class::protocol::AnswerView) -> String {
    use tplab_class::protocol::AnswerView;
    match answer {
        AnswerView::Choice { letter, .. } => letter.clone(),
        AnswerView::Numeric {
            answer,
            tolerance,
            unit,
        } => {
            // A whole number as one ("14 steps"), the tolerance only when there is one.
            let num = |v: f64| {
                let digits = if v.fract() == 0.0 { 0 } else { 2 };
                crate::i18n::num(lang, v, digits)
            };
            let unit = unit.as_deref().map(|u| format!(" {u}")).unwrap_or_default();
            if *tolerance > 0.0 {
                format!("{} ± {}{unit}", num(*answer), num(*tolerance))
            } else {
                format!("{}{unit}", num(*answer))
            }
        }
    }
}

/// The round's timer, counting down (`size`: its text size): "45 s left", then "Time is up".
/// Asks for a frame each second while it runs.
pub fn timer(ui: &mut egui::Ui, lang: Lang, q: &crate::lab::class::QuestionState, size: f32) {
    let Some(left) = q.seconds_left() else {
        return;
    };
    let (words, color) = if left == 0 {
        (t(lang, "class-time-up"), ui.visuals().warn_fg_color)
    } else {
        (
            t_args(lang, "class-seconds-left", &[("seconds", left.to_string())]),
            ui.visuals().text_color(),
        )
    };
    ui.add(egui::Label::new(egui::RichText::new(words).strong().size(size).color(color)).wrap());
    if left > 0 {
        ui.ctx()
            .request_repaint_after(web_time::Duration::from_millis(250));
    }
}

/// A challenge's title and goal in the device's language (the design lab's own words for it),
/// or as the server sent them when the app does not know the challenge.
pub fn challenge_words(lang: Lang, ch: &tplab_class::protocol::ChallengeView) -> (String, String) {
    let word = |part: &str, sent: &str| {
        let id = format!("design-ch-{}-{part}", ch.id);
        match t(lang, &id) {
            s if s == id => sent.to_string(),
            s => s,
        }
    };
    (word("title", &ch.title), word("goal", &ch.goal))
}

/// A student's plan in the device's language, or the server's description when it cannot be
/// read.
pub fn entry_words(lang: Lang, p: &tplab_class::protocol::PlanEntry) -> String {
    match tplab_class::wire::to_plan(&p.plan) {
        Ok(plan) => super::plan::plan_words(lang, &plan),
        Err(_) => p.describe.clone(),
    }
}

/// A refused plan's broken rule in the device's language: the engine's verdict on the plan in
/// the challenge, worded as the design lab words it (the server sends the engine's English);
/// `sent` when the plan cannot be checked here.
pub fn refusal_words(
    lang: Lang,
    stage: u32,
    plan: &tplab_class::protocol::WirePlan,
    sent: &str,
) -> String {
    use tplab_engine::block::design::{challenge, design, DesignOptions};
    let checked = tplab_class::wire::to_plan(plan).ok().and_then(|plan| {
        let c = challenge::stage(stage as usize).ok()?;
        let options = DesignOptions {
            allow_wrong: false,
            execute: false,
        };
        let report = design(&c.config, &plan, None, &options).ok()?;
        let e = report.errors.first()?;
        Some(super::plan::rule_text(lang, e.kind, e))
    });
    checked.unwrap_or_else(|| sent.to_string())
}

/// `url` as a QR code, `side` points square (dark modules on white, with the quiet zone a
/// reader needs), for a phone's camera across a lecture hall; nothing if it does not encode.
pub fn qr_code(ui: &mut egui::Ui, url: &str, side: f32) {
    // Encoded once per address (kept in egui's memory), not every frame.
    let id = egui::Id::unique(("class-qr", url));
    let cached = ui.data(|d| d.get_temp::<std::sync::Arc<(usize, Vec<bool>)>>(id));
    let modules = match cached {
        Some(m) => m,
        None => {
            let Ok(code) = qrcode::QrCode::new(url.as_bytes()) else {
                return;
            };
            let dark = code
                .to_colors()
                .iter()
                .map(|c| *c == qrcode::Color::Dark)
                .collect();
            let m = std::sync::Arc::new((code.width(), dark));
            ui.data_mut(|d| d.insert_temp(id, m.clone()));
            m
        }
    };
    let (n, colors) = (modules.0, &modules.1);
    let quiet = 4;
    let cells = (n + 2 * quiet) as f32;
    let (rect, resp) = ui.allocate_exact_size(egui::vec2(side, side), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 0.0, egui::Color32::WHITE);
    let cell = side / cells;
    for (i, dark) in colors.iter().enumerate() {
        if *dark {
            let (x, y) = ((i % n + quiet) as f32, (i / n + quiet) as f32);
            painter.rect_filled(
                egui::Rect::from_min_size(
                    rect.min + egui::vec2(x * cell, y * cell),
                    egui::vec2(cell.ceil(), cell.ceil()),
                ),
                0.0,
                egui::Color32::BLACK,
            );
        }
    }
    super::a11y_label(
        &resp,
        &t_args(lang(ui), "class-qr", &[("url", url.to_string())]),
    );
}

fn lang(ui: &egui::Ui) -> Lang {
    super::lang(ui)
}

/// What the challenge still asks of a plan, in the device's language (the challenge's own
/// grading, as the design lab words it); `sent` (the server's English) when it cannot be graded
/// here.
pub fn missing_words(
    lang: Lang,
    stage: u32,
    plan: &tplab_class::protocol::WirePlan,
    sent: &[String],
) -> Vec<String> {
    use tplab_engine::block::design::challenge;
    let graded = tplab_class::wire::to_plan(plan).ok().and_then(|plan| {
        let c = challenge::stage(stage as usize).ok()?;
        c.grade(&plan, false).ok()
    });
    match graded {
        Some(g) if g.missing.len() == sent.len() => g
            .missing
            .iter()
            .map(|m| super::plan::missing_text(lang, m))
            .collect(),
        _ => sent.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Challenge 1 sent as it starts (nothing split): what it still asks, in Turkish on a
    /// Turkish phone, the engine's English only when the plan cannot be graded here.
    #[test]
    fn what_a_challenge_still_asks_is_worded_in_the_phones_language() {
        let start = tplab_class::protocol::WirePlan {
            qkv: "replicate".into(),
            out: "replicate".into(),
            fc1: "replicate".into(),
            fc2: "replicate".into(),
            sequence_parallel: false,
            collectives: None,
        };
        let plan = tplab_class::wire::to_plan(&start).expect("a plan");
        let c = tplab_engine::block::design::challenge::stage(1).expect("challenge 1");
        let sent: Vec<String> = c
            .grade(&plan, false)
            .expect("graded")
            .missing
            .iter()
            .map(|m| m.to_string())
            .collect();
        assert!(!sent.is_empty(), "the start does not solve challenge 1");
        let tr = missing_words(Lang::Tr, 1, &start, &sent);
        let en = missing_words(Lang::En, 1, &start, &sent);
        assert_eq!(tr.len(), sent.len());
        assert_ne!(tr, en, "Turkish lines differ from English");
        assert!(tr.iter().all(|l| !l.contains("all-reduce(s)")), "{tr:?}");
        // An unknown stage: the server's words.
        assert_eq!(missing_words(Lang::Tr, 99, &start, &sent), sent);
    }
}
