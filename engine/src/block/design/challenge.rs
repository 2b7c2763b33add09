//! The design lab's challenges: a goal, a hint, a check made from the engine's own report of the
//! learner's plan (never from a hand-written answer), and, once solved, why the best answer is
//! best. Stars: one for solving, one for solving at the cheapest price the challenge knows (the
//! bytes of its best plan), one for solving without the hint and without a check that failed
//! first ([`Attempt`]).

use super::plan::{ManualCollective, ManualKind, ShardingPlan, Site, Split, Weight};
use super::program::ErrorAt;
use super::{design, DesignOptions, DesignReport, DesignRunError, Move, NamedPlan, Place};
use crate::block::op::Pass;
use crate::config::{Config, Preset};
use serde::Serialize;

/// What a challenge asks of the report.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "goal", rename_all = "kebab-case")]
pub enum Goal {
    /// A valid plan equal to the reference whose forward pass has exactly these collectives
    /// (all-reduces, and any others).
    ForwardCollectives { all_reduce: usize, others: usize },
    /// A valid plan equal to the reference that sends at least `ratio` times the bytes of the
    /// challenge's best plan.
    CostlyButCorrect { ratio: f64 },
    /// A hand-placed program the rules refuse at the op after `site`, because it reads a
    /// partial sum.
    RefusedAt {
        #[serde(skip)]
        at: Site,
    },
    /// A valid plan equal to the reference with no all-reduce in the forward pass.
    NoForwardAllReduce,
    /// A valid plan equal to the reference with collectives placed by hand.
    RepairByHand,
}

/// One challenge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Challenge {
    /// 1-based stage.
    pub stage: usize,
    /// Stable id for progress and the app's translations.
    pub id: &'static str,
    pub title: &'static str,
    pub goal_text: &'static str,
    pub hint: &'static str,
    /// Why the best answer is best, shown once solved.
    pub why: &'static str,
    pub goal: Goal,
    #[serde(skip)]
    pub config: Config,
    /// The weights the learner chooses; the others stay as `start` has them.
    pub free: Vec<Weight>,
    /// Where the learner starts.
    pub start: ShardingPlan,
    /// The best plan the challenge knows (its bytes are the two-star price, and stage 4's
    /// yardstick).
    pub best: ShardingPlan,
    /// A plan that solves it with every star (the best plan, except where the goal is a costly
    /// or a refused one).
    pub answer: ShardingPlan,
}

fn cfg(tp: usize) -> Config {
    Config {
        hidden: 64,
        heads: 4,
        kv_heads: None,
        ffn: 256,
        seq: 8,
        batch: 2,
        layers: 1,
        tp,
        ..Preset::Tiny.config()
    }
}

fn with(q: Split, o: Split, f1: Split, f2: Split) -> ShardingPlan {
    ShardingPlan {
        qkv: q,
        out: o,
        fc1: f1,
        fc2: f2,
        sequence_parallel: false,
        manual: None,
    }
}

/// Every challenge, in order.
pub fn all() -> Vec<Challenge> {
    use Split::*;
    let mlp = vec![Weight::Fc1, Weight::Fc2];
    let attention = vec![Weight::Qkv, Weight::Out];
    let every = Weight::ALL.to_vec();
    let megatron = NamedPlan::Megatron.plan();
    let megatron_manual = ShardingPlan {
        manual: Some(vec![
            ManualCollective {
                after: Site::Out,
                kind: ManualKind::AllReduce,
            },
            ManualCollective {
                after: Site::Fc2,
                kind: ManualKind::AllReduce,
            },
        ]),
        ..megatron.clone()
    };
    vec![
        Challenge {
            stage: 1,
            id: "mlp-one-all-reduce",
            title: "The MLP on 2 GPUs with one all-reduce",
            goal_text: "Split fc1 and fc2 so that the MLP's forward pass needs a single all-reduce.",
            hint: "GeLU works value by value: if each GPU holds whole values of some columns of A, it needs nothing from the others.",
            why: "fc1 by columns gives each GPU whole columns of A, so GeLU runs locally; fc2 by rows then multiplies exactly those columns and leaves partial sums, summed once. Any other split sums the 4h-wide A or gathers a whole tensor.",
            goal: Goal::ForwardCollectives { all_reduce: 1, others: 0 },
            config: cfg(2),
            free: mlp.clone(),
            start: with(Replicate, Replicate, Replicate, Replicate),
            answer: with(Replicate, Replicate, Columns, Rows),
            best: with(Replicate, Replicate, Columns, Rows),
        },
        Challenge {
            stage: 2,
            id: "attention-one-all-reduce",
            title: "Attention on 4 GPUs with one all-reduce",
            goal_text: "Split the QKV and output projections so that attention's forward pass needs a single all-reduce.",
            hint: "Heads never look at each other: a GPU that holds a head's Q, K and V can run that head alone.",
            why: "QKV by columns gives each GPU whole heads, and attention runs per head; the output projection by rows multiplies each GPU's heads' context by the matching rows and leaves partial sums, summed once.",
            goal: Goal::ForwardCollectives { all_reduce: 1, others: 0 },
            config: cfg(4),
            free: attention,
            start: with(Replicate, Replicate, Replicate, Replicate),
            answer: with(Columns, Rows, Replicate, Replicate),
            best: with(Columns, Rows, Replicate, Replicate),
        },
        Challenge {
            stage: 3,
            id: "layer-two-all-reduces",
            title: "A whole layer with two forward all-reduces",
            goal_text: "Split all four weights so that the layer's forward pass needs exactly two all-reduces.",
            hint: "Do for attention what you did for the MLP: a column split first, a row split second.",
            why: "This is Megatron-LM's split: each half is a column-parallel layer, a local op and a row-parallel layer, so each half sums its partial results once, with an all-reduce after its row-parallel layer (Megatron names it g). In the backward the sums move to the inputs: an all-reduce of each half's input gradient before its column-parallel layer (named f), two more.",
            goal: Goal::ForwardCollectives { all_reduce: 2, others: 0 },
            config: cfg(4),
            free: every.clone(),
            start: with(Replicate, Replicate, Replicate, Replicate),
            answer: megatron.clone(),
            best: megatron.clone(),
        },
        Challenge {
            stage: 4,
            id: "mlp-correct-but-costly",
            title: "Correct, but four times the traffic",
            goal_text: "Find an MLP split that still equals the reference but makes each GPU send at least 3 times the bytes of the best MLP split.",
            hint: "Try the row split first and the column split second.",
            why: "fc1 by rows leaves partial sums of the 4h-wide A, and GeLU needs whole values: the sum now moves a tensor four times wider, and fc2 by columns leaves slices that the residual add must gather. Same numbers, about 4.5 times the bytes: choosing the split dimensions is the whole trick.",
            goal: Goal::CostlyButCorrect { ratio: 3.0 },
            config: cfg(2),
            free: mlp.clone(),
            start: with(Replicate, Replicate, Columns, Rows),
            answer: with(Replicate, Replicate, Rows, Columns),
            best: with(Replicate, Replicate, Columns, Rows),
        },
        Challenge {
            stage: 5,
            id: "gelu-of-a-partial-sum",
            title: "Make GeLU read a partial sum",
            goal_text: "Place the collectives yourself and split fc1 so that GeLU is handed a partial sum; then run it anyway and see what breaks.",
            hint: "Split fc1 by rows and place no collective between fc1 and GeLU.",
            why: "GeLU(a)+GeLU(b) ≠ GeLU(a+b): a non-linear function of a partial sum is not a partial sum of anything. The engine refuses the program; run anyway, its outputs are far from the reference.",
            goal: Goal::RefusedAt { at: Site::Gelu },
            config: cfg(2),
            free: mlp.clone(),
            start: megatron_manual.clone(),
            answer: ShardingPlan {
                fc1: Rows,
                fc2: Columns,
                ..megatron_manual.clone()
            },
            best: ShardingPlan {
                fc1: Rows,
                fc2: Columns,
                ..megatron_manual.clone()
            },
        },
        Challenge {
            stage: 6,
            id: "sequence-parallel-no-all-reduce",
            title: "Sequence parallelism: no all-reduce at all",
            goal_text: "With sequence parallelism on, split the layer so that its forward pass has no all-reduce.",
            hint: "An all-reduce is a reduce-scatter followed by an all-gather; keep the residual stream split by tokens between them.",
            why: "With Megatron's split and the residual stream split by tokens, each g becomes a reduce-scatter (each GPU keeps its tokens of the sum) and each f an all-gather: the same bytes as the two all-reduces, and LayerNorm, bias and residual run on a quarter of the tokens.",
            goal: Goal::NoForwardAllReduce,
            config: cfg(4),
            free: every.clone(),
            start: ShardingPlan {
                sequence_parallel: true,
                ..with(Replicate, Replicate, Replicate, Replicate)
            },
            answer: ShardingPlan {
                sequence_parallel: true,
                ..megatron.clone()
            },
            best: ShardingPlan {
                sequence_parallel: true,
                ..megatron.clone()
            },
        },
        Challenge {
            stage: 7,
            id: "gqa-more-gpus-than-kv-heads",
            title: "Grouped-query attention on more GPUs than KV heads",
            goal_text: "8 query heads share 2 KV heads; split the layer over 4 GPUs with two forward all-reduces.",
            hint: "Megatron's split still works: a GPU that has a query head needs a copy of its KV head.",
            why: "Each GPU holds 2 query heads and a copy of the KV head they read (vLLM's rule), so attention stays local; the copies' K and V gradients cover only their own query heads, so each pair of copies sums them in the backward.",
            goal: Goal::ForwardCollectives { all_reduce: 2, others: 0 },
            config: Config {
                heads: 8,
                kv_heads: Some(2),
                ..cfg(4)
            },
            free: every.clone(),
            start: with(Replicate, Replicate, Replicate, Replicate),
            answer: megatron.clone(),
            best: megatron.clone(),
        },
        Challenge {
            stage: 8,
            id: "repair-missing-g",
            title: "Repair a broken program",
            goal_text: "This hand-placed program forgot a collective. Add what is missing so that it equals the reference.",
            hint: "Follow fc2's output: what does each GPU hold when the residual add reads it?",
            why: "fc2 by rows leaves a partial sum on each GPU, and adding a partial sum to every GPU's copy of the residual stream counts the stream once per GPU: the sum (g, an all-reduce) must come first.",
            goal: Goal::RepairByHand,
            config: cfg(2),
            free: Vec::new(),
            start: ShardingPlan {
                manual: Some(vec![ManualCollective {
                    after: Site::Out,
                    kind: ManualKind::AllReduce,
                }]),
                ..megatron.clone()
            },
            answer: megatron_manual.clone(),
            best: megatron_manual,
        },
    ]
}

/// How a learner came to a check: the hint taken, the checks that failed before this one, and
/// (for the refused-program stage) whether the refused program was run anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Attempt {
    pub used_hint: bool,
    pub failed_checks: u32,
    pub ran_anyway: bool,
}

/// The grade of a plan against a challenge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Grade {
    pub stage: usize,
    pub id: &'static str,
    pub solved: bool,
    /// 0 to 3 (see the module's documentation).
    pub stars: u8,
    /// What is still missing (empty when solved); `Display` words it in English.
    pub missing: Vec<Missing>,
    /// The best answer's explanation, once solved.
    pub why: Option<&'static str>,
    /// The stars a solved plan did not earn, and why (empty with three stars).
    pub missed: Vec<MissedStar>,
}

/// A star a solved plan did not earn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MissedStar {
    /// A split that sends fewer bytes per GPU solves it too.
    Cheaper,
    /// The hint was shown.
    Hint,
    /// An earlier check of this challenge did not pass.
    EarlierCheck,
}

/// One thing a plan still lacks for a challenge.
#[derive(Debug, Clone, PartialEq)]
pub enum Missing {
    /// The rules refuse the program (the first broken rule, in English).
    Refused { rule: String },
    /// It runs, but its numbers differ from the reference.
    Differs,
    /// Its forward pass has other collectives than the goal asks.
    ForwardCollectives {
        all_reduce: usize,
        others: usize,
        want_all_reduce: usize,
        want_others: usize,
    },
    /// It sends `have` times the best split's bytes; the goal is at least `want`.
    TooCheap { have: f64, want: f64 },
    /// The collectives must be placed by hand.
    PlaceByHand,
    /// Refused, but elsewhere than the goal asks (the op in words and the rule).
    RefusedElsewhere { op: &'static str, rule: String },
    /// Valid: nothing reads a partial sum.
    NotRefused,
    /// The refused program has not been run anyway yet.
    RunAnyway,
    /// Sequence parallelism is off.
    SequenceParallelOff,
    /// The forward pass still has all-reduces.
    StillAllReduces(usize),
    /// A weight is kept whole.
    WholeWeight,
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Missing::Refused { rule } => write!(f, "the program is refused: {rule}"),
            Missing::Differs => f.write_str("its numbers differ from the reference"),
            Missing::ForwardCollectives {
                all_reduce,
                others,
                want_all_reduce,
                want_others,
            } => write!(
                f,
                "all-reduces in its forward pass: {all_reduce} (the goal: {want_all_reduce}); \
                 other collectives: {others} (the goal: {want_others})"
            ),
            Missing::TooCheap { have, want } => write!(
                f,
                "it sends {have:.1} times the best split's bytes; the goal is at least {want:.0} \
                 times"
            ),
            Missing::PlaceByHand => f.write_str("place the collectives yourself (manual mode)"),
            Missing::RefusedElsewhere { op, rule } => write!(
                f,
                "the program is refused, but at {op} ({rule}), not where the goal asks"
            ),
            Missing::NotRefused => f.write_str("the program is valid: nothing reads a partial sum"),
            Missing::RunAnyway => f.write_str(
                "run the refused program anyway and see how far it is from the reference",
            ),
            Missing::SequenceParallelOff => f.write_str("turn sequence parallelism on"),
            Missing::StillAllReduces(n) => {
                write!(f, "all-reduces still in its forward pass: {n}")
            }
            Missing::WholeWeight => f.write_str(
                "split every weight: a whole weight on every GPU is not tensor parallelism",
            ),
        }
    }
}

impl Serialize for Missing {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Why a plan cannot be graded for a challenge.
#[derive(Debug, thiserror::Error)]
pub enum ChallengeError {
    #[error("no challenge {0}: the challenges are 1 to {1}")]
    NoSuchStage(usize, usize),
    #[error(
        "challenge {stage} keeps {weight} as it starts ({split}); you choose {free} — change those instead"
    )]
    FixedWeight {
        stage: usize,
        weight: &'static str,
        split: Split,
        free: String,
    },
    #[error(transparent)]
    Run(#[from] DesignRunError),
}

/// The challenge of `stage` (1-based).
pub fn stage(stage: usize) -> Result<Challenge, ChallengeError> {
    let all = all();
    let n = all.len();
    all.into_iter()
        .find(|c| c.stage == stage)
        .ok_or(ChallengeError::NoSuchStage(stage, n))
}

impl Challenge {
    /// Whether the answer places collectives by hand that the start lacks (the repair
    /// challenge): its rule's fix buttons would give the answer away.
    pub fn answer_places_collectives(&self) -> bool {
        self.answer.manual != self.start.manual
    }

    /// Refuses a plan that changes a weight the challenge keeps.
    pub fn check_fixed(&self, plan: &ShardingPlan) -> Result<(), ChallengeError> {
        for w in Weight::ALL {
            if !self.free.contains(&w) && plan.split(w) != self.start.split(w) {
                return Err(ChallengeError::FixedWeight {
                    stage: self.stage,
                    weight: w.label(),
                    split: self.start.split(w),
                    free: if self.free.is_empty() {
                        "only the collectives".into()
                    } else {
                        self.free
                            .iter()
                            .map(|w| w.label())
                            .collect::<Vec<_>>()
                            .join(" and ")
                    },
                });
            }
        }
        Ok(())
    }

    /// Grades `plan` as a first check that ran the program (see [`Challenge::grade_attempt`]).
    pub fn grade(&self, plan: &ShardingPlan, used_hint: bool) -> Result<Grade, ChallengeError> {
        self.grade_attempt(
            plan,
            &Attempt {
                used_hint,
                failed_checks: 0,
                ran_anyway: true,
            },
        )
    }

    /// Grades `plan` (run against the reference, `allow_wrong` for the refused-program stage)
    /// for an attempt: the hint and failed checks cost the third star; the refused-program
    /// stage is solved only once the learner has run the refused program anyway.
    pub fn grade_attempt(
        &self,
        plan: &ShardingPlan,
        attempt: &Attempt,
    ) -> Result<Grade, ChallengeError> {
        let used_hint = attempt.used_hint;
        self.check_fixed(plan)?;
        let opts = DesignOptions {
            allow_wrong: matches!(self.goal, Goal::RefusedAt { .. }),
            execute: true,
        };
        let report = design(&self.config, plan, None, &opts)?;
        let best = design(
            &self.config,
            &self.best,
            None,
            &DesignOptions {
                allow_wrong: true,
                execute: false,
            },
        )?;
        let mut g = self.grade_report(plan, &report, &best, used_hint);
        if matches!(self.goal, Goal::RefusedAt { .. }) && !attempt.ran_anyway && g.solved {
            g.missing.push(Missing::RunAnyway);
            g.solved = false;
            g.stars = 0;
            g.why = None;
            g.missed.clear();
        }
        if g.solved && attempt.failed_checks > 0 && g.stars == 3 {
            g.stars = 2;
            g.missed.push(MissedStar::EarlierCheck);
        }
        Ok(g)
    }

    fn grade_report(
        &self,
        plan: &ShardingPlan,
        r: &DesignReport,
        best: &DesignReport,
        used_hint: bool,
    ) -> Grade {
        let mut missing = Vec::new();
        let correct = |missing: &mut Vec<Missing>| {
            if !r.valid {
                missing.push(Missing::Refused {
                    rule: r.errors.first().map_or(String::new(), |e| e.rule.clone()),
                });
            } else if r.equal_to_reference != Some(true) {
                missing.push(Missing::Differs);
            }
        };
        let c = &r.price.collectives;
        let all_reduce = c.get(Pass::Forward, Move::AllReduce.name());
        let others: usize = c
            .forward
            .iter()
            .filter(|(k, _)| **k != Move::AllReduce.name())
            .map(|(_, n)| n)
            .sum();
        match self.goal {
            Goal::ForwardCollectives {
                all_reduce: want,
                others: want_others,
            } => {
                correct(&mut missing);
                if all_reduce != want || others != want_others {
                    missing.push(Missing::ForwardCollectives {
                        all_reduce,
                        others,
                        want_all_reduce: want,
                        want_others,
                    });
                }
            }
            Goal::CostlyButCorrect { ratio } => {
                correct(&mut missing);
                let have = r.price.bytes_sent_per_rank as f64
                    / (best.price.bytes_sent_per_rank.max(1)) as f64;
                if have < ratio {
                    missing.push(Missing::TooCheap { have, want: ratio });
                }
            }
            Goal::RefusedAt { at } => {
                if plan.manual.is_none() {
                    missing.push(Missing::PlaceByHand);
                }
                match r.errors.first() {
                    Some(e) if e.at == ErrorAt::Op(at) && e.holds == Place::Partial => {}
                    Some(e) => missing.push(Missing::RefusedElsewhere {
                        op: e.op_words,
                        rule: e.rule.clone(),
                    }),
                    None => missing.push(Missing::NotRefused),
                }
            }
            Goal::NoForwardAllReduce => {
                correct(&mut missing);
                if !plan.sequence_parallel {
                    missing.push(Missing::SequenceParallelOff);
                }
                if all_reduce > 0 {
                    missing.push(Missing::StillAllReduces(all_reduce));
                }
                if Weight::ALL
                    .iter()
                    .any(|w| plan.split(*w) == Split::Replicate)
                {
                    missing.push(Missing::WholeWeight);
                }
            }
            Goal::RepairByHand => {
                if plan.manual.is_none() {
                    missing.push(Missing::PlaceByHand);
                }
                correct(&mut missing);
            }
        }
        let solved = missing.is_empty();
        let cheapest = match self.goal {
            // The costly stage's star is for the costly answer itself; the refused one has no price.
            Goal::CostlyButCorrect { .. } | Goal::RefusedAt { .. } => true,
            _ => r.price.bytes_sent_per_rank <= best.price.bytes_sent_per_rank,
        };
        let stars = if solved {
            1 + u8::from(cheapest) + u8::from(!used_hint)
        } else {
            0
        };
        let missed = [
            (!cheapest, MissedStar::Cheaper),
            (used_hint, MissedStar::Hint),
        ]
        .into_iter()
        .filter(|(lost, _)| solved && *lost)
        .map(|(_, m)| m)
        .collect();
        Grade {
            stage: self.stage,
            id: self.id,
            solved,
            stars,
            missing,
            why: solved.then_some(self.why),
            missed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each challenge's best plan solves it with every star, and its starting plan does not.
    #[test]
    fn the_best_answer_solves_and_the_start_does_not() {
        for c in all() {
            let best = c.grade(&c.answer, false);
            let best = match best {
                Ok(g) => g,
                Err(e) => panic!("stage {}: {e}", c.stage),
            };
            assert!(best.solved, "stage {}: {:?}", c.stage, best.missing);
            assert_eq!(best.stars, 3, "stage {}", c.stage);
            assert!(
                best.missed.is_empty(),
                "stage {}: {:?}",
                c.stage,
                best.missed
            );
            assert!(best.why.is_some());
            let start = c.grade(&c.start, true);
            let start = match start {
                Ok(g) => g,
                Err(e) => panic!("stage {}: {e}", c.stage),
            };
            assert!(!start.solved, "stage {} is solved by its start", c.stage);
            assert!(!start.missing.is_empty());
            assert_eq!(start.stars, 0);
        }
    }

    /// The refused-program stage is solved only once the refused program was run anyway, and a
    /// check that failed first costs the third star.
    #[test]
    fn running_anyway_and_failed_checks_count() {
        let gelu = all()
            .into_iter()
            .find(|c| matches!(c.goal, Goal::RefusedAt { .. }))
            .unwrap_or_else(|| panic!("a refused-program stage"));
        let not_run = gelu
            .grade_attempt(
                &gelu.answer,
                &Attempt {
                    used_hint: false,
                    failed_checks: 0,
                    ran_anyway: false,
                },
            )
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!not_run.solved);
        assert_eq!(not_run.missing, vec![Missing::RunAnyway]);
        assert!(not_run.why.is_none());
        let run = gelu
            .grade_attempt(
                &gelu.answer,
                &Attempt {
                    used_hint: false,
                    failed_checks: 0,
                    ran_anyway: true,
                },
            )
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(run.solved && run.stars == 3, "{run:?}");
        for c in all() {
            let after_a_miss = c
                .grade_attempt(
                    &c.answer,
                    &Attempt {
                        used_hint: false,
                        failed_checks: 1,
                        ran_anyway: true,
                    },
                )
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(after_a_miss.solved, "stage {}", c.stage);
            assert_eq!(
                after_a_miss.stars, 2,
                "stage {}: a failed check costs a star",
                c.stage
            );
            assert_eq!(
                after_a_miss.missed,
                vec![MissedStar::EarlierCheck],
                "stage {}: and says so",
                c.stage
            );
        }
    }

    /// Wrong answers fail for the stated reason; a fixed weight cannot be changed.
    #[test]
    fn wrong_answers_say_what_is_missing() {
        let mlp = stage(1).unwrap_or_else(|e| panic!("{e}"));
        let rows_first = ShardingPlan {
            fc1: Split::Rows,
            fc2: Split::Columns,
            ..mlp.start.clone()
        };
        let g = mlp
            .grade(&rows_first, false)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!g.solved);
        assert!(
            g.missing[0].to_string().contains("all-reduce"),
            "{:?}",
            g.missing
        );
        let cheat = ShardingPlan {
            qkv: Split::Columns,
            ..mlp.best.clone()
        };
        let e = mlp.grade(&cheat, false).err().map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("fc1 and fc2")));
        // Stage 4 is solved by the costly split, with a hint: two stars.
        let costly = stage(4).unwrap_or_else(|e| panic!("{e}"));
        let g = costly
            .grade(&rows_first, true)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(g.solved, "{:?}", g.missing);
        assert_eq!(g.stars, 2);
        assert_eq!(g.missed, vec![MissedStar::Hint], "the hint's star, named");
        // Stage 3 solved by a plan that is correct but not Megatron's fails on the count.
        let layer = stage(3).unwrap_or_else(|e| panic!("{e}"));
        let g = layer
            .grade(&NamedPlan::ColumnsColumns.plan(), false)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!g.solved);
        assert!(stage(9).is_err());
    }
}
