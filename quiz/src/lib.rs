//! tplab-quiz: question banks, generated questions, scoring, the exam, saved progress and
//! certificates.
//!
//! Banks are TOML files in `quiz/banks/` compiled into the binary; every question is in English
//! and Turkish with an explanation shown after each answer. [`generate`] makes fresh questions
//! whose answers the engine computes. [`exam`] draws every sitting afresh from a versioned pool
//! (bank and generated questions) and scores it against a pass mark after submission.
//! [`progress::Store`] saves answers atomically per learner under a file lock; [`cert`] issues
//! Ed25519-signed certificates and verifies them, picture included.
//!
//! Parsers of untrusted bytes, which never panic: [`cert::parse`], [`cert::check`] and
//! [`progress::parse`].

pub mod badge;
pub mod bank;
pub mod cert;
pub mod coverage;
pub mod exam;
pub mod generate;
pub mod grade;
pub mod progress;
mod time;

pub use bank::{Bank, Question, QuestionKind};
pub use grade::{Grade, Presentation, Response, ResponseError};
pub use time::{civil_date, unix_now_s};
pub use tplab_lessons::{Diagnostic, Diagnostics, Lang, Localized};

/// A practice set: the bank's questions (only `lesson`'s if given) plus one generated question
/// of each kind, shuffled with `seed`, at most `count`. Errors when the lesson has no questions.
pub fn practice_set(
    bank: &Bank,
    lesson: Option<&str>,
    count: usize,
    seed: u64,
) -> Result<Vec<Question>, String> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let wanted = |q: &Question| lesson.is_none_or(|l| q.lesson.as_deref() == Some(l));
    let mut pool: Vec<Question> = bank
        .questions
        .iter()
        .filter(|q| wanted(q))
        .cloned()
        .collect();
    for (k, kind) in generate::GenKind::ALL.into_iter().enumerate() {
        let q = generate::generate(kind, seed.wrapping_add(k as u64));
        if wanted(&q) {
            pool.push(q);
        }
    }
    if pool.is_empty() {
        return Err(format!(
            "no questions for lesson '{}'; see `tplab lessons list` for the lesson slugs",
            lesson.unwrap_or_default()
        ));
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    pool.shuffle(&mut rng);
    pool.truncate(count.max(1));
    Ok(pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn practice_sets_are_reproducible_and_filtered() {
        let bank = Bank::embedded().unwrap();
        let a = practice_set(&bank, None, 10, 3).unwrap();
        assert_eq!(a.len(), 10);
        assert_eq!(a, practice_set(&bank, None, 10, 3).unwrap());
        let ar = practice_set(&bank, Some("all-reduce"), 100, 3).unwrap();
        assert!(ar.iter().all(|q| q.lesson.as_deref() == Some("all-reduce")));
        assert!(ar.iter().any(|q| q.id.starts_with("gen:ring-bytes")));
        assert!(practice_set(&bank, Some("nope"), 5, 1).is_err());
    }
}
