//! Saved progress per learner: answers, scores and exam results.
//!
//! Files live in the platform's data folder (`TPLAB_DATA_DIR` overrides it), one JSON file per
//! learner under `learners/`. Every write is atomic: a temp file in the same folder, fsync,
//! rename over the old file, fsync of the folder; the previous good file is kept as `.bak`.
//! A file that does not parse is moved aside as `.corrupt-<unix time>` and the learner is told;
//! the last good copy is used instead, so a kill in the middle of a write loses nothing saved.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use thiserror::Error;
use tplab_lessons::Lang;

/// Environment variable that overrides the data folder.
pub const DATA_DIR_ENV: &str = "TPLAB_DATA_DIR";

/// Current file format.
pub const SCHEMA: u32 = 1;

/// Why progress could not be read or written.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("no data folder on this platform; set {DATA_DIR_ENV} to a writable folder")]
    NoDataDir,
    #[error("a learner needs a name (letters or digits); pass --name NAME")]
    EmptyName,
    #[error("cannot {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot encode progress: {0}")]
    Encode(#[from] serde_json::Error),
}

fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// One answered question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerRecord {
    pub question_id: String,
    pub correct: bool,
    pub lang: Lang,
    /// Part of an exam sitting.
    pub exam: bool,
    pub at_unix_s: u64,
}

/// One exam sitting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExamRecord {
    pub version: String,
    pub correct: usize,
    pub total: usize,
    pub score_percent: f64,
    pub passed: bool,
    pub at_unix_s: u64,
    /// The certificate issued for this sitting, if it passed.
    pub certificate_id: Option<String>,
}

/// Everything saved for one learner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub schema: u32,
    pub learner: String,
    /// Last language used.
    pub lang: Option<Lang>,
    pub answers: Vec<AnswerRecord>,
    pub exams: Vec<ExamRecord>,
    /// Slugs of lessons opened.
    pub lessons_read: BTreeSet<String>,
}

impl Progress {
    pub fn new(learner: &str) -> Self {
        Self {
            schema: SCHEMA,
            learner: learner.trim().to_string(),
            lang: None,
            answers: Vec::new(),
            exams: Vec::new(),
            lessons_read: BTreeSet::new(),
        }
    }

    /// Right answers and answers in total, outside exams.
    pub fn practice_score(&self) -> (usize, usize) {
        let practice = self.answers.iter().filter(|a| !a.exam);
        let total = practice.clone().count();
        (practice.filter(|a| a.correct).count(), total)
    }

    /// The best passed sitting, if any.
    pub fn best_pass(&self) -> Option<&ExamRecord> {
        self.exams
            .iter()
            .filter(|e| e.passed)
            .max_by(|a, b| a.score_percent.total_cmp(&b.score_percent))
    }
}

/// What [`Store::load`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub progress: Progress,
    /// Problems the learner must be told about (a corrupt file moved aside, a restore).
    pub warnings: Vec<String>,
}

/// The data folder.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// `$TPLAB_DATA_DIR`, else the platform's data folder (e.g. `~/.local/share/tplab`).
    pub fn from_env() -> Result<Self, StoreError> {
        if let Some(dir) = std::env::var_os(DATA_DIR_ENV).filter(|d| !d.is_empty()) {
            return Ok(Self::at(PathBuf::from(dir)));
        }
        directories::ProjectDirs::from("org", "tplab", "tplab")
            .map(|d| Self::at(d.data_dir().to_path_buf()))
            .ok_or(StoreError::NoDataDir)
    }

    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where certificates are written.
    pub fn certificates_dir(&self) -> PathBuf {
        self.root.join("certificates")
    }

    /// The learner's progress file.
    pub fn learner_path(&self, name: &str) -> Result<PathBuf, StoreError> {
        Ok(self
            .root
            .join("learners")
            .join(format!("{}.json", learner_slug(name)?)))
    }

    /// Loads a learner's progress (a fresh record if there is none). Never fails because of a
    /// damaged file: it is moved aside, the `.bak` copy is used, and a warning says so.
    pub fn load(&self, name: &str) -> Result<Loaded, StoreError> {
        let path = self.learner_path(name)?;
        let mut warnings = Vec::new();
        remove_stale_temps(&path);
        if let Some(p) = read_checked(&path, &mut warnings)? {
            return Ok(Loaded {
                progress: p,
                warnings,
            });
        }
        let bak = bak_path(&path);
        if let Some(p) = read_checked(&bak, &mut warnings)? {
            warnings.push(format!(
                "restored your progress from the last good copy {}",
                bak.display()
            ));
            return Ok(Loaded {
                progress: p,
                warnings,
            });
        }
        Ok(Loaded {
            progress: Progress::new(name),
            warnings,
        })
    }

    /// Saves atomically, keeping the previous good file as `.bak`.
    pub fn save(&self, p: &Progress) -> Result<PathBuf, StoreError> {
        self.save_inner(p, false)
    }

    fn save_inner(&self, p: &Progress, crash_before_rename: bool) -> Result<PathBuf, StoreError> {
        let path = self.learner_path(&p.learner)?;
        let bytes = serde_json::to_vec_pretty(p)?;
        if let Ok(old) = fs::read(&path) {
            if serde_json::from_slice::<Progress>(&old).is_ok() {
                write_atomic(&bak_path(&path), &old)?;
            }
        }
        write_atomic_inner(&path, &bytes, crash_before_rename)?;
        Ok(path)
    }
}

fn bak_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".bak");
    PathBuf::from(s)
}

/// Reads and parses `path`; a file that exists but does not parse is moved aside with a warning.
fn read_checked(path: &Path, warnings: &mut Vec<String>) -> Result<Option<Progress>, StoreError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("read", path)(e)),
    };
    match serde_json::from_slice::<Progress>(&bytes) {
        Ok(p) => Ok(Some(p)),
        Err(err) => {
            let aside = move_aside(path)?;
            warnings.push(format!(
                "your progress file {} was damaged ({err}); it was moved to {} and nothing else was changed",
                path.display(),
                aside.display()
            ));
            Ok(None)
        }
    }
}

fn move_aside(path: &Path) -> Result<PathBuf, StoreError> {
    let stamp = crate::time::unix_now_s();
    let mut n = 0;
    loop {
        let mut s = path.as_os_str().to_owned();
        s.push(format!(".corrupt-{stamp}"));
        if n > 0 {
            s.push(format!("-{n}"));
        }
        let target = PathBuf::from(s);
        if !target.exists() {
            fs::rename(path, &target).map_err(io("move aside", path))?;
            return Ok(target);
        }
        n += 1;
    }
}

/// Removes temp files a killed save left next to `path` (the saved file itself is untouched).
fn remove_stale_temps(path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let prefix = format!("{}.tmp-", name.to_string_lossy());
    let bak_prefix = format!("{}.bak.tmp-", name.to_string_lossy());
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with(&prefix) || n.starts_with(&bak_prefix) {
                let _ = fs::remove_file(e.path());
            }
        }
    }
}

/// Writes `bytes` to `path` atomically: temp file in the same folder, fsync, rename, fsync of
/// the folder. Readers see the old file or the new one, never a mix.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    write_atomic_inner(path, bytes, false)
}

fn write_atomic_inner(
    path: &Path,
    bytes: &[u8],
    crash_before_rename: bool,
) -> Result<(), StoreError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(io("create folder", dir))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}-{nanos}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(io("create", &tmp))?;
        f.write_all(bytes).map_err(io("write", &tmp))?;
        f.sync_all().map_err(io("sync", &tmp))?;
    }
    if crash_before_rename {
        return Ok(());
    }
    fs::rename(&tmp, path).map_err(io("replace", path))?;
    #[cfg(unix)]
    {
        fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io("sync folder", dir))?;
    }
    Ok(())
}

/// A file-name-safe, collision-resistant name for a learner: readable ASCII letters of the name
/// plus 8 hex digits of its SHA-256 (`Şule Öz` → `sule-oz-1a2b3c4d`).
pub fn learner_slug(name: &str) -> Result<String, StoreError> {
    let name = name.trim();
    if !name.chars().any(char::is_alphanumeric) {
        return Err(StoreError::EmptyName);
    }
    let mut readable = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        let mapped = match c {
            'ş' => 's',
            'ğ' => 'g',
            'ı' => 'i',
            'ü' => 'u',
            'ö' => 'o',
            'ç' => 'c',
            c if c.is_ascii_alphanumeric() => c,
            _ => '-',
        };
        if mapped == '-' && (readable.is_empty() || readable.ends_with('-')) {
            continue;
        }
        readable.push(mapped);
    }
    let readable: String = readable.trim_end_matches('-').chars().take(40).collect();
    let hash = Sha256::digest(name.as_bytes());
    let hex: String = hash[..4].iter().map(|b| format!("{b:02x}")).collect();
    Ok(if readable.is_empty() {
        hex
    } else {
        format!("{readable}-{hex}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str, answers: usize) -> Progress {
        let mut p = Progress::new(name);
        for i in 0..answers {
            p.answers.push(AnswerRecord {
                question_id: format!("q{i}"),
                correct: i % 2 == 0,
                lang: Lang::Tr,
                exam: false,
                at_unix_s: 1_700_000_000 + i as u64,
            });
        }
        p
    }

    #[test]
    fn round_trip_and_bak() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        let fresh = store.load("Ayşe").unwrap();
        assert_eq!(fresh.progress, Progress::new("Ayşe"));
        assert!(fresh.warnings.is_empty());
        store.save(&sample("Ayşe", 2)).unwrap();
        let path = store.save(&sample("Ayşe", 3)).unwrap();
        let loaded = store.load("Ayşe").unwrap();
        assert_eq!(loaded.progress, sample("Ayşe", 3));
        assert!(loaded.warnings.is_empty());
        let bak: Progress = serde_json::from_slice(&fs::read(bak_path(&path)).unwrap()).unwrap();
        assert_eq!(bak, sample("Ayşe", 2), ".bak holds the previous good copy");
        assert_eq!(sample("Ayşe", 3).practice_score(), (2, 3));
    }

    #[test]
    fn corrupt_file_is_moved_aside_and_bak_restored() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        store.save(&sample("Ali", 4)).unwrap();
        let path = store.save(&sample("Ali", 5)).unwrap();
        fs::write(&path, b"{\"schema\": 1, \"learner\": \"Al").unwrap(); // truncated
        let loaded = store.load("Ali").unwrap();
        assert_eq!(loaded.progress, sample("Ali", 4), "the last good copy");
        assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
        assert!(loaded.warnings[0].contains("damaged"));
        assert!(loaded.warnings[1].contains("last good copy"));
        let aside: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".corrupt-"))
            .collect();
        assert_eq!(aside.len(), 1);
        let kept = fs::read(path.parent().unwrap().join(&aside[0])).unwrap();
        assert_eq!(
            kept, b"{\"schema\": 1, \"learner\": \"Al",
            "the damaged bytes are kept"
        );
        // Saving again works and the next load is clean.
        store.save(&sample("Ali", 6)).unwrap();
        let again = store.load("Ali").unwrap();
        assert_eq!(again.progress, sample("Ali", 6));
        assert!(again.warnings.is_empty());
    }

    #[test]
    fn corrupt_without_bak_starts_fresh_and_leaves_others_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        store.save(&sample("Other", 2)).unwrap();
        let path = store.learner_path("Zeynep").unwrap();
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, b"not json").unwrap();
        let loaded = store.load("Zeynep").unwrap();
        assert_eq!(loaded.progress, Progress::new("Zeynep"));
        assert_eq!(loaded.warnings.len(), 1);
        assert_eq!(store.load("Other").unwrap().progress, sample("Other", 2));
    }

    #[test]
    fn interrupted_write_loses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        let path = store.save(&sample("Mehmet", 3)).unwrap();
        // A save killed after writing its temp file but before the rename.
        store.save_inner(&sample("Mehmet", 9), true).unwrap();
        let temps = || {
            fs::read_dir(path.parent().unwrap())
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
                .count()
        };
        assert_eq!(temps(), 1, "the killed save left its temp file");
        let loaded = store.load("Mehmet").unwrap();
        assert_eq!(
            loaded.progress,
            sample("Mehmet", 3),
            "what was saved is intact"
        );
        assert!(loaded.warnings.is_empty());
        assert_eq!(temps(), 0, "stale temp files are cleaned up");
        // A half-written temp file from a non-atomic writer never replaces the real file.
        let mut partial = path.as_os_str().to_owned();
        partial.push(".tmp-1-2");
        fs::write(PathBuf::from(partial), b"{\"sch").unwrap();
        assert_eq!(store.load("Mehmet").unwrap().progress, sample("Mehmet", 3));
    }

    /// Set in the child process of `killed_writer_loses_nothing`: save in a loop until killed.
    const WRITER_ENV: &str = "TPLAB_TEST_KILLED_WRITER_DIR";

    #[test]
    fn killed_writer_loses_nothing() {
        if let Some(dir) = std::env::var_os(WRITER_ENV) {
            let store = Store::at(PathBuf::from(dir));
            for i in 0.. {
                store.save(&sample("Kill", i % 40 + 1)).unwrap();
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        store.save(&sample("Kill", 1)).unwrap();
        for wait_ms in [30, 80, 150, 260] {
            // This same test binary, running only this test, in writer mode; SIGKILL it mid-loop.
            let mut child = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "progress::tests::killed_writer_loses_nothing",
                    "--exact",
                    "--nocapture",
                ])
                .env(WRITER_ENV, dir.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(wait_ms));
            child.kill().unwrap();
            child.wait().unwrap();
            let loaded = store.load("Kill").unwrap();
            assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
            let n = loaded.progress.answers.len();
            assert!((1..=40).contains(&n));
            assert_eq!(
                loaded.progress,
                sample("Kill", n),
                "a complete saved version"
            );
        }
    }

    #[test]
    fn slugs_are_safe_and_distinct() {
        assert!(learner_slug("Şule Öz").unwrap().starts_with("sule-oz-"));
        assert_ne!(learner_slug("a/b").unwrap(), learner_slug("a b").unwrap());
        assert!(!learner_slug("../../etc").unwrap().contains('/'));
        assert!(matches!(learner_slug("  "), Err(StoreError::EmptyName)));
        assert_eq!(learner_slug("漢字").unwrap().len(), 8);
    }

    #[test]
    fn env_override() {
        // Only this test touches the variable in this crate.
        std::env::set_var(DATA_DIR_ENV, "/tmp/tplab-env-test");
        assert_eq!(
            Store::from_env().unwrap().root(),
            Path::new("/tmp/tplab-env-test")
        );
        std::env::remove_var(DATA_DIR_ENV);
    }
}
