//! The walkthrough's predictions: before each collective of the first layer the learner
//! predicts what it will do, then the step plays. An answer, a skip or a presenter's reveal is
//! kept per program walked (the scenario's label, or the learner's plan), saved with the lab
//! file so that a restart keeps a learner's answers and skips; a reveal is for the room that saw
//! it, and a restart (the next class, or the class after a rehearsal) asks again. The key that
//! steps never answers a question: a prediction
//! waits for an answer or an explicit skip, and skipped questions come back at the end of the
//! layer.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What happened to one question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Answer {
    /// The option picked, and whether it was right.
    Picked { choice: usize, right: bool },
    /// Skipped: asked again at the end of the layer.
    Skipped,
    /// Revealed without an answer (a presenter's reveal to the class, a jump from a lesson).
    Revealed,
}

/// Answers per program walked (its key), per step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Predictions {
    by_walk: BTreeMap<String, BTreeMap<usize, Answer>>,
}

/// The most programs whose answers are kept (the oldest go first).
const KEPT_WALKS: usize = 64;

impl Predictions {
    /// The answers of the program `walk`.
    pub fn of(&self, walk: &str) -> Option<&BTreeMap<usize, Answer>> {
        self.by_walk.get(walk)
    }

    /// The answer to step `step` of `walk`, if any.
    pub fn get(&self, walk: &str, step: usize) -> Option<Answer> {
        self.by_walk.get(walk)?.get(&step).copied()
    }

    /// Records an answer (a pick replaces a skip; nothing replaces a pick).
    pub fn record(&mut self, walk: &str, step: usize, answer: Answer) {
        if !self.by_walk.contains_key(walk) && self.by_walk.len() >= KEPT_WALKS {
            if let Some(first) = self.by_walk.keys().next().cloned() {
                self.by_walk.remove(&first);
            }
        }
        let answers = self.by_walk.entry(walk.to_string()).or_default();
        match answers.get(&step) {
            Some(Answer::Picked { .. }) => {}
            _ => {
                answers.insert(step, answer);
            }
        }
    }

    /// Right predictions and predictions answered, of `walk`.
    pub fn tally(&self, walk: &str) -> (usize, usize) {
        let Some(a) = self.by_walk.get(walk) else {
            return (0, 0);
        };
        let picked = a.values().filter_map(|x| match x {
            Answer::Picked { right, .. } => Some(*right),
            _ => None,
        });
        let right = picked.clone().filter(|r| *r).count();
        (right, picked.count())
    }

    /// Steps of `walk` that were skipped, in order.
    pub fn skipped(&self, walk: &str) -> Vec<usize> {
        self.by_walk.get(walk).map_or_else(Vec::new, |a| {
            a.iter()
                .filter(|(_, x)| **x == Answer::Skipped)
                .map(|(s, _)| *s)
                .collect()
        })
    }

    /// Forgets one skipped question so that it is asked again (answers stay).
    pub fn forget(&mut self, walk: &str, step: usize) {
        if let Some(a) = self.by_walk.get_mut(walk) {
            if a.get(&step) == Some(&Answer::Skipped) {
                a.remove(&step);
            }
        }
    }

    /// Forgets every reveal (a presenter's, or a jump past a question), keeping the answers
    /// and the skips: what a restart reads back, so the next class is asked again.
    pub fn drop_reveals(&mut self) {
        for a in self.by_walk.values_mut() {
            a.retain(|_, x| *x != Answer::Revealed);
        }
        self.by_walk.retain(|_, a| !a.is_empty());
    }

    /// Forgets `walk`'s answers (the walkthrough's "ask me again").
    pub fn clear(&mut self, walk: &str) {
        self.by_walk.remove(walk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pick_replaces_a_skip_and_nothing_replaces_a_pick() {
        let mut p = Predictions::default();
        p.record("w", 3, Answer::Skipped);
        assert_eq!(p.skipped("w"), vec![3]);
        p.record(
            "w",
            3,
            Answer::Picked {
                choice: 1,
                right: true,
            },
        );
        assert_eq!(p.skipped("w"), Vec::<usize>::new());
        p.record("w", 3, Answer::Skipped);
        assert_eq!(
            p.get("w", 3),
            Some(Answer::Picked {
                choice: 1,
                right: true
            })
        );
        assert_eq!(p.tally("w"), (1, 1));
        assert_eq!(p.tally("other"), (0, 0));
    }

    /// A teacher who rehearsed (reveals) still has the questions in class the next day; a
    /// learner's own answers and skips stay.
    #[test]
    fn a_restart_forgets_reveals_and_keeps_answers_and_skips() {
        let mut p = Predictions::default();
        let pick = Answer::Picked {
            choice: 0,
            right: true,
        };
        p.record("megatron", 5, pick);
        p.record("megatron", 7, Answer::Revealed);
        p.record("megatron", 9, Answer::Skipped);
        p.record("rehearsed", 5, Answer::Revealed);
        p.drop_reveals();
        assert_eq!(p.get("megatron", 5), Some(pick));
        assert_eq!(p.get("megatron", 7), None);
        assert_eq!(p.skipped("megatron"), vec![9]);
        assert!(p.of("rehearsed").is_none());
    }

    #[test]
    fn answers_survive_a_round_trip_through_json() {
        let mut p = Predictions::default();
        p.record(
            "megatron",
            5,
            Answer::Picked {
                choice: 2,
                right: false,
            },
        );
        p.record("megatron", 7, Answer::Revealed);
        let back: Predictions =
            serde_json::from_str(&serde_json::to_string(&p).expect("json")).expect("parse");
        assert_eq!(back, p);
    }

    #[test]
    fn only_the_latest_walks_are_kept() {
        let mut p = Predictions::default();
        for i in 0..(KEPT_WALKS + 5) {
            p.record(&format!("w{i:03}"), 0, Answer::Skipped);
        }
        assert_eq!(p.by_walk.len(), KEPT_WALKS);
    }
}
