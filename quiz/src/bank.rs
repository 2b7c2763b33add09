//! Question banks: TOML data files, each question in English and Turkish.
//!
//! ```toml
//! [[question]]
//! id = "ring-steps"
//! kind = "numeric"            # single | multiple | numeric | ordering
//! lesson = "all-reduce"       # optional: the lesson it checks
//! prompt = { en = "...", tr = "..." }
//! answer = 14                 # numeric: answer, tolerance (absolute), unit
//! tolerance = 0
//! explanation = { en = "...", tr = "..." }
//! show_me = { view = "collectives", tp = 4 }
//! ```
//! Choice questions list `choices = [{ en, tr, correct = true }, ...]`; every choice may carry
//! `feedback = { en = "...", tr = "..." }`, shown when a learner picks it wrongly (a distractor:
//! why it fails) or misses it (a right choice of a multiple-choice question: why it holds).
//! Ordering questions list `items` in the correct order (they are shown shuffled).

use serde::Deserialize;
use std::collections::BTreeSet;
use toml::Spanned;
use tplab_lessons::{Catalog, Diagnostic, Diagnostics, Lang, Localized, ShowMe};

/// The banks compiled into the binary: `(file name, text)`.
pub const EMBEDDED: [(&str, &str); 2] = [
    ("faq.toml", include_str!("../banks/faq.toml")),
    ("concepts.toml", include_str!("../banks/concepts.toml")),
];

/// What is asked and what counts as right.
#[derive(Debug, Clone, PartialEq)]
pub enum QuestionKind {
    /// Exactly one right choice.
    Single {
        choices: Vec<Localized>,
        correct: usize,
    },
    /// One or more right choices; the answer must name exactly those.
    Multiple {
        choices: Vec<Localized>,
        correct: BTreeSet<usize>,
    },
    /// A number within `tolerance` (absolute) of `answer`.
    Numeric {
        answer: f64,
        tolerance: f64,
        unit: Option<Localized>,
    },
    /// `items` are in the correct order; they are shown shuffled.
    Ordering { items: Vec<Localized> },
}

impl QuestionKind {
    pub fn name(&self) -> &'static str {
        match self {
            QuestionKind::Single { .. } => "single",
            QuestionKind::Multiple { .. } => "multiple",
            QuestionKind::Numeric { .. } => "numeric",
            QuestionKind::Ordering { .. } => "ordering",
        }
    }
}

/// One question in every language.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub id: String,
    pub prompt: Localized,
    pub kind: QuestionKind,
    /// Shown after every answer, right or wrong.
    pub explanation: Localized,
    /// The lesson it checks, by slug.
    pub lesson: Option<String>,
    pub show_me: Option<ShowMe>,
    /// Per-choice feedback, index-aligned with the choices of a single- or multiple-choice
    /// question (empty for other kinds): why a distractor fails, or why a right choice holds.
    pub choice_feedback: Vec<Option<Localized>>,
}

impl Question {
    pub fn prompt(&self, lang: Lang) -> &str {
        self.prompt.get(lang)
    }
    pub fn explanation(&self, lang: Lang) -> &str {
        self.explanation.get(lang)
    }
    /// The feedback of choice `idx` (the question's own index, not the displayed letter), or
    /// `None` when the choice has none or the question has no such choice.
    pub fn choice_feedback(&self, idx: usize, lang: Lang) -> Option<&str> {
        self.choice_feedback
            .get(idx)
            .and_then(Option::as_ref)
            .map(|f| f.get(lang))
    }
    /// The choices of a single- or multiple-choice question (empty for other kinds).
    pub fn choices(&self) -> &[Localized] {
        match &self.kind {
            QuestionKind::Single { choices, .. } | QuestionKind::Multiple { choices, .. } => {
                choices
            }
            _ => &[],
        }
    }
    /// Whether choice `idx` is a right one.
    pub fn is_correct_choice(&self, idx: usize) -> bool {
        match &self.kind {
            QuestionKind::Single { correct, .. } => *correct == idx,
            QuestionKind::Multiple { correct, .. } => correct.contains(&idx),
            _ => false,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBank {
    #[serde(default)]
    question: Vec<Spanned<RawQuestion>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChoice {
    en: String,
    tr: String,
    #[serde(default)]
    correct: bool,
    #[serde(default)]
    feedback: Option<Localized>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuestion {
    id: String,
    kind: String,
    prompt: Localized,
    explanation: Localized,
    #[serde(default)]
    lesson: Option<String>,
    #[serde(default)]
    show_me: Option<ShowMe>,
    #[serde(default)]
    choices: Option<Vec<RawChoice>>,
    #[serde(default)]
    answer: Option<f64>,
    #[serde(default)]
    tolerance: Option<f64>,
    #[serde(default)]
    unit: Option<Localized>,
    #[serde(default)]
    items: Option<Vec<Localized>>,
}

/// Questions from one or more bank files.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bank {
    pub questions: Vec<Question>,
}

impl Bank {
    /// The banks compiled into the binary, checked against the embedded lessons.
    pub fn embedded() -> Result<Self, Diagnostics> {
        let catalog = Catalog::embedded().ok();
        Self::from_files(EMBEDDED, catalog.as_ref())
    }

    /// Parses and checks bank files: TOML syntax, both languages present, kind-specific rules
    /// (single choice: exactly one right answer; multiple: at least one; numeric: finite answer,
    /// tolerance ≥ 0; ordering: at least 2 items), unique ids, valid "Show me" targets, and — when
    /// `catalog` is given — that `lesson` names an existing lesson.
    pub fn from_files<'a>(
        files: impl IntoIterator<Item = (&'a str, &'a str)>,
        catalog: Option<&Catalog>,
    ) -> Result<Self, Diagnostics> {
        let mut diags = Diagnostics::default();
        let mut questions = Vec::new();
        let mut ids = BTreeSet::new();
        for (file, text) in files {
            let raw: RawBank = match toml::from_str(text) {
                Ok(r) => r,
                Err(e) => {
                    diags.push(Diagnostic::from_toml(file, text, &e));
                    continue;
                }
            };
            for sq in raw.question {
                let offset = sq.span().start;
                let mut err = |msg: String| diags.push(Diagnostic::at(file, text, offset, msg));
                let rq = sq.into_inner();
                if !ids.insert(rq.id.clone()) {
                    err(format!("question id '{}' is used twice", rq.id));
                }
                match convert(rq, catalog) {
                    Ok(q) => questions.push(q),
                    Err(msgs) => msgs.into_iter().for_each(&mut err),
                }
            }
        }
        if diags.is_empty() {
            Ok(Self { questions })
        } else {
            Err(diags)
        }
    }

    pub fn get(&self, id: &str) -> Option<&Question> {
        self.questions.iter().find(|q| q.id == id)
    }
}

fn convert(rq: RawQuestion, catalog: Option<&Catalog>) -> Result<Question, Vec<String>> {
    let id = rq.id.clone();
    let mut errs = Vec::new();
    let mut need_both = |what: &str, l: &Localized| {
        for lang in l.missing() {
            errs.push(format!("question '{id}': {what} has no {lang} text"));
        }
    };
    need_both("prompt", &rq.prompt);
    need_both("explanation", &rq.explanation);
    if let Some(u) = &rq.unit {
        need_both("unit", u);
    }
    let unused = |field: &str, present: bool, errs: &mut Vec<String>| {
        if present {
            errs.push(format!(
                "question '{id}': `{field}` does not apply to kind = \"{}\"; remove it",
                rq.kind
            ));
        }
    };
    let mut choice_feedback = Vec::new();
    let kind = match rq.kind.as_str() {
        "single" | "multiple" => {
            unused("answer", rq.answer.is_some(), &mut errs);
            unused("tolerance", rq.tolerance.is_some(), &mut errs);
            unused("items", rq.items.is_some(), &mut errs);
            let raw = rq.choices.unwrap_or_default();
            if raw.len() < 2 {
                errs.push(format!(
                    "question '{id}': a choice question needs at least 2 `choices`"
                ));
            }
            let mut choices = Vec::new();
            let mut correct = BTreeSet::new();
            for (i, c) in raw.into_iter().enumerate() {
                let l = Localized::new(c.en, c.tr);
                for lang in l.missing() {
                    errs.push(format!(
                        "question '{id}': choice {} has no {lang} text",
                        i + 1
                    ));
                }
                if let Some(f) = &c.feedback {
                    for lang in f.missing() {
                        errs.push(format!(
                            "question '{id}': choice {}'s feedback has no {lang} text",
                            i + 1
                        ));
                    }
                }
                if c.correct {
                    correct.insert(i);
                }
                choices.push(l);
                choice_feedback.push(c.feedback);
            }
            if rq.kind == "single" {
                if correct.len() != 1 {
                    errs.push(format!(
                        "question '{id}': a single-choice question needs exactly one choice with \
                         `correct = true` (found {}); use kind = \"multiple\" for several",
                        correct.len()
                    ));
                }
                QuestionKind::Single {
                    choices,
                    correct: correct.first().copied().unwrap_or(0),
                }
            } else {
                if correct.is_empty() {
                    errs.push(format!(
                        "question '{id}': a multiple-choice question needs at least one choice \
                         with `correct = true`"
                    ));
                }
                QuestionKind::Multiple { choices, correct }
            }
        }
        "numeric" => {
            unused("choices", rq.choices.is_some(), &mut errs);
            unused("items", rq.items.is_some(), &mut errs);
            let answer = rq.answer.unwrap_or(f64::NAN);
            if !answer.is_finite() {
                errs.push(format!(
                    "question '{id}': a numeric question needs a finite `answer`"
                ));
            }
            let tolerance = rq.tolerance.unwrap_or(0.0);
            if !(tolerance >= 0.0 && tolerance.is_finite()) {
                errs.push(format!(
                    "question '{id}': `tolerance` must be a finite number ≥ 0 (absolute)"
                ));
            }
            QuestionKind::Numeric {
                answer,
                tolerance,
                unit: rq.unit,
            }
        }
        "ordering" => {
            unused("choices", rq.choices.is_some(), &mut errs);
            unused("answer", rq.answer.is_some(), &mut errs);
            let items = rq.items.unwrap_or_default();
            if items.len() < 2 {
                errs.push(format!(
                    "question '{id}': an ordering question needs at least 2 `items`, listed in the correct order"
                ));
            }
            for (i, it) in items.iter().enumerate() {
                for lang in it.missing() {
                    errs.push(format!(
                        "question '{id}': item {} has no {lang} text",
                        i + 1
                    ));
                }
            }
            QuestionKind::Ordering { items }
        }
        other => {
            errs.push(format!(
                "question '{id}': unknown kind '{other}'; expected single, multiple, numeric or ordering"
            ));
            QuestionKind::Ordering { items: Vec::new() }
        }
    };
    if let Some(t) = &rq.show_me {
        if let Err(e) = t.validate() {
            errs.push(format!("question '{id}': {e}"));
        }
    }
    if let (Some(slug), Some(cat)) = (&rq.lesson, catalog) {
        if cat.get(slug).is_none() {
            errs.push(format!(
                "question '{id}': lesson '{slug}' does not exist; use a slug from lessons/content/index.toml"
            ));
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(Question {
        id: rq.id,
        prompt: rq.prompt,
        kind,
        explanation: rq.explanation,
        lesson: rq.lesson,
        show_me: rq.show_me,
        choice_feedback,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_banks_are_valid_and_complete() {
        let bank = match Bank::embedded() {
            Ok(b) => b,
            Err(d) => panic!("shipped banks have problems:\n{d}"),
        };
        let faq: Vec<_> = bank
            .questions
            .iter()
            .filter(|q| q.id.starts_with("faq-"))
            .collect();
        assert_eq!(faq.len(), 6, "the guide's six FAQ questions");
        let others = bank.questions.len() - faq.len();
        assert!(others >= 24, "{others} hand-written questions");
        for kind in ["single", "multiple", "numeric", "ordering"] {
            assert!(
                bank.questions.iter().any(|q| q.kind.name() == kind),
                "no {kind} question"
            );
        }
    }
}
