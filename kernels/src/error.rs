//! Errors of the GPU executor. Every failure is a value: nothing here panics.

use thiserror::Error;

/// Why a GPU operation failed, with what to do about it.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum GpuError {
    /// The crate was built without its `cuda` feature.
    #[error(
        "tplab was built without CUDA support (the `cuda` feature of tplab-kernels is off); \
         rebuild with default features: `cargo build --release`"
    )]
    NotCompiled,
    /// A CUDA library could not be loaded (see [`crate::probe`] for the full report).
    #[error("{library} is not available: {how_to_fix}")]
    MissingLibrary {
        library: &'static str,
        how_to_fix: String,
    },
    /// No CUDA device is visible.
    #[error("no CUDA device found: {0}")]
    NoDevice(String),
    /// The scenario is not valid (the engine's rule and its fix).
    #[error(transparent)]
    Config(#[from] tplab_engine::config::ConfigError),
    /// A serving request the model refuses (prompt, tokens, TP): the engine's rule and fix.
    #[error(transparent)]
    Serve(#[from] tplab_engine::labs::serve::ServeError),
    /// The rules refuse the scenario's program (the rule it breaks).
    #[error(transparent)]
    Trace(#[from] tplab_engine::block::program::TraceError),
    /// A setting the GPU executor does not support.
    #[error("{0}")]
    Unsupported(String),
    /// The device ran out of memory.
    #[error(
        "the GPU ran out of memory ({what}); this scenario needs about {needed}: reduce seq, batch, \
         hidden, layers or TP"
    )]
    OutOfMemory { what: String, needed: String },
    /// An NVRTC compile failure, with the compiler's log.
    #[error("kernel source `{source_name}` failed to compile with NVRTC for {arch}:\n{log}")]
    Compile {
        source_name: &'static str,
        arch: String,
        log: String,
    },
    /// A CUDA driver call failed.
    #[cfg(feature = "cuda")]
    #[error("CUDA driver error: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
    /// A cuBLAS call failed.
    #[cfg(feature = "cuda")]
    #[error("cuBLAS error: {0:?}")]
    Cublas(#[from] cudarc::cublas::result::CublasError),
    /// An NCCL call failed.
    #[cfg(feature = "cuda")]
    #[error("NCCL error: {0}")]
    Nccl(String),
    /// NVRTC failed outside compilation (creating the program, reading PTX).
    #[cfg(feature = "cuda")]
    #[error("NVRTC error: {0}")]
    Nvrtc(#[from] cudarc::nvrtc::CompileError),
    /// A CUDA library panicked inside cudarc (caught); the message says which call.
    #[error("a CUDA call panicked in {call}: {message}")]
    Panicked { call: &'static str, message: String },
}

#[cfg(feature = "cuda")]
impl From<cudarc::nccl::result::NcclError> for GpuError {
    fn from(e: cudarc::nccl::result::NcclError) -> Self {
        GpuError::Nccl(format!("{:?}", e.0))
    }
}

/// Runs `f`, turning a panic (cudarc panics when a library or symbol is missing) into an error.
pub fn guard<T>(
    call: &'static str,
    f: impl FnOnce() -> Result<T, GpuError>,
) -> Result<T, GpuError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(GpuError::Panicked {
            call,
            message: panic_message(payload.as_ref()),
        }),
    }
}

/// The text of a caught panic.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}
