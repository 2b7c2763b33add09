//! tplab-kernels: the engine's shards on real GPUs.
//!
//! The same [`tplab_engine::trace::Trace`] the simulator draws is walked event by event on CUDA:
//! NVRTC-compiled kernels (`src/cu/*.cu`) for LayerNorm, bias, GeLU, causal softmax, residual and
//! the single-device all-reduce, cuBLAS for the matrix products, CUDA events for the measured
//! times. On one device the `tp` virtual ranks are CUDA streams, each with its own shards; on
//! several devices each rank owns a device and the all-reduce is NCCL's.
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
pub mod reference;
pub mod run;
pub mod summary;
pub mod verify;
pub mod vocab;

#[cfg(feature = "cuda")]
pub mod cuda;

pub use error::GpuError;
pub use probe::{probe, DeviceInfo, LibraryStatus, Probe};
pub use run::{run, DeviceMode, GpuRun, RunOptions};
