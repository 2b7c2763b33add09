//! A tiny character-level GPT, trained on `tp` virtual GPUs: vocabulary-parallel embedding
//! (tied with the LM head), learned positions, `L` Megatron-sharded blocks, a final LayerNorm and
//! the vocabulary-parallel cross-entropy, with SGD or Adam on each rank's shards. The corpus is
//! the guide the lessons come from (`engine/data/guide.tr.txt`).
//!
//! Every step runs the blocks twice on the sharded executor: a forward pass to get the output
//! (and the loss), then the forward again with the backward (full activation recomputation, as
//! Megatron's `--recompute-granularity full` does); the rest (positions, final LayerNorm, head,
//! embedding) follows [`crate::labs::vocab`]. Each rank updates only the parameters it holds; the
//! replicated ones (positions, LayerNorms, row-parallel biases) receive the same gradient on every
//! rank and stay identical.
//!
//! # Why the curves at TP=1, 2 and 4 agree, and how closely
//! The split changes nothing but the order of additions (row-parallel sums, the softmax sum),
//! so each step's loss and gradients differ between TP sizes by rounding: about the block
//! tolerance `16·ε·√K·(L+1)` relative (see [`crate::block::verify`]). Training then feeds those
//! differences back through the parameters, where a smooth loss and a small learning rate keep
//! them from growing fast; Adam divides by `√v`, which amplifies differences in coordinates with
//! tiny gradients, so the gap can grow over the steps. Measured with `tplab train` (the default
//! model: 2 layers, hidden 64, 200 Adam steps): in f64 the TP=2 and TP=4 curves stay within
//! 5e-16 relative of TP=1's; in f32 within 9e-7 (SGD, 100 steps: 2.5e-7). The tests allow 1e-10
//! (f64) and 1e-4 (f32): two orders above the measurements, far below any real bug (a wrong shard
//! or a missing all-reduce changes the loss in the first decimal).

use crate::block::exec::sharded::{self, Options};
use crate::block::ops;
use crate::block::plan::ShardPlan;
use crate::collectives::{Algorithm, CollectiveError};
use crate::config::{Config, ConfigError};
use crate::dtype::{DType, Element};
use crate::labs::vocab::{self, VocabConfig, VocabError};
use crate::params::{LayerParams, Model};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The guide (Turkish original), the training text.
pub const CORPUS: &str = include_str!("../../data/guide.tr.txt");

/// The update rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Optimizer {
    Sgd,
    /// Adam (β₁ = 0.9, β₂ = 0.999, ε = 1e-8, bias-corrected).
    Adam,
}

impl std::str::FromStr for Optimizer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "sgd" => Ok(Optimizer::Sgd),
            "adam" => Ok(Optimizer::Adam),
            _ => Err(format!("unknown optimizer {s:?}; use sgd or adam")),
        }
    }
}

/// One training run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrainConfig {
    pub hidden: usize,
    pub heads: usize,
    /// Grouped-query attention's KV heads (`None`: one per head).
    pub kv_heads: Option<usize>,
    pub ffn: usize,
    /// Context length (characters).
    pub seq: usize,
    /// Sequences per step.
    pub batch: usize,
    pub layers: usize,
    pub tp: usize,
    /// f32 or f64.
    pub dtype: DType,
    pub steps: usize,
    pub lr: f64,
    pub optimizer: Optimizer,
    pub seed: u64,
    pub algorithm: Algorithm,
}

impl Default for TrainConfig {
    fn default() -> Self {
        Self {
            hidden: 64,
            heads: 4,
            kv_heads: None,
            ffn: 256,
            seq: 32,
            batch: 4,
            layers: 2,
            tp: 1,
            dtype: DType::F32,
            steps: 200,
            lr: 3e-3,
            optimizer: Optimizer::Adam,
            seed: 1,
            algorithm: Algorithm::Ring,
        }
    }
}

/// Why a training run cannot start or stopped.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum TrainError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Vocab(#[from] VocabError),
    #[error(transparent)]
    Collective(#[from] CollectiveError),
    #[error(transparent)]
    Exec(#[from] crate::block::exec::design::ExecError),
    #[error("steps must be at least 1 (got 0)")]
    NoSteps,
    #[error("steps {steps} is over the limit of {max}; use fewer steps")]
    TooManySteps { steps: usize, max: usize },
    #[error(
        "the learning rate must be a positive number (got {lr}); try 3e-3 for Adam, 0.1 for SGD"
    )]
    BadLearningRate { lr: f64 },
    #[error("the text has {chars} characters, too few for windows of seq {seq} + 1; reduce seq")]
    TextTooShort { chars: usize, seq: usize },
    #[error(
        "training diverged at step {step} of {steps} at TP={tp}: the loss is {loss}; lower the \
         learning rate (now {lr:e}) and try again"
    )]
    Diverged {
        step: usize,
        steps: usize,
        tp: usize,
        loss: f64,
        lr: f64,
    },
}

/// The most steps one run may take (the curves hold one loss per step and TP size).
pub const MAX_STEPS: usize = 1_000_000;

impl TrainConfig {
    /// The block stack's configuration.
    pub fn block(&self) -> Config {
        Config {
            hidden: self.hidden,
            heads: self.heads,
            kv_heads: self.kv_heads,
            ffn: self.ffn,
            seq: self.seq,
            batch: self.batch,
            layers: self.layers,
            dtype: self.dtype,
            seed: self.seed,
            tp: self.tp,
            algorithm: self.algorithm,
            sequence_parallel: false,
        }
    }

    /// The vocabulary split for a corpus of `vocab` characters (padded to a multiple of 8·tp).
    pub fn vocab(&self, vocab: usize) -> VocabConfig {
        VocabConfig {
            vocab,
            hidden: self.hidden,
            tokens: self.batch.saturating_mul(self.seq),
            tp: self.tp,
            granularity: 8,
            seed: self.seed,
            algorithm: self.algorithm,
        }
    }

    pub fn validate(&self, corpus: &Corpus) -> Result<(), TrainError> {
        self.block().validate_for_cpu()?;
        self.vocab(corpus.vocab()).validate()?;
        if self.steps == 0 {
            return Err(TrainError::NoSteps);
        }
        if self.steps > MAX_STEPS {
            return Err(TrainError::TooManySteps {
                steps: self.steps,
                max: MAX_STEPS,
            });
        }
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return Err(TrainError::BadLearningRate { lr: self.lr });
        }
        if corpus.ids.len() < self.seq.saturating_add(2) {
            return Err(TrainError::TextTooShort {
                chars: corpus.ids.len(),
                seq: self.seq,
            });
        }
        Ok(())
    }
}

/// A character-level text: the sorted distinct characters and the text as their ids.
#[derive(Debug, Clone, PartialEq)]
pub struct Corpus {
    pub chars: Vec<char>,
    pub ids: Vec<usize>,
}

impl Corpus {
    pub fn new(text: &str) -> Self {
        let mut chars: Vec<char> = text.chars().collect();
        chars.sort_unstable();
        chars.dedup();
        let ids = text
            .chars()
            .filter_map(|c| chars.binary_search(&c).ok())
            .collect();
        Self { chars, ids }
    }

    /// The guide.
    pub fn guide() -> Self {
        Self::new(CORPUS)
    }

    pub fn vocab(&self) -> usize {
        self.chars.len()
    }

    /// Step `step`'s batch: `batch` windows at seeded random offsets; ids and next-char targets,
    /// batch-major.
    pub fn batch(&self, cfg: &TrainConfig, step: usize) -> (Vec<usize>, Vec<usize>) {
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed ^ (step as u64).wrapping_mul(0x9E37));
        let last = self.ids.len() - cfg.seq - 1;
        let mut ids = Vec::with_capacity(cfg.batch * cfg.seq);
        let mut targets = Vec::with_capacity(cfg.batch * cfg.seq);
        for _ in 0..cfg.batch {
            let p = rng.random_range(0..=last);
            ids.extend_from_slice(&self.ids[p..p + cfg.seq]);
            targets.extend_from_slice(&self.ids[p + 1..p + cfg.seq + 1]);
        }
        (ids, targets)
    }
}

/// Everything one rank holds: its vocabulary rows of the (tied) table, its shards of every
/// block, and its copies of the replicated positions and final LayerNorm.
#[derive(Debug, Clone, PartialEq)]
pub struct RankParams<T> {
    pub table: Array2<T>,
    pub pos: Array2<T>,
    pub layers: Vec<LayerParams<T>>,
    pub lnf_w: Array2<T>,
    pub lnf_b: Array2<T>,
}

impl<T: Element> RankParams<T> {
    fn tensors(&self) -> Vec<&Array2<T>> {
        let mut v = vec![&self.table, &self.pos, &self.lnf_w, &self.lnf_b];
        for l in &self.layers {
            v.extend(l.tensors());
        }
        v
    }

    fn tensors_mut(&mut self) -> Vec<&mut Array2<T>> {
        let Self {
            table,
            pos,
            layers,
            lnf_w,
            lnf_b,
        } = self;
        let mut v = vec![table, pos, lnf_w, lnf_b];
        for l in layers.iter_mut() {
            v.extend(l.tensors_mut());
        }
        v
    }

    fn zeros_like(&self) -> Self {
        let z = |a: &Array2<T>| Array2::zeros(a.dim());
        Self {
            table: z(&self.table),
            pos: z(&self.pos),
            layers: self
                .layers
                .iter()
                .map(|l| LayerParams::from_fn(|k| z(l.get(k))))
                .collect(),
            lnf_w: z(&self.lnf_w),
            lnf_b: z(&self.lnf_b),
        }
    }

    /// Parameters on this rank.
    pub fn len(&self) -> usize {
        self.tensors().iter().map(|t| t.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The unsharded model (for the reference loss and for sharding).
#[derive(Debug, Clone)]
pub struct FullModel<T> {
    pub embedding: Array2<T>,
    pub pos: Array2<T>,
    pub layers: Vec<LayerParams<T>>,
    pub lnf_w: Array2<T>,
    pub lnf_b: Array2<T>,
}

impl<T: Element> FullModel<T> {
    /// Seeded: blocks as [`Model::random`] (GPT-2-style), embedding N(0, 0.1²), positions
    /// N(0, 0.01²), final LayerNorm gain 1 and bias 0.
    pub fn random(cfg: &TrainConfig, vocab: usize) -> Self {
        let block = cfg.block();
        let layers = Model::<T>::random(&block).layers;
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed.wrapping_add(17));
        let mut normal = |r: usize, c: usize, std: f64| {
            Array2::from_shape_simple_fn((r, c), || {
                let z: f64 = StandardNormal.sample(&mut rng);
                T::from_f64(std * z)
            })
        };
        let embedding = normal(vocab, cfg.hidden, 0.1);
        let pos = normal(cfg.seq, cfg.hidden, 0.01);
        Self {
            embedding,
            pos,
            layers,
            lnf_w: Array2::ones((1, cfg.hidden)),
            lnf_b: Array2::zeros((1, cfg.hidden)),
        }
    }

    /// Rank by rank: table rows, block shards, replicated copies.
    pub fn shard(&self, cfg: &TrainConfig) -> Vec<RankParams<T>> {
        let block = cfg.block();
        let vcfg = cfg.vocab(self.embedding.nrows());
        let model = Model {
            input: Array2::zeros((0, 0)),
            layers: self.layers.clone(),
            grad_output: Array2::zeros((0, 0)),
        };
        let blocks = ShardPlan::new(&block).shard_model(&model);
        blocks
            .into_iter()
            .enumerate()
            .map(|(r, layers)| RankParams {
                table: vocab::shard_table(&vcfg, self.embedding.view(), r),
                pos: self.pos.clone(),
                layers,
                lnf_w: self.lnf_w.clone(),
                lnf_b: self.lnf_b.clone(),
            })
            .collect()
    }

    /// The loss of a batch on the unsharded reference (blocks by [`crate::block::reference`], full
    /// logits, log-softmax cross-entropy).
    pub fn reference_loss(&self, cfg: &TrainConfig, ids: &[usize], targets: &[usize]) -> f64 {
        let block = Config {
            tp: 1,
            ..cfg.block()
        };
        let mut x = Array2::<T>::zeros((ids.len(), cfg.hidden));
        for (i, &id) in ids.iter().enumerate() {
            let mut row = x.row_mut(i);
            row.assign(&self.embedding.row(id));
            row += &self.pos.row(i % cfg.seq);
        }
        let model = Model {
            input: x,
            layers: self.layers.clone(),
            grad_output: Array2::zeros((0, 0)),
        };
        let y = crate::block::reference::forward(&block, &model);
        let (z, _) = ops::layer_norm(y.view(), self.lnf_w.view(), self.lnf_b.view());
        let logits = ops::matmul(z.view(), self.embedding.t());
        let mut total = 0.0;
        for (row, &tg) in logits.outer_iter().zip(targets) {
            let row: Vec<f64> = row.iter().map(|&v| Element::to_f64(v)).collect();
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = row.iter().map(|v| (v - max).exp()).sum();
            total += sum.ln() - (row[tg] - max);
        }
        total / targets.len() as f64
    }
}

/// Optimizer state of one rank.
#[derive(Debug, Clone)]
struct Moments<T> {
    m: RankParams<T>,
    v: RankParams<T>,
}

/// A training run in progress: every rank's parameters and optimizer state.
#[derive(Debug, Clone)]
pub struct Trainer<T> {
    pub cfg: TrainConfig,
    pub corpus: Corpus,
    pub ranks: Vec<RankParams<T>>,
    moments: Vec<Moments<T>>,
    pub step: usize,
    pub losses: Vec<f64>,
}

impl<T: Element> Trainer<T> {
    /// Seeded initial model, sharded over `cfg.tp` ranks. **Errors** on an invalid config.
    pub fn new(cfg: &TrainConfig, corpus: Corpus) -> Result<Self, TrainError> {
        cfg.validate(&corpus)?;
        let full = FullModel::<T>::random(cfg, corpus.vocab());
        let ranks = full.shard(cfg);
        let moments = ranks
            .iter()
            .map(|r| Moments {
                m: r.zeros_like(),
                v: r.zeros_like(),
            })
            .collect();
        Ok(Self {
            cfg: cfg.clone(),
            corpus,
            ranks,
            moments,
            step: 0,
            losses: Vec::new(),
        })
    }

    /// The loss of step `step`'s batch and every rank's gradients (no update).
    pub fn loss_and_grads(&self, step: usize) -> Result<(f64, Vec<RankParams<T>>), TrainError> {
        let cfg = &self.cfg;
        let block = cfg.block();
        let vcfg = cfg.vocab(self.corpus.vocab());
        let tp = cfg.tp;
        let (ids, targets) = self.corpus.batch(cfg, step);
        let tables: Vec<Array2<T>> = self.ranks.iter().map(|r| r.table.clone()).collect();
        // Embedding (vocabulary-parallel) plus positions (replicated).
        let mut x = vocab::lookup_sharded(&vcfg, &tables, &ids)?;
        for (r, xr) in x.iter_mut().enumerate() {
            for (i, mut row) in xr.outer_iter_mut().enumerate() {
                row += &self.ranks[r].pos.row(i % cfg.seq);
            }
        }
        let shards: Vec<Vec<LayerParams<T>>> =
            self.ranks.iter().map(|r| r.layers.clone()).collect();
        let forward_only = Options {
            backward: false,
            record_collectives: false,
        };
        let empty = Array2::<T>::zeros((ids.len(), cfg.hidden));
        let fwd = sharded::run_on_shards(&block, &shards, &x[0], &empty, forward_only)?;
        // Final LayerNorm (replicated), then the vocabulary-parallel head and loss.
        let lnf: Vec<_> = (0..tp)
            .map(|r| {
                ops::layer_norm(
                    fwd.outputs[r].view(),
                    self.ranks[r].lnf_w.view(),
                    self.ranks[r].lnf_b.view(),
                )
            })
            .collect();
        let z: Vec<Array2<T>> = lnf.iter().map(|(z, _)| z.clone()).collect();
        let head = vocab::head_sharded(&vcfg, &tables, &z, &targets)?;
        let lnf_bwd: Vec<_> = (0..tp)
            .map(|r| {
                ops::layer_norm_backward(head.dx[r].view(), &lnf[r].1, self.ranks[r].lnf_w.view())
            })
            .collect();
        // Blocks again, forward and backward (full recomputation).
        let with_backward = Options {
            backward: true,
            record_collectives: false,
        };
        let bwd = sharded::run_on_shards(&block, &shards, &x[0], &lnf_bwd[0].0, with_backward)?;
        let mut grads = Vec::with_capacity(tp);
        for (r, layer_grads) in bwd.grads.into_iter().enumerate() {
            let dx0 = &bwd.grad_inputs[r];
            let mut table = head.grad_tables[r].clone();
            vocab::scatter_grad(&vcfg, r, &ids, dx0, &mut table);
            let mut pos = Array2::<T>::zeros((cfg.seq, cfg.hidden));
            for (i, row) in dx0.outer_iter().enumerate() {
                let mut p = pos.row_mut(i % cfg.seq);
                p += &row;
            }
            grads.push(RankParams {
                table,
                pos,
                layers: layer_grads,
                lnf_w: lnf_bwd[r].1.clone(),
                lnf_b: lnf_bwd[r].2.clone(),
            });
        }
        Ok((head.loss.to_f64(), grads))
    }

    /// One step: loss, gradients, update. Returns the step's loss (before the update).
    pub fn step(&mut self) -> Result<f64, TrainError> {
        let (loss, grads) = self.loss_and_grads(self.step)?;
        self.step += 1;
        let t = self.step as i32;
        let lr = self.cfg.lr;
        let opt = self.cfg.optimizer;
        for ((p, g), mo) in self.ranks.iter_mut().zip(&grads).zip(&mut self.moments) {
            let (ms, vs) = (mo.m.tensors_mut(), mo.v.tensors_mut());
            for (((w, gr), m), v) in p.tensors_mut().into_iter().zip(g.tensors()).zip(ms).zip(vs) {
                update(opt, lr, t, w, gr, m, v);
            }
        }
        self.losses.push(loss);
        Ok(loss)
    }
}

pub(crate) fn update<T: Element>(
    opt: Optimizer,
    lr: f64,
    t: i32,
    w: &mut Array2<T>,
    g: &Array2<T>,
    m: &mut Array2<T>,
    v: &mut Array2<T>,
) {
    let lr_t = T::from_f64(lr);
    match opt {
        Optimizer::Sgd => ndarray::Zip::from(w)
            .and(g)
            .for_each(|w, &g| *w -= lr_t * g),
        Optimizer::Adam => {
            let (b1, b2) = (0.9f64, 0.999f64);
            let c1 = T::from_f64(1.0 - b1.powi(t));
            let c2 = T::from_f64(1.0 - b2.powi(t));
            let (b1, b2, eps) = (T::from_f64(b1), T::from_f64(b2), T::from_f64(1e-8));
            let one = T::one();
            ndarray::Zip::from(w)
                .and(g)
                .and(m)
                .and(v)
                .for_each(|w, &g, m, v| {
                    *m = b1 * *m + (one - b1) * g;
                    *v = b2 * *v + (one - b2) * g * g;
                    let mh = *m / c1;
                    let vh = *v / c2;
                    *w -= lr_t * mh / (vh.sqrt() + eps);
                });
        }
    }
}

/// Loss curves of the same run at several TP sizes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Curves {
    pub config: TrainConfig,
    pub tps: Vec<usize>,
    /// `losses[i][step]` for `tps[i]`.
    pub losses: Vec<Vec<f64>>,
}

impl Curves {
    /// Largest `|loss_tp − loss_tp1| / loss_tp1` over steps, per TP (0 for the first).
    pub fn max_rel_gap(&self) -> Vec<f64> {
        let base = &self.losses[0];
        self.losses
            .iter()
            .map(|c| {
                c.iter()
                    .zip(base)
                    .map(|(a, b)| ((a - b) / b).abs())
                    // NaN-propagating: a NaN gap is not "no gap".
                    .fold(0.0, |m: f64, g| {
                        if m.is_nan() || g.is_nan() {
                            f64::NAN
                        } else {
                            m.max(g)
                        }
                    })
            })
            .collect()
    }
}

/// The same run at several TP sizes (same seed, same batches), advanced in lockstep one optimizer
/// step at every TP per [`Lockstep::step`]: what [`train_curves`] loops over, and what the app's
/// Train view runs one step per background slice.
#[derive(Debug, Clone)]
pub struct Lockstep<T> {
    cfg: TrainConfig,
    tps: Vec<usize>,
    trainers: Vec<Trainer<T>>,
    losses: Vec<Vec<f64>>,
    done: usize,
}

impl<T: Element> Lockstep<T> {
    /// Seeded models at every TP in `tps`. **Errors** on an invalid config (an invalid TP names
    /// the valid ones).
    pub fn new(cfg: &TrainConfig, corpus: &Corpus, tps: &[usize]) -> Result<Self, TrainError> {
        let trainers = tps
            .iter()
            .map(|&tp| Trainer::<T>::new(&TrainConfig { tp, ..cfg.clone() }, corpus.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            cfg: cfg.clone(),
            tps: tps.to_vec(),
            trainers,
            losses: vec![Vec::with_capacity(cfg.steps); tps.len()],
            done: 0,
        })
    }

    /// Steps done at every TP.
    pub fn steps_done(&self) -> usize {
        self.done
    }

    /// Whether all `cfg.steps` steps are done.
    pub fn finished(&self) -> bool {
        self.steps_done() >= self.cfg.steps
    }

    /// `losses()[i][step]` for `tps[i]`, the steps done so far.
    pub fn losses(&self) -> &[Vec<f64>] {
        &self.losses
    }

    /// One optimizer step at every TP. **Errors** at the first non-finite loss (NaN curves
    /// would "agree": every gap is NaN).
    pub fn step(&mut self) -> Result<(), TrainError> {
        let step = self.done;
        let tps = &self.tps;
        for ((t, l), &tp) in self.trainers.iter_mut().zip(&mut self.losses).zip(tps) {
            let loss = t.step()?;
            if !loss.is_finite() {
                return Err(TrainError::Diverged {
                    step: step + 1,
                    steps: self.cfg.steps,
                    tp,
                    loss,
                    lr: self.cfg.lr,
                });
            }
            l.push(loss);
        }
        self.done += 1;
        Ok(())
    }

    /// The curves so far.
    pub fn into_curves(self) -> Curves {
        Curves {
            config: self.cfg,
            tps: self.tps,
            losses: self.losses,
        }
    }
}

/// Trains `cfg` at each TP in `tps` (same seed, same batches), step by step in lockstep, calling
/// `progress(step, losses_so_far)` after every step (`false` stops early). **Errors** on an
/// invalid config (an invalid TP names the valid ones).
pub fn train_curves<T: Element>(
    cfg: &TrainConfig,
    corpus: &Corpus,
    tps: &[usize],
    progress: &mut dyn FnMut(usize, &[Vec<f64>]) -> bool,
) -> Result<Curves, TrainError> {
    let mut run = Lockstep::<T>::new(cfg, corpus, tps)?;
    while !run.finished() {
        run.step()?;
        if !progress(run.steps_done(), run.losses()) {
            break;
        }
    }
    Ok(run.into_curves())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny(tp: usize, dtype: DType) -> TrainConfig {
        TrainConfig {
            hidden: 16,
            heads: 4,
            kv_heads: None,
            ffn: 32,
            seq: 8,
            batch: 2,
            layers: 2,
            tp,
            dtype,
            steps: 30,
            lr: 1e-2,
            optimizer: Optimizer::Adam,
            seed: 3,
            algorithm: Algorithm::Ring,
        }
    }

    #[test]
    fn the_corpus_is_the_guide_in_characters() {
        let c = Corpus::guide();
        assert!(c.vocab() > 60 && c.vocab() < 120, "{}", c.vocab());
        assert!(c.chars.contains(&'ğ') && c.chars.contains(&'ş'));
        assert_eq!(c.ids.len(), CORPUS.chars().count());
    }

    #[test]
    fn step_zero_loss_matches_the_unsharded_reference_at_every_tp() {
        let corpus = Corpus::guide();
        for tp in [1, 2, 4] {
            let cfg = tiny(tp, DType::F64);
            let tr = Trainer::<f64>::new(&cfg, corpus.clone()).unwrap();
            let (loss, _) = tr.loss_and_grads(0).unwrap();
            let full = FullModel::<f64>::random(&cfg, corpus.vocab());
            let (ids, targets) = corpus.batch(&cfg, 0);
            let want = full.reference_loss(&cfg, &ids, &targets);
            assert!(
                (loss - want).abs() < 1e-12 * want,
                "tp={tp}: {loss} vs {want}"
            );
            // Near log V at initialisation: the model knows nothing yet.
            assert!((want - (corpus.vocab() as f64).ln()).abs() < 0.5, "{want}");
        }
    }

    #[test]
    fn gradients_match_finite_differences() {
        // Central differences of the whole model's loss (f64) against the backward, for
        // coordinates in the embedding, the positions, a block weight and the final LayerNorm.
        let corpus = Corpus::guide();
        let cfg = tiny(2, DType::F64);
        let tr = Trainer::<f64>::new(&cfg, corpus.clone()).unwrap();
        let (_, grads) = tr.loss_and_grads(0).unwrap();
        let (ids, _) = corpus.batch(&cfg, 0);
        let used = ids[3];
        let vcfg = cfg.vocab(corpus.vocab());
        let rank = (0..cfg.tp)
            .find(|&r| vcfg.rank_range(r).contains(&used))
            .unwrap();
        let row = used - vcfg.rank_range(rank).start;
        let h = 1e-5;
        // (tensor index in RankParams::tensors, rank, row, col)
        for (tensor, r, i, j) in [
            (0usize, rank, row, 3),
            (1, 0, 2, 5),
            (3, 0, 0, 1),
            (8, 1, 4, 2),
        ] {
            let mut plus = tr.clone();
            let mut minus = tr.clone();
            // Replicated tensors must move on every rank together.
            let replicated = tensor == 1 || tensor == 2 || tensor == 3;
            for (p, sign) in [(&mut plus, 1.0), (&mut minus, -1.0)] {
                for rr in 0..cfg.tp {
                    if replicated || rr == r {
                        p.ranks[rr].tensors_mut()[tensor][(i, j)] += sign * h;
                    }
                }
            }
            let (lp, _) = plus.loss_and_grads(0).unwrap();
            let (lm, _) = minus.loss_and_grads(0).unwrap();
            let fd = (lp - lm) / (2.0 * h);
            let g = grads[r].tensors()[tensor][(i, j)];
            assert!(
                (fd - g).abs() < 1e-6 * (1.0 + g.abs()),
                "tensor {tensor} rank {r} ({i},{j}): fd {fd} vs backward {g}"
            );
        }
    }

    #[test]
    fn curves_at_tp_1_2_4_agree_and_the_loss_falls() {
        let corpus = Corpus::guide();
        let cfg = tiny(1, DType::F64);
        let c = train_curves::<f64>(&cfg, &corpus, &[1, 2, 4], &mut |_, _| true).unwrap();
        let gaps = c.max_rel_gap();
        assert!(gaps.iter().all(|&g| g < 1e-10), "{gaps:?}");
        let l = &c.losses[0];
        assert!(l[l.len() - 1] < l[0] - 0.3, "{l:?}");
        let cfg32 = tiny(1, DType::F32);
        let c32 = train_curves::<f32>(&cfg32, &corpus, &[1, 2, 4], &mut |_, _| true).unwrap();
        let gaps32 = c32.max_rel_gap();
        assert!(gaps32.iter().all(|&g| g < 1e-4), "{gaps32:?}");
    }

    /// Grouped-query attention (4 heads, 2 KV heads): TP=2 splits the KV heads, TP=4 replicates
    /// each on 2 ranks; the curves still agree and the copies stay identical through training.
    #[test]
    fn gqa_curves_agree_and_replicated_kv_copies_stay_identical() {
        let corpus = Corpus::guide();
        let cfg = TrainConfig {
            kv_heads: Some(2),
            steps: 10,
            ..tiny(1, DType::F64)
        };
        let c = train_curves::<f64>(&cfg, &corpus, &[1, 2, 4], &mut |_, _| true).unwrap();
        let gaps = c.max_rel_gap();
        assert!(gaps.iter().all(|&g| g < 1e-10), "{gaps:?}");
        let mut tr = Trainer::<f64>::new(&TrainConfig { tp: 4, ..cfg }, corpus).unwrap();
        for _ in 0..3 {
            tr.step().unwrap();
        }
        // Rank's Q columns are 4 (1 head of 4), then one K and one V head: columns 4..12.
        let kv = |r: usize| {
            tr.ranks[r].layers[0]
                .qkv_w
                .slice(ndarray::s![.., 4..])
                .to_owned()
        };
        assert_eq!(kv(0), kv(1));
        assert_eq!(kv(2), kv(3));
        assert_ne!(kv(0), kv(2));
    }

    #[test]
    fn replicated_parameters_stay_identical_across_ranks() {
        let corpus = Corpus::guide();
        let mut tr = Trainer::<f64>::new(&tiny(4, DType::F64), corpus).unwrap();
        for _ in 0..5 {
            tr.step().unwrap();
        }
        for r in 1..4 {
            assert_eq!(tr.ranks[r].pos, tr.ranks[0].pos);
            assert_eq!(tr.ranks[r].lnf_w, tr.ranks[0].lnf_w);
            assert_eq!(tr.ranks[r].layers[1].ln2_w, tr.ranks[0].layers[1].ln2_w);
        }
    }

    #[test]
    fn bad_settings_name_the_fix() {
        let corpus = Corpus::guide();
        let e = Trainer::<f64>::new(
            &TrainConfig {
                tp: 3,
                ..tiny(1, DType::F64)
            },
            corpus.clone(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("valid TP sizes"), "{e}");
        let e = Trainer::<f64>::new(
            &TrainConfig {
                lr: -1.0,
                ..tiny(1, DType::F64)
            },
            corpus,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("learning rate"), "{e}");
    }

    #[test]
    fn divergence_stops_the_run_and_says_where() {
        // The example: --lr 1e300 reported NaN curves that "agree".
        let cfg = TrainConfig {
            lr: 1e300,
            steps: 50,
            optimizer: Optimizer::Sgd,
            ..tiny(1, DType::F64)
        };
        let corpus = Corpus::guide();
        let err = train_curves::<f64>(&cfg, &corpus, &[1, 2], &mut |_, _| true).unwrap_err();
        match &err {
            TrainError::Diverged { step, tp, loss, .. } => {
                assert!(
                    *step >= 1 && *step <= 50 && *tp == 1 && !loss.is_finite(),
                    "{err}"
                );
            }
            other => panic!("expected divergence, got {other}"),
        }
        assert!(err.to_string().contains("learning rate"), "{err}");
        let curves = Curves {
            config: cfg.clone(),
            tps: vec![1, 2],
            losses: vec![vec![1.0, f64::NAN], vec![1.0, f64::NAN]],
        };
        assert!(curves.max_rel_gap()[1].is_nan());
        let steps = TrainConfig {
            steps: usize::MAX,
            ..tiny(1, DType::F64)
        };
        assert!(steps.validate(&corpus).is_err());
    }

    /// Each rule a configuration breaks is its own variant, with the sentence `tplab train`
    /// prints (the numbers it names are the configuration's).
    #[test]
    fn a_bad_configuration_names_its_rule() {
        let corpus = Corpus::guide();
        let base = tiny(1, DType::F64);
        let err = |cfg: TrainConfig, c: &Corpus| cfg.validate(c).unwrap_err();
        let e = err(
            TrainConfig {
                steps: 0,
                ..base.clone()
            },
            &corpus,
        );
        assert_eq!(e, TrainError::NoSteps);
        assert_eq!(e.to_string(), "steps must be at least 1 (got 0)");
        let e = err(
            TrainConfig {
                steps: MAX_STEPS + 1,
                ..base.clone()
            },
            &corpus,
        );
        assert_eq!(
            e.to_string(),
            "steps 1000001 is over the limit of 1000000; use fewer steps"
        );
        let e = err(
            TrainConfig {
                lr: -0.5,
                ..base.clone()
            },
            &corpus,
        );
        assert_eq!(e, TrainError::BadLearningRate { lr: -0.5 });
        assert_eq!(
            e.to_string(),
            "the learning rate must be a positive number (got -0.5); try 3e-3 for Adam, 0.1 for \
             SGD"
        );
        let short = Corpus::new(&"ab".repeat(base.seq / 2));
        let e = err(base.clone(), &short);
        assert_eq!(
            e,
            TrainError::TextTooShort {
                chars: short.ids.len(),
                seq: base.seq
            }
        );
        assert!(e.to_string().contains("reduce seq"), "{e}");
    }
}
