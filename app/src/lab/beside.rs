//! Side by side: a second program drawn beside the scenario's in the Playground, the walkthrough
//! and the Timeline — the same layer at another TP size, or (while the walkthrough steps through
//! a learner's plan) Megatron's split on the same GPUs. The walkthrough steps both together: each
//! step of the first is matched to the step of the second that does the same op
//! ([`align`]).
//!
//! The second program is the engine's own: its plan ([`ShardPlan`]) and trace
//! ([`schedule`]) for the changed configuration, never a second model.

use super::walk::WalkStep;
use super::{Derived, PlanWalk, Scenario};
use crate::i18n::t_args;
use std::sync::Arc;
use tplab_engine::block::plan::ShardPlan;
use tplab_engine::block::program::schedule;
use tplab_engine::config::{Config, ConfigError};
use tplab_lessons::Lang;

/// TP sizes offered beside the scenario's (those its heads split over).
const TP_CHOICES: [usize; 4] = [1, 2, 4, 8];

/// What is drawn beside the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Beside {
    /// Nothing: one program, as before.
    #[default]
    Nothing,
    /// The scenario (Megatron's split) at another TP size.
    Tp(usize),
    /// While a learner's plan is stepped through: Megatron's split on the same GPUs.
    Megatron,
}

/// The program drawn beside the scenario.
pub struct Other {
    pub with: Beside,
    pub config: Config,
    pub derived: Result<Derived, ConfigError>,
}

impl Other {
    /// Its name in a caption: "TP = 2", "Megatron's split on 4 GPUs".
    pub fn label(&self, lang: Lang) -> String {
        match self.with {
            Beside::Megatron => t_args(
                lang,
                "beside-megatron-on",
                &[("tp", self.config.tp.to_string())],
            ),
            _ => t_args(lang, "beside-tp", &[("tp", self.config.tp.to_string())]),
        }
    }
}

/// What a second program is made for: the scenario's and the walk's generations, the choice.
pub type Key = (u64, u64, Beside);

/// The choice, and the second program computed once per change of it or of the scenario.
#[derive(Default)]
pub struct BesideState {
    pub with: Beside,
    /// The program, and the (scenario generation, walk generation, choice) it was made for.
    cache: Option<(Key, Option<Arc<Other>>)>,
}

/// The configuration `config` at `tp` GPUs: sequence parallelism needs two GPUs at least.
pub fn at_tp(config: &Config, tp: usize) -> Config {
    Config {
        tp,
        sequence_parallel: config.sequence_parallel && tp > 1,
        ..config.clone()
    }
}

/// What can be put beside `base`: nothing, Megatron's split (while a plan is walked), and the
/// TP sizes other than `base.tp` whose shapes are valid.
pub fn choices(base: &Config, walking: bool) -> Vec<Beside> {
    let mut out = vec![Beside::Nothing];
    if walking {
        out.push(Beside::Megatron);
    }
    out.extend(
        TP_CHOICES
            .iter()
            .filter(|&&tp| tp != base.tp && at_tp(base, tp).validate_shapes().is_ok())
            .map(|&tp| Beside::Tp(tp)),
    );
    out
}

impl BesideState {
    /// The program beside the scenario (or beside the walked plan), if one is chosen and it
    /// differs from the scenario's.
    pub fn other(&mut self, scenario: &Scenario, walk: Option<&PlanWalk>) -> Option<Arc<Other>> {
        let key = (
            scenario.generation(),
            walk.map_or(0, |w| w.generation),
            self.with,
        );
        if let Some((k, other)) = &self.cache {
            if *k == key {
                return other.clone();
            }
        }
        let base = walk.map_or_else(|| scenario.config().clone(), |w| w.trace.config.clone());
        let config = match self.with {
            Beside::Nothing => None,
            Beside::Megatron => walk.map(|_| base.clone()),
            Beside::Tp(tp) if tp != base.tp => Some(at_tp(&base, tp)),
            Beside::Tp(_) => None,
        };
        let other = config.map(|config| {
            let derived = config.validate_shapes().and_then(|()| {
                Ok(Derived {
                    plan: ShardPlan::new(&config),
                    trace: Arc::new(
                        schedule(&config).map_err(|e| ConfigError::Program(e.to_string()))?,
                    ),
                })
            });
            Arc::new(Other {
                with: self.with,
                config,
                derived,
            })
        });
        self.cache = Some((key, other.clone()));
        other
    }
}

/// For each step of `left`, the step of `right` shown beside it and whether it does the same
/// op (same layer, pass and op). Matching goes forward only: a step of `left` with no match
/// (an all-reduce at TP 4 where TP 1 has none) keeps `right` at its last matched step.
pub fn align(left: &[WalkStep], right: &[WalkStep]) -> Vec<(usize, bool)> {
    let mut out = Vec::with_capacity(left.len());
    let mut at = 0usize;
    for s in left {
        let found = right[at..]
            .iter()
            .position(|r| r.layer == s.layer && r.pass == s.pass && r.op == s.op)
            .map(|i| at + i);
        match found {
            Some(j) => {
                at = j;
                out.push((j, true));
            }
            None => out.push((at.min(right.len().saturating_sub(1)), false)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::walk::walk_steps;
    use tplab_engine::config::Preset;

    fn trace_at(tp: usize, sp: bool) -> tplab_engine::trace::Trace {
        let config = Config {
            tp,
            sequence_parallel: sp,
            layers: 2,
            ..Preset::Tiny.config()
        };
        schedule(&config).expect("Megatron's plan propagates")
    }

    #[test]
    fn two_tp_sizes_step_through_the_same_ops_together() {
        let (a, b) = (
            walk_steps(&trace_at(2, false)),
            walk_steps(&trace_at(4, false)),
        );
        let pairs = align(&a, &b);
        assert_eq!(pairs.len(), a.len());
        // Megatron's split issues the same ops at every TP > 1: every step has its twin.
        for (i, &(j, same)) in pairs.iter().enumerate() {
            assert!(same, "step {i} ({}) has no twin at TP 4", a[i].op);
            assert_eq!(
                (a[i].layer, a[i].pass, a[i].op),
                (b[j].layer, b[j].pass, b[j].op)
            );
        }
        // Matched in order, never backwards.
        assert!(pairs.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    #[test]
    fn every_compute_step_has_its_twin_with_sequence_parallelism_and_grouped_query_attention() {
        for (sp, kv) in [(true, None), (false, Some(2)), (true, Some(2))] {
            let at = |tp: usize| {
                let config = Config {
                    tp,
                    sequence_parallel: sp,
                    kv_heads: kv,
                    layers: 2,
                    ..Preset::Tiny.config()
                };
                config.validate_shapes().expect("valid");
                schedule(&config).expect("Megatron's plan propagates")
            };
            for (a, b) in [(2, 4), (4, 2), (4, 1)] {
                let (ta, tb) = (at(a), at(b));
                let (sa, sb) = (walk_steps(&ta), walk_steps(&tb));
                let pairs = align(&sa, &sb);
                for (i, s) in sa.iter().enumerate() {
                    let (j, same) = pairs[i];
                    assert!(j < sb.len());
                    if !ta.events[s.first_event].is_collective() {
                        assert!(
                            same,
                            "sp {sp}, kv {kv:?}: TP {a}'s {} has no twin at TP {b}",
                            s.op
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn one_gpu_has_no_collectives_to_match() {
        let four = trace_at(4, false);
        let (a, b) = (walk_steps(&four), walk_steps(&trace_at(1, false)));
        let pairs = align(&a, &b);
        let unmatched: Vec<usize> = pairs
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.1)
            .map(|(i, _)| i)
            .collect();
        // Exactly TP 4's communicating collectives lack a twin on one GPU.
        let collectives: Vec<usize> = a
            .iter()
            .enumerate()
            .filter(|(_, s)| four.events[s.first_event].is_collective())
            .map(|(i, _)| i)
            .collect();
        assert!(!collectives.is_empty());
        assert_eq!(unmatched, collectives);
        // An unmatched step shows the one before it: the op that produced what it would move.
        for &i in &unmatched {
            assert_eq!(pairs[i].0, pairs[i - 1].0);
        }
    }

    #[test]
    fn choices_leave_out_the_scenario_s_own_size_and_sizes_its_heads_do_not_split_over() {
        let config = Config {
            tp: 2,
            heads: 4,
            ..Preset::Tiny.config()
        };
        let c = choices(&config, false);
        assert!(c.contains(&Beside::Tp(1)) && c.contains(&Beside::Tp(4)));
        assert!(!c.contains(&Beside::Tp(2)), "its own size");
        assert!(
            !c.contains(&Beside::Tp(8)),
            "4 heads do not split over 8 GPUs"
        );
        assert!(
            !c.contains(&Beside::Megatron),
            "only while a plan is walked"
        );
        assert!(choices(&config, true).contains(&Beside::Megatron));
    }

    #[test]
    fn sequence_parallelism_is_dropped_on_one_gpu_only() {
        let config = Config {
            tp: 4,
            sequence_parallel: true,
            ..Preset::Tiny.config()
        };
        assert!(!at_tp(&config, 1).sequence_parallel);
        assert!(at_tp(&config, 2).sequence_parallel);
        assert!(at_tp(&config, 1).validate_shapes().is_ok());
    }
}
