//! The certificate exam: a versioned pool of questions, a fresh draw at every sitting, a pass mark.
//!
//! A sitting draws `length` questions with its own seed: `length - generated` bank questions
//! (every bank question but `exclude` and but the numeric ones, whose numbers are fixed; one of
//! each `at_least_one_of` group, then one per lesson, lessons in a shuffled order) and
//! `generated` generated ones (the practical part, a design lab split, in every sitting; every
//! kind of [`generate::GenKind::ALL`] at least once when `generated` allows), in a shuffled order. A generated question's numbers come from a seed
//! derived from the sitting's seed, so they change at every sitting: every numeric question of
//! the exam is one of these, and a list of answers kept from earlier sittings does not answer
//! the next one. `generated_variants` questions of every kind (seeds 0 to `generated_variants -
//! 1`) are the sample the exam file is checked against (enough distinct wordings). The seed is
//! recorded with the result, so a sitting can be re-created exactly; a retake uses a new seed.
//! Nothing is graded until the whole sitting is submitted ([`Sitting::submit`]); the review of
//! a failed sitting names the topics to revisit instead of every right answer
//! ([`Submitted::revisit`]).

use crate::bank::{Bank, Question};
use crate::generate::{self, GenKind};
use crate::grade::{self, Presentation, Response};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use std::collections::BTreeSet;
use tplab_lessons::{Diagnostic, Diagnostics, Lang};

/// The exam definition compiled into the binary.
pub const EMBEDDED: (&str, &str) = ("exam.toml", include_str!("../banks/exam.toml"));

/// Every exam version a certificate may name, with its pass mark in percent. A version leaves
/// this list never: certificates earned on it must keep verifying.
pub const KNOWN_VERSIONS: &[(&str, u32)] = &[("exam-v2", 80)];

/// The pass mark of a known exam version.
pub fn known_pass_mark(version: &str) -> Option<u32> {
    KNOWN_VERSIONS
        .iter()
        .find(|(v, _)| *v == version)
        .map(|&(_, p)| p)
}

/// The exam: its version, pass mark, length and pool.
#[derive(Debug, Clone, PartialEq)]
pub struct Exam {
    /// Named on certificates, e.g. `exam-v2`; one of [`KNOWN_VERSIONS`].
    pub version: String,
    /// Pass mark in whole percent.
    pub pass_percent: u32,
    /// Questions per sitting.
    pub length: usize,
    /// Generated questions per sitting (the rest come from the banks).
    pub generated: usize,
    /// Bank questions a sitting may draw.
    bank_pool: Vec<Question>,
    /// Groups of bank questions (indices into `bank_pool`) of which every sitting draws at least
    /// one: the kinds of question the tool cannot answer for the learner (spot the error in a
    /// shown program, choose the reason).
    at_least_one_of: Vec<Vec<usize>>,
    /// The sample of generated questions the exam file is checked against (seeds 0 to
    /// `generated_variants - 1`, distinct in wording, grouped by kind); sittings draw fresh ones.
    generated_pool: Vec<Vec<Question>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExam {
    version: String,
    pass_percent: toml::Spanned<f64>,
    length: toml::Spanned<usize>,
    generated: toml::Spanned<usize>,
    generated_variants: toml::Spanned<u64>,
    #[serde(default)]
    exclude: Vec<toml::Spanned<String>>,
    #[serde(default)]
    at_least_one_of: Vec<toml::Spanned<Vec<String>>>,
}

/// The outcome of one sitting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExamScore {
    pub correct: usize,
    pub total: usize,
    pub score_percent: f64,
    pub passed: bool,
}

impl ExamScore {
    /// The score in whole percent, rounded down (what a certificate states).
    pub fn whole_percent(&self) -> u32 {
        (self.correct.min(self.total) * 100)
            .checked_div(self.total)
            .map_or(0, |p| p as u32)
    }
}

/// One sitting: the questions drawn with `seed`, how each is shown, and the answers so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Sitting {
    pub version: String,
    pub pass_percent: u32,
    /// Seed of the draw, the generated numbers and the choice order; recorded with the result.
    pub seed: u64,
    pub questions: Vec<Question>,
    /// How each question is shown (choices shuffled with the sitting's seed).
    pub presentations: Vec<Presentation>,
    /// The learner's answer to each question, `None` while unanswered. Not graded before
    /// [`Sitting::submit`].
    pub answers: Vec<Option<Response>>,
}

/// The verdict on one question, known only after submission.
#[derive(Debug, Clone, PartialEq)]
pub struct Reviewed {
    pub question_id: String,
    pub correct: bool,
    /// The right answer in the labels the learner saw.
    pub expected: String,
    /// Whether the learner answered it at all.
    pub answered: bool,
    /// Why each choice the learner got wrong is wrong (or, for a missed right choice, why it
    /// holds), labelled as shown; see [`grade::Grade::feedback`].
    pub feedback: Vec<String>,
}

/// A submitted sitting.
#[derive(Debug, Clone, PartialEq)]
pub struct Submitted {
    pub score: ExamScore,
    pub review: Vec<Reviewed>,
}

impl Exam {
    /// The shipped exam, drawn from the shipped banks.
    pub fn embedded(bank: &Bank) -> Result<Self, Diagnostics> {
        Self::from_text(EMBEDDED.0, EMBEDDED.1, bank)
    }

    /// Parses an exam file and builds its pool. Checks: the version is in [`KNOWN_VERSIONS`]
    /// with the same pass mark, the pass mark is a whole percent in 1..=100, `generated <=
    /// length`, excluded ids exist, the banks hold at least `length - generated` questions, and
    /// the pool holds at least three times `length` distinct questions.
    pub fn from_text(file: &str, text: &str, bank: &Bank) -> Result<Self, Diagnostics> {
        let mut diags = Diagnostics::default();
        let raw: RawExam = toml::from_str(text).map_err(|e| {
            let mut d = Diagnostics::default();
            d.push(Diagnostic::from_toml(file, text, &e));
            d
        })?;
        let at = |offset: usize, msg: String| Diagnostic::at(file, text, offset, msg);
        let pass = *raw.pass_percent.get_ref();
        let pass_percent = if pass.fract() == 0.0 && (1.0..=100.0).contains(&pass) {
            pass as u32
        } else {
            diags.push(at(
                raw.pass_percent.span().start,
                "pass_percent must be a whole number from 1 to 100".to_string(),
            ));
            0
        };
        match known_pass_mark(&raw.version) {
            Some(p) if p == pass_percent || pass_percent == 0 => {}
            Some(p) => diags.push(at(
                raw.pass_percent.span().start,
                format!(
                    "{} has pass mark {p}% in exam::KNOWN_VERSIONS; a new pass mark needs a new version",
                    raw.version
                ),
            )),
            None => diags.push(Diagnostic::new(
                file,
                None,
                format!(
                    "version '{}' is not in exam::KNOWN_VERSIONS; add it there with its pass mark so certificates naming it verify",
                    raw.version
                ),
            )),
        }
        let length = *raw.length.get_ref();
        let generated = *raw.generated.get_ref();
        if length == 0 {
            diags.push(at(
                raw.length.span().start,
                "length must be at least 1".to_string(),
            ));
        }
        if generated > length {
            diags.push(at(
                raw.generated.span().start,
                format!("generated ({generated}) cannot exceed length ({length})"),
            ));
        }
        let variants = *raw.generated_variants.get_ref();
        if !(1..=1000).contains(&variants) {
            diags.push(at(
                raw.generated_variants.span().start,
                "generated_variants must be from 1 to 1000".to_string(),
            ));
        }
        let mut excluded = BTreeSet::new();
        for id in &raw.exclude {
            if bank.get(id.get_ref()).is_none() {
                diags.push(at(
                    id.span().start,
                    format!("excluded question '{}' is in no bank", id.get_ref()),
                ));
            }
            excluded.insert(id.get_ref().clone());
        }
        if !diags.is_empty() {
            return Err(diags);
        }
        // Numeric bank questions have fixed numbers: an answer list would answer them. The
        // exam's numeric questions are generated afresh at every sitting instead.
        let bank_pool: Vec<Question> = bank
            .questions
            .iter()
            .filter(|q| !excluded.contains(&q.id))
            .filter(|q| !matches!(q.kind, crate::bank::QuestionKind::Numeric { .. }))
            .cloned()
            .collect();
        let mut at_least_one_of = Vec::new();
        for group in &raw.at_least_one_of {
            let mut idx = Vec::new();
            for id in group.get_ref() {
                match bank_pool.iter().position(|q| &q.id == id) {
                    Some(i) => idx.push(i),
                    None => diags.push(at(
                        group.span().start,
                        format!(
                            "at_least_one_of names '{id}', which is not in the exam's bank pool"
                        ),
                    )),
                }
            }
            if idx.is_empty() {
                diags.push(at(
                    group.span().start,
                    "an at_least_one_of group must name at least one question".to_string(),
                ));
            }
            at_least_one_of.push(idx);
        }
        if !diags.is_empty() {
            return Err(diags);
        }
        let mut seen: BTreeSet<String> = bank_pool
            .iter()
            .map(|q| q.prompt(Lang::En).to_string())
            .collect();
        let generated_pool: Vec<Vec<Question>> = GenKind::ALL
            .into_iter()
            .map(|kind| {
                (0..variants)
                    .map(|s| generate::generate(kind, s))
                    .filter(|q| seen.insert(q.prompt(Lang::En).to_string()))
                    .collect()
            })
            .collect();
        let exam = Self {
            version: raw.version,
            pass_percent,
            length,
            generated,
            bank_pool,
            at_least_one_of,
            generated_pool,
        };
        let bank_need = length - generated;
        if exam.at_least_one_of.len() > bank_need {
            diags.push(Diagnostic::new(
                file,
                None,
                format!(
                    "{} at_least_one_of groups cannot all be met by the {bank_need} bank questions of a sitting",
                    exam.at_least_one_of.len()
                ),
            ));
        }
        if exam.bank_pool.len() < bank_need {
            diags.push(Diagnostic::new(
                file,
                None,
                format!(
                    "a sitting draws {bank_need} bank questions but the banks offer {}",
                    exam.bank_pool.len()
                ),
            ));
        }
        let gen_have: usize = exam.generated_pool.iter().map(Vec::len).sum();
        if gen_have < generated {
            diags.push(Diagnostic::new(
                file,
                None,
                format!(
                    "a sitting draws {generated} generated questions but only {gen_have} distinct ones exist; raise generated_variants"
                ),
            ));
        }
        if exam.pool_size() < 3 * length {
            diags.push(Diagnostic::new(
                file,
                None,
                format!(
                    "the pool holds {} distinct questions, fewer than three times the length ({}); raise generated_variants or lower length",
                    exam.pool_size(),
                    3 * length
                ),
            ));
        }
        if diags.is_empty() {
            Ok(exam)
        } else {
            Err(diags)
        }
    }

    /// Distinct questions a sitting may draw.
    pub fn pool_size(&self) -> usize {
        self.bank_pool.len() + self.generated_pool.iter().map(Vec::len).sum::<usize>()
    }

    /// Every question of the pool.
    pub fn pool(&self) -> impl Iterator<Item = &Question> {
        self.bank_pool
            .iter()
            .chain(self.generated_pool.iter().flatten())
    }

    /// The questions of a sitting drawn with `seed`: reproducible from the seed, different for
    /// another seed.
    pub fn draw(&self, seed: u64) -> Vec<Question> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let out_bank = self.draw_bank(&mut rng);
        let mut out: Vec<Question> = out_bank.into_iter().cloned().collect();
        // Generated: the kinds in a shuffled order, then round-robin, so every kind appears
        // when `generated` >= the number of kinds. Each question's seed is derived from the
        // sitting's, so its numbers are new at every sitting; a wording already drawn (or a
        // bank question's) is skipped.
        let mut kinds: Vec<GenKind> = GenKind::ALL.to_vec();
        kinds.shuffle(&mut rng);
        // The practical part (a design lab split the engine grades) is in every sitting: its
        // kind goes first, the others keep their shuffled order.
        if let Some(i) = kinds.iter().position(|k| *k == GenKind::DesignSplit) {
            kinds[..=i].rotate_right(1);
        }
        let mut seen: BTreeSet<String> =
            out.iter().map(|q| q.prompt(Lang::En).to_string()).collect();
        let mut taken = 0;
        let mut round = 0u64;
        // Every kind has many distinct wordings; the bound only guarantees an end.
        while taken < self.generated && round < 64 * self.generated as u64 + 64 {
            for (k, kind) in kinds.iter().enumerate() {
                if taken >= self.generated {
                    break;
                }
                for attempt in 0..16u64 {
                    let q = generate::generate(*kind, generated_seed(seed, k, round, attempt));
                    if seen.insert(q.prompt(Lang::En).to_string()) {
                        out.push(q);
                        taken += 1;
                        break;
                    }
                }
            }
            round += 1;
        }
        out.shuffle(&mut rng);
        out
    }

    /// The bank questions of a sitting: first one of each `at_least_one_of` group (a group
    /// already met is skipped), then one question per lesson in a shuffled order of lessons,
    /// round after round, so that a sitting spreads over as many lessons as it has questions.
    fn draw_bank(&self, rng: &mut ChaCha8Rng) -> Vec<&Question> {
        let need = self.length - self.generated;
        let mut taken: BTreeSet<usize> = BTreeSet::new();
        for group in &self.at_least_one_of {
            if taken.len() >= need || group.iter().any(|i| taken.contains(i)) {
                continue;
            }
            let mut g = group.clone();
            g.shuffle(rng);
            if let Some(&i) = g.first() {
                taken.insert(i);
            }
        }
        // The rest, by lesson: every lesson's questions shuffled, the lessons shuffled.
        let mut by_lesson: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
        for (i, q) in self.bank_pool.iter().enumerate() {
            if !taken.contains(&i) {
                by_lesson
                    .entry(q.lesson.as_deref().unwrap_or(""))
                    .or_default()
                    .push(i);
            }
        }
        let mut lessons: Vec<Vec<usize>> = by_lesson.into_values().collect();
        for l in &mut lessons {
            l.shuffle(rng);
        }
        lessons.shuffle(rng);
        // Lessons that already gave a question (through a group) come last in the first round.
        lessons.sort_by_key(|l| {
            let lesson = l.first().and_then(|&i| self.bank_pool[i].lesson.as_deref());
            taken
                .iter()
                .any(|&t| self.bank_pool[t].lesson.as_deref() == lesson)
        });
        let mut order: Vec<usize> = taken.iter().copied().collect();
        order.shuffle(rng);
        let mut round = 0;
        while order.len() < need && lessons.iter().any(|l| round < l.len()) {
            for l in &lessons {
                if order.len() >= need {
                    break;
                }
                if let Some(&i) = l.get(round) {
                    order.push(i);
                }
            }
            round += 1;
        }
        order.into_iter().map(|i| &self.bank_pool[i]).collect()
    }

    /// A new sitting with `seed`; choices are shuffled with seeds derived from it.
    pub fn sitting(&self, seed: u64) -> Sitting {
        let questions = self.draw(seed);
        let presentations = questions
            .iter()
            .enumerate()
            .map(|(i, q)| Presentation::new(q, attempt_seed(seed, i)))
            .collect();
        Sitting {
            version: self.version.clone(),
            pass_percent: self.pass_percent,
            seed,
            answers: vec![None; questions.len()],
            questions,
            presentations,
        }
    }

    /// Scores `correct` right answers out of this exam's length.
    pub fn score(&self, correct: usize) -> ExamScore {
        score(correct, self.length, self.pass_percent)
    }
}

/// Scores `correct` of `total` against `pass_percent`: inclusive, in integers (16/20 passes 80%).
pub fn score(correct: usize, total: usize, pass_percent: u32) -> ExamScore {
    let correct = correct.min(total);
    ExamScore {
        correct,
        total,
        score_percent: grade::score_percent(correct, total),
        passed: total > 0 && correct * 100 >= pass_percent as usize * total,
    }
}

/// The seed of a sitting's generated question: kind slot `k`, round `round`, `attempt` (a
/// repeat wording is skipped), mixed with the sitting's seed (SplitMix64's finaliser) so that
/// nearby sitting seeds give unrelated numbers.
fn generated_seed(seed: u64, k: usize, round: u64, attempt: u64) -> u64 {
    let mut z = seed
        ^ (k as u64).wrapping_mul(0xD1B5_4A32_D192_ED03)
        ^ round.wrapping_mul(0x8CB9_2BA7_2F3D_8DD7)
        ^ attempt.wrapping_mul(0xABC9_8388_FB8A_C4B9);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The presentation seed of question `i` of a sitting or practice run with `seed`.
pub fn attempt_seed(seed: u64, i: usize) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(i as u64)
        .rotate_left(17)
}

/// A seed from the operating system's random source (the clock if it fails), for a sitting or a
/// practice run that must not repeat the last one.
pub fn fresh_seed() -> u64 {
    let mut b = [0u8; 8];
    match getrandom::fill(&mut b) {
        Ok(()) => u64::from_le_bytes(b),
        Err(_) => web_time::SystemTime::now()
            .duration_since(web_time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    }
}

/// A topic a failed sitting names for revisiting: a lesson (by slug) and how many of its
/// questions were missed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revisit {
    /// The lesson's slug (`tplab lessons show SLUG`), or `None` for questions of no lesson.
    pub lesson: Option<String>,
    pub missed: usize,
    /// Questions of that lesson in the sitting.
    pub asked: usize,
}

impl Submitted {
    /// The practical part's result (the design lab challenge, [`GenKind::DesignSplit`]):
    /// `Some(solved)`, or `None` when this sitting did not draw one.
    pub fn practical(&self) -> Option<bool> {
        let prefix = format!("gen:{}:", GenKind::DesignSplit.name());
        let mut drawn = self
            .review
            .iter()
            .filter(|r| r.question_id.starts_with(&prefix))
            .peekable();
        drawn.peek()?;
        Some(drawn.all(|r| r.correct))
    }

    /// What a failed sitting's review shows: the lessons of the missed questions, most missed
    /// first, without the questions' answers (a script that fails on purpose learns no answer
    /// from it). A passed sitting shows the whole review instead. `questions` are the
    /// sitting's, in order.
    pub fn revisit(&self, questions: &[Question]) -> Vec<Revisit> {
        let mut by: Vec<Revisit> = Vec::new();
        for (q, r) in questions.iter().zip(&self.review) {
            let i = match by.iter().position(|t| t.lesson == q.lesson) {
                Some(i) => i,
                None => {
                    by.push(Revisit {
                        lesson: q.lesson.clone(),
                        missed: 0,
                        asked: 0,
                    });
                    by.len() - 1
                }
            };
            by[i].asked += 1;
            by[i].missed += usize::from(!r.correct);
        }
        by.retain(|t| t.missed > 0);
        by.sort_by(|a, b| b.missed.cmp(&a.missed).then(a.lesson.cmp(&b.lesson)));
        by
    }
}

impl Sitting {
    /// Questions answered so far.
    pub fn answered(&self) -> usize {
        self.answers.iter().filter(|a| a.is_some()).count()
    }

    /// Records (or replaces) the answer to question `i`; nothing is graded yet.
    pub fn answer(&mut self, i: usize, r: Response) {
        if let Some(slot) = self.answers.get_mut(i) {
            *slot = Some(r);
        }
    }

    /// Grades every answer (an unanswered question is wrong) and scores the sitting.
    pub fn submit(&self, lang: Lang) -> Submitted {
        let review: Vec<Reviewed> = self
            .questions
            .iter()
            .zip(&self.presentations)
            .zip(&self.answers)
            .map(|((q, p), a)| {
                let g = a.as_ref().map(|r| grade::grade(q, p, r, lang));
                Reviewed {
                    question_id: q.id.clone(),
                    correct: g.as_ref().is_some_and(|g| g.correct),
                    expected: grade::expected_answer(q, p, lang),
                    answered: a.is_some(),
                    feedback: g.map(|g| g.feedback).unwrap_or_default(),
                }
            })
            .collect();
        let correct = review.iter().filter(|r| r.correct).count();
        Submitted {
            score: score(correct, self.questions.len(), self.pass_percent),
            review,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bank::QuestionKind;

    fn exam() -> Exam {
        Exam::embedded(&Bank::embedded().unwrap()).unwrap()
    }

    #[test]
    fn shipped_exam_loads_with_a_pool_three_times_its_length() {
        let exam = exam();
        assert_eq!(exam.version, "exam-v2");
        assert_eq!(exam.pass_percent, 80);
        assert_eq!(known_pass_mark(&exam.version), Some(80));
        assert_eq!(exam.length, 20);
        assert!(
            exam.pool_size() >= 3 * exam.length,
            "pool {} for length {}",
            exam.pool_size(),
            exam.length
        );
        let prompts: BTreeSet<&str> = exam.pool().map(|q| q.prompt(Lang::En)).collect();
        assert_eq!(prompts.len(), exam.pool_size(), "pool entries are distinct");
        // Every generated kind is in the pool.
        for kind in GenKind::ALL {
            let tag = format!("gen:{}:", kind.name());
            assert!(exam.pool().any(|q| q.id.starts_with(&tag)), "{tag}");
        }
    }

    #[test]
    fn a_sitting_mixes_bank_and_every_generated_kind_and_is_reproducible() {
        let exam = exam();
        let s = exam.sitting(42);
        assert_eq!(s.questions.len(), exam.length);
        assert_eq!(
            s,
            exam.sitting(42),
            "the recorded seed re-creates the sitting"
        );
        let ids: BTreeSet<&str> = s.questions.iter().map(|q| q.id.as_str()).collect();
        assert_eq!(ids.len(), exam.length, "no question twice");
        let gen = s
            .questions
            .iter()
            .filter(|q| q.id.starts_with("gen:"))
            .count();
        assert_eq!(gen, exam.generated);
        if exam.generated >= GenKind::ALL.len() {
            for kind in GenKind::ALL {
                let tag = format!("gen:{}:", kind.name());
                assert!(ids.iter().any(|id| id.starts_with(&tag)), "{tag}");
            }
        }
    }

    /// Issue 37: the bank part of a sitting spreads over the lessons (no lesson twice while
    /// another has questions left) and always holds a spot-the-error question and an
    /// explain-why one.
    #[test]
    fn a_sitting_draws_across_lessons_and_from_every_required_group() {
        let exam = exam();
        assert_eq!(
            exam.at_least_one_of.len(),
            2,
            "spot the error, choose the reason"
        );
        let lessons: BTreeSet<&str> = exam
            .bank_pool
            .iter()
            .filter_map(|q| q.lesson.as_deref())
            .collect();
        let bank_need = exam.length - exam.generated;
        for seed in 0..200 {
            let s = exam.sitting(seed);
            let bank: Vec<&Question> = s
                .questions
                .iter()
                .filter(|q| !q.id.starts_with("gen:"))
                .collect();
            assert_eq!(bank.len(), bank_need);
            for group in &exam.at_least_one_of {
                assert!(
                    group
                        .iter()
                        .any(|&i| bank.iter().any(|q| q.id == exam.bank_pool[i].id)),
                    "seed {seed}: no question of a required group"
                );
            }
            let drawn: BTreeSet<&str> = bank.iter().filter_map(|q| q.lesson.as_deref()).collect();
            assert!(
                drawn.len() >= bank_need.min(lessons.len()) - 1,
                "seed {seed}: {bank_need} bank questions from only {} lessons",
                drawn.len()
            );
        }
    }

    /// Every sitting has its practical part: one design lab split, graded by the engine.
    #[test]
    fn every_sitting_has_the_practical_part() {
        let exam = exam();
        let prefix = format!("gen:{}:", GenKind::DesignSplit.name());
        for seed in 0..200 {
            let s = exam.sitting(seed);
            let n = s
                .questions
                .iter()
                .filter(|q| q.id.starts_with(&prefix))
                .count();
            assert_eq!(n, 1, "seed {seed}: {n} design lab splits");
        }
    }

    #[test]
    fn sittings_with_different_seeds_share_less_than_half() {
        let exam = exam();
        let ids =
            |seed| -> BTreeSet<String> { exam.draw(seed).into_iter().map(|q| q.id).collect() };
        let mut worst = 0;
        for seed in 0..40u64 {
            let a = ids(seed);
            let b = ids(seed + 1000);
            let shared = a.intersection(&b).count();
            worst = worst.max(shared);
            assert!(
                2 * shared < exam.length,
                "seeds {seed} and {}: {shared} of {} shared",
                seed + 1000,
                exam.length
            );
        }
        eprintln!(
            "pool {}, worst overlap of 40 sitting pairs: {worst} of {}",
            exam.pool_size(),
            exam.length
        );
        // And the draw is not frozen: some pair shares little.
        assert!(worst > 0 && worst < exam.length / 2, "{worst}");
    }

    #[test]
    fn choices_are_shuffled_per_sitting() {
        let exam = exam();
        let bank = Bank::embedded().unwrap();
        let q = bank
            .questions
            .iter()
            .find(|q| matches!(q.kind, QuestionKind::Single { .. }))
            .unwrap();
        let orders: BTreeSet<Vec<usize>> = (0..12)
            .map(|seed| Presentation::new(q, attempt_seed(seed, 0)).order)
            .collect();
        assert!(orders.len() > 3, "{orders:?}");
        // Inside a sitting, the right answer's letter follows the presentation, and grading
        // by that letter is right.
        let mut s = exam.sitting(7);
        for i in 0..s.questions.len() {
            let (q, p) = (&s.questions[i], &s.presentations[i]);
            let typed = match q.kind {
                QuestionKind::Numeric { answer, .. } => format!("{answer}"),
                _ => grade::expected_answer(q, p, Lang::En),
            };
            let r = grade::parse_response(q, p, &typed, Lang::En).unwrap();
            s.answer(i, r);
        }
        let done = s.submit(Lang::En);
        assert_eq!(done.score.correct, exam.length);
        assert!(done.score.passed);
        assert_eq!(done.score.whole_percent(), 100);
    }

    #[test]
    fn the_review_says_why_a_picked_distractor_is_wrong() {
        let exam = exam();
        // The first sitting with a single-choice question whose distractors carry feedback.
        let (mut s, i, wrong) = (0..50u64)
            .find_map(|seed| {
                let s = exam.sitting(seed);
                let hit = s
                    .questions
                    .iter()
                    .enumerate()
                    .find_map(|(i, q)| match q.kind {
                        QuestionKind::Single {
                            correct,
                            ref choices,
                        } => (0..choices.len())
                            .find(|&c| c != correct && q.choice_feedback(c, Lang::En).is_some())
                            .map(|c| (i, c)),
                        _ => None,
                    });
                hit.map(|(i, c)| (s, i, c))
            })
            .expect("a bank question with distractor feedback");
        s.answer(i, Response::Choice(wrong));
        let done = s.submit(Lang::En);
        let r = &done.review[i];
        assert!(r.answered && !r.correct);
        let why = s.questions[i].choice_feedback(wrong, Lang::En).unwrap();
        assert_eq!(r.feedback.len(), 1);
        assert!(r.feedback[0].ends_with(why), "{:?}", r.feedback);
        assert!(done
            .review
            .iter()
            .filter(|r| !r.answered)
            .all(|r| r.feedback.is_empty()));
    }

    #[test]
    fn unanswered_is_wrong_and_the_pass_mark_is_inclusive() {
        let exam = exam();
        let s = exam.sitting(3);
        let done = s.submit(Lang::Tr);
        assert_eq!(done.score.correct, 0);
        assert!(!done.score.passed);
        assert!(done.review.iter().all(|r| !r.answered && !r.correct));
        let sc = exam.score(16);
        assert_eq!((sc.score_percent, sc.passed), (80.0, true));
        let sc = exam.score(15);
        assert_eq!((sc.score_percent, sc.passed), (75.0, false));
        assert!(exam.score(20).passed);
        assert!(!exam.score(0).passed);
        assert_eq!(score(2, 3, 60).whole_percent(), 66);
    }

    #[test]
    fn bad_exam_files_name_the_rule() {
        let bank = Bank::embedded().unwrap();
        let base = "version = \"exam-v2\"\npass_percent = 80\nlength = 20\ngenerated = 8\ngenerated_variants = 12\n";
        assert!(Exam::from_text("e.toml", base, &bank).is_ok());
        for (edit, needle) in [
            (base.replace("exam-v2", "exam-v9"), "KNOWN_VERSIONS"),
            (base.replace("= 80", "= 70"), "new version"),
            (base.replace("= 80", "= 80.5"), "whole number"),
            (
                base.replace("generated = 8", "generated = 21"),
                "cannot exceed",
            ),
            (base.replace("length = 20", "length = 200"), "three times"),
            (base.replace("length = 20", "length = 0"), "at least 1"),
            (
                format!("{base}exclude = [\"nope\"]\n"),
                "excluded question 'nope'",
            ),
        ] {
            let d = Exam::from_text("e.toml", &edit, &bank).unwrap_err();
            assert!(d.to_string().contains(needle), "{needle}: {d}");
        }
        let d = Exam::from_text("e.toml", &format!("{base}questions = []\n"), &bank).unwrap_err();
        assert_eq!(d.0[0].line, Some(6), "{d}");
    }

    #[test]
    fn numeric_questions_are_generated_anew_at_every_sitting() {
        let exam = exam();
        let mut prompts: BTreeSet<String> = BTreeSet::new();
        let mut ring_bytes = BTreeSet::new();
        for seed in 0..60u64 {
            let s = exam.sitting(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            assert_eq!(s.questions.len(), exam.length);
            for q in &s.questions {
                if matches!(q.kind, QuestionKind::Numeric { .. }) {
                    assert!(
                        q.id.starts_with("gen:"),
                        "a fixed numeric question: {}",
                        q.id
                    );
                }
                if q.id.starts_with("gen:ring-bytes:") {
                    ring_bytes.insert(q.prompt(Lang::En).to_string());
                }
                if q.id.starts_with("gen:") {
                    prompts.insert(q.prompt(Lang::En).to_string());
                }
            }
        }
        // A fixed sample (seeds 0..generated_variants) would give at most generated_variants
        // wordings of a kind, 96 in all; fresh seeds give many more (281 here).
        assert!(
            ring_bytes.len() > 24,
            "{} ring-bytes wordings",
            ring_bytes.len()
        );
        assert!(
            prompts.len() > 200,
            "{} generated wordings in 60 sittings",
            prompts.len()
        );
        // Two sittings share (almost) no generated question.
        let a = exam.sitting(1);
        let b = exam.sitting(2);
        let gen = |s: &Sitting| -> BTreeSet<String> {
            s.questions
                .iter()
                .filter(|q| q.id.starts_with("gen:"))
                .map(|q| q.prompt(Lang::En).to_string())
                .collect()
        };
        assert!(gen(&a).intersection(&gen(&b)).count() <= 2);
    }

    #[test]
    fn a_failed_sitting_names_topics_and_counts_misses() {
        let exam = exam();
        let s = exam.sitting(11);
        let done = s.submit(Lang::En);
        assert!(!done.score.passed);
        let topics = done.revisit(&s.questions);
        assert_eq!(
            topics.iter().map(|t| t.missed).sum::<usize>(),
            exam.length,
            "every unanswered question is missed"
        );
        assert!(topics.windows(2).all(|w| w[0].missed >= w[1].missed));
        assert!(topics.iter().all(|t| t.missed == t.asked));
    }
}
