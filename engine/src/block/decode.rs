//! The decode step's program: for `n` new rows at cache length `context` (after the step) on
//! `tp` ranks, every op and collective one serving step issues, in issue order, with each
//! tensor's placement on every rank ([`crate::block::placement`]), its shapes, FLOPs and bytes.
//! It is the [`Trace`] the CPU decoder ([`crate::labs::serve::Decoder`]) and the CUDA decode walk, the
//! serving views draw and the cost model prices ([`crate::labs::serve::step_trace`]).
//!
//! ```text
//! embed.lookup (its vocabulary rows) ─▶ embed.g (all-reduce) ─▶ embed.pos
//! per layer: ln1 ─▶ f ─▶ attn.qkv ─▶ attn.kv_append ─▶ attn.core (over the cache) ─▶ attn.out
//!            ─▶ g (all-reduce) ─▶ bias + residual ─▶ ln2 ─▶ f ─▶ fc1 ─▶ GeLU ─▶ fc2
//!            ─▶ g (all-reduce) ─▶ bias + residual
//! head:      lnf (last row) ─▶ lm_head (its vocabulary columns) ─▶ lm_head.gather (all-gather)
//! ```
//!
//! Placements: the activations are replicated (decoding has no sequence parallelism); the QKV
//! and fc1 weights are split by columns, the out-projection and fc2 by rows, as the shard plan
//! gives them ([`crate::block::plan::ShardPlan`]); the KV cache by KV heads, each rank holding the K and
//! V columns of its KV heads (with grouped-query attention and `tp > kv_heads` each KV head's
//! columns are held by `tp/kv_heads` ranks, as the block's QKV split); the embedding table by
//! vocabulary rows and the logits by vocabulary columns, as the vocabulary-parallel pass
//! ([`crate::labs::vocab`]).
//!
//! Every tensor name of the program is a [`DecodeTensor`]; every placement is built by
//! [`Places::tensor`].

use crate::block::op::Op;
use crate::block::placement::{Placement, TensorPlacement};
use crate::block::plan::ShardPlan;
use crate::block::program::{collective_event, compute_event};
use crate::block::tensor::{Activation, ServeTensor, TensorName, VocabTensor};
use crate::block::work::{self, Work};
use crate::collectives::CollectiveKind;
use crate::config::Config;
use crate::labs::vocab::VocabConfig;
use crate::params::ParamKind;
use crate::{
    block::op::Parallel,
    block::op::Pass,
    trace::{proportional_duration_s, Event, EventKind, TimeSource, Trace},
};
use std::ops::Range;

/// Every tensor the decode step reads or writes. Activations are named as in the block program
/// ([`crate::block::program::tensors`]); weights by their engine names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DecodeTensor {
    /// The step's token ids, `[n, 1]`.
    Ids,
    /// The tied embedding table, padded to a multiple of the ranks, `[Vp, h]`.
    Embedding,
    /// The looked-up embeddings: each rank's term (zeros for ids it does not hold) until
    /// `embed.g` sums them.
    E,
    /// The learned position table's first `context` rows.
    Pos,
    /// Block tensors, as in the block program.
    X,
    H1,
    Qkv,
    /// The KV cache of a layer before the step (`context − n` positions).
    KvPast,
    /// The KV cache of a layer after the step's append (`context` positions), K columns of
    /// every KV head, then V columns.
    Kv,
    Ctx,
    Z,
    X1,
    H2,
    A,
    U,
    M,
    Y,
    /// The final LayerNorm's weight and bias.
    LnfWeight,
    LnfBias,
    /// The final LayerNorm's output at the last position.
    Hf,
    /// The last position's logits over the padded vocabulary.
    Logits,
    /// A block parameter.
    Param(ParamKind),
}

impl DecodeTensor {
    /// Its typed name in the trace's placements (a parameter's is the block parameter, which
    /// the placement checker looks up in the shard plan).
    pub fn typed(self) -> TensorName {
        use DecodeTensor::*;
        match self {
            Ids => TensorName::Vocab(VocabTensor::Ids),
            Embedding => TensorName::Vocab(VocabTensor::Embedding),
            E => TensorName::Vocab(VocabTensor::E),
            Pos => TensorName::Serve(ServeTensor::Pos),
            X => TensorName::Act(Activation::X),
            H1 => TensorName::Act(Activation::H1),
            Qkv => TensorName::Act(Activation::Qkv),
            KvPast => TensorName::Serve(ServeTensor::KvPast),
            Kv => TensorName::Serve(ServeTensor::Kv),
            Ctx => TensorName::Act(Activation::Ctx),
            Z => TensorName::Act(Activation::Z),
            X1 => TensorName::Act(Activation::X1),
            H2 => TensorName::Act(Activation::H2),
            A => TensorName::Act(Activation::A),
            U => TensorName::Act(Activation::U),
            M => TensorName::Act(Activation::M),
            Y => TensorName::Act(Activation::Y),
            LnfWeight => TensorName::Serve(ServeTensor::LnfWeight),
            LnfBias => TensorName::Serve(ServeTensor::LnfBias),
            Hf => TensorName::Serve(ServeTensor::Hf),
            Logits => TensorName::Vocab(VocabTensor::Logits),
            Param(k) => TensorName::Param(k),
        }
    }

    /// The name the exports and traces write.
    pub fn name(self) -> &'static str {
        self.typed().name()
    }
}

/// What each rank holds of a tensor, resolved per rank by [`Places::tensor`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hold {
    /// Every rank holds it all.
    Whole,
    /// Every rank holds a full-shape term of a sum.
    Partial,
    /// A block parameter, as the shard plan splits it.
    Param(ParamKind),
    /// An activation whose columns follow a parameter's split: a column-parallel weight's
    /// columns, or a row-parallel weight's rows (the attention context's columns are `W_out`'s
    /// rows).
    ColsOf(ParamKind),
    /// The K and V columns of the rank's KV heads (the KV cache).
    KvHeads,
    /// The rank's vocabulary rows (the embedding table).
    VocabRows,
    /// The rank's vocabulary columns (the logits).
    VocabCols,
    /// These rows of a tensor every rank holds whole (the step's positions, the last row).
    Rows(Range<usize>),
}

/// Resolves a [`Hold`] into each rank's [`Placement`]: the one place the decode program builds
/// its [`TensorPlacement`]s.
pub struct Places<'a> {
    cfg: &'a Config,
    plan: ShardPlan,
    /// Vocabulary rows per rank.
    vr: usize,
}

impl<'a> Places<'a> {
    pub fn new(cfg: &'a Config, vcfg: &VocabConfig) -> Self {
        Self {
            cfg,
            plan: ShardPlan::new(cfg),
            vr: vcfg.rows_per_rank(),
        }
    }

    fn place(&self, hold: &Hold, r: usize) -> Placement {
        match hold {
            Hold::Whole => Placement::Replicate,
            Hold::Partial => Placement::Partial,
            Hold::Param(kind) => self.plan.placement(*kind, r),
            Hold::ColsOf(kind) => self.plan.columns_of(*kind, r),
            Hold::KvHeads => {
                let d = self.cfg.head_dim();
                let (kv, kvp) = (self.cfg.kv_heads(), self.cfg.kv_heads_per_rank());
                let k0 = self.cfg.first_kv_head(r) * d;
                let v0 = kv * d + k0;
                Placement::Shard {
                    dim: 1,
                    ranges: vec![[k0, k0 + kvp * d], [v0, v0 + kvp * d]],
                }
            }
            Hold::VocabRows => Placement::shard(0, r * self.vr..(r + 1) * self.vr),
            Hold::VocabCols => Placement::shard(1, r * self.vr..(r + 1) * self.vr),
            Hold::Rows(rows) => Placement::shard(0, rows.clone()),
        }
    }

    /// Tensor `t` of global `shape` as the ranks `ranks` hold it under `hold`.
    pub fn tensor(
        &self,
        t: DecodeTensor,
        shape: [usize; 2],
        hold: &Hold,
        ranks: &[usize],
    ) -> TensorPlacement {
        TensorPlacement {
            tensor: t.typed(),
            shape,
            per_rank: ranks.iter().map(|&r| self.place(hold, r)).collect(),
        }
    }
}

/// A tensor an op reads or writes.
type Tn = (DecodeTensor, [usize; 2], Hold);

struct Builder<'a> {
    cfg: &'a Config,
    places: Places<'a>,
    events: Vec<Event>,
}

impl Builder<'_> {
    fn resolve(&self, tensors: &[Tn], ranks: &[usize]) -> Vec<TensorPlacement> {
        tensors
            .iter()
            .map(|(t, shape, hold)| self.places.tensor(*t, *shape, hold, ranks))
            .collect()
    }

    /// A compute op on every rank: one event per rank.
    #[allow(clippy::too_many_arguments)]
    fn compute(
        &mut self,
        layer: usize,
        op: Op,
        parallel: Parallel,
        inputs: Vec<[usize; 2]>,
        output: [usize; 2],
        work: Work,
        reads: &[Tn],
        writes: &[Tn],
    ) {
        let Some(compute) = op.compute() else {
            return;
        };
        for rank in 0..self.cfg.tp.max(1) {
            let index = self.events.len();
            let (reads, writes) = (self.resolve(reads, &[rank]), self.resolve(writes, &[rank]));
            self.events.push(compute_event(
                self.cfg,
                (index, layer, Pass::Forward, op),
                EventKind::Compute {
                    op: compute,
                    parallel,
                },
                rank,
                (inputs.clone(), output),
                work,
                reads,
                writes,
            ));
        }
    }

    /// A collective over every rank that changes tensor `t` from `from` to `to`; returns its
    /// event.
    fn collective(
        &mut self,
        layer: usize,
        op: Op,
        kind: CollectiveKind,
        (t, shape): (DecodeTensor, [usize; 2]),
        from: Hold,
        to: Hold,
    ) -> &mut Event {
        let ranks: Vec<usize> = (0..self.cfg.tp.max(1)).collect();
        let reads = vec![self.places.tensor(t, shape, &from, &ranks)];
        let writes = vec![self.places.tensor(t, shape, &to, &ranks)];
        let index = self.events.len();
        self.events.push(collective_event(
            self.cfg,
            index,
            layer,
            Pass::Forward,
            op,
            kind,
            ranks,
            &[shape],
            reads,
            writes,
        ));
        let last = self.events.len() - 1;
        &mut self.events[last]
    }
}

/// The decode step's program: `cfg.tokens()` new rows (the prompt at prefill, one token after)
/// ending at cache length `context`, on `cfg.tp` ranks with `cfg.algorithm`, the vocabulary
/// split by `vcfg`. Layer numbers are the blocks'; the embedding is on layer 0, the head on the
/// last layer. Times are proportional until a cost model is applied
/// ([`crate::capacity::cost::apply_to_trace`]).
pub fn program(cfg: &Config, vcfg: &VocabConfig, context: usize) -> Trace {
    use DecodeTensor as D;
    use ParamKind as P;
    let nt = cfg.tokens();
    let h = cfg.hidden;
    let start = context.saturating_sub(nt);
    let (hp, kvp, d) = (
        cfg.heads_per_rank(),
        cfg.kv_heads_per_rank(),
        cfg.head_dim(),
    );
    // Per rank: QKV columns, FFN columns, attention width; vocabulary rows.
    let (qc, fr, hr) = (cfg.qkv_cols_per_rank(), cfg.ffn_per_rank(), hp * d);
    let (qw, f) = (cfg.qkv_width(), cfg.ffn);
    let kv_cols = 2 * cfg.kv_heads() * d;
    let (vr, vp) = (vcfg.rows_per_rank(), vcfg.padded_vocab());
    let (n, h64, ctx) = (nt as u64, h as u64, context as u64);
    let mut b = Builder {
        cfg,
        places: Places::new(cfg, vcfg),
        events: Vec::new(),
    };
    let x = [nt, h];
    let one = [1, h];
    let whole = |t: D, shape: [usize; 2]| (t, shape, Hold::Whole);
    let param = |k: P| (D::Param(k), k.shape(cfg), Hold::Param(k));
    let table = (D::Embedding, [vp, h], Hold::VocabRows);

    b.compute(
        0,
        Op::EmbedLookup,
        Parallel::Row,
        vec![[nt, 1], [vr, h]],
        x,
        Work {
            flops: 0,
            elems: 2 * n * h64,
        },
        &[whole(D::Ids, [nt, 1]), table.clone()],
        &[(D::E, x, Hold::Partial)],
    );
    b.collective(
        0,
        Op::EmbedG,
        CollectiveKind::AllReduce,
        (D::E, x),
        Hold::Partial,
        Hold::Whole,
    );
    b.compute(
        0,
        Op::PosEmbed,
        Parallel::Replicated,
        vec![x, [nt, h]],
        x,
        Work {
            flops: n * h64,
            elems: 3 * n * h64,
        },
        &[
            whole(D::E, x),
            (D::Pos, [context, h], Hold::Rows(start..context)),
        ],
        &[whole(D::X, x)],
    );
    // Each new row's query heads read the cache up to its position: on average
    // `ctx − (n−1)/2` positions; K and V of the rank's KV heads for every cached position.
    let keys = n * ctx - n * n.saturating_sub(1) / 2;
    let kv_w = (kvp * d) as u64;
    let attention = Work {
        flops: work::attention_flops(hp as u64, keys, d as u64),
        elems: n * qc as u64 + 2 * ctx * kv_w + n * hr as u64,
    };
    // The append reads the new rows' K and V columns and writes them into the cache.
    let append = Work {
        flops: 0,
        elems: 4 * n * kv_w,
    };
    let qkv = (D::Qkv, [nt, qw], Hold::ColsOf(P::QkvWeight));
    let kv = (D::Kv, [context, kv_cols], Hold::KvHeads);
    let ctx_t = (D::Ctx, x, Hold::ColsOf(P::OutWeight));
    let (a, u) = (
        (D::A, [nt, f], Hold::ColsOf(P::Fc1Weight)),
        (D::U, [nt, f], Hold::ColsOf(P::Fc1Weight)),
    );
    for layer in 0..cfg.layers {
        // Attention half.
        b.compute(
            layer,
            Op::Ln1,
            Parallel::Replicated,
            vec![x, one],
            x,
            work::layer_norm(n, h64),
            &[whole(D::X, x), param(P::Ln1Weight), param(P::Ln1Bias)],
            &[whole(D::H1, x)],
        );
        b.collective(
            layer,
            Op::AttnF,
            CollectiveKind::Identity,
            (D::H1, x),
            Hold::Whole,
            Hold::Whole,
        );
        b.compute(
            layer,
            Op::Qkv,
            Parallel::Column,
            vec![x, [h, qc]],
            [nt, qc],
            work::linear(n, h64, qc as u64, true),
            &[whole(D::H1, x), param(P::QkvWeight), param(P::QkvBias)],
            std::slice::from_ref(&qkv),
        );
        b.compute(
            layer,
            Op::KvAppend,
            Parallel::Local,
            vec![[nt, qc], [start, 2 * kvp * d]],
            [context, 2 * kvp * d],
            append,
            &[qkv.clone(), (D::KvPast, [start, kv_cols], Hold::KvHeads)],
            std::slice::from_ref(&kv),
        );
        b.compute(
            layer,
            Op::AttnCore,
            Parallel::Local,
            vec![[nt, qc], [context, 2 * kvp * d]],
            [nt, hr],
            attention,
            &[qkv.clone(), kv.clone()],
            std::slice::from_ref(&ctx_t),
        );
        b.compute(
            layer,
            Op::AttnOut,
            Parallel::Row,
            vec![[nt, hr], [hr, h]],
            x,
            work::linear(n, hr as u64, h64, false),
            &[ctx_t.clone(), param(P::OutWeight)],
            &[(D::Z, x, Hold::Partial)],
        );
        b.collective(
            layer,
            Op::AttnG,
            CollectiveKind::AllReduce,
            (D::Z, x),
            Hold::Partial,
            Hold::Whole,
        );
        b.compute(
            layer,
            Op::AttnBiasResidual,
            Parallel::Replicated,
            vec![x, x, one],
            x,
            work::bias_residual(n, h64),
            &[whole(D::X, x), whole(D::Z, x), param(P::OutBias)],
            &[whole(D::X1, x)],
        );
        // MLP half.
        b.compute(
            layer,
            Op::Ln2,
            Parallel::Replicated,
            vec![x, one],
            x,
            work::layer_norm(n, h64),
            &[whole(D::X1, x), param(P::Ln2Weight), param(P::Ln2Bias)],
            &[whole(D::H2, x)],
        );
        b.collective(
            layer,
            Op::MlpF,
            CollectiveKind::Identity,
            (D::H2, x),
            Hold::Whole,
            Hold::Whole,
        );
        b.compute(
            layer,
            Op::Fc1,
            Parallel::Column,
            vec![x, [h, fr]],
            [nt, fr],
            work::linear(n, h64, fr as u64, true),
            &[whole(D::H2, x), param(P::Fc1Weight), param(P::Fc1Bias)],
            std::slice::from_ref(&a),
        );
        b.compute(
            layer,
            Op::Gelu,
            Parallel::Local,
            vec![[nt, fr]],
            [nt, fr],
            work::gelu(n, fr as u64),
            std::slice::from_ref(&a),
            std::slice::from_ref(&u),
        );
        b.compute(
            layer,
            Op::Fc2,
            Parallel::Row,
            vec![[nt, fr], [fr, h]],
            x,
            work::linear(n, fr as u64, h64, false),
            &[u.clone(), param(P::Fc2Weight)],
            &[(D::M, x, Hold::Partial)],
        );
        b.collective(
            layer,
            Op::MlpG,
            CollectiveKind::AllReduce,
            (D::M, x),
            Hold::Partial,
            Hold::Whole,
        );
        b.compute(
            layer,
            Op::MlpBiasResidual,
            Parallel::Replicated,
            vec![x, x, one],
            x,
            work::bias_residual(n, h64),
            &[whole(D::X1, x), whole(D::M, x), param(P::Fc2Bias)],
            &[whole(D::Y, x)],
        );
    }
    // The head runs on the last position only: that is all sampling needs.
    let last = cfg.layers.saturating_sub(1);
    b.compute(
        last,
        Op::FinalLn,
        Parallel::Replicated,
        vec![one, one],
        one,
        work::layer_norm(1, h64),
        &[
            (D::Y, x, Hold::Rows(nt.saturating_sub(1)..nt)),
            whole(D::LnfWeight, one),
            whole(D::LnfBias, one),
        ],
        &[whole(D::Hf, one)],
    );
    let logits = (D::Logits, [1, vp], Hold::VocabCols);
    b.compute(
        last,
        Op::LmHead,
        Parallel::Column,
        vec![one, [vr, h]],
        [1, vr],
        work::linear(1, h64, vr as u64, false),
        &[whole(D::Hf, one), table],
        std::slice::from_ref(&logits),
    );
    let gather = b.collective(
        last,
        Op::LogitsGather,
        CollectiveKind::AllGather,
        (D::Logits, [1, vp]),
        Hold::VocabCols,
        Hold::Whole,
    );
    // Each rank starts from its own columns of the row (the gather's buffer is one row).
    gather.inputs = vec![[1, vr]];
    let mut trace = Trace {
        config: cfg.clone(),
        events: b.events,
        time_source: TimeSource::Proportional,
    };
    trace.assign_times(TimeSource::Proportional, proportional_duration_s);
    trace
}

/// What the ranks hold before the step, `(layer, tensor)`: the token ids, the embedding table's
/// vocabulary rows and the position table (layer 0), each layer's KV cache so far, and the final
/// LayerNorm's weights and the table again for the head (the last layer). The block parameters
/// are the shard plan's. [`crate::block::check::check_placements_from`] starts from these.
pub fn inputs(cfg: &Config, vcfg: &VocabConfig, context: usize) -> Vec<(usize, TensorPlacement)> {
    use DecodeTensor as D;
    let places = Places::new(cfg, vcfg);
    let ranks: Vec<usize> = (0..cfg.tp.max(1)).collect();
    let (nt, h) = (cfg.tokens(), cfg.hidden);
    let start = context.saturating_sub(nt);
    let kv_cols = 2 * cfg.kv_heads() * cfg.head_dim();
    let last = cfg.layers.saturating_sub(1);
    let vp = vcfg.padded_vocab();
    let t = |t: D, shape: [usize; 2], hold: Hold| places.tensor(t, shape, &hold, &ranks);
    let mut out = vec![
        (0, t(D::Ids, [nt, 1], Hold::Whole)),
        (0, t(D::Embedding, [vp, h], Hold::VocabRows)),
        (0, t(D::Pos, [context, h], Hold::Whole)),
        (last, t(D::Embedding, [vp, h], Hold::VocabRows)),
        (last, t(D::LnfWeight, [1, h], Hold::Whole)),
        (last, t(D::LnfBias, [1, h], Hold::Whole)),
    ];
    for layer in 0..cfg.layers {
        out.push((layer, t(D::KvPast, [start, kv_cols], Hold::KvHeads)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::check::check_placements_from;

    fn configs() -> Vec<(Config, VocabConfig)> {
        let mut out = Vec::new();
        for tp in [1, 2, 4] {
            for kv in [None, Some(2), Some(1)] {
                let cfg = Config {
                    tp,
                    hidden: 32,
                    heads: 4,
                    kv_heads: kv,
                    ffn: 64,
                    layers: 2,
                    batch: 1,
                    seq: 1,
                    sequence_parallel: false,
                    ..Config::default()
                };
                let vcfg = VocabConfig {
                    tp,
                    vocab: 61,
                    hidden: 32,
                    tokens: 1,
                    ..VocabConfig::default()
                };
                out.push((cfg, vcfg));
            }
        }
        out
    }

    fn with_tokens(cfg: &Config, n: usize) -> Config {
        Config {
            seq: n,
            ..cfg.clone()
        }
    }

    #[test]
    fn the_decode_program_is_consistent_at_tp_1_2_4_with_and_without_gqa() {
        for (cfg, vcfg) in configs() {
            for (n, context) in [(7, 7), (1, 8), (1, 20)] {
                let cfg = with_tokens(&cfg, n);
                let tr = program(&cfg, &vcfg, context);
                if let Err(e) = check_placements_from(&tr, &inputs(&cfg, &vcfg, context)) {
                    panic!("{} n={n} context={context}: {e}", cfg.label());
                }
                // Every compute op on every rank, every collective over the group.
                let tp = cfg.tp;
                let per_layer = 11 * tp + 4;
                assert_eq!(
                    tr.events.len(),
                    2 * tp + 1 + cfg.layers * per_layer + 2 * tp + 1
                );
            }
        }
    }

    #[test]
    fn the_kv_cache_is_split_by_kv_heads_and_replicated_past_them() {
        // 4 heads of 8, 2 KV heads: K columns 0..16, V columns 16..32.
        let (cfg, vcfg) = configs()
            .into_iter()
            .find(|(c, _)| c.tp == 4 && c.kv_heads == Some(2))
            .unwrap_or_default();
        let tr = program(&cfg, &vcfg, 9);
        let holds: Vec<Placement> = tr
            .events
            .iter()
            .filter(|e| e.op == Op::KvAppend && e.layer == 0)
            .map(|e| e.writes[0].per_rank[0].clone())
            .collect();
        let kv = |k: usize| Placement::Shard {
            dim: 1,
            ranges: vec![[8 * k, 8 * k + 8], [16 + 8 * k, 16 + 8 * k + 8]],
        };
        assert_eq!(holds, vec![kv(0), kv(0), kv(1), kv(1)]);
        assert_eq!(tr.events[0].writes[0].tensor, DecodeTensor::E.typed());
    }

    #[test]
    fn a_missing_append_or_g_is_caught() {
        let (cfg, vcfg) = configs()
            .into_iter()
            .find(|(c, _)| c.tp == 2 && c.kv_heads.is_none())
            .unwrap_or_default();
        let ins = inputs(&cfg, &vcfg, 5);
        for (gone, want) in [(Op::KvAppend, "KV"), (Op::AttnG, "partial")] {
            let mut tr = program(&cfg, &vcfg, 5);
            tr.events.retain(|e| e.op != gone);
            let err = check_placements_from(&tr, &ins)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(want), "{gone}: {err}");
        }
        // And a head that reads rows the step does not hold.
        let mut tr = program(&cfg, &vcfg, 5);
        if let Some(e) = tr.events.iter_mut().find(|e| e.op == Op::FinalLn) {
            e.reads[0].per_rank[0] = Placement::Partial;
        }
        assert!(check_placements_from(&tr, &ins).is_err());
    }
}
