//! Serving the tiny character-level model ([`crate::labs::train`]) on `tp` virtual GPUs: a prefill of
//! the prompt, then token-by-token decode with a KV cache split by KV heads, two all-reduces per
//! layer per step, and the vocabulary-parallel LM head; greedy or seeded sampling.
//!
//! # What each rank does per step (prefill: the prompt's `n` tokens; decode: one token)
//! ```text
//! embed: its vocabulary rows (zeros for ids it does not hold) ─▶ embed.g (all-reduce) ─▶ +pos
//! per layer: ln1 ─▶ [x·W_qkv,r + b_r] ─▶ append K,V of its KV heads to its cache ─▶
//!            attention of its query heads over its cache ─▶ [ctx_r·W_out,r] ─▶ attn.g (all-reduce)
//!            ─▶ +b_out +x ─▶ ln2 ─▶ fc1,r ─▶ GeLU ─▶ fc2,r ─▶ mlp.g (all-reduce) ─▶ +b_2 +x1
//! head:  lnf ─▶ z·E_rᵀ (its vocabulary rows, last position only) ─▶ head.gather (all-gather)
//! ```
//! The step is a program ([`step_trace`], built by [`crate::block::decode::program`]): its
//! events, with each tensor's placement on every rank, are what the [`Decoder`] walks (one match
//! arm per op), what the CUDA decode walks, and what the cost model prices.
//!
//! The KV cache follows the block's split ([`Config::kv_heads_per_rank`]): with `tp <= kv_heads`
//! each rank keeps `kv/tp` whole KV heads (Megatron-LM's rule), with `tp > kv_heads` each KV head
//! is cached on `tp/kv` ranks (vLLM's replication), so the cache per GPU stops shrinking at
//! `tp = kv_heads`.
//!
//! # The oracle
//! [`reference_generate`] shares nothing with the sharded path but the model's weights and the
//! elementwise kernels: it keeps no cache and, for every step, runs the whole sequence so far
//! through the unsharded CPU reference ([`crate::block::reference::block_forward`], ndarray's own `dot`,
//! the full causal score matrix), then the final LayerNorm and all of `z·Eᵀ`. So a wrong cache
//! position, a missing all-reduce or a wrong shard changes its logits, not only the sharded ones.
//!
//! # Tolerance of the logits
//! Both paths compute the same sums in another order (split row-parallel sums, gemm against
//! ndarray's `dot`, the cached softmax over the past against the masked full one), so each
//! step's logits differ by rounding: [`crate::block::verify::Tolerance`]'s bound
//! `16·ε·√K·(L+1)·max(1, κ)` relative to `max(max|logit|, 1)`, with `K = max(h, ffn, context)`.
//! For f64 at the test sizes that is ≈ 1e-13; for f32 ≈ 2e-5; measured differences are one to
//! two orders below. The sampled text must be *identical*: each step's sample is drawn from each
//! path's own logits with the same uniform number, and the tests fail if a token differs.

use crate::block::ops;
use crate::block::verify::Tolerance;
use crate::block::Op;
use crate::collectives::{self, Algorithm, CollectiveError};
use crate::config::Config;
use crate::dtype::{DType, Element};
use crate::labs::train::{Corpus, FullModel, RankParams, TrainConfig, TrainError, Trainer};
use crate::labs::vocab::VocabConfig;
use crate::params::{LayerParams, ParamKind};
use crate::{
    collectives::CollectiveKind,
    trace::{EventKind, Trace},
};
use ndarray::{s, Array2};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use thiserror::Error;
use web_time::Instant;

/// How the next token is chosen from the logits.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sampling {
    /// The most likely token (the first one on a tie).
    Greedy,
    /// A draw from `softmax(logits / temperature)` with step `i`'s uniform number from
    /// ChaCha8 seeded by `seed` and `i`.
    Seeded { seed: u64, temperature: f64 },
}

/// Why a decode cannot run.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ServeError {
    #[error(transparent)]
    Train(#[from] TrainError),
    #[error(transparent)]
    Collective(#[from] CollectiveError),
    #[error("the prompt is empty; type at least one character")]
    EmptyPrompt,
    #[error(
        "the prompt has {found:?}, which the model's alphabet does not contain (it knows the {known} \
         characters of the guide it was trained on); remove or replace it"
    )]
    UnknownChar { found: char, known: usize },
    #[error(
        "the prompt ({prompt} characters) plus {tokens} new tokens exceed the model's context of \
         {context} positions (it has learned positions for {context} only); shorten the prompt or \
         ask for at most {room} tokens"
    )]
    ContextTooLong {
        prompt: usize,
        tokens: usize,
        context: usize,
        room: usize,
    },
    #[error("the sampling temperature must be a positive number (got {0}); try 1.0 or greedy")]
    BadTemperature(f64),
    #[error("{0}")]
    Invalid(String),
}

/// A tiny character-level model ready to serve: its configuration (`tp` ignored), alphabet and
/// unsharded weights.
#[derive(Debug, Clone)]
pub struct TinyModel<T> {
    pub cfg: TrainConfig,
    pub chars: Vec<char>,
    pub full: FullModel<T>,
}

impl<T: Element> TinyModel<T> {
    /// Seeded random weights ([`FullModel::random`]) over the guide's alphabet.
    pub fn random(cfg: &TrainConfig) -> Self {
        let corpus = Corpus::guide();
        let full = FullModel::random(cfg, corpus.vocab());
        Self {
            cfg: cfg.clone(),
            chars: corpus.chars,
            full,
        }
    }

    /// The weights of a trainer that ran at TP=1 (its one rank holds every weight; the padding
    /// rows of the table are dropped). **Errors** if the trainer ran at another TP.
    pub fn from_trainer(tr: &Trainer<T>) -> Result<Self, ServeError> {
        if tr.cfg.tp != 1 || tr.ranks.len() != 1 {
            return Err(ServeError::Invalid(format!(
                "serving takes the weights of a TP=1 training run (this one ran at TP={}); \
                 train with --tp 1",
                tr.cfg.tp
            )));
        }
        let r = &tr.ranks[0];
        let v = tr.corpus.vocab();
        Ok(Self {
            cfg: tr.cfg.clone(),
            chars: tr.corpus.chars.clone(),
            full: FullModel {
                embedding: r.table.slice(s![..v, ..]).to_owned(),
                pos: r.pos.clone(),
                layers: r.layers.clone(),
                lnf_w: r.lnf_w.clone(),
                lnf_b: r.lnf_b.clone(),
            },
        })
    }

    /// Trains `cfg` at TP=1 for `cfg.steps` steps on the guide and returns the trained model.
    pub fn train(cfg: &TrainConfig) -> Result<Self, ServeError> {
        let cfg1 = TrainConfig {
            tp: 1,
            ..cfg.clone()
        };
        let mut tr = Trainer::<T>::new(&cfg1, Corpus::guide())?;
        for _ in 0..cfg1.steps {
            tr.step()?;
        }
        Self::from_trainer(&tr)
    }

    pub fn vocab(&self) -> usize {
        self.chars.len()
    }

    /// Context length: positions the model has embeddings for.
    pub fn context(&self) -> usize {
        self.full.pos.nrows()
    }

    /// The prompt as ids. **Errors** on an empty prompt or a character outside the alphabet.
    pub fn encode(&self, prompt: &str) -> Result<Vec<usize>, ServeError> {
        if prompt.is_empty() {
            return Err(ServeError::EmptyPrompt);
        }
        prompt
            .chars()
            .map(|c| {
                self.chars
                    .binary_search(&c)
                    .map_err(|_| ServeError::UnknownChar {
                        found: c,
                        known: self.chars.len(),
                    })
            })
            .collect()
    }

    pub fn decode(&self, ids: &[usize]) -> String {
        ids.iter().filter_map(|&i| self.chars.get(i)).collect()
    }

    /// The block configuration at `tp` for `tokens` rows (batch 1).
    pub fn block(&self, tp: usize, tokens: usize) -> Config {
        Config {
            tp,
            batch: 1,
            seq: tokens.max(1),
            ..self.cfg.block()
        }
    }

    fn vocab_cfg(&self, tp: usize, algorithm: Algorithm) -> VocabConfig {
        VocabConfig {
            tp,
            algorithm,
            ..self.cfg.vocab(self.vocab())
        }
    }

    /// Checks that `tp` splits this model (heads, FFN, KV heads, vocabulary).
    pub fn check_tp(&self, tp: usize) -> Result<(), ServeError> {
        let cfg = TrainConfig {
            tp,
            ..self.cfg.clone()
        };
        cfg.block().validate_for_cpu().map_err(TrainError::from)?;
        cfg.vocab(self.vocab())
            .validate()
            .map_err(TrainError::from)?;
        Ok(())
    }

    fn check_request(
        &self,
        prompt: usize,
        tokens: usize,
        sampling: Sampling,
    ) -> Result<(), ServeError> {
        let context = self.context();
        if tokens == 0 {
            return Err(ServeError::Invalid(
                "ask for at least 1 token (got 0)".into(),
            ));
        }
        if prompt.saturating_add(tokens) > context {
            return Err(ServeError::ContextTooLong {
                prompt,
                tokens,
                context,
                room: context.saturating_sub(prompt),
            });
        }
        if let Sampling::Seeded { temperature, .. } = sampling {
            if !(temperature.is_finite() && temperature > 0.0) {
                return Err(ServeError::BadTemperature(temperature));
            }
        }
        Ok(())
    }
}

/// Picks a token from `logits` (real vocabulary) for step `step`.
pub fn sample(logits: &[f64], sampling: Sampling, step: usize) -> usize {
    match sampling {
        Sampling::Greedy => {
            let mut best = 0;
            for (i, &v) in logits.iter().enumerate() {
                if v > logits[best] {
                    best = i;
                }
            }
            best
        }
        Sampling::Seeded { seed, temperature } => {
            let mut rng =
                ChaCha8Rng::seed_from_u64(seed ^ (step as u64 + 1).wrapping_mul(0x9E37_79B9));
            let u: f64 = rng.random();
            let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let w: Vec<f64> = logits
                .iter()
                .map(|&v| ((v - max) / temperature).exp())
                .collect();
            let total: f64 = w.iter().sum();
            let mut acc = 0.0;
            for (i, wi) in w.iter().enumerate() {
                acc += wi / total;
                if u < acc {
                    return i;
                }
            }
            w.len().saturating_sub(1)
        }
    }
}

/// Prefill (the prompt) or one decoded token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Prefill,
    Decode,
}

impl Phase {
    /// The phase of generation step `i`: the first runs the prompt, every later one decodes the
    /// token sampled before it.
    pub fn of_step(i: usize) -> Phase {
        if i == 0 {
            Phase::Prefill
        } else {
            Phase::Decode
        }
    }
}

/// What one step produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRecord {
    pub phase: Phase,
    /// Position of the step's first new token.
    pub position: usize,
    /// Tokens the step ran (the prompt's length for prefill, 1 for decode).
    pub new_tokens: usize,
    /// Logits at the step's last position over the real vocabulary (as f64).
    pub logits: Vec<f64>,
    /// The token chosen from them.
    pub token: usize,
    /// Wall-clock seconds the step's compute took on the virtual GPUs (ranks side by side).
    pub compute_s: f64,
    /// Wall-clock seconds of the step's collectives (all-reduces and the logits' all-gather).
    pub collective_s: f64,
    /// KV-cache bytes each rank holds after the step.
    pub kv_cache_bytes_per_rank: Vec<u64>,
}

/// A whole generation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Generation {
    /// 0 for the unsharded reference.
    pub tp: usize,
    pub prompt: Vec<usize>,
    /// Generated ids (one per step).
    pub tokens: Vec<usize>,
    pub text: String,
    pub steps: Vec<StepRecord>,
}

/// One rank's KV cache of one layer: `[positions, kv_heads_per_rank·d]` for K and for V,
/// row-major, growing one row per token.
#[derive(Debug, Clone, Default)]
struct LayerKv<T> {
    k: Vec<T>,
    v: Vec<T>,
}

/// One event the decoder issued (the walk of [`step_trace`]'s program; tests compare them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    pub layer: usize,
    pub op: Op,
    pub ranks: Vec<usize>,
}

/// The sharded decoder: every rank's shards and KV cache.
#[derive(Debug, Clone)]
pub struct Decoder<'m, T> {
    model: &'m TinyModel<T>,
    tp: usize,
    algorithm: Algorithm,
    vcfg: VocabConfig,
    ranks: Vec<RankParams<T>>,
    /// `[rank][layer]`.
    cache: Vec<Vec<LayerKv<T>>>,
    len: usize,
    /// Events issued by the last step.
    pub issued: Vec<Issued>,
}

/// Timings of one step.
#[derive(Debug, Clone, Copy, Default)]
struct Clock {
    compute_s: f64,
    collective_s: f64,
}

impl<'m, T: Element> Decoder<'m, T> {
    /// Shards `model` over `tp` virtual GPUs (Megatron's split of the blocks, the padded
    /// vocabulary split of the tied table). **Errors** if `tp` does not split the model.
    pub fn new(
        model: &'m TinyModel<T>,
        tp: usize,
        algorithm: Algorithm,
    ) -> Result<Self, ServeError> {
        model.check_tp(tp)?;
        let cfg = TrainConfig {
            tp,
            algorithm,
            ..model.cfg.clone()
        };
        let ranks = model.full.shard(&cfg);
        Ok(Self {
            model,
            tp,
            algorithm,
            vcfg: model.vocab_cfg(tp, algorithm),
            cache: vec![vec![LayerKv::default(); cfg.layers]; tp],
            ranks,
            len: 0,
            issued: Vec::new(),
        })
    }

    /// Tokens in the cache.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// KV-cache bytes on each rank.
    pub fn kv_cache_bytes_per_rank(&self) -> Vec<u64> {
        let e = std::mem::size_of::<T>() as u64;
        self.cache
            .iter()
            .map(|layers| {
                layers
                    .iter()
                    .map(|c| (c.k.len() + c.v.len()) as u64 * e)
                    .sum()
            })
            .collect()
    }

    /// Runs compute step `step` on each of its ranks side by side, recording one issued event
    /// per rank.
    fn op<R: Send>(
        &mut self,
        clock: &mut Clock,
        step: &Step,
        f: impl Fn(usize) -> R + Sync + Send,
    ) -> Vec<R> {
        for &r in &step.ranks {
            self.issued.push(Issued {
                layer: step.layer,
                op: step.op,
                ranks: vec![r],
            });
        }
        let t0 = Instant::now();
        let out = step.ranks.par_iter().map(|&r| f(r)).collect();
        clock.compute_s += t0.elapsed().as_secs_f64();
        out
    }

    /// The collective of step `step` on every rank's `parts`, of the kind and by the algorithm
    /// the program names: the identity, the engine's all-reduce, or its all-gather of one-row
    /// buffers (the logits' columns).
    fn collective(
        &mut self,
        clock: &mut Clock,
        step: &Step,
        parts: Vec<Array2<T>>,
    ) -> Result<Vec<Array2<T>>, ServeError> {
        let Some((kind, algorithm)) = step.collective else {
            return Err(program_error(step.op, "a collective"));
        };
        self.issued.push(Issued {
            layer: step.layer,
            op: step.op,
            ranks: step.ranks.clone(),
        });
        let (rows, cols) = parts.first().map_or((0, 0), |p| p.dim());
        let shape = |v: Vec<T>, dim: (usize, usize)| {
            Array2::from_shape_vec(dim, v).map_err(|e| ServeError::Invalid(e.to_string()))
        };
        let bufs = |parts: Vec<Array2<T>>| -> Vec<Vec<T>> {
            parts
                .into_iter()
                .map(|p| p.iter().copied().collect())
                .collect()
        };
        let t0 = Instant::now();
        let out = match kind {
            CollectiveKind::Identity => return Ok(parts),
            CollectiveKind::AllReduce => {
                let mut b = bufs(parts);
                collectives::all_reduce_in_place(&mut b, algorithm)?;
                b.into_iter()
                    .map(|v| shape(v, (rows, cols)))
                    .collect::<Result<_, _>>()?
            }
            CollectiveKind::AllGather if rows == 1 => {
                let gathered = collectives::all_gather(&bufs(parts), algorithm)?;
                gathered
                    .outputs
                    .into_iter()
                    .map(|v| {
                        let len = v.len();
                        shape(v, (1, len))
                    })
                    .collect::<Result<_, _>>()?
            }
            other => {
                return Err(ServeError::Invalid(format!(
                    "the decoder has no {} for `{}`",
                    other.name(),
                    step.op
                )))
            }
        };
        clock.collective_s += t0.elapsed().as_secs_f64();
        Ok(out)
    }

    /// Runs `ids` at the next positions through every rank (the prompt, or one token) and
    /// returns the last position's logits over the real vocabulary.
    pub fn step(&mut self, ids: &[usize]) -> Result<StepOutput, ServeError> {
        let n = ids.len();
        if n == 0 {
            return Err(ServeError::EmptyPrompt);
        }
        if self.len + n > self.model.context() {
            return Err(ServeError::ContextTooLong {
                prompt: self.len,
                tokens: n,
                context: self.model.context(),
                room: self.model.context().saturating_sub(self.len),
            });
        }
        if let Some(&bad) = ids.iter().find(|&&i| i >= self.model.vocab()) {
            return Err(ServeError::Invalid(format!(
                "token id {bad} is outside the vocabulary of {}",
                self.model.vocab()
            )));
        }
        self.issued.clear();
        let mut clock = Clock::default();
        let program = step_trace(self.model, self.tp, self.algorithm, n, self.len + n);
        let ranks = std::mem::take(&mut self.ranks);
        let out = self.walk(&ranks, &program, ids, &mut clock);
        self.ranks = ranks;
        let logits = out?;
        self.len += n;
        Ok(StepOutput {
            logits,
            compute_s: clock.compute_s,
            collective_s: clock.collective_s,
        })
    }

    /// The walk of the step's program ([`step_trace`]): one match arm per [`Op`], in the
    /// program's order, each collective of the kind the program names. Nothing here lists the
    /// step's ops a second time.
    fn walk(
        &mut self,
        ranks: &[RankParams<T>],
        program: &Trace,
        ids: &[usize],
        clock: &mut Clock,
    ) -> Result<Vec<f64>, ServeError> {
        use ParamKind as P;
        let n = ids.len();
        let tp = self.tp;
        let start = self.len;
        let cfg = &program.config;
        let vcfg = self.vcfg.clone();
        let (hp, kvp, d) = (
            cfg.heads_per_rank(),
            cfg.kv_heads_per_rank(),
            cfg.head_dim(),
        );
        let (qw, kw) = (hp * d, kvp * d);
        let mut live = Live::<T>::default();
        for step in steps(program, tp)? {
            let (layer, op) = (step.layer, step.op);
            let p = |r: usize| -> &LayerParams<T> { &ranks[r].layers[layer] };
            match op {
                // Each rank its vocabulary rows (zeros for ids it does not hold); `embed.g`
                // sums them; the positions are replicated.
                Op::EmbedLookup => {
                    let e = self.op(clock, &step, |r| {
                        let range = vcfg.rank_range(r);
                        let mut x = Array2::<T>::zeros((n, cfg.hidden));
                        for (i, &id) in ids.iter().enumerate() {
                            if range.contains(&id) {
                                x.row_mut(i).assign(&ranks[r].table.row(id - range.start));
                            }
                        }
                        x
                    });
                    live.e = Some(e);
                }
                Op::EmbedG => {
                    let e = take(&mut live.e, op, "E")?;
                    live.e = Some(self.collective(clock, &step, e)?);
                }
                Op::PosEmbed => {
                    let e = take(&mut live.e, op, "E")?;
                    live.x = Some(self.op(clock, &step, |r| {
                        let mut y = e[r].clone();
                        for (i, mut row) in y.outer_iter_mut().enumerate() {
                            row += &ranks[r].pos.row(start + i);
                        }
                        y
                    }));
                }
                Op::Ln1 | Op::Ln2 => {
                    let (src, w, b) = if op == Op::Ln1 {
                        (peek(&live.x, op, "X")?, P::Ln1Weight, P::Ln1Bias)
                    } else {
                        (peek(&live.x1, op, "X1")?, P::Ln2Weight, P::Ln2Bias)
                    };
                    let normed = self.op(clock, &step, |r| {
                        ops::layer_norm(src[r].view(), p(r).get(w).view(), p(r).get(b).view()).0
                    });
                    live.h = Some(normed);
                }
                // `f`: the identity forward.
                Op::AttnF | Op::MlpF => {
                    let h = take(&mut live.h, op, "H")?;
                    live.h = Some(self.collective(clock, &step, h)?);
                }
                Op::Qkv | Op::Fc1 => {
                    let h = peek(&live.h, op, "H")?;
                    let (w, b) = if op == Op::Qkv {
                        (P::QkvWeight, P::QkvBias)
                    } else {
                        (P::Fc1Weight, P::Fc1Bias)
                    };
                    let y = self.op(clock, &step, |r| {
                        let mut y = ops::matmul(h[r].view(), p(r).get(w).view());
                        ops::add_row(&mut y, p(r).get(b).view());
                        y
                    });
                    if op == Op::Qkv {
                        live.qkv = Some(y);
                    } else {
                        live.a = Some(y);
                    }
                }
                // The new rows' K and V columns appended to each rank's cache (ranks own their
                // caches).
                Op::KvAppend => {
                    let qkv = peek(&live.qkv, op, "QKV")?;
                    let t0 = Instant::now();
                    for &r in &step.ranks {
                        self.issued.push(Issued {
                            layer,
                            op,
                            ranks: vec![r],
                        });
                        let c = &mut self.cache[r][layer];
                        for row in qkv[r].outer_iter() {
                            c.k.extend(row.slice(s![qw..qw + kw]).iter().copied());
                            c.v.extend(row.slice(s![qw + kw..qw + 2 * kw]).iter().copied());
                        }
                    }
                    clock.compute_s += t0.elapsed().as_secs_f64();
                }
                Op::AttnCore => {
                    let qkv = take(&mut live.qkv, op, "QKV")?;
                    let caches: Vec<&LayerKv<T>> = (0..tp).map(|r| &self.cache[r][layer]).collect();
                    // The new rows' K and V must be in the cache (`attn.kv_append` before).
                    if caches.iter().any(|c| c.k.len() < (start + n) * kw) {
                        return Err(program_error(op, "the KV cache's new rows"));
                    }
                    for &r in &step.ranks {
                        self.issued.push(Issued {
                            layer,
                            op,
                            ranks: vec![r],
                        });
                    }
                    let t0 = Instant::now();
                    let out: Vec<Array2<T>> = step
                        .ranks
                        .par_iter()
                        .map(|&r| cached_attention(qkv[r].view(), caches[r], start, hp, kvp, d))
                        .collect();
                    clock.compute_s += t0.elapsed().as_secs_f64();
                    live.ctx = Some(out);
                }
                Op::Gelu => {
                    let a = take(&mut live.a, op, "A")?;
                    live.u = Some(self.op(clock, &step, |r| ops::gelu(a[r].view())));
                }
                Op::AttnOut | Op::Fc2 => {
                    let (src, w) = if op == Op::AttnOut {
                        (take(&mut live.ctx, op, "Ctx")?, P::OutWeight)
                    } else {
                        (take(&mut live.u, op, "U")?, P::Fc2Weight)
                    };
                    live.part = Some(self.op(clock, &step, |r| {
                        ops::matmul(src[r].view(), p(r).get(w).view())
                    }));
                }
                // `g`: the all-reduce of the row-parallel partial sums.
                Op::AttnG | Op::MlpG => {
                    let part = take(&mut live.part, op, "Z")?;
                    live.part = Some(self.collective(clock, &step, part)?);
                }
                Op::AttnBiasResidual | Op::MlpBiasResidual => {
                    let reduced = take(&mut live.part, op, "Z")?;
                    let (res, bias) = if op == Op::AttnBiasResidual {
                        (take(&mut live.x, op, "X")?, P::OutBias)
                    } else {
                        (take(&mut live.x1, op, "X1")?, P::Fc2Bias)
                    };
                    let y = self.op(clock, &step, |r| {
                        let mut y = &res[r] + &reduced[r];
                        ops::add_row(&mut y, p(r).get(bias).view());
                        y
                    });
                    if op == Op::AttnBiasResidual {
                        live.x = Some(res);
                        live.x1 = Some(y);
                    } else {
                        live.x = Some(y);
                    }
                }
                // The head runs on the last position only: that is all sampling needs.
                Op::FinalLn => {
                    let x = take(&mut live.x, op, "Y")?;
                    live.hf = Some(self.op(clock, &step, |r| {
                        let last = x[r].slice(s![n - 1..n, ..]);
                        ops::layer_norm(last, ranks[r].lnf_w.view(), ranks[r].lnf_b.view()).0
                    }));
                }
                Op::LmHead => {
                    let z = take(&mut live.hf, op, "Hf")?;
                    live.logits = Some(self.op(clock, &step, |r| {
                        ops::matmul(z[r].view(), ranks[r].table.t())
                    }));
                }
                Op::LogitsGather => {
                    let local = take(&mut live.logits, op, "logits")?;
                    live.logits = Some(self.collective(clock, &step, local)?);
                }
                // Training's ops and a learner's plan's moves are not in the decode program.
                Op::CeLocal
                | Op::CeMax
                | Op::CeSumExp
                | Op::CeTarget
                | Op::CeBwd
                | Op::LmHeadBwd
                | Op::LmHeadFBwd
                | Op::EmbedBwd
                | Op::MlpBiasResidualBwd
                | Op::MlpGBwd
                | Op::Fc2Bwd
                | Op::GeluBwd
                | Op::MlpFBwdGather
                | Op::Fc1Bwd
                | Op::MlpFBwd
                | Op::Ln2Bwd
                | Op::AttnBiasResidualBwd
                | Op::AttnGBwd
                | Op::AttnOutBwd
                | Op::AttnCoreBwd
                | Op::AttnFBwdGather
                | Op::QkvBwd
                | Op::KvGrads
                | Op::AttnFBwd
                | Op::Ln1Bwd
                | Op::SpGrads
                | crate::design_ops!() => {
                    return Err(ServeError::Invalid(format!(
                        "`{op}` ({}) is not an op of the decode step",
                        op.label()
                    )))
                }
            }
        }
        // Every rank holds the whole padded row; drop the padding.
        let gathered = take(&mut live.logits, Op::LogitsGather, "logits")?;
        let row = gathered
            .first()
            .ok_or_else(|| program_error(Op::LogitsGather, "logits"))?;
        let mut logits = Vec::with_capacity(self.model.vocab());
        for r in 0..tp {
            let real = vcfg.real_range(r).len();
            let from = r * vcfg.rows_per_rank();
            logits.extend(row.iter().skip(from).take(real).map(|&v| v.to_f64()));
        }
        Ok(logits)
    }
}

/// One step of the walk: a compute op on every rank (the program's per-rank events of it), or
/// one collective.
#[derive(Debug, Clone)]
struct Step {
    layer: usize,
    op: Op,
    ranks: Vec<usize>,
    collective: Option<(CollectiveKind, Algorithm)>,
}

/// The program's events grouped into [`Step`]s, in issue order. **Errors** if a compute op
/// does not run on every rank `0..tp` in order (the decoder runs them side by side).
fn steps(program: &Trace, tp: usize) -> Result<Vec<Step>, ServeError> {
    let mut out: Vec<Step> = Vec::new();
    for e in &program.events {
        let collective = match e.kind {
            EventKind::Collective {
                kind, algorithm, ..
            } => Some((kind, algorithm)),
            EventKind::Compute { .. } => None,
        };
        if let Some(last) = out.last_mut() {
            if collective.is_none()
                && last.collective.is_none()
                && (last.layer, last.op) == (e.layer, e.op)
            {
                last.ranks.extend(&e.ranks);
                continue;
            }
        }
        out.push(Step {
            layer: e.layer,
            op: e.op,
            ranks: e.ranks.clone(),
            collective,
        });
    }
    let all: Vec<usize> = (0..tp).collect();
    if let Some(s) = out.iter().find(|s| s.ranks != all) {
        return Err(ServeError::Invalid(format!(
            "the decode program runs `{}` on ranks {:?}; the decoder runs every op on all {tp}",
            s.op, s.ranks
        )));
    }
    Ok(out)
}

/// Each rank's tensors between the ops of a step, named as in the program
/// ([`crate::block::decode::DecodeTensor`]); `None` until an op writes them.
struct Live<T> {
    /// `E`: the looked-up embeddings, partial until `embed.g`.
    e: Option<Vec<Array2<T>>>,
    /// `X`, the block input (after a block, `Y`).
    x: Option<Vec<Array2<T>>>,
    /// `H1` or `H2`, a LayerNorm's output.
    h: Option<Vec<Array2<T>>>,
    qkv: Option<Vec<Array2<T>>>,
    ctx: Option<Vec<Array2<T>>>,
    /// `Z` or `M`: a row-parallel product, partial until `g` sums it.
    part: Option<Vec<Array2<T>>>,
    x1: Option<Vec<Array2<T>>>,
    a: Option<Vec<Array2<T>>>,
    u: Option<Vec<Array2<T>>>,
    hf: Option<Vec<Array2<T>>>,
    /// The rank's logit columns, then the gathered row.
    logits: Option<Vec<Array2<T>>>,
}

impl<T> Default for Live<T> {
    fn default() -> Self {
        Self {
            e: None,
            x: None,
            h: None,
            qkv: None,
            ctx: None,
            part: None,
            x1: None,
            a: None,
            u: None,
            hf: None,
            logits: None,
        }
    }
}

fn program_error(op: Op, tensor: &str) -> ServeError {
    ServeError::Invalid(format!(
        "the decode program's `{op}` reads {tensor} before an op wrote it"
    ))
}

/// Takes a tensor out of the walk's state.
fn take<V>(slot: &mut Option<V>, op: Op, tensor: &str) -> Result<V, ServeError> {
    slot.take().ok_or_else(|| program_error(op, tensor))
}

/// Borrows a tensor of the walk's state.
fn peek<'a, V>(slot: &'a Option<V>, op: Op, tensor: &str) -> Result<&'a V, ServeError> {
    slot.as_ref().ok_or_else(|| program_error(op, tensor))
}

/// The logits and times of one [`Decoder::step`].
#[derive(Debug, Clone, PartialEq)]
pub struct StepOutput {
    pub logits: Vec<f64>,
    pub compute_s: f64,
    pub collective_s: f64,
}

/// Causal attention of the rank's `hp` query heads for new rows at positions `start..`, over
/// the rank's cache (which already holds the new rows' K and V). Query head `j` reads local KV
/// head `j / (hp/kvp)`.
fn cached_attention<T: Element>(
    qkv: ndarray::ArrayView2<'_, T>,
    cache: &LayerKv<T>,
    start: usize,
    hp: usize,
    kvp: usize,
    d: usize,
) -> Array2<T> {
    let n = qkv.nrows();
    let kw = kvp * d;
    let group = (hp / kvp.max(1)).max(1);
    let scale = T::from_f64(1.0 / (d as f64).sqrt());
    let mut out = Array2::<T>::zeros((n, hp * d));
    for i in 0..n {
        let pos = start + i;
        for j in 0..hp {
            let g = j / group;
            let q = qkv.slice(s![i, j * d..(j + 1) * d]);
            let scores: Vec<T> = (0..=pos)
                .map(|t| {
                    let k = &cache.k[t * kw + g * d..t * kw + (g + 1) * d];
                    q.iter().zip(k).fold(T::zero(), |a, (&x, &y)| a + x * y) * scale
                })
                .collect();
            let max = scores.iter().copied().fold(T::neg_infinity(), T::max);
            let w: Vec<T> = scores.iter().map(|&v| (v - max).exp()).collect();
            let total = w.iter().fold(T::zero(), |a, &b| a + b);
            let mut o = out.slice_mut(s![i, j * d..(j + 1) * d]);
            for (t, &wt) in w.iter().enumerate() {
                let v = &cache.v[t * kw + g * d..t * kw + (g + 1) * d];
                let p = wt / total;
                o.iter_mut().zip(v).for_each(|(a, &b)| *a += p * b);
            }
        }
    }
    out
}

/// Generates `tokens` tokens after `prompt` on `tp` virtual GPUs: one prefill step, then one
/// decode step per further token.
pub fn generate<T: Element>(
    model: &TinyModel<T>,
    prompt: &str,
    tokens: usize,
    tp: usize,
    algorithm: Algorithm,
    sampling: Sampling,
) -> Result<Generation, ServeError> {
    let ids = model.encode(prompt)?;
    model.check_request(ids.len(), tokens, sampling)?;
    let mut dec = Decoder::new(model, tp, algorithm)?;
    let mut out = Vec::with_capacity(tokens);
    let mut steps = Vec::with_capacity(tokens);
    let mut next: Vec<usize> = ids.clone();
    for i in 0..tokens {
        let position = dec.len();
        let so = dec.step(&next)?;
        let token = sample(&so.logits, sampling, i);
        let rec = StepRecord {
            phase: Phase::of_step(i),
            position,
            new_tokens: next.len(),
            logits: so.logits,
            token,
            compute_s: so.compute_s,
            collective_s: so.collective_s,
            kv_cache_bytes_per_rank: dec.kv_cache_bytes_per_rank(),
        };
        steps.push(rec);
        out.push(token);
        next = vec![token];
    }
    Ok(Generation {
        tp,
        text: model.decode(&out),
        prompt: ids,
        tokens: out,
        steps,
    })
}

/// The oracle: the same generation on the unsharded reference, recomputing the whole sequence
/// at every step with no cache (see the module docs).
pub fn reference_generate<T: Element>(
    model: &TinyModel<T>,
    prompt: &str,
    tokens: usize,
    sampling: Sampling,
) -> Result<Generation, ServeError> {
    let ids = model.encode(prompt)?;
    model.check_request(ids.len(), tokens, sampling)?;
    let f = &model.full;
    let mut seq = ids.clone();
    let mut out = Vec::with_capacity(tokens);
    let mut steps = Vec::with_capacity(tokens);
    for i in 0..tokens {
        let n = seq.len();
        let t0 = Instant::now();
        let mut x = Array2::<T>::zeros((n, model.cfg.hidden));
        for (p, &id) in seq.iter().enumerate() {
            let mut row = x.row_mut(p);
            row.assign(&f.embedding.row(id));
            row += &f.pos.row(p);
        }
        let block = model.block(1, n);
        for layer in &f.layers {
            x = crate::block::reference::block_forward(&block, layer, &x).0;
        }
        let (z, _) = ops::layer_norm(x.slice(s![n - 1..n, ..]), f.lnf_w.view(), f.lnf_b.view());
        let logits: Vec<f64> = z
            .dot(&f.embedding.t())
            .iter()
            .map(|&v| v.to_f64())
            .collect();
        let token = sample(&logits, sampling, i);
        steps.push(StepRecord {
            phase: Phase::of_step(i),
            position: if i == 0 { 0 } else { n - 1 },
            new_tokens: if i == 0 { n } else { 1 },
            logits,
            token,
            compute_s: t0.elapsed().as_secs_f64(),
            collective_s: 0.0,
            kv_cache_bytes_per_rank: Vec::new(),
        });
        out.push(token);
        seq.push(token);
    }
    Ok(Generation {
        tp: 0,
        text: model.decode(&out),
        prompt: ids,
        tokens: out,
        steps,
    })
}

/// The tolerance for comparing a generation's logits with the reference's (see the module docs).
pub fn logits_tolerance<T: Element>(model: &TinyModel<T>, dtype: DType) -> Tolerance {
    let cfg = Config {
        seq: model.context(),
        ..model.cfg.block()
    };
    Tolerance::for_config(&cfg, dtype)
}

/// Largest `|got − want| / max(max|want|, 1)` over a step's logits.
pub fn logits_error(got: &[f64], want: &[f64]) -> f64 {
    let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    got.iter()
        .zip(want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max)
        / scale
}

/// A generation compared with the reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub tp: usize,
    pub same_text: bool,
    /// Largest [`logits_error`] over steps.
    pub max_logits_error: f64,
    pub tolerance: f64,
    pub passed: bool,
}

/// Compares `got` with `want` (same prompt, same sampling).
pub fn compare(got: &Generation, want: &Generation, tolerance: &Tolerance) -> Comparison {
    let max_logits_error = got
        .steps
        .iter()
        .zip(&want.steps)
        .map(|(a, b)| logits_error(&a.logits, &b.logits))
        .fold(0.0, f64::max);
    let same_text = got.tokens == want.tokens && got.steps.len() == want.steps.len();
    Comparison {
        tp: got.tp,
        same_text,
        max_logits_error,
        tolerance: tolerance.relative,
        passed: same_text && max_logits_error <= tolerance.relative,
    }
}

/// The program of one serving step on `tp` ranks ([`crate::block::decode::program`]):
/// `new_tokens` rows at positions ending at `context` (the cache length after the step), every
/// op and collective in issue order with its tensors' placements, as the engine's [`Trace`]
/// (layer numbers as in training; the embedding on layer 0, the head on the last layer). The
/// [`Decoder`] and the CUDA decode walk it. Times are proportional until a cost model is applied
/// ([`crate::capacity::cost::apply_to_trace`]).
pub fn step_trace<T: Element>(
    model: &TinyModel<T>,
    tp: usize,
    algorithm: Algorithm,
    new_tokens: usize,
    context: usize,
) -> Trace {
    let cfg = Config {
        algorithm,
        ..model.block(tp, new_tokens)
    };
    crate::block::decode::program(&cfg, &model.vocab_cfg(tp, algorithm), context)
}

/// The traces of a whole generation: the prefill of `prompt` tokens, then one per decoded token.
pub fn generation_traces<T: Element>(
    model: &TinyModel<T>,
    tp: usize,
    algorithm: Algorithm,
    prompt: usize,
    tokens: usize,
) -> Vec<Trace> {
    (0..tokens)
        .map(|i| {
            if i == 0 {
                step_trace(model, tp, algorithm, prompt, prompt)
            } else {
                step_trace(model, tp, algorithm, 1, prompt + i)
            }
        })
        .collect()
}

/// The model `tplab serve --tiny` and the Serve view train and serve: `tplab train`'s default
/// shape (2 layers, hidden 64, 4 heads, ffn 256) with a 64-character context, 300 Adam steps.
pub fn tiny_serving_config(kv_heads: Option<usize>, dtype: DType) -> TrainConfig {
    TrainConfig {
        kv_heads,
        seq: 64,
        steps: 300,
        dtype,
        ..TrainConfig::default()
    }
}

/// A step's time modeled by the cost model on `cluster` (the trace's dtype; the group spans
/// nodes past `gpus_per_node`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ModeledStep {
    pub total_s: f64,
    pub collective_s: f64,
}

/// Applies [`crate::capacity::cost::apply_to_trace`] to a copy of `trace`: the makespan, and the time in
/// collectives along it.
pub fn modeled_step(trace: &Trace, cluster: &crate::capacity::hardware::Cluster) -> ModeledStep {
    let mut t = trace.clone();
    crate::capacity::cost::apply_to_trace(&mut t, cluster);
    let collective_s = t
        .events
        .iter()
        .filter(|e| e.is_collective())
        .map(|e| e.timing.duration_s)
        .sum();
    ModeledStep {
        total_s: t.makespan_s(),
        collective_s,
    }
}

/// One TP size of a [`TinyReport`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TinyRun {
    pub generation: Generation,
    pub comparison: Comparison,
    /// Mean wall-clock seconds per decode step on the virtual GPUs (prefill excluded).
    pub measured_decode_s: f64,
    /// Of which in collectives.
    pub measured_collective_s: f64,
    /// The cost model's time for each step on the chosen GPU.
    pub modeled: Vec<ModeledStep>,
}

impl TinyRun {
    /// Mean modeled seconds per decode step (prefill excluded).
    pub fn modeled_decode_s(&self) -> f64 {
        mean(self.modeled.iter().skip(1).map(|m| m.total_s))
    }
}

/// The mean of `v`, 0 when it is empty (the per-step figures' average, prefill skipped by the
/// caller).
pub fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        s / n as f64
    }
}

/// The reference and every TP size's generation, compared, timed and modeled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TinyReport {
    pub prompt: String,
    pub reference: Generation,
    pub tolerance: Tolerance,
    pub runs: Vec<TinyRun>,
}

impl TinyReport {
    pub fn passed(&self) -> bool {
        self.runs.iter().all(|r| r.comparison.passed)
    }
}

/// Generates on the reference and at each TP in `tps`, compares, and models every step on
/// `cluster`.
pub fn tiny_report<T: Element>(
    model: &TinyModel<T>,
    prompt: &str,
    tokens: usize,
    tps: &[usize],
    sampling: Sampling,
    cluster: &crate::capacity::hardware::Cluster,
) -> Result<TinyReport, ServeError> {
    if tps.is_empty() {
        return Err(ServeError::Invalid(
            "give at least one TP size (e.g. --tp 1,2,4)".into(),
        ));
    }
    let reference = reference_generate(model, prompt, tokens, sampling)?;
    let tolerance = logits_tolerance(model, model.cfg.dtype);
    let mut runs = Vec::with_capacity(tps.len());
    for &tp in tps {
        let generation = generate(model, prompt, tokens, tp, Algorithm::Ring, sampling)?;
        let comparison = compare(&generation, &reference, &tolerance);
        let traces = generation_traces(model, tp, Algorithm::Ring, generation.prompt.len(), tokens);
        let modeled = traces.iter().map(|t| modeled_step(t, cluster)).collect();
        let decode = || generation.steps.iter().skip(1);
        runs.push(TinyRun {
            measured_decode_s: mean(decode().map(|s| s.compute_s + s.collective_s)),
            measured_collective_s: mean(decode().map(|s| s.collective_s)),
            generation,
            comparison,
            modeled,
        });
    }
    Ok(TinyReport {
        prompt: prompt.to_string(),
        reference,
        tolerance,
        runs,
    })
}

/// The tiny model shipped with tplab: [`tiny_serving_config`] (multi-head attention, f32
/// weights) trained once for 300 Adam steps on the guide. Regenerate with
/// `cargo run --release -p tplab-engine --example train_tiny_serve` (writes
/// `engine/data/tiny_serve.safetensors`).
pub const SHIPPED_TINY: &[u8] = include_bytes!("../../data/tiny_serve.safetensors");

fn tensor_names(layers: usize) -> Vec<String> {
    let mut v: Vec<String> = ["embedding", "pos", "lnf.weight", "lnf.bias"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for l in 0..layers {
        v.extend(crate::params::ParamKind::ALL.iter().map(|k| k.name(l)));
    }
    v
}

impl<T: Element> TinyModel<T> {
    fn tensors(&self) -> Vec<&Array2<T>> {
        let f = &self.full;
        let mut v = vec![&f.embedding, &f.pos, &f.lnf_w, &f.lnf_b];
        for l in &f.layers {
            v.extend(l.tensors());
        }
        v
    }

    /// The model as safetensors: every tensor in f32 (`embedding`, `pos`, `lnf.weight`,
    /// `lnf.bias`, then each block's parameters by their engine names), the configuration and
    /// the alphabet in the metadata (`config`: JSON, `chars`: the characters in id order).
    pub fn to_safetensors(&self) -> Result<Vec<u8>, ServeError> {
        use safetensors::tensor::{Dtype, TensorView};
        let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = tensor_names(self.full.layers.len())
            .into_iter()
            .zip(self.tensors())
            .map(|(name, a)| {
                let data = a
                    .iter()
                    .flat_map(|&v| (Element::to_f64(v) as f32).to_le_bytes())
                    .collect();
                (name, vec![a.nrows(), a.ncols()], data)
            })
            .collect();
        let views = bytes
            .iter()
            .map(|(n, s, d)| {
                TensorView::new(Dtype::F32, s.clone(), d)
                    .map(|v| (n.clone(), v))
                    .map_err(|e| ServeError::Invalid(format!("{n}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut meta = std::collections::HashMap::new();
        let cfg =
            serde_json::to_string(&self.cfg).map_err(|e| ServeError::Invalid(e.to_string()))?;
        meta.insert("config".to_string(), cfg);
        meta.insert("chars".to_string(), self.chars.iter().collect::<String>());
        safetensors::tensor::serialize(views, Some(meta))
            .map_err(|e| ServeError::Invalid(e.to_string()))
    }

    /// Reads [`TinyModel::to_safetensors`]'s format. **Errors** name the missing or misshapen
    /// tensor or metadata key.
    pub fn from_safetensors(bytes: &[u8]) -> Result<Self, ServeError> {
        use safetensors::tensor::{Dtype, SafeTensors};
        let bad = |what: String| ServeError::Invalid(format!("tiny model file: {what}"));
        let (_, meta) = SafeTensors::read_metadata(bytes).map_err(|e| bad(e.to_string()))?;
        let m = meta.metadata().clone().unwrap_or_default();
        let cfg: TrainConfig = serde_json::from_str(
            m.get("config")
                .ok_or_else(|| bad("no \"config\" metadata".into()))?,
        )
        .map_err(|e| bad(format!("config: {e}")))?;
        let chars: Vec<char> = m
            .get("chars")
            .ok_or_else(|| bad("no \"chars\" metadata".into()))?
            .chars()
            .collect();
        cfg.block()
            .validate_for_cpu()
            .map_err(|e| bad(format!("config: {e}")))?;
        let st = SafeTensors::deserialize(bytes).map_err(|e| bad(e.to_string()))?;
        let mut template = Self {
            full: FullModel::random(&cfg, chars.len()),
            // The weights are served in `T`, whatever precision they were trained in.
            cfg: TrainConfig {
                dtype: T::DTYPE,
                ..cfg
            },
            chars,
        };
        let names = tensor_names(template.full.layers.len());
        let shapes: Vec<(usize, usize)> = template.tensors().iter().map(|a| a.dim()).collect();
        let mut loaded = Vec::with_capacity(names.len());
        for (name, (r, c)) in names.iter().zip(shapes) {
            let t = st.tensor(name).map_err(|e| bad(format!("{name}: {e}")))?;
            if t.dtype() != Dtype::F32 || t.shape() != [r, c] {
                return Err(bad(format!(
                    "{name} is {:?} {:?}, expected F32 [{r}, {c}]",
                    t.dtype(),
                    t.shape()
                )));
            }
            let v: Vec<T> = t
                .data()
                .chunks_exact(4)
                .map(|b| T::from_f64(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))))
                .collect();
            loaded
                .push(Array2::from_shape_vec((r, c), v).map_err(|e| bad(format!("{name}: {e}")))?);
        }
        let f = &mut template.full;
        let mut it = loaded.into_iter();
        let mut next = || it.next().ok_or_else(|| bad("too few tensors".into()));
        f.embedding = next()?;
        f.pos = next()?;
        f.lnf_w = next()?;
        f.lnf_b = next()?;
        for l in f.layers.iter_mut() {
            for t in l.tensors_mut() {
                *t = next()?;
            }
        }
        Ok(template)
    }

    /// The model tplab ships ([`SHIPPED_TINY`]).
    pub fn shipped() -> Result<Self, ServeError> {
        Self::from_safetensors(SHIPPED_TINY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::check::check_placements_from;

    fn tiny(kv_heads: Option<usize>) -> TinyModel<f64> {
        TinyModel::random(&TrainConfig {
            hidden: 32,
            heads: 4,
            kv_heads,
            ffn: 64,
            seq: 24,
            layers: 2,
            ..tiny_serving_config(kv_heads, DType::F64)
        })
    }

    /// The decoder runs exactly its step's program, event by event, and that program's
    /// placements are consistent (the KV cache split by KV heads, replicated past them).
    #[test]
    fn the_decoder_walks_the_step_program_and_its_placements_check() {
        for kv in [None, Some(2), Some(1)] {
            let model = tiny(kv);
            let ids = model.encode("Tensor").unwrap_or_default();
            for tp in [1, 2, 4] {
                let mut dec = Decoder::new(&model, tp, Algorithm::Ring).expect("splits");
                for (step, n) in [(0, ids.len()), (1, 1), (2, 1)] {
                    let context = dec.len() + n;
                    dec.step(&ids[..n]).expect("runs");
                    let program = step_trace(&model, tp, Algorithm::Ring, n, context);
                    let want: Vec<Issued> = program
                        .events
                        .iter()
                        .map(|e| Issued {
                            layer: e.layer,
                            op: e.op,
                            ranks: e.ranks.clone(),
                        })
                        .collect();
                    assert_eq!(dec.issued, want, "kv={kv:?} tp={tp} step {step}");
                    let appends = want.iter().filter(|i| i.op == Op::KvAppend).count();
                    assert_eq!(appends, tp * model.cfg.layers);
                    let cfg = &program.config;
                    let vcfg = model.vocab_cfg(tp, Algorithm::Ring);
                    let inputs = crate::block::decode::inputs(cfg, &vcfg, context);
                    if let Err(e) = check_placements_from(&program, &inputs) {
                        panic!("kv={kv:?} tp={tp} step {step}: {e}");
                    }
                }
            }
        }
    }

    /// A program without the cache append is refused by the walk, not run on a short cache.
    #[test]
    fn a_program_without_the_append_is_refused() {
        let model = tiny(Some(2));
        let mut dec = Decoder::new(&model, 2, Algorithm::Ring).expect("splits");
        let mut program = step_trace(&model, 2, Algorithm::Ring, 3, 3);
        program.events.retain(|e| e.op != Op::KvAppend);
        let ranks = std::mem::take(&mut dec.ranks);
        let err = dec
            .walk(&ranks, &program, &[1, 2, 3], &mut Clock::default())
            .expect_err("refused");
        assert!(err.to_string().contains("KV cache"), "{err}");
    }
}
