//! A live class from the app's side: the link a student or the teacher opened, the WebSocket
//! connection to the class server (`ewebsock`: a thread on the desktop, the browser's socket on
//! the web; the UI thread only polls), and the class as the server last described it.
//!
//! ```text
//!   link ──connect──▶ Opened ──join / teacher──▶ welcome ──▶ (question, count, phase, …)
//!     ▲                                                        │ closed or failed
//!     └──────────── retry after 0.5 s, 1 s, 2 s … 8 s ◀────────┘   (the server resumes the
//!                                                                   class; the token keeps
//!                                                                   the student's votes)
//! ```
//!
//! The teacher's secret is sent only by a [`Role::Teacher`] connection (and the export's
//! request); a student's connection never holds it.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use tplab_class::protocol::{
    AnswerView, ChallengeView, ClientMsg, Dist, ErrorCode, Phase, PlanRoom, QuestionKind,
    QuestionSpec, QuestionView, Round, ServerMsg, Summary, Translation, Verdict, VoteValue,
    WirePlan, MAX_CHOICES,
};
use web_time::{Duration, Instant};

/// Who this device is in the class.
#[derive(Clone, PartialEq, Eq)]
pub enum Role {
    /// A student, with the class's join code.
    Student { code: String },
    /// The teacher's console, with the secret from the teacher's link.
    Teacher { secret: String },
}

impl std::fmt::Debug for Role {
    // The secret never goes into a log or a panic message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Role::Student { code } => write!(f, "Student {{ code: {code:?} }}"),
            Role::Teacher { .. } => f.write_str("Teacher { secret: … }"),
        }
    }
}

/// What the app was opened with: the class server's address and this device's role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassLink {
    /// `http://192.168.1.20:8036` (no trailing slash): the web edition, the export.
    pub base: String,
    pub role: Role,
}

/// Why a class link cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    #[error(
        "{0:?} is not a class link: open the join address `tplab class` printed \
         (http://<address>:<port>/?class=CODE), or the teacher's link (…/#teacher=SECRET)"
    )]
    NotALink(String),
    #[error("the class link {0:?} names no class: it needs ?class=CODE (students) or #teacher=SECRET (the teacher)")]
    NoRole(String),
    #[error("the join code {0:?} is not a class code: 4 to 12 letters and digits, as `tplab class` printed it")]
    BadCode(String),
    #[error("the teacher's secret in the link is not the one `tplab class` prints (64 hex digits): copy the whole link")]
    BadSecret,
}

impl ClassLink {
    /// Reads a join address (`http://host:8036/?class=K7QX2M`) or a teacher's link
    /// (`http://host:8036/#teacher=…`); `ws://` and `https://` work too, and a missing scheme
    /// means `http://`.
    pub fn parse(url: &str) -> Result<Self, LinkError> {
        let url = url.trim();
        let (scheme, rest) = match url.split_once("://") {
            Some((s, r)) => (s.to_ascii_lowercase(), r),
            None => ("http".to_string(), url),
        };
        let scheme = match scheme.as_str() {
            "http" | "ws" => "http",
            "https" | "wss" => "https",
            _ => return Err(LinkError::NotALink(url.to_string())),
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let host = &rest[..end];
        if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c == '@') {
            return Err(LinkError::NotALink(url.to_string()));
        }
        let tail = &rest[end..];
        let (before_hash, fragment) = tail.split_once('#').unwrap_or((tail, ""));
        let query = before_hash.split_once('?').map_or("", |(_, q)| q);
        let base = format!("{scheme}://{host}");
        let param = |text: &str, key: &str| {
            text.split('&')
                .filter_map(|p| p.split_once('='))
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        };
        if let Some(secret) = param(fragment, "teacher") {
            return Self::teacher(&base, &secret);
        }
        if let Some(code) = param(query, "class") {
            return Self::student(&base, &code);
        }
        Err(LinkError::NoRole(url.to_string()))
    }

    /// A student's link to the class `code` at `base`.
    pub fn student(base: &str, code: &str) -> Result<Self, LinkError> {
        let code = code.trim().to_ascii_uppercase();
        if !(4..=12).contains(&code.len()) || !code.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(LinkError::BadCode(code));
        }
        Ok(Self {
            base: base.trim_end_matches('/').to_string(),
            role: Role::Student { code },
        })
    }

    /// The teacher's link to the class at `base`.
    pub fn teacher(base: &str, secret: &str) -> Result<Self, LinkError> {
        let secret = secret.trim();
        if secret.len() != 64 || !secret.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(LinkError::BadSecret);
        }
        Ok(Self {
            base: base.trim_end_matches('/').to_string(),
            role: Role::Teacher {
                secret: secret.to_string(),
            },
        })
    }

    /// The WebSocket's address: `ws://host:port/ws`.
    pub fn ws_url(&self) -> String {
        let rest = self
            .base
            .strip_prefix("https://")
            .map(|r| format!("wss://{r}"))
            .or_else(|| {
                self.base
                    .strip_prefix("http://")
                    .map(|r| format!("ws://{r}"))
            })
            .unwrap_or_else(|| self.base.clone());
        format!("{rest}/ws")
    }

    /// The address students open (teacher's console: shown big for the room).
    pub fn join_url(&self, code: &str) -> String {
        format!("{}/?class={code}", self.base)
    }

    pub fn is_teacher(&self) -> bool {
        matches!(self.role, Role::Teacher { .. })
    }
}

/// Where the connection is.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// Opening the socket (or waiting to retry: `attempt` counts the failures so far).
    Connecting { attempt: u32 },
    /// Joined: the server knows who this is.
    Joined,
    /// The teacher ended the class; nothing reconnects.
    Ended,
    /// The server refused to let this device in (a wrong code, a wrong secret, a bad name):
    /// nothing reconnects until the learner changes it.
    Refused { code: ErrorCode, message: String },
}

/// The current question as this device knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionState {
    pub view: QuestionView,
    /// Answers so far per round (the teacher's count; students never get it).
    pub answered: [u32; 2],
    /// This student's own votes per round (acknowledged by the server).
    pub my_votes: [Option<VoteValue>; 2],
    /// Distributions per round (the teacher's).
    pub dists: [Option<Dist>; 2],
    /// `moves[first][second]`: who moved from which choice to which (the teacher's).
    pub moves: Option<Vec<Vec<u32>>>,
    pub answer: Option<(AnswerView, Summary)>,
    /// When the round's timer runs out, on this device's clock (from the server's seconds
    /// left when the round was announced).
    pub deadline: Option<Instant>,
}

impl QuestionState {
    fn new(view: QuestionView) -> Self {
        Self {
            deadline: deadline_of(&view),
            view,
            answered: [0; 2],
            my_votes: [None; 2],
            dists: [None, None],
            moves: None,
            answer: None,
        }
    }

    /// Seconds left on the round's timer (counting down on this device), if one runs.
    pub fn seconds_left(&self) -> Option<u64> {
        self.open_round()?;
        let deadline = self.deadline?;
        Some(
            deadline
                .saturating_duration_since(Instant::now())
                .as_millis()
                .div_ceil(1000) as u64,
        )
    }

    /// Takes a new description of the question from the server (its timer with it).
    fn update(&mut self, view: QuestionView) {
        self.deadline = deadline_of(&view);
        self.view = view;
    }

    /// The round votes are open in, if any.
    pub fn open_round(&self) -> Option<Round> {
        self.view.phase.open_round()
    }
}

/// When a question's timer runs out, from the seconds left it was announced with.
fn deadline_of(view: &QuestionView) -> Option<Instant> {
    view.seconds_left
        .filter(|_| view.phase.open_round().is_some())
        .map(|s| Instant::now() + Duration::from_secs(u64::from(s)))
}

/// The class as this device last heard it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassState {
    pub status: Status,
    /// The class's join code (the teacher's welcome, or the student's link).
    pub code: Option<String>,
    /// The student's id and name, once welcomed.
    pub me: Option<(u32, String)>,
    pub anonymous: bool,
    /// Students who joined and who are connected now (the teacher's).
    pub joined: u32,
    pub connected: u32,
    pub question: Option<QuestionState>,
    pub challenge: Option<ChallengeView>,
    /// The student's latest plan's verdict, for the current challenge.
    pub verdict: Option<Verdict>,
    /// The room's plans (the teacher's).
    pub plans: Option<PlanRoom>,
    /// Where the teacher sent everyone last (`walkthrough:5`, with a title).
    pub push: Option<(String, Option<String>)>,
    /// The last refused action (not a refused join: that is [`Status::Refused`]).
    pub error: Option<(ErrorCode, String)>,
    /// The certificate exam: open or not, and whether a pass earns a signed certificate.
    pub exam: Option<ExamInfo>,
    /// The seed of the sitting the server drew for this student (its questions), until graded.
    pub exam_sitting: Option<u64>,
    /// This student's last graded sitting.
    pub exam_result: Option<ExamResult>,
    /// The teacher's counts: sittings started, submitted, passed.
    pub exam_room: Option<[u32; 3]>,
}

/// The exam as the server announced it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExamInfo {
    pub open: bool,
    pub version: String,
    /// Whether a pass earns a certificate signed by the class server.
    pub certificates: bool,
}

/// A sitting graded by the class server.
#[derive(Debug, Clone, PartialEq)]
pub struct ExamResult {
    pub correct: u32,
    pub total: u32,
    pub percent: u32,
    pub passed: bool,
    /// Where to download the certificate (`/api/certificate/….png` on the class server).
    pub certificate: Option<String>,
    /// Why no certificate came with a pass, in the server's words.
    pub note: Option<String>,
}

impl Default for ClassState {
    fn default() -> Self {
        Self {
            status: Status::Connecting { attempt: 0 },
            code: None,
            me: None,
            anonymous: false,
            joined: 0,
            connected: 0,
            question: None,
            challenge: None,
            verdict: None,
            plans: None,
            push: None,
            error: None,
            exam: None,
            exam_sitting: None,
            exam_result: None,
            exam_room: None,
        }
    }
}

impl ClassState {
    /// Applies one server message.
    pub fn apply(&mut self, msg: ServerMsg) {
        match msg {
            ServerMsg::Welcome {
                student,
                name,
                anonymous,
                question,
                votes,
                challenge,
                ..
            } => {
                self.status = Status::Joined;
                self.me = Some((student, name));
                self.anonymous = anonymous;
                self.set_question(question);
                if let Some(q) = &mut self.question {
                    for (round, vote) in votes {
                        q.my_votes[round.index()] = Some(vote);
                    }
                }
                self.set_challenge(challenge);
            }
            ServerMsg::TeacherWelcome { room, .. } => {
                self.status = Status::Joined;
                self.code = Some(room.code);
                self.anonymous = room.anonymous;
                self.joined = room.joined;
                self.connected = room.connected;
                self.set_question(room.question);
                if let Some(q) = &mut self.question {
                    let round = match q.view.phase {
                        Phase::Voting | Phase::Revealed => Round::First,
                        _ => Round::Second,
                    };
                    q.answered[round.index()] = room.answered;
                }
                self.set_challenge(room.challenge);
            }
            ServerMsg::Question { question, round } => {
                let same = self
                    .question
                    .as_ref()
                    .is_some_and(|q| q.view.id == question.id);
                if same {
                    if let Some(q) = &mut self.question {
                        q.update(question);
                        if round == Round::Second {
                            q.my_votes[1] = None;
                        }
                    }
                } else {
                    self.question = Some(QuestionState::new(question));
                }
                self.error = None;
            }
            ServerMsg::VoteAck {
                question,
                round,
                vote,
            } => {
                if let Some(q) = self.question_mut(question) {
                    q.my_votes[round.index()] = Some(vote);
                }
                self.error = None;
            }
            ServerMsg::Phase { question, phase } => {
                if let Some(q) = self.question_mut(question) {
                    q.view.phase = phase;
                    if phase.open_round().is_none() {
                        q.view.seconds_left = None;
                        q.deadline = None;
                    }
                }
            }
            ServerMsg::Count {
                question,
                round,
                answered,
                connected,
                ..
            } => {
                self.connected = connected;
                if let Some(q) = self.question_mut(question) {
                    q.answered[round.index()] = answered;
                }
            }
            ServerMsg::Distribution {
                question,
                round,
                dist,
                first,
                moves,
            } => {
                if let Some(q) = self.question_mut(question) {
                    q.view.phase = match round {
                        Round::First => Phase::Revealed,
                        Round::Second => Phase::RevealedAgain,
                    };
                    q.view.seconds_left = None;
                    q.deadline = None;
                    q.dists[round.index()] = Some(dist);
                    if let Some(f) = first {
                        q.dists[0] = Some(f);
                    }
                    if moves.is_some() {
                        q.moves = moves;
                    }
                }
            }
            ServerMsg::Answer {
                question,
                answer,
                summary,
            } => {
                if let Some(q) = self.question_mut(question) {
                    q.view.phase = Phase::Answered;
                    q.view.seconds_left = None;
                    q.deadline = None;
                    q.answer = Some((answer, summary));
                }
            }
            ServerMsg::Push { target, title } => self.push = Some((target, title)),
            ServerMsg::Challenge { challenge } => self.set_challenge(Some(challenge)),
            ServerMsg::PlanVerdict { challenge, verdict } => {
                if self.challenge.as_ref().is_some_and(|c| c.seq == challenge) {
                    self.verdict = Some(verdict);
                }
                self.error = None;
            }
            ServerMsg::Plans { room } => self.plans = Some(room),
            ServerMsg::Roster { joined, connected } => {
                self.joined = joined;
                self.connected = connected;
            }
            ServerMsg::Exam {
                open,
                version,
                certificates,
            } => {
                self.exam = Some(ExamInfo {
                    open,
                    version,
                    certificates,
                })
            }
            ServerMsg::ExamSitting { seed, .. } => {
                self.exam_sitting = Some(seed);
                self.exam_result = None;
                self.error = None;
            }
            ServerMsg::ExamResult {
                correct,
                total,
                percent,
                passed,
                certificate,
                note,
            } => {
                self.exam_sitting = None;
                self.exam_result = Some(ExamResult {
                    correct,
                    total,
                    percent,
                    passed,
                    certificate,
                    note,
                });
                self.error = None;
            }
            ServerMsg::ExamRoom {
                started,
                submitted,
                passed,
            } => self.exam_room = Some([started, submitted, passed]),
            ServerMsg::ClassEnded => self.status = Status::Ended,
            ServerMsg::Pong => {}
            ServerMsg::Error { code, message } => {
                if is_refused_entry(code) && self.status != Status::Joined {
                    self.status = Status::Refused { code, message };
                } else {
                    self.error = Some((code, message));
                }
            }
        }
    }

    fn question_mut(&mut self, id: u32) -> Option<&mut QuestionState> {
        self.question.as_mut().filter(|q| q.view.id == id)
    }

    fn set_question(&mut self, question: Option<QuestionView>) {
        match question {
            Some(view) => {
                let same = self.question.as_ref().is_some_and(|q| q.view.id == view.id);
                if same {
                    if let Some(q) = &mut self.question {
                        q.update(view);
                    }
                } else {
                    self.question = Some(QuestionState::new(view));
                }
            }
            None => self.question = None,
        }
    }

    fn set_challenge(&mut self, challenge: Option<ChallengeView>) {
        let same = match (&self.challenge, &challenge) {
            (Some(a), Some(b)) => a.seq == b.seq,
            _ => false,
        };
        if !same {
            self.verdict = None;
            self.plans = None;
        }
        self.challenge = challenge;
    }
}

/// Errors that keep a device out of the class (reconnecting would only repeat them).
fn is_refused_entry(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::BadCode
            | ErrorCode::BadSecret
            | ErrorCode::BadName
            | ErrorCode::ClassEnded
            | ErrorCode::ClassFull
            | ErrorCode::TooManyAttempts
    )
}

/// The wait before reconnect attempt `n` (from 1): 0.5 s doubling to 8 s.
pub fn retry_delay(attempt: u32) -> Duration {
    let ms = 500u64.saturating_mul(1 << attempt.saturating_sub(1).min(4));
    Duration::from_millis(ms.min(8000))
}

/// The open socket.
struct Socket {
    sender: ewebsock::WsSender,
    receiver: ewebsock::WsReceiver,
    opened: bool,
}

/// A connection to the class server that reconnects by itself; the UI thread calls
/// [`ClassClient::poll`] once a frame (it never blocks) and reads [`ClassClient::state`].
pub struct ClassClient {
    link: ClassLink,
    /// The display name a student joins with (empty: none).
    name: String,
    /// The student's token from the last welcome: a reconnect is the same student.
    token: Option<String>,
    socket: Option<Socket>,
    /// When to try again after a failure.
    retry_at: Option<Instant>,
    failures: u32,
    /// Actions asked for while not joined: sent once the server has welcomed this device.
    outbox: VecDeque<ClientMsg>,
    /// Whether the device has asked to join (a student types a name first; the teacher's
    /// console starts at once).
    started: bool,
    /// Called when a frame arrives (the app's repaint), so a waiting UI wakes up.
    wake: Option<std::sync::Arc<dyn Fn() + Send + Sync>>,
    pub state: ClassState,
    /// Where the console's exports are written (the shell's export folder).
    pub export_dir: std::path::PathBuf,
    /// Every server message, for tests that check what a device received (off by default).
    pub record: Option<Vec<ServerMsg>>,
}

impl std::fmt::Debug for ClassClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClassClient")
            .field("link", &self.link)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl ClassClient {
    /// A client for `link`; nothing connects until the first [`ClassClient::poll`] (a
    /// student's name can be set before).
    pub fn new(link: ClassLink) -> Self {
        let code = match &link.role {
            Role::Student { code } => Some(code.clone()),
            Role::Teacher { .. } => None,
        };
        let teacher = link.is_teacher();
        Self {
            link,
            name: String::new(),
            token: None,
            socket: None,
            retry_at: teacher.then(Instant::now),
            started: teacher,
            failures: 0,
            outbox: VecDeque::new(),
            wake: None,
            state: ClassState {
                code,
                ..Default::default()
            },
            export_dir: std::path::PathBuf::from("."),
            record: None,
        }
    }

    /// Wakes `ctx` whenever a frame arrives.
    pub fn wake_with(&mut self, ctx: &egui::Context) {
        let ctx = ctx.clone();
        self.wake = Some(std::sync::Arc::new(move || ctx.request_repaint()));
    }

    pub fn link(&self) -> &ClassLink {
        &self.link
    }

    pub fn is_teacher(&self) -> bool {
        self.link.is_teacher()
    }

    /// The name a student joins with.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sets the student's display name, checked as the server checks it; the next join
    /// carries it.
    pub fn set_name(&mut self, name: &str) -> Result<(), tplab_class::protocol::NameError> {
        self.name = tplab_class::protocol::check_name(name)?;
        Ok(())
    }

    /// Whether the device has asked to join.
    pub fn started(&self) -> bool {
        self.started
    }

    /// Joins now (a student's "Join"; after a refusal, tries again with what was changed).
    pub fn start(&mut self) {
        self.started = true;
        if self.socket.is_none() && self.state.status != Status::Ended {
            self.state.status = Status::Connecting {
                attempt: self.failures,
            };
            self.retry_at = Some(Instant::now());
        }
    }

    /// Whether the server has welcomed this device on the open socket.
    pub fn joined(&self) -> bool {
        self.state.status == Status::Joined && self.socket.as_ref().is_some_and(|s| s.opened)
    }

    /// Sends `msg` now if joined, else once joined (after a reconnect).
    pub fn send(&mut self, msg: ClientMsg) {
        if self.joined() {
            self.send_now(&msg);
        } else {
            // A vote asked for twice while away is one vote: keep the latest.
            if matches!(msg, ClientMsg::Vote { .. }) {
                self.outbox.retain(|m| !matches!(m, ClientMsg::Vote { .. }));
            }
            self.outbox.push_back(msg);
        }
    }

    fn send_now(&mut self, msg: &ClientMsg) {
        let Some(socket) = &mut self.socket else {
            return;
        };
        match serde_json::to_string(msg) {
            Ok(text) => socket.sender.send(ewebsock::WsMessage::Text(text)),
            Err(e) => self.state.error = Some((ErrorCode::BadFrame, e.to_string())),
        }
    }

    /// A student's vote: a choice (0-based) or a number.
    pub fn vote(&mut self, question: u32, vote: VoteValue) {
        let (choice, value) = match vote {
            VoteValue::Choice { choice } => (Some(choice), None),
            VoteValue::Numeric { value } => (None, Some(value)),
        };
        self.send(ClientMsg::Vote {
            question,
            choice,
            value,
        });
    }

    /// Handles what arrived, opens the socket when it is time and retries after a failure.
    /// Never blocks.
    pub fn poll(&mut self) {
        self.poll_at(Instant::now());
    }

    fn poll_at(&mut self, now: Instant) {
        let mut lost = None;
        let mut frames = Vec::new();
        if let Some(socket) = &mut self.socket {
            while let Some(event) = socket.receiver.try_recv() {
                match event {
                    ewebsock::WsEvent::Opened => {
                        socket.opened = true;
                        frames.push(None);
                    }
                    ewebsock::WsEvent::Message(ewebsock::WsMessage::Text(text)) => {
                        frames.push(Some(text));
                    }
                    ewebsock::WsEvent::Message(_) => {}
                    ewebsock::WsEvent::Error(e) => {
                        lost = Some(e);
                        break;
                    }
                    ewebsock::WsEvent::Closed => {
                        lost = Some("closed".to_string());
                        break;
                    }
                }
            }
        }
        for frame in frames {
            match frame {
                None => self.greet(),
                Some(text) => self.receive(&text),
            }
        }
        if lost.is_some() {
            self.socket = None;
            if matches!(
                self.state.status,
                Status::Joined | Status::Connecting { .. }
            ) {
                self.failures += 1;
                self.state.status = Status::Connecting {
                    attempt: self.failures,
                };
                self.retry_at = Some(now + retry_delay(self.failures));
            }
        }
        let may_connect = matches!(self.state.status, Status::Connecting { .. });
        if self.socket.is_none() && may_connect && self.retry_at.is_some_and(|t| now >= t) {
            self.retry_at = None;
            self.connect(now);
        }
    }

    fn connect(&mut self, now: Instant) {
        let options = ewebsock::Options {
            // The server's frames are small; a plan room of 500 students is well under this.
            max_incoming_frame_size: 4 * 1024 * 1024,
            ..Default::default()
        };
        let wake = self.wake.clone();
        let result = ewebsock::connect_with_wakeup(self.link.ws_url(), options, move || {
            if let Some(w) = &wake {
                w();
            }
        });
        match result {
            Ok((sender, receiver)) => {
                self.socket = Some(Socket {
                    sender,
                    receiver,
                    opened: false,
                })
            }
            Err(_) => {
                self.failures += 1;
                self.state.status = Status::Connecting {
                    attempt: self.failures,
                };
                self.retry_at = Some(now + retry_delay(self.failures));
            }
        }
    }

    /// The first frame on an open socket: who this is.
    fn greet(&mut self) {
        let msg = match &self.link.role {
            Role::Student { code } => ClientMsg::Join {
                code: code.clone(),
                name: (!self.name.is_empty()).then(|| self.name.clone()),
                token: self.token.clone(),
            },
            Role::Teacher { secret } => ClientMsg::Teacher {
                secret: secret.clone(),
            },
        };
        self.send_now(&msg);
    }

    fn receive(&mut self, text: &str) {
        let msg: ServerMsg = match serde_json::from_str(text) {
            Ok(m) => m,
            Err(e) => {
                self.state.error = Some((
                    ErrorCode::BadFrame,
                    format!("the server sent a frame this app cannot read ({e}): update tplab"),
                ));
                return;
            }
        };
        if let ServerMsg::Welcome { token, .. } = &msg {
            self.token = Some(token.clone());
        }
        let welcomed = matches!(
            msg,
            ServerMsg::Welcome { .. } | ServerMsg::TeacherWelcome { .. }
        );
        if let Some(r) = &mut self.record {
            r.push(msg.clone());
        }
        self.state.apply(msg);
        if welcomed {
            self.failures = 0;
            while let Some(m) = self.outbox.pop_front() {
                self.send_now(&m);
            }
        }
        // Ended, or kept out: nothing more on this socket (a refused student may fix the name
        // and join again on a fresh one).
        if matches!(self.state.status, Status::Ended | Status::Refused { .. }) {
            self.socket = None;
        }
    }

    /// Closes the socket and stops reconnecting.
    pub fn close(&mut self) {
        self.socket = None;
        self.retry_at = None;
        self.state.status = Status::Ended;
    }

    /// Drops the socket as a lost connection would (tests: the client must come back by
    /// itself).
    pub fn drop_connection(&mut self) {
        if let Some(mut s) = self.socket.take() {
            s.sender.close();
        }
        self.failures += 1;
        self.state.status = Status::Connecting {
            attempt: self.failures,
        };
        self.retry_at = Some(Instant::now());
    }

    /// The full address of a path on the class server (a certificate's download).
    pub fn url_of(&self, path: &str) -> String {
        format!("{}{path}", self.link.base)
    }

    /// The export's address and the secret to send with it (the teacher's console only).
    pub fn export_request(&self, format: &str) -> Option<(String, String)> {
        match &self.link.role {
            Role::Teacher { secret } => Some((
                format!("{}/api/export.{format}", self.link.base),
                secret.clone(),
            )),
            Role::Student { .. } => None,
        }
    }
}

/// A quiz question as the class protocol poses it: single choice and numeric questions (the
/// others have no place in a room's vote). The prompt and choices in `lang`, and in every
/// other language of the course as translations (each phone shows its own; the choices keep
/// their order, so the letters and the votes are the same).
pub fn spec_from_quiz(
    q: &tplab_quiz::bank::Question,
    lang: tplab_lessons::Lang,
) -> Option<QuestionSpec> {
    let kind = match &q.kind {
        tplab_quiz::bank::QuestionKind::Single { choices, correct } => {
            if choices.len() > MAX_CHOICES {
                return None;
            }
            QuestionKind::Choice {
                choices: choices.iter().map(|c| c.get(lang).to_string()).collect(),
                answer: u32::try_from(*correct).ok()?,
            }
        }
        tplab_quiz::bank::QuestionKind::Numeric {
            answer,
            tolerance,
            unit,
        } => QuestionKind::Numeric {
            answer: *answer,
            tolerance: *tolerance,
            unit: unit.as_ref().map(|u| u.get(lang).to_string()),
        },
        _ => return None,
    };
    let translations = tplab_lessons::Lang::ALL
        .into_iter()
        .filter(|&l| l != lang)
        .map(|l| Translation {
            lang: l.code().to_string(),
            prompt: q.prompt(l).to_string(),
            choices: match &q.kind {
                tplab_quiz::bank::QuestionKind::Single { choices, .. } => {
                    choices.iter().map(|c| c.get(l).to_string()).collect()
                }
                _ => Vec::new(),
            },
            unit: match &q.kind {
                tplab_quiz::bank::QuestionKind::Numeric { unit, .. } => {
                    unit.as_ref().map(|u| u.get(l).to_string())
                }
                _ => None,
            },
        })
        .collect();
    let spec = QuestionSpec {
        prompt: q.prompt(lang).to_string(),
        source: Some(format!("quiz:{}", q.id)),
        kind,
        timer_s: None,
        translations,
    };
    spec.check().ok().map(|()| spec)
}

/// The student's design-lab plan for a challenge: the challenge's start with the free weights
/// the student chose.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StudentPlan {
    pub qkv: String,
    pub out: String,
    pub fc1: String,
    pub fc2: String,
    /// The collectives placed by hand (`None`: the rules place them), as the challenge started
    /// them and the student changed them.
    pub manual: Option<Vec<tplab_class::protocol::WireCollective>>,
}

impl StudentPlan {
    pub fn from_wire(w: &WirePlan) -> Self {
        Self {
            qkv: w.qkv.clone(),
            out: w.out.clone(),
            fc1: w.fc1.clone(),
            fc2: w.fc2.clone(),
            manual: w.collectives.clone(),
        }
    }

    /// The weight `name`'s split (`qkv`, `out`, `fc1`, `fc2`).
    pub fn get_mut(&mut self, name: &str) -> Option<&mut String> {
        match name {
            "qkv" => Some(&mut self.qkv),
            "out" => Some(&mut self.out),
            "fc1" => Some(&mut self.fc1),
            "fc2" => Some(&mut self.fc2),
            _ => None,
        }
    }

    /// The plan to submit: `start`'s other settings with these splits and collectives.
    pub fn to_wire(&self, start: &WirePlan) -> WirePlan {
        WirePlan {
            qkv: self.qkv.clone(),
            out: self.out.clone(),
            fc1: self.fc1.clone(),
            fc2: self.fc2.clone(),
            sequence_parallel: start.sequence_parallel,
            collectives: self.manual.clone(),
        }
    }
}

/// Where the teacher sends every device ("Send everyone to this step"): a "Show me" target
/// (the view and the teacher's scenario) and, for the walkthrough, its step (from 1). Sent as
/// the `push` message's JSON target; a device that cannot read a target says so and stays.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushTarget {
    pub show: tplab_lessons::ShowMe,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<usize>,
}

impl PushTarget {
    /// The walkthrough at `step` (from 1) on the layer `config` describes, at its TP.
    pub fn walk(config: &tplab_engine::config::Config, step: usize) -> Self {
        let scenario = tplab_engine::overrides::Overrides {
            hidden: Some(config.hidden),
            heads: Some(config.heads),
            kv_heads: config.kv_heads,
            ffn: Some(config.ffn),
            seq: Some(config.seq),
            batch: Some(config.batch),
            layers: Some(config.layers),
            tp: Some(config.tp),
            sequence_parallel: Some(config.sequence_parallel),
            algorithm: Some(config.algorithm),
            seed: Some(config.seed),
            ..Default::default()
        };
        Self {
            show: tplab_lessons::ShowMe {
                view: tplab_lessons::View::Step,
                scenario,
                ..Default::default()
            },
            step: Some(step),
        }
    }

    /// The `push` message's target.
    pub fn to_target(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads a `push` target (the protocol bounds its length); the error names what is wrong.
    pub fn read(target: &str) -> Result<Self, String> {
        let p: Self = serde_json::from_str(target).map_err(|e| e.to_string())?;
        let config = p
            .show
            .scenario
            .apply(&tplab_engine::config::Config::default());
        config.validate().map_err(|e| e.to_string())?;
        Ok(p)
    }
}

/// The splits a weight may take.
pub const SPLITS: [&str; 3] = ["replicate", "columns", "rows"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timer_counts_down_to_zero_and_stops_when_the_round_closes() {
        let view = QuestionView {
            id: 1,
            prompt: "?".into(),
            source: None,
            body: tplab_class::protocol::QuestionBody::Numeric { unit: None },
            phase: Phase::Voting,
            seconds_left: Some(30),
            translations: Vec::new(),
        };
        let mut q = QuestionState::new(view.clone());
        assert!(matches!(q.seconds_left(), Some(29..=30)));
        // Run out: zero, shown as "Time is up", never negative.
        q.deadline = Some(Instant::now() - Duration::from_secs(2));
        assert_eq!(q.seconds_left(), Some(0));
        // Closed: no clock, whatever the deadline.
        q.view.phase = Phase::Revealed;
        assert_eq!(q.seconds_left(), None);
        // No timer: no clock.
        let q = QuestionState::new(QuestionView {
            seconds_left: None,
            ..view
        });
        assert_eq!(q.seconds_left(), None);
    }

    #[test]
    fn links_name_the_server_and_the_role() {
        let l = ClassLink::parse("http://192.168.1.20:8036/?class=k7qx2m").expect("join link");
        assert_eq!(l.base, "http://192.168.1.20:8036");
        assert_eq!(
            l.role,
            Role::Student {
                code: "K7QX2M".into()
            }
        );
        assert_eq!(l.ws_url(), "ws://192.168.1.20:8036/ws");
        let secret = "ab".repeat(32);
        let t = ClassLink::parse(&format!("https://host:9/#teacher={secret}")).expect("teacher");
        assert!(t.is_teacher());
        assert_eq!(t.ws_url(), "wss://host:9/ws");
        assert!(
            !format!("{t:?}").contains(&secret),
            "the secret stays out of logs"
        );
        let l = ClassLink::parse("10.0.0.5:8036?class=ABCDEF").expect("no scheme");
        assert_eq!(l.ws_url(), "ws://10.0.0.5:8036/ws");
        assert!(matches!(
            ClassLink::parse("http://h:1/"),
            Err(LinkError::NoRole(_))
        ));
        assert!(matches!(
            ClassLink::parse("ftp://h/?class=ABCDEF"),
            Err(LinkError::NotALink(_))
        ));
        assert!(matches!(
            ClassLink::parse("http://h/?class=AB<>"),
            Err(LinkError::BadCode(_))
        ));
        assert!(matches!(
            ClassLink::parse("http://h/#teacher=short"),
            Err(LinkError::BadSecret)
        ));
    }

    #[test]
    fn retries_back_off_to_eight_seconds() {
        assert_eq!(retry_delay(1), Duration::from_millis(500));
        assert_eq!(retry_delay(2), Duration::from_secs(1));
        assert_eq!(retry_delay(5), Duration::from_secs(8));
        assert_eq!(retry_delay(50), Duration::from_secs(8));
    }

    #[test]
    fn a_refused_join_stops_and_a_refused_vote_does_not() {
        let mut s = ClassState::default();
        s.apply(ServerMsg::Error {
            code: ErrorCode::BadCode,
            message: "no such class".into(),
        });
        assert!(matches!(s.status, Status::Refused { .. }));
        let mut s = ClassState {
            status: Status::Joined,
            ..Default::default()
        };
        s.apply(ServerMsg::Error {
            code: ErrorCode::WrongPhase,
            message: "closed".into(),
        });
        assert_eq!(s.status, Status::Joined);
        assert!(s.error.is_some());
    }

    #[test]
    fn every_single_choice_and_numeric_quiz_question_can_be_posed() {
        let bank = tplab_quiz::bank::Bank::embedded().expect("the bank");
        let mut posed = 0;
        for q in &bank.questions {
            let fits = matches!(
                q.kind,
                tplab_quiz::bank::QuestionKind::Single { .. }
                    | tplab_quiz::bank::QuestionKind::Numeric { .. }
            );
            let spec = spec_from_quiz(q, tplab_lessons::Lang::Tr);
            assert_eq!(spec.is_some(), fits, "{}", q.id);
            posed += usize::from(spec.is_some());
        }
        assert!(posed > 10, "{posed}");
    }
}
