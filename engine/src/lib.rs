//! tplab-engine: a Megatron-LM-style tensor-parallel transformer block on virtual GPUs.
//!
//! # Conventions (exports and other checks rely on them)
//! - A GPT-2-style pre-LayerNorm block: `x1 = x + Attn(LN1(x))`, `y = x1 + MLP(LN2(x1))`;
//!   LayerNorm eps = 1e-5 ([`block::ops::LN_EPS`]); causal multi-head attention with packed QKV;
//!   `MLP(x) = fc2(GeLU(fc1(x)))` with the tanh approximation of GeLU.
//! - Linear layers compute `y = x·W + b` with `W` stored `[in, out]`. The packed QKV weight is
//!   `[h, 3h]`, laid out `[Q | K | V]`, heads contiguous inside each part.
//! - Tokens are batch-major: activations are `[batch*seq, hidden]`, row `b*seq + s`.
//! - Biases and LayerNorm vectors are stored as `[1, n]` matrices.
//!
//! # Sequence parallelism (`Config::sequence_parallel`)
//! Korthikanti et al. 2022: outside the tensor-parallel regions (LayerNorms, bias and residual
//! adds) each rank holds a contiguous `1/tp` of the `[batch*seq, hidden]` rows
//! ([`Config::token_rows`]; requires `seq % tp == 0`). `f` becomes an all-gather forward and a
//! reduce-scatter backward, `g` a reduce-scatter forward and an all-gather backward; the
//! column-parallel weight gradients gather the LayerNorm output again (`*.f.bwd.gather`) instead
//! of keeping it, and one all-reduce per layer (`sp.grads`) sums the LayerNorm and row-parallel
//! bias gradients that each rank computed over its rows. The forward output is bit-identical to
//! the all-reduce version with the ring algorithm (a ring all-reduce is a reduce-scatter then an
//! all-gather); saved activations are exactly `1/tp` of TP=1's ([`capacity::memory::config_memory`]).
//!
//! One call, [`run::run`], gives the sharded forward and backward pass on `tp` virtual GPUs,
//! the same pass on the unsharded reference, their comparison, and the [`trace::Trace`].

// The engine's rooms: the block program, collectives, the trace, capacity and the labs; config,
// dtypes and parameters are shared by all of them; `run` and `export` tie them together.
pub mod block;
pub mod capacity;
pub mod collectives;
pub mod config;
pub mod dtype;
pub mod export;
pub mod labs;
pub mod overrides;
pub mod params;
pub mod pipeline;
pub mod run;
pub mod text;
pub mod trace;
