//! A plan between the wire and the engine: the student's app, the teacher's console (native
//! and web) and the server read a [`WirePlan`] the same way (the `engine` feature, without the
//! server).

use crate::protocol::{WireCollective, WirePlan};
use tplab_engine::block::design::{ManualCollective, ManualKind, ShardingPlan, Site, Split};

/// The engine's plan from the wire (the engine's messages name the rule and the fix).
pub fn to_plan(w: &WirePlan) -> Result<ShardingPlan, String> {
    let split = |s: &str| Split::parse(s).map_err(|e| e.to_string());
    let manual = match &w.collectives {
        None => None,
        Some(list) => {
            if list.len() > tplab_engine::block::design::plan::MAX_MANUAL {
                return Err(format!(
                    "{} hand-placed collectives: at most {}",
                    list.len(),
                    tplab_engine::block::design::plan::MAX_MANUAL
                ));
            }
            Some(
                list.iter()
                    .map(|c| {
                        Ok(ManualCollective {
                            after: Site::parse(&c.after).map_err(|e| e.to_string())?,
                            kind: ManualKind::parse(&c.kind).map_err(|e| e.to_string())?,
                        })
                    })
                    .collect::<Result<Vec<_>, String>>()?,
            )
        }
    };
    Ok(ShardingPlan {
        qkv: split(&w.qkv)?,
        out: split(&w.out)?,
        fc1: split(&w.fc1)?,
        fc2: split(&w.fc2)?,
        sequence_parallel: w.sequence_parallel,
        manual,
    })
}

/// The wire form of an engine plan.
pub fn to_wire(p: &ShardingPlan) -> WirePlan {
    WirePlan {
        qkv: p.qkv.name().into(),
        out: p.out.name().into(),
        fc1: p.fc1.name().into(),
        fc2: p.fc2.name().into(),
        sequence_parallel: p.sequence_parallel,
        collectives: p.manual.as_ref().map(|m| {
            m.iter()
                .map(|c| WireCollective {
                    after: c.after.name().into(),
                    kind: c.kind.name().into(),
                })
                .collect()
        }),
    }
}
