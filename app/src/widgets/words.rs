//! Tensors and slices in words: what a letter means ("M: the MLP's output, before the residual
//! add") and which part of a tensor a GPU holds ("heads 3–5 of Q, K and V"), so that a learner
//! reads words where the engine keeps index ranges. The index form (`W_qkv[:, 0:192, …]`) stays
//! for a hover.

use crate::i18n::{t, t_args, t_count};
use tplab_engine::block::placement::{Placement, TensorPlacement};
use tplab_engine::block::tensor::{Activation, TensorName};
use tplab_engine::config::Config;
use tplab_engine::params::ParamKind;
use tplab_lessons::Lang;

/// What an activation is, in a few words: "the MLP's output, before the residual add".
pub fn activation_meaning(lang: Lang, a: Activation) -> String {
    t(
        lang,
        match a {
            Activation::X => "tensor-x",
            Activation::H1 => "tensor-h1",
            Activation::Qkv => "tensor-qkv",
            Activation::Ctx => "tensor-ctx",
            Activation::Z => "tensor-z",
            Activation::X1 => "tensor-x1",
            Activation::H2 => "tensor-h2",
            Activation::A => "tensor-a",
            Activation::U => "tensor-u",
            Activation::M => "tensor-m",
            Activation::Y => "tensor-y",
        },
    )
}

fn param_meaning(lang: Lang, k: ParamKind) -> String {
    t(
        lang,
        match k {
            ParamKind::Ln1Weight => "tensor-ln1-weight",
            ParamKind::Ln1Bias => "tensor-ln1-bias",
            ParamKind::QkvWeight => "tensor-qkv-weight",
            ParamKind::QkvBias => "tensor-qkv-bias",
            ParamKind::OutWeight => "tensor-out-weight",
            ParamKind::OutBias => "tensor-out-bias",
            ParamKind::Ln2Weight => "tensor-ln2-weight",
            ParamKind::Ln2Bias => "tensor-ln2-bias",
            ParamKind::Fc1Weight => "tensor-fc1-weight",
            ParamKind::Fc1Bias => "tensor-fc1-bias",
            ParamKind::Fc2Weight => "tensor-fc2-weight",
            ParamKind::Fc2Bias => "tensor-fc2-bias",
        },
    )
}

/// What a tensor of the block is, in words; `None` for the vocabulary's and serving's tensors
/// (their views name them in full).
pub fn tensor_meaning(lang: Lang, tensor: TensorName) -> Option<String> {
    let gradient = |of: String| t_args(lang, "tensor-grad", &[("of", of)]);
    match tensor {
        TensorName::Act(a) => Some(activation_meaning(lang, a)),
        TensorName::Grad(a) => Some(gradient(activation_meaning(lang, a))),
        TensorName::Param(k) => Some(param_meaning(lang, k)),
        TensorName::ParamGrad(k) => Some(gradient(param_meaning(lang, k))),
        TensorName::KvGrad => Some(t(lang, "tensor-kv-grad")),
        TensorName::Vocab(_) | TensorName::Serve(_) => None,
    }
}

/// "X: the layer's input · H1: LayerNorm 1's output", each tensor once, in the order given.
pub fn legend(lang: Lang, tensors: impl IntoIterator<Item = TensorName>) -> String {
    let mut seen: Vec<TensorName> = Vec::new();
    let mut parts = Vec::new();
    for tensor in tensors {
        if seen.contains(&tensor) {
            continue;
        }
        seen.push(tensor);
        if let Some(m) = tensor_meaning(lang, tensor) {
            parts.push(format!("{}: {m}", tensor.symbol()));
        }
    }
    parts.join(" · ")
}

/// "3–5", or "3" for one.
fn span(first: usize, last: usize) -> String {
    if first == last {
        first.to_string()
    } else {
        format!("{first}–{last}")
    }
}

/// The heads a column range `[a, b)` of a head-major tensor covers, counted from `offset`.
fn heads(a: usize, b: usize, offset: usize, head_dim: usize) -> Option<(usize, usize)> {
    if head_dim == 0 || b <= a || a < offset {
        return None;
    }
    let (a, b) = (a - offset, b - offset);
    (a % head_dim == 0 && b % head_dim == 0).then(|| (a / head_dim, b / head_dim - 1))
}

/// The part of `t` that placement `p` holds, in words: "W_qkv: heads 3–5 of Q, K and V", "X:
/// tokens 0–31", "W1: columns 768–1535". A whole copy or a partial sum is the tensor's symbol
/// alone (the placement's badge says which).
pub fn slice_words(lang: Lang, cfg: &Config, t: &TensorPlacement, p: &Placement) -> String {
    let symbol = t.tensor.symbol();
    let Placement::Shard { dim, ranges } = p else {
        return symbol;
    };
    let head_dim = cfg.hidden / cfg.heads.max(1);
    let kv_heads = cfg.kv_heads.unwrap_or(cfg.heads);
    let ranged = |id: &str, first: usize, last: usize| {
        t_count(
            lang,
            id,
            ("count", (last + 1 - first) as u64),
            &[("range", span(first, last))],
        )
    };
    use TensorName::{Act, Grad, Param, ParamGrad};
    let is_qkv = matches!(
        t.tensor,
        Act(Activation::Qkv)
            | Grad(Activation::Qkv)
            | Param(ParamKind::QkvWeight | ParamKind::QkvBias)
            | ParamGrad(ParamKind::QkvWeight | ParamKind::QkvBias)
    );
    let is_ctx = matches!(t.tensor, Act(Activation::Ctx) | Grad(Activation::Ctx));
    let is_out = matches!(
        t.tensor,
        Param(ParamKind::OutWeight) | ParamGrad(ParamKind::OutWeight)
    );
    let words = match (ranges.as_slice(), *dim) {
        // Q's columns, then K's, then V's: each GPU holds its heads of all three.
        ([q, k, v], 1) if is_qkv => {
            let kv_offset = cfg.hidden;
            let v_offset = cfg.hidden + kv_heads * head_dim;
            match (
                heads(q[0], q[1], 0, head_dim),
                heads(k[0], k[1], kv_offset, head_dim),
                heads(v[0], v[1], v_offset, head_dim),
            ) {
                (Some((qa, qb)), Some(kh), Some(vh)) if kh == vh => {
                    if kv_heads == cfg.heads && kh == (qa, qb) {
                        Some(ranged("slice-heads-qkv", qa, qb))
                    } else {
                        Some(t_args(
                            lang,
                            "slice-heads-gqa",
                            &[("range", span(qa, qb)), ("kv", span(kh.0, kh.1))],
                        ))
                    }
                }
                _ => None,
            }
        }
        ([r], 1) if is_ctx => {
            heads(r[0], r[1], 0, head_dim).map(|(a, b)| ranged("slice-heads", a, b))
        }
        ([r], 0) if is_out => {
            heads(r[0], r[1], 0, head_dim).map(|(a, b)| ranged("slice-head-rows", a, b))
        }
        // An activation's rows are its tokens.
        ([r], 0) if matches!(t.tensor, Act(_) | Grad(_)) && r[1] > r[0] => {
            Some(ranged("slice-tokens", r[0], r[1] - 1))
        }
        _ => None,
    };
    let words = words.unwrap_or_else(|| {
        let id = if *dim == 0 {
            "slice-rows"
        } else {
            "slice-columns"
        };
        ranges
            .iter()
            .filter(|[a, b]| b > a)
            .map(|[a, b]| ranged(id, *a, b - 1))
            .collect::<Vec<_>>()
            .join(", ")
    });
    format!("{symbol}: {words}")
}

/// A layout in the learner's language: the engine's `TP=8 PP=4 DP=512 b=1 SP full-recompute
/// ZeRO-1`, its recomputation in words ("full recomputation", "tam yeniden hesaplama") rather
/// than the CLI's code names.
pub fn layout_label(lang: Lang, layout: &tplab_engine::capacity::memory::Layout) -> String {
    layout_text(lang, &layout.label())
}

/// [`layout_label`] of a label the engine already wrote (a planner finding's two layouts).
pub fn layout_text(lang: Lang, label: &str) -> String {
    let (sel, full) = (
        crate::i18n::t(lang, "layout-recompute-selective"),
        crate::i18n::t(lang, "layout-recompute-full"),
    );
    label
        .replace(" sel-recompute", &format!(" {sel}"))
        .replace(" full-recompute", &format!(" {full}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tplab_engine::config::Preset;

    fn placed(tensor: TensorName, shape: [usize; 2], p: Placement) -> TensorPlacement {
        TensorPlacement {
            tensor,
            shape,
            per_rank: vec![p],
        }
    }

    #[test]
    fn slices_are_said_in_words() {
        // GPT-2 small: 768 wide, 12 heads of 64; GPU 1 of 4 holds heads 3–5.
        let cfg = Config {
            tp: 4,
            ..Preset::Gpt2Small.config()
        };
        let qkv = Placement::Shard {
            dim: 1,
            ranges: vec![[192, 384], [960, 1152], [1728, 1920]],
        };
        let t = placed(
            TensorName::Param(ParamKind::QkvWeight),
            [768, 2304],
            qkv.clone(),
        );
        assert_eq!(
            slice_words(Lang::En, &cfg, &t, &qkv),
            "W_qkv: heads 3–5 of Q, K and V"
        );
        let rows = Placement::shard(0, 32..64);
        let x = placed(TensorName::Act(Activation::X), [128, 768], rows.clone());
        assert_eq!(slice_words(Lang::En, &cfg, &x, &rows), "X: tokens 32–63");
        let cols = Placement::shard(1, 768..1536);
        let w1 = placed(
            TensorName::Param(ParamKind::Fc1Weight),
            [768, 3072],
            cols.clone(),
        );
        assert_eq!(
            slice_words(Lang::En, &cfg, &w1, &cols),
            "W1: columns 768–1535"
        );
        let out = Placement::shard(0, 192..384);
        let w = placed(
            TensorName::Param(ParamKind::OutWeight),
            [768, 768],
            out.clone(),
        );
        assert_eq!(
            slice_words(Lang::En, &cfg, &w, &out),
            "W_out: the rows of heads 3–5"
        );
        // Turkish is Turkish.
        assert!(!slice_words(Lang::Tr, &cfg, &t, &qkv).contains("heads"));
    }

    #[test]
    fn every_block_tensor_has_a_meaning_in_both_languages() {
        for tensor in TensorName::all() {
            if matches!(tensor, TensorName::Vocab(_) | TensorName::Serve(_)) {
                continue;
            }
            for lang in [Lang::En, Lang::Tr] {
                let m = tensor_meaning(lang, tensor).unwrap_or_default();
                assert!(
                    !m.is_empty() && !m.starts_with("tensor-"),
                    "{tensor:?} in {lang:?}: {m:?}"
                );
            }
        }
        assert_eq!(
            legend(
                Lang::En,
                [
                    TensorName::Act(Activation::M),
                    TensorName::Act(Activation::M)
                ]
            ),
            "M: the MLP's output, before the residual add"
        );
    }
}
