//! The class state machine, free of sockets: students and their tokens, the Peer Instruction
//! loop of each question, challenges and plans. Every change is written to the [`Store`] first;
//! what to send to whom comes back as a list of [`Out`] that the server delivers.
//!
//! The loop: `pose` → students vote alone (the teacher sees only the count) → `reveal` (the
//! first distribution) → `revote` (same choices, same letters) → `reveal` (the second beside the
//! first, and who moved where) → `reveal_answer` (the answer, right/wrong moves, and for a
//! numeric question a histogram around the right value). `reveal_answer` may also follow the
//! first distribution directly.

use crate::error::{ClassError, Refusal};
use crate::plans::{self, Checked};
use crate::protocol::*;
use crate::store::{now_ms, ClassRecord, PlanRow, QuestionRow, Store, StudentRow, VoteRow};
use std::collections::{BTreeMap, HashMap};
use subtle::ConstantTimeEq;

/// Who a message goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum To {
    /// The connection that sent the frame.
    Caller,
    /// Every teacher console.
    Teachers,
    /// Every student connection.
    Students,
    /// Every connection of one student (their phone and their laptop).
    Student(u32),
    /// Everyone.
    All,
}

/// One message to deliver.
#[derive(Debug, Clone, PartialEq)]
pub struct Out {
    pub to: To,
    pub msg: ServerMsg,
}

fn out(to: To, msg: ServerMsg) -> Out {
    Out { to, msg }
}

/// The join code's alphabet: no 0/O, 1/I/L.
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
/// The join code's length: 31^6 ≈ 8.9e8 codes, against at most a few thousand guesses a class
/// can get past the per-address limits.
pub const CODE_LEN: usize = 6;

fn random_bytes<const N: usize>() -> Result<[u8; N], ClassError> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).map_err(|e| ClassError::Random(e.to_string()))?;
    Ok(b)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A new join code.
pub fn new_code() -> Result<String, ClassError> {
    // Rejection sampling keeps the letters uniform.
    let mut code = String::with_capacity(CODE_LEN);
    while code.len() < CODE_LEN {
        for b in random_bytes::<16>()? {
            let limit = 256 - 256 % CODE_ALPHABET.len();
            if (b as usize) < limit && code.len() < CODE_LEN {
                code.push(CODE_ALPHABET[b as usize % CODE_ALPHABET.len()] as char);
            }
        }
    }
    Ok(code)
}

/// A join code as typed: case and spaces or dashes do not matter.
pub fn normalize_code(code: &str) -> String {
    code.chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .take(64)
        .collect::<String>()
        .to_ascii_uppercase()
}

/// The teacher's secret: 256 random bits, hex.
pub fn new_secret() -> Result<String, ClassError> {
    Ok(hex(&random_bytes::<32>()?))
}

/// A student's token: 128 random bits, hex.
pub fn new_token() -> Result<String, ClassError> {
    Ok(hex(&random_bytes::<16>()?))
}

/// Compares two secrets in time that does not depend on where they differ.
pub fn secrets_equal(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

struct Student {
    token: String,
    name: String,
}

struct Question {
    id: u32,
    spec: QuestionSpec,
    phase: Phase,
    deadline_ms: Option<i64>,
    votes: [BTreeMap<u32, VoteValue>; 2],
}

/// A running class.
pub struct Room {
    pub class_id: i64,
    pub code: String,
    secret: String,
    pub anonymous: bool,
    pub ended: bool,
    /// Whether this class was loaded back from the database (a restart).
    pub resumed: bool,
    store: Store,
    /// Student `id` is at index `id - 1`.
    students: Vec<Student>,
    by_token: HashMap<String, u32>,
    connected: HashMap<u32, u32>,
    questions: Vec<Question>,
    /// (seq, stage).
    challenges: Vec<(u32, u32)>,
    plans: Vec<PlanRow>,
    /// Most students a class takes.
    pub max_students: u32,
}

impl Room {
    /// The name a certificate may carry for student `id`: the name the student typed, never
    /// in an anonymous class nor the "Student 7" a student without a name is called.
    pub fn certificate_name(&self, id: u32) -> Option<String> {
        if self.anonymous {
            return None;
        }
        let s = self.students.get(id.checked_sub(1)? as usize)?;
        (s.name != format!("Student {id}")).then(|| s.name.clone())
    }

    /// The class that was running in `store` (a restart), or a new one (`new_class`: end any
    /// running class first).
    pub fn open(store: Store, anonymous: bool, new_class: bool) -> Result<Room, ClassError> {
        if let Some(rec) = store.open_class()? {
            if new_class {
                store.end_class(rec.id)?;
            } else {
                return Ok(Self::from_record(store, rec));
            }
        }
        let code = new_code()?;
        let secret = new_secret()?;
        let id = store.create_class(&code, &secret, anonymous)?;
        Ok(Room {
            class_id: id,
            code,
            secret,
            anonymous,
            ended: false,
            resumed: false,
            store,
            students: Vec::new(),
            by_token: HashMap::new(),
            connected: HashMap::new(),
            questions: Vec::new(),
            challenges: Vec::new(),
            plans: Vec::new(),
            max_students: 1000,
        })
    }

    fn from_record(store: Store, rec: ClassRecord) -> Room {
        let mut students = Vec::with_capacity(rec.students.len());
        let mut by_token = HashMap::new();
        for s in rec.students {
            // Ids are dense from 1; a gap would only come from a hand-edited file.
            while (students.len() as u32) + 1 < s.id {
                students.push(Student {
                    token: String::new(),
                    name: String::new(),
                });
            }
            by_token.insert(s.token.clone(), s.id);
            students.push(Student {
                token: s.token,
                name: s.name,
            });
        }
        let questions = rec
            .questions
            .into_iter()
            .map(|q| {
                let mut votes = [BTreeMap::new(), BTreeMap::new()];
                for v in q.votes {
                    votes[v.round.index()].insert(v.student, v.vote);
                }
                Question {
                    id: q.id,
                    spec: q.spec,
                    phase: q.phase,
                    deadline_ms: q.deadline_ms,
                    votes,
                }
            })
            .collect();
        Room {
            class_id: rec.id,
            code: rec.code,
            secret: rec.secret,
            anonymous: rec.anonymous,
            ended: false,
            resumed: true,
            store,
            students,
            by_token,
            connected: HashMap::new(),
            questions,
            challenges: rec.challenges,
            plans: rec.plans,
            max_students: 1000,
        }
    }

    /// The teacher's secret (printed once by `tplab class`; the console sends it).
    pub fn secret(&self) -> &str {
        &self.secret
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Whether `secret` is the teacher's (constant time).
    pub fn is_teacher_secret(&self, secret: &str) -> bool {
        secrets_equal(secret, &self.secret)
    }

    /// Whether `code` is this class's code, and the class is still on.
    pub fn check_code(&self, code: &str) -> Result<(), Refusal> {
        if self.ended {
            return Err(Refusal::new(
                ErrorCode::ClassEnded,
                "this class has ended: ask the teacher for the new class's code",
            ));
        }
        if !secrets_equal(&normalize_code(code), &self.code) {
            return Err(Refusal::new(
                ErrorCode::BadCode,
                "no class has this code: check the code on the projector (6 letters and digits)",
            ));
        }
        Ok(())
    }

    pub fn joined(&self) -> u32 {
        self.students.len() as u32
    }

    pub fn connected(&self) -> u32 {
        self.connected.values().filter(|&&n| n > 0).count() as u32
    }

    fn current(&self) -> Option<&Question> {
        self.questions.last()
    }

    fn view(&self, q: &Question) -> QuestionView {
        let body = match &q.spec.kind {
            QuestionKind::Choice { choices, .. } => QuestionBody::Choice {
                choices: choices
                    .iter()
                    .enumerate()
                    .map(|(i, text)| ChoiceView {
                        letter: LETTERS[i.min(MAX_CHOICES - 1)].into(),
                        text: text.clone(),
                    })
                    .collect(),
            },
            QuestionKind::Numeric { unit, .. } => QuestionBody::Numeric { unit: unit.clone() },
        };
        QuestionView {
            id: q.id,
            prompt: q.spec.prompt.clone(),
            source: q.spec.source.clone(),
            body,
            phase: q.phase,
            seconds_left: q
                .deadline_ms
                .filter(|_| q.phase.open_round().is_some())
                .map(|d| ((d - now_ms()).max(0) as u64).div_ceil(1000) as u32),
            translations: q.spec.translations.clone(),
        }
    }

    fn challenge_view(&self) -> Option<ChallengeView> {
        let &(seq, stage) = self.challenges.last()?;
        plans::challenge(stage)
            .ok()
            .map(|c| plans::challenge_view(seq, &c))
    }

    /// The teacher console's starting state.
    pub fn room_view(&self) -> RoomView {
        let q = self.current();
        RoomView {
            code: self.code.clone(),
            anonymous: self.anonymous,
            joined: self.joined(),
            connected: self.connected(),
            question: q.map(|q| self.view(q)),
            answered: q
                .map(|q| match q.phase {
                    Phase::Voting | Phase::Revealed => q.votes[0].len(),
                    _ => q.votes[1].len(),
                })
                .unwrap_or(0) as u32,
            challenge: self.challenge_view(),
            questions_asked: self.questions.len() as u32,
        }
    }

    fn roster(&self) -> Out {
        out(
            To::Teachers,
            ServerMsg::Roster {
                joined: self.joined(),
                connected: self.connected(),
            },
        )
    }

    /// Whether `token` is a student's of this class (a device coming back): 128 random bits,
    /// which no one guesses, so a reconnect is not a guess of the code.
    pub fn knows_token(&self, token: &str) -> bool {
        self.by_token.iter().any(|(k, _)| secrets_equal(k, token))
    }

    /// A student joins (or comes back with their token). Returns their id and the messages.
    pub fn join(
        &mut self,
        code: &str,
        name: Option<&str>,
        token: Option<&str>,
    ) -> Result<(u32, Vec<Out>), Refusal> {
        self.check_code(code)?;
        let known = token.and_then(|t| {
            self.by_token
                .iter()
                .find(|(k, _)| secrets_equal(k, t))
                .map(|(_, &id)| id)
        });
        let id = match known {
            Some(id) => id,
            None => {
                if self.joined() >= self.max_students {
                    return Err(Refusal::new(
                        ErrorCode::ClassFull,
                        format!(
                            "the class is full ({} students): ask the teacher",
                            self.max_students
                        ),
                    ));
                }
                let name = match name {
                    Some(n) => check_name(n)
                        .map_err(|e| Refusal::new(ErrorCode::BadName, e.to_string()))?,
                    None => String::new(),
                };
                let id = self.joined() + 1;
                let name = if self.anonymous || name.is_empty() {
                    format!("Student {id}")
                } else {
                    name
                };
                let token = new_token().map_err(Refusal::internal)?;
                let row = StudentRow {
                    id,
                    token: token.clone(),
                    name: name.clone(),
                    joined_ms: now_ms(),
                };
                self.store
                    .add_student(self.class_id, &row)
                    .map_err(Refusal::internal)?;
                self.by_token.insert(token.clone(), id);
                self.students.push(Student { token, name });
                id
            }
        };
        *self.connected.entry(id).or_default() += 1;
        let s = &self.students[(id - 1) as usize];
        let (question, votes) = match self.current() {
            Some(q) => (
                Some(self.view(q)),
                [Round::First, Round::Second]
                    .into_iter()
                    .filter_map(|r| q.votes[r.index()].get(&id).map(|v| (r, *v)))
                    .collect(),
            ),
            None => (None, Vec::new()),
        };
        let welcome = ServerMsg::Welcome {
            protocol: PROTOCOL_VERSION,
            student: id,
            token: s.token.clone(),
            name: s.name.clone(),
            anonymous: self.anonymous,
            question,
            votes,
            challenge: self.challenge_view(),
        };
        Ok((id, vec![out(To::Caller, welcome), self.roster()]))
    }

    /// A student's connection closed.
    pub fn disconnect(&mut self, student: u32) -> Vec<Out> {
        if let Some(n) = self.connected.get_mut(&student) {
            *n = n.saturating_sub(1);
        }
        vec![self.roster()]
    }

    /// A student votes in the open round of the current question.
    pub fn vote(
        &mut self,
        student: u32,
        question: u32,
        choice: Option<u32>,
        value: Option<f64>,
    ) -> Result<Vec<Out>, Refusal> {
        let connected = self.connected();
        let class_id = self.class_id;
        let q = self
            .questions
            .last_mut()
            .filter(|q| q.id == question)
            .ok_or_else(|| {
                Refusal::new(
                    ErrorCode::NoQuestion,
                    format!("question {question} is not the one being asked: vote on the question on screen"),
                )
            })?;
        let round = q.phase.open_round().ok_or_else(|| {
            Refusal::new(
                ErrorCode::WrongPhase,
                "voting is closed for this question: wait for the teacher's next round",
            )
        })?;
        if q.deadline_ms.is_some_and(|d| now_ms() > d) {
            return Err(Refusal::new(
                ErrorCode::TimeUp,
                "the timer has run out: your vote was not counted",
            ));
        }
        let vote = match (&q.spec.kind, choice, value) {
            (QuestionKind::Choice { choices, .. }, Some(c), None) => {
                if c as usize >= choices.len() {
                    return Err(Refusal::new(
                        ErrorCode::BadVote,
                        format!(
                            "choice {c} does not exist: this question has choices 0 to {}",
                            choices.len() - 1
                        ),
                    ));
                }
                VoteValue::Choice { choice: c }
            }
            (QuestionKind::Numeric { .. }, None, Some(v)) => {
                if !v.is_finite() || v.abs() > MAX_NUMBER {
                    return Err(Refusal::new(
                        ErrorCode::BadVote,
                        format!("a numeric answer is a finite number of at most {MAX_NUMBER:e}"),
                    ));
                }
                VoteValue::Numeric { value: v }
            }
            (QuestionKind::Choice { .. }, _, _) => {
                return Err(Refusal::new(
                    ErrorCode::BadVote,
                    "this is a choice question: send `choice` (the 0-based index) and no `value`",
                ))
            }
            (QuestionKind::Numeric { .. }, _, _) => {
                return Err(Refusal::new(
                    ErrorCode::BadVote,
                    "this is a numeric question: send `value` and no `choice`",
                ))
            }
        };
        let row = VoteRow {
            student,
            round,
            vote,
            at_ms: now_ms(),
        };
        // Committed before anyone hears of it.
        self.store
            .record_vote(class_id, question, &row)
            .map_err(Refusal::internal)?;
        q.votes[round.index()].insert(student, vote);
        let answered = q.votes[round.index()].len() as u32;
        Ok(vec![
            out(
                To::Student(student),
                ServerMsg::VoteAck {
                    question,
                    round,
                    vote,
                },
            ),
            out(
                To::Teachers,
                ServerMsg::Count {
                    question,
                    round,
                    answered,
                    connected,
                    student,
                },
            ),
        ])
    }

    /// Teacher: poses a question (round 1).
    pub fn pose(&mut self, spec: QuestionSpec) -> Result<Vec<Out>, Refusal> {
        spec.check()
            .map_err(|e| Refusal::new(ErrorCode::BadQuestion, e))?;
        let id = self.questions.len() as u32 + 1;
        let now = now_ms();
        let deadline_ms = spec.timer_s.map(|t| now + t as i64 * 1000);
        let row = QuestionRow {
            id,
            spec: spec.clone(),
            phase: Phase::Voting,
            posed_ms: now,
            deadline_ms,
            votes: Vec::new(),
        };
        self.store
            .add_question(self.class_id, &row)
            .map_err(Refusal::internal)?;
        let q = Question {
            id,
            spec,
            phase: Phase::Voting,
            deadline_ms,
            votes: [BTreeMap::new(), BTreeMap::new()],
        };
        let view = self.view(&q);
        self.questions.push(q);
        Ok(vec![out(
            To::All,
            ServerMsg::Question {
                question: view,
                round: Round::First,
            },
        )])
    }

    fn set_phase(&mut self, phase: Phase, deadline_ms: Option<i64>) -> Result<u32, Refusal> {
        let class_id = self.class_id;
        let q = self.questions.last_mut().ok_or_else(no_question)?;
        self.store
            .set_phase(class_id, q.id, phase, deadline_ms)
            .map_err(Refusal::internal)?;
        q.phase = phase;
        q.deadline_ms = deadline_ms;
        Ok(q.id)
    }

    /// Teacher: closes the open round and shows its distribution (round 2: beside the first,
    /// with who moved where).
    pub fn reveal(&mut self) -> Result<Vec<Out>, Refusal> {
        let q = self.current().ok_or_else(no_question)?;
        let (next, round) = match q.phase {
            Phase::Voting => (Phase::Revealed, Round::First),
            Phase::Revoting => (Phase::RevealedAgain, Round::Second),
            p => {
                return Err(wrong_phase(
                    p,
                    "reveal shows the distribution of an open vote: pose a question or start the revote first",
                ))
            }
        };
        let (dist, first, moves) = distributions(q, round);
        let id = self.set_phase(next, None)?;
        Ok(vec![
            out(
                To::Teachers,
                ServerMsg::Distribution {
                    question: id,
                    round,
                    dist,
                    first,
                    moves,
                },
            ),
            out(
                To::Students,
                ServerMsg::Phase {
                    question: id,
                    phase: next,
                },
            ),
        ])
    }

    /// Teacher: "discuss with your neighbour and vote again".
    pub fn revote(&mut self, timer_s: Option<u32>) -> Result<Vec<Out>, Refusal> {
        if let Some(t) = timer_s {
            check_timer(t).map_err(|e| Refusal::new(ErrorCode::BadQuestion, e))?;
        }
        let q = self.current().ok_or_else(no_question)?;
        if q.phase != Phase::Revealed {
            return Err(wrong_phase(
                q.phase,
                "the revote follows the first distribution: reveal the first vote first",
            ));
        }
        self.set_phase(Phase::Revoting, timer_s.map(|t| now_ms() + t as i64 * 1000))?;
        let q = self.current().ok_or_else(no_question)?;
        Ok(vec![out(
            To::All,
            ServerMsg::Question {
                question: self.view(q),
                round: Round::Second,
            },
        )])
    }

    /// Teacher: reveals the answer (after a distribution).
    pub fn reveal_answer(&mut self) -> Result<Vec<Out>, Refusal> {
        let q = self.current().ok_or_else(no_question)?;
        if !matches!(q.phase, Phase::Revealed | Phase::RevealedAgain) {
            return Err(wrong_phase(
                q.phase,
                "the answer comes after the room's distribution: reveal the vote first",
            ));
        }
        let (answer, summary) = answer_and_summary(q);
        let id = self.set_phase(Phase::Answered, None)?;
        Ok(vec![out(
            To::All,
            ServerMsg::Answer {
                question: id,
                answer,
                summary,
            },
        )])
    }

    /// Teacher: sends every device to a step, question or lesson.
    pub fn push(&mut self, target: String, title: Option<String>) -> Result<Vec<Out>, Refusal> {
        check_text("the target", &target, MAX_TARGET_CHARS)
            .map_err(|e| Refusal::new(ErrorCode::BadQuestion, e))?;
        if let Some(t) = &title {
            check_text("the title", t, MAX_TARGET_CHARS)
                .map_err(|e| Refusal::new(ErrorCode::BadQuestion, e))?;
        }
        Ok(vec![out(To::Students, ServerMsg::Push { target, title })])
    }

    /// Teacher: sets a design-lab challenge.
    pub fn set_challenge(&mut self, stage: u32) -> Result<Vec<Out>, Refusal> {
        let c = plans::challenge(stage).map_err(|e| Refusal::new(ErrorCode::NoChallenge, e))?;
        let seq = self.challenges.len() as u32 + 1;
        self.store
            .add_challenge(self.class_id, seq, stage)
            .map_err(Refusal::internal)?;
        self.challenges.push((seq, stage));
        Ok(vec![
            out(
                To::All,
                ServerMsg::Challenge {
                    challenge: plans::challenge_view(seq, &c),
                },
            ),
            out(
                To::Teachers,
                ServerMsg::Plans {
                    room: plans::room(seq, &self.plans),
                },
            ),
        ])
    }

    /// The current challenge (seq, stage), for checking a plan outside the lock.
    pub fn current_challenge(&self) -> Option<(u32, u32)> {
        self.challenges.last().copied()
    }

    /// Records a plan the engine checked.
    pub fn record_plan(
        &mut self,
        student: u32,
        seq: u32,
        checked: Checked,
    ) -> Result<Vec<Out>, Refusal> {
        if self.current_challenge().map(|c| c.0) != Some(seq) {
            return Err(Refusal::new(
                ErrorCode::NoChallenge,
                format!("challenge {seq} is not the current one: work on the challenge on screen"),
            ));
        }
        let row = PlanRow {
            id: self.plans.len() as u32 + 1,
            challenge_seq: seq,
            student,
            plan: checked.plan,
            describe: checked.describe,
            group: checked.group,
            refusal: checked.refusal,
            solved: checked.solved,
            stars: checked.stars,
            at_ms: now_ms(),
        };
        self.store
            .add_plan(self.class_id, &row)
            .map_err(Refusal::internal)?;
        let verdict = Verdict {
            plan_id: row.id,
            describe: row.describe.clone(),
            group: row.group,
            refusal: row.refusal.clone(),
            bytes_ratio: checked.bytes_ratio,
            solved: row.solved,
            stars: row.stars,
            missing: checked.missing,
        };
        self.plans.push(row);
        Ok(vec![
            out(
                To::Student(student),
                ServerMsg::PlanVerdict {
                    challenge: seq,
                    verdict,
                },
            ),
            out(
                To::Teachers,
                ServerMsg::Plans {
                    room: plans::room(seq, &self.plans),
                },
            ),
        ])
    }

    /// Teacher: ends the class (the code stops working).
    pub fn end(&mut self) -> Result<Vec<Out>, Refusal> {
        self.store
            .end_class(self.class_id)
            .map_err(Refusal::internal)?;
        self.ended = true;
        Ok(vec![out(To::All, ServerMsg::ClassEnded)])
    }
}

fn no_question() -> Refusal {
    Refusal::new(
        ErrorCode::NoQuestion,
        "no question has been posed: pose one first",
    )
}

fn wrong_phase(p: Phase, why: &str) -> Refusal {
    Refusal::new(
        ErrorCode::WrongPhase,
        format!("the question is at `{}`; {why}", p.name()),
    )
}

/// Bins of equal width over `values` (the room's own range: nothing about the answer).
fn histogram(values: &[f64], lo: f64, hi: f64, n: usize) -> Vec<Bin> {
    if values.is_empty() {
        return Vec::new();
    }
    if hi <= lo {
        return vec![Bin {
            lo: Some(lo),
            hi: Some(hi),
            count: values.len() as u32,
            right: false,
        }];
    }
    let w = (hi - lo) / n as f64;
    let mut bins: Vec<Bin> = (0..n)
        .map(|i| Bin {
            lo: Some(lo + w * i as f64),
            hi: Some(if i + 1 == n {
                hi
            } else {
                lo + w * (i + 1) as f64
            }),
            count: 0,
            right: false,
        })
        .collect();
    for &v in values {
        let i = (((v - lo) / w) as usize).min(n - 1);
        bins[i].count += 1;
    }
    bins
}

/// Bins around the right value: the right bin (± tolerance) in the middle, four of its width on
/// each side, and open bins below and above.
fn around(values: &[f64], answer: f64, tolerance: f64) -> Vec<Bin> {
    let w = if tolerance > 0.0 {
        2.0 * tolerance
    } else {
        (answer.abs() * 0.1).max(1e-9)
    };
    let half = w / 2.0;
    let mut edges = Vec::with_capacity(10);
    for k in -4..=5 {
        edges.push(answer - half + w * k as f64);
    }
    // edges[4]..edges[5] is the right bin.
    let mut bins = Vec::with_capacity(11);
    bins.push(Bin {
        lo: None,
        hi: Some(edges[0]),
        count: 0,
        right: false,
    });
    for i in 0..9 {
        bins.push(Bin {
            lo: Some(edges[i]),
            hi: Some(edges[i + 1]),
            count: 0,
            right: i == 4,
        });
    }
    bins.push(Bin {
        lo: Some(edges[9]),
        hi: None,
        count: 0,
        right: false,
    });
    for &v in values {
        let i = if (v - answer).abs() <= tolerance {
            5
        } else if v < edges[0] {
            0
        } else if v >= edges[9] {
            10
        } else {
            (((v - edges[0]) / w) as usize).min(8) + 1
        };
        bins[i].count += 1;
    }
    bins
}

fn values(m: &BTreeMap<u32, VoteValue>) -> Vec<f64> {
    m.values()
        .filter_map(|v| match v {
            VoteValue::Numeric { value } => Some(*value),
            VoteValue::Choice { .. } => None,
        })
        .collect()
}

fn counts(m: &BTreeMap<u32, VoteValue>, n: usize) -> Vec<u32> {
    let mut c = vec![0u32; n];
    for v in m.values() {
        if let VoteValue::Choice { choice } = v {
            if let Some(x) = c.get_mut(*choice as usize) {
                *x += 1;
            }
        }
    }
    c
}

/// A round's distribution, and in round 2 the first beside it and the moves.
fn distributions(q: &Question, round: Round) -> (Dist, Option<Dist>, Option<Vec<Vec<u32>>>) {
    match &q.spec.kind {
        QuestionKind::Choice { choices, .. } => {
            let n = choices.len();
            let dist = Dist::Choice {
                counts: counts(&q.votes[round.index()], n),
            };
            if round == Round::First {
                return (dist, None, None);
            }
            let mut moves = vec![vec![0u32; n]; n];
            for (s, a) in &q.votes[0] {
                if let (VoteValue::Choice { choice: a }, Some(VoteValue::Choice { choice: b })) =
                    (a, q.votes[1].get(s))
                {
                    if let Some(x) = moves
                        .get_mut(*a as usize)
                        .and_then(|r| r.get_mut(*b as usize))
                    {
                        *x += 1;
                    }
                }
            }
            let first = Dist::Choice {
                counts: counts(&q.votes[0], n),
            };
            (dist, Some(first), Some(moves))
        }
        QuestionKind::Numeric { .. } => {
            // Both rounds on the same bins, spanning every vote of both.
            let a = values(&q.votes[0]);
            let b = values(&q.votes[1]);
            let all: Vec<f64> = if round == Round::First {
                a.clone()
            } else {
                a.iter().chain(&b).copied().collect()
            };
            let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mine = if round == Round::First { &a } else { &b };
            let dist = Dist::Histogram {
                bins: histogram(mine, lo, hi, 10),
            };
            if round == Round::First {
                (dist, None, None)
            } else {
                (
                    dist,
                    Some(Dist::Histogram {
                        bins: histogram(&a, lo, hi, 10),
                    }),
                    None,
                )
            }
        }
    }
}

fn is_right(kind: &QuestionKind, v: &VoteValue) -> bool {
    match (kind, v) {
        (QuestionKind::Choice { answer, .. }, VoteValue::Choice { choice }) => choice == answer,
        (
            QuestionKind::Numeric {
                answer, tolerance, ..
            },
            VoteValue::Numeric { value },
        ) => (value - answer).abs() <= *tolerance,
        _ => false,
    }
}

/// Whether a vote is right (exports use it).
pub fn vote_is_right(spec: &QuestionSpec, v: &VoteValue) -> bool {
    is_right(&spec.kind, v)
}

fn answer_and_summary(q: &Question) -> (AnswerView, Summary) {
    let kind = &q.spec.kind;
    let answer = match kind {
        QuestionKind::Choice { answer, .. } => AnswerView::Choice {
            answer: *answer,
            letter: LETTERS[(*answer as usize).min(MAX_CHOICES - 1)].into(),
        },
        QuestionKind::Numeric {
            answer,
            tolerance,
            unit,
        } => AnswerView::Numeric {
            answer: *answer,
            tolerance: *tolerance,
            unit: unit.clone(),
        },
    };
    let right = |m: &BTreeMap<u32, VoteValue>| m.values().filter(|v| is_right(kind, v)).count();
    let mut s = Summary {
        right_first: right(&q.votes[0]) as u32,
        voted_first: q.votes[0].len() as u32,
        right_second: right(&q.votes[1]) as u32,
        voted_second: q.votes[1].len() as u32,
        wrong_to_right: 0,
        right_to_wrong: 0,
        stayed_right: 0,
        stayed_wrong: 0,
        around_first: None,
        around_second: None,
    };
    for (student, a) in &q.votes[0] {
        if let Some(b) = q.votes[1].get(student) {
            match (is_right(kind, a), is_right(kind, b)) {
                (false, true) => s.wrong_to_right += 1,
                (true, false) => s.right_to_wrong += 1,
                (true, true) => s.stayed_right += 1,
                (false, false) => s.stayed_wrong += 1,
            }
        }
    }
    if let QuestionKind::Numeric {
        answer, tolerance, ..
    } = kind
    {
        s.around_first = Some(around(&values(&q.votes[0]), *answer, *tolerance));
        if !q.votes[1].is_empty() {
            s.around_second = Some(around(&values(&q.votes[1]), *answer, *tolerance));
        }
    }
    (answer, s)
}

#[cfg(test)]
mod tests;
