//! What this machine offers the GPU executor, found without ever panicking.
//!
//! cudarc loads the CUDA libraries lazily and panics when one is missing, so every check first
//! asks whether the library can be loaded (`is_culib_present`) and runs inside `catch_unwind`.

use serde::Serialize;

/// One CUDA library the executor uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LibraryStatus {
    /// `CUDA driver`, `NVRTC`, `cuBLAS`, `NCCL`.
    pub name: &'static str,
    /// The file names cudarc tries, e.g. `libnvrtc.so`, `libnvrtc.so.13`.
    pub looked_for: String,
    pub found: bool,
    /// Version reported by the library, e.g. `13.0`.
    pub version: Option<String>,
    /// What is missing and how to get it (absent when found and working).
    pub advice: Option<String>,
    /// What the executor needs it for.
    pub needed_for: &'static str,
}

/// One CUDA device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    pub total_memory_bytes: u64,
    pub free_memory_bytes: u64,
    pub compute_capability: (i32, i32),
}

/// The probe's findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe {
    /// Whether this build has the `cuda` feature.
    pub compiled_with_cuda: bool,
    pub libraries: Vec<LibraryStatus>,
    pub devices: Vec<DeviceInfo>,
    /// Problems in plain sentences (empty when the GPU mode is ready).
    pub problems: Vec<String>,
}

impl Probe {
    fn lib(&self, name: &str) -> bool {
        self.libraries.iter().any(|l| l.name == name && l.found)
    }

    /// Single-device runs need the driver, NVRTC, cuBLAS and one device.
    pub fn usable(&self) -> bool {
        self.compiled_with_cuda
            && self.lib("CUDA driver")
            && self.lib("NVRTC")
            && self.lib("cuBLAS")
            && !self.devices.is_empty()
    }

    /// One rank per device additionally needs NCCL and two devices.
    pub fn multi_gpu_ready(&self) -> bool {
        self.usable() && self.lib("NCCL") && self.devices.len() >= 2
    }

    /// A one-line state for status bars: `ready: 1 × NVIDIA H200` or the first problem.
    pub fn headline(&self) -> String {
        if self.usable() {
            let names: Vec<&str> = self.devices.iter().map(|d| d.name.as_str()).collect();
            format!("ready: {} device(s): {}", names.len(), names.join(", "))
        } else {
            format!(
                "unavailable: {}",
                self.problems
                    .first()
                    .map(String::as_str)
                    .unwrap_or("unknown reason")
            )
        }
    }

    /// A report for terminals: libraries, devices and advice.
    pub fn report(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "CUDA support compiled in: {}",
            if self.compiled_with_cuda { "yes" } else { "no" }
        );
        for l in &self.libraries {
            let _ = writeln!(
                s,
                "  {:<12} {:<8} {:<9} needed for {}",
                l.name,
                if l.found { "found" } else { "MISSING" },
                l.version.as_deref().unwrap_or("-"),
                l.needed_for,
            );
            if let Some(a) = &l.advice {
                let _ = writeln!(s, "      looked for: {}", l.looked_for);
                let _ = writeln!(s, "      -> {a}");
            }
        }
        if self.devices.is_empty() {
            let _ = writeln!(s, "Devices: none");
        }
        for d in &self.devices {
            let _ = writeln!(
                s,
                "  GPU {}: {} — compute capability {}.{}, {:.1} GiB total, {:.1} GiB free",
                d.ordinal,
                d.name,
                d.compute_capability.0,
                d.compute_capability.1,
                d.total_memory_bytes as f64 / (1u64 << 30) as f64,
                d.free_memory_bytes as f64 / (1u64 << 30) as f64
            );
        }
        let _ = writeln!(s, "{}", self.headline());
        if self.problems.len() > 1 {
            let _ = writeln!(
                s,
                "  ({} problems in all, listed above)",
                self.problems.len()
            );
        }
        s
    }
}

/// Directories where a shared library may live: `LD_LIBRARY_PATH` and the usual system places.
pub fn library_dirs() -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<std::path::PathBuf> = std::env::var_os("LD_LIBRARY_PATH")
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    for d in [
        "/usr/local/cuda/lib64",
        "/usr/local/nvidia/lib64",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
    ] {
        dirs.push(d.into());
    }
    dirs
}

/// Files in [`library_dirs`] whose name starts with `lib{stem}.so` (e.g. `libnccl.so.2`).
pub fn find_library_files(stem: &str) -> Vec<std::path::PathBuf> {
    let prefix = format!("lib{stem}.so");
    let mut out = Vec::new();
    for d in library_dirs() {
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    out.push(e.path());
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The advice for a library that cudarc could not load.
pub fn missing_advice(stem: &str, looked_for: &str, how_to_get: &str) -> String {
    let present = find_library_files(stem);
    if present.is_empty() {
        format!("not found on the loader path (LD_LIBRARY_PATH and the system's directories); {how_to_get}")
    } else {
        let names: Vec<String> = present.iter().map(|p| p.display().to_string()).collect();
        format!(
            "found only as {} but cudarc looks for {looked_for}: make a symlink named lib{stem}.so \
             next to it (in a directory on LD_LIBRARY_PATH) or set LD_LIBRARY_PATH so the loader \
             finds one of those names",
            names.join(", ")
        )
    }
}

/// Probes the machine. Never panics; safe to call from a UI thread (it takes milliseconds).
pub fn probe() -> Probe {
    #[cfg(feature = "cuda")]
    {
        crate::cuda::probe::probe_cuda()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Probe {
            compiled_with_cuda: false,
            libraries: Vec::new(),
            devices: Vec::new(),
            problems: vec![crate::GpuError::NotCompiled.to_string()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine has no GPU driver: the probe must say so with reasons, never panic.
    #[test]
    fn probe_never_panics_and_explains() {
        let p = probe();
        let report = p.report();
        if !p.usable() {
            assert!(
                !p.problems.is_empty(),
                "unusable without a reason:\n{report}"
            );
            assert!(report.contains("unavailable"), "{report}");
            for l in p.libraries.iter().filter(|l| !l.found) {
                assert!(l.advice.is_some(), "{} missing without advice", l.name);
            }
        } else {
            assert!(!p.devices.is_empty());
        }
        // Probing twice gives the same answer (library state is cached, not corrupted by a panic).
        assert_eq!(probe().usable(), p.usable());
    }

    #[test]
    fn advice_mentions_symlink_when_only_versioned_file_exists() {
        let dir = std::env::temp_dir().join(format!("tplab-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("libtplabfake.so.2"), b"").unwrap();
        let old = std::env::var_os("LD_LIBRARY_PATH");
        // Only this test reads the fake stem, so the shared environment change is harmless.
        let mut paths = vec![dir.clone()];
        if let Some(o) = &old {
            paths.extend(std::env::split_paths(o));
        }
        let joined = std::env::join_paths(paths).unwrap();
        std::env::set_var("LD_LIBRARY_PATH", &joined);
        let a = missing_advice("tplabfake", "libtplabfake.so", "install it");
        match old {
            Some(o) => std::env::set_var("LD_LIBRARY_PATH", o),
            None => std::env::remove_var("LD_LIBRARY_PATH"),
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            a.contains("libtplabfake.so.2") && a.contains("symlink"),
            "{a}"
        );
        let b = missing_advice("tplabfake-absent", "libx.so", "install it");
        assert!(b.contains("not found") && b.contains("install it"), "{b}");
    }
}
