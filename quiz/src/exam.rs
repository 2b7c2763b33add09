//! The certificate exam: a fixed, versioned list of questions with a pass mark.

use crate::bank::{Bank, Question};
use crate::generate;
use serde::Deserialize;
use tplab_lessons::{Diagnostic, Diagnostics};

/// The exam definition compiled into the binary.
pub const EMBEDDED: (&str, &str) = ("exam.toml", include_str!("../banks/exam.toml"));

/// The fixed exam.
#[derive(Debug, Clone, PartialEq)]
pub struct Exam {
    /// Named on certificates, e.g. `exam-v1`.
    pub version: String,
    /// Pass mark in percent.
    pub pass_percent: f64,
    pub questions: Vec<Question>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExam {
    version: String,
    pass_percent: f64,
    questions: Vec<toml::Spanned<String>>,
}

/// The outcome of one sitting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExamScore {
    pub correct: usize,
    pub total: usize,
    pub score_percent: f64,
    pub passed: bool,
}

impl Exam {
    /// The shipped exam, drawn from the shipped banks.
    pub fn embedded(bank: &Bank) -> Result<Self, Diagnostics> {
        Self::from_text(EMBEDDED.0, EMBEDDED.1, bank)
    }

    /// Parses an exam file; every id must be a bank question or a `gen:<kind>:<seed>` id.
    pub fn from_text(file: &str, text: &str, bank: &Bank) -> Result<Self, Diagnostics> {
        let mut diags = Diagnostics::default();
        let raw: RawExam = toml::from_str(text).map_err(|e| {
            let mut d = Diagnostics::default();
            d.push(Diagnostic::from_toml(file, text, &e));
            d
        })?;
        if !(raw.pass_percent > 0.0 && raw.pass_percent <= 100.0) {
            diags.push(Diagnostic::new(
                file,
                None,
                "pass_percent must be in (0, 100]",
            ));
        }
        if raw.version.trim().is_empty() {
            diags.push(Diagnostic::new(file, None, "version must not be empty"));
        }
        let mut questions = Vec::new();
        for id in &raw.questions {
            let q = bank
                .get(id.get_ref())
                .cloned()
                .or_else(|| generate::from_id(id.get_ref()));
            match q {
                Some(q) => questions.push(q),
                None => diags.push(Diagnostic::at(
                    file,
                    text,
                    id.span().start,
                    format!(
                        "exam question '{}' is neither in a bank nor a generated id (gen:<kind>:<seed>)",
                        id.get_ref()
                    ),
                )),
            }
        }
        if questions.is_empty() {
            diags.push(Diagnostic::new(file, None, "the exam lists no questions"));
        }
        if !diags.is_empty() {
            return Err(diags);
        }
        Ok(Self {
            version: raw.version,
            pass_percent: raw.pass_percent,
            questions,
        })
    }

    /// Scores `correct` right answers out of this exam's questions.
    pub fn score(&self, correct: usize) -> ExamScore {
        let total = self.questions.len();
        let score_percent = crate::grade::score_percent(correct.min(total), total);
        ExamScore {
            correct: correct.min(total),
            total,
            score_percent,
            // Compare in integer hundredths so that 16/20 = 80% passes an 80% mark exactly.
            passed: total > 0
                && correct * 10_000 >= (self.pass_percent * 100.0).round() as usize * total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_exam_loads_and_covers_kinds() {
        let bank = Bank::embedded().unwrap();
        let exam = Exam::embedded(&bank).unwrap();
        assert_eq!(exam.version, "exam-v1");
        assert_eq!(exam.pass_percent, 80.0);
        assert_eq!(exam.questions.len(), 20);
        assert_eq!(
            exam.questions
                .iter()
                .filter(|q| q.id.starts_with("faq-"))
                .count(),
            6
        );
        assert!(exam.questions.iter().any(|q| q.id.starts_with("gen:")));
    }

    #[test]
    fn pass_mark_is_inclusive() {
        let bank = Bank::embedded().unwrap();
        let exam = Exam::embedded(&bank).unwrap();
        let s = exam.score(16);
        assert_eq!((s.score_percent, s.passed), (80.0, true));
        let s = exam.score(15);
        assert_eq!((s.score_percent, s.passed), (75.0, false));
        assert!(exam.score(20).passed);
        assert!(!exam.score(0).passed);
    }

    #[test]
    fn unknown_exam_question_names_the_line() {
        let bank = Bank::embedded().unwrap();
        let text = "version = \"x\"\npass_percent = 80\nquestions = [\n  \"faq-what-is-tp\",\n  \"nope\",\n]\n";
        let d = Exam::from_text("exam.toml", text, &bank).unwrap_err();
        assert_eq!(d.0[0].line, Some(5), "{d}");
    }
}
