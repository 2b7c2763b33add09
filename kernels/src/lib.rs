//! tplab-kernels: the engine's shards on real GPUs.
//!
//! The same block program the simulator draws (`tplab_engine::block::program::schedule`) is walked event
//! by event on CUDA, matching on the engine's `Op`: NVRTC-compiled kernels (`src/cu/*.cu`) for
//! LayerNorm, bias, GeLU, causal softmax, residual and the single-device collectives (all-reduce,
//! all-gather, reduce-scatter, max), cuBLAS for the matrix products, CUDA events for the measured
//! times. Sequence parallelism and grouped-query attention run as on the CPU executor, with every
//! operand from one buffer layout ([`buffers`]) tested against the engine's placements. The
//! same walk serves Megatron's split; any other valid plan a learner designs is lowered from the
//! engine's propagated program to one launch list ([`program`], checked on the CPU for all 81
//! assignments of the four weights) and run by [`run_plan`]. The
//! vocabulary-parallel embedding and cross-entropy ([`vocab`]) and the serving decode with its
//! KV cache ([`decode`]) run on the GPU too. On one device the `tp` virtual ranks are CUDA
//! streams, each with its own shards; on several devices each rank owns a device and the
//! collectives are NCCL's. (The paths added with sequence parallelism, GQA, the vocabulary pass,
//! the decode and a learner's plan have not yet run on hardware: docs/gpu.md.)
//!
//! Built without the `cuda` feature (or on a machine without the libraries) every entry point
//! returns a clear [`GpuError`]; [`probe()`] says what was looked for and what is missing.

pub mod bench;
pub mod buffers;
pub mod decode;
pub mod error;
pub mod launch;
pub mod layout;
pub mod probe;
pub mod program;
pub mod reference;
pub mod run;
pub mod summary;
pub mod verify;
pub mod vocab;

#[cfg(feature = "cuda")]
pub mod cuda;

pub use error::GpuError;
pub use probe::{probe, Advice, DeviceInfo, Library, LibraryStatus, Probe, Problem};
pub use run::{run, run_plan, DeviceMode, GpuRun, PlanGpuRun, RunOptions};
