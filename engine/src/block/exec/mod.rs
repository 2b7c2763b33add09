//! The executors of the block's programs on virtual GPUs, in one place:
//!
//! - [`sharded`]: walks the block program [`crate::block::program::schedule`] writes for
//!   Megatron-LM's split (with sequence parallelism and grouped-query attention), with fused
//!   passes, a buffer pool and the precision hook; the fast path `tplab run` and the labs use.
//! - [`design`]: walks any program a [`crate::block::design`] plan propagates to, Megatron's
//!   included (a test holds the two to the same numbers on Megatron's plan), and runs a broken
//!   program when asked, to show how wrong it is.
//! - [`kernels`]: the fused CPU kernels the sharded executor calls.
//!
//! The unsharded reference ([`crate::block::reference`]) is not here on purpose: it is the oracle
//! both executors are checked against and shares none of their code.

pub mod design;
pub mod kernels;
pub mod sharded;
