//! The teacher's console of a live class: the join address and code for the room, a question
//! from the quiz posed to every device, how many have answered (never what, until the
//! reveal), the distribution, "discuss and vote again" with the second distribution beside
//! the first, the answer; a design-lab challenge with the room's plans grouped by the engine's
//! verdict; the class's CSV export.
//!
//! Everything shown comes from [`crate::lab::class::ClassState`], which the shell keeps up to
//! date from the server; the view only sends the teacher's actions.

use crate::i18n::{t, t_args};
use crate::lab::class::{spec_from_quiz, ClassClient, QuestionState, Status};
use crate::lab::{Shared, View};
use crate::widgets::class as cw;
use serde::{Deserialize, Serialize};
use tplab_class::protocol::{AnswerView, ClientMsg, Phase, PlanGroup, QuestionBody, Round};
use tplab_lessons::Lang;

/// A walkthrough step (from 0) and the prediction it asks.
type WalkQuestion = (usize, crate::widgets::predict::Prediction);

/// The Class view's own state: what the teacher picked, and the export under way.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Class {
    /// The quiz question picked to pose (its id).
    picked: Option<String>,
    /// The design-lab stage to set (1 to 8).
    stage: u32,
    #[serde(skip)]
    bank: Option<Vec<tplab_quiz::bank::Question>>,
    #[serde(skip)]
    export: Option<crate::platform::Fetch>,
    /// Where the last export went, or why it did not.
    #[serde(skip)]
    exported: Option<Result<String, String>>,
    /// The walkthrough's predictions of the scenario (its step, from 0, and the question),
    /// for the scenario's generation and the language they were worded in.
    #[serde(skip)]
    walk: Option<(u64, Lang, Vec<WalkQuestion>)>,
    /// The walkthrough's predictions in the course's other languages, by step (from 0).
    #[serde(skip)]
    walk_translations: std::collections::HashMap<usize, Vec<tplab_class::protocol::Translation>>,
    /// The walkthrough prediction picked to pose (its step, from 0).
    walk_picked: Option<usize>,
    /// The walkthrough's step the picker last followed (from 0).
    #[serde(skip)]
    walk_followed: Option<usize>,
    /// Where "Send everyone to this step" sends the room: the scenario as it is now.
    #[serde(skip)]
    scenario: Option<tplab_engine::config::Config>,
    /// The walkthrough's step on the projector (from 0), when it plays Megatron's split.
    #[serde(skip)]
    walk_at: Option<usize>,
    /// The step (from 1) the room was last sent to.
    #[serde(skip)]
    pushed: Option<usize>,
    /// Seconds to vote in each round (0: no timer).
    timer_s: u32,
    /// The room's refusals in the teacher's language (the engine's English rule and the
    /// language it was worded in).
    #[serde(skip)]
    refusals: std::collections::HashMap<(String, Lang), String>,
    /// The plan the teacher asked to put on the projector (the challenge's stage), this frame.
    #[serde(skip)]
    to_show: Option<(u32, tplab_class::protocol::PlanEntry)>,
    /// The last plan put on the projector, or why it could not be.
    #[serde(skip)]
    shown: Option<Result<(), String>>,
    /// "End the class" was pressed once: the second press (confirm) ends it.
    #[serde(skip)]
    confirm_end: bool,
}

impl View for Class {
    fn id(&self) -> &'static str {
        "class"
    }

    fn title(&self) -> &'static str {
        "Class"
    }

    fn logic(&mut self, _ctx: &egui::Context, shared: &mut Shared) {
        let Some(fetch) = &mut self.export else {
            return;
        };
        let Some(result) = fetch.poll() else {
            return;
        };
        self.export = None;
        let client = shared.class.as_ref();
        let code = client
            .and_then(|c| c.state.code.clone())
            .unwrap_or_else(|| "class".to_string());
        let dir = client.map_or_else(|| std::path::PathBuf::from("."), |c| c.export_dir.clone());
        self.exported = Some(result.and_then(|csv| {
            crate::platform::save_file(&dir, &format!("tplab-class-{code}.csv"), csv.as_bytes())
                .map_err(|e| format!("{e:#}"))
        }));
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = crate::widgets::lang(ui);
        if !shared.class.as_ref().is_some_and(|c| c.is_teacher()) {
            crate::widgets::links::view_heading(ui, t(lang, "class-title"));
            let ink = ui.visuals().text_color();
            crate::widgets::code_label(ui, &t(lang, "class-how"), ink);
            ui.add_space(8.0);
            ui.code("tplab class --console\ntplab --join http://<address>:8036/#teacher=<secret>");
            return;
        }
        if self.stage == 0 {
            self.stage = 1;
        }
        self.refresh_walk(lang, shared);
        self.follow_walk(shared);
        let Some(client) = shared.class.as_mut().filter(|c| c.is_teacher()) else {
            return;
        };
        crate::widgets::scrolling_page(ui, "class-console", |ui| {
            header(ui, lang, client);
            self.end_ui(ui, lang, client);
            ui.separator();
            crate::widgets::columns(ui, 2, |cols| {
                self.question_ui(&mut cols[0], lang, client);
                cols[0].add_space(8.0);
                exam_ui(&mut cols[0], lang, client);
                self.challenge_ui(&mut cols[1], lang, client);
            });
        });
        if let Some((stage, plan)) = self.to_show.take() {
            self.shown = Some(show_plan(shared, stage, &plan));
        }
    }
}

/// The room: join address, code, who is here, the connection, the export.
fn header(ui: &mut egui::Ui, lang: Lang, client: &ClassClient) {
    let size = ui.style().text_styles[&egui::TextStyle::Body].size;
    ui.horizontal_wrapped(|ui| {
        ui.heading(t(lang, "class-title"));
        let (words, bad) = cw::status_words(lang, &client.state.status);
        let color = if bad {
            ui.visuals().warn_fg_color
        } else {
            crate::widgets::ok_ink(ui)
        };
        ui.label(egui::RichText::new(words).color(color));
    });
    if let Some(code) = &client.state.code {
        // The address, the code and the QR code side by side: a room joins from the projector.
        let url = client.link().join_url(code);
        ui.horizontal_top(|ui| {
            cw::qr_code(ui, &url, 9.0 * size);
            ui.vertical(|ui| {
                ui.label(t(lang, "class-join-at"));
                ui.label(egui::RichText::new(&url).monospace().size(1.6 * size));
                ui.label(
                    egui::RichText::new(t_args(lang, "class-code", &[("code", code.clone())]))
                        .strong()
                        .size(2.2 * size),
                );
            });
        });
        if loopback_url(&url) {
            // The room would scan a code no phone can open: say so where the teacher looks.
            let ink = ui.visuals().warn_fg_color;
            crate::widgets::code_label(ui, &t(lang, "class-loopback"), ink);
        }
    }
    ui.label(t_args(
        lang,
        "class-roster",
        &[
            ("joined", client.state.joined.to_string()),
            ("connected", client.state.connected.to_string()),
        ],
    ));
    if let Some((code, message)) = &client.state.error {
        ui.label(
            egui::RichText::new(error_words(lang, code.name(), message))
                .color(ui.visuals().warn_fg_color),
        );
    }
}

/// The certificate exam: open it for the room or close it, whether passes earn a signed
/// certificate, and how many sat, submitted and passed.
fn exam_ui(ui: &mut egui::Ui, lang: Lang, client: &mut ClassClient) {
    ui.heading(t(lang, "class-exam"));
    let info = client.state.exam.clone();
    let open = info.as_ref().is_some_and(|e| e.open);
    let joined = client.state.status == Status::Joined;
    ui.horizontal_wrapped(|ui| {
        let (id, next) = if open {
            ("class-exam-close", false)
        } else {
            ("class-exam-open", true)
        };
        let b = ui.add_enabled(joined, egui::Button::new(t(lang, id)));
        crate::platform::mark("class-exam-toggle", b.rect);
        if b.clicked() {
            client.send(ClientMsg::OpenExam { open: next });
        }
        if let Some([started, submitted, passed]) = client.state.exam_room {
            ui.label(t_args(
                lang,
                "class-exam-counts",
                &[
                    ("started", started.to_string()),
                    ("submitted", submitted.to_string()),
                    ("passed", passed.to_string()),
                ],
            ));
        }
    });
    if let Some(e) = info {
        ui.add(
            egui::Label::new(t(
                lang,
                if e.certificates {
                    "class-exam-signed"
                } else {
                    "class-exam-unsigned"
                },
            ))
            .wrap(),
        );
    }
}

/// The words for an error code, or the server's English message.
fn error_words(lang: Lang, code: &str, message: &str) -> String {
    let id = format!("class-error-{}", code.replace('_', "-"));
    match t(lang, &id) {
        s if s == id => message.to_string(),
        s => s,
    }
}

impl Class {
    /// The walkthrough's predictions of the scenario as it is now (recomputed when the
    /// scenario or the language changes).
    fn refresh_walk(&mut self, lang: Lang, shared: &Shared) {
        let generation = shared.scenario.generation();
        if self
            .walk
            .as_ref()
            .is_some_and(|(g, l, _)| *g == generation && *l == lang)
        {
            return;
        }
        let predictions = |l: Lang| -> Vec<WalkQuestion> {
            match shared.scenario.derived() {
                Ok(d) => crate::lab::walk::walk_steps(&d.trace)
                    .iter()
                    .enumerate()
                    .filter_map(|(i, step)| {
                        crate::widgets::predict::prediction(l, &d.trace, step).map(|p| (i, p))
                    })
                    .collect(),
                Err(_) => Vec::new(),
            }
        };
        let questions = predictions(lang);
        // The same predictions in the other languages (the same steps, the same choices in
        // the same order): each phone shows its own.
        self.walk_translations.clear();
        for other in Lang::ALL.into_iter().filter(|&l| l != lang) {
            for (i, p) in predictions(other) {
                self.walk_translations.entry(i).or_default().push(
                    tplab_class::protocol::Translation {
                        lang: other.code().to_string(),
                        prompt: p.question,
                        choices: p.options,
                        unit: None,
                    },
                );
            }
        }
        self.walk = Some((generation, lang, questions));
    }

    /// The picker follows the walkthrough: when the teacher steps it, the next prediction from
    /// the step on screen is picked (on Megatron's split, which the predictions are of).
    fn follow_walk(&mut self, shared: &Shared) {
        self.scenario = Some(shared.scenario.config().clone());
        self.walk_at = shared
            .walk_at
            .filter(|_| shared.walk_choice() == crate::lab::WalkChoice::Megatron);
        if shared.walk_choice() != crate::lab::WalkChoice::Megatron {
            return;
        }
        let Some(at) = shared.walk_at else {
            return;
        };
        if self.walk_followed == Some(at) {
            return;
        }
        self.walk_followed = Some(at);
        if let Some((_, _, questions)) = &self.walk {
            if let Some((i, _)) = questions.iter().find(|(i, _)| *i >= at) {
                self.walk_picked = Some(*i);
            }
        }
    }

    /// The walkthrough's predictions of the scenario, any of which the room can vote on.
    fn walk_ui(&mut self, ui: &mut egui::Ui, lang: Lang, client: &mut ClassClient) {
        let Some((_, _, questions)) = &self.walk else {
            return;
        };
        if questions.is_empty() {
            return;
        }
        let picked = self
            .walk_picked
            .and_then(|s| questions.iter().find(|(i, _)| *i == s))
            .or_else(|| questions.first());
        let words = |(i, p): &WalkQuestion| {
            t_args(
                lang,
                "class-walk-item",
                &[
                    ("step", (i + 1).to_string()),
                    ("question", short(&p.question, 80)),
                ],
            )
        };
        let mut choice = picked.map(|(i, _)| *i);
        let label = ui.label(t(lang, "class-pick-walk"));
        egui::ComboBox::from_id_salt("class-pick-walk")
            .width(ui.available_width())
            .selected_text(picked.map(words).unwrap_or_default())
            .show_ui(ui, |ui| {
                for q in questions {
                    ui.selectable_value(&mut choice, Some(q.0), words(q));
                }
            })
            .response
            .labelled_by(label.id);
        self.walk_picked = choice;
        let spec = choice
            .and_then(|s| questions.iter().find(|(i, _)| *i == s))
            .and_then(|(i, p)| {
                let spec = tplab_class::protocol::QuestionSpec {
                    prompt: p.question.clone(),
                    source: Some(format!("walkthrough:{}", i + 1)),
                    kind: tplab_class::protocol::QuestionKind::Choice {
                        choices: p.options.clone(),
                        answer: u32::try_from(p.right).ok()?,
                    },
                    timer_s: self.timer(),
                    translations: self.walk_translations.get(i).cloned().unwrap_or_default(),
                };
                spec.check().ok().map(|()| spec)
            });
        let joined = client.state.status == Status::Joined;
        ui.horizontal_wrapped(|ui| {
            if ui
                .add_enabled(
                    joined && spec.is_some(),
                    egui::Button::new(t(lang, "class-pose-walk")),
                )
                .on_hover_text(t(lang, "class-pose-hint"))
                .clicked()
            {
                if let Some(question) = spec {
                    client.send(ClientMsg::Pose { question });
                }
            }
            // Every device to the walkthrough's step on the projector (or, before the
            // walkthrough was opened, the picked prediction's), on the teacher's scenario.
            let step = self.walk_at.or(choice).map(|s| s + 1);
            let push = step.zip(self.scenario.as_ref()).map(|(step, config)| {
                let target = crate::lab::class::PushTarget::walk(config, step);
                let title = t_args(lang, "class-push-step-title", &[("step", step.to_string())]);
                (step, target.to_target(), title)
            });
            let words = match (self.walk_at, step) {
                (Some(_), Some(step)) => {
                    t_args(lang, "class-push-current", &[("step", step.to_string())])
                }
                _ => t(lang, "class-push-step"),
            };
            if ui
                .add_enabled(joined && push.is_some(), egui::Button::new(words))
                .on_hover_text(t(lang, "class-push-step-hint"))
                .clicked()
            {
                if let Some((step, target, title)) = push {
                    client.send(ClientMsg::Push {
                        target,
                        title: Some(title),
                    });
                    self.pushed = Some(step);
                }
            }
            if let Some(step) = self.pushed {
                ui.label(t_args(
                    lang,
                    "class-pushed-sent",
                    &[("step", step.to_string())],
                ));
            }
        });
    }

    /// The timer the next round gets, if any.
    fn timer(&self) -> Option<u32> {
        (self.timer_s > 0).then_some(self.timer_s)
    }

    /// The timer's choices: none, or 30 s to 2 minutes.
    fn timer_ui(&mut self, ui: &mut egui::Ui, lang: Lang) {
        ui.horizontal_wrapped(|ui| {
            ui.label(t(lang, "class-timer"))
                .on_hover_text(t(lang, "class-timer-hint"));
            for s in [0, 30, 60, 90, 120] {
                let words = if s == 0 {
                    t(lang, "class-timer-off")
                } else {
                    t_args(lang, "class-timer-seconds", &[("s", s.to_string())])
                };
                if ui
                    .selectable_label(self.timer_s == s, words)
                    .on_hover_text(t(lang, "class-timer-hint"))
                    .clicked()
                {
                    self.timer_s = s;
                }
            }
        });
    }

    /// Ends the class after a second, explicit press (the join code dies with it).
    fn end_ui(&mut self, ui: &mut egui::Ui, lang: Lang, client: &mut ClassClient) {
        if client.state.status != Status::Joined {
            return;
        }
        ui.horizontal_wrapped(|ui| {
            if !self.confirm_end {
                self.confirm_end = ui.button(t(lang, "class-end")).clicked();
                return;
            }
            ui.label(
                egui::RichText::new(t(lang, "class-end-sure")).color(ui.visuals().warn_fg_color),
            );
            if ui.button(t(lang, "class-end-yes")).clicked() {
                client.send(ClientMsg::EndClass);
                self.confirm_end = false;
            }
            if ui.button(t(lang, "class-end-no")).clicked() {
                self.confirm_end = false;
            }
        });
    }

    fn question_ui(&mut self, ui: &mut egui::Ui, lang: Lang, client: &mut ClassClient) {
        ui.heading(t(lang, "class-question"));
        let joined = client.state.status == Status::Joined;
        self.timer_ui(ui, lang);
        let timer = self.timer();
        // The bank, once: single-choice and numeric questions (the kinds a room votes on).
        let bank = self.bank.get_or_insert_with(|| {
            tplab_quiz::bank::Bank::embedded()
                .map(|b| {
                    b.questions
                        .into_iter()
                        .filter(|q| spec_from_quiz(q, Lang::En).is_some())
                        .collect()
                })
                .unwrap_or_default()
        });
        let picked = self
            .picked
            .as_ref()
            .and_then(|id| bank.iter().find(|q| &q.id == id))
            .or_else(|| bank.first());
        let picked_text = picked.map_or_else(String::new, |q| short(q.prompt(lang), 70));
        let mut choice = picked.map(|q| q.id.clone());
        let label = ui.label(t(lang, "class-pick"));
        egui::ComboBox::from_id_salt("class-pick")
            .width(ui.available_width())
            .selected_text(picked_text)
            .show_ui(ui, |ui| {
                for q in bank.iter() {
                    ui.selectable_value(&mut choice, Some(q.id.clone()), short(q.prompt(lang), 90));
                }
            })
            .response
            .labelled_by(label.id);
        self.picked = choice;
        let spec = self
            .picked
            .as_ref()
            .and_then(|id| bank.iter().find(|q| &q.id == id))
            .and_then(|q| spec_from_quiz(q, lang))
            .map(|mut spec| {
                spec.timer_s = timer;
                spec
            });
        let busy = client
            .state
            .question
            .as_ref()
            .is_some_and(|q| q.view.phase != Phase::Answered);
        let pose = ui
            .add_enabled(
                joined && spec.is_some(),
                egui::Button::new(t(lang, "class-pose")),
            )
            .on_hover_text(t(
                lang,
                if busy {
                    "class-pose-replaces"
                } else {
                    "class-pose-hint"
                },
            ));
        crate::platform::mark("class-pose", pose.rect);
        if pose.clicked() {
            if let Some(question) = spec {
                client.send(ClientMsg::Pose { question });
            }
        }
        ui.add_space(4.0);
        self.walk_ui(ui, lang, client);
        ui.add_space(8.0);
        let Some(q) = client.state.question.clone() else {
            ui.label(t(lang, "class-no-question"));
            return;
        };
        egui::Frame::group(ui.style()).show(ui, |ui| {
            ui.set_width(ui.available_width());
            // The round's buttons first: on a projector they stay in the same place, above the
            // question and its distributions, never below the fold.
            let act = |ui: &mut egui::Ui, id: &str, on: bool| {
                let r = ui.add_enabled(on && joined, egui::Button::new(t(lang, id)));
                crate::platform::mark(id, r.rect);
                r.clicked()
            };
            ui.horizontal_wrapped(|ui| {
                let phase = q.view.phase;
                if act(ui, "class-reveal", phase.open_round().is_some()) {
                    client.send(ClientMsg::Reveal);
                }
                if act(ui, "class-revote", phase == Phase::Revealed) {
                    client.send(ClientMsg::Revote { timer_s: timer });
                }
                if act(
                    ui,
                    "class-reveal-answer",
                    matches!(phase, Phase::Revealed | Phase::RevealedAgain),
                ) {
                    client.send(ClientMsg::RevealAnswer);
                }
            });
            ui.add_space(6.0);
            question_panel(ui, lang, &q);
        });
        ui.add_space(8.0);
        if ui
            .add_enabled(
                self.export.is_none(),
                egui::Button::new(t(lang, "class-export")),
            )
            .on_hover_text(t(lang, "class-export-hint"))
            .clicked()
        {
            if let Some((url, secret)) = client.export_request("csv") {
                self.exported = None;
                self.export = Some(crate::platform::fetch_text(ui.ctx(), &url, &secret));
            }
        }
        match &self.exported {
            Some(Ok(path)) => {
                ui.label(t_args(lang, "class-exported", &[("path", path.clone())]));
            }
            Some(Err(e)) => {
                ui.label(
                    egui::RichText::new(t_args(
                        lang,
                        "class-export-failed",
                        &[("error", e.clone())],
                    ))
                    .color(ui.visuals().warn_fg_color),
                );
            }
            None => {}
        }
    }

    fn challenge_ui(&mut self, ui: &mut egui::Ui, lang: Lang, client: &mut ClassClient) {
        ui.heading(t(lang, "class-design"));
        let total = tplab_engine::block::design::challenge::all().len() as u32;
        ui.horizontal_wrapped(|ui| {
            let label = ui.label(t(lang, "class-stage"));
            ui.add(egui::DragValue::new(&mut self.stage).range(1..=total))
                .labelled_by(label.id);
            let set = ui.add_enabled(
                client.state.status == Status::Joined,
                egui::Button::new(t(lang, "class-set-challenge")),
            );
            crate::platform::mark("class-set-challenge", set.rect);
            if set.clicked() {
                client.send(ClientMsg::SetChallenge { stage: self.stage });
            }
        });
        let Some(ch) = &client.state.challenge else {
            ui.label(t(lang, "class-no-challenge"));
            return;
        };
        let (title, goal) = cw::challenge_words(lang, ch);
        ui.strong(t_args(
            lang,
            "class-challenge-title",
            &[("stage", ch.stage.to_string()), ("title", title)],
        ));
        ui.add(egui::Label::new(goal).wrap());
        let Some(room) = &client.state.plans else {
            ui.label(t(lang, "class-no-plans"));
            return;
        };
        ui.label(t_args(
            lang,
            "class-plans-submitted",
            &[("count", room.submitted.to_string())],
        ));
        egui::Grid::new("class-plan-groups")
            .striped(true)
            .show(ui, |ui| {
                for g in &room.groups {
                    ui.label(group_words(lang, g.group));
                    ui.label(g.count.to_string());
                    ui.end_row();
                }
            });
        if let Some(r) = room.most_common_refusal() {
            // In the teacher's language: the engine's verdict on a plan that broke this rule.
            let key = (r.rule.clone(), lang);
            let rule = match self.refusals.get(&key) {
                Some(words) => words.clone(),
                None => {
                    let words = room
                        .plans
                        .iter()
                        .find(|p| p.refusal.as_deref() == Some(r.rule.as_str()))
                        .map_or_else(
                            || r.rule.clone(),
                            |p| cw::refusal_words(lang, ch.stage, &p.plan, &r.rule),
                        );
                    self.refusals.insert(key, words.clone());
                    words
                }
            };
            ui.add_space(4.0);
            ui.label(t(lang, "class-common-mistake"));
            ui.add(
                egui::Label::new(
                    egui::RichText::new(t_args(
                        lang,
                        "class-refusal-share",
                        &[
                            (
                                "percent",
                                crate::i18n::percent(lang, f64::from(r.percent), 0),
                            ),
                            ("rule", rule),
                        ],
                    ))
                    .color(ui.visuals().warn_fg_color),
                )
                .wrap(),
            );
        }
        ui.add_space(4.0);
        // Any plan on the projector, without its author's name: the walkthrough steps through
        // it, or the design lab shows why the engine refuses it.
        let mut show = None;
        egui::CollapsingHeader::new(t(lang, "class-every-plan"))
            .id_salt("class-every-plan")
            .default_open(true)
            .show(ui, |ui| {
                for p in &room.plans {
                    ui.horizontal_wrapped(|ui| {
                        if ui
                            .button(t(lang, "class-show-plan"))
                            .on_hover_text(t(lang, "class-show-plan-hint"))
                            .clicked()
                        {
                            show = Some(p.clone());
                        }
                        ui.label(format!(
                            "{} — {}",
                            group_words(lang, p.group),
                            cw::entry_words(lang, p)
                        ));
                    });
                }
            });
        if let Some(p) = show {
            self.to_show = Some((ch.stage, p));
        }
        if let Some(Err(e)) = &self.shown {
            ui.label(egui::RichText::new(e.as_str()).color(ui.visuals().warn_fg_color));
        }
    }
}

/// Puts a student's plan on the teacher's screen (no name: the plan alone): the challenge's
/// plan in the design lab, then the walkthrough on it when the engine accepts it. The design
/// lab stays where it was when the plan cannot be read.
fn show_plan(
    shared: &mut Shared,
    stage: u32,
    entry: &tplab_class::protocol::PlanEntry,
) -> Result<(), String> {
    use crate::lab::design::DesignAction;
    use crate::lab::Action;
    let plan = tplab_class::wire::to_plan(&entry.plan)?;
    shared.act(Action::Design(DesignAction::SelectStage(stage as usize)));
    shared.act(Action::Design(DesignAction::SetPlan(plan.clone())));
    shared.students_plan = Some(plan);
    if entry.group == PlanGroup::Refused {
        shared.navigate(tplab_lessons::ShowMe {
            view: tplab_lessons::View::Design,
            ..Default::default()
        });
    } else {
        shared.act(Action::StepThroughMyPlan);
    }
    Ok(())
}

/// A design-lab verdict group in words.
fn group_words(lang: Lang, g: PlanGroup) -> String {
    t(lang, &format!("class-group-{}", g.name()))
}

/// The first `n` characters of `s`, with an ellipsis when cut.
fn short(s: &str, n: usize) -> String {
    let first_line = s.lines().next().unwrap_or("");
    if first_line.chars().count() > n || s.lines().count() > 1 {
        format!("{}…", first_line.chars().take(n).collect::<String>())
    } else {
        first_line.to_string()
    }
}

/// The question, its phase, the counts, the distributions and the answer.
fn question_panel(ui: &mut egui::Ui, lang: Lang, q: &QuestionState) {
    let size = ui.style().text_styles[&egui::TextStyle::Body].size;
    let phase_id = format!("class-phase-{}", q.view.phase.name().replace('_', "-"));
    ui.strong(t(lang, &phase_id));
    cw::timer(ui, lang, q, 1.6 * size);
    if let Some(round) = q.open_round() {
        ui.label(
            egui::RichText::new(t_args(
                lang,
                "class-answered",
                &[
                    ("answered", q.answered[round.index()].to_string()),
                    ("round", round.number().to_string()),
                ],
            ))
            .size(1.6 * size),
        );
    }
    ui.add_space(4.0);
    // In the console's language when the question carries it.
    let (prompt, texts, _) = q.view.in_lang(lang.code());
    ui.add(egui::Label::new(egui::RichText::new(prompt).size(1.3 * size)).wrap());
    if let QuestionBody::Choice { choices } = &q.view.body {
        for (c, text) in choices.iter().zip(&texts) {
            ui.add(egui::Label::new(format!("{}. {text}", c.letter)).wrap());
        }
    }
    let right = match &q.answer {
        Some((AnswerView::Choice { answer, .. }, _)) => Some(*answer as usize),
        _ => None,
    };
    let mut rounds = Vec::new();
    for r in [Round::First, Round::Second] {
        if let Some(d) = &q.dists[r.index()] {
            rounds.push((
                t_args(lang, "class-round", &[("n", r.number().to_string())]),
                d,
            ));
        }
    }
    // A numeric answer's histograms are centred on the right value: they replace the room's.
    let around: Vec<_> = match &q.answer {
        Some((AnswerView::Numeric { .. }, s)) => [&s.around_first, &s.around_second]
            .into_iter()
            .enumerate()
            .filter_map(|(i, b)| {
                b.as_ref().map(|bins| {
                    (
                        t_args(lang, "class-round", &[("n", (i + 1).to_string())]),
                        tplab_class::protocol::Dist::Histogram { bins: bins.clone() },
                    )
                })
            })
            .collect(),
        _ => Vec::new(),
    };
    let shown: Vec<(String, &tplab_class::protocol::Dist)> = if around.is_empty() {
        rounds
    } else {
        around.iter().map(|(c, d)| (c.clone(), d)).collect()
    };
    if !shown.is_empty() {
        cw::distribution(ui, lang, &shown, right, 1.8 * size);
    }
    if let Some((answer, s)) = &q.answer {
        let words = crate::widgets::class::answer_words(lang, answer);
        ui.label(
            egui::RichText::new(t_args(lang, "class-the-answer", &[("answer", words)]))
                .strong()
                .size(1.4 * size)
                .color(crate::widgets::ok_ink(ui)),
        );
        ui.label(cw::summary_words(lang, s));
        if s.voted_second > 0 {
            ui.label(t_args(
                lang,
                "class-moved",
                &[
                    ("up", s.wrong_to_right.to_string()),
                    ("down", s.right_to_wrong.to_string()),
                ],
            ));
        }
    }
}

/// Whether `url`'s host is this machine only (`127.0.0.1`, `[::1]`, `localhost`).
fn loopback_url(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod loopback_tests {
    #[test]
    fn a_join_address_on_this_machine_only_is_told_apart() {
        for url in [
            "http://127.0.0.1:8036/?class=ABC",
            "http://localhost:8036",
            "http://[::1]:8036/?class=X",
        ] {
            assert!(super::loopback_url(url), "{url}");
        }
        for url in [
            "http://192.168.1.20:8036/?class=ABC",
            "https://class.example.org/",
        ] {
            assert!(!super::loopback_url(url), "{url}");
        }
    }
}
