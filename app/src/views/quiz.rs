//! Quiz: practice (one question at a time, instant feedback and the explanation after every
//! answer) and the certificate exam (a fresh sitting drawn from the exam's pool, no verdict until
//! it is submitted, then the score, the review, and the certificate shown and saved).
//!
//! The practice set starts with the guide's six questions, then the rest of the banks and
//! generated questions (answers computed by the engine), shuffled by a seed that "New questions"
//! draws afresh; choices are shuffled for every attempt. Enter checks an answer, then moves on;
//! in the exam it saves the answer and moves on, and submits on the last question.
//!
//! The exam result is saved to the learner's progress (under the store's file lock) before the
//! certificate is written, and the certificate is signed when an issuer key is configured
//! (`TPLAB_ISSUER_KEY`, or `issuer.key` in the data folder).

use crate::i18n::{t, t_args};
use crate::lab::Shared;
use crate::lab::View;
use crate::platform::LearnerStore;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use tplab_lessons::Lang;
use tplab_quiz::bank::{Bank, Question, QuestionKind};
use tplab_quiz::cert::{self, Certificate};
use tplab_quiz::exam::{attempt_seed, fresh_seed, Exam, Sitting, Submitted};
use tplab_quiz::grade::{self, Presentation};
use tplab_quiz::progress::{AnswerRecord, ExamRecord};

/// Practice questions after the guide's six.
const SET_SIZE: usize = 14;

/// What the learner has picked for the current question (display positions).
#[derive(Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct Draft {
    single: Option<usize>,
    multiple: BTreeSet<usize>,
    number: String,
    /// Display positions in the order clicked.
    order: Vec<usize>,
}

impl Draft {
    /// The typed form of the draft, for [`grade::parse_response`].
    fn text(&self, q: &Question) -> Option<String> {
        match q.kind {
            QuestionKind::Single { .. } => self.single.map(|p| letter(p).to_string()),
            QuestionKind::Multiple { .. } => (!self.multiple.is_empty())
                .then(|| self.multiple.iter().map(|&p| letter(p)).collect()),
            QuestionKind::Numeric { .. } => {
                (!self.number.trim().is_empty()).then(|| self.number.clone())
            }
            QuestionKind::Ordering { ref items } => (self.order.len() == items.len())
                .then(|| self.order.iter().map(|&p| letter(p)).collect()),
        }
    }
}

/// The verdict on the current practice question.
struct Feedback {
    correct: bool,
    expected: String,
    /// Why each wrongly chosen (or missed) choice fails, labelled as shown.
    choices: Vec<String>,
}

#[derive(Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum Mode {
    #[default]
    Practice,
    Exam,
}

/// A sitting in progress: enough to re-create it after a restart.
#[derive(Clone, Serialize, Deserialize)]
struct SittingState {
    seed: u64,
    index: usize,
    drafts: Vec<Draft>,
}

/// What submitting a sitting gave.
struct ExamOutcome {
    submitted: Submitted,
    /// After a failed sitting: the lessons to revisit (with their titles), shown instead of the
    /// answers.
    revisit: Vec<(tplab_quiz::exam::Revisit, Option<tplab_lessons::Localized>)>,
    /// `Ok(())` when saved to progress, else the error.
    saved: Result<(), String>,
    certificate: Option<Certificate>,
    /// Where the PNG was written, or why it could not be.
    written: Option<Result<String, String>>,
    texture: Option<egui::TextureHandle>,
}

/// The quiz view.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Quiz {
    seed: u64,
    index: usize,
    correct: usize,
    answered: usize,
    mode: Mode,
    /// The learner's name for the exam and the certificate.
    learner: String,
    sitting: Option<SittingState>,
    #[serde(skip)]
    questions: Option<Result<Vec<Question>, String>>,
    #[serde(skip)]
    draft: Draft,
    #[serde(skip)]
    feedback: Option<Feedback>,
    #[serde(skip)]
    error: Option<String>,
    #[serde(skip)]
    exam: Option<Result<Exam, String>>,
    /// The drawn sitting of `sitting.seed`.
    #[serde(skip)]
    drawn: Option<Sitting>,
    #[serde(skip)]
    outcome: Option<ExamOutcome>,
    /// The configured issuer's fingerprint (`Ok(None)`: unsigned), or why it cannot be used;
    /// the outer error: no data folder.
    #[serde(skip)]
    issuer_status: Option<Result<Result<Option<String>, String>, String>>,
    /// Submit was pressed with questions unanswered: the exam asks before it submits.
    #[serde(skip)]
    confirm_submit: bool,
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

fn load_exam() -> Result<Exam, String> {
    let bank = Bank::embedded().map_err(|d| d.to_string())?;
    Exam::embedded(&bank).map_err(|d| d.to_string())
}

/// Questions of a sitting still unanswered.
fn missing_now(total: usize, answered: usize) -> usize {
    total.saturating_sub(answered)
}

fn letter(p: usize) -> char {
    char::from(b'A' + (p % 26) as u8)
}

/// The answer widgets of `q` as shown by `pres`, editing `d`; disabled when `locked`. When
/// `reveal` (the practice answer has been checked), each right choice is marked as right.
fn answer_ui(
    ui: &mut egui::Ui,
    d: &mut Draft,
    q: &Question,
    pres: &Presentation,
    lang: Lang,
    (locked, reveal): (bool, bool),
) {
    let right_mark = t(lang, "quiz-right-choice");
    let lines: Vec<(char, String)> = pres
        .lines(q, lang)
        .into_iter()
        .enumerate()
        .map(|(p, (label, text))| {
            let right = pres.order.get(p).is_some_and(|&i| q.is_correct_choice(i));
            if reveal && right {
                (label, format!("{text}   ✔ {right_mark}"))
            } else {
                (label, text.to_string())
            }
        })
        .collect();
    // A checked choice question is read, not edited: the right choices in the right colour and
    // strong, a wrong pick in the error colour, the rest plain (greyed-out widgets made the
    // right answer hard to read on a projector).
    if locked && reveal {
        let picked: Vec<usize> = match &q.kind {
            QuestionKind::Single { .. } => d.single.into_iter().collect(),
            QuestionKind::Multiple { .. } => d.multiple.iter().copied().collect(),
            _ => Vec::new(),
        };
        if matches!(
            q.kind,
            QuestionKind::Single { .. } | QuestionKind::Multiple { .. }
        ) {
            for (p, (label, text)) in lines.iter().enumerate() {
                let right = pres.order.get(p).is_some_and(|&i| q.is_correct_choice(i));
                let mine = picked.contains(&p);
                let line = if mine && !right {
                    egui::RichText::new(format!(
                        "{label}) {text}   ✖ {}",
                        t(lang, "quiz-your-choice")
                    ))
                } else {
                    egui::RichText::new(format!("{label}) {text}"))
                };
                let line = if right {
                    line.strong().color(right_colour(ui))
                } else if mine {
                    line.color(ui.visuals().error_fg_color)
                } else {
                    line
                };
                ui.add(egui::Label::new(line).wrap());
            }
            return;
        }
    }
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
                let label = ui.label(t(lang, "quiz-number"));
                ui.text_edit_singleline(&mut d.number).labelled_by(label.id);
                if let Some(u) = unit {
                    ui.label(t_args(
                        lang,
                        "quiz-unit",
                        &[("unit", u.get(lang).to_string())],
                    ));
                }
            });
            // How numbers are read in this language (Turkish: 589.824 and 0,25).
            ui.small(grade::number_format_hint(lang));
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

fn prompt(ui: &mut egui::Ui, q: &Question, lang: Lang) {
    // Above the body text it asks about, and growing with it (presenter mode's larger type):
    // a fixed 17 pt read smaller than the choices on a projector.
    let size = (egui::TextStyle::Body.resolve(ui.style()).size * 1.2).max(17.0);
    ui.add(egui::Label::new(egui::RichText::new(q.prompt(lang)).strong().size(size)).wrap());
    ui.add_space(6.0);
}

impl Quiz {
    fn check(&mut self, q: &Question, pres: &Presentation, lang: Lang) {
        let Some(text) = self.draft.text(q) else {
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
                    choices: g.feedback,
                });
            }
            Err(e) => self.error = Some(e.message(lang)),
        }
    }

    fn next(&mut self) {
        self.index += 1;
        self.draft = Draft::default();
        self.feedback = None;
        self.error = None;
    }

    fn practice_ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared, lang: Lang, enter: bool) {
        let seed = self.seed;
        let questions = match self.questions.get_or_insert_with(|| question_set(seed)) {
            Ok(qs) => qs.clone(),
            Err(e) => {
                ui.colored_label(ui.visuals().error_fg_color, t(lang, "quiz-invalid"));
                ui.monospace(e.as_str());
                return;
            }
        };
        ui.horizontal_wrapped(|ui| {
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
                // A new attempt: new questions, new numbers, new choice order.
                self.seed = fresh_seed();
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
        let pres = Presentation::new(q, attempt_seed(self.seed, self.index));
        ui.horizontal_wrapped(|ui| {
            ui.label(t_args(
                lang,
                "quiz-question-position",
                &[
                    ("n", (self.index + 1).to_string()),
                    ("total", questions.len().to_string()),
                ],
            ));
            ui.label(t(lang, "quiz-enter-hint")); // not weak: 2.7-2.9:1 on a projector
        });
        egui::ScrollArea::vertical()
            .id_salt("quiz-body")
            .auto_shrink([false, false])
            .show(ui, |ui| {
                prompt(ui, q, lang);
                let locked = self.feedback.is_some();
                answer_ui(ui, &mut self.draft, q, &pres, lang, (locked, locked));
                ui.add_space(6.0);
                if let Some(e) = &self.error {
                    ui.colored_label(ui.visuals().warn_fg_color, e.as_str());
                }
                match &self.feedback {
                    None => {
                        let ready = self.draft.text(q).is_some();
                        let clicked = ui
                            .add_enabled(ready, egui::Button::new(t(lang, "quiz-check")))
                            .clicked();
                        if clicked || (enter && ready) {
                            self.check(q, &pres, lang);
                        }
                    }
                    Some(f) => {
                        let (text, color) = if f.correct {
                            (t(lang, "quiz-correct"), right_colour(ui))
                        } else {
                            (
                                t_args(lang, "quiz-wrong", &[("answer", f.expected.clone())]),
                                ui.visuals().error_fg_color,
                            )
                        };
                        ui.colored_label(color, egui::RichText::new(text).strong());
                        for why in &f.choices {
                            ui.add(egui::Label::new(why.as_str()).wrap());
                        }
                        ui.label(t(lang, "quiz-why"));
                        ui.add(egui::Label::new(q.explanation(lang)).wrap());
                        let mut go_next = enter;
                        ui.horizontal_wrapped(|ui| {
                            // The lesson the question's bank entry cites.
                            if let Some(slug) = &q.lesson {
                                crate::widgets::links::lesson_link(ui, shared, slug);
                            }
                            if let Some(target) = &q.show_me {
                                let caption = format!(
                                    "{}: {}",
                                    t(lang, "show-me"),
                                    crate::widgets::links::target_words(lang, target)
                                );
                                if ui.button(caption).clicked() {
                                    shared.navigate(target.clone());
                                }
                            }
                            if ui.button(t(lang, "quiz-next")).clicked() {
                                go_next = true;
                            }
                        });
                        if go_next {
                            self.next();
                        }
                    }
                }
            });
    }

    /// The exam: the start screen, the sitting, the result. `class`: the sitting is a live
    /// class's, whose server grades it (its answers go there on submit).
    fn exam_ui(
        &mut self,
        ui: &mut egui::Ui,
        lang: Lang,
        enter: bool,
        shared_learner: &mut String,
        class: Option<&mut crate::lab::class::ClassClient>,
    ) {
        let exam = match self.exam.get_or_insert_with(load_exam) {
            Ok(e) => e.clone(),
            Err(e) => {
                ui.colored_label(ui.visuals().error_fg_color, t(lang, "quiz-invalid"));
                ui.monospace(e.as_str());
                return;
            }
        };
        if self.outcome.is_some() {
            self.result_ui(ui, &exam, lang);
            return;
        }
        let Some(state) = self.sitting.clone() else {
            self.start_ui(ui, &exam, lang, enter, shared_learner);
            return;
        };
        if self.drawn.as_ref().map(|s| s.seed) != Some(state.seed) {
            self.drawn = Some(exam.sitting(state.seed));
        }
        let Some(sitting) = self.drawn.clone() else {
            return;
        };
        let total = sitting.questions.len();
        let mut state = state;
        state.drafts.resize(total, Draft::default());
        state.index = state.index.min(total.saturating_sub(1));
        let i = state.index;
        let (q, pres) = (&sitting.questions[i], &sitting.presentations[i]);
        let answered = state
            .drafts
            .iter()
            .zip(&sitting.questions)
            .filter(|(d, q)| d.text(q).is_some())
            .count();
        ui.heading(t(lang, "exam-title"));
        ui.horizontal_wrapped(|ui| {
            ui.label(t_args(
                lang,
                "exam-position",
                &[
                    ("n", (i + 1).to_string()),
                    ("total", total.to_string()),
                    ("answered", answered.to_string()),
                ],
            ));
            ui.label(t(lang, "exam-enter-hint"));
        });
        ui.add(
            egui::ProgressBar::new(answered as f32 / total.max(1) as f32)
                .desired_height(6.0)
                .desired_width(ui.available_width().min(640.0)),
        );
        ui.add_space(4.0);
        let mut submit = false;
        egui::ScrollArea::vertical()
            .id_salt("exam-body")
            .auto_shrink([false, false])
            .show(ui, |ui| {
                prompt(ui, q, lang);
                answer_ui(ui, &mut state.drafts[i], q, pres, lang, (false, false));
                ui.add_space(8.0);
                let last = i + 1 == total;
                ui.horizontal_wrapped(|ui| {
                    if ui
                        .add_enabled(i > 0, egui::Button::new(t(lang, "exam-previous")))
                        .clicked()
                    {
                        state.index = i - 1;
                    }
                    if !last && (ui.button(t(lang, "exam-next")).clicked() || enter) {
                        state.index = i + 1;
                    }
                    let missing = total - answered;
                    let submit_button =
                        egui::Button::new(egui::RichText::new(t(lang, "exam-submit")).strong());
                    if ui.add(submit_button).clicked() || (last && enter && !self.confirm_submit) {
                        // Unanswered questions count as wrong: ask first.
                        if missing > 0 {
                            self.confirm_submit = true;
                        } else {
                            submit = true;
                        }
                    }
                    if missing > 0 && !self.confirm_submit {
                        ui.weak(t_args(
                            lang,
                            "exam-unanswered",
                            &[("count", missing.to_string())],
                        ));
                    }
                });
                if self.confirm_submit && missing_now(total, answered) > 0 {
                    ui.add_space(6.0);
                    egui::Frame::group(ui.style()).show(ui, |ui| {
                        ui.colored_label(
                            ui.visuals().warn_fg_color,
                            egui::RichText::new(crate::i18n::t_count(
                                lang,
                                "exam-confirm",
                                ("count", (total - answered) as u64),
                                &[],
                            ))
                            .strong(),
                        );
                        ui.horizontal_wrapped(|ui| {
                            if ui.button(t(lang, "exam-confirm-submit")).clicked() {
                                submit = true;
                                self.confirm_submit = false;
                            }
                            if ui.button(t(lang, "exam-confirm-back")).clicked() {
                                self.confirm_submit = false;
                            }
                        });
                    });
                } else {
                    self.confirm_submit = false;
                }
            });
        if submit {
            match class {
                Some(client) => {
                    // As typed: the class server parses and grades them.
                    let answers = state
                        .drafts
                        .iter()
                        .zip(&sitting.questions)
                        .map(|(d, q)| d.text(q))
                        .collect();
                    client.send(tplab_class::protocol::ClientMsg::SubmitExam {
                        seed: state.seed,
                        lang: lang.code().to_string(),
                        answers,
                    });
                }
                None => self.submit(&exam, sitting, &state, lang, ui.ctx()),
            }
            self.sitting = None;
        } else {
            self.sitting = Some(state);
        }
    }

    fn start_ui(
        &mut self,
        ui: &mut egui::Ui,
        exam: &Exam,
        lang: Lang,
        enter: bool,
        shared_learner: &mut String,
    ) {
        ui.heading(t(lang, "exam-title"));
        ui.add(
            egui::Label::new(t_args(
                lang,
                "exam-intro",
                &[
                    ("length", exam.length.to_string()),
                    ("pool", exam.pool_size().to_string()),
                    ("pass", exam.pass_percent.to_string()),
                ],
            ))
            .wrap(),
        );
        ui.add_space(8.0);
        let label = ui.label(t(lang, "exam-name"));
        // One name for the whole app: the design lab saves its challenges under it too.
        if self.learner.trim().is_empty() && !shared_learner.trim().is_empty() {
            self.learner = shared_learner.clone();
        }
        let edit = ui
            .add(
                egui::TextEdit::singleline(&mut self.learner)
                    .desired_width(ui.available_width().min(420.0)),
            )
            .labelled_by(label.id);
        if edit.changed() {
            *shared_learner = self.learner.clone();
        }
        let name = self.learner.trim().to_string();
        let name_ok = cert::check_name(&name);
        if let (false, Err(e)) = (name.is_empty(), &name_ok) {
            ui.colored_label(ui.visuals().warn_fg_color, e.as_str());
        }
        // Read once per start screen, not every frame.
        let status = self.issuer_status.get_or_insert_with(|| {
            // The data folder on the desktop, the browser's local storage on the web.
            let store = LearnerStore::open()?;
            Ok(store.issuer().map(|k| k.map(|k| k.public().fingerprint())))
        });
        match status {
            Ok(Ok(Some(fingerprint))) => {
                ui.label(t_args(
                    lang,
                    "exam-signed-by",
                    &[("fingerprint", fingerprint.clone())],
                ));
            }
            Ok(Ok(None)) => {
                ui.add(egui::Label::new(t(lang, "exam-unsigned")).wrap());
            }
            Ok(Err(e)) => {
                ui.colored_label(
                    ui.visuals().warn_fg_color,
                    t_args(lang, "exam-issuer-error", &[("error", e.clone())]),
                );
            }
            Err(e) => {
                ui.colored_label(
                    ui.visuals().error_fg_color,
                    t_args(lang, "exam-store-error", &[("error", e.clone())]),
                );
                return;
            }
        }
        ui.add_space(8.0);
        let can_start = name_ok.is_ok();
        let clicked = ui
            .add_enabled(can_start, egui::Button::new(t(lang, "exam-start")))
            .clicked();
        if clicked || (enter && can_start) {
            self.sitting = Some(SittingState {
                seed: fresh_seed(),
                index: 0,
                drafts: Vec::new(),
            });
            self.drawn = None;
        }
    }

    /// Grades the sitting, saves the result to progress, then writes the certificate.
    fn submit(
        &mut self,
        exam: &Exam,
        mut sitting: Sitting,
        state: &SittingState,
        lang: Lang,
        ctx: &egui::Context,
    ) {
        for (i, d) in state.drafts.iter().enumerate() {
            let (q, p) = (&sitting.questions[i], &sitting.presentations[i]);
            if let Some(r) = d
                .text(q)
                .and_then(|text| grade::parse_response(q, p, &text, lang).ok())
            {
                sitting.answer(i, r);
            }
        }
        let submitted = sitting.submit(lang);
        let name = self.learner.trim().to_string();
        let at = tplab_quiz::unix_now_s();
        let score = submitted.score;
        let revisit = if score.passed {
            Vec::new()
        } else {
            let catalog = tplab_lessons::Catalog::embedded().ok();
            submitted
                .revisit(&sitting.questions)
                .into_iter()
                .map(|t| {
                    let title = t
                        .lesson
                        .as_deref()
                        .and_then(|slug| catalog.as_ref()?.get(slug))
                        .map(|l| l.title.clone());
                    (t, title)
                })
                .collect()
        };
        let mut outcome = ExamOutcome {
            revisit,
            submitted,
            saved: Ok(()),
            certificate: None,
            written: None,
            texture: None,
        };
        let store = match LearnerStore::open() {
            Ok(s) => s,
            Err(e) => {
                outcome.saved = Err(e.to_string());
                self.outcome = Some(outcome);
                return;
            }
        };
        let issuer = store.issuer().ok().flatten();
        if score.passed {
            match Certificate::issue(
                &name,
                &tplab_quiz::civil_date(at),
                score.whole_percent(),
                &exam.version,
                sitting.seed,
                lang,
                issuer.as_ref(),
            ) {
                Ok(c) => outcome.certificate = Some(c),
                Err(e) => outcome.written = Some(Err(e.to_string())),
            }
        }
        let record = ExamRecord {
            version: exam.version.clone(),
            correct: score.correct,
            total: score.total,
            score_percent: score.score_percent,
            passed: score.passed,
            at_unix_s: at,
            certificate_id: outcome.certificate.as_ref().map(|c| c.id.clone()),
            seed: Some(sitting.seed),
            signed_by: outcome
                .certificate
                .as_ref()
                .and_then(|c| c.issuer())
                .map(|k| k.fingerprint()),
        };
        let review = &outcome.submitted.review;
        let saved = store.update(&name, |p| {
            p.lang = Some(lang);
            for r in review {
                p.answers.push(AnswerRecord {
                    question_id: r.question_id.clone(),
                    correct: r.correct,
                    lang,
                    exam: true,
                    at_unix_s: at,
                });
            }
            p.exams.push(record);
        });
        if let Err(e) = saved {
            // Not saved: no certificate, so nothing claims a pass the progress does not hold.
            outcome.saved = Err(e.to_string());
            outcome.certificate = None;
            self.outcome = Some(outcome);
            return;
        }
        if let Some(c) = &outcome.certificate {
            // A file in the certificates folder, or a download in the browser.
            outcome.written = Some(store.save_certificate(c, outcome.submitted.practical()));
            if let Ok(px) = c.render_rgb() {
                let image =
                    egui::ColorImage::from_rgb([cert::WIDTH as usize, cert::HEIGHT as usize], &px);
                outcome.texture =
                    Some(ctx.load_texture("exam-certificate", image, Default::default()));
            }
        }
        self.outcome = Some(outcome);
    }

    fn result_ui(&mut self, ui: &mut egui::Ui, exam: &Exam, lang: Lang) {
        let Some(o) = &self.outcome else {
            return;
        };
        let s = o.submitted.score;
        let mut retake = false;
        egui::ScrollArea::vertical()
            .id_salt("exam-result")
            .auto_shrink([false, false])
            .show(ui, |ui| {
                ui.heading(t(lang, "exam-title"));
                let args = [
                    ("correct", s.correct.to_string()),
                    ("total", s.total.to_string()),
                    ("percent", crate::i18n::num(lang, s.score_percent, 0)),
                    ("pass", exam.pass_percent.to_string()),
                ];
                if s.passed {
                    ui.colored_label(
                        right_colour(ui),
                        egui::RichText::new(t_args(lang, "exam-passed", &args))
                            .strong()
                            .size(18.0),
                    );
                } else {
                    ui.colored_label(
                        ui.visuals().error_fg_color,
                        egui::RichText::new(t_args(lang, "exam-failed", &args))
                            .strong()
                            .size(18.0),
                    );
                }
                match &o.saved {
                    Ok(()) => {
                        let seed = o
                            .certificate
                            .as_ref()
                            .map(|c| c.sitting_seed)
                            .or_else(|| self.drawn.as_ref().map(|d| d.seed))
                            .unwrap_or_default();
                        ui.label(t_args(lang, "exam-saved", &[("seed", seed.to_string())]));
                    }
                    Err(e) => {
                        ui.colored_label(
                            ui.visuals().error_fg_color,
                            t_args(lang, "exam-save-failed", &[("error", e.clone())]),
                        );
                    }
                }
                match &o.written {
                    Some(Ok(png)) => {
                        ui.add(
                            egui::Label::new(t_args(
                                lang,
                                "exam-cert-saved",
                                &[("png", png.clone())],
                            ))
                            .wrap(),
                        );
                    }
                    Some(Err(e)) => {
                        ui.colored_label(
                            ui.visuals().error_fg_color,
                            t_args(lang, "exam-cert-failed", &[("error", e.clone())]),
                        );
                    }
                    None => {}
                }
                if ui.button(t(lang, "exam-retake")).clicked() {
                    retake = true;
                }
                if let Some(c) = &o.certificate {
                    match c.issuer() {
                        Some(k) => ui.label(t_args(
                            lang,
                            "exam-cert-signed",
                            &[("fingerprint", k.fingerprint())],
                        )),
                        None => ui.label(t(lang, "exam-cert-unsigned")),
                    };
                    ui.add(
                        egui::Label::new(egui::RichText::new(t(lang, "exam-cert-proves")).weak())
                            .wrap(),
                    );
                }
                if let Some(tex) = &o.texture {
                    let w = ui.available_width().min(560.0);
                    let size = egui::vec2(w, w * cert::HEIGHT as f32 / cert::WIDTH as f32);
                    ui.add(egui::Image::new((tex.id(), size)).alt_text("certificate"));
                }
                ui.separator();
                if !s.passed {
                    // A failed sitting names what to study, not the answers (a script that
                    // fails on purpose must not collect them); the practice quiz explains all.
                    ui.heading(t(lang, "exam-revisit"));
                    ui.add(egui::Label::new(t(lang, "exam-revisit-why")).wrap());
                    ui.add_space(4.0);
                    for (topic, title) in &o.revisit {
                        let counts = [
                            ("missed", topic.missed.to_string()),
                            ("asked", topic.asked.to_string()),
                        ];
                        let line = match title {
                            Some(title) => {
                                let mut args = counts.to_vec();
                                args.push(("title", title.get(lang).to_string()));
                                t_args(lang, "exam-revisit-lesson", &args)
                            }
                            None => t_args(lang, "exam-revisit-other", &counts),
                        };
                        ui.add(egui::Label::new(format!("• {line}")).wrap());
                    }
                } else if let Some(sitting) = &self.drawn {
                    ui.heading(t(lang, "exam-review"));
                    for (i, (q, r)) in sitting
                        .questions
                        .iter()
                        .zip(&o.submitted.review)
                        .enumerate()
                    {
                        ui.add_space(4.0);
                        ui.add(
                            egui::Label::new(
                                egui::RichText::new(format!("{}. {}", i + 1, q.prompt(lang)))
                                    .strong(),
                            )
                            .wrap(),
                        );
                        let (text, colour) = if r.correct {
                            (t(lang, "exam-right"), right_colour(ui))
                        } else if r.answered {
                            (
                                t_args(lang, "exam-wrong", &[("answer", r.expected.clone())]),
                                ui.visuals().error_fg_color,
                            )
                        } else {
                            (
                                t_args(
                                    lang,
                                    "exam-not-answered",
                                    &[("answer", r.expected.clone())],
                                ),
                                ui.visuals().error_fg_color,
                            )
                        };
                        ui.colored_label(colour, text);
                        for why in &r.feedback {
                            ui.add(egui::Label::new(why.as_str()).wrap());
                        }
                        ui.add(
                            egui::Label::new(egui::RichText::new(q.explanation(lang)).weak())
                                .wrap(),
                        );
                    }
                }
            });
        if retake {
            self.issuer_status = None;
            self.outcome = None;
            self.drawn = None;
            self.sitting = None;
        }
    }
}

/// Bluish green (Okabe–Ito), readable on light and dark backgrounds.
fn right_colour(ui: &egui::Ui) -> egui::Color32 {
    if ui.visuals().dark_mode {
        egui::Color32::from_rgb(0x3C, 0xC8, 0x9A)
    } else {
        egui::Color32::from_rgb(0, 0x80, 0x5E)
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
        // Enter is taken before any widget sees it, so a focused button is not pressed twice.
        let enter = ui.input_mut(|i| i.consume_key(egui::Modifiers::NONE, egui::Key::Enter));
        // The language switch is the side bar's (the top row in presenter mode), one for the app.
        let lang = crate::i18n::current_lang(ui.ctx());
        if shared.presenter {
            // A question read from the back of a hall: its text, choices and buttons larger
            // than the rest of the app's presenter type.
            for (style, font) in ui.style_mut().text_styles.iter_mut() {
                if matches!(
                    style,
                    egui::TextStyle::Body | egui::TextStyle::Button | egui::TextStyle::Heading
                ) {
                    font.size *= 1.3;
                }
            }
        }
        ui.horizontal(|ui| {
            ui.selectable_value(
                &mut self.mode,
                Mode::Practice,
                t(lang, "quiz-mode-practice"),
            );
            ui.selectable_value(&mut self.mode, Mode::Exam, t(lang, "quiz-mode-exam"));
        });
        ui.separator();
        match self.mode {
            Mode::Practice => self.practice_ui(ui, shared, lang, enter),
            Mode::Exam => {
                // The exam in a live class: the sitting the class server drew is graded there.
                let class_seed = shared
                    .class
                    .as_ref()
                    .filter(|c| !c.is_teacher())
                    .and_then(|c| c.state.exam_sitting);
                let in_class =
                    class_seed.is_some() && self.sitting.as_ref().map(|s| s.seed) == class_seed;
                let class = if in_class {
                    shared.class.as_mut()
                } else {
                    None
                };
                self.exam_ui(ui, lang, enter, &mut shared.learner, class)
            }
        }
    }

    fn save(&self) -> Option<String> {
        crate::lab::save_json(self)
    }

    fn load(&mut self, json: &str) {
        crate::lab::load_json(self, json);
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
