//! The probe with cudarc: library presence, versions and devices, every call guarded.

use crate::error::{panic_message, GpuError};
use crate::probe::{find_library_files, missing_advice, DeviceInfo, LibraryStatus, Probe};
use cudarc::driver::CudaContext;
use std::cell::Cell;
use std::sync::Once;

thread_local! {
    /// Set while this thread runs a guarded probe call: its panics are caught and reported as
    /// text, so the panic hook must not print them.
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

/// Wraps the process's panic hook once so that it stays silent for panics raised inside
/// [`quiet`] on the probing thread (every other panic is reported as before).
fn install_quiet_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

/// Runs `f`, turning a panic (cudarc panics when a library lacks a symbol) into an error,
/// without the panic hook printing "panicked" on stderr.
fn quiet<T>(f: impl FnOnce() -> Result<T, GpuError>) -> Result<T, String> {
    install_quiet_hook();
    let was = QUIET.with(|q| q.replace(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(was));
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.to_string()),
        Err(payload) => Err(panic_message(payload.as_ref())),
    }
}

/// cudarc's panic for a missing symbol is "Missing symbol cuInit: …"; this says which library
/// loads but lacks it (`libcuda.so.1 loads but lacks cuInit`).
fn broken_library_message(stem: &str, message: &str) -> String {
    let symbol = message
        .strip_prefix("Missing symbol ")
        .and_then(|rest| rest.split(':').next())
        .map(str::trim);
    match symbol {
        Some(sym) => {
            let file = find_library_files(stem)
                .first()
                .and_then(|p| p.file_name())
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| format!("lib{stem}.so"));
            format!("{file} loads but lacks {sym}")
        }
        None => message.to_string(),
    }
}

fn candidates(stem: &str) -> String {
    // Only the Linux names (cudarc also tries Windows-style `lib{stem}64_*` names).
    let plain = format!("lib{stem}.so");
    let mut c = cudarc::get_lib_name_candidates(stem);
    c.retain(|n| {
        n == &plain
            || n.strip_prefix(&format!("{plain}."))
                .is_some_and(|v| v.chars().all(|ch| ch.is_ascii_digit()))
    });
    c.dedup();
    c.join(", ")
}

fn status(
    name: &'static str,
    stem: &'static str,
    needed_for: &'static str,
    present: bool,
    version: impl FnOnce() -> Result<String, GpuError>,
    how_to_get: &str,
) -> LibraryStatus {
    let looked_for = candidates(stem);
    if !present {
        return LibraryStatus {
            name,
            advice: Some(missing_advice(stem, &looked_for, how_to_get)),
            looked_for,
            found: false,
            version: None,
            needed_for,
        };
    }
    match quiet(version).map_err(|m| broken_library_message(stem, &m)) {
        Ok(v) => LibraryStatus {
            name,
            looked_for,
            found: true,
            version: Some(v),
            advice: None,
            needed_for,
        },
        Err(e) => LibraryStatus {
            name,
            looked_for,
            found: false,
            version: None,
            advice: Some(if e.contains(" loads but lacks ") {
                format!(
                    "{e}: it is not a complete {name} library, or older than CUDA 13.0, which \
                     tplab's cudarc build expects"
                )
            } else {
                format!(
                    "the library loads but does not work: {e}; it may be older than CUDA 13.0, \
                     which tplab's cudarc build expects"
                )
            }),
            needed_for,
        },
    }
}

fn present(f: unsafe fn() -> bool) -> bool {
    // SAFETY: `is_culib_present` only tries to dlopen candidate names.
    quiet(|| Ok(unsafe { f() })).unwrap_or(false)
}

pub(crate) fn probe_cuda() -> Probe {
    let driver_ok = present(cudarc::driver::sys::is_culib_present);
    let nvrtc_ok = present(cudarc::nvrtc::sys::is_culib_present);
    let cublas_ok = present(cudarc::cublas::sys::is_culib_present);
    let nccl_ok = present(cudarc::nccl::sys::is_culib_present);

    let driver = status(
        "CUDA driver",
        "cuda",
        "everything on the GPU",
        driver_ok,
        || {
            cudarc::driver::result::init()?;
            let mut v = 0;
            // SAFETY: writes one int.
            unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) }.result()?;
            Ok(format!("{}.{}", v / 1000, (v % 1000) / 10))
        },
        "install the NVIDIA driver (it provides libcuda.so.1); in a container, run with the GPU \
         exposed (e.g. `docker run --gpus all`)",
    );
    let nvrtc = status(
        "NVRTC",
        "nvrtc",
        "compiling tplab's kernels at run time",
        nvrtc_ok,
        || {
            let (mut a, mut b) = (0, 0);
            // SAFETY: writes two ints.
            let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut a, &mut b) };
            if r != cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
                return Err(GpuError::Unsupported(format!("nvrtcVersion failed: {r:?}")));
            }
            Ok(format!("{a}.{b}"))
        },
        "install the CUDA toolkit's NVRTC (libnvrtc.so.13) or `pip install nvidia-cuda-nvrtc` and \
         add its nvidia/cu13/lib directory to LD_LIBRARY_PATH",
    );
    let cublas = status(
        "cuBLAS",
        "cublas",
        "the matrix products",
        cublas_ok,
        || {
            use cudarc::cublas::sys::{cublasGetProperty, libraryPropertyType};
            let mut v = [0; 3];
            for (i, p) in [
                libraryPropertyType::MAJOR_VERSION,
                libraryPropertyType::MINOR_VERSION,
                libraryPropertyType::PATCH_LEVEL,
            ]
            .into_iter()
            .enumerate()
            {
                // SAFETY: writes one int.
                unsafe { cublasGetProperty(p, &mut v[i]) }.result()?;
            }
            Ok(format!("{}.{}.{}", v[0], v[1], v[2]))
        },
        "install the CUDA toolkit's cuBLAS (libcublas.so.13) or `pip install nvidia-cublas` and \
         add its lib directory to LD_LIBRARY_PATH",
    );
    let nccl = status(
        "NCCL",
        "nccl",
        "all-reduce across two or more GPUs",
        nccl_ok,
        || {
            let v = cudarc::nccl::result::get_nccl_version()?;
            Ok(format!("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100))
        },
        "install NCCL (`apt install libnccl2` or `pip install nvidia-nccl-cu13`); only needed for \
         runs over two or more GPUs",
    );

    let mut problems = Vec::new();
    for l in [&driver, &nvrtc, &cublas] {
        if !l.found {
            let broken = l
                .advice
                .as_deref()
                .filter(|a| a.contains(" loads but lacks "))
                .and_then(|a| a.split(':').next());
            problems.push(match broken {
                Some(what) => format!("{} is broken: {what}", l.name),
                None => format!(
                    "{} ({}) is missing",
                    l.name,
                    l.looked_for.split(", ").next().unwrap_or(l.name)
                ),
            });
        }
    }
    let devices = if driver.found {
        match quiet(list_devices) {
            Ok(d) => d,
            Err(e) => {
                problems.push(format!(
                    "the driver loads but devices cannot be listed: {e}"
                ));
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    if driver.found && devices.is_empty() && problems.is_empty() {
        problems.push(
            "no CUDA device is visible (check `nvidia-smi` and CUDA_VISIBLE_DEVICES)".to_string(),
        );
    }
    Probe {
        compiled_with_cuda: true,
        libraries: vec![driver, nvrtc, cublas, nccl],
        devices,
        problems,
    }
}

fn list_devices() -> Result<Vec<DeviceInfo>, GpuError> {
    let n = CudaContext::device_count()?;
    let mut out = Vec::new();
    for i in 0..n.max(0) as usize {
        let ctx = CudaContext::new(i)?;
        let (free, total) = ctx.mem_get_info()?;
        out.push(DeviceInfo {
            ordinal: i,
            name: ctx.name()?,
            total_memory_bytes: total as u64,
            free_memory_bytes: free as u64,
            compute_capability: ctx.compute_capability()?,
        });
    }
    Ok(out)
}
