//! The schedules checked against the rules from the outside: each op once, each input used
//! only after the op that makes it has ended, the bubble equal to its closed form.

use super::*;
use std::collections::HashMap;

/// Every configuration the Done-when names: P ≤ 8, M ≤ 32, V 2 and 3 where valid.
fn all_configs(costs: Costs) -> Vec<PipelineConfig> {
    let mut out = Vec::new();
    for p in 1..=8usize {
        for m in 1..=32usize {
            for schedule in Schedule::ALL {
                let vs: &[usize] = if schedule == Schedule::Interleaved {
                    if !m.is_multiple_of(p) {
                        continue;
                    }
                    &[2, 3]
                } else {
                    &[1]
                };
                for &v in vs {
                    out.push(PipelineConfig {
                        schedule,
                        stages: p,
                        microbatches: m,
                        virtual_stages: v,
                        costs,
                    });
                }
            }
        }
    }
    out
}

/// Checks `run` against `cfg` without trusting the simulator: the multiset of ops, the ticks
/// of each op, and every dependency.
fn check(cfg: &PipelineConfig, run: &PipelineRun) {
    let (p, m, v) = (cfg.stages, cfg.microbatches, cfg.virtual_stages);
    let passes: &[Pass] = if cfg.schedule.splits_backward() {
        &[Pass::F, Pass::B, Pass::W]
    } else {
        &[Pass::F, Pass::B]
    };
    assert_eq!(run.stages.len(), p, "{cfg:?}");
    // Each (pass, micro-batch, chunk) exactly once on every stage.
    for (s, ops) in run.stages.iter().enumerate() {
        let mut seen: HashMap<(Pass, usize, usize), usize> = HashMap::new();
        for o in ops {
            *seen.entry((o.op, o.microbatch, o.chunk)).or_default() += 1;
        }
        assert_eq!(seen.len(), passes.len() * m * v, "{cfg:?} stage {s}");
        for &pass in passes {
            for mb in 0..m {
                for c in 0..v {
                    assert_eq!(
                        seen.get(&(pass, mb, c)),
                        Some(&1),
                        "{cfg:?} stage {s}: {pass:?} of micro-batch {mb} chunk {c}"
                    );
                }
            }
        }
    }
    // The timeline is the order, one op at a time per stage, each for its cost.
    let mut end_of: HashMap<(Pass, usize, usize), u64> = HashMap::new();
    for (s, (ops, timed)) in run.stages.iter().zip(&run.timeline).enumerate() {
        assert_eq!(ops.len(), timed.len());
        let mut free = 0;
        for (o, t) in ops.iter().zip(timed) {
            assert_eq!((o.op, o.microbatch, o.chunk), (t.op, t.microbatch, t.chunk));
            assert!(t.start >= free, "{cfg:?} stage {s}: overlap at {t:?}");
            assert_eq!(t.end - t.start, cfg.costs.of(cfg.schedule, t.op));
            free = t.end;
            end_of.insert((t.op, t.microbatch, t.chunk * p + s), t.end);
        }
    }
    // Nothing used before it exists: the forward input comes from the previous chunk's F, the
    // backward needs this chunk's F (its activations) and the next chunk's B (the gradient),
    // the weight gradient this chunk's B.
    let chunks = p * v;
    for (s, timed) in run.timeline.iter().enumerate() {
        for t in timed {
            let c = t.chunk * p + s;
            let mut deps = Vec::new();
            match t.op {
                Pass::F if c > 0 => deps.push((Pass::F, c - 1)),
                Pass::F => {}
                Pass::B => {
                    deps.push((Pass::F, c));
                    if c + 1 < chunks {
                        deps.push((Pass::B, c + 1));
                    }
                }
                Pass::W => deps.push((Pass::B, c)),
            }
            for (dp, dc) in deps {
                let ready = end_of[&(dp, t.microbatch, dc)];
                assert!(
                    t.start >= ready,
                    "{cfg:?}: stage {s} starts {t:?} at {} before {dp:?} of chunk {dc} ends at \
                     {ready}",
                    t.start
                );
            }
        }
    }
    let makespan = end_of.values().copied().max().unwrap();
    assert_eq!(run.makespan, makespan);
    let busy: u64 = run.busy_per_stage.iter().sum();
    assert_eq!(
        Ratio::new(p as u64 * makespan - busy, p as u64 * makespan),
        run.bubble
    );
}

#[test]
fn every_schedule_runs_each_op_once_after_its_inputs_and_its_bubble_is_the_formula() {
    let mut checked = 0;
    for costs in [
        Costs::default(),
        Costs {
            forward: 2,
            backward_input: 3,
            backward_weight: 1,
        },
    ] {
        for cfg in all_configs(costs) {
            let run = run(&cfg).unwrap_or_else(|e| panic!("{cfg:?}: {e}"));
            check(&cfg, &run);
            let f = run.formula.as_ref().expect("inside the formula's domain");
            assert_eq!(run.bubble, f.fraction, "{cfg:?}");
            // The idle ticks per stage add up to the measured bubble.
            let p = cfg.stages as u64;
            assert_eq!(
                p * run.makespan - run.busy_per_stage.iter().sum::<u64>(),
                p * f.idle_per_stage,
                "{cfg:?}"
            );
            checked += 1;
        }
    }
    // 938 configurations (768 non-interleaved, 170 interleaved) at each of the two costs.
    assert_eq!(checked, 2 * 938);
}

#[test]
fn the_closed_forms_are_the_textbook_ones() {
    let r = |s, p, m, v| {
        run(&PipelineConfig {
            virtual_stages: v,
            ..PipelineConfig::new(s, p, m)
        })
        .unwrap()
        .bubble
    };
    // (P−1)/(M+P−1): 3/11 at P=4, M=8.
    assert_eq!(r(Schedule::GPipe, 4, 8, 1), Ratio::new(3, 11));
    assert_eq!(r(Schedule::OneFOneB, 4, 8, 1), Ratio::new(3, 11));
    // (P−1)/(V·M+P−1): 3/19 at V=2.
    assert_eq!(r(Schedule::Interleaved, 4, 8, 2), Ratio::new(3, 19));
    // ZB-H1 at t_F = t_B = t_W: idle (P−1)·1 beside 3M of work, a third of 1F1B's 3(P−1).
    assert_eq!(r(Schedule::ZbH1, 4, 8, 1), Ratio::new(3, 27));
    let one = run(&PipelineConfig::new(Schedule::OneFOneB, 4, 8)).unwrap();
    let zb = run(&PipelineConfig::new(Schedule::ZbH1, 4, 8)).unwrap();
    let idle = |r: &PipelineRun| r.formula.as_ref().unwrap().idle_per_stage;
    assert_eq!(idle(&one), 3 * idle(&zb));
}

#[test]
fn peak_activations_follow_each_schedule() {
    for p in 1..=8 {
        for m in 1..=16 {
            let peak = |s| run(&PipelineConfig::new(s, p, m)).unwrap().peak_activations;
            // GPipe holds every micro-batch; 1F1B at most P − s; ZB-H1 P on every stage
            // (its W trails the forward by P − 1), the 1F1B first stage's peak.
            assert_eq!(peak(Schedule::GPipe), vec![m; p]);
            let want: Vec<usize> = (0..p).map(|s| (p - s).min(m)).collect();
            assert_eq!(peak(Schedule::OneFOneB), want, "P={p} M={m}");
            assert_eq!(peak(Schedule::ZbH1), vec![p.min(m); p], "P={p} M={m}");
        }
    }
    // Interleaved: Megatron's warm-up chunk-forwards plus the one in flight.
    for (p, m, v) in [(4, 8, 2), (4, 12, 3), (2, 4, 2), (8, 16, 2)] {
        let r = run(&PipelineConfig {
            virtual_stages: v,
            ..PipelineConfig::new(Schedule::Interleaved, p, m)
        })
        .unwrap();
        let want: Vec<usize> = (0..p)
            .map(|s| (2 * (p - s - 1) + (v - 1) * p + 1).min(m * v))
            .collect();
        assert_eq!(r.peak_activations, want, "P={p} M={m} V={v}");
    }
}

#[test]
fn sends_carry_activations_forward_and_gradients_back() {
    for cfg in all_configs(Costs::default())
        .into_iter()
        .filter(|c| c.microbatches <= 8)
    {
        let r = run(&cfg).unwrap();
        let (p, m, chunks) = (cfg.stages, cfg.microbatches, cfg.chunks());
        let count = |k| r.sends.iter().filter(|s| s.kind == k).count();
        // Every chunk boundary crosses stages when P > 1 (chunk c lives on stage c mod P).
        let want = if p > 1 { m * (chunks - 1) } else { 0 };
        assert_eq!(count(SendKind::Activation), want, "{cfg:?}");
        assert_eq!(count(SendKind::Gradient), want, "{cfg:?}");
        for s in &r.sends {
            let next = match s.kind {
                SendKind::Activation => (s.from_chunk + 1) % p,
                SendKind::Gradient => (s.from_chunk + p - 1) % p,
            };
            assert_eq!((s.from_stage, s.to_stage), (s.from_chunk % p, next));
        }
    }
}

#[test]
fn the_execution_order_meets_every_dependency_first() {
    for cfg in all_configs(Costs::default())
        .into_iter()
        .filter(|c| c.microbatches <= 8)
    {
        let r = run(&cfg).unwrap();
        let mut done = std::collections::HashSet::new();
        for (s, t) in r.execution_order() {
            let c = t.chunk * cfg.stages + s;
            let ok = match t.op {
                Pass::F => c == 0 || done.contains(&(Pass::F, t.microbatch, c - 1)),
                Pass::B => {
                    done.contains(&(Pass::F, t.microbatch, c))
                        && (c + 1 == cfg.chunks() || done.contains(&(Pass::B, t.microbatch, c + 1)))
                }
                Pass::W => done.contains(&(Pass::B, t.microbatch, c)),
            };
            assert!(ok, "{cfg:?}: {t:?} on stage {s}");
            done.insert((t.op, t.microbatch, c));
        }
    }
}

#[test]
fn an_order_that_cannot_run_is_an_error_not_a_hang() {
    let cfg = PipelineConfig::new(Schedule::OneFOneB, 2, 2);
    let mut stages = orders(&cfg).unwrap();
    // The last stage's backward before its forward.
    stages[1].swap(0, 1);
    let e = simulate(&cfg, &stages).unwrap_err();
    assert!(matches!(e, PipelineError::Deadlock { .. }), "{e}");
    assert!(e.to_string().contains("never comes"), "{e}");
    // A micro-batch twice.
    let mut twice = orders(&cfg).unwrap();
    twice[0][0].microbatch = 1;
    assert!(matches!(
        simulate(&cfg, &twice),
        Err(PipelineError::Repeated { stage: 0, .. })
    ));
    assert!(matches!(
        simulate(&cfg, &stages[..1]),
        Err(PipelineError::WrongStageCount { .. })
    ));
}

#[test]
fn bad_settings_name_the_rule_and_the_fix() {
    let e = |cfg: PipelineConfig| run(&cfg).unwrap_err();
    assert_eq!(
        e(PipelineConfig::new(Schedule::GPipe, 0, 4)),
        PipelineError::NoStages
    );
    assert_eq!(
        e(PipelineConfig::new(Schedule::GPipe, 4, 0)),
        PipelineError::NoMicrobatches
    );
    let inter = |m, v| PipelineConfig {
        virtual_stages: v,
        ..PipelineConfig::new(Schedule::Interleaved, 4, m)
    };
    let err = e(inter(6, 2));
    assert_eq!(
        err,
        PipelineError::MicrobatchesNotMultiple {
            microbatches: 6,
            stages: 4,
            lower: 4,
            upper: 8
        }
    );
    assert!(err.to_string().contains("Megatron-LM's rule"), "{err}");
    assert!(
        err.to_string().contains("use 4 or 8 micro-batches"),
        "{err}"
    );
    assert!(matches!(
        e(inter(8, 1)),
        PipelineError::InterleavedNeedsChunks { .. }
    ));
    let err = e(PipelineConfig {
        virtual_stages: 2,
        ..PipelineConfig::new(Schedule::OneFOneB, 4, 8)
    });
    assert!(err.to_string().contains("--schedule interleaved"), "{err}");
    let err = e(PipelineConfig::new(Schedule::GPipe, 200, 100_000));
    assert!(matches!(err, PipelineError::TooLarge { .. }), "{err}");
    let err = e(PipelineConfig::new(Schedule::GPipe, 100_000, 1));
    assert!(matches!(err, PipelineError::TooManyStages { .. }), "{err}");
    let err = e(PipelineConfig::new(
        Schedule::GPipe,
        usize::MAX / 2,
        usize::MAX / 2,
    ));
    assert!(matches!(err, PipelineError::TooManyStages { .. }), "{err}");
    let err = e(PipelineConfig::new(Schedule::GPipe, 200, usize::MAX / 2));
    assert!(matches!(err, PipelineError::TooLarge { .. }), "{err}");
    let err = e(PipelineConfig {
        costs: Costs {
            forward: 0,
            ..Costs::default()
        },
        ..PipelineConfig::new(Schedule::GPipe, 2, 2)
    });
    assert!(err.to_string().contains("forward cost"), "{err}");
}

#[test]
fn zb_h1_outside_its_closed_form_is_measured_only() {
    // t_W > t_F: a deferred W no longer fits the gap it fills; no closed form is claimed.
    let cfg = PipelineConfig {
        costs: Costs {
            forward: 1,
            backward_input: 2,
            backward_weight: 2,
        },
        ..PipelineConfig::new(Schedule::ZbH1, 4, 8)
    };
    let r = run(&cfg).unwrap();
    check(&cfg, &r);
    assert!(r.formula.is_none() && r.bubble_formula.is_none());
}

#[test]
fn the_ascii_timeline_draws_one_cell_per_tick() {
    let r = run(&PipelineConfig::new(Schedule::OneFOneB, 2, 2)).unwrap();
    let a = r.ascii(200).unwrap();
    // F = 1 tick, B = 2 ticks.
    assert_eq!(
        a,
        "stage 0  F0 F1 .  .  B0 -- .  B1 --\nstage 1  .  F0 B0 -- F1 B1 -- .  .\n"
    );
    assert!(r.ascii(10).is_none());
}
