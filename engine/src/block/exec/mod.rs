//! The executor of the block's programs on virtual GPUs, in one place:
//!
//! - [`design`]: the one executor. It walks whatever program a [`crate::block::design`] plan
//!   propagates to, Megatron-LM's among them (with sequence parallelism and grouped-query
//!   attention), with fused passes, a buffer pool, collectives run through
//!   [`crate::collectives`] and the precision hook, and runs a broken program when asked, to show
//!   how wrong it is.
//! - [`sharded`]: Megatron's split as the labs, `tplab run` and the views call it: its program
//!   ([`sharded::program`]) handed to the walk, and what a run produces (outputs, gradients,
//!   recorded collectives, issued events, saved elements).
//! - [`kernels`]: the fused CPU kernels the walk calls.
//!
//! The unsharded reference ([`crate::block::reference`]) is not here on purpose: it is the oracle
//! the executor is checked against and shares none of its code.

pub mod design;
pub mod kernels;
pub mod sharded;
