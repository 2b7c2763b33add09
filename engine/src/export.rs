//! Exports of a run: tensors and shards as safetensors, the trace as Chrome trace JSON.
//!
//! - `tensors.safetensors`: `input`, every parameter by name (`layers.{i}.ln1.weight`,
//!   `layers.{i}.attn.qkv.weight`, … and their biases), `output`, the upstream gradient
//!   `grad.output`, and `grad.input` and `grad.<name>` for every parameter. Weights are `[in, out]`
//!   (`y = x·W + b`); biases and LayerNorm vectors are 1-D `[n]`; activations `[batch*seq,
//!   hidden]`, batch-major. Metadata records the config as JSON under `tplab.config`.
//! - `shards.safetensors`: each rank's shards, `rank{r}.<name>`, and their gradients
//!   `rank{r}.grad.<name>`.
//! - `trace.json`: [`crate::trace::Trace::to_chrome_json`].
//!
//! Loading in Python: `safetensors.numpy.load_file("tensors.safetensors")`.

use crate::dtype::{DType, Element};
use crate::params::ParamKind;
use crate::run::{EngineError, Run};
use ndarray::Array2;
use safetensors::tensor::{Dtype, TensorView};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

struct Owned {
    name: String,
    shape: Vec<usize>,
    bytes: Vec<u8>,
    /// `None`: the run's float dtype.
    dtype: Option<Dtype>,
}

/// A 1-D `int64` tensor (token ids).
fn owned_ids(name: &str, ids: &[usize]) -> Owned {
    Owned {
        name: name.to_string(),
        shape: vec![ids.len()],
        bytes: ids.iter().flat_map(|&i| (i as i64).to_le_bytes()).collect(),
        dtype: Some(Dtype::I64),
    }
}

fn owned<T: Element>(name: String, a: &Array2<T>, flatten_row_vector: bool) -> Owned {
    let shape = if flatten_row_vector && a.nrows() == 1 {
        vec![a.ncols()]
    } else {
        vec![a.nrows(), a.ncols()]
    };
    let mut bytes = Vec::with_capacity(a.len() * T::DTYPE.size_bytes());
    for v in a.iter() {
        match T::DTYPE {
            DType::F64 => bytes.extend_from_slice(&Element::to_f64(*v).to_le_bytes()),
            _ => bytes.extend_from_slice(&(Element::to_f64(*v) as f32).to_le_bytes()),
        }
    }
    Owned {
        name,
        shape,
        bytes,
        dtype: None,
    }
}

fn safetensors_bytes(
    dtype: DType,
    tensors: &[Owned],
    metadata: HashMap<String, String>,
) -> Result<Vec<u8>, EngineError> {
    let st_dtype = if dtype == DType::F64 {
        Dtype::F64
    } else {
        Dtype::F32
    };
    let views = tensors
        .iter()
        .map(|t| {
            TensorView::new(t.dtype.unwrap_or(st_dtype), t.shape.clone(), &t.bytes)
                .map(|v| (t.name.clone(), v))
                .map_err(|e| EngineError::Export(format!("{}: {e}", t.name)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    safetensors::tensor::serialize(views, Some(metadata))
        .map_err(|e| EngineError::Export(e.to_string()))
}

/// Writes `bytes` to `path` through a temporary file and a rename, so a reader never sees half a
/// file; the temporary file is removed if anything fails.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), EngineError> {
    use std::io::Write;
    let err = |e: std::io::Error| EngineError::Export(format!("{}: {e}", path.display()));
    let tmp = path.with_extension("tmp");
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(err)
}

/// A set of files written all or nothing, even across a crash: each file goes into a staging
/// folder beside the target folder (same file system, so renames are atomic), and
/// [`ExportSet::commit`] moves them into place.
///
/// - If the target folder does not exist, the staging folder is renamed to it: one rename.
/// - If it exists and holds only files, the set is swapped in whole: the target's other files
///   (a user's own) are hard-linked into the staging folder, then
///   - on Linux, an exchange marker (`<staging>.exchange`, beside it) is flushed and the two
///     folders trade places in one step (`renameat2(RENAME_EXCHANGE)`); the staging name then
///     holds the old set, which is removed, then the marker. At every instant the target folder
///     holds the whole old set or the whole new set: never nothing, never a mix.
///   - elsewhere, or where the file system cannot exchange, a commit journal (`.tplab-commit`,
///     first line `swap`) is flushed, the target folder is renamed aside and the staging folder
///     renamed to it, and the old folder is removed. At every instant the target folder holds
///     the whole old set, the whole new set, or (between the two renames) nothing: never a mix.
/// - If it holds a folder of its own, the files are moved one by one under a journal (the file
///   names): each old file aside into the staging folder, the new one in; if a rename fails
///   every file is put back.
///
/// Dropping an uncommitted set, or a failed commit, removes the staging folder. A process killed
/// in the middle (Ctrl-C while writing, kill -9 between the renames) leaves its staging folder
/// behind; the next [`ExportSet::new`] for the same target finds it (its process is gone) and
/// either removes it (no journal: the target still holds the whole old set; an exchange marker:
/// the target holds the whole old or the whole new set, and the staging name the other) or
/// finishes the commit it records (a journal: every new file not yet moved is moved in, so the
/// target holds the whole new set), then removes it.
pub struct ExportSet {
    target: PathBuf,
    staging: PathBuf,
    names: Vec<String>,
}

/// The commit journal's name inside a staging folder.
const JOURNAL: &str = ".tplab-commit";

/// `.<target name>.tplab-staging-`: the start of every staging folder's name for a target.
fn staging_prefix(target: &Path) -> String {
    let base = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "export".to_string());
    format!(".{base}.tplab-staging-")
}

fn parent_of(target: &Path) -> PathBuf {
    match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Whether the process that made a staging folder (its id is in the name) may still be running.
/// On Linux, from /proc; elsewhere a folder is taken as abandoned after an hour.
fn maker_alive(staging: &Path, pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    let proc_root = Path::new("/proc");
    if proc_root.join("self").exists() {
        return proc_root.join(pid.to_string()).exists();
    }
    std::fs::metadata(staging)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_none_or(|age| age.as_secs() < 3600)
}

/// A plain file name of a set (no folder part), as written into the journal.
fn plain_name(n: &str) -> bool {
    !n.is_empty() && n != "." && n != ".." && !n.contains(['/', '\\', '\0']) && n != JOURNAL
}

/// Removes, or finishes, the staging folders that killed exports of `target` left behind (see
/// [`ExportSet`]). Folders of running exports are left alone.
fn recover_stale(target: &Path) -> Result<(), EngineError> {
    let parent = parent_of(target);
    let prefix = staging_prefix(target);
    let Ok(entries) = std::fs::read_dir(&parent) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        let staging = e.path();
        let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        // An exchange marker whose staging folder is gone: killed after removing the folder.
        if rest.ends_with(EXCHANGE_SUFFIX) && e.file_type().is_ok_and(|t| t.is_file()) {
            let folder = staging.with_file_name(&name[..name.len() - EXCHANGE_SUFFIX.len()]);
            if folder.symlink_metadata().is_err() && !pid.is_some_and(|p| maker_alive(&staging, p))
            {
                remove_if_there(&staging).map_err(|e| {
                    EngineError::Export(format!(
                        "cannot remove {} an interrupted export left: {e}",
                        staging.display()
                    ))
                })?;
            }
            continue;
        }
        // A staging folder is a real folder (never a link followed elsewhere).
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if pid.is_some_and(|pid| maker_alive(&staging, pid)) {
            continue;
        }
        let marker = exchange_marker(&staging);
        if marker.is_file() {
            // An exchange began: the target holds a whole set (the old one if the exchange did
            // not happen, the new one if it did) and this folder the other: it goes.
            let err = |e: std::io::Error| {
                EngineError::Export(format!(
                    "cannot remove the staging folder {} an interrupted export left: {e}",
                    staging.display()
                ))
            };
            std::fs::remove_dir_all(&staging).map_err(err)?;
            remove_if_there(&marker).map_err(err)?;
            sync_dir(&parent);
            continue;
        }
        let journal = staging.join(JOURNAL);
        if journal.is_file() {
            let text =
                crate::capacity::models::read_input_file(&journal, "export journal", 1 << 16)
                    .map_err(|e| EngineError::Export(e.to_string()))?;
            let err = |e: std::io::Error| {
                EngineError::Export(format!(
                    "finishing the interrupted export in {}: {e}",
                    staging.display()
                ))
            };
            if text.lines().next() == Some(SWAP) {
                // A whole-folder swap: finish it (the old folder, if still in place, goes aside
                // and is removed below with the other abandoned ones).
                if target.symlink_metadata().is_ok() {
                    std::fs::rename(target, aside_path(target, u32::MAX)).map_err(err)?;
                }
                std::fs::remove_file(&journal).map_err(err)?;
                std::fs::rename(&staging, target).map_err(err)?;
                sync_dir(&parent);
                continue;
            }
            std::fs::create_dir_all(target).map_err(err)?;
            for n in text.lines().filter(|n| plain_name(n)) {
                let new = staging.join(n);
                if new.is_file() {
                    std::fs::rename(&new, target.join(n)).map_err(err)?;
                }
            }
            sync_dir(target);
        } else {
            // No journal: killed before the commit began (the target is untouched), or while
            // undoing a failed one: the old files it had moved aside go back.
            let err = |e: std::io::Error| {
                EngineError::Export(format!(
                    "restoring the old files of an interrupted export from {}: {e}",
                    staging.display()
                ))
            };
            for e in std::fs::read_dir(&staging).map_err(err)?.flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                if let Some(orig) = n.strip_suffix(".old").filter(|o| plain_name(o)) {
                    std::fs::rename(e.path(), target.join(orig)).map_err(err)?;
                }
            }
        }
        std::fs::remove_dir_all(&staging).map_err(|e| {
            EngineError::Export(format!(
                "cannot remove the staging folder {} an interrupted export left: {e}",
                staging.display()
            ))
        })?;
    }
    // Old folders a swap moved aside: removed once their process is gone (the new set is in
    // place); one whose swap never put a new folder in place goes back.
    let old_prefix = old_prefix(target);
    let Ok(entries) = std::fs::read_dir(&parent) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&old_prefix) else {
            continue;
        };
        let aside = e.path();
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|pid| maker_alive(&aside, pid)) {
            continue;
        }
        let err = |e: std::io::Error| {
            EngineError::Export(format!(
                "cannot clean up {} an interrupted export left: {e}",
                aside.display()
            ))
        };
        if target.symlink_metadata().is_err() {
            std::fs::rename(&aside, target).map_err(err)?;
        } else {
            std::fs::remove_dir_all(&aside).map_err(err)?;
        }
    }
    Ok(())
}

/// The first line of a whole-folder swap's journal.
const SWAP: &str = "swap";

/// What an exchange marker's name adds to its staging folder's.
const EXCHANGE_SUFFIX: &str = ".exchange";

/// Removes a file; one already gone (this listing saw it before its folder's recovery
/// removed it) is no error.
fn remove_if_there(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        r => r,
    }
}

/// The exchange marker of a staging folder: a file beside it (never inside: the staging folder
/// becomes the target), present from just before the exchange until the old set is removed.
fn exchange_marker(staging: &Path) -> PathBuf {
    let mut name = staging.as_os_str().to_owned();
    name.push(EXCHANGE_SUFFIX);
    PathBuf::from(name)
}

/// `.<target name>.tplab-old-`: where a swap moves the old folder.
fn old_prefix(target: &Path) -> String {
    staging_prefix(target).replace(".tplab-staging-", ".tplab-old-")
}

/// A fresh name beside `target` for its old folder during a swap by process `pid`.
fn aside_path(target: &Path, pid: u32) -> PathBuf {
    let nanos = web_time::SystemTime::now()
        .duration_since(web_time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    parent_of(target).join(format!("{}{pid}-{nanos}", old_prefix(target)))
}

/// Whether the folder `target` sits on another file system than `parent` (a mount point).
fn other_file_system(target: &Path, parent: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(target), std::fs::metadata(parent)) {
            (Ok(t), Ok(p)) => t.is_dir() && t.dev() != p.dev(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (target, parent);
        false
    }
}

/// Flushes a folder's entries (renames) to disk, where the platform can.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

impl ExportSet {
    /// Starts a set for `target` (created on commit if needed), after cleaning up what killed
    /// exports of the same target left (see [`ExportSet`]).
    pub fn new(target: &Path) -> Result<Self, EngineError> {
        let err = |e: std::io::Error| EngineError::Export(format!("{}: {e}", target.display()));
        let parent = parent_of(target);
        std::fs::create_dir_all(&parent).map_err(err)?;
        recover_stale(target)?;
        let nanos = web_time::SystemTime::now()
            .duration_since(web_time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        // Files move by rename, which stays on one file system: a target that is a file system
        // of its own (a USB stick's or a container volume's mount point) is staged inside
        // itself and filled file by file.
        let stage_in = if other_file_system(target, &parent) {
            target.to_path_buf()
        } else {
            parent
        };
        let staging = stage_in.join(format!(
            "{}{}-{nanos}",
            staging_prefix(target),
            std::process::id()
        ));
        std::fs::create_dir(&staging).map_err(err)?;
        Ok(Self {
            target: target.to_path_buf(),
            staging,
            names: Vec::new(),
        })
    }

    /// Writes one file of the set into the staging folder (flushed to disk).
    pub fn write(&mut self, name: &str, bytes: &[u8]) -> Result<(), EngineError> {
        use std::io::Write;
        if !plain_name(name) {
            return Err(EngineError::Export(format!(
                "'{}' is not a plain file name",
                name.escape_debug()
            )));
        }
        let path = self.staging.join(name);
        let err = |e: std::io::Error| EngineError::Export(format!("{}: {e}", path.display()));
        let mut f = std::fs::File::create(&path).map_err(err)?;
        f.write_all(bytes).map_err(err)?;
        f.sync_all().map_err(err)?;
        self.names.push(name.to_string());
        Ok(())
    }

    /// Moves every file into the target folder, all or nothing; returns their final paths.
    pub fn commit(self) -> Result<Vec<PathBuf>, EngineError> {
        self.commit_until(usize::MAX)
    }

    /// [`ExportSet::commit`] that stops, as a process killed there would, after `renames`
    /// renames into an existing target (tests of crash recovery); `usize::MAX` runs it whole.
    fn commit_until(self, renames: usize) -> Result<Vec<PathBuf>, EngineError> {
        let finals: Vec<PathBuf> = self.names.iter().map(|n| self.target.join(n)).collect();
        let err = |what: &str, e: std::io::Error| {
            EngineError::Export(format!("{what} {}: {e}", self.target.display()))
        };
        if !self.target.exists() {
            std::fs::rename(&self.staging, &self.target).map_err(|e| err("cannot create", e))?;
            sync_dir(&parent_of(&self.target));
            return Ok(finals);
        }
        if !self.target.is_dir() {
            return Err(EngineError::Export(format!(
                "{} exists and is not a folder; give a folder to export into",
                self.target.display()
            )));
        }
        match self.try_swap(renames, &finals)? {
            Some((finals, true)) => {
                // Killed here: no undo, no cleanup.
                std::mem::forget(self);
                return Ok(finals);
            }
            Some((finals, false)) => return Ok(finals),
            None => {}
        }
        // The journal first, on disk before any rename: a kill from here on is finished by the
        // next export (see `recover_stale`).
        {
            use std::io::Write;
            let tmp = self.staging.join(format!("{JOURNAL}.tmp"));
            let journal_err = |e| err("cannot write the commit journal for", e);
            let mut f = std::fs::File::create(&tmp).map_err(journal_err)?;
            f.write_all(self.names.join("\n").as_bytes())
                .map_err(journal_err)?;
            f.sync_all().map_err(journal_err)?;
            std::fs::rename(&tmp, self.staging.join(JOURNAL)).map_err(journal_err)?;
            sync_dir(&self.staging);
        }
        // Move the old files aside, then the new ones in; undo everything on the first failure.
        let aside = |n: &str| self.staging.join(format!("{n}.old"));
        let mut moved_aside = Vec::new();
        let mut placed = Vec::new();
        let mut failure = None;
        for n in &self.names {
            if placed.len() >= renames {
                // Killed here: no undo, no cleanup.
                std::mem::forget(self);
                return Ok(finals);
            }
            let old = self.target.join(n);
            if old.is_dir() {
                failure = Some(EngineError::Export(format!(
                    "cannot write {}: a folder of that name is in the way; move it or export \
                     elsewhere",
                    old.display()
                )));
                break;
            }
            if old.symlink_metadata().is_ok() {
                if let Err(e) = std::fs::rename(&old, aside(n)) {
                    failure = Some(err("cannot replace a file in", e));
                    break;
                }
                moved_aside.push(n.clone());
            }
            if let Err(e) = std::fs::rename(self.staging.join(n), &old) {
                failure = Some(err("cannot write into", e));
                break;
            }
            placed.push(n.clone());
        }
        if let Some(e) = failure {
            // The journal goes first: an undo killed half-way must not be "finished" later.
            let _ = std::fs::remove_file(self.staging.join(JOURNAL));
            sync_dir(&self.staging);
            for n in placed.iter().rev() {
                let _ = std::fs::remove_file(self.target.join(n));
            }
            for n in moved_aside.iter().rev() {
                let _ = std::fs::rename(aside(n), self.target.join(n));
            }
            return Err(e);
        }
        sync_dir(&self.target);
        Ok(finals)
    }
}

impl ExportSet {
    /// The whole-folder swap of [`ExportSet`] into an existing target that holds only files;
    /// `None` when it holds a folder (the caller then moves file by file). `renames` as in
    /// [`ExportSet::commit_until`].
    fn try_swap(
        &self,
        renames: usize,
        finals: &[PathBuf],
    ) -> Result<Option<(Vec<PathBuf>, bool)>, EngineError> {
        use std::io::Write;
        let err = |what: &str, e: std::io::Error| {
            EngineError::Export(format!("{what} {}: {e}", self.target.display()))
        };
        // A link to a folder stays a link: its files are replaced one by one instead.
        if self
            .target
            .symlink_metadata()
            .map_or(true, |m| m.file_type().is_symlink())
        {
            return Ok(None);
        }
        let entries: Vec<std::fs::DirEntry> = std::fs::read_dir(&self.target)
            .map_err(|e| err("cannot read", e))?
            .flatten()
            .collect();
        if entries
            .iter()
            .any(|e| e.file_type().map_or(true, |t| t.is_dir()))
        {
            return Ok(None);
        }
        // The user's own files come along, as hard links (a copy where links are refused).
        for e in &entries {
            let name = e.file_name();
            if self.names.iter().any(|n| std::ffi::OsStr::new(n) == name) {
                continue;
            }
            let dest = self.staging.join(&name);
            if std::fs::hard_link(e.path(), &dest).is_err() {
                std::fs::copy(e.path(), &dest).map_err(|e| err("cannot keep a file of", e))?;
            }
        }
        #[cfg(target_os = "linux")]
        if let Some(done) = self.try_exchange(renames, finals)? {
            return Ok(Some(done));
        }
        let journal_err = |e| err("cannot write the commit journal for", e);
        let tmp = self.staging.join(format!("{JOURNAL}.tmp"));
        let mut f = std::fs::File::create(&tmp).map_err(journal_err)?;
        f.write_all(format!("{SWAP}\n{}", self.names.join("\n")).as_bytes())
            .map_err(journal_err)?;
        f.sync_all().map_err(journal_err)?;
        std::fs::rename(&tmp, self.staging.join(JOURNAL)).map_err(journal_err)?;
        sync_dir(&self.staging);
        let killed = |done: usize| done >= renames;
        if killed(0) {
            return Ok(Some((finals.to_vec(), true)));
        }
        let aside = aside_path(&self.target, std::process::id());
        if std::fs::rename(&self.target, &aside).is_err() {
            // A folder that cannot be moved (a mount point, the working folder on some
            // systems): its files are replaced one by one instead.
            return Ok(None);
        }
        if killed(1) {
            return Ok(Some((finals.to_vec(), true)));
        }
        let _ = std::fs::remove_file(self.staging.join(JOURNAL));
        if let Err(e) = std::fs::rename(&self.staging, &self.target) {
            // Put the old folder back; the staging folder is removed on drop.
            let _ = std::fs::rename(&aside, &self.target);
            return Err(err("cannot write into", e));
        }
        sync_dir(&parent_of(&self.target));
        if killed(2) {
            return Ok(Some((finals.to_vec(), true)));
        }
        let _ = std::fs::remove_dir_all(&aside);
        Ok(Some((finals.to_vec(), false)))
    }
}

impl ExportSet {
    /// Linux: the staging folder and the target trade places in one step
    /// (`renameat2(RENAME_EXCHANGE)`), after an exchange marker is on disk; then the old set
    /// (now under the staging name) and the marker are removed. `None` when the file system
    /// cannot exchange (the caller then renames twice). `renames` as in
    /// [`ExportSet::commit_until`]: 0 stops before the exchange, 1 right after it.
    #[cfg(target_os = "linux")]
    fn try_exchange(
        &self,
        renames: usize,
        finals: &[PathBuf],
    ) -> Result<Option<(Vec<PathBuf>, bool)>, EngineError> {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        use std::io::Write;
        let parent = parent_of(&self.target);
        let marker = exchange_marker(&self.staging);
        let marker_err = |e: std::io::Error| {
            EngineError::Export(format!("cannot write {}: {e}", marker.display()))
        };
        // The linked files' names are on disk before the staging folder can become the target.
        sync_dir(&self.staging);
        let mut f = std::fs::File::create(&marker).map_err(marker_err)?;
        f.write_all(b"exchange\n").map_err(marker_err)?;
        f.sync_all().map_err(marker_err)?;
        sync_dir(&parent);
        if renames == 0 {
            return Ok(Some((finals.to_vec(), true)));
        }
        if renameat_with(CWD, &self.staging, CWD, &self.target, RenameFlags::EXCHANGE).is_err() {
            // No RENAME_EXCHANGE here (an old kernel, some file systems, a mount point).
            let _ = std::fs::remove_file(&marker);
            sync_dir(&parent);
            return Ok(None);
        }
        sync_dir(&parent);
        if renames == 1 {
            return Ok(Some((finals.to_vec(), true)));
        }
        // The staging name now holds the old set.
        let _ = std::fs::remove_dir_all(&self.staging);
        let _ = std::fs::remove_file(&marker);
        sync_dir(&parent);
        Ok(Some((finals.to_vec(), false)))
    }
}

impl Drop for ExportSet {
    fn drop(&mut self) {
        // After a successful first-time commit the staging folder was renamed away.
        let _ = std::fs::remove_dir_all(&self.staging);
    }
}

/// Writes the vocabulary-parallel pass of `cfg` into `dir/vocab.safetensors` (computed in `T`):
/// `ids` and `targets` (int64 `[T]`), the unpadded table `embedding` `[V, h]`, the reference's
/// `embedded` `[T, h]`, `losses` `[T]`, `loss` `[1]` and `grad.embedding` `[V, h]`; and per rank
/// `rank{r}.embedding` (its `Vp/tp` rows of the padded table, padding rows zero),
/// `rank{r}.logits` `[T, Vp/tp]` and `rank{r}.grad.embedding`. Metadata: the config and the
/// padded vocabulary. Returns the path.
pub fn export_vocab<T: Element>(
    cfg: &crate::labs::vocab::VocabConfig,
    dir: &Path,
) -> Result<PathBuf, EngineError> {
    use crate::labs::vocab;
    let err = |e: vocab::VocabError| EngineError::Export(e.to_string());
    cfg.validate().map_err(err)?;
    let m = vocab::VocabModel::<T>::random(cfg);
    let want = vocab::reference(cfg, &m);
    let got = vocab::sharded(cfg, &m).map_err(err)?;
    let mut meta = HashMap::new();
    meta.insert(
        "tplab.vocab_config".to_string(),
        serde_json::to_string(cfg).map_err(|e| EngineError::Export(e.to_string()))?,
    );
    meta.insert(
        "tplab.padded_vocab".to_string(),
        cfg.padded_vocab().to_string(),
    );
    meta.insert(
        "tplab.conventions".to_string(),
        "tied embedding and LM head; rank r holds padded rows r*Vp/tp..(r+1)*Vp/tp; loss = mean \
         over tokens of logsumexp(logits over the real vocabulary) - logit[target]"
            .to_string(),
    );
    let row = |a: &ndarray::Array1<T>| a.clone().insert_axis(ndarray::Axis(0));
    let mut t = vec![
        owned_ids("ids", &m.ids),
        owned_ids("targets", &m.targets),
        owned("embedding".into(), &m.embedding, false),
        owned("embedded".into(), &want.embedded, false),
        owned("losses".into(), &row(&want.losses), true),
        owned("loss".into(), &Array2::from_elem((1, 1), want.loss), true),
    ];
    if let Some(g) = want.grad_embedding.first() {
        t.push(owned("grad.embedding".into(), g, false));
    }
    for r in 0..cfg.tp {
        t.push(owned(
            format!("rank{r}.embedding"),
            &vocab::shard_table(cfg, m.embedding.view(), r),
            false,
        ));
        t.push(owned(format!("rank{r}.logits"), &got.logits[r], false));
        t.push(owned(
            format!("rank{r}.grad.embedding"),
            &got.grad_embedding[r],
            false,
        ));
    }
    let mut set = ExportSet::new(dir)?;
    set.write("vocab.safetensors", &safetensors_bytes(T::DTYPE, &t, meta)?)?;
    let mut paths = set.commit()?;
    paths
        .pop()
        .ok_or_else(|| EngineError::Export("nothing was written".into()))
}

/// `tensors.safetensors`'s contents: the input, every parameter, the reference's output, the
/// upstream gradient, and the reference's input and parameter gradients.
fn reference_tensors<T: Element>(
    model: &crate::params::Model<T>,
    reference: &crate::block::reference::ReferenceRun<T>,
) -> Vec<Owned> {
    let mut t = vec![owned("input".into(), &model.input, false)];
    for (name, a) in model.named_params() {
        t.push(owned(name, a, true));
    }
    t.push(owned("output".into(), &reference.output, false));
    t.push(owned("grad.output".into(), &model.grad_output, false));
    t.push(owned("grad.input".into(), &reference.grad_input, false));
    for (i, g) in reference.grads.iter().enumerate() {
        for k in ParamKind::ALL {
            t.push(owned(format!("grad.{}", k.name(i)), g.get(k), true));
        }
    }
    t
}

/// `shards.safetensors`'s contents: each rank's shards and their gradients, `[rank][layer]`.
fn shard_tensors<T: Element>(
    shards: &[Vec<crate::params::LayerParams<T>>],
    grads: &[Vec<crate::params::LayerParams<T>>],
) -> Vec<Owned> {
    let mut s = Vec::new();
    for (r, (layers, layer_grads)) in shards.iter().zip(grads).enumerate() {
        for (i, (p, g)) in layers.iter().zip(layer_grads).enumerate() {
            for k in ParamKind::ALL {
                s.push(owned(format!("rank{r}.{}", k.name(i)), p.get(k), true));
                s.push(owned(format!("rank{r}.grad.{}", k.name(i)), g.get(k), true));
            }
        }
    }
    s
}

/// Writes `tensors.safetensors`, `shards.safetensors` and `trace.json` into `dir` (created if
/// needed) as one [`ExportSet`] (all three new, or all as they were), and returns their paths.
pub fn export<T: Element>(run: &Run<T>, dir: &Path) -> Result<Vec<PathBuf>, EngineError> {
    let mut set = ExportSet::new(dir)?;
    let cfg = &run.report.config;
    let mut meta = HashMap::new();
    meta.insert(
        "tplab.config".to_string(),
        serde_json::to_string(cfg).map_err(|e| EngineError::Export(e.to_string()))?,
    );
    meta.insert(
        "tplab.conventions".to_string(),
        "pre-LN GPT-2 block; y = x@W + b with W [in,out]; qkv [h,(a+2kv)d] = [Q|K|V] (3h without \
         grouped-query attention), heads contiguous; query head j uses KV head j/(a/kv); \
         tokens batch-major [batch*seq, hidden]; LayerNorm eps 1e-5; GeLU tanh approximation"
            .to_string(),
    );
    let t = reference_tensors(&run.model, &run.reference);
    set.write(
        "tensors.safetensors",
        &safetensors_bytes(cfg.dtype, &t, meta.clone())?,
    )?;

    let shards = run.report.plan.shard_model(&run.model);
    let s = shard_tensors(&shards, &run.sharded.grads);
    set.write(
        "shards.safetensors",
        &safetensors_bytes(cfg.dtype, &s, meta)?,
    )?;
    let json = serde_json::to_vec_pretty(&run.report.trace.to_chrome_json())
        .map_err(|e| EngineError::Export(e.to_string()))?;
    set.write("trace.json", &json)?;
    set.commit()
}

/// The export of a design (`tplab design --export`) for a plan other than Megatron's, whose
/// export is [`export`]'s: the same `tensors.safetensors` (the reference's tensors do not
/// depend on the split), `shards.safetensors` with each rank's shards and gradients as *this*
/// plan splits them (same names, `rank{r}.<name>`), `design.json`, the propagated program and
/// its price, and `trace.json`, the program's Chrome trace ([`crate::block::design::trace`])
/// unless the program is refused (`design.json` then says why).
pub fn export_design<T: Element>(
    cfg: &crate::config::Config,
    report: &crate::block::design::DesignReport,
    dir: &Path,
) -> Result<Vec<PathBuf>, EngineError> {
    use crate::block::exec::design as exec;
    let cfg = crate::config::Config {
        dtype: T::DTYPE,
        ..cfg.clone()
    };
    let program = &report.program;
    let model = crate::params::Model::<T>::random(&cfg);
    let want = crate::block::reference::run(&cfg, &model);
    let got =
        exec::run_program(&cfg, program, &model).map_err(|e| EngineError::Export(e.to_string()))?;
    let mut set = ExportSet::new(dir)?;
    let mut meta = HashMap::new();
    meta.insert(
        "tplab.config".to_string(),
        serde_json::to_string(&cfg).map_err(|e| EngineError::Export(e.to_string()))?,
    );
    meta.insert("tplab.plan".to_string(), program.plan.describe());
    let t = reference_tensors(&model, &want);
    set.write(
        "tensors.safetensors",
        &safetensors_bytes(cfg.dtype, &t, meta.clone())?,
    )?;
    let shards = exec::shard_model(&cfg, program, &model);
    let s = shard_tensors(&shards, &got.grads);
    set.write(
        "shards.safetensors",
        &safetensors_bytes(cfg.dtype, &s, meta)?,
    )?;
    let trace = crate::block::design::trace::trace(&cfg, program);
    let json = serde_json::to_vec_pretty(&serde_json::json!({
        "report": report,
        "program": program,
        "trace": match &trace {
            Ok(_) => "trace.json".to_string(),
            Err(e) => e.to_string(),
        },
    }))
    .map_err(|e| EngineError::Export(e.to_string()))?;
    set.write("design.json", &json)?;
    if let Ok(t) = trace {
        let json = serde_json::to_vec_pretty(&t.to_chrome_json())
            .map_err(|e| EngineError::Export(e.to_string()))?;
        set.write("trace.json", &json)?;
    }
    set.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tplab-set-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        d
    }

    fn leftovers(parent: &Path) -> Vec<String> {
        std::fs::read_dir(parent)
            .expect("readable")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| {
                n.contains("tplab-staging") || n.contains("tplab-old") || n.ends_with(".tmp")
            })
            .collect()
    }

    #[test]
    fn a_set_lands_whole_in_a_new_or_existing_folder() {
        let parent = temp("ok");
        let target = parent.join("out");
        let mut set = ExportSet::new(&target).unwrap();
        set.write("a.txt", b"new a").unwrap();
        set.write("b.txt", b"new b").unwrap();
        let paths = set.commit().unwrap();
        assert_eq!(paths, vec![target.join("a.txt"), target.join("b.txt")]);
        // Again, over the existing files, with a user's own file beside them left alone.
        std::fs::write(target.join("mine.txt"), b"keep").unwrap();
        let mut set = ExportSet::new(&target).unwrap();
        set.write("a.txt", b"newer a").unwrap();
        set.write("b.txt", b"newer b").unwrap();
        set.commit().unwrap();
        assert_eq!(std::fs::read(target.join("a.txt")).unwrap(), b"newer a");
        assert_eq!(std::fs::read(target.join("b.txt")).unwrap(), b"newer b");
        assert_eq!(std::fs::read(target.join("mine.txt")).unwrap(), b"keep");
        assert!(leftovers(&parent).is_empty(), "{:?}", leftovers(&parent));
        std::fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn a_failure_half_way_leaves_the_old_files_and_nothing_else() {
        let parent = temp("fail");
        let target = parent.join("out");
        std::fs::create_dir_all(&target).unwrap();
        std::fs::write(target.join("a.txt"), b"old a").unwrap();
        // The second file cannot be placed: a folder sits where it goes.
        std::fs::create_dir_all(target.join("b.txt").join("x")).unwrap();
        std::fs::write(target.join("c.txt"), b"old c").unwrap();
        let mut set = ExportSet::new(&target).unwrap();
        for n in ["a.txt", "b.txt", "c.txt"] {
            set.write(n, b"new").unwrap();
        }
        assert!(set.commit().is_err());
        assert_eq!(std::fs::read(target.join("a.txt")).unwrap(), b"old a");
        assert_eq!(std::fs::read(target.join("c.txt")).unwrap(), b"old c");
        assert!(target.join("b.txt").join("x").is_dir());
        assert!(leftovers(&parent).is_empty(), "{:?}", leftovers(&parent));
        assert!(leftovers(&target).is_empty(), "{:?}", leftovers(&target));
        // A set dropped before its commit (a failed computation) leaves nothing either.
        let mut set = ExportSet::new(&parent.join("never")).unwrap();
        set.write("a.txt", b"x").unwrap();
        drop(set);
        assert!(!parent.join("never").exists());
        assert!(leftovers(&parent).is_empty(), "{:?}", leftovers(&parent));
        std::fs::remove_dir_all(&parent).unwrap();
    }

    /// What a killed export leaves: its staging folder, now under the id of a process that no
    /// longer runs (this test process is alive, so its own folders would be left alone).
    #[cfg(target_os = "linux")]
    fn as_if_killed(parent: &Path) {
        for n in leftovers(parent) {
            let dead = n.replace(&format!("-{}-", std::process::id()), "-4294967295-");
            std::fs::rename(parent.join(&n), parent.join(dead)).unwrap();
        }
    }

    #[cfg(target_os = "linux")]
    fn read(p: &Path) -> String {
        String::from_utf8(std::fs::read(p).unwrap()).unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn ctrl_c_while_writing_leaves_the_old_set_and_the_next_export_removes_the_staging() {
        let parent = temp("ctrlc");
        let target = parent.join("out");
        std::fs::create_dir_all(&target).unwrap();
        for n in ["a.txt", "b.txt"] {
            std::fs::write(target.join(n), format!("old {n}")).unwrap();
        }
        let mut set = ExportSet::new(&target).unwrap();
        set.write("a.txt", b"new a").unwrap();
        // Ctrl-C: the process ends here, no destructor runs.
        std::mem::forget(set);
        as_if_killed(&parent);
        assert_eq!(leftovers(&parent).len(), 1);
        assert_eq!(read(&target.join("a.txt")), "old a.txt");
        // The next export of the same folder removes it; the old set is whole.
        let next = ExportSet::new(&target).unwrap();
        assert_eq!(leftovers(&parent).len(), 1, "only the new set's own folder");
        drop(next);
        assert!(leftovers(&parent).is_empty(), "{:?}", leftovers(&parent));
        assert_eq!(read(&target.join("a.txt")), "old a.txt");
        assert_eq!(read(&target.join("b.txt")), "old b.txt");
        std::fs::remove_dir_all(&parent).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_kill_around_the_exchange_leaves_a_whole_set_and_the_next_export_cleans_up() {
        let names = ["tensors.safetensors", "shards.safetensors", "trace.json"];
        for killed_after in 0..names.len() {
            let parent = temp(&format!("kill{killed_after}"));
            let target = parent.join("out");
            std::fs::create_dir_all(&target).unwrap();
            std::fs::write(target.join("mine.txt"), b"keep").unwrap();
            for n in names {
                std::fs::write(target.join(n), "seed 1").unwrap();
            }
            let mut set = ExportSet::new(&target).unwrap();
            for n in names {
                set.write(n, b"seed 2").unwrap();
            }
            // kill -9 after `killed_after` renames of the swap.
            set.commit_until(killed_after).unwrap();
            as_if_killed(&parent);
            let seeds = || -> Vec<String> { names.iter().map(|n| read(&target.join(n))).collect() };
            // What a reader sees right after the kill: the whole old set or the whole new set
            // (the folders trade places in one step); never a mix, never no folder.
            let now: Vec<Option<Vec<u8>>> = names
                .iter()
                .map(|n| std::fs::read(target.join(n)).ok())
                .collect();
            let whole = |v: &[u8]| now.iter().all(|f| f.as_deref() == Some(v));
            let expected = if killed_after == 0 {
                "seed 1"
            } else {
                "seed 2"
            };
            assert!(
                whole(expected.as_bytes()),
                "killed after {killed_after}: {now:?}"
            );
            assert_eq!(read(&target.join("mine.txt")), "keep");
            // The next export (here: its start) cleans up: killed before the exchange, the old
            // set stays (that export never happened); after it, the new set.
            drop(ExportSet::new(&target).unwrap());
            assert_eq!(seeds(), vec![expected; 3], "killed after {killed_after}");
            assert_eq!(read(&target.join("mine.txt")), "keep");
            assert!(leftovers(&parent).is_empty(), "{:?}", leftovers(&parent));
            let extra: Vec<String> = std::fs::read_dir(&target)
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != "mine.txt" && !names.contains(&n.as_str()))
                .collect();
            assert!(extra.is_empty(), "{extra:?}");
            std::fs::remove_dir_all(&parent).unwrap();
        }
    }

    /// A target that is a link to a folder stays a link (its files are replaced one by one).
    #[cfg(unix)]
    #[test]
    fn a_linked_target_stays_a_link() {
        let parent = temp("link");
        let real = parent.join("real");
        std::fs::create_dir_all(&real).unwrap();
        std::fs::write(real.join("a.txt"), b"old").unwrap();
        let link = parent.join("out");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let mut set = ExportSet::new(&link).unwrap();
        set.write("a.txt", b"new").unwrap();
        set.commit().unwrap();
        assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(real.join("a.txt")).unwrap(), b"new");
        assert!(leftovers(&parent).is_empty(), "{:?}", leftovers(&parent));
        std::fs::remove_dir_all(&parent).unwrap();
    }

    #[test]
    fn a_running_exports_staging_folder_is_left_alone() {
        let parent = temp("alive");
        let target = parent.join("out");
        let mut first = ExportSet::new(&target).unwrap();
        first.write("a.txt", b"first").unwrap();
        // Another export of the same folder by a live process (here: this one) starts.
        let second = ExportSet::new(&target).unwrap();
        drop(second);
        assert_eq!(first.commit().unwrap(), vec![target.join("a.txt")]);
        assert_eq!(std::fs::read(target.join("a.txt")).unwrap(), b"first");
        std::fs::remove_dir_all(&parent).unwrap();
    }
}
