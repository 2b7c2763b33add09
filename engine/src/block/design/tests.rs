use super::*;
use crate::config::Preset;
use crate::{block::program::schedule, trace::EventKind};

fn tiny(tp: usize, sp: bool, layers: usize) -> Config {
    Config {
        tp,
        layers,
        sequence_parallel: sp,
        ..Preset::Tiny.config()
    }
}

fn run(cfg: &Config, plan: &ShardingPlan, allow_wrong: bool) -> DesignReport {
    let opts = DesignOptions {
        allow_wrong,
        execute: true,
    };
    match design(cfg, plan, None, &opts) {
        Ok(r) => r,
        Err(e) => panic!("{}: {e}", plan.describe()),
    }
}

/// The communicating collectives of layer 0 of Megatron's hand-written program (the trace every
/// view draws): (pass, kind, group size, bytes the busiest rank sends).
fn trace_collectives(cfg: &Config) -> Vec<(Pass, &'static str, usize, u64)> {
    schedule(cfg)
        .expect("Megatron's plan propagates")
        .events
        .iter()
        .filter(|e| e.layer == 0 && e.ranks.len() > 1)
        .filter_map(|e| match &e.kind {
            EventKind::Collective { kind, .. }
                if *kind != crate::collectives::CollectiveKind::Identity =>
            {
                Some((e.pass, kind.name(), e.ranks.len(), e.bytes_sent_per_rank))
            }
            _ => None,
        })
        .collect()
}

fn design_collectives(cfg: &Config, plan: &ShardingPlan) -> Vec<(Pass, &'static str, usize, u64)> {
    price(cfg, &propagate(cfg, plan), None)
        .steps
        .iter()
        .map(|s| (s.pass, s.kind, s.group, s.bytes_sent_per_rank))
        .collect()
}

/// f and g are not written anywhere in the design program: the rules put them where Megatron's
/// hand-written program has them, of the same kinds and sizes, in the same order — with and
/// without sequence parallelism (its gathers, reduce-scatters, regathers and gradient sum), and
/// with grouped-query attention's KV-copy sums.
#[test]
fn megatrons_plan_derives_megatrons_collectives() {
    let gqa = Config {
        hidden: 32,
        heads: 8,
        kv_heads: Some(2),
        ffn: 64,
        ..tiny(4, false, 1)
    };
    for cfg in [
        tiny(2, false, 1),
        tiny(4, false, 1),
        tiny(2, true, 1),
        tiny(4, true, 1),
        gqa.clone(),
        Config {
            sequence_parallel: true,
            ..gqa
        },
    ] {
        let plan = ShardingPlan {
            sequence_parallel: cfg.sequence_parallel,
            ..NamedPlan::Megatron.plan()
        };
        assert_eq!(
            design_collectives(&cfg, &plan),
            trace_collectives(&cfg),
            "tp {} sp {} kv {:?}",
            cfg.tp,
            cfg.sequence_parallel,
            cfg.kv_heads
        );
    }
    let c = price(
        &tiny(4, false, 1),
        &propagate(&tiny(4, false, 1), &ShardingPlan::default()),
        None,
    );
    assert_eq!(c.collectives.get(Pass::Forward, "all-reduce"), 2);
    assert_eq!(c.collectives.get(Pass::Backward, "all-reduce"), 2);
}

/// Every assignment of {replicate, columns, rows} to QKV, out, fc1 and fc2 (81 plans), with and
/// without sequence parallelism, at TP 2 and 4, on a two-layer f64 config: auto propagation
/// makes each one a valid program whose output, input gradient and every parameter gradient
/// equal the unsharded reference within the rounding tolerance (16·ε·√K·depth, see
/// [`crate::block::verify`]: about 1e-13 here).
#[test]
fn every_plan_runs_equal_to_the_reference() {
    for tp in [2, 4] {
        for sp in [false, true] {
            let cfg = tiny(tp, sp, 2);
            for plan in ShardingPlan::all_assignments(sp) {
                let r = run(&cfg, &plan, false);
                assert!(r.valid, "{}: {:?}", r.plan, r.errors);
                let worst = r
                    .per_tensor
                    .iter()
                    .filter(|t| !t.passed)
                    .map(|t| format!("{} {:.2e}", t.tensor, t.max_rel_error))
                    .collect::<Vec<_>>();
                assert_eq!(
                    r.equal_to_reference,
                    Some(true),
                    "tp {tp} {}: {worst:?} (tolerance {:.2e})",
                    r.plan,
                    r.tolerance
                );
                // Every parameter and both ends were compared.
                assert_eq!(r.per_tensor.len(), 2 + 2 * ParamKind::ALL.len());
            }
        }
    }
}

/// Grouped-query attention with fewer KV heads than GPUs: QKV held by heads gives several GPUs
/// a copy of the same KV head, and the gradient of a copied value is the sum of the copies'
/// gradients. Every plan that holds QKV (or its bias gradient) by heads and then gathers it
/// must sum the copies' parts, not pick one (rows-then-columns did, with errors of order 1).
#[test]
fn every_plan_with_copied_kv_heads_runs_equal_to_the_reference() {
    for (kv, tp) in [(1, 2), (2, 4)] {
        for sp in [false, true] {
            let cfg = Config {
                heads: 4,
                kv_heads: Some(kv),
                ..tiny(tp, sp, 1)
            };
            assert!(cfg.kv_replicas() > 1);
            for plan in ShardingPlan::all_assignments(sp) {
                let r = run(&cfg, &plan, false);
                assert!(r.valid, "{}: {:?}", r.plan, r.errors);
                let worst = r
                    .per_tensor
                    .iter()
                    .filter(|t| !t.passed)
                    .map(|t| format!("{} {:.2e}", t.tensor, t.max_rel_error))
                    .collect::<Vec<_>>();
                assert_eq!(
                    r.equal_to_reference,
                    Some(true),
                    "kv {kv} tp {tp} sp {sp} {}: {worst:?}",
                    r.plan
                );
            }
        }
    }
}

/// The named plans' collectives per layer and bytes, pinned (tiny config, TP 4, f64: 8 bytes an
/// element, activations 16×16 = 256 elements, the MLP's 16×64).
#[test]
fn named_plans_are_priced() {
    let cfg = tiny(4, false, 1);
    let p = |n: NamedPlan| price(&cfg, &propagate(&cfg, &n.plan()), None);
    let meg = p(NamedPlan::Megatron);
    // Ring all-reduce of 256 f64 on 4 ranks: each sends 2·3/4 of 2048 bytes.
    assert_eq!(meg.bytes_sent_per_rank_forward, 2 * 3072);
    assert_eq!(meg.bytes_sent_per_rank, 4 * 3072);
    let rep = p(NamedPlan::Replicated);
    assert_eq!(rep.bytes_sent_per_rank, 0);
    assert!(rep.collectives.forward.is_empty() && rep.collectives.backward.is_empty());
    assert_eq!(rep.weight_bytes_per_gpu, cfg.params_per_layer() * 8);
    assert!(meg.weight_bytes_per_gpu * 3 < rep.weight_bytes_per_gpu);
    // Rows then columns: QKV's partial sum is reduce-scattered to heads (cheaper than an
    // all-reduce), the context gathered for the column-split out-projection, fc1's partial sum
    // (4h wide) all-reduced before GeLU (fc2 wants U whole), each column-split output gathered
    // for the residual.
    let rtc = p(NamedPlan::RowsThenColumns);
    assert_eq!(
        rtc.collectives.forward,
        [("all-gather", 3), ("all-reduce", 1), ("reduce-scatter", 1)]
            .into_iter()
            .collect()
    );
    // Forward bytes: RS(QKV, 768 f64) 3/4·6144 = 4608; AG(Ctx), AG(Z), AG(M) 3/4·2048 = 1536
    // each; AR(A, 1024 f64) 2·3/4·8192 = 12288.
    assert_eq!(rtc.bytes_sent_per_rank_forward, 4608 + 3 * 1536 + 12288);
    let ratio = rtc.bytes_sent_per_rank as f64 / meg.bytes_sent_per_rank as f64;
    assert!(
        ratio > 3.0,
        "rows-then-columns sends {ratio:.1}x Megatron's bytes"
    );
    let cc = p(NamedPlan::ColumnsColumns);
    // Ctx and U gathered for the next column split, Z and M for the residual adds.
    assert_eq!(cc.collectives.get(Pass::Forward, "all-gather"), 4);
}

/// The design lab's stage 4: the MLP the wrong way round is correct but moves ≥ 3× the bytes of
/// Megatron's MLP.
#[test]
fn mlp_rows_then_columns_moves_over_three_times_the_bytes() {
    let cfg = Config {
        hidden: 64,
        heads: 4,
        ffn: 256,
        ..tiny(2, false, 1)
    };
    let mlp = |fc1, fc2| {
        let plan = ShardingPlan {
            qkv: Split::Replicate,
            out: Split::Replicate,
            fc1,
            fc2,
            ..ShardingPlan::default()
        };
        price(&cfg, &propagate(&cfg, &plan), None).bytes_sent_per_rank_forward
    };
    let good = mlp(Split::Columns, Split::Rows);
    let bad = mlp(Split::Rows, Split::Columns);
    // All-reduce of the 4h-wide A (2·4 = 8 units) and a gather of M (1 unit) against one
    // all-reduce of h (2 units): 4.5×.
    assert_eq!(bad * 2, good * 9);
}

fn missing(site: Site) -> ShardingPlan {
    let all = [
        (Site::Out, ManualKind::AllReduce),
        (Site::Fc2, ManualKind::AllReduce),
    ];
    ShardingPlan {
        manual: Some(
            all.into_iter()
                .filter(|(s, _)| *s != site)
                .map(|(after, kind)| ManualCollective { after, kind })
                .collect(),
        ),
        ..ShardingPlan::default()
    }
}

/// Megatron's plan with its two collectives placed by hand is valid and equal to the reference.
#[test]
fn a_complete_manual_plan_runs() {
    let r = run(&tiny(2, false, 1), &missing(Site::Ln1), false);
    assert!(r.valid, "{:?}", r.errors);
    assert_eq!(r.equal_to_reference, Some(true));
    assert_eq!(r.price.collectives.get(Pass::Backward, "all-reduce"), 2);
}

/// A manual plan without fc2's g is refused at the residual add; run anyway, its numbers are
/// far off.
#[test]
fn a_plan_missing_g_is_refused_at_the_residual_add() {
    let cfg = tiny(2, false, 1);
    let r = run(&cfg, &missing(Site::Fc2), false);
    assert!(!r.valid);
    let e = &r.errors[0];
    assert_eq!(
        (e.at, e.tensor, e.pass),
        (
            program::ErrorAt::Residual,
            crate::block::TensorName::Act(Tensor::M),
            Pass::Forward
        )
    );
    assert_eq!(e.op, "residual");
    assert_eq!(e.placement, "Partial()");
    assert!(e.rule.contains("residual add"), "{}", e.rule);
    assert!(e.fixes[0].contains("all-reduce"), "{:?}", e.fixes);
    assert_eq!(r.equal_to_reference, None);
    let wrong = run(&cfg, &missing(Site::Fc2), true);
    assert_eq!(wrong.equal_to_reference, Some(false));
    let err = wrong.max_rel_error.unwrap_or(0.0);
    assert!(
        err > 1e6 * wrong.tolerance,
        "{err:e} vs {:e}",
        wrong.tolerance
    );
}

/// GeLU on a partial sum: named with its algebra and both fixes.
#[test]
fn gelu_of_a_partial_sum_is_named() {
    let plan = ShardingPlan {
        fc1: Split::Rows,
        fc2: Split::Columns,
        manual: Some(vec![ManualCollective {
            after: Site::Out,
            kind: ManualKind::AllReduce,
        }]),
        ..ShardingPlan::default()
    };
    let cfg = tiny(2, false, 1);
    let r = run(&cfg, &plan, true);
    let e = &r.errors[0];
    assert_eq!(
        (e.at, e.tensor),
        (
            program::ErrorAt::Op(Site::Gelu),
            crate::block::TensorName::Act(Tensor::A)
        )
    );
    assert_eq!(e.op, "mlp.gelu");
    assert!(e.rule.contains("GeLU(a)+GeLU(b) ≠ GeLU(a+b)"), "{}", e.rule);
    assert!(
        e.fixes.iter().any(|f| f.contains("all-reduce")),
        "{:?}",
        e.fixes
    );
    assert!(
        e.fixes.iter().any(|f| f.contains("fc1 by columns")),
        "{:?}",
        e.fixes
    );
    assert_eq!(r.equal_to_reference, Some(false));
}

/// A hand-placed collective that has nothing to do is refused by name.
#[test]
fn a_useless_collective_is_refused() {
    let mut plan = missing(Site::Ln1);
    if let Some(list) = &mut plan.manual {
        list.push(ManualCollective {
            after: Site::Fc1,
            kind: ManualKind::AllReduce,
        });
    }
    let r = run(&tiny(2, false, 1), &plan, false);
    assert_eq!(r.errors[0].at, program::ErrorAt::Collective(Site::Fc1));
    assert!(
        r.errors[0].rule.contains("nothing to do"),
        "{}",
        r.errors[0].rule
    );
}

/// Megatron's plan through the design executor in f32 at GPT-2-small width agrees with the
/// reference, and its modeled time is the cost model's.
#[test]
fn megatron_in_f32_matches_and_is_timed() {
    let cfg = Config {
        hidden: 128,
        heads: 4,
        ffn: 512,
        seq: 32,
        batch: 2,
        dtype: DType::F32,
        ..tiny(4, false, 1)
    };
    let cat = crate::capacity::hardware::Catalogue::default();
    let cluster = Cluster::covering(&cat, "h100", 4, 8, "ib400").ok();
    let r = design(
        &cfg,
        &ShardingPlan::default(),
        cluster.as_ref(),
        &DesignOptions::default(),
    )
    .ok();
    let r = r.as_ref();
    assert_eq!(r.and_then(|r| r.equal_to_reference), Some(true));
    assert!(r.is_some_and(|r| r.price.modeled_time_s > 0.0));
    assert_eq!(r.and_then(|r| r.vs_megatron.bytes_ratio), Some(1.0));
}

/// `tplab design` on Megatron's plan gives the numbers `tplab run` gives: the design executor's
/// output, input gradient and every rank's shard gradients against the sharded executor's, shard
/// by shard (the two split the parameters alike), within the run's tolerance — with and without
/// sequence parallelism.
#[test]
fn megatrons_plan_gives_the_sharded_executors_numbers() {
    for sp in [false, true] {
        let cfg = tiny(4, sp, 2);
        let model = Model::<f64>::random(&cfg);
        let fast = crate::block::exec::sharded::run(
            &cfg,
            &crate::block::plan::ShardPlan::new(&cfg),
            &model,
        );
        let fast = match fast {
            Ok(f) => f,
            Err(e) => panic!("{e}"),
        };
        let plan = ShardingPlan {
            sequence_parallel: sp,
            ..ShardingPlan::default()
        };
        let got =
            match crate::block::exec::design::run_program(&cfg, &propagate(&cfg, &plan), &model) {
                Ok(g) => g,
                Err(e) => panic!("{e}"),
            };
        let tol = Tolerance::for_config(&cfg, cfg.dtype).relative;
        let close = |a: &Array2<f64>, b: &Array2<f64>, what: &str| {
            assert_eq!(a.dim(), b.dim(), "{what}");
            let scale = b.iter().fold(1.0f64, |m, v| m.max(v.abs()));
            let d = a
                .iter()
                .zip(b)
                .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
            assert!(d <= tol * scale, "sp {sp} {what}: {d:e}");
        };
        for r in 0..cfg.tp {
            close(&got.output.ranks[r], &fast.outputs[r], "output");
            close(&got.grad_input.ranks[r], &fast.grad_inputs[r], "grad input");
            for layer in 0..cfg.layers {
                for k in ParamKind::ALL {
                    close(
                        got.grads[r][layer].get(k),
                        fast.grads[r][layer].get(k),
                        &format!("rank {r} {}", k.name(layer)),
                    );
                }
            }
        }
    }
}

/// A refused program's fixes are actions: each one, applied to the plan, gives a program the
/// rules accept (the app offers them as buttons, so none may lead nowhere).
#[test]
fn every_offered_fix_repairs_the_program() {
    let cfg = Config {
        tp: 2,
        ..Preset::Tiny.config()
    };
    let gelu_reads_partial = ShardingPlan {
        fc1: Split::Rows,
        fc2: Split::Columns,
        manual: Some(vec![ManualCollective {
            after: Site::Out,
            kind: ManualKind::AllReduce,
        }]),
        ..NamedPlan::Megatron.plan()
    };
    let useless = ShardingPlan {
        manual: Some(vec![
            ManualCollective {
                after: Site::Out,
                kind: ManualKind::AllReduce,
            },
            ManualCollective {
                after: Site::Fc1,
                kind: ManualKind::AllReduce,
            },
            ManualCollective {
                after: Site::Fc2,
                kind: ManualKind::AllReduce,
            },
        ]),
        ..NamedPlan::Megatron.plan()
    };
    for (plan, rule) in [
        (gelu_reads_partial, Rule::GeluPartial),
        (
            useless,
            Rule::NothingToDo {
                kind: ManualKind::AllReduce,
                after: Site::Fc1,
            },
        ),
    ] {
        let p = propagate(&cfg, &plan);
        let e = p
            .errors
            .first()
            .unwrap_or_else(|| panic!("{plan:?} is valid"));
        assert_eq!(e.kind, rule);
        assert!(!e.actions.is_empty());
        for fix in &e.actions {
            let mut fixed = plan.clone();
            let list = fixed.manual.get_or_insert_with(Vec::new);
            match *fix {
                Fix::Collective { after, kind, .. } => list.push(ManualCollective { after, kind }),
                Fix::Remove { after, kind } => {
                    let i = list
                        .iter()
                        .position(|c| c.after == after && c.kind == kind)
                        .unwrap_or_else(|| panic!("{fix:?} names no placed collective"));
                    list.remove(i);
                }
                Fix::Split { weight, split } => fixed.set_split(weight, split),
                Fix::Slice => continue,
            }
            let q = propagate(&cfg, &fixed);
            // The first error must be gone: either valid, or refused later in the block.
            assert!(
                q.errors.first().map(|f| f.kind) != Some(rule),
                "{fix:?} leaves {:?}",
                q.errors
            );
        }
    }
    // GeLU on a partial sum offers the sum (after fc1, an all-reduce of A) and the column split.
    let p = propagate(
        &cfg,
        &ShardingPlan {
            fc1: Split::Rows,
            fc2: Split::Columns,
            manual: Some(vec![ManualCollective {
                after: Site::Out,
                kind: ManualKind::AllReduce,
            }]),
            ..NamedPlan::Megatron.plan()
        },
    );
    let e = p.errors.first().unwrap_or_else(|| panic!("valid"));
    assert_eq!(e.kind, Rule::GeluPartial);
    assert!(e.actions.iter().any(|f| matches!(
        f,
        Fix::Collective {
            after: Site::Fc1,
            kind: ManualKind::AllReduce,
            ..
        }
    )));
    assert!(e.actions.contains(&Fix::Split {
        weight: Weight::Fc1,
        split: Split::Columns
    }));
}
