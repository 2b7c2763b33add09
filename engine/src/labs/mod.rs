//! The labs built on the block: precision ([`precision`]), vocabulary parallelism ([`vocab`]),
//! a tiny model trained at several TP sizes ([`train`]) and with TP × PP × DP together
//! ([`train3d`]), and serving: decode on virtual GPUs ([`serve`]) and its cost model
//! ([`serve_cost`]); Mixture-of-Experts with expert parallelism ([`moe`]).

pub mod moe;
pub mod precision;
pub mod serve;
pub mod serve_cost;
pub mod serve_published;
pub mod train;
pub mod train3d;
pub mod vocab;
