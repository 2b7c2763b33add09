//! A learner's plan in words, the same in the walkthrough's banner, the GPU view and the CLI's
//! notes.

use crate::i18n::t;
use tplab_engine::block::design::{ShardingPlan, Split, Weight};
use tplab_lessons::Lang;

/// A plan in words: each weight's split, and sequence parallelism when it is on
/// ("QKV projection its columns · output projection its rows · …").
pub fn plan_words(lang: Lang, plan: &ShardingPlan) -> String {
    let splits = Weight::ALL
        .iter()
        .map(|&w| {
            format!(
                "{} {}",
                weight_words(lang, w),
                split_words(lang, plan.split(w))
            )
        })
        .collect::<Vec<_>>()
        .join(" · ");
    if plan.sequence_parallel {
        format!("{splits} · {}", t(lang, "st-plan-sp"))
    } else {
        splits
    }
}

pub fn weight_words(lang: Lang, w: Weight) -> String {
    t(
        lang,
        match w {
            Weight::Qkv => "design-w-qkv",
            Weight::Out => "design-w-out",
            Weight::Fc1 => "design-w-fc1",
            Weight::Fc2 => "design-w-fc2",
        },
    )
}

pub fn split_words(lang: Lang, s: Split) -> String {
    t(
        lang,
        match s {
            Split::Replicate => "design-split-whole",
            Split::Columns => "design-split-columns",
            Split::Rows => "design-split-rows",
        },
    )
}
