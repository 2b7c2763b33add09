//! How many questions check each lesson: the bank questions that name it, and the generated
//! kinds whose questions name it (issue 37: every lesson gets at least two).

use crate::bank::Bank;
use crate::generate::{self, GenKind};
use std::collections::BTreeSet;
use tplab_lessons::Catalog;

/// The fewest questions (bank questions plus generated kinds) a lesson may have.
pub const MIN_PER_LESSON: usize = 2;

/// The questions of one lesson.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LessonCount {
    pub order: u32,
    pub slug: String,
    /// Bank questions naming the lesson.
    pub bank: usize,
    /// Generated kinds with questions naming the lesson (a kind counts once per lesson; the
    /// design-lab kind names the lesson of the layer it asks about).
    pub generated: Vec<GenKind>,
}

impl LessonCount {
    pub fn total(&self) -> usize {
        self.bank + self.generated.len()
    }
}

/// Seeds sampled to find which lessons a generated kind's questions name.
const SEEDS: u64 = 64;

/// Every lesson of `catalog` in order, with its questions in `bank` and in the generator.
pub fn questions_per_lesson(bank: &Bank, catalog: &Catalog) -> Vec<LessonCount> {
    let kinds: Vec<(GenKind, BTreeSet<String>)> = GenKind::ALL
        .into_iter()
        .map(|k| {
            let lessons = (0..SEEDS)
                .filter_map(|s| generate::generate(k, s).lesson)
                .collect();
            (k, lessons)
        })
        .collect();
    catalog
        .lessons
        .iter()
        .map(|l| LessonCount {
            order: l.order,
            slug: l.slug.clone(),
            bank: bank
                .questions
                .iter()
                .filter(|q| q.lesson.as_deref() == Some(l.slug.as_str()))
                .count(),
            generated: kinds
                .iter()
                .filter(|(_, ls)| ls.contains(&l.slug))
                .map(|(k, _)| *k)
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_lesson_has_at_least_two_questions() {
        let cat = Catalog::embedded().expect("lessons load");
        let bank = Bank::embedded().expect("banks load");
        let counts = questions_per_lesson(&bank, &cat);
        assert_eq!(counts.len(), cat.lessons.len());
        let few: Vec<String> = counts
            .iter()
            .filter(|c| c.total() < MIN_PER_LESSON)
            .map(|c| format!("{} {}: {}", c.order, c.slug, c.total()))
            .collect();
        assert!(
            few.is_empty(),
            "lessons with fewer than two questions: {few:?}"
        );
        // The lessons the third reading found without questions now have bank questions.
        for slug in [
            "vocab-parallel",
            "pipeline-and-experts",
            "notation",
            "overlap",
        ] {
            let c = counts
                .iter()
                .find(|c| c.slug == slug)
                .expect("lesson exists");
            assert!(c.bank >= 2, "{slug}: {} bank questions", c.bank);
        }
    }

    #[test]
    fn a_lesson_without_questions_counts_zero() {
        let cat = Catalog::embedded().expect("lessons load");
        let empty = Bank {
            questions: Vec::new(),
        };
        let counts = questions_per_lesson(&empty, &cat);
        let vocab = counts
            .iter()
            .find(|c| c.slug == "vocab-parallel")
            .expect("lesson");
        assert_eq!(vocab.total(), 0, "no generated kind asks about lesson 10");
        let ring = counts
            .iter()
            .find(|c| c.slug == "all-reduce")
            .expect("lesson");
        assert_eq!(ring.bank, 0);
        assert!(ring.generated.contains(&GenKind::RingBytes));
    }
}
