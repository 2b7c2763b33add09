//! The walkthrough's predictions as questions: before each collective of the first layer,
//! what a GPU will hold, how many bytes each GPU sends, or which operator's backward
//! communicates, with the answer computed from the trace. The walkthrough asks them one by
//! one; the live class's console poses them to the room.

use crate::lab::walk::WalkStep;
use tplab_engine::block::op::Pass;
use tplab_engine::block::Op;
use tplab_engine::collectives::CollectiveKind;
use tplab_engine::trace::{Event, Trace};
use tplab_lessons::Lang;

/// What a prediction asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// What a GPU holds after the collective (forward: f, g and sequence parallelism's pairs).
    Holds,
    /// How many bytes each GPU sends (backward).
    Bytes,
    /// Which operator's backward makes the GPUs communicate (the first backward step).
    Which,
}

/// The operators the "which communicates backward?" question offers, in order: the MLP's g,
/// GeLU, the MLP's f and LayerNorm 2, each with its backward op.
const WHICH: [(Op, Op); 4] = [
    (Op::MlpG, Op::MlpGBwd),
    (Op::Gelu, Op::GeluBwd),
    (Op::MlpF, Op::MlpFBwd),
    (Op::Ln2, Op::Ln2Bwd),
];

/// At the first backward step of a Megatron trace without sequence parallelism (there g's
/// backward communicates too): which of [`WHICH`] communicates in the backward pass, from the
/// trace's own events of that layer; `None` unless exactly one does.
fn which_communicates(trace: &Trace, step: &WalkStep) -> Option<usize> {
    let first_bwd = trace.events.iter().position(|e| e.pass == Pass::Backward)?;
    if step.first_event != first_bwd || trace.config.sequence_parallel || trace.config.tp < 2 {
        return None;
    }
    let communicates = |op: Op| {
        trace.events.iter().any(|e| {
            e.op == op
                && e.layer == step.layer
                && e.collective_kind()
                    .is_some_and(|k| k != CollectiveKind::Identity)
        })
    };
    let hits: Vec<usize> = WHICH
        .iter()
        .enumerate()
        .filter(|(_, (_, bwd))| communicates(*bwd))
        .map(|(i, _)| i)
        .collect();
    match hits.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// A question asked before a step plays, with its answer computed from the trace.
#[derive(Debug, Clone)]
pub struct Prediction {
    pub ask: Ask,
    pub question: String,
    pub options: Vec<String>,
    pub right: usize,
    /// Why the answer is right, in a sentence or two computed from the step.
    pub why: String,
    /// Where a miss is explained.
    pub lesson: String,
    /// Why each wrong option is wrong (empty where the question has no such sentence).
    pub why_not: Vec<String>,
}

/// Whether step `step` asks, and what: collectives of the first layer that move data between
/// GPUs. The answer is the trace's: what the collective reads and writes on each rank, and the
/// bytes its schedule sends.
pub fn asks(trace: &Trace, step: &WalkStep) -> Option<(Ask, usize)> {
    if let Some(right) = which_communicates(trace, step) {
        return Some((Ask::Which, right));
    }
    let e = trace.events.get(step.first_event)?;
    let kind = e.collective_kind()?;
    if kind == CollectiveKind::Identity || e.ranks.len() < 2 || step.layer != 0 {
        return None;
    }
    use tplab_engine::block::placement::PlacementKind as K;
    match e.pass {
        Pass::Forward => {
            let from = e.reads.first()?.kind()?;
            let to = e.writes.first()?.kind()?;
            let right = match (from, to) {
                (K::Partial, K::Replicate) => 2,
                // "Its tokens of the sum": a sum a learner's plan leaves split by columns is
                // not one of the options, so it is not asked.
                (K::Partial, K::Shard(0)) => 1,
                (K::Shard(_), K::Replicate) => 3,
                _ => return None,
            };
            Some((Ask::Holds, right))
        }
        Pass::Backward => {
            let options = byte_options(e);
            let right = options.iter().position(|b| *b == e.bytes_sent_per_rank)?;
            Some((Ask::Bytes, right))
        }
    }
}

/// The byte counts offered: what each GPU sends, the whole payload, one GPU's chunk and twice
/// the payload (the usual confusions), smallest first.
fn byte_options(e: &Event) -> Vec<u64> {
    let s = e.bytes.max(1);
    let n = e.ranks.len().max(1) as u64;
    let mut v = vec![e.bytes_sent_per_rank, s, s / n, 2 * s, 4 * s];
    v.sort_unstable();
    v.dedup();
    // Keep the right one and three others.
    while v.len() > 4 {
        let drop = v
            .iter()
            .rposition(|b| *b != e.bytes_sent_per_rank)
            .unwrap_or(0);
        v.remove(drop);
    }
    v
}

/// The question of step `step` in `lang`, if it asks one.
pub fn prediction(lang: Lang, trace: &Trace, step: &WalkStep) -> Option<Prediction> {
    let (ask, right) = asks(trace, step)?;
    let e = trace.events.get(step.first_event)?;
    let kind = e
        .collective_kind()
        .map(|k| k.name().to_string())
        .unwrap_or_default();
    let tensor = e
        .writes
        .first()
        // Activations and their gradients: a weight's name is not a word of the question.
        .filter(|w| {
            use tplab_engine::block::{TensorName as N, VocabTensor};
            !matches!(
                w.tensor,
                N::Param(_) | N::ParamGrad(_) | N::Vocab(VocabTensor::EmbeddingGrad)
            )
        })
        .map(|w| w.tensor.to_string())
        .unwrap_or_default();
    let tr = |id: &str| crate::i18n::t(lang, id);
    let ta = |id: &str, args: &[(&str, String)]| crate::i18n::t_args(lang, id, args);
    Some(match ask {
        Ask::Holds => {
            let gpu = e.ranks[2.min(e.ranks.len() - 1)];
            Prediction {
                ask,
                question: ta(
                    "walk-predict-holds",
                    &[
                        ("kind", kind.clone()),
                        ("gpu", gpu.to_string()),
                        ("tensor", tensor),
                    ],
                ),
                options: vec![
                    tr("walk-predict-own-partial"),
                    tr("walk-predict-its-tokens"),
                    tr("walk-predict-whole-sum"),
                    tr("walk-predict-joined"),
                ],
                right,
                why: holds_why(lang, e, gpu),
                lesson: tr("walk-predict-lesson-fg"),
                why_not: [
                    "walk-whynot-own-partial",
                    "walk-whynot-its-tokens",
                    "walk-whynot-whole-sum",
                    "walk-whynot-joined",
                ]
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    if i == right {
                        String::new()
                    } else {
                        ta(
                            id,
                            &[("kind", kind.clone()), ("n", e.ranks.len().to_string())],
                        )
                    }
                })
                .collect(),
            }
        }
        Ask::Which => Prediction {
            ask,
            question: tr("walk-predict-which"),
            options: WHICH
                .iter()
                .map(|(op, _)| crate::widgets::op_label(lang, *op))
                .collect(),
            right,
            why: ta(
                "walk-why-which",
                &[("op", crate::widgets::op_label(lang, WHICH[right].0))],
            ),
            lesson: tr("walk-predict-lesson-fg"),
            why_not: Vec::new(),
        },
        Ask::Bytes => Prediction {
            ask,
            question: ta(
                "walk-predict-bytes",
                &[("kind", kind), ("n", e.ranks.len().to_string())],
            ),
            options: byte_options(e)
                .into_iter()
                .map(|b| crate::i18n::bytes(lang, b))
                .collect(),
            right,
            why: bytes_why(lang, e),
            lesson: tr("walk-predict-lesson-ring"),
            why_not: Vec::new(),
        },
    })
}

/// Why a GPU holds what it holds after a forward collective, with the step's numbers.
fn holds_why(lang: Lang, e: &Event, gpu: usize) -> String {
    use tplab_engine::block::placement::PlacementKind as K;
    let n = e.ranks.len().to_string();
    let tensor = e
        .writes
        .first()
        .map(|w| w.tensor.to_string())
        .unwrap_or_default();
    let id = match (
        e.reads.first().and_then(|r| r.kind()),
        e.writes.first().and_then(|w| w.kind()),
    ) {
        (Some(K::Partial), Some(K::Replicate)) => "walk-why-all-reduce",
        (Some(K::Partial), Some(K::Shard(_))) => "walk-why-reduce-scatter",
        _ => "walk-why-all-gather",
    };
    crate::i18n::t_args(
        lang,
        id,
        &[("n", n), ("gpu", gpu.to_string()), ("tensor", tensor)],
    )
}

/// Why each GPU sends the bytes it sends, with the formula and the step's numbers when the
/// schedule is a ring's (2(N−1)/N of the payload for an all-reduce, (N−1)/N for its halves).
fn bytes_why(lang: Lang, e: &Event) -> String {
    let n = e.ranks.len() as u64;
    let payload = e.bytes;
    let sent = e.bytes_sent_per_rank;
    let args = |factor: &str| {
        vec![
            ("n", n.to_string()),
            ("n1", n.saturating_sub(1).to_string()),
            ("factor", factor.to_string()),
            ("payload", crate::i18n::bytes(lang, payload)),
            ("sent", crate::i18n::bytes(lang, sent)),
        ]
    };
    if n >= 2 && sent * n == 2 * (n - 1) * payload {
        crate::i18n::t_args(lang, "walk-why-bytes-ring", &args("2"))
    } else if n >= 2 && sent * n == (n - 1) * payload {
        crate::i18n::t_args(lang, "walk-why-bytes-half", &args("1"))
    } else {
        crate::i18n::t_args(lang, "walk-why-bytes-other", &args(""))
    }
}
