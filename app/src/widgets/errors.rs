//! The engine's errors in the learner's words (collectives, the vocabulary pass, a layout that
//! does not fit).

use crate::widgets::list_words;
use tplab_engine::capacity::memory::LayoutError;
use tplab_engine::collectives;
use tplab_engine::labs::vocab;
use tplab_lessons::Lang;

/// `[("tp", tp.to_string()), …]` from the named fields in scope.
macro_rules! args {
    ($($field:ident),* $(,)?) => {
        vec![$((stringify!($field), $field.to_string())),*]
    };
}

/// A collective's error in the learner's language (English: the engine's sentence). Algorithm
/// and collective names (`ring`, `all-reduce`) stay as the engine writes them: they are names.
pub fn collective_error_text(
    lang: tplab_lessons::Lang,
    e: &collectives::CollectiveError,
) -> String {
    use collectives::CollectiveError as E;
    let n = |v: usize| v.to_string();
    let a = |id: &str, args: &[(&str, String)]| crate::i18n::t_args(lang, id, args);
    match e {
        E::EmptyGroup => a("cl-err-empty", &[]),
        E::LengthMismatch {
            rank,
            expected,
            found,
        } => a(
            "cl-err-length",
            &[
                ("rank", n(*rank)),
                ("expected", n(*expected)),
                ("found", n(*found)),
            ],
        ),
        E::RootOutOfRange { root, n: ranks } => {
            a("cl-err-root", &[("root", n(*root)), ("n", n(*ranks))])
        }
        E::Unsupported {
            kind,
            algorithm,
            supported,
        } => a(
            "cl-err-unsupported",
            &[
                ("kind", kind.to_string()),
                ("algorithm", algorithm.to_string()),
                ("supported", supported.to_string()),
            ],
        ),
        E::NotPowerOfTwo { kind, n: ranks } => a(
            "cl-err-power-of-two",
            &[("kind", kind.to_string()), ("n", n(*ranks))],
        ),
        E::TooManyRanks { n: ranks, max } => {
            a("cl-err-too-many", &[("n", n(*ranks)), ("max", n(*max))])
        }
        E::ProgramOrder { op, tensor } => a(
            "cl-err-program-order",
            &[("op", op.to_string()), ("tensor", tensor.to_string())],
        ),
        E::ForeignOp { op } => a("cl-err-foreign-op", &[("op", op.to_string())]),
    }
}

/// The vocabulary split's error in the learner's language (English: the engine's sentence).
pub fn vocab_error_text(lang: tplab_lessons::Lang, e: &vocab::VocabError) -> String {
    use crate::i18n::{bytes, t_args};
    use vocab::VocabError;
    let n = |v: usize| v.to_string();
    match e {
        VocabError::Zero { field } => t_args(lang, "err-zero", &[("field", field.to_string())]),
        VocabError::TpOutOfRange { tp, max } => {
            t_args(lang, "err-tp-range", &[("tp", n(*tp)), ("max", n(*max))])
        }
        VocabError::OverLimit { field, value, max } => t_args(
            lang,
            "err-over-limit",
            &[
                ("field", field.to_string()),
                ("value", n(*value)),
                ("max", n(*max)),
            ],
        ),
        VocabError::TooLarge {
            elements,
            padded,
            hidden,
            limit,
        } => t_args(
            lang,
            "vo-err-too-large",
            &[
                ("elements", n(*elements)),
                ("padded", n(*padded)),
                ("hidden", n(*hidden)),
                ("limit", n(*limit)),
            ],
        ),
        VocabError::PaddingOverflow {
            vocab,
            granularity,
            tp,
            max_granularity,
        } => t_args(
            lang,
            "vo-err-padding",
            &[
                ("vocab", n(*vocab)),
                ("granularity", n(*granularity)),
                ("tp", n(*tp)),
                ("max", n(*max_granularity)),
            ],
        ),
        VocabError::TooMuchMemory {
            needed_bytes,
            limit_bytes,
            tokens,
            padded,
        } => t_args(
            lang,
            "vo-err-memory",
            &[
                ("needed", bytes(lang, *needed_bytes)),
                ("tokens", n(*tokens)),
                ("padded", n(*padded)),
                ("limit", bytes(lang, *limit_bytes)),
            ],
        ),
        VocabError::Collective(c) => collective_error_text(lang, c),
    }
}

/// A shape rule a layout breaks, in the learner's language (English: the engine's sentence,
/// which `tplab plan` prints).
pub fn layout_error_text(lang: Lang, e: &LayoutError) -> String {
    // English keeps the engine's `[2, 4, 8]`; Turkish writes the list in words.
    let valid = |v: &[usize]| {
        vec![
            ("valid", format!("{v:?}")),
            ("valid_words", list_words(lang, v)),
        ]
    };
    let (id, args) = match e {
        LayoutError::Zero { field } => ("pl-le-zero", args!(field)),
        LayoutError::HeadsNotDivisible {
            tp,
            heads,
            valid: v,
        } => ("pl-le-heads", [args!(tp, heads), valid(v)].concat()),
        LayoutError::KvHeadsNotDivisible {
            tp,
            kv_heads,
            valid: v,
        } => ("pl-le-kv-heads", [args!(tp, kv_heads), valid(v)].concat()),
        LayoutError::FfnNotDivisible { tp, ffn } => ("pl-le-ffn", args!(tp, ffn)),
        LayoutError::LayersNotDivisible { pp, layers } => ("pl-le-layers", args!(pp, layers)),
        LayoutError::BatchNotDivisible {
            global_batch,
            micro_batch,
            dp,
        } => ("pl-le-batch", args!(global_batch, micro_batch, dp)),
        LayoutError::GpuCountMismatch {
            tp,
            pp,
            dp,
            needed,
            gpus,
        } => ("pl-le-gpu-count", args!(tp, pp, dp, needed, gpus)),
        LayoutError::TpLargerThanCluster { tp, gpus } => ("pl-le-tp-cluster", args!(tp, gpus)),
        LayoutError::BadZero { zero } => ("pl-le-zero-stage", args!(zero)),
        LayoutError::OverLimit { field, value, max } => {
            ("pl-le-over-limit", args!(field, value, max))
        }
        LayoutError::TooManyTokens {
            global_batch,
            seq,
            tokens,
            max,
        } => ("pl-le-tokens", args!(global_batch, seq, tokens, max)),
        LayoutError::BadVirtualStages { v, pp, min_stage } => {
            ("pl-le-virtual", args!(v, pp, min_stage))
        }
        LayoutError::BadContextParallel { cp, seq } => {
            let two_cp = 2 * cp;
            ("pl-le-cp", args!(cp, two_cp, seq))
        }
        LayoutError::KvHeadsNotServable {
            tp,
            kv_heads,
            valid: v,
        } => ("pl-le-kv-serve", [args!(tp, kv_heads), valid(v)].concat()),
        // A rule added to the engine after this view: its English sentence.
        other => return other.to_string(),
    };
    crate::i18n::t_args(lang, id, &args)
}
