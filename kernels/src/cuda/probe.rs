//! The probe with cudarc: library presence, versions and devices, every call guarded.

use crate::error::{panic_message, GpuError};
use crate::probe::{
    find_library_files, missing_advice, Advice, DeviceInfo, Library, LibraryStatus, Probe, Problem,
};
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
fn broken_library_advice(library: Library, message: &str) -> Advice {
    let stem = library.stem();
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
            Advice::LacksSymbol {
                library,
                file,
                symbol: sym.to_string(),
            }
        }
        None => Advice::DoesNotWork {
            error: message.to_string(),
        },
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
    library: Library,
    present: bool,
    version: impl FnOnce() -> Result<String, GpuError>,
) -> LibraryStatus {
    let looked_for = candidates(library.stem());
    if !present {
        let advice = missing_advice(library, &looked_for);
        return LibraryStatus::missing(library, &looked_for, advice);
    }
    match quiet(version) {
        Ok(v) => LibraryStatus::found(library, &looked_for, &v),
        Err(e) => LibraryStatus::missing(library, &looked_for, broken_library_advice(library, &e)),
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

    let driver = status(Library::Driver, driver_ok, || {
        cudarc::driver::result::init()?;
        let mut v = 0;
        // SAFETY: writes one int.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) }.result()?;
        Ok(format!("{}.{}", v / 1000, (v % 1000) / 10))
    });
    let nvrtc = status(Library::Nvrtc, nvrtc_ok, || {
        let (mut a, mut b) = (0, 0);
        // SAFETY: writes two ints.
        let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut a, &mut b) };
        if r != cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS {
            return Err(GpuError::Unsupported(format!("nvrtcVersion failed: {r:?}")));
        }
        Ok(format!("{a}.{b}"))
    });
    let cublas = status(Library::Cublas, cublas_ok, || {
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
    });
    let nccl = status(Library::Nccl, nccl_ok, || {
        let v = cudarc::nccl::result::get_nccl_version()?;
        Ok(format!("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100))
    });

    let mut problems = Vec::new();
    for l in [&driver, &nvrtc, &cublas] {
        if !l.found {
            let library = l.library;
            problems.push(match &l.advice {
                Some(Advice::LacksSymbol { file, symbol, .. }) => Problem::Broken {
                    library,
                    file: file.clone(),
                    symbol: symbol.clone(),
                },
                Some(Advice::DoesNotWork { error }) => Problem::Failing {
                    library,
                    error: error.clone(),
                },
                _ => Problem::Missing {
                    library,
                    file: l
                        .looked_for
                        .split(", ")
                        .next()
                        .unwrap_or(library.name())
                        .to_string(),
                },
            });
        }
    }
    let devices = if driver.found {
        match quiet(list_devices) {
            Ok(d) => d,
            Err(error) => {
                problems.push(Problem::DevicesUnlisted { error });
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    if driver.found && devices.is_empty() && problems.is_empty() {
        problems.push(Problem::NoDevice);
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
