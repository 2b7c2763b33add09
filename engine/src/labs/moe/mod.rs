//! Mixture-of-Experts: an MoE MLP layer with expert parallelism (EP) and expert-tensor
//! parallelism (ETP) on virtual GPUs, checked against an unsharded f64 reference.
//!
//! # The layer
//! `T` tokens `X [T, h]`, `E` experts, top-`k` routing:
//! - **Router**: `logits = X · W_r` (`W_r [h, E]`, no bias, as in Switch Transformer and
//!   Mixtral), `p = softmax(logits)` per token.
//! - **Top-k**: each token picks the `k` experts with the largest logits (softmax keeps the
//!   order); **ties go to the lower expert index** (a stable sort on `(−logit, expert)`), so the
//!   choice is deterministic.
//! - **Gates** ([`Gate`]): `Renormalized` (Mixtral, Jiang et al. 2024: the softmax over the
//!   top-k logits, `g_j = p_j / Σ_{i∈top-k} p_i`, the default; with `k = 1` every gate is 1 and
//!   the router gets no gradient from the output) or `Softmax` (Switch Transformer, Fedus et al.
//!   2021; GShard, Lepikhin et al. 2020: the full softmax probability `g_j = p_j`).
//! - **Experts**: each a GeLU MLP like the block's, `E_j(x) = GeLU(x·W1_j + b1_j)·W2_j + b2_j`
//!   (`W1 [h, F]`, `W2 [F, h]`, GeLU's tanh approximation).
//! - **Combine**: `y_t = Σ_{j ∈ top-k(t), kept} g_{t,j} · E_j(x_t)`. The layer is the MLP alone:
//!   the residual add around it (`x + MoE(x)`) is what carries a dropped token on.
//! - **Capacity** (Switch Transformer's capacity factor `C`): each expert takes at most
//!   `ceil(C·k·T/E)` token assignments (at most `T`); the assignments are taken in **token order**
//!   (token 0's first, then second choice, then token 1's, …) and an assignment past a full
//!   expert is **dropped**: its term is left out of `y_t` (its gate still normalises the others).
//!   No `C` means no capacity limit. tplab counts the capacity over the whole batch so that the
//!   answer does not depend on EP; GShard and Megatron-Core count it per group of local tokens
//!   (each rank's), which drops differently when the ranks' tokens route unevenly.
//!
//! # Expert parallelism and expert-tensor parallelism (Megatron-Core's MoE layout)
//! `EP · ETP` virtual GPUs; GPU `e·ETP + t` is EP rank `e`, ETP rank `t`.
//!
//! ```text
//!              EP rank 0                 EP rank 1           (E = 4, EP = 2, ETP = 2)
//!          GPU 0      GPU 1          GPU 2      GPU 3
//! tokens   X[0:T/2]   X[0:T/2]       X[T/2:T]   X[T/2:T]    (a data shard per EP rank)
//! experts  0,1        0,1            2,3        2,3
//! fc1      W1[:, :F/2] W1[:, F/2:]   W1[:, :F/2] W1[:, F/2:] (columns, per ETP rank)
//! fc2      W2[:F/2, :] W2[F/2:, :]   W2[:F/2, :] W2[F/2:, :] (rows)
//! ```
//!
//! Forward: each GPU routes its tokens (the router is replicated); an **all-gather of the
//! per-expert counts** over the EP group tells every rank how many earlier tokens took each
//! expert (so it knows which of its assignments the capacity drops, and how many rows it will
//! receive); the **dispatch all-to-all** (over the EP group of the same ETP rank) sends each kept
//! assignment's token row to its expert's rank, sorted by expert then token; each GPU runs its
//! experts' fc1 columns, GeLU and fc2 rows, giving a partial sum that an **all-reduce over the
//! ETP group** completes (Megatron's `g`; fc2's bias is added once after it); the **combine
//! all-to-all** brings each output row back to its token's rank, which sums them weighted by
//! the gates.
//!
//! Backward, the conjugates: the output gradient times the gate goes to the experts by the
//! combine's conjugate (an all-to-all along the dispatch's routes); the ETP all-reduce's
//! conjugate is the identity and fc1's input gradient, a partial sum over the ETP group, is
//! all-reduced (Megatron's `f` backward); the dispatch's conjugate (an all-to-all along the
//! combine's routes) brings the input gradients home; the router's weight gradient, a sum over
//! every token, is all-reduced over the EP group (each EP rank holds a data shard).
//!
//! Sources: GShard (Lepikhin et al. 2020, arXiv:2006.16668: top-2 gating, expert capacity,
//! all-to-all dispatch and combine); Switch Transformer (Fedus et al. 2021, arXiv:2101.03961:
//! the capacity factor `C`, capacity `= C·tokens/experts` per choice, dropped tokens passed on by
//! the residual); Mixtral of Experts (Jiang et al. 2024, arXiv:2401.04088: 8 experts, top-2,
//! softmax over the top-2 logits); Megatron-Core's MoE documentation
//! (`megatron/core/transformer/moe/README.md`: `--expert-model-parallel-size`,
//! `--expert-tensor-parallel-size`, experts split column/row-parallel like the dense MLP).

pub mod reference;
pub mod sharded;

use crate::collectives::{Algorithm, CollectiveError};
use ndarray::Array2;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::Serialize;
use thiserror::Error;

/// Largest expert count the CPU lab runs (Mixtral 8, DeepSeek-V3 256 routed experts).
pub const MAX_EXPERTS: usize = 256;
/// Largest `k` (top-k).
pub const MAX_TOP_K: usize = 8;
/// Largest EP and ETP degrees.
pub const MAX_EP: usize = 64;
pub const MAX_ETP: usize = 8;
/// Largest tokens, hidden and FFN sizes the CPU lab takes.
pub const MAX_TOKENS: usize = 8192;
pub const MAX_HIDDEN: usize = 4096;
pub const MAX_FFN: usize = 16384;
/// Largest capacity factor (beyond `E/k` nothing is ever dropped; 1000 is far past any use).
pub const MAX_CAPACITY_FACTOR: f64 = 1000.0;
/// Largest number of f64 elements the expert weights (`E·2·h·F`) or the expert activations
/// (`T·k·F`) may hold: 16 Mi elements, 128 MiB each, so a run stays a CPU demo.
pub const MAX_ELEMENTS: usize = 16 << 20;

/// How the gate weights come from the router's softmax.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Gate {
    /// `g_j = p_j / Σ_{i∈top-k} p_i` (Mixtral: softmax over the top-k logits).
    #[default]
    Renormalized,
    /// `g_j = p_j` (Switch Transformer, GShard).
    Softmax,
}

impl Gate {
    pub fn name(self) -> &'static str {
        match self {
            Gate::Renormalized => "renormalized",
            Gate::Softmax => "softmax",
        }
    }
}

impl std::str::FromStr for Gate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "renormalized" | "renormalised" | "mixtral" => Ok(Gate::Renormalized),
            "softmax" | "switch" => Ok(Gate::Softmax),
            _ => Err(format!(
                "unknown gate {s:?}: use `renormalized` (Mixtral) or `softmax` (Switch)"
            )),
        }
    }
}

/// One MoE scenario.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MoeConfig {
    /// Tokens `T` (batch × sequence).
    pub tokens: usize,
    pub hidden: usize,
    /// Each expert's MLP width `F`.
    pub ffn: usize,
    pub experts: usize,
    pub top_k: usize,
    /// Expert-parallel degree: experts split over `ep` ranks, tokens over the same ranks.
    pub ep: usize,
    /// Expert-tensor-parallel degree: each expert's fc1 split by columns, fc2 by rows.
    pub etp: usize,
    /// `None`: no capacity limit.
    pub capacity_factor: Option<f64>,
    pub gate: Gate,
    pub seed: u64,
    /// The algorithm of the all-reduces (ETP and the router gradient).
    pub algorithm: Algorithm,
}

impl Default for MoeConfig {
    fn default() -> Self {
        Self {
            tokens: 64,
            hidden: 32,
            ffn: 64,
            experts: 8,
            top_k: 2,
            ep: 4,
            etp: 1,
            capacity_factor: None,
            gate: Gate::Renormalized,
            seed: 42,
            algorithm: Algorithm::Ring,
        }
    }
}

/// Why an [`MoeConfig`] cannot run.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum MoeError {
    #[error("{field} must be at least 1 (got 0)")]
    Zero { field: &'static str },
    #[error(
        "{field} {value} is over this CPU lab's limit of {max}; use a {field} of at most {max}"
    )]
    OverLimit {
        field: &'static str,
        value: usize,
        max: usize,
    },
    #[error(
        "top-k {top_k} is more than the {experts} experts: each token picks k different experts, \
         so k ≤ experts; use --top-k {experts} or fewer"
    )]
    TopKOverExperts { top_k: usize, experts: usize },
    #[error(
        "{experts} experts cannot be split over EP {ep}: each EP rank holds the same number of \
         whole experts (experts % ep == 0); valid EP sizes: {valid}"
    )]
    ExpertsNotDivisible {
        experts: usize,
        ep: usize,
        valid: String,
    },
    #[error(
        "FFN {ffn} cannot be split over ETP {etp}: each expert's fc1 columns and fc2 rows are cut \
         into equal slices (ffn % etp == 0); valid ETP sizes: {valid}"
    )]
    FfnNotDivisible {
        ffn: usize,
        etp: usize,
        valid: String,
    },
    #[error(
        "capacity factor {value} must be a number above 0 (1.0: each expert takes its even share \
         k·T/E; 1.25 is Switch Transformer's training value) and at most {max}"
    )]
    BadCapacity { value: f64, max: f64 },
    #[error(
        "the {what} would hold {elements} numbers, over the {limit} this CPU lab allocates; \
         reduce {fix}"
    )]
    TooLarge {
        what: &'static str,
        elements: usize,
        limit: usize,
        fix: &'static str,
    },
    #[error(transparent)]
    Collective(#[from] CollectiveError),
}

fn divisors_up_to(n: usize, max: usize) -> String {
    (1..=max.min(n))
        .filter(|&d| n.is_multiple_of(d))
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl MoeConfig {
    pub fn validate(&self) -> Result<(), MoeError> {
        for (field, v) in [
            ("tokens", self.tokens),
            ("hidden", self.hidden),
            ("ffn", self.ffn),
            ("experts", self.experts),
            ("top-k", self.top_k),
            ("ep", self.ep),
            ("etp", self.etp),
        ] {
            if v == 0 {
                return Err(MoeError::Zero { field });
            }
        }
        for (field, value, max) in [
            ("tokens", self.tokens, MAX_TOKENS),
            ("hidden", self.hidden, MAX_HIDDEN),
            ("ffn", self.ffn, MAX_FFN),
            ("experts", self.experts, MAX_EXPERTS),
            ("top-k", self.top_k, MAX_TOP_K),
            ("ep", self.ep, MAX_EP),
            ("etp", self.etp, MAX_ETP),
        ] {
            if value > max {
                return Err(MoeError::OverLimit { field, value, max });
            }
        }
        if self.top_k > self.experts {
            return Err(MoeError::TopKOverExperts {
                top_k: self.top_k,
                experts: self.experts,
            });
        }
        if !self.experts.is_multiple_of(self.ep) {
            return Err(MoeError::ExpertsNotDivisible {
                experts: self.experts,
                ep: self.ep,
                valid: divisors_up_to(self.experts, MAX_EP),
            });
        }
        if !self.ffn.is_multiple_of(self.etp) {
            return Err(MoeError::FfnNotDivisible {
                ffn: self.ffn,
                etp: self.etp,
                valid: divisors_up_to(self.ffn, MAX_ETP),
            });
        }
        if let Some(c) = self.capacity_factor {
            if !(c.is_finite() && c > 0.0 && c <= MAX_CAPACITY_FACTOR) {
                return Err(MoeError::BadCapacity {
                    value: c,
                    max: MAX_CAPACITY_FACTOR,
                });
            }
        }
        let weights = self
            .experts
            .saturating_mul(2)
            .saturating_mul(self.hidden)
            .saturating_mul(self.ffn);
        if weights > MAX_ELEMENTS {
            return Err(MoeError::TooLarge {
                what: "expert weights (experts × 2 × hidden × ffn)",
                elements: weights,
                limit: MAX_ELEMENTS,
                fix: "experts, hidden or ffn",
            });
        }
        let acts = self
            .tokens
            .saturating_mul(self.top_k)
            .saturating_mul(self.ffn.max(self.hidden));
        if acts > MAX_ELEMENTS {
            return Err(MoeError::TooLarge {
                what: "expert activations (tokens × top-k × ffn)",
                elements: acts,
                limit: MAX_ELEMENTS,
                fix: "tokens, top-k or ffn",
            });
        }
        Ok(())
    }

    /// Token assignments an expert takes at most: `min(ceil(C·k·T/E), T)`, or `T` without a
    /// capacity factor (an expert is picked at most once per token).
    pub fn capacity(&self) -> usize {
        match self.capacity_factor {
            None => self.tokens,
            Some(c) => {
                let cap = (c * (self.top_k * self.tokens) as f64 / self.experts as f64).ceil();
                if cap >= self.tokens as f64 {
                    self.tokens
                } else {
                    cap.max(0.0) as usize
                }
            }
        }
    }

    pub fn gpus(&self) -> usize {
        self.ep * self.etp
    }

    pub fn experts_per_rank(&self) -> usize {
        self.experts / self.ep.max(1)
    }

    /// The experts EP rank `e` holds.
    pub fn rank_experts(&self, e: usize) -> std::ops::Range<usize> {
        let n = self.experts_per_rank();
        e * n..(e + 1) * n
    }

    /// The tokens (rows of `X`) EP rank `e` holds: nearly equal contiguous shards.
    pub fn rank_tokens(&self, e: usize) -> std::ops::Range<usize> {
        crate::collectives::chunk_range(e, self.ep, self.tokens)
    }

    /// The FFN columns (fc1) and rows (fc2) ETP rank `t` holds.
    pub fn etp_slice(&self, t: usize) -> std::ops::Range<usize> {
        let n = self.ffn / self.etp.max(1);
        t * n..(t + 1) * n
    }
}

/// One expert's weights (or their gradients).
#[derive(Debug, Clone, PartialEq)]
pub struct ExpertParams {
    /// `[h, F]`
    pub w1: Array2<f64>,
    /// `[1, F]`
    pub b1: Array2<f64>,
    /// `[F, h]`
    pub w2: Array2<f64>,
    /// `[1, h]`
    pub b2: Array2<f64>,
}

impl ExpertParams {
    pub fn zeros(h: usize, f: usize) -> Self {
        Self {
            w1: Array2::zeros((h, f)),
            b1: Array2::zeros((1, f)),
            w2: Array2::zeros((f, h)),
            b2: Array2::zeros((1, h)),
        }
    }
}

/// The seeded layer: input, router, experts, and the gradient arriving at the output.
#[derive(Debug, Clone, PartialEq)]
pub struct MoeModel {
    /// `[T, h]`
    pub x: Array2<f64>,
    /// `[h, E]`
    pub router: Array2<f64>,
    pub experts: Vec<ExpertParams>,
    /// `dL/dy`, `[T, h]`
    pub grad_output: Array2<f64>,
}

impl MoeModel {
    /// `X` and `dL/dy` standard normal; router N(0, 1/h) so logits are about N(0, 1) and the
    /// tokens spread over the experts; `W1` N(0, 1/h), `W2` N(0, 1/F), biases N(0, 0.1²).
    pub fn random(cfg: &MoeConfig) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let mut normal = |rows: usize, cols: usize, scale: f64| {
            Array2::from_shape_simple_fn((rows, cols), || {
                let z: f64 = StandardNormal.sample(&mut rng);
                scale * z
            })
        };
        let (h, f) = (cfg.hidden, cfg.ffn);
        let x = normal(cfg.tokens, h, 1.0);
        let router = normal(h, cfg.experts, 1.0 / (h as f64).sqrt());
        let experts = (0..cfg.experts)
            .map(|_| ExpertParams {
                w1: normal(h, f, 1.0 / (h as f64).sqrt()),
                b1: normal(1, f, 0.1),
                w2: normal(f, h, 1.0 / (f as f64).sqrt()),
                b2: normal(1, h, 0.1),
            })
            .collect();
        let grad_output = normal(cfg.tokens, h, 1.0);
        Self {
            x,
            router,
            experts,
            grad_output,
        }
    }
}

/// Gradients of the layer: input, router, every expert.
#[derive(Debug, Clone, PartialEq)]
pub struct MoeGrads {
    /// `[T, h]`
    pub input: Array2<f64>,
    /// `[h, E]`
    pub router: Array2<f64>,
    pub experts: Vec<ExpertParams>,
}

/// One dropped token assignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Dropped {
    pub token: usize,
    pub expert: usize,
    /// 0 for the token's first choice, 1 for its second, …
    pub choice: usize,
}

/// Where the tokens went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoutingSummary {
    /// Assignments each expert was picked for, before the capacity.
    pub routed_per_expert: Vec<usize>,
    /// Assignments each expert computed (after the capacity).
    pub tokens_per_expert: Vec<usize>,
    /// Dropped assignments, in token order.
    pub dropped: Vec<Dropped>,
    /// Each token's chosen experts, best first.
    pub chosen: Vec<Vec<usize>>,
}

/// The bytes one collective moved, per GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommRecord {
    /// What it does: `moe.counts`, `moe.dispatch`, `moe.etp`, `moe.combine`,
    /// `moe.combine.bwd`, `moe.etp.bwd`, `moe.dispatch.bwd`, `moe.router.grad`.
    pub name: &'static str,
    /// `forward` or `backward`.
    pub pass: &'static str,
    /// `all-to-all`, `all-reduce` or `all-gather`.
    pub kind: &'static str,
    /// The group it runs in: `EP` (ranks of one ETP index) or `ETP` (ranks of one EP index).
    pub group: &'static str,
    /// Bytes each GPU sent to other GPUs (an all-to-all's rows for the GPU itself are a local
    /// copy and not counted).
    pub bytes_sent_per_gpu: Vec<u64>,
    pub bytes_received_per_gpu: Vec<u64>,
}

impl CommRecord {
    pub fn max_bytes_sent(&self) -> u64 {
        self.bytes_sent_per_gpu.iter().copied().max().unwrap_or(0)
    }
}

/// What a check compares: the layer's output or a gradient.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MoeQuantity {
    Output,
    Gradient,
}

/// One comparison with the reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MoeCheck {
    pub name: String,
    /// What it compares, as a type (the name is for the exports and the CLI).
    #[serde(skip)]
    pub what: MoeQuantity,
    pub gpu: usize,
    pub max_abs_error: f64,
    /// `max_abs_error / max(max|reference|, 1)`.
    pub max_rel_error: f64,
}

/// `max|got − want|` (infinite on a shape mismatch or NaN).
pub(crate) fn max_abs_diff(got: &Array2<f64>, want: &Array2<f64>) -> f64 {
    if got.dim() != want.dim() {
        return f64::INFINITY;
    }
    got.iter()
        .zip(want.iter())
        .map(|(a, b)| {
            let d = (a - b).abs();
            if d.is_nan() {
                f64::INFINITY
            } else {
                d
            }
        })
        .fold(0.0, f64::max)
}

/// The f64 tolerance: the sharded run sums the same terms as the reference in another order
/// (the ETP all-reduce cuts fc2's `F`-long dot products and fc1's input gradient into ETP
/// partial sums, the router's gradient is a sum of EP partial sums, and the two use different
/// matrix-product kernels: `gemm` against ndarray's `dot`), so they differ by rounding only,
/// about `ε·√K` relative with `K ≤ max(F, h, T) ≤ 16384`: at most ~3e-14. `1e-12` is ~40× above
/// that and ~12 orders of magnitude below what a real mistake does (a wrong shard, a token sent
/// to the wrong expert, a missing all-reduce or gate moves the numbers by O(1) relative).
pub const TOLERANCE: f64 = 1e-12;

/// Everything `tplab moe` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MoeReport {
    pub config: MoeConfig,
    /// `ceil(C·k·T/E)` capped at `T`.
    pub capacity: usize,
    pub routing: RoutingSummary,
    /// Every tensor of every GPU against the reference.
    pub checks: Vec<MoeCheck>,
    pub max_rel_error: f64,
    pub tolerance: f64,
    /// Whether the sharded run routed and dropped exactly as the reference.
    pub routing_equal: bool,
    pub comms: Vec<CommRecord>,
}

impl MoeReport {
    pub fn passed(&self) -> bool {
        self.routing_equal && self.max_rel_error <= self.tolerance
    }

    /// The record named `name`, if any.
    pub fn comm(&self, name: &str) -> Option<&CommRecord> {
        self.comms.iter().find(|c| c.name == name)
    }
}

/// Runs the reference and the sharded executor on the seeded model and compares them.
pub fn run(cfg: &MoeConfig) -> Result<MoeReport, MoeError> {
    cfg.validate()?;
    let model = MoeModel::random(cfg);
    run_with(cfg, &model)
}

/// [`run`] on a given model (tests build hand-made ones).
pub fn run_with(cfg: &MoeConfig, model: &MoeModel) -> Result<MoeReport, MoeError> {
    cfg.validate()?;
    let want = reference::run(cfg, model);
    let got = sharded::run(cfg, model)?;
    let checks = sharded::compare(cfg, &got, &want);
    let max_rel_error = checks.iter().map(|c| c.max_rel_error).fold(0.0, f64::max);
    let routing_equal = got.routing == want.routing;
    Ok(MoeReport {
        config: cfg.clone(),
        capacity: cfg.capacity(),
        routing: want.routing,
        checks,
        max_rel_error,
        tolerance: TOLERANCE,
        routing_equal,
        comms: got.comms,
    })
}
