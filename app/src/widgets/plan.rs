//! A learner's plan in words, the same in the walkthrough's banner, the GPU view and the CLI's
//! notes.

use crate::i18n::{num, t, t_args};
use tplab_engine::block::design::challenge::Missing;
use tplab_engine::block::design::{Place, Rule, ShardingPlan, Site, Split, Weight};
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

/// What a GPU holds of a tensor, in words ("its columns", "a partial sum").
pub fn place_words(lang: Lang, p: Place) -> String {
    t(
        lang,
        match p {
            Place::Replicate => "design-place-whole",
            Place::Tokens => "design-place-tokens",
            Place::Features => "design-place-columns",
            Place::Partial => "design-place-partial",
        },
    )
}

/// Where in the layer, in words (the op's name in the learner's language).
pub fn site_words(lang: Lang, s: Site) -> String {
    match s {
        Site::Ln1 => t(lang, "design-op-ln1"),
        Site::Qkv => weight_words(lang, Weight::Qkv),
        Site::Attention => t(lang, "design-op-attention"),
        Site::Out => weight_words(lang, Weight::Out),
        Site::AttnResidual => t(lang, "design-op-residual"),
        Site::Ln2 => t(lang, "design-op-ln2"),
        Site::Fc1 => weight_words(lang, Weight::Fc1),
        Site::Gelu => "GeLU".into(),
        Site::Fc2 => weight_words(lang, Weight::Fc2),
    }
}

/// A broken rule in the learner's language.
pub fn rule_text(lang: Lang, kind: Rule, e: &tplab_engine::block::design::DesignError) -> String {
    let gpu = e.rank.to_string();
    let tensor = e.tensor.to_string();
    let holds = place_words(lang, e.holds);
    let (id, extra): (&str, Vec<(&str, String)>) = match kind {
        Rule::GeluPartial => ("design-rule-gelu-partial", vec![]),
        Rule::AttentionPartial => ("design-rule-attention-partial", vec![]),
        Rule::AttentionTokens => ("design-rule-attention-tokens", vec![]),
        Rule::NormPartial => ("design-rule-norm-partial", vec![]),
        Rule::NormColumns => ("design-rule-norm-columns", vec![]),
        Rule::ColumnSplitNeedsWhole(w) => (
            "design-rule-columns-need-whole",
            vec![("weight", weight_words(lang, w))],
        ),
        Rule::RowSplitNeedsColumns(w) => (
            "design-rule-rows-need-columns",
            vec![("weight", weight_words(lang, w))],
        ),
        Rule::WholeWeightNeedsRows(w) => (
            "design-rule-whole-needs-rows",
            vec![("weight", weight_words(lang, w))],
        ),
        Rule::ResidualPartial { stream } => (
            "design-rule-residual-partial",
            vec![("stream", place_words(lang, stream))],
        ),
        Rule::ResidualMismatch { stream } => (
            "design-rule-residual-mismatch",
            vec![("stream", place_words(lang, stream))],
        ),
        Rule::NothingToDo { kind, after } => (
            "design-rule-nothing-to-do",
            vec![
                ("kind", kind.name().to_string()),
                ("op", site_words(lang, after)),
            ],
        ),
        Rule::Other => ("design-rule-other", vec![]),
    };
    let mut args = vec![("gpu", gpu), ("tensor", tensor), ("holds", holds)];
    args.extend(extra);
    t_args(lang, id, &args)
}

/// What a challenge still asks of a plan, in the learner's language.
pub fn missing_text(lang: Lang, m: &Missing) -> String {
    match m {
        Missing::Refused { .. } => t(lang, "design-miss-refused"),
        Missing::Differs => t(lang, "design-miss-differs"),
        Missing::ForwardCollectives {
            all_reduce,
            others,
            want_all_reduce,
            want_others,
        } => t_args(
            lang,
            "design-miss-count",
            &[
                ("ar", all_reduce.to_string()),
                ("others", others.to_string()),
                ("goalar", want_all_reduce.to_string()),
                ("goalothers", want_others.to_string()),
            ],
        ),
        Missing::TooCheap { have, want } => t_args(
            lang,
            "design-miss-cheap",
            &[("have", num(lang, *have, 1)), ("want", num(lang, *want, 0))],
        ),
        Missing::PlaceByHand => t(lang, "design-miss-by-hand"),
        Missing::RefusedElsewhere { .. } => t(lang, "design-miss-elsewhere"),
        Missing::NotRefused => t(lang, "design-miss-not-refused"),
        Missing::RunAnyway => t(lang, "design-miss-run-anyway"),
        Missing::SequenceParallelOff => t(lang, "design-miss-sp"),
        Missing::StillAllReduces(n) => {
            t_args(lang, "design-miss-still-ar", &[("n", n.to_string())])
        }
        Missing::WholeWeight => t(lang, "design-miss-whole"),
    }
}
