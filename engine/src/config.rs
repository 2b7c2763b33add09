//! Scenario configuration and its validation.
//!
//! A [`Config`] names one transformer stack (hidden size, heads, FFN width, sequence, batch, layers),
//! the precision, the random seed and how it is split: the tensor-parallel size `tp` and the
//! all-reduce [`Algorithm`]. [`Config::validate`] applies Megatron-LM's divisibility rules and a
//! memory guard, and every error names the rule and how to fix it.

use crate::collectives::Algorithm;
use crate::dtype::DType;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The largest tensor-parallel size the engine accepts.
pub const MAX_TP: usize = 64;

/// Default memory guard for executing a scenario on the CPU: 6 GiB of tensors.
pub const DEFAULT_MEMORY_GUARD_BYTES: u64 = 6 << 30;

/// The largest value any size of a [`Config`] may take (hidden, FFN, sequence, batch, layers):
/// 2²⁴. Far above anything the CPU engine can run (the memory guard refuses much less), it
/// keeps every size product of the config inside 64 bits, so no arithmetic can wrap.
pub const MAX_DIM: usize = 1 << 24;

/// The largest value the size products of a [`Config`] may reach (batch·seq²·hidden, the
/// attention's multiply-adds per layer; tokens·FFN; hidden·FFN): 2⁵². Every FLOP, element and
/// byte count of the trace is one of these times a small constant, so none can overflow.
pub const MAX_PRODUCT: u64 = 1 << 52;

/// The largest number of layers a [`Config`] may have: 1024 (the trace and the app's drawings
/// hold every layer; real models have at most a few hundred).
pub const MAX_LAYERS: usize = 1 << 10;

/// The largest number of attention heads (query or KV) a [`Config`] may have: 2¹⁶ (real models
/// have at most a few hundred).
pub const MAX_HEADS: usize = 1 << 16;

/// One scenario: a stack of identical pre-LayerNorm GPT-2 blocks split over `tp` virtual GPUs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Model width `h`.
    pub hidden: usize,
    /// Attention (query) heads `a`; head size is `h / a`.
    pub heads: usize,
    /// Key/value heads for grouped-query attention (`None`: one per query head, plain multi-head
    /// attention). Query head `j` reads KV head `j / (a / kv)`.
    pub kv_heads: Option<usize>,
    /// MLP inner width (4·h in GPT-2).
    pub ffn: usize,
    /// Sequence length `s`.
    pub seq: usize,
    /// Micro-batch size `b`.
    pub batch: usize,
    /// Number of transformer blocks.
    pub layers: usize,
    /// Precision of the run.
    pub dtype: DType,
    /// Seed of the weights, input and upstream gradient.
    pub seed: u64,
    /// Tensor-parallel size (number of virtual GPUs).
    pub tp: usize,
    /// All-reduce algorithm used for the `f` and `g` collectives.
    pub algorithm: Algorithm,
    /// Sequence parallelism (Korthikanti et al. 2022): the LayerNorm, bias and residual regions
    /// hold `1/tp` of the token rows, `g` becomes a reduce-scatter and `f` an all-gather.
    pub sequence_parallel: bool,
}

impl Default for Config {
    fn default() -> Self {
        Preset::Gpt2Small.config()
    }
}

/// Named starting points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// A GPT-2-small-sized layer (h=768, 12 heads, s=128, b=1) at TP=4.
    Gpt2Small,
    /// A tiny layer for tests and step-through (h=16, 4 heads, s=8, b=2) at TP=2.
    Tiny,
}

impl Preset {
    pub const ALL: [Preset; 2] = [Preset::Gpt2Small, Preset::Tiny];

    pub fn name(self) -> &'static str {
        match self {
            Preset::Gpt2Small => "gpt2-small",
            Preset::Tiny => "tiny",
        }
    }

    pub fn config(self) -> Config {
        match self {
            Preset::Gpt2Small => Config {
                hidden: 768,
                heads: 12,
                kv_heads: None,
                ffn: 3072,
                seq: 128,
                batch: 1,
                layers: 1,
                dtype: DType::F32,
                seed: 42,
                tp: 4,
                algorithm: Algorithm::Ring,
                sequence_parallel: false,
            },
            Preset::Tiny => Config {
                hidden: 16,
                heads: 4,
                kv_heads: None,
                ffn: 64,
                seq: 8,
                batch: 2,
                layers: 1,
                dtype: DType::F64,
                seed: 7,
                tp: 2,
                algorithm: Algorithm::Ring,
                sequence_parallel: false,
            },
        }
    }
}

impl std::str::FromStr for Preset {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown preset '{s}'; expected one of: gpt2-small, tiny"))
    }
}

/// Why a configuration cannot run.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The sharding rules refuse Megatron's program for this config (no config that passes
    /// [`Config::validate_shapes`] is refused; this names the rule if one ever is).
    #[error("the sharding rules refuse this config's program: {0}")]
    Program(String),
    #[error("{field} must be at least 1 (got 0)")]
    Zero { field: &'static str },
    #[error("{field} {value} is over the limit of {max}; use a {field} of at most {max}")]
    OverLimit {
        field: &'static str,
        value: usize,
        max: usize,
    },
    #[error(
        "{what} = {value} is over the limit of {max} (2^52) that keeps the trace's counts \
         exact; reduce {reduce}"
    )]
    ProductOverLimit {
        what: &'static str,
        value: u128,
        max: u64,
        reduce: &'static str,
    },
    #[error("TP size must be between 1 and {max} (got {tp})")]
    TpOutOfRange { tp: usize, max: usize },
    #[error(
        "hidden size {hidden} cannot be split into {heads} heads: hidden must be a multiple of heads \
         (head size = hidden / heads); try heads in {suggestions:?}"
    )]
    HiddenNotDivisibleByHeads {
        hidden: usize,
        heads: usize,
        suggestions: Vec<usize>,
    },
    #[error(
        "{heads} heads cannot be split over {tp} GPUs: each GPU must hold whole heads \
         (heads % tp == 0); valid TP sizes: {}",
        list(valid)
    )]
    HeadsNotDivisible {
        heads: usize,
        tp: usize,
        valid: Vec<usize>,
    },
    #[error(
        "FFN width {ffn} cannot be split over {tp} GPUs: fc1's columns and fc2's rows must divide \
         evenly (ffn % tp == 0); valid TP sizes: {}",
        list(valid)
    )]
    FfnNotDivisible {
        ffn: usize,
        tp: usize,
        valid: Vec<usize>,
    },
    #[error(
        "this scenario needs about {} of tensors, over the {} guard; reduce seq, batch, hidden or \
         layers", human_bytes(*needed_bytes), human_bytes(*limit_bytes)
    )]
    TooLarge { needed_bytes: u64, limit_bytes: u64 },
    #[error(
        "sequence parallelism splits the sequence over the GPUs: seq {seq} cannot be split over \
         {tp} GPUs (seq % tp == 0); valid TP sizes: {}; or change seq to a multiple of {tp}",
        list(valid)
    )]
    SeqNotDivisible {
        seq: usize,
        tp: usize,
        valid: Vec<usize>,
    },
    #[error(
        "{kv_heads} KV heads cannot serve {heads} query heads: grouped-query attention gives each \
         KV head the same number of query heads (heads % kv_heads == 0, kv_heads <= heads); \
         valid KV head counts: {}",
        list(valid)
    )]
    KvHeadsNotDivisor {
        heads: usize,
        kv_heads: usize,
        valid: Vec<usize>,
    },
    #[error(
        "{kv_heads} KV heads cannot be spread over {tp} GPUs: each GPU needs whole KV heads \
         (kv_heads % tp == 0) or an equal share of one (tp % kv_heads == 0: vLLM and tplab \
         replicate the KV weights, current Megatron-Core all-gathers the QKV activations; older \
         Megatron-LM allowed only the first); neither holds; valid TP sizes: {}",
        list(valid)
    )]
    KvHeadsNotSplittable {
        kv_heads: usize,
        tp: usize,
        valid: Vec<usize>,
    },
    #[error("dtype {dtype} cannot run on the CPU engine; use f32 or f64")]
    DtypeNotExecutable { dtype: DType },
}

fn list(v: &[usize]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `1536` → `"1.5 KiB"`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Megatron-LM's rule (`kv % tp == 0`: whole KV heads per rank) or vLLM's (`tp % kv == 0`: each
/// KV head replicated on `tp / kv` ranks).
fn kv_splittable(kv: usize, tp: usize) -> bool {
    kv > 0 && (kv.is_multiple_of(tp) || tp.is_multiple_of(kv))
}

/// The divisors of `n` in increasing order (none for 0), found by trial division up to `√n`:
/// `O(√n)` steps, never a loop over every number up to `n`.
pub fn divisors(n: usize) -> Vec<usize> {
    let mut low = Vec::new();
    let mut high = Vec::new();
    let mut d = 1usize;
    while d <= n / d {
        if n.is_multiple_of(d) {
            low.push(d);
            if d != n / d {
                high.push(n / d);
            }
        }
        d += 1;
    }
    low.extend(high.into_iter().rev());
    low
}

impl Config {
    /// Head size `h / a`.
    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads.max(1)
    }

    /// Key/value heads: `kv_heads`, or `heads` for plain multi-head attention.
    pub fn kv_heads(&self) -> usize {
        self.kv_heads.unwrap_or(self.heads)
    }

    /// Whether this is grouped-query attention (fewer KV heads than query heads).
    pub fn is_gqa(&self) -> bool {
        self.kv_heads() < self.heads
    }

    /// Query heads per KV head (the group size).
    pub fn queries_per_kv(&self) -> usize {
        self.heads / self.kv_heads().max(1)
    }

    /// KV heads held by each rank: `kv/tp` when `tp <= kv` (Megatron's split), else 1 replicated
    /// copy (vLLM's rule).
    pub fn kv_heads_per_rank(&self) -> usize {
        (self.kv_heads() / self.tp.max(1)).max(1)
    }

    /// How many ranks hold a copy of each KV head: `tp / kv` when `tp > kv`, else 1.
    pub fn kv_replicas(&self) -> usize {
        (self.tp.max(1) / self.kv_heads().max(1)).max(1)
    }

    /// The first KV head rank `r` holds (its KV heads are this one and the next
    /// `kv_heads_per_rank() - 1`).
    pub fn first_kv_head(&self, rank: usize) -> usize {
        if self.kv_replicas() > 1 {
            rank / self.kv_replicas()
        } else {
            rank.saturating_mul(self.kv_heads_per_rank())
        }
    }

    /// The groups of ranks that hold copies of the same KV heads (only with replication: each
    /// group all-reduces its copies' gradients).
    pub fn kv_replica_groups(&self) -> Vec<Vec<usize>> {
        let m = self.kv_replicas();
        if m <= 1 {
            return Vec::new();
        }
        (0..self.tp.min(MAX_TP) / m)
            .map(|g| (g * m..(g + 1) * m).collect())
            .collect()
    }

    /// The ranks holding each KV head, indexed by KV head.
    pub fn kv_holders(&self) -> Vec<Vec<usize>> {
        // Clamped so that an unvalidated config cannot size the allocation or the loop.
        let mut out = vec![Vec::new(); self.kv_heads().min(MAX_HEADS)];
        for r in 0..self.tp.clamp(1, MAX_TP) {
            let first = self.first_kv_head(r);
            let end = first
                .saturating_add(self.kv_heads_per_rank())
                .min(out.len());
            for v in out.iter_mut().take(end).skip(first) {
                v.push(r);
            }
        }
        out
    }

    /// A sentence on how grouped-query attention is placed (`None` without it).
    pub fn gqa_note(&self) -> Option<String> {
        if !self.is_gqa() {
            return None;
        }
        let (a, kv, tp) = (self.heads, self.kv_heads(), self.tp.max(1));
        let head = format!(
            "grouped-query attention: {a} query heads share {kv} KV heads ({} per KV head)",
            self.queries_per_kv()
        );
        Some(if self.kv_replicas() > 1 {
            let holders = self
                .kv_holders()
                .iter()
                .enumerate()
                .map(|(k, rs)| {
                    let rs: Vec<String> = rs.iter().map(|r| r.to_string()).collect();
                    format!("GPU {} hold KV head {k}", rs.join(", "))
                })
                .collect::<Vec<_>>()
                .join("; ");
            format!(
                "{head}; TP={tp} > {kv} KV heads, so each KV head is replicated on {} GPUs \
                 (vLLM's rule, tp % kv_heads == 0): {holders}. The copies' K/V gradients are \
                 all-reduced within each group (attn.kv.grads).",
                self.kv_replicas()
            )
        } else {
            format!(
                "{head}; each GPU holds {} whole KV head(s) (Megatron-LM's rule, kv_heads % tp \
                 == 0), no copies.",
                self.kv_heads_per_rank()
            )
        })
    }

    /// Columns of the packed QKV weight: `(a + 2·kv)·d` (`3h` without grouped-query attention).
    /// Saturates instead of wrapping on a config that [`Config::validate_shapes`] refuses.
    pub fn qkv_width(&self) -> usize {
        self.heads
            .saturating_add(self.kv_heads().saturating_mul(2))
            .saturating_mul(self.head_dim())
    }

    /// QKV columns each rank holds: its query heads and its (possibly replicated) KV heads.
    pub fn qkv_cols_per_rank(&self) -> usize {
        self.heads_per_rank()
            .saturating_add(self.kv_heads_per_rank().saturating_mul(2))
            .saturating_mul(self.head_dim())
    }

    /// Tokens per micro-batch, `b·s` (rows of every activation matrix). Saturates instead of
    /// wrapping on a config that [`Config::validate_shapes`] refuses.
    pub fn tokens(&self) -> usize {
        self.batch.saturating_mul(self.seq)
    }

    /// Heads held by each rank.
    pub fn heads_per_rank(&self) -> usize {
        self.heads / self.tp.max(1)
    }

    /// FFN columns held by each rank.
    pub fn ffn_per_rank(&self) -> usize {
        self.ffn / self.tp.max(1)
    }

    /// Every TP size in `1..=MAX_TP` that splits both the heads and the FFN evenly.
    pub fn valid_tp_sizes(&self) -> Vec<usize> {
        (1..=MAX_TP)
            .filter(|&t| {
                self.heads.is_multiple_of(t)
                    && self.ffn.is_multiple_of(t)
                    && kv_splittable(self.kv_heads(), t)
                    && (!self.sequence_parallel || self.seq.is_multiple_of(t))
            })
            .collect()
    }

    /// The valid TP sizes nearest to `self.tp` (at most two: the next lower and the next higher).
    pub fn nearest_valid_tp(&self) -> Vec<usize> {
        let valid = self.valid_tp_sizes();
        let below = valid.iter().copied().filter(|&t| t < self.tp).max();
        let above = valid.iter().copied().filter(|&t| t > self.tp).min();
        below.into_iter().chain(above).collect()
    }

    /// Checks the shape rules (not the memory guard): sizes non-zero and at most [`MAX_DIM`]
    /// (heads at most [`MAX_HEADS`], layers at most [`MAX_LAYERS`]), `hidden % heads`,
    /// `heads % tp`, `ffn % tp`, `seq % tp` with sequence parallelism, and `1 <= tp <= 64`.
    pub fn validate_shapes(&self) -> Result<(), ConfigError> {
        for (field, v) in [
            ("hidden", self.hidden),
            ("heads", self.heads),
            ("ffn", self.ffn),
            ("seq", self.seq),
            ("batch", self.batch),
            ("layers", self.layers),
            ("tp", self.tp),
        ] {
            if v == 0 {
                return Err(ConfigError::Zero { field });
            }
        }
        for (field, value, max) in [
            ("hidden", self.hidden, MAX_DIM),
            ("heads", self.heads, MAX_HEADS),
            ("kv_heads", self.kv_heads(), MAX_HEADS),
            ("ffn", self.ffn, MAX_DIM),
            ("seq", self.seq, MAX_DIM),
            ("batch", self.batch, MAX_DIM),
            ("layers", self.layers, MAX_LAYERS),
        ] {
            if value > max {
                return Err(ConfigError::OverLimit { field, value, max });
            }
        }
        let (b, s, h, f) = (
            self.batch as u128,
            self.seq as u128,
            self.hidden as u128,
            self.ffn as u128,
        );
        for (what, value, reduce) in [
            (
                "batch × seq² × hidden",
                b * s * s * h,
                "seq, batch or hidden",
            ),
            ("tokens × ffn", b * s * f, "seq, batch or ffn"),
            ("tokens × 3·hidden", b * s * 3 * h, "seq, batch or hidden"),
            ("hidden × ffn", h * f, "hidden or ffn"),
        ] {
            if value > u128::from(MAX_PRODUCT) {
                return Err(ConfigError::ProductOverLimit {
                    what,
                    value,
                    max: MAX_PRODUCT,
                    reduce,
                });
            }
        }
        if self.tp > MAX_TP {
            return Err(ConfigError::TpOutOfRange {
                tp: self.tp,
                max: MAX_TP,
            });
        }
        if !self.hidden.is_multiple_of(self.heads) {
            let mut suggestions: Vec<usize> = divisors(self.hidden)
                .into_iter()
                .filter(|&d| self.hidden / d >= 8 || d == 1)
                .collect();
            suggestions.sort_by_key(|&d| d.abs_diff(self.heads));
            suggestions.truncate(4);
            suggestions.sort_unstable();
            return Err(ConfigError::HiddenNotDivisibleByHeads {
                hidden: self.hidden,
                heads: self.heads,
                suggestions,
            });
        }
        if !self.heads.is_multiple_of(self.tp) {
            return Err(ConfigError::HeadsNotDivisible {
                heads: self.heads,
                tp: self.tp,
                valid: self.valid_tp_sizes(),
            });
        }
        let kv = self.kv_heads();
        if kv == 0 {
            return Err(ConfigError::Zero { field: "kv_heads" });
        }
        if kv > self.heads || !self.heads.is_multiple_of(kv) {
            return Err(ConfigError::KvHeadsNotDivisor {
                heads: self.heads,
                kv_heads: kv,
                valid: divisors(self.heads),
            });
        }
        if !kv_splittable(kv, self.tp) {
            return Err(ConfigError::KvHeadsNotSplittable {
                kv_heads: kv,
                tp: self.tp,
                valid: self.valid_tp_sizes(),
            });
        }
        if !self.ffn.is_multiple_of(self.tp) {
            return Err(ConfigError::FfnNotDivisible {
                ffn: self.ffn,
                tp: self.tp,
                valid: self.valid_tp_sizes(),
            });
        }
        if self.sequence_parallel && !self.seq.is_multiple_of(self.tp) {
            return Err(ConfigError::SeqNotDivisible {
                seq: self.seq,
                tp: self.tp,
                valid: self.valid_tp_sizes(),
            });
        }
        Ok(())
    }

    /// The token rows (of `[batch·seq, hidden]`) that `rank` holds in the sequence-parallel
    /// regions: a contiguous `1/tp` of them with sequence parallelism, all of them without.
    /// (Megatron's `[s, b, h]` layout splits `s`; ours is batch-major, so the split cuts the
    /// flattened rows, which is the chunk a reduce-scatter leaves on each rank.)
    pub fn token_rows(&self, rank: usize) -> std::ops::Range<usize> {
        let t = self.tokens();
        if self.sequence_parallel && self.tp > 1 {
            let per = t / self.tp;
            rank * per..(rank + 1) * per
        } else {
            0..t
        }
    }

    /// All rules, the memory guard with the default limit included.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_with_guard(DEFAULT_MEMORY_GUARD_BYTES)
    }

    /// All rules, with a memory guard of `limit_bytes` for the CPU execution.
    pub fn validate_with_guard(&self, limit_bytes: u64) -> Result<(), ConfigError> {
        match self.validate_shapes() {
            // Sizes too large to count are also far too large to run: for running, the memory
            // guard's message (the bytes needed) is the more useful one.
            Err(ConfigError::ProductOverLimit { .. })
                if self.execution_bytes_estimate() > limit_bytes =>
            {
                return Err(ConfigError::TooLarge {
                    needed_bytes: self.execution_bytes_estimate(),
                    limit_bytes,
                });
            }
            r => r?,
        }
        let needed_bytes = self.execution_bytes_estimate();
        if needed_bytes > limit_bytes {
            return Err(ConfigError::TooLarge {
                needed_bytes,
                limit_bytes,
            });
        }
        Ok(())
    }

    /// Validation for executing on the CPU engine (shapes, guard, and an executable dtype).
    pub fn validate_for_cpu(&self) -> Result<(), ConfigError> {
        self.validate()?;
        if !self.dtype.cpu_executable() {
            return Err(ConfigError::DtypeNotExecutable { dtype: self.dtype });
        }
        Ok(())
    }

    /// Parameters of one block: QKV `h·q+q` (`q` = [`Config::qkv_width`], `3h` without
    /// grouped-query attention), out `h·h+h`, fc1 `h·f+f`, fc2 `f·h+h`, two LayerNorms `4h`.
    /// Saturates (never wraps) on a config that [`Config::validate_shapes`] refuses; within
    /// [`MAX_DIM`] it is exact.
    pub fn params_per_layer(&self) -> u64 {
        let (h, f, q) = (
            self.hidden as u128,
            self.ffn as u128,
            self.qkv_width() as u128,
        );
        let n = [h * q, q, h * h, h, h * f, f, f * h, h, 4 * h]
            .into_iter()
            .fold(0u128, u128::saturating_add);
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    /// A conservative estimate of the bytes a CPU run allocates, computed with saturating
    /// arithmetic so that absurd sizes are refused rather than overflowing: the reference and
    /// the sharded copy of the weights and their gradients (4×), the saved activations of both
    /// executors (per layer about `14·t·h + 2·t·f + 2·b·a·s²` elements, 2×), and the input,
    /// output and gradients.
    pub fn execution_bytes_estimate(&self) -> u64 {
        let e = self.dtype.size_bytes().max(4) as u64;
        let (t, h, f, l) = (
            self.tokens() as u64,
            self.hidden as u64,
            self.ffn as u64,
            self.layers as u64,
        );
        let (b, a, s) = (self.batch as u64, self.heads as u64, self.seq as u64);
        let weights = l.saturating_mul(self.params_per_layer()).saturating_mul(4);
        let act_per_layer = 14u64
            .saturating_mul(t.saturating_mul(h))
            .saturating_add(2u64.saturating_mul(t.saturating_mul(f)))
            .saturating_add(
                2u64.saturating_mul(b.saturating_mul(a).saturating_mul(s.saturating_mul(s))),
            );
        let acts = l.saturating_mul(act_per_layer).saturating_mul(2);
        let io = 6u64.saturating_mul(t.saturating_mul(h));
        weights
            .saturating_add(acts)
            .saturating_add(io)
            .saturating_mul(e)
    }

    /// A short label, e.g. `h768-a12-s128-b1-L1-tp4-f32`, used in file names.
    pub fn label(&self) -> String {
        format!(
            "h{}-a{}{}-f{}-s{}-b{}-L{}-tp{}{}-{}",
            self.hidden,
            self.heads,
            if self.is_gqa() {
                format!("-kv{}", self.kv_heads())
            } else {
                String::new()
            },
            self.ffn,
            self.seq,
            self.batch,
            self.layers,
            self.tp,
            if self.sequence_parallel { "-sp" } else { "" },
            self.dtype
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid() {
        assert_eq!(Config::default().validate(), Ok(()));
        assert_eq!(Preset::Tiny.config().validate(), Ok(()));
    }

    #[test]
    fn heads_rule_lists_valid_sizes() {
        let cfg = Config {
            heads: 32,
            hidden: 4096,
            ffn: 16384,
            tp: 6,
            ..Config::default()
        };
        let err = cfg.validate_shapes().unwrap_err();
        assert!(matches!(err, ConfigError::HeadsNotDivisible { tp: 6, .. }));
        assert_eq!(
            err.to_string(),
            "32 heads cannot be split over 6 GPUs: each GPU must hold whole heads (heads % tp == 0); \
             valid TP sizes: 1, 2, 4, 8, 16, 32"
        );
        assert_eq!(cfg.nearest_valid_tp(), vec![4, 8]);
    }

    #[test]
    fn ffn_rule() {
        let cfg = Config {
            ffn: 3070,
            tp: 4,
            ..Config::default()
        };
        assert!(matches!(
            cfg.validate_shapes(),
            Err(ConfigError::FfnNotDivisible {
                ffn: 3070,
                tp: 4,
                ..
            })
        ));
    }

    #[test]
    fn zero_and_range() {
        let cfg = Config {
            seq: 0,
            ..Config::default()
        };
        assert_eq!(cfg.validate(), Err(ConfigError::Zero { field: "seq" }));
        let cfg = Config {
            tp: 65,
            ..Config::default()
        };
        assert!(matches!(
            cfg.validate(),
            Err(ConfigError::TpOutOfRange { tp: 65, .. })
        ));
        let cfg = Config {
            hidden: 770,
            ..Config::default()
        };
        assert!(matches!(
            cfg.validate(),
            Err(ConfigError::HiddenNotDivisibleByHeads { .. })
        ));
    }

    #[test]
    fn divisors_match_the_definition() {
        for n in 0..2000usize {
            let naive: Vec<usize> = (1..=n).filter(|d| n.is_multiple_of(*d)).collect();
            assert_eq!(divisors(n), naive, "{n}");
        }
        // 2^24 has 25 divisors; found with about 4096 trial divisions.
        assert_eq!(divisors(1 << 24).len(), 25);
    }

    #[test]
    fn huge_sizes_are_refused_by_name_not_looped_over() {
        // The example: hidden 10^11 with 7 heads used to list divisors by looping to n.
        let cfg = Config {
            hidden: 100_000_000_000,
            heads: 7,
            ..Config::default()
        };
        let err = cfg.validate().unwrap_err();
        assert_eq!(
            err,
            ConfigError::OverLimit {
                field: "hidden",
                value: 100_000_000_000,
                max: MAX_DIM
            }
        );
        assert!(err.to_string().contains("16777216"), "{err}");
        for (field, cfg) in [
            (
                "seq",
                Config {
                    seq: usize::MAX,
                    ..Config::default()
                },
            ),
            (
                "batch",
                Config {
                    batch: usize::MAX,
                    ..Config::default()
                },
            ),
            (
                "layers",
                Config {
                    layers: usize::MAX,
                    ..Config::default()
                },
            ),
            (
                "ffn",
                Config {
                    ffn: usize::MAX,
                    ..Config::default()
                },
            ),
            (
                "heads",
                Config {
                    heads: usize::MAX,
                    ..Config::default()
                },
            ),
            (
                "kv_heads",
                Config {
                    kv_heads: Some(usize::MAX),
                    ..Config::default()
                },
            ),
        ] {
            // Nothing below may overflow or allocate by these numbers.
            let _ = (cfg.tokens(), cfg.params_per_layer(), cfg.qkv_width());
            let _ = (cfg.kv_holders(), cfg.kv_replica_groups(), cfg.gqa_note());
            assert!(
                matches!(cfg.validate(), Err(ConfigError::OverLimit { field: f, .. }) if f == field),
                "{field}: {:?}",
                cfg.validate()
            );
        }
    }

    #[test]
    fn size_products_are_bounded_before_anything_counts_them() {
        // Every size within MAX_DIM, but the attention's b·s²·h is 2^72.
        let cfg = Config {
            seq: 1 << 24,
            batch: 1,
            hidden: 1 << 24,
            heads: 1 << 10,
            ffn: 1 << 10,
            ..Config::default()
        };
        let err = cfg.validate_shapes().unwrap_err();
        assert!(
            matches!(
                err,
                ConfigError::ProductOverLimit {
                    what: "batch × seq² × hidden",
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string().contains("reduce seq, batch or hidden"),
            "{err}"
        );
        // The Playground's largest drawable GPT-3-sized layer is fine.
        let gpt3 = Config {
            hidden: 12288,
            heads: 96,
            ffn: 49152,
            seq: 2048,
            batch: 8,
            tp: 8,
            ..Config::default()
        };
        assert_eq!(gpt3.validate_shapes(), Ok(()));
    }

    #[test]
    fn memory_guard_refuses_before_allocating() {
        let cfg = Config {
            hidden: 1 << 20,
            heads: 1 << 10,
            ffn: 1 << 22,
            seq: 1 << 20,
            layers: 1000,
            ..Config::default()
        };
        let err = cfg.validate().unwrap_err();
        assert!(matches!(err, ConfigError::TooLarge { .. }), "{err}");
        assert!(err.to_string().contains("guard"));
    }
}
