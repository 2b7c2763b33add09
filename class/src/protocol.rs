//! The class protocol: JSON text frames over one WebSocket (`/ws`), each an object with a
//! `"type"` field. [`ClientMsg`] is what a device sends, [`ServerMsg`] what the server answers;
//! `docs/class.md` lists every message with who may send it.
//!
//! The student-facing types hold no answer field at all ([`QuestionView`] has the prompt and the
//! choices, never the key): the only message that carries the answer is [`ServerMsg::Answer`],
//! sent when the teacher reveals it.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Bumped when a message changes meaning.
pub const PROTOCOL_VERSION: u32 = 1;
/// The largest text frame the server reads; a larger one gets [`ErrorCode::TooLarge`].
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;
/// A display name's length, in characters.
pub const MAX_NAME_CHARS: usize = 32;
/// A question's prompt, in characters.
pub const MAX_PROMPT_CHARS: usize = 2000;
/// One choice's text, in characters.
pub const MAX_CHOICE_CHARS: usize = 300;
/// Choices of one question (A to H).
pub const MAX_CHOICES: usize = 8;
/// A push target or title, in characters (the app's walkthrough target, a "Show me" target
/// with the teacher's scenario in JSON, is about 250).
pub const MAX_TARGET_CHARS: usize = 600;
/// Other languages a question may carry.
pub const MAX_TRANSLATIONS: usize = 4;
/// Sittings of the certificate exam a student may start in one class.
pub const MAX_EXAM_SITTINGS: u32 = 3;
/// Answers of one sitting, and the characters of one answer.
pub const MAX_EXAM_ANSWERS: usize = 100;
pub const MAX_EXAM_ANSWER_CHARS: usize = 300;
/// The longest timer, in seconds.
pub const MAX_TIMER_S: u32 = 3600;
/// The letters of the choices, in order.
pub const LETTERS: [&str; MAX_CHOICES] = ["A", "B", "C", "D", "E", "F", "G", "H"];

/// What a device sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ClientMsg {
    /// A student joins with the class's code; `token` (from an earlier `welcome`) restores the
    /// same student and their votes after a reconnect or a server restart.
    Join {
        code: String,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        token: Option<String>,
    },
    /// A student's vote in the current round: `choice` (0-based index) for a choice question,
    /// `value` for a numeric one. Voting again in the same round replaces the vote.
    Vote {
        question: u32,
        #[serde(default)]
        choice: Option<u32>,
        #[serde(default)]
        value: Option<f64>,
    },
    /// A student's plan for the current design-lab challenge.
    SubmitPlan { challenge: u32, plan: WirePlan },
    /// Makes this connection the teacher's console (the secret printed by `tplab class`).
    Teacher { secret: String },
    /// Teacher: asks a question (round 1 starts).
    Pose { question: QuestionSpec },
    /// Teacher: closes the current round and shows its distribution.
    Reveal,
    /// Teacher: "discuss and vote again" (round 2, same choices and letters).
    Revote {
        #[serde(default)]
        timer_s: Option<u32>,
    },
    /// Teacher: reveals the answer (after at least one distribution).
    RevealAnswer,
    /// Teacher: sends every device to a walkthrough step, quiz question or lesson.
    Push {
        target: String,
        #[serde(default)]
        title: Option<String>,
    },
    /// Teacher: sets a design-lab challenge (its stage, 1-based).
    SetChallenge { stage: u32 },
    /// Teacher: ends the class; the join code stops working.
    EndClass,
    /// Teacher: opens (or closes) the certificate exam for the room.
    OpenExam { open: bool },
    /// A student: starts a sitting of the certificate exam (the server draws its seed).
    StartExam,
    /// A student: the sitting's answers, as typed (one per question in the sitting's order;
    /// `None` unanswered) and the language they were typed in. The server grades them.
    SubmitExam {
        seed: u64,
        lang: String,
        answers: Vec<Option<String>>,
    },
    /// Anyone: keeps the connection alive; answered with `pong`.
    Ping,
}

impl ClientMsg {
    /// Whether only the teacher may send this.
    pub fn is_teacher_action(&self) -> bool {
        matches!(
            self,
            ClientMsg::Pose { .. }
                | ClientMsg::Reveal
                | ClientMsg::Revote { .. }
                | ClientMsg::RevealAnswer
                | ClientMsg::Push { .. }
                | ClientMsg::SetChallenge { .. }
                | ClientMsg::OpenExam { .. }
                | ClientMsg::EndClass
        )
    }
}

/// A question as the teacher poses it (the answer stays on the server until the reveal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionSpec {
    pub prompt: String,
    /// Where it comes from: `walkthrough:5`, `quiz:basics/3`, `lesson:…` (shown, not parsed).
    #[serde(default)]
    pub source: Option<String>,
    #[serde(flatten)]
    pub kind: QuestionKind,
    /// Seconds to vote, if the teacher sets a timer.
    #[serde(default)]
    pub timer_s: Option<u32>,
    /// The same question in other languages: each device shows its own language's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub translations: Vec<Translation>,
}

/// A question in another language: its prompt, its choices in the same order (so the letters,
/// the answer and the votes are the same whatever the language) and its unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Translation {
    /// The language's code (`en`, `tr`).
    pub lang: String,
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

/// A choice question (the answer is an index into `choices`) or a numeric one (right within
/// `tolerance`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum QuestionKind {
    Choice {
        choices: Vec<String>,
        answer: u32,
    },
    Numeric {
        answer: f64,
        #[serde(default)]
        tolerance: f64,
        #[serde(default)]
        unit: Option<String>,
    },
}

/// The two votes of a peer-instruction round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Round {
    First,
    Second,
}

impl Round {
    pub fn index(self) -> usize {
        match self {
            Round::First => 0,
            Round::Second => 1,
        }
    }
    pub fn number(self) -> u8 {
        self.index() as u8 + 1
    }
}

/// Where a question is in the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Students vote alone; the projector shows only the count.
    Voting,
    /// The first distribution is shown.
    Revealed,
    /// Discuss and vote again.
    Revoting,
    /// The second distribution is shown beside the first.
    RevealedAgain,
    /// The answer is shown.
    Answered,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Voting => "voting",
            Phase::Revealed => "revealed",
            Phase::Revoting => "revoting",
            Phase::RevealedAgain => "revealed_again",
            Phase::Answered => "answered",
        }
    }
    pub fn parse(s: &str) -> Option<Phase> {
        [
            Phase::Voting,
            Phase::Revealed,
            Phase::Revoting,
            Phase::RevealedAgain,
            Phase::Answered,
        ]
        .into_iter()
        .find(|p| p.name() == s)
    }
    /// The round being voted in, if votes are open.
    pub fn open_round(self) -> Option<Round> {
        match self {
            Phase::Voting => Some(Round::First),
            Phase::Revoting => Some(Round::Second),
            _ => None,
        }
    }
}

/// One vote's content.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum VoteValue {
    Choice { choice: u32 },
    Numeric { value: f64 },
}

/// One choice as a device shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChoiceView {
    pub letter: String,
    pub text: String,
}

/// What a question looks like on a student's device: no answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum QuestionBody {
    Choice { choices: Vec<ChoiceView> },
    Numeric { unit: Option<String> },
}

/// A question on a device (students and teacher alike).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionView {
    pub id: u32,
    pub prompt: String,
    pub source: Option<String>,
    pub body: QuestionBody,
    pub phase: Phase,
    /// Seconds left on the timer, if one runs.
    pub seconds_left: Option<u32>,
    /// The question in other languages (prompt, choices in the same order, unit).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub translations: Vec<Translation>,
}

impl QuestionView {
    /// The prompt, the choices' texts and the unit in `lang` when the question carries that
    /// language, else as posed.
    pub fn in_lang(&self, lang: &str) -> (String, Vec<String>, Option<String>) {
        let (choices, unit) = match &self.body {
            QuestionBody::Choice { choices } => {
                (choices.iter().map(|c| c.text.clone()).collect(), None)
            }
            QuestionBody::Numeric { unit } => (Vec::new(), unit.clone()),
        };
        match self.translations.iter().find(|t| t.lang == lang) {
            Some(t) => (
                t.prompt.clone(),
                if t.choices.len() == choices.len() {
                    t.choices.clone()
                } else {
                    choices
                },
                t.unit.clone().or(unit),
            ),
            None => (self.prompt.clone(), choices, unit),
        }
    }
}

/// One bin of a numeric histogram (`None`: open-ended).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bin {
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    pub count: u32,
    /// In the answer's histogram: whether the bin holds right answers.
    #[serde(default)]
    pub right: bool,
}

/// A round's answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Dist {
    /// Votes per choice, in the question's order.
    Choice { counts: Vec<u32> },
    /// Numeric votes in bins.
    Histogram { bins: Vec<Bin> },
}

/// The answer, sent only at the reveal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AnswerView {
    Choice {
        answer: u32,
        letter: String,
    },
    Numeric {
        answer: f64,
        tolerance: f64,
        unit: Option<String>,
    },
}

/// How the room did, once the answer is known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub right_first: u32,
    pub voted_first: u32,
    pub right_second: u32,
    pub voted_second: u32,
    /// Of the students who voted twice.
    pub wrong_to_right: u32,
    pub right_to_wrong: u32,
    pub stayed_right: u32,
    pub stayed_wrong: u32,
    /// Numeric questions: both rounds in bins around the right value.
    pub around_first: Option<Vec<Bin>>,
    pub around_second: Option<Vec<Bin>>,
}

/// A plan on the wire: the engine's `ShardingPlan` in the words of its TOML file (the server
/// parses it with the engine, whose messages name the rule and the fix).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WirePlan {
    pub qkv: String,
    pub out: String,
    pub fc1: String,
    pub fc2: String,
    #[serde(default)]
    pub sequence_parallel: bool,
    /// `None`: the rules place the collectives; `Some`: exactly these, by hand.
    #[serde(default)]
    pub collectives: Option<Vec<WireCollective>>,
}

/// One hand-placed collective: `after` an op (`attn.out`), of `kind` (`all-reduce`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireCollective {
    pub after: String,
    pub kind: String,
}

/// A design-lab challenge as a device shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChallengeView {
    /// The challenge's number in this class (plans name it).
    pub seq: u32,
    pub stage: u32,
    pub id: String,
    pub title: String,
    pub goal: String,
    /// The weights the student chooses (`qkv`, `out`, `fc1`, `fc2`).
    pub free: Vec<String>,
    pub start: WirePlan,
}

/// What a plan is, for the room's grouping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanGroup {
    /// Megatron-LM's split (QKV and fc1 by columns, out and fc2 by rows), accepted.
    Megatron,
    /// Accepted, sending no more than Megatron's split.
    Valid,
    /// Accepted, but sending more than Megatron's split.
    Costly,
    /// Refused by the engine's rules.
    Refused,
}

impl PlanGroup {
    pub fn name(self) -> &'static str {
        match self {
            PlanGroup::Megatron => "megatron",
            PlanGroup::Valid => "valid",
            PlanGroup::Costly => "costly",
            PlanGroup::Refused => "refused",
        }
    }
    pub fn parse(s: &str) -> Option<PlanGroup> {
        [
            PlanGroup::Megatron,
            PlanGroup::Valid,
            PlanGroup::Costly,
            PlanGroup::Refused,
        ]
        .into_iter()
        .find(|g| g.name() == s)
    }
}

/// The engine's verdict on one plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub plan_id: u32,
    pub describe: String,
    pub group: PlanGroup,
    /// The first rule the plan breaks, in the engine's words.
    pub refusal: Option<String>,
    /// Bytes sent per GPU over Megatron's (`None` when Megatron's plan sends nothing).
    pub bytes_ratio: Option<f64>,
    pub solved: bool,
    pub stars: u8,
    /// What the challenge still asks, in the engine's words.
    pub missing: Vec<String>,
}

/// How many plans fall in a group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupCount {
    pub group: PlanGroup,
    pub count: u32,
}

/// A refusal and how many of the room's plans it stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefusalCount {
    pub rule: String,
    pub count: u32,
    /// Of the plans submitted, rounded.
    pub percent: u32,
}

/// One student's latest plan, anonymous (the projector may show any).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanEntry {
    pub plan_id: u32,
    pub group: PlanGroup,
    pub describe: String,
    pub plan: WirePlan,
    pub refusal: Option<String>,
    pub solved: bool,
}

/// The room's plans for a challenge: each student's latest, grouped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanRoom {
    pub challenge: u32,
    pub submitted: u32,
    pub groups: Vec<GroupCount>,
    /// Most common first.
    pub refusals: Vec<RefusalCount>,
    pub plans: Vec<PlanEntry>,
}

impl PlanRoom {
    /// The most common refusal, in the engine's own words.
    pub fn most_common_refusal(&self) -> Option<&RefusalCount> {
        self.refusals.first()
    }
}

/// The state a teacher's console starts from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoomView {
    pub code: String,
    pub anonymous: bool,
    pub joined: u32,
    pub connected: u32,
    pub question: Option<QuestionView>,
    /// Answers in the current round.
    pub answered: u32,
    pub challenge: Option<ChallengeView>,
    pub questions_asked: u32,
}

/// Why a frame was refused: a stable code the app translates, and an English message that names
/// the rule and the fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    BadFrame,
    TooLarge,
    RateLimited,
    TooManyConnections,
    NotJoined,
    AlreadyJoined,
    BadCode,
    TooManyAttempts,
    ClassEnded,
    ClassFull,
    BadName,
    TeacherOnly,
    BadSecret,
    WrongPhase,
    NoQuestion,
    BadVote,
    TimeUp,
    BadQuestion,
    BadPlan,
    NoChallenge,
    /// The exam is closed, a sitting is not this student's, or the attempts are used up.
    BadExam,
    Idle,
    Internal,
}

impl ErrorCode {
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::BadFrame => "bad_frame",
            ErrorCode::TooLarge => "too_large",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::TooManyConnections => "too_many_connections",
            ErrorCode::NotJoined => "not_joined",
            ErrorCode::AlreadyJoined => "already_joined",
            ErrorCode::BadCode => "bad_code",
            ErrorCode::TooManyAttempts => "too_many_attempts",
            ErrorCode::ClassEnded => "class_ended",
            ErrorCode::ClassFull => "class_full",
            ErrorCode::BadName => "bad_name",
            ErrorCode::TeacherOnly => "teacher_only",
            ErrorCode::BadSecret => "bad_secret",
            ErrorCode::WrongPhase => "wrong_phase",
            ErrorCode::NoQuestion => "no_question",
            ErrorCode::BadVote => "bad_vote",
            ErrorCode::TimeUp => "time_up",
            ErrorCode::BadQuestion => "bad_question",
            ErrorCode::BadPlan => "bad_plan",
            ErrorCode::NoChallenge => "no_challenge",
            ErrorCode::BadExam => "bad_exam",
            ErrorCode::Idle => "idle",
            ErrorCode::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the server sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMsg {
    /// To a student who joined: who they are (keep `token` to reconnect), and where the class is.
    Welcome {
        protocol: u32,
        student: u32,
        token: String,
        name: String,
        anonymous: bool,
        question: Option<QuestionView>,
        /// Their votes on the current question (a reconnect restores them).
        votes: Vec<(Round, VoteValue)>,
        challenge: Option<ChallengeView>,
    },
    /// To the teacher's console after `teacher`.
    TeacherWelcome {
        protocol: u32,
        room: RoomView,
    },
    /// To everyone: a question to vote on (round 1, or round 2 with the same choices).
    Question {
        question: QuestionView,
        round: Round,
    },
    /// To the voter's devices, once the vote is committed to disk.
    VoteAck {
        question: u32,
        round: Round,
        vote: VoteValue,
    },
    /// To students: the question moved on (votes closed, or the answer is coming).
    Phase {
        question: u32,
        phase: Phase,
    },
    /// To the teacher: how many have answered (never what).
    Count {
        question: u32,
        round: Round,
        answered: u32,
        connected: u32,
        /// The student whose vote this counts (the console's roster lights them up).
        student: u32,
    },
    /// To the teacher: a round's distribution; in round 2 with the first beside it and who moved
    /// where (`moves[first][second]`, choice questions).
    Distribution {
        question: u32,
        round: Round,
        dist: Dist,
        first: Option<Dist>,
        moves: Option<Vec<Vec<u32>>>,
    },
    /// To everyone: the answer (the only message that carries it).
    Answer {
        question: u32,
        answer: AnswerView,
        summary: Summary,
    },
    /// To students: go to this step, question or challenge.
    Push {
        target: String,
        title: Option<String>,
    },
    /// To everyone: the design-lab challenge to work on.
    Challenge {
        challenge: ChallengeView,
    },
    /// To the student who submitted: the engine's verdict.
    PlanVerdict {
        challenge: u32,
        verdict: Verdict,
    },
    /// To the teacher: the room's plans, grouped.
    Plans {
        room: PlanRoom,
    },
    /// To the teacher: who is here.
    Roster {
        joined: u32,
        connected: u32,
    },
    /// To everyone: the class is over (the connection closes).
    ClassEnded,
    Pong,
    /// Everyone: whether the certificate exam is open, its version, and whether a pass earns a
    /// certificate signed by the class server (the teacher's issuer key).
    Exam {
        open: bool,
        version: String,
        certificates: bool,
    },
    /// To the student who started it: the sitting's seed (the app draws the same questions
    /// from it; the server grades).
    ExamSitting {
        seed: u64,
        version: String,
    },
    /// To the student: the grade, and where to download the certificate if one was issued
    /// (`/api/certificate/…png`, or why none was).
    ExamResult {
        correct: u32,
        total: u32,
        percent: u32,
        passed: bool,
        certificate: Option<String>,
        note: Option<String>,
    },
    /// To the teacher: sittings started, submitted and passed.
    ExamRoom {
        started: u32,
        submitted: u32,
        passed: u32,
    },
    /// A refused frame: the code, and what rule it broke and how to fix it.
    Error {
        code: ErrorCode,
        message: String,
    },
}

/// Why a display name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("a name has at most {MAX_NAME_CHARS} characters; this one has {0}: shorten it")]
    TooLong(usize),
    #[error(
        "a name may not hold control, text-direction or invisible characters (U+{0:04X}): type it \
         plainly"
    )]
    Unsafe(u32),
}

/// Whether `c` is a control, text-direction or invisible formatting character.
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c as u32,
            0x00AD | 0x061C | 0x180E
            | 0x200B..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x2069
            | 0x206A..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0xE0000..=0xE007F)
}

/// A display name, trimmed and checked (empty: none given).
pub fn check_name(name: &str) -> Result<String, NameError> {
    let name = name.trim();
    if let Some(c) = name.chars().find(|&c| is_unsafe_char(c)) {
        return Err(NameError::Unsafe(c as u32));
    }
    let n = name.chars().count();
    if n > MAX_NAME_CHARS {
        return Err(NameError::TooLong(n));
    }
    Ok(name.to_string())
}

/// Text the teacher sends (prompts, choices, targets): bounded and free of control characters
/// except newlines.
pub fn check_text(what: &str, text: &str, max: usize) -> Result<(), String> {
    let n = text.chars().count();
    if n > max {
        return Err(format!(
            "{what} has {n} characters; at most {max}: shorten it"
        ));
    }
    if let Some(c) = text.chars().find(|&c| c != '\n' && is_unsafe_char(c)) {
        return Err(format!(
            "{what} holds a control, text-direction or invisible character (U+{:04X}): remove it",
            c as u32
        ));
    }
    Ok(())
}

impl QuestionSpec {
    /// Checks the other languages: at most [`MAX_TRANSLATIONS`], each a different language
    /// code of 2 or 3 lowercase letters, bounded text, and exactly the question's number of
    /// choices (none for a numeric question).
    fn check_translations(&self) -> Result<(), String> {
        if self.translations.len() > MAX_TRANSLATIONS {
            return Err(format!(
                "a question carries at most {MAX_TRANSLATIONS} other languages; this one has {}",
                self.translations.len()
            ));
        }
        let choices = match &self.kind {
            QuestionKind::Choice { choices, .. } => choices.len(),
            QuestionKind::Numeric { .. } => 0,
        };
        for (i, t) in self.translations.iter().enumerate() {
            if !(2..=3).contains(&t.lang.len()) || !t.lang.bytes().all(|b| b.is_ascii_lowercase()) {
                return Err(format!(
                    "a translation's language is a code of 2 or 3 lowercase letters (en, tr); \
                     '{}' is not",
                    t.lang.escape_debug()
                ));
            }
            if self.translations[..i].iter().any(|o| o.lang == t.lang) {
                return Err(format!("the language '{}' is given twice", t.lang));
            }
            check_text(
                &format!("the {} prompt", t.lang),
                &t.prompt,
                MAX_PROMPT_CHARS,
            )?;
            if t.prompt.trim().is_empty() {
                return Err(format!("the {} prompt is empty", t.lang));
            }
            if t.choices.len() != choices {
                return Err(format!(
                    "the {} translation has {} choices, the question {choices}: the same \
                     choices in the same order",
                    t.lang,
                    t.choices.len()
                ));
            }
            for (j, c) in t.choices.iter().enumerate() {
                check_text(
                    &format!("the {} choice {}", t.lang, LETTERS[j]),
                    c,
                    MAX_CHOICE_CHARS,
                )?;
            }
            if let Some(u) = &t.unit {
                check_text(&format!("the {} unit", t.lang), u, 40)?;
            }
        }
        Ok(())
    }

    /// Checks the teacher's question: bounded text, 2 to 8 choices, an answer among them, finite
    /// numbers, a timer of at most an hour.
    pub fn check(&self) -> Result<(), String> {
        check_text("the prompt", &self.prompt, MAX_PROMPT_CHARS)?;
        if self.prompt.trim().is_empty() {
            return Err("the prompt is empty: write the question".into());
        }
        if let Some(s) = &self.source {
            check_text("the source", s, MAX_TARGET_CHARS)?;
        }
        if let Some(t) = self.timer_s {
            check_timer(t)?;
        }
        self.check_translations()?;
        match &self.kind {
            QuestionKind::Choice { choices, answer } => {
                if choices.len() < 2 || choices.len() > MAX_CHOICES {
                    return Err(format!(
                        "a choice question has 2 to {MAX_CHOICES} choices; this one has {}",
                        choices.len()
                    ));
                }
                for (i, c) in choices.iter().enumerate() {
                    check_text(&format!("choice {}", LETTERS[i]), c, MAX_CHOICE_CHARS)?;
                }
                if *answer as usize >= choices.len() {
                    return Err(format!(
                        "the answer is choice {answer} (0-based) but there are {} choices",
                        choices.len()
                    ));
                }
            }
            QuestionKind::Numeric {
                answer,
                tolerance,
                unit,
            } => {
                if !answer.is_finite() || answer.abs() > MAX_NUMBER {
                    return Err(format!(
                        "the answer must be a finite number of at most {MAX_NUMBER:e}"
                    ));
                }
                if !tolerance.is_finite() || *tolerance < 0.0 || *tolerance > MAX_NUMBER {
                    return Err("the tolerance must be a finite number ≥ 0".into());
                }
                if let Some(u) = unit {
                    check_text("the unit", u, 40)?;
                }
            }
        }
        Ok(())
    }
}

/// The largest number a numeric vote or answer may be.
pub const MAX_NUMBER: f64 = 1e15;

/// A timer of 1 s to an hour.
pub fn check_timer(t: u32) -> Result<(), String> {
    if t == 0 || t > MAX_TIMER_S {
        return Err(format!(
            "a timer runs 1 to {MAX_TIMER_S} seconds; {t} is outside: leave it out for no timer"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_as_documented() {
        let j = r#"{"type":"join","code":"ABC123","name":"Ada"}"#;
        let m: ClientMsg = serde_json::from_str(j).expect("join parses");
        assert_eq!(
            m,
            ClientMsg::Join {
                code: "ABC123".into(),
                name: Some("Ada".into()),
                token: None
            }
        );
        let p = r#"{"type":"pose","question":{"prompt":"What does GPU 2 hold?","kind":"choice","choices":["x","y"],"answer":1}}"#;
        let m: ClientMsg = serde_json::from_str(p).expect("pose parses");
        assert!(m.is_teacher_action());
        let v = r#"{"type":"vote","question":3,"value":2.5}"#;
        assert!(matches!(
            serde_json::from_str::<ClientMsg>(v),
            Ok(ClientMsg::Vote { value: Some(_), .. })
        ));
        let e = serde_json::to_string(&ServerMsg::Error {
            code: ErrorCode::BadFrame,
            message: "x".into(),
        })
        .unwrap_or_default();
        assert_eq!(e, r#"{"type":"error","code":"bad_frame","message":"x"}"#);
    }

    #[test]
    fn names_are_bounded_and_plain() {
        assert_eq!(check_name("  Ada  ").as_deref(), Ok("Ada"));
        assert_eq!(check_name("Çağrı Öztürk").as_deref(), Ok("Çağrı Öztürk"));
        assert!(matches!(
            check_name(&"x".repeat(33)),
            Err(NameError::TooLong(33))
        ));
        assert!(check_name(&"ş".repeat(32)).is_ok());
        for bad in [
            "a\u{202E}b",
            "a\u{0007}",
            "a\u{200B}b",
            "x\u{2066}y",
            "tab\tname",
        ] {
            assert!(
                matches!(check_name(bad), Err(NameError::Unsafe(_))),
                "{bad:?} must be refused"
            );
        }
    }

    #[test]
    fn translations_keep_the_choices_and_are_checked() {
        let tr = |lang: &str, choices: &[&str]| Translation {
            lang: lang.into(),
            prompt: "Hangisi?".into(),
            choices: choices.iter().map(|c| c.to_string()).collect(),
            unit: None,
        };
        let spec = |translations| QuestionSpec {
            prompt: "Which?".into(),
            source: None,
            kind: QuestionKind::Choice {
                choices: vec!["one".into(), "two".into()],
                answer: 1,
            },
            timer_s: None,
            translations,
        };
        assert_eq!(spec(vec![tr("tr", &["bir", "iki"])]).check(), Ok(()));
        // The same choices in the same order, or the letters would mean different things.
        let e = spec(vec![tr("tr", &["bir"])]).check().unwrap_err();
        assert!(e.contains("same choices"), "{e}");
        for bad in ["TR", "t", "türk", "t\u{202e}r", ""] {
            assert!(
                spec(vec![tr(bad, &["bir", "iki"])]).check().is_err(),
                "{bad:?}"
            );
        }
        let e = spec(vec![tr("tr", &["bir", "iki"]), tr("tr", &["a", "b"])])
            .check()
            .unwrap_err();
        assert!(e.contains("twice"), "{e}");
        let many = ["de", "fr", "es", "it", "tr"]
            .iter()
            .map(|l| tr(l, &["x", "y"]))
            .collect();
        assert!(spec(many).check().is_err_and(|e| e.contains("at most")));
        let e = spec(vec![tr("tr", &["bir", "iki\u{202e}"])])
            .check()
            .unwrap_err();
        assert!(e.contains("U+202E"), "{e}");
        // A device reads its language's text, and the question as posed otherwise.
        let view = QuestionView {
            id: 1,
            prompt: "Which?".into(),
            source: None,
            body: QuestionBody::Choice {
                choices: vec![
                    ChoiceView {
                        letter: "A".into(),
                        text: "one".into(),
                    },
                    ChoiceView {
                        letter: "B".into(),
                        text: "two".into(),
                    },
                ],
            },
            phase: Phase::Voting,
            seconds_left: None,
            translations: vec![tr("tr", &["bir", "iki"])],
        };
        assert_eq!(
            view.in_lang("tr"),
            ("Hangisi?".into(), vec!["bir".into(), "iki".into()], None)
        );
        assert_eq!(
            view.in_lang("en"),
            ("Which?".into(), vec!["one".into(), "two".into()], None)
        );
    }

    #[test]
    fn questions_are_checked() {
        let q = |kind| QuestionSpec {
            prompt: "p".into(),
            source: None,
            kind,
            timer_s: None,
            translations: Vec::new(),
        };
        assert!(q(QuestionKind::Choice {
            choices: vec!["a".into(), "b".into()],
            answer: 2
        })
        .check()
        .is_err_and(|e| e.contains("answer")));
        assert!(q(QuestionKind::Choice {
            choices: vec!["a".into()],
            answer: 0
        })
        .check()
        .is_err());
        assert!(q(QuestionKind::Numeric {
            answer: f64::NAN,
            tolerance: 0.0,
            unit: None
        })
        .check()
        .is_err());
        assert!(q(QuestionKind::Numeric {
            answer: 4.0,
            tolerance: 0.5,
            unit: Some("GB".into())
        })
        .check()
        .is_ok());
        let mut t = q(QuestionKind::Numeric {
            answer: 4.0,
            tolerance: 0.0,
            unit: None,
        });
        t.timer_s = Some(0);
        assert!(t.check().is_err_and(|e| e.contains("timer")));
    }
}
