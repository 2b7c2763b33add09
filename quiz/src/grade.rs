//! Answers: how a question is shown, how a typed answer is read, and whether it is right.

use crate::bank::{Question, QuestionKind};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;
use thiserror::Error;
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

/// How a question is shown: the order of its lines (identity for choices, shuffled for
/// ordering questions). Display position `p` shows line `order[p]`, labelled `A`, `B`, ...
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presentation {
    pub order: Vec<usize>,
}

impl Presentation {
    /// Choices keep the author's order; ordering items are shuffled with `seed`, never left in
    /// the correct order.
    pub fn new(q: &Question, seed: u64) -> Self {
        let order = match &q.kind {
            QuestionKind::Single { choices, .. } | QuestionKind::Multiple { choices, .. } => {
                (0..choices.len()).collect()
            }
            QuestionKind::Numeric { .. } => Vec::new(),
            QuestionKind::Ordering { items } => {
                let n = items.len();
                let mut order: Vec<usize> = (0..n).collect();
                if n >= 2 {
                    let mut rng = ChaCha8Rng::seed_from_u64(seed);
                    order.shuffle(&mut rng);
                    if order.iter().enumerate().all(|(i, &v)| i == v) {
                        order.rotate_left(1);
                    }
                }
                order
            }
        };
        Self { order }
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

fn label(p: usize) -> char {
    char::from(b'A' + (p % 26) as u8)
}

/// Why a typed answer could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ResponseError {
    #[error("type one letter from A to {last}")]
    OneLetter { last: char },
    #[error("type the letters of every right choice (A to {last}), e.g. \"A, C\"")]
    Letters { last: char },
    #[error("'{0}' is not a number; type digits, e.g. 1536 or 0.5")]
    NotANumber(String),
    #[error("type every letter from A to {last} exactly once, in the right order, e.g. \"C A B\"")]
    Ordering { last: char },
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

/// Reads a number the way a learner types it in `lang`: `1_536`, `1 536`, `0,5` (decimal comma),
/// `1,536` (a comma before exactly three digits groups thousands in English; in Turkish the comma
/// is always the decimal mark). Dots are always decimal points, so `589.824` is not 589824.
pub fn parse_number(input: &str, lang: Lang) -> Option<f64> {
    let mut s: String = input
        .trim()
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '_')
        .collect();
    if lang == Lang::Tr && s.contains(',') && !s.contains('.') {
        s = s.replace(',', "."); // Turkish decimal comma
    } else if s.contains(',') && !s.contains('.') && s.matches(',').count() == 1 {
        let frac = s.split(',').nth(1).unwrap_or("");
        if frac.len() == 3 {
            s = s.replace(',', ""); // 1,536 = one thousand five hundred thirty-six
        } else {
            s = s.replace(',', ".");
        }
    } else {
        s = s.replace(',', "");
    }
    s.parse::<f64>().ok().filter(|v| v.is_finite())
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
    /// The right answer as the learner saw it, e.g. `B`, `A, C`, `589824 bytes`, `C A B`.
    pub expected: String,
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
    Grade {
        correct,
        expected: expected_answer(q, pres, lang),
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
            let mut s = format_number(*answer);
            if let Some(u) = unit {
                s.push(' ');
                s.push_str(u.get(lang));
            }
            if *tolerance > 0.0 {
                s.push_str(&format!(" (± {})", format_number(*tolerance)));
            }
            s
        }
        QuestionKind::Ordering { items } => (0..items.len())
            .map(|i| pres.label_of(i).to_string())
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// A number without a spurious `.0` and with at most 4 decimals.
pub fn format_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
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

    fn bank() -> Bank {
        Bank::embedded().unwrap()
    }

    #[test]
    fn single_choice_right_and_wrong() {
        let b = bank();
        let q = b.get("heads-rule").unwrap(); // the 4th choice (D) is right
        let p = Presentation::new(q, 1);
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
        let p = Presentation::new(q, 1);
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
        assert!(parse_response(q, &p, "lots", Lang::En).is_err());
        assert_eq!(parse_number("589,824", Lang::Tr), Some(589.824));
        assert_eq!(parse_number("1.125", Lang::Tr), Some(1.125));
        assert_eq!(parse_number("589,824", Lang::En), Some(589_824.0));
        assert_eq!(parse_number("1_536", Lang::En), Some(1536.0));
        assert_eq!(parse_number("0,5", Lang::En), Some(0.5));
    }

    #[test]
    fn ordering_is_shuffled_and_graded_in_item_order() {
        let b = bank();
        let q = b.get("ring-order").unwrap();
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
