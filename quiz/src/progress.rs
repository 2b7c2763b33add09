//! Saved progress per learner: answers, scores and exam results.
//!
//! Files live in the platform's data folder (`TPLAB_DATA_DIR` overrides it), one JSON file per
//! learner under `learners/`, named after the learner asked for ([`learner_slug`]); a file whose
//! inside names another learner is refused, never used or saved over. Every change goes through
//! [`Store::update`]: take an advisory lock on `<file>.lock` (`fs4`), re-read the file, apply the
//! change, write atomically (a temp file in the same folder, fsync, rename over the old file,
//! fsync of the folder, the previous good file kept as `.bak`), unlock. Two sessions on one
//! learner therefore never lose each other's answers, and a kill in the middle of a write loses
//! nothing saved. A file that does not parse is moved aside as `.corrupt-<unix time>` and the
//! learner is told; the last good copy is used instead. A file written by a newer tplab (a higher
//! `schema`) is refused with a message and left untouched.

// No file locks in a browser (wasm32): the web edition keeps progress in local storage instead
// (tplab's app/src/platform/web.rs), and this store's file calls fail there with "unsupported".
use crate::cert::Certificate;
use crate::exam::ExamScore;
#[cfg(not(target_arch = "wasm32"))]
use fs4::fs_std::FileExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use thiserror::Error;
use tplab_lessons::Lang;

/// Environment variable that overrides the data folder.
pub const DATA_DIR_ENV: &str = "TPLAB_DATA_DIR";

/// Current file format. 2 added the exam sitting's seed and signer; schema-1 files still load.
pub const SCHEMA: u32 = 2;

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
    #[error("{0}; move it away and try again")]
    Input(tplab_engine::capacity::models::InputFileError),
    #[error("cannot encode progress: {0}")]
    Encode(#[from] serde_json::Error),
    #[error(
        "{} was written by a newer tplab (file schema {found}; this one reads up to {SCHEMA}); \
         it was left untouched: update tplab to continue with this learner",
        path.display()
    )]
    NewerSchema { path: PathBuf, found: u32 },
    #[error(
        "{} holds the progress of '{found}', not of '{asked}'; it was left untouched and \
         nothing was saved: move that file away, or use --name with the learner it belongs to",
        path.display()
    )]
    OtherLearner {
        path: PathBuf,
        found: String,
        asked: String,
    },
}

fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// Why bytes are not a progress file this tplab can read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ParseError {
    #[error("written by a newer tplab (schema {0}; this one reads up to {SCHEMA})")]
    Newer(u32),
    #[error("{0}")]
    Invalid(String),
}

/// Reads a progress file's bytes: the schema first (a newer one is refused before anything else
/// is read), then the whole record. Never panics, whatever the bytes.
pub fn parse(bytes: &[u8]) -> Result<Progress, ParseError> {
    #[derive(Deserialize)]
    struct Head {
        schema: u32,
    }
    let head: Head =
        serde_json::from_slice(bytes).map_err(|e| ParseError::Invalid(e.to_string()))?;
    if head.schema > SCHEMA {
        return Err(ParseError::Newer(head.schema));
    }
    if head.schema == 0 {
        return Err(ParseError::Invalid("schema 0 does not exist".into()));
    }
    serde_json::from_slice(bytes).map_err(|e| ParseError::Invalid(e.to_string()))
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
    /// The certificate issued for this sitting, if it passed and one was written.
    pub certificate_id: Option<String>,
    /// The sitting's seed: it re-creates the questions asked (schema 2).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Fingerprint of the issuer key that signed the certificate, if any (schema 2).
    #[serde(default)]
    pub signed_by: Option<String>,
}

impl ExamRecord {
    /// The record of a sitting of exam `version` drawn with `seed`, scored `score` at
    /// `at_unix_s`, with the certificate issued for it, if any (and the fingerprint of the key
    /// that signed that certificate).
    pub fn new(
        version: &str,
        score: &ExamScore,
        at_unix_s: u64,
        seed: u64,
        certificate: Option<&Certificate>,
    ) -> Self {
        ExamRecord {
            version: version.to_string(),
            correct: score.correct,
            total: score.total,
            score_percent: score.score_percent,
            passed: score.passed,
            at_unix_s,
            certificate_id: certificate.map(|c| c.id.clone()),
            seed: Some(seed),
            signed_by: certificate
                .and_then(Certificate::issuer)
                .map(|k| k.fingerprint()),
        }
    }
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
    /// The design lab's challenges solved: challenge id → the best grade (older files have none).
    #[serde(default)]
    pub challenges: BTreeMap<String, ChallengeRecord>,
}

/// The best grade of one design-lab challenge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChallengeRecord {
    /// 1 to 3 (the engine's grade).
    pub stars: u8,
    pub at_unix_s: u64,
}

impl Progress {
    /// Records a solved challenge, keeping the better of the saved and the new stars.
    pub fn record_challenge(&mut self, id: &str, stars: u8, at_unix_s: u64) {
        let stars = stars.min(3);
        match self.challenges.get_mut(id) {
            Some(r) if r.stars >= stars => {}
            _ => {
                self.challenges
                    .insert(id.to_string(), ChallengeRecord { stars, at_unix_s });
            }
        }
    }
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
            challenges: BTreeMap::new(),
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

    /// Where `tplab cert keygen` puts the issuer's secret key by default, and where the exam
    /// looks for one when neither `--issuer-key` nor `TPLAB_ISSUER_KEY` names another.
    pub fn issuer_key_path(&self) -> PathBuf {
        self.root.join("issuer.key")
    }

    /// The learner's progress file: chosen by the name asked for, never by a file's content.
    pub fn learner_path(&self, name: &str) -> Result<PathBuf, StoreError> {
        Ok(self
            .root
            .join("learners")
            .join(format!("{}.json", learner_slug(name)?)))
    }

    /// Loads a learner's progress (a fresh record if there is none). A damaged file is moved
    /// aside, the `.bak` copy is used, and a warning says so. Refuses (and leaves untouched) a
    /// file of a newer schema or one that names another learner.
    pub fn load(&self, name: &str) -> Result<Loaded, StoreError> {
        let path = self.learner_path(name)?;
        let _lock = Lock::take(&path)?;
        load_locked(&path, name)
    }

    /// Applies `change` to the learner's saved progress under the file lock: lock, re-read,
    /// change, write atomically, unlock. Changes made meanwhile by another session are kept,
    /// because `change` runs on what is on disk now. Returns the saved progress.
    pub fn update(
        &self,
        name: &str,
        change: impl FnOnce(&mut Progress),
    ) -> Result<Loaded, StoreError> {
        let path = self.learner_path(name)?;
        let _lock = Lock::take(&path)?;
        let mut loaded = load_locked(&path, name)?;
        change(&mut loaded.progress);
        loaded.progress.schema = SCHEMA;
        save_locked(&path, &loaded.progress, false)?;
        Ok(loaded)
    }

    /// Replaces the learner's saved progress with `p` under the file lock (prefer
    /// [`Store::update`], which keeps what other sessions saved). `p` must be `name`'s.
    pub fn save(&self, name: &str, p: &Progress) -> Result<PathBuf, StoreError> {
        self.save_inner(name, p, false)
    }

    fn save_inner(
        &self,
        name: &str,
        p: &Progress,
        crash_before_rename: bool,
    ) -> Result<PathBuf, StoreError> {
        let path = self.learner_path(name)?;
        if p.learner.trim() != name.trim() {
            return Err(StoreError::OtherLearner {
                path,
                found: p.learner.clone(),
                asked: name.trim().to_string(),
            });
        }
        let _lock = Lock::take(&path)?;
        // Refuse to replace a newer or another learner's file.
        load_locked(&path, name)?;
        save_locked(&path, p, crash_before_rename)?;
        Ok(path)
    }
}

/// An advisory exclusive lock on `<file>.lock`, released when dropped (also when the process
/// dies: the OS drops the lock with the file descriptor).
struct Lock(fs::File);

impl Lock {
    fn take(path: &Path) -> Result<Self, StoreError> {
        let dir = path.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(io("create folder", dir))?;
        let lock_path = suffixed(path, ".lock");
        // Opening a FIFO for writing blocks until someone reads it: refused before opening.
        tplab_engine::capacity::models::check_regular_file(&lock_path, "lock")
            .map_err(StoreError::Input)?;
        let f = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io("open the lock file", &lock_path))?;
        #[cfg(not(target_arch = "wasm32"))]
        FileExt::lock_exclusive(&f).map_err(io("lock", &lock_path))?;
        Ok(Self(f))
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        #[cfg(not(target_arch = "wasm32"))]
        let _ = FileExt::unlock(&self.0);
    }
}

/// [`Store::load`] with the lock held.
fn load_locked(path: &Path, name: &str) -> Result<Loaded, StoreError> {
    let mut warnings = Vec::new();
    remove_stale_temps(path);
    let asked = name.trim();
    let mine = |p: Progress, file: &Path| {
        if p.learner.trim() == asked {
            Ok(p)
        } else {
            Err(StoreError::OtherLearner {
                path: file.to_path_buf(),
                found: p.learner,
                asked: asked.to_string(),
            })
        }
    };
    if let Some(p) = read_checked(path, &mut warnings)? {
        return Ok(Loaded {
            progress: mine(p, path)?,
            warnings,
        });
    }
    let bak = bak_path(path);
    if let Some(p) = read_checked(&bak, &mut warnings)? {
        warnings.push(format!(
            "restored your progress from the last good copy {}",
            bak.display()
        ));
        return Ok(Loaded {
            progress: mine(p, &bak)?,
            warnings,
        });
    }
    Ok(Loaded {
        progress: Progress::new(name),
        warnings,
    })
}

/// Writes `p` to `path` (lock held), keeping the previous good file as `.bak`.
fn save_locked(path: &Path, p: &Progress, crash_before_rename: bool) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec_pretty(p)?;
    if let Ok(Some(old)) = read_bounded(path) {
        if parse(&old).is_ok() {
            write_atomic(&bak_path(path), &old)?;
        }
    }
    write_atomic_inner(path, &bytes, crash_before_rename, false)
}

fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn bak_path(path: &Path) -> PathBuf {
    suffixed(path, ".bak")
}

/// Largest progress file read: 64 MiB (an answer takes about 150 bytes: some 400,000 answers).
pub const MAX_PROGRESS_FILE_BYTES: u64 = 64 << 20;

/// A progress file's bytes, `None` if there is none: a regular file of at most
/// [`MAX_PROGRESS_FILE_BYTES`]; a FIFO, device or folder in its place is refused from its
/// metadata before anything opens it, and left as it is.
fn read_bounded(path: &Path) -> Result<Option<Vec<u8>>, StoreError> {
    use tplab_engine::capacity::models::{read_input_bytes, InputFileError};
    match read_input_bytes(path, "progress", MAX_PROGRESS_FILE_BYTES) {
        Ok(b) => Ok(Some(b)),
        Err(InputFileError::NotFound { .. }) => Ok(None),
        Err(e) => Err(StoreError::Input(e)),
    }
}

/// Reads and parses `path`; a file that exists but does not parse is moved aside with a
/// warning; a newer schema is an error and the file is left as it is.
fn read_checked(path: &Path, warnings: &mut Vec<String>) -> Result<Option<Progress>, StoreError> {
    let Some(bytes) = read_bounded(path)? else {
        return Ok(None);
    };
    match parse(&bytes) {
        Ok(p) => Ok(Some(p)),
        Err(ParseError::Newer(found)) => Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found,
        }),
        Err(ParseError::Invalid(err)) => {
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
    write_atomic_inner(path, bytes, false, false)
}

/// [`write_atomic`] for a secret: the file is created readable and writable by its owner only
/// (mode 0600 on Unix) before any byte is written, and never replaces an existing file unless
/// `replace` is set.
pub fn write_atomic_private(path: &Path, bytes: &[u8], replace: bool) -> Result<(), StoreError> {
    if !replace && path.exists() {
        return Err(StoreError::Io {
            action: "create (it exists; pass --force to replace it)",
            path: path.to_path_buf(),
            source: std::io::Error::from(std::io::ErrorKind::AlreadyExists),
        });
    }
    write_atomic_inner(path, bytes, false, true)
}

/// Writes a secret key and its public key as a pair: both, or neither. Both are first written
/// to temp files beside their targets (the secret one owner-only, mode 0600 on Unix, before any
/// byte), then renamed into place. Without `replace`, nothing is written if either file exists.
/// If anything fails, the temp files are removed and any file already renamed into place is
/// taken back (with `replace`, the old file is put back).
pub fn write_key_pair(
    secret: (&Path, &[u8]),
    public: (&Path, &[u8]),
    replace: bool,
) -> Result<(), StoreError> {
    if !replace {
        for p in [secret.0, public.0] {
            if p.symlink_metadata().is_ok() {
                return Err(StoreError::Io {
                    action: "create (it exists; pass --force to replace it)",
                    path: p.to_path_buf(),
                    source: std::io::Error::from(std::io::ErrorKind::AlreadyExists),
                });
            }
        }
    }
    let secret_tmp = stage(secret.0, secret.1, true)?;
    let public_tmp = match stage(public.0, public.1, false) {
        Ok(t) => t,
        Err(e) => {
            let _ = fs::remove_file(&secret_tmp);
            return Err(e);
        }
    };
    // With `replace`, keep a link to each old file until both new ones are in place.
    let keep = |p: &Path| -> Option<PathBuf> {
        let k = suffixed(p, &format!(".old-{}", std::process::id()));
        let _ = fs::remove_file(&k);
        fs::hard_link(p, &k).ok().map(|()| k)
    };
    let kept = [keep(secret.0), keep(public.0)];
    let mut placed: Vec<&Path> = Vec::new();
    let mut failure = None;
    for (tmp, path) in [(&secret_tmp, secret.0), (&public_tmp, public.0)] {
        match fs::rename(tmp, path) {
            Ok(()) => placed.push(path),
            Err(e) => {
                failure = Some(io("write", path)(e));
                break;
            }
        }
    }
    if let Some(e) = failure {
        for (path, old) in [secret.0, public.0].into_iter().zip(&kept) {
            if placed.contains(&path) {
                match old {
                    Some(old) => {
                        let _ = fs::rename(old, path);
                    }
                    None => {
                        let _ = fs::remove_file(path);
                    }
                }
            }
        }
        for t in [&secret_tmp, &public_tmp] {
            let _ = fs::remove_file(t);
        }
        for k in kept.iter().flatten() {
            let _ = fs::remove_file(k);
        }
        return Err(e);
    }
    for k in kept.iter().flatten() {
        let _ = fs::remove_file(k);
    }
    for p in [secret.0, public.0] {
        sync_parent(p);
    }
    Ok(())
}

/// The folder a path is in: `.` for a bare file name (whose parent is "").
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

fn sync_parent(path: &Path) {
    #[cfg(unix)]
    if let Ok(d) = fs::File::open(parent_dir(path)) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Writes `bytes` to a new temp file beside `path` (created owner-only first if `private`),
/// flushed to disk; returns its path. A failed write removes the temp file.
fn stage(path: &Path, bytes: &[u8], private: bool) -> Result<PathBuf, StoreError> {
    let dir = parent_dir(path);
    fs::create_dir_all(dir).map_err(io("create folder", dir))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut tmp = path.as_os_str().to_owned();
    // Unique among threads too: a counter beside the process id and the clock.
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    tmp.push(format!(".tmp-{}-{nanos}-{n}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = private;
    // The file is closed at the end of this block, before a failed write removes it.
    let written = {
        let mut f = opts.open(&tmp).map_err(io("create", &tmp))?;
        f.write_all(bytes)
            .map_err(io("write", &tmp))
            .and_then(|()| f.sync_all().map_err(io("sync", &tmp)))
    };
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(tmp)
}

fn write_atomic_inner(
    path: &Path,
    bytes: &[u8],
    crash_before_rename: bool,
    private: bool,
) -> Result<(), StoreError> {
    let dir = parent_dir(path);
    let tmp = stage(path, bytes, private)?;
    if crash_before_rename {
        return Ok(());
    }
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(io("replace", path)(e));
    }
    #[cfg(unix)]
    {
        fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io("sync folder", dir))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
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
        store.save("Ayşe", &sample("Ayşe", 2)).unwrap();
        let path = store.save("Ayşe", &sample("Ayşe", 3)).unwrap();
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
        store.save("Ali", &sample("Ali", 4)).unwrap();
        let path = store.save("Ali", &sample("Ali", 5)).unwrap();
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
        store.save("Ali", &sample("Ali", 6)).unwrap();
        let again = store.load("Ali").unwrap();
        assert_eq!(again.progress, sample("Ali", 6));
        assert!(again.warnings.is_empty());
    }

    #[test]
    fn corrupt_without_bak_starts_fresh_and_leaves_others_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        store.save("Other", &sample("Other", 2)).unwrap();
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
        let path = store.save("Mehmet", &sample("Mehmet", 3)).unwrap();
        // A save killed after writing its temp file but before the rename.
        store
            .save_inner("Mehmet", &sample("Mehmet", 9), true)
            .unwrap();
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
                store.save("Kill", &sample("Kill", i % 40 + 1)).unwrap();
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        store.save("Kill", &sample("Kill", 1)).unwrap();
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
    fn a_file_naming_another_learner_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        store.save("Alice", &sample("Alice", 3)).unwrap();
        // Alice's file copied into Bob's place.
        let bob = store.learner_path("Bob").unwrap();
        fs::copy(store.learner_path("Alice").unwrap(), &bob).unwrap();
        let before = fs::read(&bob).unwrap();
        let err = store.load("Bob").unwrap_err();
        assert!(matches!(err, StoreError::OtherLearner { .. }), "{err}");
        assert!(err.to_string().contains("'Alice', not of 'Bob'"), "{err}");
        let err = store
            .update("Bob", |p| {
                p.lessons_read.insert("x".into());
            })
            .unwrap_err();
        assert!(matches!(err, StoreError::OtherLearner { .. }));
        assert_eq!(fs::read(&bob).unwrap(), before, "Bob's file untouched");
        assert_eq!(store.load("Alice").unwrap().progress, sample("Alice", 3));
        // Saving someone else's record under a name is refused too.
        assert!(matches!(
            store.save("Carol", &sample("Alice", 1)),
            Err(StoreError::OtherLearner { .. })
        ));
        assert!(!store.learner_path("Carol").unwrap().exists());
    }

    #[test]
    fn a_newer_schema_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        let path = store.learner_path("Nur").unwrap();
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let newer = format!(
            r#"{{"schema": {}, "learner": "Nur", "lang": null, "answers": [], "exams": [], "lessons_read": [], "badges": ["future"]}}"#,
            SCHEMA + 1
        );
        fs::write(&path, &newer).unwrap();
        let err = store.load("Nur").unwrap_err();
        assert!(matches!(err, StoreError::NewerSchema { .. }), "{err}");
        assert!(err.to_string().contains("newer tplab"), "{err}");
        assert!(store.update("Nur", |p| p.lang = Some(Lang::En)).is_err());
        assert!(store.save("Nur", &sample("Nur", 1)).is_err());
        assert_eq!(fs::read_to_string(&path).unwrap(), newer, "left untouched");
        assert_eq!(parse(newer.as_bytes()), Err(ParseError::Newer(SCHEMA + 1)));
    }

    #[test]
    fn schema_1_files_still_load() {
        let text = r#"{"schema": 1, "learner": "Eski", "lang": "tr", "answers": [], "exams": [{"version": "exam-v1", "correct": 17, "total": 20, "score_percent": 85.0, "passed": true, "at_unix_s": 1, "certificate_id": "AAAA-BBBB-CCCC"}], "lessons_read": []}"#;
        let p = parse(text.as_bytes()).unwrap();
        assert_eq!(p.exams[0].seed, None);
        assert_eq!(p.best_pass().unwrap().correct, 17);
        assert!(parse(b"{}").is_err());
        assert!(parse(br#"{"schema": 0}"#).is_err());
    }

    /// Records `n` answers of learner "Ortak" (ids `{prefix}-q{i}`, `correct` or not, in
    /// `lang`), one update of the saved file each, as a session answering questions does.
    fn record_answers(store: &Store, prefix: &str, n: usize, correct: bool, lang: Lang) {
        for i in 0..n {
            store
                .update("Ortak", |p| {
                    p.answers.push(AnswerRecord {
                        question_id: format!("{prefix}-q{i}"),
                        correct,
                        lang,
                        exam: false,
                        at_unix_s: i as u64,
                    })
                })
                .unwrap();
        }
    }

    #[test]
    fn two_sessions_on_one_learner_lose_no_answer() {
        let dir = tempfile::tempdir().unwrap();
        let per_session = 40;
        std::thread::scope(|s| {
            for session in 0..2 {
                let root = dir.path().to_path_buf();
                s.spawn(move || {
                    // Each session has its own Store, as two app windows would.
                    let store = Store::at(root);
                    record_answers(&store, &format!("s{session}"), per_session, true, Lang::En);
                });
            }
        });
        let p = Store::at(dir.path()).load("Ortak").unwrap().progress;
        let ids: BTreeSet<&str> = p.answers.iter().map(|a| a.question_id.as_str()).collect();
        assert_eq!(ids.len(), 2 * per_session, "every answer of both sessions");
        assert_eq!(p.answers.len(), 2 * per_session);
    }

    /// Set in the children of `two_processes_on_one_learner_lose_no_answer`: `<dir>|<session>`.
    const SESSION_ENV: &str = "TPLAB_TEST_CONCURRENT_SESSION";

    #[test]
    fn two_processes_on_one_learner_lose_no_answer() {
        let per_session = 30;
        if let Some(v) = std::env::var_os(SESSION_ENV) {
            let v = v.to_string_lossy().into_owned();
            let (dir, session) = v.rsplit_once('|').unwrap();
            let store = Store::at(PathBuf::from(dir));
            record_answers(&store, &format!("p{session}"), per_session, false, Lang::Tr);
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        // Two copies of this test binary, each running only this test in session mode.
        let children: Vec<_> = (0..2)
            .map(|session| {
                std::process::Command::new(std::env::current_exe().unwrap())
                    .args([
                        "progress::tests::two_processes_on_one_learner_lose_no_answer",
                        "--exact",
                    ])
                    .env(SESSION_ENV, format!("{}|{session}", dir.path().display()))
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut c in children {
            assert!(c.wait().unwrap().success());
        }
        let p = Store::at(dir.path()).load("Ortak").unwrap().progress;
        let ids: BTreeSet<&str> = p.answers.iter().map(|a| a.question_id.as_str()).collect();
        assert_eq!(ids.len(), 2 * per_session, "every answer of both processes");
    }

    #[test]
    fn private_files_are_owner_only_and_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys").join("issuer.key");
        write_atomic_private(&path, b"secret", false).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"secret");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        let err = write_atomic_private(&path, b"other", false).unwrap_err();
        assert!(err.to_string().contains("--force"), "{err}");
        assert_eq!(fs::read(&path).unwrap(), b"secret");
        write_atomic_private(&path, b"other", true).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"other");
    }

    #[test]
    fn challenges_keep_the_best_stars_and_old_files_load_without_them() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = Store::at(dir.path());
        let save = |stars: u8, at: u64| {
            store
                .update("Ada", |p| {
                    p.record_challenge("mlp-one-all-reduce", stars, at)
                })
                .unwrap_or_else(|e| panic!("{e}"))
        };
        save(2, 10);
        save(1, 20);
        let got = save(3, 30).progress;
        assert_eq!(got.challenges["mlp-one-all-reduce"].stars, 3);
        assert_eq!(got.challenges["mlp-one-all-reduce"].at_unix_s, 30);
        let again = save(2, 40).progress;
        assert_eq!(again.challenges["mlp-one-all-reduce"].at_unix_s, 30);
        // A file written before challenges existed loads, with none.
        let mut old = serde_json::to_value(Progress::new("Bo")).unwrap_or_else(|e| panic!("{e}"));
        if let Some(o) = old.as_object_mut() {
            o.remove("challenges");
        }
        let bytes = serde_json::to_vec(&old).unwrap_or_else(|e| panic!("{e}"));
        let p = parse(&bytes).unwrap_or_else(|e| panic!("{e}"));
        assert!(p.challenges.is_empty());
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

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_device_in_place_of_a_progress_file_is_refused_without_blocking() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        let path = store.learner_path("Ece").unwrap();
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mkfifo = |p: &Path| {
            assert!(std::process::Command::new("mkfifo")
                .arg(p)
                .status()
                .unwrap()
                .success())
        };
        mkfifo(&path);
        let e = store.load("Ece").unwrap_err().to_string();
        assert!(e.contains("FIFO"), "{e}");
        let e = store.update("Ece", |_| {}).unwrap_err().to_string();
        assert!(e.contains("FIFO"), "{e}");
        assert!(
            fs::symlink_metadata(&path).unwrap().file_type().is_fifo(),
            "left as it is"
        );
        // The .bak and the lock file are read or opened too: refused the same way.
        fs::remove_file(&path).unwrap();
        mkfifo(&bak_path(&path));
        let e = store.load("Ece").unwrap_err().to_string();
        assert!(e.contains("FIFO"), "{e}");
        fs::remove_file(bak_path(&path)).unwrap();
        // (The lock file the loads above made is replaced by a FIFO.)
        fs::remove_file(suffixed(&path, ".lock")).unwrap();
        mkfifo(&suffixed(&path, ".lock"));
        let e = store.load("Ece").unwrap_err().to_string();
        assert!(e.contains("FIFO"), "{e}");
        fs::remove_file(suffixed(&path, ".lock")).unwrap();
        // A device: /dev/zero would be read forever.
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        let e = store.load("Ece").unwrap_err().to_string();
        assert!(e.contains("device"), "{e}");
    }

    #[test]
    fn an_oversized_progress_file_is_refused_from_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        let path = store.learner_path("Ece").unwrap();
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::File::create(&path)
            .unwrap()
            .set_len(MAX_PROGRESS_FILE_BYTES + 1)
            .unwrap();
        let e = store.load("Ece").unwrap_err().to_string();
        assert!(e.contains("limit"), "{e}");
        assert_eq!(
            fs::metadata(&path).unwrap().len(),
            MAX_PROGRESS_FILE_BYTES + 1
        );
    }

    #[test]
    fn a_key_pair_is_written_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let (secret, public) = (dir.path().join("k"), dir.path().join("k.pub"));
        write_key_pair((&secret, b"s1"), (&public, b"p1"), false).unwrap();
        assert_eq!(
            (fs::read(&secret).unwrap(), fs::read(&public).unwrap()),
            (b"s1".to_vec(), b"p1".to_vec())
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(&secret).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        // Either file existing: nothing is written without replace.
        fs::remove_file(&secret).unwrap();
        let e = write_key_pair((&secret, b"s2"), (&public, b"p2"), false).unwrap_err();
        assert!(e.to_string().contains("--force"), "{e}");
        assert!(!secret.exists());
        assert_eq!(fs::read(&public).unwrap(), b"p1");
        // The second file cannot be placed (a folder is in the way): the first is taken back.
        let (s3, p3) = (dir.path().join("x"), dir.path().join("x.pub"));
        fs::create_dir_all(p3.join("inside")).unwrap();
        assert!(write_key_pair((&s3, b"s"), (&p3, b"p"), true).is_err());
        assert!(!s3.exists());
        // With replace, a failure puts the old secret back.
        fs::write(&s3, b"old secret").unwrap();
        assert!(write_key_pair((&s3, b"s"), (&p3, b"p"), true).is_err());
        assert_eq!(fs::read(&s3).unwrap(), b"old secret");
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names
                .iter()
                .all(|n| !n.contains(".tmp-") && !n.contains(".old-")),
            "{names:?}"
        );
    }
}
