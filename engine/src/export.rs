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

fn write_safetensors(
    path: &Path,
    dtype: DType,
    tensors: &[Owned],
    metadata: HashMap<String, String>,
) -> Result<(), EngineError> {
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
    let bytes = safetensors::tensor::serialize(views, Some(metadata))
        .map_err(|e| EngineError::Export(e.to_string()))?;
    write_atomic(path, &bytes)
}

/// Writes `bytes` to `path` through a temporary file and a rename, so a reader never sees half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), EngineError> {
    use std::io::Write;
    let err = |e: std::io::Error| EngineError::Export(format!("{}: {e}", path.display()));
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp).map_err(err)?;
    f.write_all(bytes).map_err(err)?;
    f.sync_all().map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
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
    std::fs::create_dir_all(dir)
        .map_err(|e| EngineError::Export(format!("{}: {e}", dir.display())))?;
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
    let path = dir.join("vocab.safetensors");
    write_safetensors(&path, T::DTYPE, &t, meta)?;
    Ok(path)
}

/// Writes `tensors.safetensors`, `shards.safetensors` and `trace.json` into `dir` (created if
/// needed) and returns their paths.
pub fn export<T: Element>(run: &Run<T>, dir: &Path) -> Result<Vec<PathBuf>, EngineError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| EngineError::Export(format!("{}: {e}", dir.display())))?;
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
    let tensors = dir.join("tensors.safetensors");
    write_safetensors(&tensors, cfg.dtype, &t, meta.clone())?;

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
    let shards_path = dir.join("shards.safetensors");
    write_safetensors(&shards_path, cfg.dtype, &s, meta)?;

    let trace_path = dir.join("trace.json");
    let json = serde_json::to_vec_pretty(&run.report.trace.to_chrome_json())
        .map_err(|e| EngineError::Export(e.to_string()))?;
    write_atomic(&trace_path, &json)?;
    Ok(vec![tensors, shards_path, trace_path])
}
