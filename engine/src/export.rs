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

/// A set of files written all or nothing: each file goes into a staging folder beside the
/// target folder (same file system, so renames are atomic), and [`ExportSet::commit`] moves them
/// into place. If the target folder does not exist the staging folder is renamed to it in one
/// step; otherwise each old file is first moved aside into the staging folder, and if any rename
/// fails every file is put back. Dropping an uncommitted set, or a failed commit, removes the
/// staging folder: nothing is left behind, and the target holds either all old or all new files.
pub struct ExportSet {
    target: PathBuf,
    staging: PathBuf,
    names: Vec<String>,
}

impl ExportSet {
    /// Starts a set for `target` (created on commit if needed).
    pub fn new(target: &Path) -> Result<Self, EngineError> {
        let err = |e: std::io::Error| EngineError::Export(format!("{}: {e}", target.display()));
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent).map_err(err)?;
        let base = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "export".to_string());
        let nanos = web_time::SystemTime::now()
            .duration_since(web_time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let staging = parent.join(format!(
            ".{base}.tplab-staging-{}-{nanos}",
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
        let finals: Vec<PathBuf> = self.names.iter().map(|n| self.target.join(n)).collect();
        let err = |what: &str, e: std::io::Error| {
            EngineError::Export(format!("{what} {}: {e}", self.target.display()))
        };
        if !self.target.exists() {
            std::fs::rename(&self.staging, &self.target).map_err(|e| err("cannot create", e))?;
            return Ok(finals);
        }
        if !self.target.is_dir() {
            return Err(EngineError::Export(format!(
                "{} exists and is not a folder; give a folder to export into",
                self.target.display()
            )));
        }
        // Move the old files aside, then the new ones in; undo everything on the first failure.
        let aside = |n: &str| self.staging.join(format!("{n}.old"));
        let mut moved_aside = Vec::new();
        let mut placed = Vec::new();
        let mut failure = None;
        for n in &self.names {
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
            for n in placed.iter().rev() {
                let _ = std::fs::remove_file(self.target.join(n));
            }
            for n in moved_aside.iter().rev() {
                let _ = std::fs::rename(aside(n), self.target.join(n));
            }
            return Err(e);
        }
        Ok(finals)
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
    cfg: &crate::vocab::VocabConfig,
    dir: &Path,
) -> Result<PathBuf, EngineError> {
    use crate::vocab;
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
    let mut t = vec![owned("input".into(), &run.model.input, false)];
    for (name, a) in run.model.named_params() {
        t.push(owned(name, a, true));
    }
    t.push(owned("output".into(), &run.reference.output, false));
    t.push(owned("grad.output".into(), &run.model.grad_output, false));
    t.push(owned("grad.input".into(), &run.reference.grad_input, false));
    for (i, g) in run.reference.grads.iter().enumerate() {
        for k in ParamKind::ALL {
            t.push(owned(format!("grad.{}", k.name(i)), g.get(k), true));
        }
    }
    set.write(
        "tensors.safetensors",
        &safetensors_bytes(cfg.dtype, &t, meta.clone())?,
    )?;

    let shards = run.report.plan.shard_model(&run.model);
    let mut s = Vec::new();
    for (r, layers) in shards.iter().enumerate() {
        for (i, p) in layers.iter().enumerate() {
            for k in ParamKind::ALL {
                s.push(owned(format!("rank{r}.{}", k.name(i)), p.get(k), true));
                s.push(owned(
                    format!("rank{r}.grad.{}", k.name(i)),
                    run.sharded.grads[r][i].get(k),
                    true,
                ));
            }
        }
    }
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
/// plan splits them (same names, `rank{r}.<name>`), and `design.json`, the propagated program
/// and its price (in place of the trace, which exists for Megatron's program only).
pub fn export_design<T: Element>(
    cfg: &crate::config::Config,
    report: &crate::block::design::DesignReport,
    dir: &Path,
) -> Result<Vec<PathBuf>, EngineError> {
    use crate::block::design::{exec, program};
    let cfg = crate::config::Config {
        dtype: T::DTYPE,
        ..cfg.clone()
    };
    let program = &report.program;
    let model = crate::params::Model::<T>::random(&cfg);
    let want = crate::reference::run(&cfg, &model);
    let got =
        exec::run_program(&cfg, program, &model).map_err(|e| EngineError::Export(e.to_string()))?;
    let mut set = ExportSet::new(dir)?;
    let mut meta = HashMap::new();
    meta.insert(
        "tplab.config".to_string(),
        serde_json::to_string(&cfg).map_err(|e| EngineError::Export(e.to_string()))?,
    );
    meta.insert("tplab.plan".to_string(), program.plan.describe());
    let mut t = vec![owned("input".into(), &model.input, false)];
    for (name, a) in model.named_params() {
        t.push(owned(name, a, true));
    }
    t.push(owned("output".into(), &want.output, false));
    t.push(owned("grad.output".into(), &model.grad_output, false));
    t.push(owned("grad.input".into(), &want.grad_input, false));
    for (i, g) in want.grads.iter().enumerate() {
        for k in ParamKind::ALL {
            t.push(owned(format!("grad.{}", k.name(i)), g.get(k), true));
        }
    }
    set.write(
        "tensors.safetensors",
        &safetensors_bytes(cfg.dtype, &t, meta.clone())?,
    )?;
    let mut s = Vec::new();
    for (r, layers) in got.grads.iter().enumerate() {
        for (i, g) in layers.iter().enumerate() {
            for k in ParamKind::ALL {
                let layout = program::param_layout(&cfg, &program.plan, k);
                let shard = exec::shard_param(&cfg, layout, k, model.layers[i].get(k).view(), r);
                s.push(owned(format!("rank{r}.{}", k.name(i)), &shard, true));
                s.push(owned(format!("rank{r}.grad.{}", k.name(i)), g.get(k), true));
            }
        }
    }
    set.write(
        "shards.safetensors",
        &safetensors_bytes(cfg.dtype, &s, meta)?,
    )?;
    let json = serde_json::to_vec_pretty(&serde_json::json!({
        "report": report,
        "program": program,
    }))
    .map_err(|e| EngineError::Export(e.to_string()))?;
    set.write("design.json", &json)?;
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
            .filter(|n| n.contains("tplab-staging") || n.ends_with(".tmp"))
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
}
