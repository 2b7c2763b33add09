//! A student's device in a live class, phone first (390×844 and up: one column, big touch
//! targets, everything in one scrolling page): a display name (optional), then the teacher's
//! question with one big button per choice (or a number), "waiting for the teacher", the
//! second vote after the discussion, the answer; and a design-lab challenge when the teacher
//! sets one: the student picks the free weights' splits and the server's engine grades the
//! plan.
//!
//! The shell shows this view alone when the app was opened by a join link; everything drawn
//! comes from [`crate::lab::class::ClassState`].

use crate::i18n::{t, t_args};
use crate::lab::class::{ClassClient, Status, StudentPlan, SPLITS};
use crate::lab::{Shared, View};
use crate::widgets::class as cw;
use tplab_class::protocol::{
    AnswerView, ClientMsg, Phase, PlanGroup, QuestionBody, Round, VoteValue, MAX_NAME_CHARS,
};
use tplab_lessons::Lang;

/// What the student typed and picked (nothing here is the class's state).
#[derive(Default)]
pub struct ClassStudent {
    name: String,
    /// Why the name was refused, if it was.
    name_error: Option<String>,
    /// The number typed for a numeric question.
    number: String,
    /// The plan being made, and the challenge (its `seq`) it is for.
    plan: Option<(u32, StudentPlan)>,
    /// What the student asked to open (the shell takes it).
    open: Option<Opened>,
    /// The teacher's last push target and what it reads as.
    pushed: Option<(String, Result<crate::lab::class::PushTarget, String>)>,
    /// The exam sitting already opened in the Quiz view (its seed).
    exam_opened: Option<u64>,
    /// "Add a collective": after which op (its index in `Site::ALL`) and of which kind.
    add_after: usize,
    add_kind: usize,
    /// The last refusal in the phone's language: (the server's rule, the language, the words).
    refusal: Option<(String, Lang, String)>,
    /// What the last verdict still asks, in the phone's language: (its plan's id, the
    /// language, the lines).
    missing: Option<(u32, Lang, Vec<String>)>,
}

/// "Place the collectives myself": the hand-placed collectives, each with a button that removes
/// it, and a row that adds one after an op (the design lab's hand placement, on a phone).
fn collectives_ui(
    ui: &mut egui::Ui,
    lang: Lang,
    plan: &mut StudentPlan,
    add_after: &mut usize,
    add_kind: &mut usize,
) {
    use tplab_class::protocol::WireCollective;
    use tplab_engine::block::design::{ManualKind, Site};
    const KINDS: [ManualKind; 4] = [
        ManualKind::AllReduce,
        ManualKind::AllGather,
        ManualKind::ReduceScatter,
        ManualKind::AllToAll,
    ];
    let mut by_hand = plan.manual.is_some();
    if ui
        .checkbox(&mut by_hand, t(lang, "class-place-myself"))
        .on_hover_text(t(lang, "class-place-myself-hint"))
        .changed()
    {
        plan.manual = by_hand.then(Vec::new);
    }
    let Some(list) = &mut plan.manual else {
        return;
    };
    let site_words = |name: &str| {
        Site::parse(name)
            .map(|s| crate::widgets::plan::site_words(lang, s))
            .unwrap_or_else(|_| name.to_string())
    };
    let mut remove = None;
    for (i, c) in list.iter().enumerate() {
        ui.horizontal_wrapped(|ui| {
            ui.label(t_args(
                lang,
                "class-collective-after",
                &[("kind", c.kind.clone()), ("op", site_words(&c.after))],
            ));
            if ui.button(t(lang, "class-remove")).clicked() {
                remove = Some(i);
            }
        });
    }
    if let Some(i) = remove {
        list.remove(i);
    }
    if list.is_empty() {
        ui.label(t(lang, "class-no-collectives"));
    }
    *add_after = (*add_after).min(Site::ALL.len() - 1);
    *add_kind = (*add_kind).min(KINDS.len() - 1);
    ui.horizontal_wrapped(|ui| {
        let kind = egui::ComboBox::from_id_salt("class-add-kind")
            .selected_text(KINDS[*add_kind].name())
            .show_ui(ui, |ui| {
                for (i, k) in KINDS.iter().enumerate() {
                    ui.selectable_value(add_kind, i, k.name());
                }
            });
        let label = ui.label(t(lang, "class-after"));
        kind.response.labelled_by(label.id);
        egui::ComboBox::from_id_salt("class-add-after")
            .selected_text(crate::widgets::plan::site_words(
                lang,
                Site::ALL[*add_after],
            ))
            .show_ui(ui, |ui| {
                for (i, site) in Site::ALL.iter().enumerate() {
                    ui.selectable_value(
                        add_after,
                        i,
                        crate::widgets::plan::site_words(lang, *site),
                    );
                }
            })
            .response
            .labelled_by(label.id);
        let add = ui.button(t(lang, "class-add"));
        crate::platform::mark("class-add-collective", add.rect);
        if add.clicked() && list.len() < tplab_engine::block::design::plan::MAX_MANUAL {
            list.push(WireCollective {
                after: Site::ALL[*add_after].name().to_string(),
                kind: KINDS[*add_kind].name().to_string(),
            });
        }
    });
}

/// What a student's device opens away from the class view.
pub enum Opened {
    /// What the teacher pushed.
    Push(Box<crate::lab::class::PushTarget>),
    /// The certificate exam's sitting the class server drew (its seed).
    Exam(u64),
}

impl ClassStudent {
    /// What the student asked to open on this device, once.
    pub fn take_open(&mut self) -> Option<Opened> {
        self.open.take()
    }

    /// The certificate exam: "Take the exam" while it is open, then the server's grade and the
    /// certificate's download.
    fn exam_ui(&mut self, ui: &mut egui::Ui, lang: Lang, client: &mut ClassClient) {
        // A sitting the server drew: its questions open in the Quiz view, once.
        if let Some(seed) = client.state.exam_sitting {
            if self.exam_opened != Some(seed) {
                self.exam_opened = Some(seed);
                self.open = Some(Opened::Exam(seed));
            }
        }
        if let Some(r) = &client.state.exam_result {
            egui::Frame::group(ui.style()).show(ui, |ui| {
                ui.set_width(ui.available_width());
                let verdict = t_args(
                    lang,
                    if r.passed {
                        "class-exam-passed"
                    } else {
                        "class-exam-failed"
                    },
                    &[
                        ("correct", r.correct.to_string()),
                        ("total", r.total.to_string()),
                        ("percent", r.percent.to_string()),
                    ],
                );
                let color = if r.passed {
                    crate::widgets::ok_ink(ui)
                } else {
                    ui.visuals().warn_fg_color
                };
                ui.add(egui::Label::new(egui::RichText::new(verdict).strong().color(color)).wrap());
                if let Some(path) = &r.certificate {
                    let url = client.url_of(path);
                    let link = ui.hyperlink_to(t(lang, "class-exam-download"), url);
                    crate::platform::mark("class-exam-download", link.rect);
                }
                if let Some(note) = &r.note {
                    ui.add(egui::Label::new(note.as_str()).wrap());
                }
            });
        }
        let open = client.state.exam.as_ref().is_some_and(|e| e.open);
        if !open || client.state.exam_sitting.is_some() {
            return;
        }
        let certificates = client.state.exam.as_ref().is_some_and(|e| e.certificates);
        ui.add(
            egui::Label::new(t(
                lang,
                if certificates {
                    "class-exam-open-signed"
                } else {
                    "class-exam-open-unsigned"
                },
            ))
            .wrap(),
        );
        if big_button(
            ui,
            "class-exam-start",
            egui::RichText::new(t(lang, "class-exam-start")),
            false,
            client.state.status == Status::Joined,
        ) {
            client.send(ClientMsg::StartExam);
        }
    }

    /// Where the teacher sent the room: a button that opens it here.
    fn pushed_ui(&mut self, ui: &mut egui::Ui, lang: Lang, client: &ClassClient) {
        let Some((target, title)) = &client.state.push else {
            return;
        };
        // The title in the student's own language when the target says what it is (the
        // teacher's words, in the teacher's language, otherwise).
        // Read once per target, not every frame.
        if self.pushed.as_ref().is_none_or(|(t, _)| t != target) {
            self.pushed = Some((target.clone(), crate::lab::class::PushTarget::read(target)));
        }
        let Some((_, read)) = self.pushed.clone() else {
            return;
        };
        let title = match &read {
            Ok(p) if p.show.view == tplab_lessons::View::Step && p.step.is_some() => t_args(
                lang,
                "class-push-step-title",
                &[("step", p.step.unwrap_or(1).to_string())],
            ),
            _ => title.clone().unwrap_or_default(),
        };
        egui::Frame::group(ui.style()).show(ui, |ui| {
            ui.set_width(ui.available_width());
            ui.add(
                egui::Label::new(
                    egui::RichText::new(t_args(lang, "class-pushed", &[("title", title)])).strong(),
                )
                .wrap(),
            );
            // While the room votes the lab stays closed: it would answer the question.
            let voting = client
                .state
                .question
                .as_ref()
                .is_some_and(|q| q.open_round().is_some());
            match read {
                Ok(p) => {
                    if voting {
                        ui.add(egui::Label::new(t(lang, "class-open-after-vote")).wrap());
                    }
                    if big_button(
                        ui,
                        "class-open-pushed",
                        egui::RichText::new(t(lang, "class-open-pushed")),
                        false,
                        !voting,
                    ) {
                        self.open = Some(Opened::Push(Box::new(p)));
                    }
                }
                Err(e) => {
                    ui.add(
                        egui::Label::new(
                            egui::RichText::new(t_args(
                                lang,
                                "class-pushed-unreadable",
                                &[("error", e)],
                            ))
                            .color(ui.visuals().warn_fg_color),
                        )
                        .wrap(),
                    );
                }
            }
        });
    }
}

impl View for ClassStudent {
    fn id(&self) -> &'static str {
        "class-student"
    }

    fn title(&self) -> &'static str {
        "Class"
    }

    fn ui(&mut self, ui: &mut egui::Ui, shared: &mut Shared) {
        let lang = crate::widgets::lang(ui);
        let Some(client) = shared.class.as_mut() else {
            let ink = ui.visuals().text_color();
            crate::widgets::code_label(ui, &t(lang, "class-how"), ink);
            return;
        };
        // Big type and big targets: a thumb on a phone.
        let size = ui.style().text_styles[&egui::TextStyle::Body].size;
        ui.spacing_mut().item_spacing.y = 0.6 * size;
        crate::widgets::scrolling_page(ui, "class-student", |ui| {
            ui.set_max_width(ui.available_width());
            ui.horizontal_wrapped(|ui| {
                ui.heading(t(lang, "class-student-title"));
                if let Some(code) = &client.state.code {
                    ui.label(egui::RichText::new(code.as_str()).monospace());
                }
            });
            let (words, bad) = cw::status_words(lang, &client.state.status);
            if bad || client.state.status != Status::Joined {
                ui.label(egui::RichText::new(words).color(if bad {
                    ui.visuals().warn_fg_color
                } else {
                    ui.visuals().text_color()
                }));
            }
            if !client.started() {
                self.name_ui(ui, lang, client);
                return;
            }
            if let Some((id, name)) = &client.state.me {
                // "Student 2" (no name typed) in the phone's language.
                let name = if *name == format!("Student {id}") {
                    t_args(lang, "class-student-n", &[("n", id.to_string())])
                } else {
                    name.clone()
                };
                ui.label(t_args(lang, "class-you-are", &[("name", name)]));
            }
            if let Some((code, message)) = &client.state.error {
                let id = format!("class-error-{}", code.name().replace('_', "-"));
                let words = match t(lang, &id) {
                    s if s == id => message.clone(),
                    s => s,
                };
                ui.add(
                    egui::Label::new(egui::RichText::new(words).color(ui.visuals().warn_fg_color))
                        .wrap(),
                );
            }
            if matches!(client.state.status, Status::Refused { .. }) {
                self.name_ui(ui, lang, client);
                return;
            }
            self.pushed_ui(ui, lang, client);
            self.exam_ui(ui, lang, client);
            ui.separator();
            // The question while it is open; once answered, a challenge set since goes on top.
            let challenge_first = client
                .state
                .question
                .as_ref()
                .is_none_or(|q| q.view.phase == Phase::Answered);
            let has_challenge = client.state.challenge.is_some();
            if challenge_first && has_challenge {
                self.challenge_ui(ui, lang, client);
                if client.state.question.is_some() {
                    ui.separator();
                }
            }
            if client.state.question.is_some() {
                self.question_ui(ui, lang, client);
            }
            if !challenge_first && has_challenge {
                ui.separator();
                self.challenge_ui(ui, lang, client);
            }
            if client.state.question.is_none()
                && !has_challenge
                && client.state.status == Status::Joined
            {
                ui.add_space(size);
                ui.label(egui::RichText::new(t(lang, "class-waiting")).size(1.3 * size));
            }
        });
    }
}

/// A full-width button three lines of body text high; `mark` names it for the browser test.
fn big_button(
    ui: &mut egui::Ui,
    mark: &str,
    text: egui::RichText,
    selected: bool,
    enabled: bool,
) -> bool {
    let size = ui.style().text_styles[&egui::TextStyle::Body].size;
    let button = egui::Button::new(text.size(1.25 * size))
        .selected(selected)
        .wrap()
        .min_size(egui::vec2(ui.available_width(), 3.2 * size));
    let r = ui.add_enabled(enabled, button);
    crate::platform::mark(mark, r.rect);
    r.clicked()
}

impl ClassStudent {
    /// The name field and the join button (before joining, or after a refused name).
    fn name_ui(&mut self, ui: &mut egui::Ui, lang: Lang, client: &mut ClassClient) {
        let size = ui.style().text_styles[&egui::TextStyle::Body].size;
        ui.add_space(size);
        ui.label(t(lang, "class-name"));
        ui.add(
            egui::TextEdit::singleline(&mut self.name)
                .char_limit(MAX_NAME_CHARS)
                .hint_text(t(lang, "class-name-hint"))
                .desired_width(ui.available_width())
                .font(egui::FontId::proportional(1.25 * size)),
        );
        if let Some(e) = &self.name_error {
            ui.add(
                egui::Label::new(egui::RichText::new(e.as_str()).color(ui.visuals().warn_fg_color))
                    .wrap(),
            );
        }
        let refused = matches!(client.state.status, Status::Refused { .. });
        if big_button(
            ui,
            "class-join",
            egui::RichText::new(t(lang, "class-join")),
            false,
            true,
        ) {
            match client.set_name(&self.name) {
                Ok(()) => {
                    self.name_error = None;
                    client.start();
                }
                Err(e) => {
                    self.name_error =
                        Some(t_args(lang, "class-bad-name", &[("error", e.to_string())]));
                }
            }
        }
        if !refused {
            ui.label(egui::RichText::new(t(lang, "class-name-optional")).small());
        }
    }

    fn question_ui(&mut self, ui: &mut egui::Ui, lang: Lang, client: &mut ClassClient) {
        let size = ui.style().text_styles[&egui::TextStyle::Body].size;
        let Some(q) = client.state.question.clone() else {
            return;
        };
        // Votes go out when joined, or as soon as the connection is back.
        let joined = client.state.status == Status::Joined;
        let reconnecting = matches!(client.state.status, Status::Connecting { .. });
        // (The question's source, `quiz:…`, is the export's, not a student's to read.)
        // The question in this phone's language when the teacher's app sent it (the letters
        // and the votes are the same in every language).
        let (prompt, texts, unit) = q.view.in_lang(lang.code());
        ui.add(egui::Label::new(egui::RichText::new(prompt).size(1.3 * size)).wrap());
        // Once the timer has run out, the vote is closed on this phone too (the server would
        // refuse it).
        let time_up = q.seconds_left() == Some(0);
        let open = q.open_round().filter(|_| !time_up);
        let (phase_id, phase_color) = match q.view.phase {
            Phase::Voting | Phase::Revoting if time_up => ("class-student-time-up", None),
            Phase::Voting => ("class-student-voting", None),
            Phase::Revoting => ("class-student-revoting", Some(ui.visuals().warn_fg_color)),
            Phase::Revealed | Phase::RevealedAgain => ("class-student-closed", None),
            Phase::Answered => ("class-student-answered", None),
        };
        let mut phase_text = egui::RichText::new(t(lang, phase_id)).strong();
        if let Some(c) = phase_color {
            phase_text = phase_text.color(c);
        }
        ui.add(egui::Label::new(phase_text).wrap());
        crate::widgets::class::timer(ui, lang, &q, 1.3 * size);
        if let Some((answer, s)) = &q.answer {
            // A numeric answer's unit in this phone's language (the question's translation).
            let answer = match answer {
                AnswerView::Numeric {
                    answer, tolerance, ..
                } => AnswerView::Numeric {
                    answer: *answer,
                    tolerance: *tolerance,
                    unit: unit.clone(),
                },
                other => other.clone(),
            };
            let words = crate::widgets::class::answer_words(lang, &answer);
            ui.label(
                egui::RichText::new(t_args(lang, "class-the-answer", &[("answer", words)]))
                    .strong()
                    .size(1.3 * size)
                    .color(crate::widgets::ok_ink(ui)),
            );
            // Whether this student's own votes were right.
            for r in [Round::First, Round::Second] {
                let Some(v) = q.my_votes[r.index()] else {
                    continue;
                };
                let right = match (&answer, v) {
                    (AnswerView::Choice { answer, .. }, VoteValue::Choice { choice }) => {
                        choice == *answer
                    }
                    (
                        AnswerView::Numeric {
                            answer, tolerance, ..
                        },
                        VoteValue::Numeric { value },
                    ) => (value - answer).abs() <= *tolerance,
                    _ => false,
                };
                let id = if right {
                    "class-you-were-right"
                } else {
                    "class-you-were-wrong"
                };
                ui.label(t_args(lang, id, &[("round", r.number().to_string())]));
            }
            ui.add(egui::Label::new(cw::summary_words(lang, s)).wrap());
        }
        let mine = open.and_then(|r| q.my_votes[r.index()]);
        let right = match &q.answer {
            Some((AnswerView::Choice { answer, .. }, _)) => Some(*answer),
            _ => None,
        };
        match &q.view.body {
            QuestionBody::Choice { choices } => {
                for (i, c) in choices.iter().enumerate() {
                    let i = i as u32;
                    let chosen = mine == Some(VoteValue::Choice { choice: i });
                    let words = texts.get(i as usize).unwrap_or(&c.text);
                    let mut text = egui::RichText::new(format!("{}   {words}", c.letter));
                    if right == Some(i) {
                        text = text.color(crate::widgets::ok_ink(ui)).strong();
                    }
                    let mark = format!("class-choice-{}", c.letter);
                    if big_button(
                        ui,
                        &mark,
                        text,
                        chosen,
                        open.is_some() && (joined || reconnecting),
                    ) {
                        client.vote(q.view.id, VoteValue::Choice { choice: i });
                    }
                }
            }
            QuestionBody::Numeric { .. } => {
                ui.horizontal(|ui| {
                    ui.add_enabled(
                        open.is_some(),
                        egui::TextEdit::singleline(&mut self.number)
                            .desired_width(ui.available_width() * 0.5)
                            .font(egui::FontId::proportional(1.4 * size)),
                    );
                    if let Some(u) = &unit {
                        ui.label(u.as_str());
                    }
                });
                let parsed = crate::widgets::parse_number(&self.number).filter(|v| v.is_finite());
                if big_button(
                    ui,
                    "class-send",
                    egui::RichText::new(t(lang, "class-send")),
                    false,
                    open.is_some() && (joined || reconnecting) && parsed.is_some(),
                ) {
                    if let Some(value) = parsed {
                        client.vote(q.view.id, VoteValue::Numeric { value });
                    }
                }
                if !self.number.trim().is_empty() && parsed.is_none() {
                    ui.label(
                        egui::RichText::new(t(lang, "class-not-a-number"))
                            .color(ui.visuals().warn_fg_color),
                    );
                }
            }
        }
        // What this student's votes were, in words.
        for r in [Round::First, Round::Second] {
            if let Some(v) = q.my_votes[r.index()] {
                let vote = match v {
                    VoteValue::Choice { choice } => cw::letter(choice as usize).to_string(),
                    VoteValue::Numeric { value } => crate::i18n::num(lang, value, 2),
                };
                let id = if open == Some(r) {
                    "class-your-vote-open"
                } else {
                    "class-your-vote"
                };
                ui.label(t_args(
                    lang,
                    id,
                    &[("round", r.number().to_string()), ("vote", vote)],
                ));
            }
        }
        if open.is_some() && reconnecting {
            ui.label(t(lang, "class-vote-when-back"));
        }
    }

    fn challenge_ui(&mut self, ui: &mut egui::Ui, lang: Lang, client: &mut ClassClient) {
        let size = ui.style().text_styles[&egui::TextStyle::Body].size;
        let Some(ch) = client.state.challenge.clone() else {
            return;
        };
        let (title, goal) = cw::challenge_words(lang, &ch);
        ui.heading(t_args(
            lang,
            "class-challenge-title",
            &[("stage", ch.stage.to_string()), ("title", title)],
        ));
        ui.add(egui::Label::new(goal).wrap());
        if self.plan.as_ref().is_none_or(|(seq, _)| *seq != ch.seq) {
            self.plan = Some((ch.seq, StudentPlan::from_wire(&ch.start)));
        }
        let Some((_, plan)) = &mut self.plan else {
            return;
        };
        for weight in ["qkv", "out", "fc1", "fc2"] {
            let free = ch.free.iter().any(|f| f == weight);
            let Some(split) = plan.get_mut(weight) else {
                continue;
            };
            ui.label(egui::RichText::new(t(lang, &format!("class-weight-{weight}"))).strong());
            ui.horizontal(|ui| {
                let w = (ui.available_width() - 2.0 * ui.spacing().item_spacing.x) / 3.0;
                for s in SPLITS {
                    let button = egui::Button::new(
                        egui::RichText::new(t(lang, &format!("class-split-{s}"))).size(1.1 * size),
                    )
                    .selected(split == s)
                    .min_size(egui::vec2(w, 2.6 * size));
                    let r = ui.add_enabled(free, button);
                    crate::platform::mark(&format!("class-split-{weight}-{s}"), r.rect);
                    if r.clicked() {
                        *split = s.to_string();
                    }
                }
            });
        }
        collectives_ui(ui, lang, plan, &mut self.add_after, &mut self.add_kind);
        let wire = plan.to_wire(&ch.start);
        if big_button(
            ui,
            "class-submit-plan",
            egui::RichText::new(t(lang, "class-submit-plan")),
            false,
            client.state.status == Status::Joined,
        ) {
            client.send(ClientMsg::SubmitPlan {
                challenge: ch.seq,
                plan: wire.clone(),
            });
        }
        if let Some(v) = &client.state.verdict {
            let ok = !matches!(v.group, PlanGroup::Refused);
            let color = if ok {
                crate::widgets::ok_ink(ui)
            } else {
                ui.visuals().warn_fg_color
            };
            ui.label(
                egui::RichText::new(t(lang, &format!("class-verdict-{}", v.group.name())))
                    .strong()
                    .color(color),
            );
            if let Some(r) = &v.refusal {
                // In the phone's language: the engine's verdict on the plan sent, worded as
                // the design lab words it (worked out once per refusal).
                let cached = self
                    .refusal
                    .as_ref()
                    .filter(|(rule, l, _)| rule == r && *l == lang)
                    .map(|(_, _, words)| words.clone());
                let words = cached.unwrap_or_else(|| {
                    let words = cw::refusal_words(lang, ch.stage, &wire, r);
                    self.refusal = Some((r.clone(), lang, words.clone()));
                    words
                });
                ui.add(egui::Label::new(words).wrap());
            }
            if v.solved {
                ui.label(t_args(
                    lang,
                    "class-solved",
                    &[("stars", "★".repeat(v.stars.into()))],
                ));
            }
            // In the phone's language (worked out once per verdict).
            let cached = self
                .missing
                .as_ref()
                .filter(|(id, l, _)| *id == v.plan_id && *l == lang)
                .map(|(_, _, words)| words.clone());
            let missing = cached.unwrap_or_else(|| {
                let words = cw::missing_words(lang, ch.stage, &wire, &v.missing);
                self.missing = Some((v.plan_id, lang, words.clone()));
                words
            });
            for m in &missing {
                ui.add(egui::Label::new(format!("• {m}")).wrap());
            }
        }
    }
}
