//! What this machine offers the GPU executor, found without ever panicking.
//!
//! cudarc loads the CUDA libraries lazily and panics when one is missing, so every check first
//! asks whether the library can be loaded (`is_culib_present`) and runs inside `catch_unwind`.
//!
//! The findings are data ([`Library`], [`Advice`], [`Problem`], [`DeviceInfo`]): their `Display`
//! is the English that `tplab gpu info` prints, and the app renders each variant in the learner's
//! language from the same fields.

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};
use std::fmt;

/// A CUDA library the executor uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Library {
    Driver,
    Nvrtc,
    Cublas,
    Nccl,
}

impl Library {
    pub const ALL: [Library; 4] = [Self::Driver, Self::Nvrtc, Self::Cublas, Self::Nccl];

    /// `CUDA driver`, `NVRTC`, `cuBLAS`, `NCCL`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Driver => "CUDA driver",
            Self::Nvrtc => "NVRTC",
            Self::Cublas => "cuBLAS",
            Self::Nccl => "NCCL",
        }
    }

    /// The file name's stem: `lib{stem}.so`.
    pub fn stem(self) -> &'static str {
        match self {
            Self::Driver => "cuda",
            Self::Nvrtc => "nvrtc",
            Self::Cublas => "cublas",
            Self::Nccl => "nccl",
        }
    }

    /// What the executor needs it for.
    pub fn needed_for(self) -> &'static str {
        match self {
            Self::Driver => "everything on the GPU",
            Self::Nvrtc => "compiling tplab's kernels at run time",
            Self::Cublas => "the matrix products",
            Self::Nccl => "all-reduce across two or more GPUs",
        }
    }

    /// How to get it when it is not on the loader path.
    pub fn how_to_get(self) -> &'static str {
        match self {
            Self::Driver => {
                "install the NVIDIA driver (it provides libcuda.so.1); in a container, run with \
                 the GPU exposed (e.g. `docker run --gpus all`)"
            }
            Self::Nvrtc => {
                "install the CUDA toolkit's NVRTC (libnvrtc.so.13) or `pip install \
                 nvidia-cuda-nvrtc` and add its nvidia/cu13/lib directory to LD_LIBRARY_PATH"
            }
            Self::Cublas => {
                "install the CUDA toolkit's cuBLAS (libcublas.so.13) or `pip install \
                 nvidia-cublas` and add its lib directory to LD_LIBRARY_PATH"
            }
            Self::Nccl => {
                "install NCCL (`apt install libnccl2` or `pip install nvidia-nccl-cu13`); only \
                 needed for runs over two or more GPUs"
            }
        }
    }
}

impl fmt::Display for Library {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What is wrong with a library the executor could not use, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Advice {
    /// No file of that name on the loader path: how to get the library.
    NotFound { library: Library },
    /// Only files with other names (`libnccl.so.2`) where cudarc looks for `looked_for`.
    OnlyVersioned {
        /// The files found, full paths.
        found: Vec<String>,
        looked_for: String,
        /// The name a symlink should have (`libnccl.so`).
        symlink: String,
    },
    /// The file loads but lacks a function cudarc calls.
    LacksSymbol {
        library: Library,
        file: String,
        symbol: String,
    },
    /// The library loads but a call into it fails (the error as reported).
    DoesNotWork { error: String },
}

impl fmt::Display for Advice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFound { library } => write!(
                f,
                "not found on the loader path (LD_LIBRARY_PATH and the system's directories); {}",
                library.how_to_get()
            ),
            Self::OnlyVersioned {
                found,
                looked_for,
                symlink,
            } => write!(
                f,
                "found only as {} but cudarc looks for {looked_for}: make a symlink named \
                 {symlink} next to it (in a directory on LD_LIBRARY_PATH) or set LD_LIBRARY_PATH \
                 so the loader finds one of those names",
                found.join(", ")
            ),
            Self::LacksSymbol {
                library,
                file,
                symbol,
            } => write!(
                f,
                "{file} loads but lacks {symbol}: it is not a complete {library} library, or \
                 older than CUDA 13.0, which tplab's cudarc build expects"
            ),
            Self::DoesNotWork { error } => write!(
                f,
                "the library loads but does not work: {error}; it may be older than CUDA 13.0, \
                 which tplab's cudarc build expects"
            ),
        }
    }
}

/// Why the GPU mode cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// This build has no `cuda` feature.
    NotCompiled,
    /// A library is not there (`file`: the first name cudarc tries).
    Missing { library: Library, file: String },
    /// A library loads but lacks a function.
    Broken {
        library: Library,
        file: String,
        symbol: String,
    },
    /// A library loads but a call into it fails.
    Failing { library: Library, error: String },
    /// The driver loads but listing the devices fails.
    DevicesUnlisted { error: String },
    /// The driver works and sees no device.
    NoDevice,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotCompiled => write!(f, "{}", crate::GpuError::NotCompiled),
            Self::Missing { library, file } => write!(f, "{library} ({file}) is missing"),
            Self::Broken {
                library,
                file,
                symbol,
            } => write!(f, "{library} is broken: {file} loads but lacks {symbol}"),
            Self::Failing { library, error } => {
                write!(f, "{library} loads but does not work: {error}")
            }
            Self::DevicesUnlisted { error } => {
                write!(f, "the driver loads but devices cannot be listed: {error}")
            }
            Self::NoDevice => write!(
                f,
                "no CUDA device is visible (check `nvidia-smi` and CUDA_VISIBLE_DEVICES)"
            ),
        }
    }
}

/// `--json` shows advice and problems as their sentences.
fn as_sentence<T: fmt::Display, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

impl Serialize for Advice {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        as_sentence(self, s)
    }
}

impl Serialize for Problem {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        as_sentence(self, s)
    }
}

/// One CUDA library the executor uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryStatus {
    pub library: Library,
    /// The file names cudarc tries, e.g. `libnvrtc.so`, `libnvrtc.so.13`.
    pub looked_for: String,
    pub found: bool,
    /// Version reported by the library, e.g. `13.0`.
    pub version: Option<String>,
    /// What is missing and how to get it (absent when found and working).
    pub advice: Option<Advice>,
}

impl LibraryStatus {
    /// A library that loads and reports `version`.
    pub fn found(library: Library, looked_for: &str, version: &str) -> Self {
        Self {
            library,
            looked_for: looked_for.to_string(),
            found: true,
            version: Some(version.to_string()),
            advice: None,
        }
    }

    /// A library the executor cannot use, and what to do about it.
    pub fn missing(library: Library, looked_for: &str, advice: Advice) -> Self {
        Self {
            library,
            looked_for: looked_for.to_string(),
            found: false,
            version: None,
            advice: Some(advice),
        }
    }

    /// `CUDA driver`, `NVRTC`, `cuBLAS`, `NCCL`.
    pub fn name(&self) -> &'static str {
        self.library.name()
    }
}

/// As before the findings were data: `name` and `needed_for` as strings.
impl Serialize for LibraryStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("LibraryStatus", 6)?;
        st.serialize_field("name", self.library.name())?;
        st.serialize_field("looked_for", &self.looked_for)?;
        st.serialize_field("found", &self.found)?;
        st.serialize_field("version", &self.version)?;
        st.serialize_field("advice", &self.advice)?;
        st.serialize_field("needed_for", self.library.needed_for())?;
        st.end()
    }
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

impl DeviceInfo {
    /// Total memory in GiB.
    pub fn total_gib(&self) -> f64 {
        self.total_memory_bytes as f64 / (1u64 << 30) as f64
    }

    /// Free memory in GiB.
    pub fn free_gib(&self) -> f64 {
        self.free_memory_bytes as f64 / (1u64 << 30) as f64
    }
}

/// `GPU 0: NVIDIA H200 — compute capability 9.0, 139.8 GiB total, 139.2 GiB free`.
impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "GPU {}: {} — compute capability {}.{}, {:.1} GiB total, {:.1} GiB free",
            self.ordinal,
            self.name,
            self.compute_capability.0,
            self.compute_capability.1,
            self.total_gib(),
            self.free_gib()
        )
    }
}

/// The probe's findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Probe {
    /// Whether this build has the `cuda` feature.
    pub compiled_with_cuda: bool,
    pub libraries: Vec<LibraryStatus>,
    pub devices: Vec<DeviceInfo>,
    /// What stands in the way (empty when the GPU mode is ready).
    pub problems: Vec<Problem>,
}

impl Probe {
    fn lib(&self, library: Library) -> bool {
        self.libraries
            .iter()
            .any(|l| l.library == library && l.found)
    }

    /// Single-device runs need the driver, NVRTC, cuBLAS and one device.
    pub fn usable(&self) -> bool {
        self.compiled_with_cuda
            && self.lib(Library::Driver)
            && self.lib(Library::Nvrtc)
            && self.lib(Library::Cublas)
            && !self.devices.is_empty()
    }

    /// One rank per device additionally needs NCCL and two devices.
    pub fn multi_gpu_ready(&self) -> bool {
        self.usable() && self.lib(Library::Nccl) && self.devices.len() >= 2
    }

    /// A one-line state for status bars: `ready: 1 device(s): NVIDIA H200` or the first problem.
    pub fn headline(&self) -> String {
        if self.usable() {
            let names: Vec<&str> = self.devices.iter().map(|d| d.name.as_str()).collect();
            format!("ready: {} device(s): {}", names.len(), names.join(", "))
        } else {
            match self.problems.first() {
                Some(p) => format!("unavailable: {p}"),
                None => "unavailable: unknown reason".to_string(),
            }
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
                l.name(),
                if l.found { "found" } else { "MISSING" },
                l.version.as_deref().unwrap_or("-"),
                l.library.needed_for(),
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
            let _ = writeln!(s, "  {d}");
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

/// The advice for a library that cudarc could not load, `looked_for` being the names it tries.
pub fn missing_advice(library: Library, looked_for: &str) -> Advice {
    missing_advice_for(library, library.stem(), looked_for)
}

fn missing_advice_for(library: Library, stem: &str, looked_for: &str) -> Advice {
    let present = find_library_files(stem);
    if present.is_empty() {
        Advice::NotFound { library }
    } else {
        Advice::OnlyVersioned {
            found: present.iter().map(|p| p.display().to_string()).collect(),
            looked_for: looked_for.to_string(),
            symlink: format!("lib{stem}.so"),
        }
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
            problems: vec![Problem::NotCompiled],
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
                assert!(l.advice.is_some(), "{} missing without advice", l.name());
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
        let a = missing_advice_for(Library::Nccl, "tplabfake", "libtplabfake.so").to_string();
        match old {
            Some(o) => std::env::set_var("LD_LIBRARY_PATH", o),
            None => std::env::remove_var("LD_LIBRARY_PATH"),
        }
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            a.contains("libtplabfake.so.2") && a.contains("symlink named libtplabfake.so "),
            "{a}"
        );
        let b = missing_advice_for(Library::Nccl, "tplabfake-absent", "libx.so").to_string();
        assert!(
            b.contains("not found") && b.contains(Library::Nccl.how_to_get()),
            "{b}"
        );
    }

    /// The headline names the first problem in its own sentence.
    #[test]
    fn headline_is_the_first_problem() {
        let mut p = Probe {
            compiled_with_cuda: true,
            libraries: Vec::new(),
            devices: Vec::new(),
            problems: vec![
                Problem::Missing {
                    library: Library::Cublas,
                    file: "libcublas.so".into(),
                },
                Problem::NoDevice,
            ],
        };
        assert_eq!(
            p.headline(),
            "unavailable: cuBLAS (libcublas.so) is missing"
        );
        p.problems.clear();
        assert_eq!(p.headline(), "unavailable: unknown reason");
    }
}
