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
    Owned { name, shape, bytes }
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
            TensorView::new(st_dtype, t.shape.clone(), &t.bytes)
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
        "pre-LN GPT-2 block; y = x@W + b with W [in,out]; qkv [h,3h] = [Q|K|V], heads contiguous; \
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
