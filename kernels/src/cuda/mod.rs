//! The CUDA side (feature `cuda`).

pub mod bench;
pub mod compile;
pub mod exec;
pub(crate) mod probe;

pub use compile::{compile_all_ptx, compile_source, kernels_for, CompiledSource, Kernels};

use crate::error::GpuError;

/// Fails with the probe's advice unless the driver, NVRTC, cuBLAS and a device are there.
pub(crate) fn require_runtime() -> Result<(), GpuError> {
    let p = crate::probe();
    if p.usable() {
        return Ok(());
    }
    if let Some(l) = p
        .libraries
        .iter()
        .find(|l| !l.found && l.library != crate::probe::Library::Nccl)
    {
        return Err(GpuError::MissingLibrary {
            library: l.name(),
            how_to_fix: l.advice.as_ref().map(|a| a.to_string()).unwrap_or_default(),
        });
    }
    let problems: Vec<String> = p.problems.iter().map(|x| x.to_string()).collect();
    Err(GpuError::NoDevice(problems.join("; ")))
}
