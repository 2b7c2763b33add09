//! Pipeline schedules: the order of forward and backward passes on each of `P` pipeline stages
//! for `M` micro-batches, run on a timeline with unit costs, and the bubble measured from it
//! beside its closed form.
//!
//! Four schedules:
//! - **GPipe** (Huang et al. 2019, "GPipe: Efficient Training of Giant Neural Networks using
//!   Pipeline Parallelism"): every stage runs all `M` forwards, then all `M` backwards.
//! - **1F1B** (PipeDream-Flush; Narayanan et al. 2021, "Memory-Efficient Pipeline-Parallel DNN
//!   Training", and Megatron-LM's non-interleaved schedule): stage `s` runs `P − s − 1` warm-up
//!   forwards, then alternates one forward and one backward, then drains the backwards. Same
//!   bubble as GPipe, but at most `P − s` micro-batches' activations held instead of `M`.
//! - **Interleaved 1F1B** (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training
//!   on GPU Clusters Using Megatron-LM", §2.2.2): the layers are cut into `P·V` chunks and stage
//!   `s` holds chunks `s, s + P, …, s + (V−1)·P` (`V` virtual stages); the order is Megatron's
//!   `forward_backward_pipelining_with_interleaving` (warm-up `2·(P − s − 1) + (V − 1)·P`
//!   chunk-forwards, all of them when `M = P`), which needs `M` to be a multiple of `P`.
//! - **ZB-H1** (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", §3.1 and Table 2): the
//!   backward split into `B` (the input gradient, which the previous stage waits for) and `W`
//!   (the weight gradient, which nobody waits for). Stage `s` runs 1F1B's `P − s − 1` warm-up
//!   forwards, and at each later step the forward of micro-batch `x`, the `B` of
//!   `x − (P − 1 − s)` and the `W` of `x − (P − 1)`: the `W`s trail by `P − 1` micro-batches and
//!   fill the drain where 1F1B idles, with the same peak of `P` in-flight micro-batches as
//!   1F1B's first stage.
//!
//! # Costs and the timeline
//! Each op costs a whole number of ticks ([`Costs`]): `F` = `forward`, `B` = `backward_input`,
//! `W` = `backward_weight`; where the backward is not split (GPipe, 1F1B, interleaved) a `B` is
//! the whole backward and costs `backward_input + backward_weight`. The default 1, 1, 1 is the
//! usual "backward = 2 × forward" (Narayanan 2021 §3.3; Qi 2023 §2 takes `T_F ≈ T_B ≈ T_W`).
//! For the interleaved schedule the costs are per chunk (a chunk is `1/V` of a stage's layers).
//! [`simulate`] runs each stage's ops in order, each as soon as the stage is free and its inputs
//! exist (sends take no time):
//! - `F` of micro-batch `m` on chunk `c` after `F` of `m` on chunk `c − 1`;
//! - `B` of `m` on `c` after `F` of `m` on `c` and `B` of `m` on `c + 1`;
//! - `W` of `m` on `c` after `B` of `m` on `c`.
//!
//! # The bubble
//! Measured: `1 − busy / (P · makespan)`, summed over stages. The closed forms, with `t_F`, `t_B`
//! (input gradient), `t_W` (weight gradient) the costs and `t_B + t_W` the whole backward:
//! - GPipe and 1F1B: `(P − 1) / (M + P − 1)` for any costs (each stage idles `(P − 1)·(t_F +
//!   t_B + t_W)`, the fill and the drain, beside `M·(t_F + t_B + t_W)` of work).
//! - Interleaved: `(P − 1) / (V·M + P − 1)`: Narayanan 2021's bubble `(P − 1)·(t_f + t_b)/V`
//!   in whole-stage costs, beside `M·(t_f + t_b)`.
//! - ZB-H1: idle per stage `(P − 1)·(t_F + t_B) − (min(M, P) − 1)·t_W` beside
//!   `M·(t_F + t_B + t_W)` of work. For `M ≥ P` that is Qi et al.'s Table 2,
//!   `(P − 1)·(t_F + t_B − t_W)`, a third of 1F1B's `(P − 1)·(t_F + t_B + t_W)` at equal costs;
//!   with fewer micro-batches than stages only `M − 1` deferred `W`s exist to fill the drain
//!   (derived here, checked by the tests). It holds when `t_W ≤ min(t_F, t_B)` (a `W` fits the
//!   gap it fills); for other costs the bubble is measured only.
//!
//! The tests check every schedule for `P ≤ 8`, `M ≤ 32` (`V` 2 and 3 where valid): each op once,
//! no input used before it exists, and the measured bubble equal to the closed form exactly (as
//! fractions of whole ticks).

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The most ops one schedule may hold (`P · M · V · passes`): enough for any schedule a learner
/// reads, small enough that simulating it takes milliseconds.
pub const MAX_OPS: usize = 200_000;

/// The most pipeline stages.
pub const MAX_STAGES: usize = 256;

/// The largest cost of one op, in ticks (keeps every product of costs and counts in `u64`).
pub const MAX_COST: u64 = 1_000;

/// A pipeline schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Schedule {
    #[serde(rename = "gpipe")]
    GPipe,
    #[serde(rename = "1f1b")]
    OneFOneB,
    #[serde(rename = "interleaved")]
    Interleaved,
    #[serde(rename = "zb-h1")]
    ZbH1,
}

impl Schedule {
    pub const ALL: [Schedule; 4] = [
        Schedule::GPipe,
        Schedule::OneFOneB,
        Schedule::Interleaved,
        Schedule::ZbH1,
    ];

    /// The command-line name (`gpipe`, `1f1b`, `interleaved`, `zb-h1`).
    pub fn name(self) -> &'static str {
        match self {
            Schedule::GPipe => "gpipe",
            Schedule::OneFOneB => "1f1b",
            Schedule::Interleaved => "interleaved",
            Schedule::ZbH1 => "zb-h1",
        }
    }

    /// The name a reader knows it by.
    pub fn title(self) -> &'static str {
        match self {
            Schedule::GPipe => "GPipe",
            Schedule::OneFOneB => "1F1B (PipeDream-Flush)",
            Schedule::Interleaved => "interleaved 1F1B",
            Schedule::ZbH1 => "ZB-H1 (zero bubble, handcrafted)",
        }
    }

    /// Whether the backward is split into `B` (input gradient) and `W` (weight gradient).
    pub fn splits_backward(self) -> bool {
        self == Schedule::ZbH1
    }
}

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Schedule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "gpipe" => Ok(Schedule::GPipe),
            "1f1b" | "pipedream-flush" => Ok(Schedule::OneFOneB),
            "interleaved" | "interleaved-1f1b" => Ok(Schedule::Interleaved),
            "zb-h1" | "zbh1" | "zb1p" => Ok(Schedule::ZbH1),
            _ => Err(format!(
                "unknown schedule {s:?}; use gpipe, 1f1b, interleaved or zb-h1"
            )),
        }
    }
}

/// A pass of one micro-batch through one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Pass {
    /// Forward.
    F,
    /// Backward; where the backward is split, only the input gradient.
    B,
    /// The weight gradient (split backward only).
    W,
}

/// One op of a stage's order: a pass of `microbatch` through the stage's local chunk `chunk`
/// (`0..V`; the model chunk is `chunk · P + stage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Op {
    pub op: Pass,
    pub microbatch: usize,
    pub chunk: usize,
}

/// The cost of each pass in ticks (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Costs {
    pub forward: u64,
    /// The input gradient `B` (the whole backward costs `backward_input + backward_weight`).
    pub backward_input: u64,
    /// The weight gradient `W`.
    pub backward_weight: u64,
}

impl Default for Costs {
    fn default() -> Self {
        Self {
            forward: 1,
            backward_input: 1,
            backward_weight: 1,
        }
    }
}

impl Costs {
    /// The cost of `pass` under `schedule` (an unsplit `B` is the whole backward).
    pub fn of(&self, schedule: Schedule, pass: Pass) -> u64 {
        match pass {
            Pass::F => self.forward,
            Pass::B if schedule.splits_backward() => self.backward_input,
            Pass::B => self.backward_input + self.backward_weight,
            Pass::W => self.backward_weight,
        }
    }
}

/// One schedule to build: `stages` (P), `microbatches` (M), `virtual_stages` (V, interleaved
/// only; 1 otherwise) and the costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PipelineConfig {
    pub schedule: Schedule,
    pub stages: usize,
    pub microbatches: usize,
    pub virtual_stages: usize,
    pub costs: Costs,
}

impl PipelineConfig {
    pub fn new(schedule: Schedule, stages: usize, microbatches: usize) -> Self {
        Self {
            schedule,
            stages,
            microbatches,
            virtual_stages: 1,
            costs: Costs::default(),
        }
    }

    /// Model chunks: `P · V`.
    pub fn chunks(&self) -> usize {
        self.stages * self.virtual_stages
    }

    /// Passes per micro-batch and chunk: 3 where the backward is split, else 2.
    pub fn passes(&self) -> usize {
        if self.schedule.splits_backward() {
            3
        } else {
            2
        }
    }

    /// **Errors** on a configuration no schedule can be built for, naming the rule and the fix.
    pub fn validate(&self) -> Result<(), PipelineError> {
        let (p, m, v) = (self.stages, self.microbatches, self.virtual_stages);
        if p == 0 {
            return Err(PipelineError::NoStages);
        }
        if p > MAX_STAGES {
            return Err(PipelineError::TooManyStages {
                stages: p,
                max: MAX_STAGES,
            });
        }
        if m == 0 {
            return Err(PipelineError::NoMicrobatches);
        }
        if v == 0 {
            return Err(PipelineError::NoVirtualStages);
        }
        match self.schedule {
            Schedule::Interleaved => {
                if v < 2 {
                    return Err(PipelineError::InterleavedNeedsChunks { virtual_stages: v });
                }
                if !m.is_multiple_of(p) {
                    // The nearest multiples; 0 micro-batches is no batch, so the lower is at
                    // least one round.
                    let lower = (m / p * p).max(p);
                    let upper = lower + p;
                    return Err(PipelineError::MicrobatchesNotMultiple {
                        microbatches: m,
                        stages: p,
                        lower,
                        upper,
                    });
                }
            }
            s if v != 1 => {
                return Err(PipelineError::VirtualNeedsInterleaved {
                    schedule: s,
                    virtual_stages: v,
                })
            }
            _ => {}
        }
        let ops = p
            .checked_mul(m)
            .and_then(|x| x.checked_mul(v))
            .and_then(|x| x.checked_mul(self.passes()));
        match ops {
            Some(ops) if ops <= MAX_OPS => {}
            _ => {
                return Err(PipelineError::TooLarge {
                    stages: p,
                    microbatches: m,
                    virtual_stages: v,
                    passes: self.passes(),
                    passes_what: if self.passes() == 3 {
                        "a forward, a backward for the input and one for the weights each"
                    } else {
                        "a forward and a backward each"
                    },
                    max: MAX_OPS,
                })
            }
        }
        let c = self.costs;
        for (name, cost) in [
            ("forward", c.forward),
            ("backward-input", c.backward_input),
            ("backward-weight", c.backward_weight),
        ] {
            if cost == 0 || cost > MAX_COST {
                return Err(PipelineError::BadCost {
                    name,
                    cost,
                    max: MAX_COST,
                });
            }
        }
        Ok(())
    }
}

/// Why a schedule cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PipelineError {
    #[error("a pipeline needs at least 1 stage (got 0); pass --stages 1 or more")]
    NoStages,
    #[error("{stages} stages is over the limit of {max}; use fewer stages")]
    TooManyStages { stages: usize, max: usize },
    #[error("a pipeline needs at least 1 micro-batch (got 0); pass --microbatches 1 or more")]
    NoMicrobatches,
    #[error(
        "virtual stages must be at least 1 (got 0); pass --virtual 2 or more with interleaved"
    )]
    NoVirtualStages,
    #[error(
        "virtual stages (--virtual {virtual_stages}) belong to the interleaved schedule, not \
         {schedule}; use --schedule interleaved, or drop --virtual"
    )]
    VirtualNeedsInterleaved {
        schedule: Schedule,
        virtual_stages: usize,
    },
    #[error(
        "the interleaved schedule needs at least 2 virtual stages per stage (got \
         {virtual_stages}); pass --virtual 2 or more, or use --schedule 1f1b"
    )]
    InterleavedNeedsChunks { virtual_stages: usize },
    #[error(
        "the interleaved schedule needs the micro-batches to be a multiple of the stages \
         (Megatron-LM's rule): {microbatches} micro-batches over {stages} stages; use {lower} or \
         {upper} micro-batches"
    )]
    MicrobatchesNotMultiple {
        microbatches: usize,
        stages: usize,
        lower: usize,
        upper: usize,
    },
    #[error(
        "{stages} stages × {microbatches} micro-batches × {virtual_stages} virtual stages × \
         {passes} ({passes_what}) is over the limit of {max} ops; use fewer stages or \
         micro-batches"
    )]
    TooLarge {
        stages: usize,
        microbatches: usize,
        virtual_stages: usize,
        passes: usize,
        passes_what: &'static str,
        max: usize,
    },
    #[error("the {name} cost must be a whole number of ticks from 1 to {max} (got {cost})")]
    BadCost {
        name: &'static str,
        cost: u64,
        max: u64,
    },
    #[error("an order needs one list of ops per stage: {stages} stages, {lists} lists")]
    WrongStageCount { stages: usize, lists: usize },
    #[error(
        "stage {stage} runs {pass:?} of micro-batch {microbatch} on chunk {chunk} twice, or one \
         that does not exist; each op must appear exactly once"
    )]
    Repeated {
        stage: usize,
        pass: Pass,
        microbatch: usize,
        chunk: usize,
    },
    #[error(
        "the order cannot run: stage {stage} waits for {pass:?} of micro-batch {microbatch} on \
         chunk {chunk}, which never comes"
    )]
    Deadlock {
        stage: usize,
        pass: Pass,
        microbatch: usize,
        chunk: usize,
    },
}

/// The order of ops on each stage (`orders[stage]`). **Errors** as [`PipelineConfig::validate`].
pub fn orders(cfg: &PipelineConfig) -> Result<Vec<Vec<Op>>, PipelineError> {
    cfg.validate()?;
    let (p, m, v) = (cfg.stages, cfg.microbatches, cfg.virtual_stages);
    let op = |pass, microbatch, chunk| Op {
        op: pass,
        microbatch,
        chunk,
    };
    let stages = (0..p)
        .map(|s| match cfg.schedule {
            Schedule::GPipe => (0..m)
                .map(|i| op(Pass::F, i, 0))
                .chain((0..m).map(|i| op(Pass::B, i, 0)))
                .collect(),
            Schedule::OneFOneB => {
                let warmup = (p - s - 1).min(m);
                let mut ops: Vec<Op> = (0..warmup).map(|i| op(Pass::F, i, 0)).collect();
                for i in 0..m - warmup {
                    ops.push(op(Pass::F, warmup + i, 0));
                    ops.push(op(Pass::B, i, 0));
                }
                ops.extend((m - warmup..m).map(|i| op(Pass::B, i, 0)));
                ops
            }
            Schedule::Interleaved => {
                // Megatron-LM's numbering: the k-th chunk-forward of a stage is micro-batch
                // (k / (P·V))·P + k % P on chunk (k % (P·V)) / P; backwards walk the chunks in
                // reverse.
                let total = m * v;
                let warmup = if m == p {
                    total
                } else {
                    (2 * (p - s - 1) + (v - 1) * p).min(total)
                };
                let mb = |k: usize| k / (p * v) * p + k % p;
                let fwd = |k: usize| op(Pass::F, mb(k), k % (p * v) / p);
                let bwd = |k: usize| op(Pass::B, mb(k), v - 1 - k % (p * v) / p);
                let mut ops: Vec<Op> = (0..warmup).map(fwd).collect();
                for k in 0..total - warmup {
                    ops.push(fwd(warmup + k));
                    ops.push(bwd(k));
                }
                ops.extend((total - warmup..total).map(bwd));
                ops
            }
            Schedule::ZbH1 => {
                let mut ops = Vec::with_capacity(3 * m);
                for x in 0..m + p - 1 {
                    if x < m {
                        ops.push(op(Pass::F, x, 0));
                    }
                    if let Some(b) = x.checked_sub(p - 1 - s).filter(|&b| b < m) {
                        ops.push(op(Pass::B, b, 0));
                    }
                    if let Some(w) = x.checked_sub(p - 1).filter(|&w| w < m) {
                        ops.push(op(Pass::W, w, 0));
                    }
                }
                ops
            }
        })
        .collect();
    Ok(stages)
}

/// An op placed on the timeline: `[start, end)` in ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timed {
    pub op: Pass,
    pub microbatch: usize,
    pub chunk: usize,
    pub start: u64,
    pub end: u64,
}

/// What crosses between stages: an activation forward (after an `F`) or a gradient backward
/// (after a `B`), at tick `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Send {
    pub kind: SendKind,
    pub from_stage: usize,
    pub to_stage: usize,
    pub microbatch: usize,
    /// The model chunk that produced it (`0..P·V`).
    pub from_chunk: usize,
    pub at: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SendKind {
    Activation,
    Gradient,
}

/// A fraction `num / den` in lowest terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ratio {
    pub num: u64,
    pub den: u64,
}

impl Ratio {
    pub fn new(num: u64, den: u64) -> Self {
        let g = gcd(num, den).max(1);
        Self {
            num: num / g,
            den: den / g,
        }
    }

    pub fn value(self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

impl std::fmt::Display for Ratio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.num, self.den)
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The closed form of a schedule's bubble.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Formula {
    /// The expression, e.g. `(P−1)/(M+P−1)`.
    pub expression: String,
    /// Idle ticks per stage it predicts.
    pub idle_per_stage: u64,
    pub fraction: Ratio,
    /// Where it comes from.
    pub source: &'static str,
}

/// A schedule built and run: each stage's order and timeline, the sends, the bubble measured
/// and predicted, the peak activations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineRun {
    pub schedule: Schedule,
    pub stage_count: usize,
    pub microbatches: usize,
    pub virtual_stages: usize,
    pub costs: Costs,
    /// `stages[s]`: stage `s`'s ops in order.
    pub stages: Vec<Vec<Op>>,
    /// `timeline[s]`: the same ops with their ticks.
    pub timeline: Vec<Vec<Timed>>,
    /// The tick the last op ends.
    pub makespan: u64,
    /// Busy ticks per stage.
    pub busy_per_stage: Vec<u64>,
    /// Measured: idle ticks over `P · makespan`.
    pub bubble: Ratio,
    pub bubble_fraction: f64,
    /// The closed form (`None` for ZB-H1 when `t_W > min(t_F, t_B)`: measured only).
    pub formula: Option<Formula>,
    pub bubble_formula: Option<f64>,
    /// Per stage, the most (micro-batch, chunk) activations held at once: counted from the
    /// start of an `F` to the end of its `B` (of its `W` where the backward is split).
    pub peak_activations: Vec<usize>,
    /// Every send between stages, in time order.
    pub sends: Vec<Send>,
}

/// The closed form of `cfg`'s bubble (see the module docs), or `None` outside its domain.
pub fn formula(cfg: &PipelineConfig) -> Option<Formula> {
    let (p, m, v) = (
        cfg.stages as u64,
        cfg.microbatches as u64,
        cfg.virtual_stages as u64,
    );
    let c = cfg.costs;
    let (tf, tb, tw) = (c.forward, c.backward_input, c.backward_weight);
    let per_mb = tf + tb + tw;
    let (expression, idle, work, source) = match cfg.schedule {
        Schedule::GPipe => (
            "(P−1)/(M+P−1)".to_string(),
            (p - 1) * per_mb,
            m * per_mb,
            "Huang et al. 2019 (GPipe), §2.3",
        ),
        Schedule::OneFOneB => (
            "(P−1)/(M+P−1)".to_string(),
            (p - 1) * per_mb,
            m * per_mb,
            "Narayanan et al. 2021 (Megatron-LM), §2.2.1",
        ),
        Schedule::Interleaved => (
            "(P−1)/(V·M+P−1)".to_string(),
            (p - 1) * per_mb,
            v * m * per_mb,
            "Narayanan et al. 2021 (Megatron-LM), §2.2.2: bubble (P−1)·(t_f+t_b)/V",
        ),
        Schedule::ZbH1 => {
            if tw > tf.min(tb) {
                return None;
            }
            let fill = (m.min(p) - 1) * tw;
            (
                if m >= p {
                    "(P−1)(t_F+t_B−t_W) / (M(t_F+t_B+t_W) + (P−1)(t_F+t_B−t_W))".to_string()
                } else {
                    "((P−1)(t_F+t_B)−(M−1)t_W) / (M(t_F+t_B+t_W) + (P−1)(t_F+t_B)−(M−1)t_W)"
                        .to_string()
                },
                (p - 1) * (tf + tb) - fill,
                m * per_mb,
                "Qi et al. 2023 (Zero Bubble Pipeline Parallelism), Table 2, for M ≥ P",
            )
        }
    };
    let fraction = Ratio::new(idle, idle + work);
    Some(Formula {
        expression,
        idle_per_stage: idle,
        fraction,
        source,
    })
}

/// The model chunk of a stage's local chunk.
fn model_chunk(cfg: &PipelineConfig, stage: usize, chunk: usize) -> usize {
    chunk * cfg.stages + stage
}

/// Runs each stage's order on the timeline (see the module docs). **Errors** on an invalid
/// config, or an order that cannot run (an op waits for one that never comes).
pub fn simulate(cfg: &PipelineConfig, stages: &[Vec<Op>]) -> Result<PipelineRun, PipelineError> {
    cfg.validate()?;
    let p = cfg.stages;
    if stages.len() != p {
        return Err(PipelineError::WrongStageCount {
            stages: p,
            lists: stages.len(),
        });
    }
    let chunks = cfg.chunks();
    let m = cfg.microbatches;
    // End tick of each pass: [pass][model chunk * M + micro-batch].
    let mut ends: [Vec<Option<u64>>; 3] = std::array::from_fn(|_| vec![None; chunks * m]);
    let slot = |c: usize, mb: usize| c * m + mb;
    let pass_index = |pass: Pass| match pass {
        Pass::F => 0,
        Pass::B => 1,
        Pass::W => 2,
    };
    let mut next = vec![0usize; p];
    let mut free = vec![0u64; p];
    let mut timeline: Vec<Vec<Timed>> =
        stages.iter().map(|s| Vec::with_capacity(s.len())).collect();
    let mut remaining: usize = stages.iter().map(Vec::len).sum();
    while remaining > 0 {
        let mut progressed = false;
        for s in 0..p {
            while let Some(&o) = stages[s].get(next[s]) {
                let c = model_chunk(cfg, s, o.chunk);
                if o.chunk >= cfg.virtual_stages || o.microbatch >= m {
                    return Err(PipelineError::Repeated {
                        stage: s,
                        pass: o.op,
                        microbatch: o.microbatch,
                        chunk: o.chunk,
                    });
                }
                let mut deps: Vec<(Pass, usize)> = Vec::with_capacity(2);
                match o.op {
                    Pass::F if c > 0 => deps.push((Pass::F, c - 1)),
                    Pass::F => {}
                    Pass::B => {
                        deps.push((Pass::F, c));
                        if c + 1 < chunks {
                            deps.push((Pass::B, c + 1));
                        }
                    }
                    Pass::W => deps.push((Pass::B, c)),
                }
                let mut ready = free[s];
                let mut waiting = false;
                for (dp, dc) in deps {
                    match ends[pass_index(dp)][slot(dc, o.microbatch)] {
                        Some(t) => ready = ready.max(t),
                        None => waiting = true,
                    }
                }
                if waiting {
                    break;
                }
                let end = ready + cfg.costs.of(cfg.schedule, o.op);
                let e = &mut ends[pass_index(o.op)][slot(c, o.microbatch)];
                if e.is_some() {
                    return Err(PipelineError::Repeated {
                        stage: s,
                        pass: o.op,
                        microbatch: o.microbatch,
                        chunk: o.chunk,
                    });
                }
                *e = Some(end);
                timeline[s].push(Timed {
                    op: o.op,
                    microbatch: o.microbatch,
                    chunk: o.chunk,
                    start: ready,
                    end,
                });
                free[s] = end;
                next[s] += 1;
                remaining -= 1;
                progressed = true;
            }
        }
        if !progressed {
            let s = (0..p).find(|&s| next[s] < stages[s].len()).unwrap_or(0);
            let o = stages[s][next[s]];
            return Err(PipelineError::Deadlock {
                stage: s,
                pass: o.op,
                microbatch: o.microbatch,
                chunk: o.chunk,
            });
        }
    }
    let makespan = free.iter().copied().max().unwrap_or(0);
    let busy_per_stage: Vec<u64> = timeline
        .iter()
        .map(|t| t.iter().map(|o| o.end - o.start).sum())
        .collect();
    let busy: u64 = busy_per_stage.iter().sum();
    let total = p as u64 * makespan;
    let bubble = Ratio::new(total - busy, total.max(1));
    let release = if cfg.schedule.splits_backward() {
        Pass::W
    } else {
        Pass::B
    };
    let peak_activations = timeline
        .iter()
        .map(|t| {
            // Events: +1 at an F's start, −1 at its release's end; at equal ticks the release
            // first (the memory is free before the next forward allocates).
            let mut events: Vec<(u64, i64)> = t
                .iter()
                .filter_map(|o| match o.op {
                    Pass::F => Some((o.start, 1)),
                    x if x == release => Some((o.end, -1)),
                    _ => None,
                })
                .collect();
            events.sort_unstable();
            let (mut live, mut peak) = (0i64, 0i64);
            for (_, d) in events {
                live += d;
                peak = peak.max(live);
            }
            peak as usize
        })
        .collect();
    let mut sends = Vec::new();
    for (s, t) in timeline.iter().enumerate() {
        for o in t {
            let c = model_chunk(cfg, s, o.chunk);
            let (kind, to) = match o.op {
                Pass::F if c + 1 < chunks => (SendKind::Activation, (c + 1) % p),
                Pass::B if c > 0 => (SendKind::Gradient, (c - 1) % p),
                _ => continue,
            };
            if to != s {
                sends.push(Send {
                    kind,
                    from_stage: s,
                    to_stage: to,
                    microbatch: o.microbatch,
                    from_chunk: c,
                    at: o.end,
                });
            }
        }
    }
    sends.sort_by_key(|x| (x.at, x.from_stage, x.kind == SendKind::Gradient));
    let formula = formula(cfg);
    Ok(PipelineRun {
        schedule: cfg.schedule,
        stage_count: p,
        microbatches: m,
        virtual_stages: cfg.virtual_stages,
        costs: cfg.costs,
        stages: stages.to_vec(),
        timeline,
        makespan,
        busy_per_stage,
        bubble,
        bubble_fraction: bubble.value(),
        bubble_formula: formula.as_ref().map(|f| f.fraction.value()),
        formula,
        peak_activations,
        sends,
    })
}

/// Builds `cfg`'s schedule and runs it. **Errors** as [`PipelineConfig::validate`].
pub fn run(cfg: &PipelineConfig) -> Result<PipelineRun, PipelineError> {
    let stages = orders(cfg)?;
    simulate(cfg, &stages)
}

impl PipelineRun {
    /// Every op of every stage, in the order the timeline runs them (by start tick, then
    /// stage): an order in which each op's inputs already exist, for an executor that runs the
    /// stages one after another.
    pub fn execution_order(&self) -> Vec<(usize, Timed)> {
        let mut all: Vec<(usize, Timed)> = self
            .timeline
            .iter()
            .enumerate()
            .flat_map(|(s, t)| t.iter().map(move |o| (s, *o)))
            .collect();
        all.sort_by_key(|(s, o)| (o.start, *s));
        all
    }

    /// An ASCII timeline, one row per stage and one cell per tick (`F3` = forward of
    /// micro-batch 3; with virtual stages `F3:1` = on the stage's chunk 1; `.` = idle); `None`
    /// when it would be wider than `max_columns`.
    pub fn ascii(&self, max_columns: usize) -> Option<String> {
        let label = |o: &Timed| {
            let pass = match o.op {
                Pass::F => 'F',
                Pass::B => 'B',
                Pass::W => 'W',
            };
            if self.virtual_stages > 1 {
                format!("{pass}{}:{}", o.microbatch, o.chunk)
            } else {
                format!("{pass}{}", o.microbatch)
            }
        };
        let width = self
            .timeline
            .iter()
            .flatten()
            .map(|o| label(o).chars().count())
            .max()
            .unwrap_or(1);
        let prefix = format!("stage {}", self.stage_count.saturating_sub(1)).len() + 2;
        let ticks = usize::try_from(self.makespan).ok()?;
        if prefix + ticks.checked_mul(width + 1)? > max_columns {
            return None;
        }
        let mut out = String::new();
        for (s, t) in self.timeline.iter().enumerate() {
            let mut cells = vec![".".to_string(); ticks];
            for o in t {
                for (i, cell) in cells
                    .iter_mut()
                    .enumerate()
                    .take(o.end as usize)
                    .skip(o.start as usize)
                {
                    *cell = if i == o.start as usize {
                        label(o)
                    } else {
                        "-".repeat(label(o).chars().count())
                    };
                }
            }
            out.push_str(&format!("{:<prefix$}", format!("stage {s}")));
            let row: Vec<String> = cells.iter().map(|c| format!("{c:<width$}")).collect();
            out.push_str(row.join(" ").trim_end());
            out.push('\n');
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests;
