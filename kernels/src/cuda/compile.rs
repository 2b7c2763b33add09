//! NVRTC: `.cu` sources to PTX, and the per-device cache of loaded kernels.

use crate::error::{guard, GpuError};
use crate::launch::{nvrtc_options, program_text, KernelSource, SOURCES};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule};
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tplab_engine::dtype::DType;

/// Fails with advice when NVRTC cannot be loaded (instead of cudarc's panic).
pub(crate) fn require_nvrtc() -> Result<(), GpuError> {
    // SAFETY: only tries to dlopen candidate names.
    let ok = std::panic::catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() })
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err(GpuError::MissingLibrary {
            library: "NVRTC",
            how_to_fix: crate::probe::missing_advice(
                crate::probe::Library::Nvrtc,
                "libnvrtc.so or libnvrtc.so.13",
            )
            .to_string(),
        })
    }
}

/// Compiles one source for one dtype and virtual architecture (`compute_90`).
pub fn compile_source(src: &KernelSource, dtype: DType, arch: &str) -> Result<Ptx, GpuError> {
    require_nvrtc()?;
    let text = program_text(src, dtype);
    let opts = CompileOptions {
        options: nvrtc_options(arch),
        name: Some(src.name.to_string()),
        ..Default::default()
    };
    guard("nvrtc compile", || {
        cudarc::nvrtc::compile_ptx_with_opts(text, opts).map_err(|e| match e {
            CompileError::CompileError { log, .. } => GpuError::Compile {
                source_name: src.name,
                arch: arch.to_string(),
                log: log.to_string_lossy().into_owned(),
            },
            other => GpuError::Nvrtc(other),
        })
    })
}

/// PTX size of one compiled source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledSource {
    pub name: &'static str,
    pub dtype: DType,
    pub arch: String,
    pub ptx_bytes: usize,
}

/// Compiles every source in f32 and bf16 for `arch`; needs NVRTC only (no GPU).
pub fn compile_all_ptx(arch: &str) -> Result<Vec<CompiledSource>, GpuError> {
    let mut out = Vec::new();
    for src in &SOURCES {
        for dtype in [DType::F32, DType::Bf16] {
            let ptx = compile_source(src, dtype, arch)?;
            let text = ptx.to_src();
            for k in src.kernels {
                if !text.contains(&format!(".entry {k}(")) {
                    return Err(GpuError::Unsupported(format!(
                        "PTX of {} ({dtype}) lacks the entry point {k}",
                        src.name
                    )));
                }
            }
            out.push(CompiledSource {
                name: src.name,
                dtype,
                arch: arch.to_string(),
                ptx_bytes: text.len(),
            });
        }
    }
    Ok(out)
}

/// Every kernel of tplab, loaded on one device for one dtype.
pub struct Kernels {
    funcs: HashMap<&'static str, CudaFunction>,
    _modules: Vec<Arc<CudaModule>>,
}

impl Kernels {
    pub(crate) fn get(&self, name: &'static str) -> Result<&CudaFunction, GpuError> {
        self.funcs
            .get(name)
            .ok_or_else(|| GpuError::Unsupported(format!("kernel {name} was not loaded")))
    }
}

type Cache = Mutex<Vec<(usize, DType, Arc<Kernels>)>>;
static CACHE: Cache = Mutex::new(Vec::new());

/// The kernels for `ctx`'s device in `dtype`, compiled once per device and dtype.
pub fn kernels_for(ctx: &Arc<CudaContext>, dtype: DType) -> Result<Arc<Kernels>, GpuError> {
    let ordinal = ctx.ordinal();
    if let Ok(cache) = CACHE.lock() {
        if let Some((_, _, k)) = cache.iter().find(|(o, d, _)| *o == ordinal && *d == dtype) {
            return Ok(k.clone());
        }
    }
    let (major, minor) = ctx.compute_capability()?;
    let arch = crate::launch::arch_for(major, minor);
    let mut funcs = HashMap::new();
    let mut modules = Vec::new();
    for src in &SOURCES {
        let ptx = compile_source(src, dtype, &arch)?;
        let module = ctx.load_module(ptx)?;
        for k in src.kernels {
            funcs.insert(*k, module.load_function(k)?);
        }
        modules.push(module);
    }
    let k = Arc::new(Kernels {
        funcs,
        _modules: modules,
    });
    if let Ok(mut cache) = CACHE.lock() {
        cache.push((ordinal, dtype, k.clone()));
    }
    Ok(k)
}
