//! Quiz: one question at a time with instant feedback and the explanation after every answer.
//!
//! The set starts with the guide's six questions, then the rest of the banks and generated
//! questions (answers computed by the engine), shuffled by a seed that "New questions" changes.

use super::{Shared, View};
use crate::i18n::{language_switch, t, t_args};
use crate::views::lessons::to_app_target;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use tplab_lessons::Lang;
use tplab_quiz::bank::{Bank, Question, QuestionKind};
use tplab_quiz::grade::{self, Presentation};

/// Practice questions after the guide's six.
const SET_SIZE: usize = 14;

/// What the learner has picked for the current question.
#[derive(Default)]
struct Draft {
    single: Option<usize>,
    multiple: BTreeSet<usize>,
    number: String,
    /// Display positions in the order clicked.
    order: Vec<usize>,
}

/// The verdict on the current question.
struct Feedback {
    correct: bool,
    expected: String,
}

/// The quiz view.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Quiz {
    seed: u64,
    index: usize,
    correct: usize,
    answered: usize,
    #[serde(skip)]
    questions: Option<Result<Vec<Question>, String>>,
    #[serde(skip)]
    draft: Draft,
    #[serde(skip)]
    feedback: Option<Feedback>,
    #[serde(skip)]
    error: Option<String>,
}

fn question_set(seed: u64) -> Result<Vec<Question>, String> {
    let bank = Bank::embedded().map_err(|d| d.to_string())?;
    let mut qs: Vec<Question> = bank
        .questions
        .iter()
        .filter(|q| q.id.starts_with("faq-"))
        .cloned()
        .collect();
    let rest = tplab_quiz::practice_set(&bank, None, usize::MAX, seed)?;
    qs.extend(
        rest.into_iter()
            .filter(|q| !q.id.starts_with("faq-"))
            .take(SET_SIZE),
    );
    Ok(qs)
}

fn letter(p: usize) -> char {
    char::from(b'A' + (p % 26) as u8)
}

impl Quiz {
    /// The typed form of the draft, for [`grade::parse_response`].
    fn draft_text(&self, q: &Question) -> Option<String> {
        let d = &self.draft;
        match q.kind {
            QuestionKind::Single { .. } => d.single.map(|p| letter(p).to_string()),
            QuestionKind::Multiple { .. } => {
                (!d.multiple.is_empty()).then(|| d.multiple.iter().map(|&p| letter(p)).collect())
            }
            QuestionKind::Numeric { .. } => (!d.number.trim().is_empty()).then(|| d.number.clone()),
            QuestionKind::Ordering { ref items } => {
                (d.order.len() == items.len()).then(|| d.order.iter().map(|&p| letter(p)).collect())
            }
        }
    }

    fn check(&mut self, q: &Question, pres: &Presentation, lang: Lang) {
        let Some(text) = self.draft_text(q) else {
            return;
        };
        match grade::parse_response(q, pres, &text, lang) {
            Ok(r) => {
                let g = grade::grade(q, pres, &r, lang);
                self.answered += 1;
                if g.correct {
                    self.correct += 1;
                }
                self.error = None;
                self.feedback = Some(Feedback {
                    correct: g.correct,
                    expected: g.expected,
                });
            }
            Err(e) => self.error = Some(e.to_string()),
        }
    }

    fn next(&mut self) {
        self.index += 1;
        self.draft = Draft::default();
        self.feedback = None;
        self.error = None;
    }

    fn answer_ui(&mut self, ui: &mut egui::Ui, q: &Question, pres: &Presentation, lang: Lang) {
        let locked = self.feedback.is_some();
        let lines = pres.lines(q, lang);
        let d = &mut self.draft;
        ui.add_enabled_ui(!locked, |ui| match &q.kind {
            QuestionKind::Single { .. } => {
                ui.label(t(lang, "quiz-single-hint"));
                for (p, (label, text)) in lines.iter().enumerate() {
                    ui.radio_value(&mut d.single, Some(p), format!("{label}) {text}"));
                }
            }
            QuestionKind::Multiple { .. } => {
                ui.label(t(lang, "quiz-multiple-hint"));
                for (p, (label, text)) in lines.iter().enumerate() {
                    let mut on = d.multiple.contains(&p);
                    if ui.checkbox(&mut on, format!("{label}) {text}")).changed() {
                        if on {
                            d.multiple.insert(p);
                        } else {
                            d.multiple.remove(&p);
                        }
                    }
                }
            }
            QuestionKind::Numeric { unit, .. } => {
                ui.horizontal(|ui| {
                    ui.label(t(lang, "quiz-number"));
                    ui.text_edit_singleline(&mut d.number);
                    if let Some(u) = unit {
                        ui.label(t_args(
                            lang,
                            "quiz-unit",
                            &[("unit", u.get(lang).to_string())],
                        ));
                    }
                });
            }
            QuestionKind::Ordering { .. } => {
                ui.label(t(lang, "quiz-order-hint"));
                for (p, (label, text)) in lines.iter().enumerate() {
                    if !d.order.contains(&p) && ui.button(format!("{label}) {text}")).clicked() {
                        d.order.push(p);
                    }
                }
                ui.label(t(lang, "quiz-order-chosen"));
                for (i, &p) in d.order.iter().enumerate() {
                    if let Some((label, text)) = lines.get(p) {
                        ui.label(format!("{}. {label}) {text}", i + 1));
                    }
                }
                if !d.order.is_empty() && ui.button(t(lang, "quiz-order-reset")).clicked() {
                    d.order.clear();
                }
            }
        });
    }
}

impl View for Quiz {
    fn id(&self) -> &'static str {
        "quiz"
    }

    fn title(&self) -> &'static str {
        "Quiz"
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = language_switch(ui);
        ui.separator();
        let seed = self.seed;
        let questions = match self.questions.get_or_insert_with(|| question_set(seed)) {
            Ok(qs) => qs.clone(),
            Err(e) => {
                ui.colored_label(ui.visuals().error_fg_color, t(lang, "quiz-invalid"));
                ui.monospace(e.as_str());
                return;
            }
        };
        ui.horizontal(|ui| {
            ui.heading(t(lang, "quiz-title"));
            ui.label(t_args(
                lang,
                "quiz-score",
                &[
                    ("correct", self.correct.to_string()),
                    ("answered", self.answered.to_string()),
                ],
            ));
            if ui.button(t(lang, "quiz-new-set")).clicked() {
                self.seed = self.seed.wrapping_add(1);
                self.questions = None;
                self.index = 0;
                self.draft = Draft::default();
                self.feedback = None;
            }
        });
        let Some(q) = questions.get(self.index) else {
            ui.label(t(lang, "quiz-done"));
            return;
        };
        let pres = Presentation::new(q, self.seed.wrapping_add(self.index as u64));
        ui.label(t_args(
            lang,
            "quiz-question-position",
            &[
                ("n", (self.index + 1).to_string()),
                ("total", questions.len().to_string()),
            ],
        ));
        egui::ScrollArea::vertical()
            .id_salt("quiz-body")
            .show(ui, |ui| {
                ui.add(
                    egui::Label::new(egui::RichText::new(q.prompt(lang)).strong().size(17.0))
                        .wrap(),
                );
                ui.add_space(6.0);
                self.answer_ui(ui, q, &pres, lang);
                ui.add_space(6.0);
                if let Some(e) = &self.error {
                    ui.colored_label(ui.visuals().warn_fg_color, e.as_str());
                }
                match &self.feedback {
                    None => {
                        let ready = self.draft_text(q).is_some();
                        if ui
                            .add_enabled(ready, egui::Button::new(t(lang, "quiz-check")))
                            .clicked()
                        {
                            self.check(q, &pres, lang);
                        }
                    }
                    Some(f) => {
                        let (text, color) = if f.correct {
                            (
                                t(lang, "quiz-correct"),
                                egui::Color32::from_rgb(0, 0x9E, 0x73),
                            )
                        } else {
                            (
                                t_args(lang, "quiz-wrong", &[("answer", f.expected.clone())]),
                                ui.visuals().error_fg_color,
                            )
                        };
                        ui.colored_label(color, egui::RichText::new(text).strong());
                        ui.label(t(lang, "quiz-why"));
                        ui.add(egui::Label::new(q.explanation(lang)).wrap());
                        ui.horizontal(|ui| {
                            if let Some(target) = &q.show_me {
                                let caption =
                                    format!("{}: {}", t(lang, "show-me"), target.describe());
                                if ui.button(caption).clicked() {
                                    shared.navigate(to_app_target(target));
                                }
                            }
                            if ui.button(t(lang, "quiz-next")).clicked() {
                                self.next();
                            }
                        });
                    }
                }
            });
    }

    fn save(&self) -> Option<String> {
        super::save_json(self)
    }

    fn load(&mut self, json: &str) {
        super::load_json(self, json);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_starts_with_the_guides_questions() {
        let qs = question_set(0).unwrap();
        assert_eq!(qs.len(), 6 + SET_SIZE);
        assert!(qs[..6].iter().all(|q| q.id.starts_with("faq-")));
        assert_eq!(qs[0].id, "faq-what-is-tp");
        assert_ne!(question_set(1).unwrap()[6..], qs[6..]);
    }
}
