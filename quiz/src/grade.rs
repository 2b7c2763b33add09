//! Answers: how a question is shown, how a typed answer is read, and whether it is right.

use crate::bank::{Question, QuestionKind};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;
use thiserror::Error;
use tplab_lessons::i18n::{number, number_marks, t, t_args};
use tplab_lessons::Lang;

/// A learner's answer, in the question's own indices (not the letters shown).
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    Choice(usize),
    Choices(BTreeSet<usize>),
    Number(f64),
    /// Item indices in the order the learner put them.
    Order(Vec<usize>),
}

/// How a question is shown: the order of its lines. Display position `p` shows line `order[p]`,
/// labelled `A`, `B`, ... Choices and ordering items are both shuffled with the attempt's seed,
/// so neither the author's order nor a remembered letter gives the answer away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presentation {
    pub order: Vec<usize>,
}

impl Presentation {
    /// Choices are shuffled with `seed`; ordering items are shuffled with `seed` and never left
    /// in the correct order. The same question and seed always give the same presentation.
    pub fn new(q: &Question, seed: u64) -> Self {
        let n = line_count(q);
        let mut order: Vec<usize> = (0..n).collect();
        if n >= 2 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            order.shuffle(&mut rng);
            let solved = order.iter().enumerate().all(|(i, &v)| i == v);
            if solved && matches!(q.kind, QuestionKind::Ordering { .. }) {
                order.rotate_left(1);
            }
        }
        Self { order }
    }

    /// The author's order, unshuffled (for listings such as `tplab lessons check` output and
    /// tests that name a choice by its written position).
    pub fn authored(q: &Question) -> Self {
        Self {
            order: (0..line_count(q)).collect(),
        }
    }

    /// `(label, text)` of each displayed line.
    pub fn lines<'q>(&self, q: &'q Question, lang: Lang) -> Vec<(char, &'q str)> {
        let texts: Vec<&str> = match &q.kind {
            QuestionKind::Single { choices, .. } | QuestionKind::Multiple { choices, .. } => {
                choices.iter().map(|c| c.get(lang)).collect()
            }
            QuestionKind::Ordering { items } => items.iter().map(|c| c.get(lang)).collect(),
            QuestionKind::Numeric { .. } => Vec::new(),
        };
        self.order
            .iter()
            .enumerate()
            .filter_map(|(p, &i)| texts.get(i).map(|t| (label(p), *t)))
            .collect()
    }

    fn label_of(&self, index: usize) -> char {
        label(self.order.iter().position(|&i| i == index).unwrap_or(index))
    }
}

/// Choices or ordering items a question shows.
fn line_count(q: &Question) -> usize {
    match &q.kind {
        QuestionKind::Single { choices, .. } | QuestionKind::Multiple { choices, .. } => {
            choices.len()
        }
        QuestionKind::Numeric { .. } => 0,
        QuestionKind::Ordering { items } => items.len(),
    }
}

fn label(p: usize) -> char {
    char::from(b'A' + (p % 26) as u8)
}

/// Why a typed answer could not be read (`Display` gives the English message).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ResponseError {
    #[error("{}", self.message(Lang::En))]
    OneLetter { last: char },
    #[error("{}", self.message(Lang::En))]
    Letters { last: char },
    #[error("{}", self.message(Lang::En))]
    NotANumber(String),
    #[error("{}", self.message(Lang::En))]
    Ordering { last: char },
}

impl ResponseError {
    /// The message in the learner's language (the Fluent messages `quiz-err-*`).
    pub fn message(&self, lang: Lang) -> String {
        match self {
            ResponseError::OneLetter { last } => {
                t_args(lang, "quiz-err-one-letter", &[("last", last.to_string())])
            }
            ResponseError::Letters { last } => {
                t_args(lang, "quiz-err-letters", &[("last", last.to_string())])
            }
            ResponseError::NotANumber(s) => {
                // A long answer is quoted by its ends and its length, not echoed whole.
                let n = s.chars().count();
                let shown = if n > 60 {
                    let head: String = s.chars().take(30).collect();
                    let tail: String = s.chars().skip(n - 20).collect();
                    format!("{head}…{tail} ({n} characters)")
                } else {
                    s.clone()
                };
                t_args(lang, "quiz-err-not-a-number", &[("input", shown)])
            }
            ResponseError::Ordering { last } => {
                t_args(lang, "quiz-err-ordering", &[("last", last.to_string())])
            }
        }
    }
}

fn letters(input: &str, n: usize) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for c in input.chars() {
        if c.is_whitespace() || c == ',' || c == ';' || c == '-' || c == '>' {
            continue;
        }
        let u = c.to_ascii_uppercase();
        if !u.is_ascii_uppercase() {
            return None;
        }
        let p = (u as u8 - b'A') as usize;
        if p >= n {
            return None;
        }
        out.push(p);
    }
    Some(out)
}

/// One line telling the learner how numbers are read in `lang`.
pub fn number_format_hint(lang: Lang) -> String {
    t(lang, "quiz-number-hint")
}

/// Whether `s` (digits and `sep` only) is a well-formed grouped integer: a first group of 1–3
/// digits not starting with 0, then groups of exactly 3 digits.
fn is_grouped(s: &str, sep: char) -> bool {
    let mut groups = s.split(sep);
    let Some(first) = groups.next() else {
        return false;
    };
    let digits = |g: &str| !g.is_empty() && g.chars().all(|c| c.is_ascii_digit());
    let mut rest = 0;
    for g in groups {
        if g.len() != 3 || !digits(g) {
            return false;
        }
        rest += 1;
    }
    rest > 0 && digits(first) && first.len() <= 3 && !first.starts_with('0')
}

/// Reads a number the way a learner types it in `lang`. Spaces and `_` may group digits
/// anywhere. The locale's thousands separator may group the integer part (`589,824` in English,
/// `589.824` in Turkish, both 589824) and its decimal mark separates the fraction (`0.5`, `0,5`).
/// Being lenient where nothing is ambiguous, a lone mark that cannot be a thousands group
/// (`43.75` typed in Turkish, `0,5` in English) is read as the decimal mark, and a mark repeated
/// in valid groups (`1.234.567` in English) as grouping. Anything else (`1.2.3`, `1,5.2` in
/// Turkish) is not a number.
pub fn parse_number(input: &str, lang: Lang) -> Option<f64> {
    let s: String = input
        .trim()
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '_')
        .collect();
    let (body, sign) = match s.strip_prefix('-') {
        Some(b) => (b, "-"),
        None => (s.strip_prefix('+').unwrap_or(&s), ""),
    };
    let (dec, grp) = number_marks(lang);
    // Exponents (1e6, 2.5e-3) are passed through to Rust's parser after the mantissa is read.
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], &body[i..]),
        None => (body, ""),
    };
    if mantissa.is_empty()
        || !mantissa
            .chars()
            .all(|c| c.is_ascii_digit() || c == dec || c == grp)
    {
        return None;
    }
    let n_dec = mantissa.matches(dec).count();
    let n_grp = mantissa.matches(grp).count();
    let (int_part, frac_part) = match (n_grp, n_dec) {
        (0, 0) => (mantissa.to_string(), None),
        // Both marks: the locale's order, grouping before the one decimal mark.
        (_, 1) if n_grp > 0 => {
            let (i, f) = mantissa.split_once(dec)?;
            if !is_grouped(i, grp) {
                return None;
            }
            (i.replace(grp, ""), Some(f.to_string()))
        }
        (0, 1) => {
            let (i, f) = mantissa.split_once(dec)?;
            // A decimal mark in valid thousands position is still this locale's decimal mark,
            // except when repeated (handled below): 1,125 in Turkish is 1.125.
            (i.to_string(), Some(f.to_string()))
        }
        (0, _) => {
            // The decimal mark repeated: only the other locale's grouping makes sense of it.
            if !is_grouped(mantissa, dec) {
                return None;
            }
            (mantissa.replace(dec, ""), None)
        }
        (_, 0) => {
            if is_grouped(mantissa, grp) {
                (mantissa.replace(grp, ""), None)
            } else if n_grp == 1 {
                // Cannot be grouping (e.g. 43.75 or 0.5 typed in Turkish): a decimal mark.
                let (i, f) = mantissa.split_once(grp)?;
                (i.to_string(), Some(f.to_string()))
            } else {
                return None;
            }
        }
        _ => return None,
    };
    if int_part.is_empty() && frac_part.as_deref().is_none_or(str::is_empty) {
        return None;
    }
    let int_part = if int_part.is_empty() { "0" } else { &int_part };
    let text = match frac_part {
        Some(f) if !f.chars().all(|c| c.is_ascii_digit()) => return None,
        Some(f) if f.is_empty() => format!("{sign}{int_part}{exponent}"),
        Some(f) => format!("{sign}{int_part}.{f}{exponent}"),
        None => format!("{sign}{int_part}{exponent}"),
    };
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Reads a typed answer to `q` as shown with `pres`.
pub fn parse_response(
    q: &Question,
    pres: &Presentation,
    input: &str,
    lang: Lang,
) -> Result<Response, ResponseError> {
    let n = pres.order.len();
    let last = label(n.saturating_sub(1));
    let to_index = |p: usize| pres.order[p];
    match &q.kind {
        QuestionKind::Single { .. } => match letters(input, n).as_deref() {
            Some([p]) => Ok(Response::Choice(to_index(*p))),
            _ => Err(ResponseError::OneLetter { last }),
        },
        QuestionKind::Multiple { .. } => match letters(input, n) {
            Some(ps) if !ps.is_empty() => {
                Ok(Response::Choices(ps.into_iter().map(to_index).collect()))
            }
            _ => Err(ResponseError::Letters { last }),
        },
        QuestionKind::Numeric { .. } => parse_number(input, lang)
            .map(Response::Number)
            .ok_or_else(|| ResponseError::NotANumber(input.trim().to_string())),
        QuestionKind::Ordering { .. } => match letters(input, n) {
            Some(ps) if ps.len() == n && ps.iter().collect::<BTreeSet<_>>().len() == n => {
                Ok(Response::Order(ps.into_iter().map(to_index).collect()))
            }
            _ => Err(ResponseError::Ordering { last }),
        },
    }
}

/// The verdict on one answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Grade {
    pub correct: bool,
    /// The right answer as the learner saw it, e.g. `B`, `A, C`, `589.824 bayt`, `C A B`.
    pub expected: String,
    /// For a wrong choice answer, the feedback of each choice the learner got wrong, labelled as
    /// shown (`"B) An all-gather would ..."`): every distractor picked and, for a
    /// multiple-choice question, every right choice missed that has feedback. Empty when the
    /// answer is right or the question has no per-choice feedback.
    pub feedback: Vec<String>,
}

/// Grades `r` against `q`. A response of the wrong kind is wrong.
pub fn grade(q: &Question, pres: &Presentation, r: &Response, lang: Lang) -> Grade {
    let correct = match (&q.kind, r) {
        (QuestionKind::Single { correct, .. }, Response::Choice(c)) => c == correct,
        (QuestionKind::Multiple { correct, .. }, Response::Choices(cs)) => cs == correct,
        (
            QuestionKind::Numeric {
                answer, tolerance, ..
            },
            Response::Number(x),
        ) => (x - answer).abs() <= *tolerance,
        (QuestionKind::Ordering { items }, Response::Order(o)) => {
            o.len() == items.len() && o.iter().enumerate().all(|(i, &v)| i == v)
        }
        _ => false,
    };
    let feedback = if correct {
        Vec::new()
    } else {
        wrong_choices(q, r)
            .into_iter()
            .filter_map(|i| {
                q.choice_feedback(i, lang)
                    .map(|f| format!("{}) {f}", pres.label_of(i)))
            })
            .collect()
    };
    Grade {
        correct,
        expected: expected_answer(q, pres, lang),
        feedback,
    }
}

/// The choices a response got wrong, in display-independent index order: the picked
/// distractors, then (multiple choice) the right choices left out.
fn wrong_choices(q: &Question, r: &Response) -> Vec<usize> {
    match (&q.kind, r) {
        (QuestionKind::Single { correct, .. }, Response::Choice(c)) if c != correct => vec![*c],
        (QuestionKind::Multiple { correct, .. }, Response::Choices(cs)) => cs
            .difference(correct)
            .chain(correct.difference(cs))
            .copied()
            .collect(),
        _ => Vec::new(),
    }
}

/// The right answer, in the labels of `pres`.
pub fn expected_answer(q: &Question, pres: &Presentation, lang: Lang) -> String {
    match &q.kind {
        QuestionKind::Single { correct, .. } => pres.label_of(*correct).to_string(),
        QuestionKind::Multiple { correct, .. } => {
            let mut ls: Vec<char> = correct.iter().map(|&i| pres.label_of(i)).collect();
            ls.sort_unstable();
            ls.iter()
                .map(char::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        }
        QuestionKind::Numeric {
            answer,
            tolerance,
            unit,
        } => {
            let mut s = number(lang, *answer);
            if let Some(u) = unit {
                s.push(' ');
                s.push_str(u.get(lang));
            }
            if *tolerance > 0.0 {
                s.push_str(&format!(" (± {})", number(lang, *tolerance)));
            }
            s
        }
        QuestionKind::Ordering { items } => (0..items.len())
            .map(|i| pres.label_of(i).to_string())
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// Score of a run: right answers over all answers, as a percentage (0 when nothing was asked).
pub fn score_percent(correct: usize, total: usize) -> f64 {
    if total == 0 {
        0.0
    } else {
        100.0 * correct as f64 / total as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bank::Bank;

    #[test]
    fn a_long_answer_is_quoted_by_its_ends_not_echoed() {
        let m = ResponseError::NotANumber("x".repeat(100_000)).message(Lang::En);
        assert!(m.len() < 300, "{} bytes", m.len());
        assert!(m.contains("(100000 characters)"), "{m}");
        let short = ResponseError::NotANumber("abc".into()).message(Lang::Tr);
        assert!(short.contains("'abc'"), "{short}");
    }

    fn bank() -> Bank {
        Bank::embedded().unwrap()
    }

    #[test]
    fn single_choice_right_and_wrong() {
        let b = bank();
        let q = b.get("heads-rule").unwrap(); // the 4th choice (D) is right
        let p = Presentation::authored(q);
        let r = parse_response(q, &p, "d", Lang::En).unwrap();
        assert!(grade(q, &p, &r, Lang::En).correct);
        let r = parse_response(q, &p, "B", Lang::En).unwrap();
        let g = grade(q, &p, &r, Lang::En);
        assert!(!g.correct);
        assert_eq!(g.expected, "D");
        assert!(parse_response(q, &p, "E", Lang::En).is_err());
        assert!(parse_response(q, &p, "AB", Lang::En).is_err());
    }

    #[test]
    fn multiple_choice_needs_exactly_the_right_set() {
        let b = bank();
        let q = b.get("column-parallel-layers").unwrap(); // A and C
        let p = Presentation::authored(q);
        let g = |s: &str| {
            grade(
                q,
                &p,
                &parse_response(q, &p, s, Lang::En).unwrap(),
                Lang::En,
            )
        };
        assert!(g("A, C").correct);
        assert!(g("ca").correct);
        assert!(!g("A").correct, "a subset is wrong");
        assert!(!g("A C D").correct, "a superset is wrong");
        assert_eq!(g("A").expected, "A, C");
    }

    #[test]
    fn numeric_tolerance_and_locales() {
        let b = bank();
        let q = b.get("weights-175b").unwrap(); // 43.75 ± 0.5
        let p = Presentation::new(q, 1);
        let g = |s: &str, l| grade(q, &p, &parse_response(q, &p, s, l).unwrap(), l).correct;
        assert!(g("43.75", Lang::En));
        assert!(g("44.2", Lang::En));
        assert!(!g("44.3", Lang::En));
        assert!(g("43,75", Lang::Tr));
        assert!(
            g("43.75", Lang::Tr),
            "a lone dot that cannot group thousands is decimal"
        );
        assert!(parse_response(q, &p, "lots", Lang::En).is_err());
        assert_eq!(parse_number("589,824", Lang::Tr), Some(589.824));
        // Deliberately changed: in Turkish a dot before three digits groups thousands (it was
        // read as 1.125, which marked a Turkish learner's "589.824" wrong).
        assert_eq!(parse_number("1.125", Lang::Tr), Some(1125.0));
        assert_eq!(parse_number("589,824", Lang::En), Some(589_824.0));
        assert_eq!(parse_number("1_536", Lang::En), Some(1536.0));
        assert_eq!(parse_number("0,5", Lang::En), Some(0.5));
    }

    #[test]
    fn numbers_are_read_in_the_learners_locale() {
        let tr = |s| parse_number(s, Lang::Tr);
        let en = |s| parse_number(s, Lang::En);
        // Turkish: "." groups thousands, "," is the decimal mark.
        assert_eq!(tr("589.824"), Some(589_824.0));
        assert_eq!(tr("589824"), Some(589_824.0));
        assert_eq!(tr("1,5"), Some(1.5));
        assert_eq!(tr("1.048.576"), Some(1_048_576.0));
        assert_eq!(tr("393.216,25"), Some(393_216.25));
        assert_eq!(tr("0,375"), Some(0.375));
        assert_eq!(
            tr("0.375"),
            Some(0.375),
            "0.375 cannot be a grouping (leading 0)"
        );
        assert_eq!(tr("-2,5"), Some(-2.5));
        assert_eq!(tr("589 824"), Some(589_824.0));
        assert_eq!(
            tr("1,234.5"),
            None,
            "English order in Turkish is ambiguous: refused"
        );
        assert_eq!(tr("1.23.4"), None);
        // English: "," groups thousands, "." is the decimal point.
        assert_eq!(en("589,824"), Some(589_824.0));
        assert_eq!(en("589824"), Some(589_824.0));
        assert_eq!(en("1.5"), Some(1.5));
        assert_eq!(en("1,048,576"), Some(1_048_576.0));
        assert_eq!(en("393,216.25"), Some(393_216.25));
        assert_eq!(
            en("1.234.567"),
            Some(1_234_567.0),
            "repeated dots can only group"
        );
        assert_eq!(en("1.234,5"), None);
        assert_eq!(
            en("12,34"),
            Some(12.34),
            "a lone comma that cannot group is decimal"
        );
        assert_eq!(en("1e6"), Some(1e6));
        for bad in [
            "", ".", ",", "-", "1..2", "1,,000", "abc", "inf", "NaN", "1e999",
        ] {
            assert_eq!(en(bad), None, "{bad:?}");
            assert_eq!(tr(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn unreadable_answers_are_explained_in_the_learners_language() {
        let b = bank();
        let q = b.get("ring-steps").unwrap();
        let p = Presentation::new(q, 0);
        let e = parse_response(q, &p, "çok", Lang::Tr).unwrap_err();
        assert!(
            e.message(Lang::Tr).contains("bir sayı değil"),
            "{}",
            e.message(Lang::Tr)
        );
        assert!(e.message(Lang::Tr).contains("589.824"));
        assert!(e.message(Lang::En).contains("589,824"));
        let q = b.get("f-operator").unwrap();
        let e = parse_response(q, &Presentation::new(q, 0), "Z", Lang::Tr).unwrap_err();
        assert_eq!(e.message(Lang::Tr), "A'dan D'ye kadar tek bir harf yazın");
    }

    /// Whatever a learner types, reading it never panics, and a result is always finite.
    #[test]
    fn any_typed_text_is_read_without_panicking() {
        let alphabet: Vec<char> = "0123456789.,_ -+eEİışğ٣\u{202f}x".chars().collect();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for _ in 0..3000 {
            let len = rand::Rng::random_range(&mut rng, 0..12);
            let s: String = (0..len)
                .map(|_| alphabet[rand::Rng::random_range(&mut rng, 0..alphabet.len())])
                .collect();
            for lang in [Lang::En, Lang::Tr] {
                if let Some(v) = parse_number(&s, lang) {
                    assert!(v.is_finite(), "{s:?} -> {v}");
                }
            }
        }
    }

    #[test]
    fn numbers_are_printed_in_the_learners_locale_and_read_back() {
        // The formatter is the i18n module's (its own test pins its output); here: read back.
        // Every printed number is read back as itself (to the 4 decimals printed), in its own
        // locale, on seeded random values of every magnitude.
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        for _ in 0..500 {
            let digits: i32 = rand::Rng::random_range(&mut rng, -3..10);
            let v: f64 = rand::Rng::random_range(&mut rng, 0.0..10f64.powi(digits));
            let v = (v * 1e4).round() / 1e4;
            for lang in [Lang::En, Lang::Tr] {
                let s = number(lang, v);
                let back = parse_number(&s, lang).unwrap_or(f64::NAN);
                assert!(
                    (back - v).abs() <= 1e-9 * v.abs().max(1.0),
                    "{v} -> {s} -> {back}"
                );
            }
        }
        // The expected answer is printed in the learner's locale.
        let b = bank();
        let q = b.get("ring-bytes-example").unwrap();
        let p = Presentation::new(q, 0);
        assert_eq!(expected_answer(q, &p, Lang::Tr), "589.824 bayt");
        assert_eq!(expected_answer(q, &p, Lang::En), "589,824 bytes");
        let r = parse_response(q, &p, "589.824", Lang::Tr).unwrap();
        assert!(
            grade(q, &p, &r, Lang::Tr).correct,
            "the Turkish learner's 589.824"
        );
        let r = parse_response(q, &p, "589,824", Lang::En).unwrap();
        assert!(grade(q, &p, &r, Lang::En).correct);
    }

    #[test]
    fn choices_are_shuffled_per_attempt_and_graded_by_content() {
        let b = bank();
        let q = b.get("f-operator").unwrap();
        let QuestionKind::Single { correct, .. } = q.kind else {
            panic!("f-operator is single choice")
        };
        let mut letters = BTreeSet::new();
        for seed in 0..40 {
            let p = Presentation::new(q, seed);
            assert_eq!(Presentation::new(q, seed), p, "reproducible");
            let mut sorted = p.order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..q.choices().len()).collect::<Vec<_>>());
            // The displayed line with the right text is the right letter.
            let right = expected_answer(q, &p, Lang::En);
            let (_, text) = p
                .lines(q, Lang::En)
                .into_iter()
                .find(|(l, _)| l.to_string() == right)
                .unwrap();
            assert_eq!(text, q.choices()[correct].get(Lang::En));
            letters.insert(right);
        }
        assert!(letters.len() >= 3, "the right answer moves: {letters:?}");
    }

    #[test]
    fn wrong_choices_get_their_own_feedback() {
        let b = bank();
        let q = b.get("f-operator").unwrap();
        let p = Presentation::new(q, 7);
        let QuestionKind::Single { correct, .. } = q.kind else {
            panic!()
        };
        for i in 0..q.choices().len() {
            let g = grade(q, &p, &Response::Choice(i), Lang::Tr);
            if i == correct {
                assert!(g.correct && g.feedback.is_empty());
            } else {
                let fb = q.choice_feedback(i, Lang::Tr).unwrap();
                assert_eq!(g.feedback, vec![format!("{}) {fb}", p.label_of(i))]);
            }
        }
        let m = b.get("column-parallel-layers").unwrap(); // right: 0 and 2
        let p = Presentation::authored(m);
        let g = grade(m, &p, &Response::Choices([0, 3].into()), Lang::En);
        assert!(!g.correct);
        // fc2 (D) picked wrongly; fc1 (C) missed.
        assert!(
            g.feedback.iter().any(|f| f.starts_with("D) ")),
            "{:?}",
            g.feedback
        );
        assert!(
            g.feedback.iter().any(|f| f.starts_with("C) ")),
            "{:?}",
            g.feedback
        );
    }

    #[test]
    fn ordering_is_shuffled_and_graded_in_item_order() {
        let b = bank();
        let q = b.get("ring-order").unwrap();
        assert_eq!(Presentation::authored(q).order, (0..5).collect::<Vec<_>>());
        for seed in 0..20 {
            let p = Presentation::new(q, seed);
            assert_ne!(p.order, (0..5).collect::<Vec<_>>(), "never shown solved");
            assert_eq!(Presentation::new(q, seed), p, "reproducible");
            // Type the labels of items 0..n in order: right.
            let right = expected_answer(q, &p, Lang::En);
            let r = parse_response(q, &p, &right, Lang::En).unwrap();
            assert!(grade(q, &p, &r, Lang::En).correct, "seed {seed}: {right}");
            // Typing the displayed order as-is is wrong (it is not the solution).
            let shown: String = p.lines(q, Lang::En).iter().map(|(l, _)| *l).collect();
            let r = parse_response(q, &p, &shown, Lang::En).unwrap();
            assert!(!grade(q, &p, &r, Lang::En).correct);
        }
        let p = Presentation::new(q, 3);
        assert!(
            parse_response(q, &p, "A B C D", Lang::En).is_err(),
            "one missing"
        );
        assert!(
            parse_response(q, &p, "A A B C D", Lang::En).is_err(),
            "repeated"
        );
    }

    #[test]
    fn wrong_kind_of_response_is_wrong() {
        let b = bank();
        let q = b.get("ring-steps").unwrap();
        let p = Presentation::new(q, 0);
        assert!(!grade(q, &p, &Response::Choice(0), Lang::En).correct);
        assert!(grade(q, &p, &Response::Number(14.0), Lang::En).correct);
        assert_eq!(score_percent(4, 5), 80.0);
        assert_eq!(score_percent(0, 0), 0.0);
    }
}
