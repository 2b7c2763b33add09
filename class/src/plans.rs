//! The design lab as a class activity: a student's plan is read and checked by the engine (the
//! same propagation, pricing and challenge grading as `tplab design`), and the room's plans are
//! grouped — Megatron's split, valid, valid but costly, refused — with the refusals counted in
//! the engine's own words.

use crate::protocol::{
    ChallengeView, GroupCount, PlanEntry, PlanGroup, PlanRoom, RefusalCount, WirePlan,
};
use crate::store::PlanRow;
pub use crate::wire::{to_plan, to_wire};
use std::collections::{BTreeMap, HashMap};
use tplab_engine::block::design::challenge::{self, Challenge};
use tplab_engine::block::design::{design, DesignOptions, NamedPlan, Weight};

fn weight_name(w: Weight) -> &'static str {
    match w {
        Weight::Qkv => "qkv",
        Weight::Out => "out",
        Weight::Fc1 => "fc1",
        Weight::Fc2 => "fc2",
    }
}

/// The engine's challenge of `stage`.
pub fn challenge(stage: u32) -> Result<Challenge, String> {
    challenge::stage(stage as usize).map_err(|e| e.to_string())
}

/// How a device shows a challenge.
pub fn challenge_view(seq: u32, c: &Challenge) -> ChallengeView {
    ChallengeView {
        seq,
        stage: c.stage as u32,
        id: c.id.into(),
        title: c.title.into(),
        goal: c.goal_text.into(),
        free: c.free.iter().map(|&w| weight_name(w).to_string()).collect(),
        start: to_wire(&c.start),
    }
}

/// The engine's verdict on a plan, before it has an id.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub plan: WirePlan,
    pub describe: String,
    pub group: PlanGroup,
    pub refusal: Option<String>,
    pub bytes_ratio: Option<f64>,
    pub solved: bool,
    pub stars: u8,
    pub missing: Vec<String>,
}

/// Reads, checks and grades a student's plan against a challenge. `Err`: the plan could not be
/// read or changes a weight the challenge keeps (the engine's message).
pub fn check(c: &Challenge, wire: &WirePlan) -> Result<Checked, String> {
    let plan = to_plan(wire)?;
    c.check_fixed(&plan).map_err(|e| e.to_string())?;
    let report = design(
        &c.config,
        &plan,
        None,
        &DesignOptions {
            allow_wrong: false,
            execute: false,
        },
    )
    .map_err(|e| e.to_string())?;
    let grade = c.grade(&plan, false).map_err(|e| e.to_string())?;
    let megatron = NamedPlan::Megatron.plan();
    let is_megatron = (plan.qkv, plan.out, plan.fc1, plan.fc2)
        == (megatron.qkv, megatron.out, megatron.fc1, megatron.fc2);
    let ratio = report.vs_megatron.bytes_ratio;
    let group = if !report.valid {
        PlanGroup::Refused
    } else if is_megatron {
        PlanGroup::Megatron
    } else if ratio.is_some_and(|r| r > 1.0 + 1e-9) {
        PlanGroup::Costly
    } else {
        PlanGroup::Valid
    };
    Ok(Checked {
        plan: to_wire(&plan),
        describe: plan.describe(),
        group,
        refusal: report.errors.first().map(|e| e.rule.clone()),
        bytes_ratio: ratio,
        solved: grade.solved,
        stars: grade.stars,
        missing: grade.missing.iter().map(|m| m.to_string()).collect(),
    })
}

/// The room's plans for challenge `seq`: each student's latest, grouped, refusals counted.
pub fn room(seq: u32, plans: &[PlanRow]) -> PlanRoom {
    let mut latest: HashMap<u32, &PlanRow> = HashMap::new();
    for p in plans.iter().filter(|p| p.challenge_seq == seq) {
        match latest.get(&p.student) {
            Some(q) if q.id > p.id => {}
            _ => {
                latest.insert(p.student, p);
            }
        }
    }
    let mut entries: Vec<&PlanRow> = latest.into_values().collect();
    entries.sort_by_key(|p| p.id);
    let submitted = entries.len() as u32;
    let mut groups: BTreeMap<PlanGroup, u32> = BTreeMap::new();
    let mut refusals: HashMap<&str, u32> = HashMap::new();
    for p in &entries {
        *groups.entry(p.group).or_default() += 1;
        if p.group == PlanGroup::Refused {
            if let Some(r) = &p.refusal {
                *refusals.entry(r.as_str()).or_default() += 1;
            }
        }
    }
    let mut refusals: Vec<RefusalCount> = refusals
        .into_iter()
        .map(|(rule, count)| RefusalCount {
            rule: rule.to_string(),
            count,
            percent: ((count as f64 * 100.0) / submitted.max(1) as f64).round() as u32,
        })
        .collect();
    refusals.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.rule.cmp(&b.rule)));
    PlanRoom {
        challenge: seq,
        submitted,
        groups: groups
            .into_iter()
            .map(|(group, count)| GroupCount { group, count })
            .collect(),
        refusals,
        plans: entries
            .into_iter()
            .map(|p| PlanEntry {
                plan_id: p.id,
                group: p.group,
                describe: p.describe.clone(),
                plan: p.plan.clone(),
                refusal: p.refusal.clone(),
                solved: p.solved,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::WireCollective;

    fn wire(q: &str, o: &str, f1: &str, f2: &str) -> WirePlan {
        WirePlan {
            qkv: q.into(),
            out: o.into(),
            fc1: f1.into(),
            fc2: f2.into(),
            sequence_parallel: false,
            collectives: None,
        }
    }

    fn row(id: u32, student: u32, c: Checked) -> PlanRow {
        PlanRow {
            id,
            challenge_seq: 1,
            student,
            plan: c.plan,
            describe: c.describe,
            group: c.group,
            refusal: c.refusal,
            solved: c.solved,
            stars: c.stars,
            at_ms: 0,
        }
    }

    #[test]
    fn the_engine_groups_the_rooms_plans() -> Result<(), String> {
        let c = challenge(3)?;
        let megatron = check(&c, &wire("columns", "rows", "columns", "rows"))?;
        assert_eq!(megatron.group, PlanGroup::Megatron);
        assert!(megatron.solved);
        // With the rules placing the collectives, fc1 by rows is repaired (an all-reduce before
        // GeLU): valid, but it sends more than Megatron's split.
        let repaired = check(&c, &wire("columns", "rows", "rows", "columns"))?;
        assert_eq!(repaired.group, PlanGroup::Costly, "{repaired:?}");
        // Placed by hand with no collective after fc1, GeLU reads a partial sum: refused, in the
        // engine's own words.
        let mut by_hand = wire("columns", "rows", "rows", "columns");
        by_hand.collectives = Some(vec![WireCollective {
            after: "attn.out".into(),
            kind: "all-reduce".into(),
        }]);
        let gelu = check(&c, &by_hand)?;
        assert_eq!(gelu.group, PlanGroup::Refused);
        let rule = gelu.refusal.clone().unwrap_or_default();
        assert!(rule.contains("GeLU"), "{rule}");
        assert!(!gelu.solved);
        let costly = check(&c, &wire("columns", "columns", "columns", "columns"))?;
        assert!(
            matches!(costly.group, PlanGroup::Costly | PlanGroup::Refused),
            "{costly:?}"
        );
        let plans = vec![
            row(1, 1, megatron.clone()),
            row(2, 2, gelu.clone()),
            row(3, 3, gelu.clone()),
            // Student 1's later plan replaces their first.
            row(4, 1, gelu.clone()),
        ];
        let r = room(1, &plans);
        assert_eq!(r.submitted, 3);
        assert_eq!(
            r.groups,
            vec![GroupCount {
                group: PlanGroup::Refused,
                count: 3
            }]
        );
        let top = r.most_common_refusal().ok_or("no refusal")?;
        assert_eq!((top.count, top.percent), (3, 100));
        assert_eq!(top.rule, rule);
        Ok(())
    }

    #[test]
    fn bad_plans_name_the_rule() {
        let c = challenge(1);
        assert!(c.is_ok());
        let Ok(c) = c else { return };
        let e = check(&c, &wire("columns", "rows", "diagonal", "rows"));
        assert!(e.is_err_and(|e| e.contains("columns")));
        // Stage 1 keeps attention as it starts.
        let start = to_wire(&c.start);
        let other = if start.qkv == "rows" {
            "columns"
        } else {
            "rows"
        };
        let e = check(&c, &wire(other, &start.out, "columns", "rows"));
        assert!(e.is_err_and(|e| e.contains("keeps")));
        assert!(challenge(99).is_err_and(|e| e.contains("challenges are 1 to")));
    }
}
