//! Model shapes for the cost model, memory calculator and planner.
//!
//! A [`ModelSpec`] is the shape of a decoder-only transformer: enough to count parameters, FLOPs,
//! activation and KV-cache bytes. It never allocates tensors. Sources: presets from the papers and
//! model cards named on each; [`ModelSpec::from_hf_config`] reads a Hugging Face `config.json`
//! (GPT-2, Llama, Mistral, Qwen2 and Mixtral key names; Qwen-MoE's and DeepSeek-V2/V3's shared
//! experts, dense layers and multi-head latent attention). [`Scenario`] holds the guide's four
//! real-world stories as runnable presets.

use serde::{Deserialize, Serialize};
use std::path::Path;
use thiserror::Error;

/// Largest input file (config.json, hardware TOML) tplab reads: 1 MiB. Real ones are a few KiB;
/// the limit is checked on the file's metadata before a byte is read.
pub const MAX_INPUT_FILE_BYTES: u64 = 1 << 20;

/// Largest total parameter count a [`ModelSpec`] may describe: 10¹⁵, a thousand times the
/// largest model trained so far. It keeps every byte count of the memory model inside 64 bits.
pub const MAX_PARAMS: u64 = 1_000_000_000_000_000;

/// Per-field limits of a [`ModelSpec`]: far above any real model, low enough that size products
/// stay inside 64 bits.
pub const MODEL_LIMITS: [(&str, usize); 8] = [
    ("layers", 1 << 16),
    ("hidden", 1 << 20),
    ("heads", 1 << 16),
    ("kv_heads", 1 << 16),
    ("ffn", 1 << 22),
    ("vocab", 1 << 24),
    ("seq", 1 << 24),
    ("experts", 1 << 12),
];

/// Why an input file cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum InputFileError {
    #[error("{path}: not found; check the path")]
    NotFound { path: String },
    #[error("{path} is {kind}, not a regular file; give the path of a {what} file")]
    NotAFile {
        path: String,
        kind: &'static str,
        what: &'static str,
    },
    #[error("{path} is {size} bytes, over the {limit}-byte limit for a {what} file")]
    TooLarge {
        path: String,
        size: u64,
        limit: u64,
        what: &'static str,
    },
    #[error("{path} is not UTF-8 text")]
    NotText { path: String },
    #[error("cannot read {path}: {message}")]
    Io { path: String, message: String },
}

/// Reads a small text input (`what`: "config.json", "hardware TOML"): [`read_input_bytes`],
/// then UTF-8.
pub fn read_input_file(
    path: &Path,
    what: &'static str,
    limit: u64,
) -> Result<String, InputFileError> {
    let bytes = read_input_bytes(path, what, limit)?;
    String::from_utf8(bytes).map_err(|_| InputFileError::NotText {
        path: path.display().to_string(),
    })
}

/// Whether `path` may be opened for reading without blocking: it is missing (`Ok(false)`), or
/// a regular file (`Ok(true)`); a FIFO, socket, device or directory is refused from its
/// metadata, before anything opens it (opening a FIFO nobody writes to blocks forever).
pub fn check_regular_file(path: &Path, what: &'static str) -> Result<bool, InputFileError> {
    match std::fs::metadata(path) {
        Ok(meta) => {
            not_special(&meta, &path.display().to_string(), what)?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(InputFileError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        }),
    }
}

fn not_special(
    meta: &std::fs::Metadata,
    shown: &str,
    what: &'static str,
) -> Result<(), InputFileError> {
    let ft = meta.file_type();
    if ft.is_file() {
        return Ok(());
    }
    let kind = if ft.is_dir() {
        "a directory"
    } else {
        special_kind(&ft)
    };
    Err(InputFileError::NotAFile {
        path: shown.to_string(),
        kind,
        what,
    })
}

/// Reads an input file's bytes (`what` names it in errors: "config.json", "certificate"):
/// only a regular file (a FIFO, device, socket or directory is refused from its metadata,
/// before opening, so nothing blocks), at most `limit` bytes (checked before reading, and again
/// while reading: never more than `limit + 1` bytes are read).
pub fn read_input_bytes(
    path: &Path,
    what: &'static str,
    limit: u64,
) -> Result<Vec<u8>, InputFileError> {
    use std::io::Read;
    let shown = path.display().to_string();
    let io = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::NotFound {
            InputFileError::NotFound {
                path: shown.clone(),
            }
        } else {
            InputFileError::Io {
                path: shown.clone(),
                message: e.to_string(),
            }
        }
    };
    let check = |meta: &std::fs::Metadata| -> Result<(), InputFileError> {
        not_special(meta, &shown, what)?;
        if meta.len() > limit {
            return Err(InputFileError::TooLarge {
                path: shown.clone(),
                size: meta.len(),
                limit,
                what,
            });
        }
        Ok(())
    };
    check(&std::fs::metadata(path).map_err(io)?)?;
    let file = std::fs::File::open(path).map_err(io)?;
    // The same checks on what was opened (the path may have changed in between).
    check(&file.metadata().map_err(io)?)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(InputFileError::TooLarge {
            path: shown.clone(),
            size: bytes.len() as u64,
            limit,
            what,
        });
    }
    Ok(bytes)
}

#[cfg(unix)]
fn special_kind(ft: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_fifo() {
        "a FIFO (named pipe)"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_char_device() || ft.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

#[cfg(not(unix))]
fn special_kind(_ft: &std::fs::FileType) -> &'static str {
    "not a regular file"
}

/// The shape of a decoder-only transformer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// Short name (`gpt3-175b`, or the file's `model_type`).
    pub name: String,
    /// Transformer blocks `l`.
    pub layers: usize,
    /// Model width `h`.
    pub hidden: usize,
    /// Query heads `a`.
    pub heads: usize,
    /// Key/value heads (grouped-query attention); equal to `heads` for multi-head attention.
    pub kv_heads: usize,
    /// MLP inner width (`4h` for GPT; 14336 for Llama-3 8B).
    pub ffn: usize,
    /// Vocabulary size `V`.
    pub vocab: usize,
    /// Default sequence length `s` (training context).
    pub seq: usize,
    /// MLP experts per layer (1 = dense).
    pub experts: usize,
    /// Experts each token is routed to (1 for dense models).
    pub experts_per_token: usize,
    /// SwiGLU-style gated MLP (three matrices) instead of GPT's two.
    pub gated_mlp: bool,
    /// Learned position embeddings (`s·h` parameters, GPT) instead of rotary ones.
    pub learned_positions: bool,
    /// Output projection shares the input embedding.
    pub tied_embeddings: bool,
    /// Linear layers and norms carry biases (GPT: yes; Llama: no).
    pub biases: bool,
    /// Dropout after attention and MLP (counts dropout masks in activation memory).
    pub dropout: bool,
    /// Head size when it is not `hidden / heads` (config.json `head_dim`: Gemma 2 9B has 16
    /// heads of 256 on a 3584-wide model); `None` means `hidden / heads`. For multi-head latent
    /// attention, the query/key head size `qk_nope_head_dim + qk_rope_head_dim`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explicit_head_dim: Option<usize>,
    /// Width of the shared experts' MLP, all of them together, in every MoE layer (DeepSeek
    /// `n_shared_experts × moe_intermediate_size`, Qwen2-MoE `shared_expert_intermediate_size`);
    /// every token passes it. 0: none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shared_ffn: usize,
    /// Layers of an MoE model whose MLP is dense, [`ModelSpec::dense_ffn`] wide (DeepSeek
    /// `first_k_dense_replace`; Qwen-MoE `mlp_only_layers` and `decoder_sparse_step`). 0 for a
    /// dense model, whose every layer's MLP is `ffn` wide.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dense_layers: usize,
    /// Width of those dense layers' MLP (config.json `intermediate_size` of an MoE model).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dense_ffn: usize,
    /// Multi-head latent attention (DeepSeek-V2/V3) instead of MHA/GQA projections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mla: Option<Mla>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Multi-head latent attention (DeepSeek-V2, §2.1; config.json keys of the same names).
///
/// ```text
///  x [h] ─ q_a (h×q_lora) ─ norm ─ q_b (q_lora × a·(nope+rope)) ─ Q
///  x [h] ─ kv_a (h×(kv_lora+rope)) ─┬ c_kv [kv_lora] ─ norm ─ kv_b (kv_lora × a·(nope+v)) ─ K_nope, V
///                                   └ k_rope [rope], shared by the heads
///  attention over a heads of (nope+rope) for QKᵀ and v for PV ─ o (a·v × h)
/// ```
///
/// The KV cache holds `c_kv` and `k_rope`: `kv_lora + rope` elements a token and layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mla {
    /// Rank of the query's low-rank projection; 0: Q projected from `h` directly
    /// (DeepSeek-V2-Lite, `q_lora_rank: null`).
    pub q_lora_rank: usize,
    pub kv_lora_rank: usize,
    pub qk_nope_head_dim: usize,
    pub qk_rope_head_dim: usize,
    pub v_head_dim: usize,
}

impl Mla {
    /// Query/key head size, `nope + rope`.
    pub fn qk_head_dim(&self) -> usize {
        self.qk_nope_head_dim + self.qk_rope_head_dim
    }

    /// Projection weights of one layer with `heads` heads on width `h`: `q_a`, `q_b` (or `q`),
    /// `kv_a`, `kv_b` and `o`.
    pub fn weight_params(&self, h: u128, heads: u128) -> u128 {
        let qk = self.qk_head_dim() as u128;
        let q = if self.q_lora_rank == 0 {
            h * heads * qk
        } else {
            let r = self.q_lora_rank as u128;
            h * r + r * heads * qk
        };
        let r_kv = self.kv_lora_rank as u128;
        let kv_a = h * (r_kv + self.qk_rope_head_dim as u128);
        let kv_b = r_kv * heads * (self.qk_nope_head_dim + self.v_head_dim) as u128;
        let o = heads * self.v_head_dim as u128 * h;
        q + kv_a + kv_b + o
    }

    /// The two extra RMSNorms of the latents (`q_a_layernorm`, `kv_a_layernorm`).
    pub fn norm_params(&self) -> u64 {
        (self.q_lora_rank + self.kv_lora_rank) as u64
    }
}

/// Why a model cannot be built or loaded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ModelError {
    #[error("unknown model preset '{name}'; known presets: {}", known.join(", "))]
    UnknownPreset { name: String, known: Vec<String> },
    #[error("unknown scenario '{name}'; known scenarios: {}", known.join(", "))]
    UnknownScenario { name: String, known: Vec<String> },
    #[error("config.json is not valid JSON: {message}")]
    Json { message: String },
    #[error(transparent)]
    File(#[from] InputFileError),
    #[error(
        "{field} {value} is over the limit of {max}; no real model comes near it, check the value"
    )]
    OverLimit {
        field: &'static str,
        value: usize,
        max: usize,
    },
    #[error(
        "this model has {params} parameters, over the limit of {limit} (10^15); check layers, \
         hidden, ffn and experts"
    )]
    TooManyParams { params: String, limit: u64 },
    #[error("config.json must be a JSON object at the top level")]
    NotAnObject,
    #[error("config.json has no '{key}' key ({hint}); add it or pass the shape with --layers/--hidden/--heads/--vocab")]
    MissingKey { key: String, hint: &'static str },
    #[error("config.json key '{key}' must be {expected} (got {got})")]
    BadValue {
        key: String,
        expected: &'static str,
        got: String,
    },
    #[error("{field} must be at least 1 (got 0)")]
    Zero { field: &'static str },
    #[error(
        "hidden size {hidden} is not a multiple of the {heads} heads; head size must be whole"
    )]
    HiddenNotDivisibleByHeads { hidden: usize, heads: usize },
    #[error(
        "{heads} query heads cannot be grouped over {kv_heads} KV heads: the number of query \
         heads must be a multiple of the number of KV heads"
    )]
    HeadsNotDivisibleByKvHeads { heads: usize, kv_heads: usize },
    #[error(
        "{per_token} experts per token must be between 1 and the number of experts ({experts})"
    )]
    BadExpertsPerToken { per_token: usize, experts: usize },
    #[error(
        "'{name}' is neither a preset nor a config.json path (or a folder holding one), and no \
         local Hugging Face snapshot of it holds a config.json (looked in: {looked}); if it is a \
         Hugging Face repository (organisation/name), download its config first (`hf download \
         {name} config.json`); else pass the path to its config.json, or use a preset: {}",
        known.join(", ")
    )]
    NoLocalSnapshot {
        name: String,
        looked: String,
        known: Vec<String>,
    },
}

/// The Hugging Face hub cache directories a repository name is looked up in, in order:
/// `$HF_HUB_CACHE`, `$HF_HOME/hub`, `$XDG_CACHE_HOME/huggingface/hub`,
/// `~/.cache/huggingface/hub` (the `huggingface_hub` library's own order).
pub fn hf_cache_dirs() -> Vec<std::path::PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let mut out = Vec::new();
    if let Some(d) = var("HF_HUB_CACHE") {
        out.push(std::path::PathBuf::from(d));
    }
    if let Some(d) = var("HF_HOME") {
        out.push(std::path::PathBuf::from(d).join("hub"));
    }
    if let Some(d) = var("XDG_CACHE_HOME") {
        out.push(std::path::PathBuf::from(d).join("huggingface").join("hub"));
    }
    if let Some(d) = var("HOME") {
        out.push(
            std::path::PathBuf::from(d)
                .join(".cache")
                .join("huggingface")
                .join("hub"),
        );
    }
    out
}

/// The `config.json` of a local snapshot of Hugging Face repository `repo` (`org/name`) under
/// one of `cache_dirs`: `models--org--name/snapshots/<rev>/config.json`, the revision
/// `refs/main` names if there is one, else the only (or last by name) snapshot holding a
/// config.json. Nothing is downloaded.
pub fn hf_snapshot_config(
    repo: &str,
    cache_dirs: &[std::path::PathBuf],
) -> Option<std::path::PathBuf> {
    let (org, name) = repo.split_once('/')?;
    let ok = |p: &str| {
        !p.is_empty()
            && p != "."
            && p != ".."
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    if !ok(org) || !ok(name) {
        return None;
    }
    for dir in cache_dirs {
        let root = dir.join(format!("models--{org}--{name}"));
        let snaps = root.join("snapshots");
        if let Ok(rev) = std::fs::read_to_string(root.join("refs").join("main")) {
            let p = snaps.join(rev.trim()).join("config.json");
            // Whatever stands at that name (a file, or a link to something that is not one) is
            // returned: reading it names what is wrong with it.
            if p.symlink_metadata().is_ok() {
                return Some(p);
            }
        }
        let Ok(entries) = std::fs::read_dir(&snaps) else {
            continue;
        };
        let mut found: Vec<std::path::PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path().join("config.json"))
            .filter(|p| p.symlink_metadata().is_ok())
            .collect();
        found.sort();
        if let Some(p) = found.pop() {
            return Some(p);
        }
    }
    None
}

/// Named model presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelPreset {
    Gpt2Small,
    Llama3_8b,
    Llama3_70b,
    Gpt3_175b,
    Mixtral8x7b,
    Megatron1t,
    Llama31_405b,
    Gemma2_9b,
    Llama2_7b,
    Llama2_70b,
}

impl ModelPreset {
    pub const ALL: [ModelPreset; 10] = [
        ModelPreset::Gpt2Small,
        ModelPreset::Llama3_8b,
        ModelPreset::Llama3_70b,
        ModelPreset::Gpt3_175b,
        ModelPreset::Mixtral8x7b,
        ModelPreset::Megatron1t,
        ModelPreset::Llama31_405b,
        ModelPreset::Gemma2_9b,
        ModelPreset::Llama2_7b,
        ModelPreset::Llama2_70b,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ModelPreset::Gpt2Small => "gpt2-small",
            ModelPreset::Llama3_8b => "llama3-8b",
            ModelPreset::Llama3_70b => "llama3-70b",
            ModelPreset::Gpt3_175b => "gpt3-175b",
            ModelPreset::Mixtral8x7b => "mixtral-8x7b",
            ModelPreset::Megatron1t => "megatron-1t",
            ModelPreset::Llama31_405b => "llama3.1-405b",
            ModelPreset::Gemma2_9b => "gemma2-9b",
            ModelPreset::Llama2_7b => "llama2-7b",
            ModelPreset::Llama2_70b => "llama2-70b",
        }
    }

    /// The name a reader knows the model by, e.g. "GPT-3 175B" (the key, [`ModelPreset::name`],
    /// stays in command-line flags, JSON and file names).
    pub fn display_name(self) -> &'static str {
        match self {
            ModelPreset::Gpt2Small => "GPT-2 small",
            ModelPreset::Llama3_8b => "Llama 3 8B",
            ModelPreset::Llama3_70b => "Llama 3 70B",
            ModelPreset::Gpt3_175b => "GPT-3 175B",
            ModelPreset::Mixtral8x7b => "Mixtral 8x7B",
            ModelPreset::Megatron1t => "Megatron 1T",
            ModelPreset::Llama31_405b => "Llama 3.1 405B",
            ModelPreset::Gemma2_9b => "Gemma 2 9B",
            ModelPreset::Llama2_7b => "Llama 2 7B",
            ModelPreset::Llama2_70b => "Llama 2 70B",
        }
    }

    /// The preset's shape. Sources in comments.
    pub fn spec(self) -> ModelSpec {
        match self {
            // GPT-2 small: Radford et al. 2019 / HF `gpt2` config.json (n_layer 12, n_embd 768,
            // n_head 12, vocab 50257, n_positions 1024); 124M parameters.
            ModelPreset::Gpt2Small => ModelSpec::gpt("gpt2-small", 12, 768, 12, 50257, 1024),
            // Llama-3 8B: Meta-Llama-3-8B config.json (32 layers, 4096, 32 heads, 8 KV heads,
            // intermediate 14336, vocab 128256); model card: 8.03B parameters.
            ModelPreset::Llama3_8b => {
                ModelSpec::llama("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192)
            }
            // Llama-3 70B: Meta-Llama-3-70B config.json (80 layers, 8192, 64 heads, 8 KV heads,
            // intermediate 28672, vocab 128256); model card: 70.6B parameters.
            ModelPreset::Llama3_70b => {
                ModelSpec::llama("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192)
            }
            // GPT-3 175B: Brown et al. 2020, Table 2.1 (96 layers, d_model 12288, 96 heads,
            // context 2048); vocab 51200 as in Narayanan et al. 2021 (padded GPT-2 BPE).
            ModelPreset::Gpt3_175b => ModelSpec::gpt("gpt3-175b", 96, 12288, 96, 51200, 2048),
            // Mixtral 8x7B: Mixtral-8x7B-v0.1 config.json (32 layers, 4096, 32 heads, 8 KV heads,
            // intermediate 14336, vocab 32000, 8 local experts, 2 per token); 46.7B parameters.
            ModelPreset::Mixtral8x7b => ModelSpec {
                experts: 8,
                experts_per_token: 2,
                ..ModelSpec::llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 4096)
            },
            // The 1T configuration of Narayanan et al. 2021, Table 1 (128 layers, hidden 25600,
            // 160 heads, seq 2048, vocab 51200).
            ModelPreset::Megatron1t => ModelSpec::gpt("megatron-1t", 128, 25600, 160, 51200, 2048),
            // Llama 3.1 405B: Meta-Llama-3.1-405B config.json (126 layers, 16384, 128 heads, 8 KV
            // heads, intermediate 53248, vocab 128256, untied); model card: 405B parameters.
            ModelPreset::Llama31_405b => {
                ModelSpec::llama("llama3.1-405b", 126, 16384, 128, 8, 53248, 128256, 8192)
            }
            // Gemma 2 9B: google/gemma-2-9b config.json (42 layers, hidden 3584, 16 heads of
            // head_dim 256, 8 KV heads, intermediate 14336 GeGLU, vocab 256000, tied
            // embeddings; four RMSNorms per block, counted as two: 0.3M of 9.24B).
            ModelPreset::Gemma2_9b => ModelSpec {
                tied_embeddings: true,
                explicit_head_dim: Some(256),
                ..ModelSpec::llama("gemma2-9b", 42, 3584, 16, 8, 14336, 256000, 8192)
            },
            // Llama 2 7B / 70B: meta-llama config.json (32 layers, 4096, 32 heads, MHA, 11008;
            // 80 layers, 8192, 64 heads, 8 KV heads, 28672; vocab 32000, context 4096).
            ModelPreset::Llama2_7b => {
                ModelSpec::llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096)
            }
            ModelPreset::Llama2_70b => {
                ModelSpec::llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096)
            }
        }
    }
}

impl std::str::FromStr for ModelPreset {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let key = s.to_ascii_lowercase().replace('_', "-");
        let key = match key.as_str() {
            "llama3-405b" | "llama31-405b" | "llama3.1-405b" => "llama3.1-405b".to_string(),
            "gemma-2-9b" => "gemma2-9b".to_string(),
            _ => key,
        };
        ModelPreset::ALL
            .into_iter()
            .find(|p| p.name() == key)
            .ok_or_else(|| ModelError::UnknownPreset {
                name: s.to_string(),
                known: ModelPreset::ALL
                    .iter()
                    .map(|p| p.name().to_string())
                    .collect(),
            })
    }
}

impl ModelSpec {
    /// A GPT-style model: MHA, `ffn = 4h`, learned positions, tied embeddings, biases, dropout.
    pub fn gpt(
        name: &str,
        layers: usize,
        hidden: usize,
        heads: usize,
        vocab: usize,
        seq: usize,
    ) -> Self {
        ModelSpec {
            name: name.to_string(),
            layers,
            hidden,
            heads,
            kv_heads: heads,
            ffn: hidden.saturating_mul(4),
            vocab,
            seq,
            experts: 1,
            experts_per_token: 1,
            gated_mlp: false,
            learned_positions: true,
            tied_embeddings: true,
            biases: true,
            dropout: true,
            explicit_head_dim: None,
            shared_ffn: 0,
            dense_layers: 0,
            dense_ffn: 0,
            mla: None,
        }
    }

    /// A Llama-style model: GQA, SwiGLU, rotary positions, RMSNorm, no biases, no dropout,
    /// untied output.
    #[allow(clippy::too_many_arguments)]
    pub fn llama(
        name: &str,
        layers: usize,
        hidden: usize,
        heads: usize,
        kv_heads: usize,
        ffn: usize,
        vocab: usize,
        seq: usize,
    ) -> Self {
        ModelSpec {
            kv_heads,
            ffn,
            gated_mlp: true,
            learned_positions: false,
            tied_embeddings: false,
            biases: false,
            dropout: false,
            ..ModelSpec::gpt(name, layers, hidden, heads, vocab, seq)
        }
    }

    /// A preset, a `config.json` path, or a Hugging Face repository name: a name in
    /// [`ModelPreset::ALL`], a path ending in `.json` (read with [`read_input_file`]: a regular
    /// file of at most [`MAX_INPUT_FILE_BYTES`]), or `org/name` whose local snapshot holds a
    /// config.json ([`hf_snapshot_config`] under [`hf_cache_dirs`]; nothing is downloaded).
    pub fn from_preset_or_path(name_or_path: &str) -> Result<Self, ModelError> {
        Self::from_preset_path_or_repo(name_or_path, &hf_cache_dirs())
    }

    /// [`ModelSpec::from_preset_or_path`] with the cache directories given.
    pub fn from_preset_path_or_repo(
        name_or_path: &str,
        cache_dirs: &[std::path::PathBuf],
    ) -> Result<Self, ModelError> {
        // A path to a config.json, or a model's directory that holds one (a local snapshot or
        // a checkpoint folder); a JSON error names the file.
        let path = Path::new(name_or_path);
        let file = if name_or_path.ends_with(".json") {
            Some(path.to_path_buf())
        } else if path.is_dir() {
            Some(path.join("config.json"))
        } else if path.is_file() && name_or_path.parse::<ModelPreset>().is_err() {
            // A config saved under another name (`./llama.cfg`); a preset's name wins.
            Some(path.to_path_buf())
        } else {
            None
        };
        if let Some(file) = file {
            let text = read_input_file(&file, "config.json", MAX_INPUT_FILE_BYTES)?;
            return Self::from_hf_config(&text).map_err(|e| match e {
                ModelError::Json { message } => ModelError::Json {
                    message: format!("{}: {message}", file.display()),
                },
                other => other,
            });
        }
        match name_or_path.parse::<ModelPreset>() {
            Ok(p) => Ok(p.spec()),
            Err(e) if !name_or_path.contains('/') => Err(e),
            Err(_) => match hf_snapshot_config(name_or_path.trim(), cache_dirs) {
                Some(path) => {
                    let text = read_input_file(&path, "config.json", MAX_INPUT_FILE_BYTES)?;
                    Self::from_hf_config(&text)
                }
                None => Err(ModelError::NoLocalSnapshot {
                    name: name_or_path.to_string(),
                    looked: if cache_dirs.is_empty() {
                        "no cache directory: set HF_HUB_CACHE or HF_HOME".to_string()
                    } else {
                        cache_dirs
                            .iter()
                            .map(|d| d.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    },
                    known: ModelPreset::ALL
                        .iter()
                        .map(|p| p.name().to_string())
                        .collect(),
                }),
            },
        }
    }

    /// Reads a Hugging Face `config.json` (text). GPT-2 keys (`n_layer`, `n_embd`, `n_head`,
    /// `n_inner`, `n_positions`) or Llama/Mistral/Qwen2/Mixtral keys (`num_hidden_layers`,
    /// `hidden_size`, `num_attention_heads`, `num_key_value_heads`, `intermediate_size`,
    /// `max_position_embeddings`, `num_local_experts`, `num_experts_per_tok`), with the MoE keys
    /// of Qwen-MoE (`num_experts`, `moe_intermediate_size`, `shared_expert_intermediate_size`,
    /// `mlp_only_layers`, `decoder_sparse_step`) and DeepSeek-V2/V3 (`n_routed_experts`,
    /// `n_shared_experts`, `first_k_dense_replace`, and multi-head latent attention's
    /// `q_lora_rank`, `kv_lora_rank`, `qk_nope_head_dim`, `qk_rope_head_dim`, `v_head_dim`).
    pub fn from_hf_config(json_text: &str) -> Result<Self, ModelError> {
        let v = crate::text::parse_json_unique_keys(json_text).map_err(|e| ModelError::Json {
            message: e.to_string(),
        })?;
        let outer = v.as_object().ok_or(ModelError::NotAnObject)?;
        // Multimodal configs (Llama 4, Gemma 3, Mistral 3, Qwen2-VL) nest the language model's
        // shape in `text_config`; read that when the top level has no layer count of its own.
        let obj = match outer.get("text_config").and_then(|t| t.as_object()) {
            Some(text)
                if !outer.contains_key("num_hidden_layers") && !outer.contains_key("n_layer") =>
            {
                text
            }
            _ => outer,
        };
        let model_type = obj
            .get("model_type")
            .and_then(|m| m.as_str())
            .unwrap_or("")
            .to_string();
        let get = |key: &str| -> Result<Option<usize>, ModelError> {
            match obj.get(key) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(x) => {
                    x.as_u64()
                        .map(|n| Some(n as usize))
                        .ok_or_else(|| ModelError::BadValue {
                            key: key.to_string(),
                            expected: "a non-negative integer",
                            got: x.to_string(),
                        })
                }
            }
        };
        let need = |key: &str, hint: &'static str| -> Result<usize, ModelError> {
            get(key)?.ok_or_else(|| ModelError::MissingKey {
                key: key.to_string(),
                hint,
            })
        };
        let get_bool = |key: &str| obj.get(key).and_then(|b| b.as_bool());
        let gpt2_style = model_type == "gpt2" || obj.contains_key("n_embd");
        // The model's name: its `model_type`, or `fallback` without one.
        let name_or = |fallback: &'static str| {
            if model_type.is_empty() {
                fallback
            } else {
                model_type.as_str()
            }
        };
        let spec = if gpt2_style {
            let layers = need("n_layer", "number of transformer blocks")?;
            let hidden = need("n_embd", "model width")?;
            let heads = need("n_head", "attention heads")?;
            let vocab = need("vocab_size", "vocabulary size")?;
            let seq = need("n_positions", "context length")?;
            let ffn = get("n_inner")?.unwrap_or(hidden.saturating_mul(4));
            ModelSpec {
                ffn,
                tied_embeddings: get_bool("tie_word_embeddings").unwrap_or(true),
                ..ModelSpec::gpt(name_or("gpt2"), layers, hidden, heads, vocab, seq)
            }
        } else {
            let layers = need("num_hidden_layers", "number of transformer blocks")?;
            let hidden = need("hidden_size", "model width")?;
            let heads = need("num_attention_heads", "query heads")?;
            let kv_heads = get("num_key_value_heads")?.unwrap_or(heads);
            let ffn = need("intermediate_size", "MLP inner width")?;
            let vocab = need("vocab_size", "vocabulary size")?;
            let seq = need("max_position_embeddings", "context length")?;
            // Routed experts: Mixtral and Llama 4 `num_local_experts`, Qwen-MoE `num_experts`,
            // DeepSeek-V2/V3 `n_routed_experts`.
            let experts = match get("num_local_experts")? {
                Some(e) => Some(e),
                None => match get("num_experts")? {
                    Some(e) => Some(e),
                    None => get("n_routed_experts")?,
                },
            }
            .unwrap_or(1);
            let experts_per_token = get("num_experts_per_tok")?.unwrap_or(1);
            // The expert's own width where the config gives one apart from the dense MLP's
            // (DeepSeek, Qwen-MoE: `moe_intermediate_size`); `intermediate_size` is then the
            // width of the MoE model's dense layers.
            let dense_ffn = ffn;
            let ffn = match get("moe_intermediate_size")? {
                Some(f) if experts > 1 => f,
                _ => ffn,
            };
            // Shared experts, every token through them: Qwen2-MoE gives their width
            // (`shared_expert_intermediate_size`), DeepSeek their number of expert-wide MLPs
            // (`n_shared_experts`).
            // Llama 4's MoE layers always hold one shared expert of the routed experts' width
            // (transformers' `Llama4TextMoe.shared_expert`); its config has no key for it.
            let llama4 = model_type.starts_with("llama4");
            let shared_ffn = if experts > 1 {
                match get("shared_expert_intermediate_size")? {
                    Some(w) => w,
                    None if llama4 => ffn,
                    None => get("n_shared_experts")?.unwrap_or(0).saturating_mul(ffn),
                }
            } else {
                0
            };
            // Llama 4's dense layers (those `interleave_moe_layer_step` skips) are
            // `intermediate_size_mlp` wide.
            let dense_ffn = match get("intermediate_size_mlp")? {
                Some(w) if llama4 => w,
                _ => dense_ffn,
            };
            // Dense layers of an MoE model: DeepSeek's first `first_k_dense_replace` layers;
            // Qwen-MoE's `mlp_only_layers` and the layers `decoder_sparse_step` skips (layer i
            // is sparse when (i + 1) % step == 0, transformers' Qwen2MoeDecoderLayer).
            let dense_layers = if experts > 1 {
                let first_k = get("first_k_dense_replace")?.unwrap_or(0).min(layers);
                let step = match get("decoder_sparse_step")? {
                    Some(st) => st,
                    None => get("interleave_moe_layer_step")?.unwrap_or(1),
                }
                .max(1);
                let only: Vec<usize> = match obj.get("mlp_only_layers") {
                    None | Some(serde_json::Value::Null) => Vec::new(),
                    Some(serde_json::Value::Array(a)) => a
                        .iter()
                        .map(|x| {
                            x.as_u64()
                                .map(|n| n as usize)
                                .ok_or_else(|| ModelError::BadValue {
                                    key: "mlp_only_layers".to_string(),
                                    expected: "a list of layer indices",
                                    got: x.to_string(),
                                })
                        })
                        .collect::<Result<_, _>>()?,
                    Some(x) => {
                        return Err(ModelError::BadValue {
                            key: "mlp_only_layers".to_string(),
                            expected: "a list of layer indices",
                            got: x.to_string(),
                        })
                    }
                };
                (0..layers.min(MODEL_LIMITS[0].1))
                    .filter(|&i| i < first_k || only.contains(&i) || (i + 1) % step != 0)
                    .count()
            } else {
                0
            };
            // Multi-head latent attention (DeepSeek-V2/V3): `kv_lora_rank` and its head sizes;
            // `q_lora_rank` null projects Q from the hidden state directly (V2-Lite).
            let mla = match get("kv_lora_rank")? {
                Some(kv_lora_rank) => Some(Mla {
                    q_lora_rank: get("q_lora_rank")?.unwrap_or(0),
                    kv_lora_rank,
                    qk_nope_head_dim: need(
                        "qk_nope_head_dim",
                        "MLA query/key head size without rotary",
                    )?,
                    qk_rope_head_dim: need("qk_rope_head_dim", "MLA rotary head size")?,
                    v_head_dim: need("v_head_dim", "MLA value head size")?,
                }),
                None => None,
            };
            // `head_dim` (Gemma, Mistral Nemo, Qwen3) when it is not hidden / heads; with MLA,
            // the query/key head size.
            let head_dim = match &mla {
                Some(m) => Some(m.qk_head_dim()),
                None => get("head_dim")?,
            };
            let explicit_head_dim = match head_dim {
                Some(0) => {
                    return Err(ModelError::BadValue {
                        key: "head_dim".to_string(),
                        expected: "a positive integer",
                        got: "0".to_string(),
                    })
                }
                Some(d) if heads == 0 || hidden % heads != 0 || d != hidden / heads => Some(d),
                _ => None,
            };
            // Transformers' defaults when the key is absent: Gemma configs tie the output to the
            // embedding, Llama/Mistral/Qwen2/Mixtral do not.
            let tie_default = model_type.starts_with("gemma");
            ModelSpec {
                experts,
                experts_per_token,
                explicit_head_dim,
                shared_ffn,
                dense_layers,
                dense_ffn: if dense_layers > 0 { dense_ffn } else { 0 },
                mla,
                tied_embeddings: get_bool("tie_word_embeddings").unwrap_or(tie_default),
                // Qwen2 puts biases on the QKV projection only; counted as no biases (the
                // difference is below 0.01% of parameters).
                ..ModelSpec::llama(
                    name_or("hf-model"),
                    layers,
                    hidden,
                    heads,
                    kv_heads,
                    ffn,
                    vocab,
                    seq,
                )
            }
        };
        spec.validate()?;
        Ok(spec)
    }

    /// Shape rules: non-zero sizes within [`MODEL_LIMITS`], `hidden % heads`,
    /// `heads % kv_heads`, experts per token, and at most [`MAX_PARAMS`] parameters.
    pub fn validate(&self) -> Result<(), ModelError> {
        for (field, v) in [
            ("layers", self.layers),
            ("hidden", self.hidden),
            ("heads", self.heads),
            ("kv_heads", self.kv_heads),
            ("ffn", self.ffn),
            ("vocab", self.vocab),
            ("seq", self.seq),
            ("experts", self.experts),
        ] {
            if v == 0 {
                return Err(ModelError::Zero { field });
            }
            if let Some(&(_, max)) = MODEL_LIMITS.iter().find(|(f, _)| *f == field) {
                if v > max {
                    return Err(ModelError::OverLimit {
                        field,
                        value: v,
                        max,
                    });
                }
            }
        }
        if let Some(d) = self.explicit_head_dim {
            if d == 0 {
                return Err(ModelError::Zero { field: "head_dim" });
            }
            if d > 1 << 16 {
                return Err(ModelError::OverLimit {
                    field: "head_dim",
                    value: d,
                    max: 1 << 16,
                });
            }
        } else if !self.hidden.is_multiple_of(self.heads) {
            return Err(ModelError::HiddenNotDivisibleByHeads {
                hidden: self.hidden,
                heads: self.heads,
            });
        }
        if !self.heads.is_multiple_of(self.kv_heads) {
            return Err(ModelError::HeadsNotDivisibleByKvHeads {
                heads: self.heads,
                kv_heads: self.kv_heads,
            });
        }
        if self.experts_per_token == 0 || self.experts_per_token > self.experts {
            return Err(ModelError::BadExpertsPerToken {
                per_token: self.experts_per_token,
                experts: self.experts,
            });
        }
        let ffn_max = MODEL_LIMITS[4].1;
        for (field, v) in [
            ("shared_ffn", self.shared_ffn),
            ("dense_ffn", self.dense_ffn),
        ] {
            if v > ffn_max {
                return Err(ModelError::OverLimit {
                    field,
                    value: v,
                    max: ffn_max,
                });
            }
        }
        if self.dense_layers > self.layers {
            return Err(ModelError::OverLimit {
                field: "dense_layers",
                value: self.dense_layers,
                max: self.layers,
            });
        }
        if self.dense_layers > 0 && self.dense_ffn == 0 {
            return Err(ModelError::Zero { field: "dense_ffn" });
        }
        if let Some(m) = &self.mla {
            for (field, v) in [
                ("kv_lora_rank", m.kv_lora_rank),
                ("qk_rope_head_dim", m.qk_rope_head_dim),
                ("v_head_dim", m.v_head_dim),
            ] {
                if v == 0 {
                    return Err(ModelError::Zero { field });
                }
            }
            for (field, v) in [
                ("q_lora_rank", m.q_lora_rank),
                ("kv_lora_rank", m.kv_lora_rank),
                ("qk_nope_head_dim", m.qk_nope_head_dim),
                ("qk_rope_head_dim", m.qk_rope_head_dim),
                ("v_head_dim", m.v_head_dim),
            ] {
                if v > 1 << 16 {
                    return Err(ModelError::OverLimit {
                        field,
                        value: v,
                        max: 1 << 16,
                    });
                }
            }
        }
        let params = self.params_exact();
        if params > u128::from(MAX_PARAMS) {
            return Err(ModelError::TooManyParams {
                params: params.to_string(),
                limit: MAX_PARAMS,
            });
        }
        Ok(())
    }

    /// [`ModelSpec::params`] in 128-bit arithmetic: exact for any field values within
    /// `usize`, so validation can compare it against [`MAX_PARAMS`] without wrapping.
    fn params_exact(&self) -> u128 {
        let (h, v, s) = (self.hidden as u128, self.vocab as u128, self.seq as u128);
        let (moe, dense) = (self.moe_layers() as u128, self.dense_layers as u128);
        let attn = self.attention_params_exact();
        let norms = u128::from(self.norm_params_per_layer());
        let moe_layer = attn
            .saturating_add(self.moe_mlp_params_exact())
            .saturating_add(norms);
        let dense_layer = attn
            .saturating_add(self.mlp_params_exact(self.dense_ffn))
            .saturating_add(norms);
        let embed = v * h + if self.learned_positions { s * h } else { 0 };
        let output = if self.tied_embeddings { 0 } else { v * h };
        let final_norm = if self.biases { 2 * h } else { h };
        moe.saturating_mul(moe_layer)
            .saturating_add(dense.saturating_mul(dense_layer))
            .saturating_add(embed)
            .saturating_add(output)
            .saturating_add(final_norm)
    }

    /// Attention weights and biases of one block, 128-bit.
    fn attention_params_exact(&self) -> u128 {
        let (h, kv) = (
            self.hidden as u128,
            (self.kv_heads as u128) * self.head_dim() as u128,
        );
        let q = (self.heads as u128) * self.head_dim() as u128;
        if let Some(mla) = &self.mla {
            return mla.weight_params(h, self.heads as u128);
        }
        h * (q + 2 * kv) + q * h + if self.biases { q + 2 * kv + h } else { 0 }
    }

    /// One MLP of width `f` (with biases when the model has them), 128-bit.
    fn mlp_params_exact(&self, f: usize) -> u128 {
        let (h, f) = (self.hidden as u128, f as u128);
        let mats = u128::from(self.mlp_matrices());
        mats * h * f + if self.biases { (mats - 1) * f + h } else { 0 }
    }

    /// The MLP part of one MoE layer: every routed expert, the shared experts and the router
    /// (a dense model's one MLP).
    fn moe_mlp_params_exact(&self) -> u128 {
        let e = self.experts as u128;
        let router = if self.experts > 1 {
            self.hidden as u128 * e
        } else {
            0
        };
        let shared = if self.shared_ffn > 0 {
            self.mlp_params_exact(self.shared_ffn)
        } else {
            0
        };
        e.saturating_mul(self.mlp_params_exact(self.ffn))
            .saturating_add(shared)
            .saturating_add(router)
    }

    /// Layers whose MLP is the routed experts' (every layer of a dense model, whose one MLP
    /// counts as one expert): `layers − dense_layers`.
    pub fn moe_layers(&self) -> usize {
        self.layers.saturating_sub(self.dense_layers)
    }

    /// Head size: config.json's `head_dim` when given, else `h / a`.
    pub fn head_dim(&self) -> usize {
        self.explicit_head_dim
            .unwrap_or(self.hidden / self.heads.max(1))
    }

    /// Width of Q (and of the out-projection's input): `heads · head_dim`, `h` unless the
    /// model sets `head_dim`.
    pub fn q_dim(&self) -> usize {
        self.heads.saturating_mul(self.head_dim())
    }

    /// Width of K (and of V): `kv_heads · head_dim`.
    pub fn kv_dim(&self) -> usize {
        self.kv_heads * self.head_dim()
    }

    /// The width whose `4·s·width` FLOPs a token spends in the attention core forward
    /// (scores `2·s·a·d_qk`, context `2·s·a·d_v`): `q_dim` for MHA/GQA, `a·(d_qk + d_v)/2`
    /// with multi-head latent attention (192 and 128 for DeepSeek-V3).
    pub fn attention_core_dim(&self) -> f64 {
        match &self.mla {
            None => self.q_dim() as f64,
            Some(m) => self.heads as f64 * (m.qk_head_dim() + m.v_head_dim) as f64 / 2.0,
        }
    }

    /// Matrices of one expert MLP: 2 (GPT) or 3 (gated).
    fn mlp_matrices(&self) -> u64 {
        if self.gated_mlp {
            3
        } else {
            2
        }
    }

    /// Attention parameters of one block: QKV `h·(q_dim+2·kv_dim)` and out `q_dim·h`
    /// (`q_dim = h` unless `head_dim` is set), plus biases; with multi-head latent attention
    /// the five projections of [`Mla::weight_params`].
    pub fn attention_params_per_layer(&self) -> u64 {
        u64::try_from(self.attention_params_exact()).unwrap_or(u64::MAX)
    }

    /// Attention projection weights of one block (no biases).
    pub fn attention_weight_params(&self) -> u64 {
        let (h, kv, q) = (
            self.hidden as u64,
            self.kv_dim() as u64,
            self.q_dim() as u64,
        );
        match &self.mla {
            Some(m) => {
                u64::try_from(m.weight_params(h.into(), self.heads as u128)).unwrap_or(u64::MAX)
            }
            None => h * (q + 2 * kv) + q * h,
        }
    }

    /// Parameters of one expert MLP (with biases when the model has them).
    pub fn mlp_params_per_expert(&self) -> u64 {
        let (h, f) = (self.hidden as u64, self.ffn as u64);
        let w = self.mlp_matrices() * h * f;
        let b = if self.biases {
            (self.mlp_matrices() - 1) * f + h
        } else {
            0
        };
        w + b
    }

    /// Parameters of the shared experts of one MoE layer (0 without them).
    pub fn shared_mlp_params(&self) -> u64 {
        if self.shared_ffn == 0 {
            return 0;
        }
        u64::try_from(self.mlp_params_exact(self.shared_ffn)).unwrap_or(u64::MAX)
    }

    /// Norm parameters of one block: two LayerNorms (`4h`) or two RMSNorms (`2h`), plus the
    /// latent norms of multi-head latent attention.
    pub fn norm_params_per_layer(&self) -> u64 {
        let h = self.hidden as u64;
        (if self.biases { 4 * h } else { 2 * h }) + self.mla.map_or(0, |m| m.norm_params())
    }

    /// All parameters of one block (every expert, the router if MoE). For a model whose
    /// layers differ (dense layers among MoE ones), the mean over the layers (rounded down).
    pub fn params_per_layer(&self) -> u64 {
        let blocks = self
            .params_exact()
            .saturating_sub(u128::from(self.embedding_params()))
            .saturating_sub(u128::from(self.output_params()))
            .saturating_sub(u128::from(self.final_norm_params()));
        u64::try_from(blocks / self.layers.max(1) as u128).unwrap_or(u64::MAX)
    }

    /// Input embedding `V·h` plus learned positions `s·h`.
    pub fn embedding_params(&self) -> u64 {
        let h = self.hidden as u64;
        self.vocab as u64 * h
            + if self.learned_positions {
                self.seq as u64 * h
            } else {
                0
            }
    }

    /// Output projection parameters not shared with the embedding (0 when tied).
    pub fn output_params(&self) -> u64 {
        if self.tied_embeddings {
            0
        } else {
            (self.vocab * self.hidden) as u64
        }
    }

    /// Final norm parameters.
    pub fn final_norm_params(&self) -> u64 {
        let h = self.hidden as u64;
        if self.biases {
            2 * h
        } else {
            h
        }
    }

    /// Total parameters. For a GPT-style model this is Narayanan et al. 2021, Eq. 2,
    /// `12·l·h²·(1 + 13/(12h) + (V+s)/(12·l·h))`, plus the final LayerNorm's `2h`.
    /// Computed in 128 bits and saturated, so it never wraps (a validated spec has at most
    /// [`MAX_PARAMS`]).
    pub fn params(&self) -> u64 {
        u64::try_from(self.params_exact()).unwrap_or(u64::MAX)
    }

    /// Parameters a token passes through (MoE: `experts_per_token` experts, not all).
    pub fn active_params(&self) -> u64 {
        let inactive = (self.experts.saturating_sub(self.experts_per_token) as u64)
            .saturating_mul(self.mlp_params_per_expert());
        self.params()
            .saturating_sub((self.moe_layers() as u64).saturating_mul(inactive))
    }

    /// Matrix-multiply weights one token multiplies by in one block (active experts only): the
    /// `2·N` FLOPs-per-token term of the forward pass counts these. For a model whose layers
    /// differ (dense layers among MoE ones), the mean over the layers (rounded down).
    pub fn matmul_params_per_layer_active(&self) -> u64 {
        let h = self.hidden as u64;
        let attn = self.attention_weight_params();
        let router = if self.experts > 1 {
            h * self.experts as u64
        } else {
            0
        };
        let moe = attn
            + self.experts_per_token as u64 * self.mlp_matrices() * h * self.ffn as u64
            + self.mlp_matrices() * h * self.shared_ffn as u64
            + router;
        if self.dense_layers == 0 {
            return moe;
        }
        let dense = attn + self.mlp_matrices() * h * self.dense_ffn as u64;
        let l = self.layers.max(1) as u128;
        let total = self.moe_layers() as u128 * u128::from(moe)
            + self.dense_layers as u128 * u128::from(dense);
        u64::try_from(total / l).unwrap_or(u64::MAX)
    }

    /// Routed-expert weights a token multiplies by in one block, the mean over the layers:
    /// `k · mats · h · f · moe_layers / layers` (0 for a dense model). Part of
    /// [`ModelSpec::matmul_params_per_layer_active`]; the cost model prices these as grouped
    /// GEMMs.
    pub fn routed_matmul_params_per_layer(&self) -> f64 {
        if self.experts <= 1 {
            return 0.0;
        }
        self.experts_per_token as f64
            * self.mlp_matrices() as f64
            * self.hidden as f64
            * self.ffn as f64
            * self.moe_layers() as f64
            / self.layers.max(1) as f64
    }

    /// The MLP width a token passes in one block, the mean over the layers, as `(k, f)` whose
    /// product is it: `(experts_per_token, ffn)` when every layer's MLP is the routed experts
    /// alone (a dense model: `(1, ffn)`), else `(1, (moe_layers·(k·f + shared) +
    /// dense_layers·dense_ffn) / layers)`. Activation memory and element-wise passes scale with
    /// it.
    pub fn active_mlp_width(&self) -> (usize, usize) {
        if self.shared_ffn == 0 && self.dense_layers == 0 {
            return (self.experts_per_token, self.ffn);
        }
        let moe = self.experts_per_token as u128 * self.ffn as u128 + self.shared_ffn as u128;
        let total =
            self.moe_layers() as u128 * moe + self.dense_layers as u128 * self.dense_ffn as u128;
        (
            1,
            usize::try_from(total / self.layers.max(1) as u128).unwrap_or(usize::MAX),
        )
    }

    /// KV-cache elements per token and layer: `2 · kv_heads · head_dim` (K and V), or with
    /// multi-head latent attention the latent and the shared rope key, `kv_lora_rank +
    /// qk_rope_head_dim` (DeepSeek-V2, §2.1.2: 576 for V3).
    pub fn kv_cache_elems_per_token_layer(&self) -> u64 {
        match &self.mla {
            Some(m) => (m.kv_lora_rank + m.qk_rope_head_dim) as u64,
            None => 2 * self.kv_dim() as u64,
        }
    }

    /// KV-cache bytes per token over all layers: `2 (K and V) · l · kv_heads · head_dim · bytes`
    /// ([`ModelSpec::kv_cache_elems_per_token_layer`] with multi-head latent attention).
    pub fn kv_cache_bytes_per_token(&self, bytes_per_elem: u64) -> u64 {
        self.layers as u64 * self.kv_cache_elems_per_token_layer() * bytes_per_elem
    }

    /// One-line description for tables.
    pub fn summary(&self) -> String {
        let mut moe = if self.experts > 1 {
            format!(
                ", {} experts (top-{})",
                self.experts, self.experts_per_token
            )
        } else {
            String::new()
        };
        if self.experts > 1 {
            if self.shared_ffn > 0 {
                moe.push_str(&format!(" + shared {}", self.shared_ffn));
            }
            if self.dense_layers > 0 {
                moe.push_str(&format!(
                    ", {} dense layers (ffn={})",
                    self.dense_layers, self.dense_ffn
                ));
            }
            moe.push_str(&format!(
                ", {:.2}B active",
                self.active_params() as f64 / 1e9
            ));
        }
        if let Some(m) = &self.mla {
            moe.push_str(&format!(
                ", MLA (kv_lora={} rope={})",
                m.kv_lora_rank, m.qk_rope_head_dim
            ));
        }
        let hd = match self.explicit_head_dim {
            Some(d) => format!(" head_dim={d}"),
            None => String::new(),
        };
        format!(
            "{}: {:.2}B params, l={} h={} heads={}{} kv_heads={} ffn={} V={} s={}{}",
            self.name,
            self.params() as f64 / 1e9,
            self.layers,
            self.hidden,
            self.heads,
            hd,
            self.kv_heads,
            self.ffn,
            self.vocab,
            self.seq,
            moe
        )
    }
}

/// Training or serving.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    Train,
    /// Inference with a fixed TP size (vLLM's `tensor_parallel_size`).
    Serve {
        tp: usize,
    },
}

/// One of the guide's real-world uses, with the numbers to run it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    pub id: &'static str,
    pub title: &'static str,
    /// What the scenario shows, in a few sentences.
    pub story: &'static str,
    pub model: ModelPreset,
    /// GPU name in [`crate::capacity::hardware::GpuSpec::catalogue`].
    pub gpu: &'static str,
    pub gpus: usize,
    pub gpus_per_node: usize,
    /// Inter-node link name in [`crate::capacity::hardware::LinkSpec::catalogue`].
    pub inter_node: &'static str,
    /// Global batch (sequences per iteration; concurrent sequences when serving).
    pub global_batch: usize,
    pub seq: usize,
    pub workload: Workload,
}

impl Scenario {
    /// The guide's scenarios (section 6, "Real-world uses").
    pub fn all() -> Vec<Scenario> {
        vec![
            Scenario {
                id: "175b-one-node",
                title: "Training a 175B model with TP=8 inside one NVLink node",
                story:
                    "The guide trains a 175B model with Megatron-LM, each layer's weights split \
                        over the 8 GPUs of one NVLink node. TP=8 makes the fp16 weights fit: \
                        175B x 2 bytes / 8 = 44 GB (41 GiB) per 80 GB GPU. Training does not fit \
                        on that one node: gradients and mixed-precision Adam states bring it to \
                        16 bytes per parameter, 350 GB (326 GiB) per GPU. Pipeline parallelism across nodes is what \
                        adds the room: TP=8 inside each node, PP=8 over 8 nodes (Korthikanti et \
                        al. 2022 trained it on 64 GPUs this way), and data parallelism on top \
                        (Narayanan et al. 2021: 1024 A100s, 140 TFLOP/s each).",
                model: ModelPreset::Gpt3_175b,
                gpu: "a100-80gb",
                gpus: 8,
                gpus_per_node: 8,
                inter_node: "ib-hdr-200",
                global_batch: 64,
                seq: 2048,
                workload: Workload::Train,
            },
            Scenario {
                id: "70b-serve-tp4",
                title: "Serving a 70B chat model with tensor_parallel_size=4",
                story: "vLLM serves a 70B chat model with tensor_parallel_size=4: each of four \
                        GPUs holds a quarter of every weight matrix, 70.6B x 2 bytes / 4 = 35 GB \
                        (32.9 GiB) of fp16 weights, and the rest of its memory holds the KV \
                        cache of its share of the KV heads. Llama-3 70B has 8 KV heads, so each GPU keeps 2 of \
                        them: 80 KiB of cache per token per GPU. Four GPUs also read the weights \
                        four times faster per token, which is what makes answers real-time.",
                model: ModelPreset::Llama3_70b,
                gpu: "h100-sxm",
                gpus: 4,
                gpus_per_node: 8,
                inter_node: "ib-ndr-400",
                global_batch: 32,
                seq: 4096,
                workload: Workload::Serve { tp: 4 },
            },
            Scenario {
                id: "1t-3d",
                title: "Trillion-parameter 3D parallelism",
                story: "The 1T configuration of Narayanan et al. 2021 ran on 3072 A100s: TP=8 \
                        inside each DGX node (NVLink), PP=64 across nodes, DP=6 on top, global \
                        batch 3072, reaching 163 TFLOP/s per GPU (52% of peak). TP stays inside \
                        the node because it all-reduces twice per layer each way; pipeline \
                        stages only pass activations to their neighbour, which the slower \
                        InfiniBand can carry.",
                model: ModelPreset::Megatron1t,
                gpu: "a100-80gb",
                gpus: 3072,
                gpus_per_node: 8,
                inter_node: "ib-hdr-200",
                global_batch: 3072,
                seq: 2048,
                workload: Workload::Train,
            },
        ]
    }

    /// A scenario by id.
    pub fn by_id(id: &str) -> Result<Scenario, ModelError> {
        Scenario::all()
            .into_iter()
            .find(|s| s.id == id)
            .ok_or_else(|| ModelError::UnknownScenario {
                name: id.to_string(),
                known: Scenario::all().iter().map(|s| s.id.to_string()).collect(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preset_parameter_counts_match_model_cards() {
        // Published totals, rounded as the cards round them; we allow the rounding (half a unit
        // of the last digit shown).
        let cases = [
            (ModelPreset::Gpt2Small, 124.44e6, 0.5e6),
            (ModelPreset::Llama3_8b, 8.03e9, 0.005e9),
            (ModelPreset::Llama3_70b, 70.6e9, 0.05e9),
            (ModelPreset::Mixtral8x7b, 46.7e9, 0.05e9),
            (ModelPreset::Megatron1t, 1008.0e9, 0.05e9),
        ];
        for (p, want, tol) in cases {
            let got = p.spec().params() as f64;
            assert!((got - want).abs() <= tol, "{}: {got} vs {want}", p.name());
        }
        // Mixtral's card: 12.9B active parameters per token.
        let active = ModelPreset::Mixtral8x7b.spec().active_params() as f64;
        assert!((active - 12.9e9).abs() <= 0.05e9, "{active}");
    }

    #[test]
    fn hf_config_llama_and_gpt2() {
        let llama = r#"{"model_type":"llama","num_hidden_layers":32,"hidden_size":4096,
            "num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,
            "vocab_size":128256,"max_position_embeddings":8192,"tie_word_embeddings":false}"#;
        let m = ModelSpec::from_hf_config(llama).unwrap();
        assert_eq!(m.params(), ModelPreset::Llama3_8b.spec().params());
        let gpt2 = r#"{"model_type":"gpt2","n_layer":12,"n_embd":768,"n_head":12,
            "vocab_size":50257,"n_positions":1024,"n_inner":null}"#;
        let g = ModelSpec::from_hf_config(gpt2).unwrap();
        assert_eq!(g.params(), ModelPreset::Gpt2Small.spec().params());
        let mixtral = r#"{"model_type":"mixtral","num_hidden_layers":32,"hidden_size":4096,
            "num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,
            "vocab_size":32000,"max_position_embeddings":32768,"num_local_experts":8,
            "num_experts_per_tok":2}"#;
        let x = ModelSpec::from_hf_config(mixtral).unwrap();
        assert_eq!((x.experts, x.experts_per_token), (8, 2));
    }

    #[test]
    fn head_dim_other_than_hidden_over_heads() {
        // google/gemma-2-9b config.json: 16 heads × head_dim 256 on hidden 3584 (q_dim 4096);
        // the model has 9.24B parameters (9,241,705,984 with four norms per block; we count
        // two, 0.3M fewer). Without head_dim the count was 9.01B.
        let gemma = r#"{"model_type":"gemma2","num_hidden_layers":42,"hidden_size":3584,
            "num_attention_heads":16,"num_key_value_heads":8,"head_dim":256,
            "intermediate_size":14336,"vocab_size":256000,"max_position_embeddings":8192}"#;
        let m = ModelSpec::from_hf_config(gemma).unwrap();
        assert_eq!((m.head_dim(), m.q_dim(), m.kv_dim()), (256, 4096, 2048));
        assert!(m.tied_embeddings, "Gemma ties its embeddings by default");
        let b = m.params() as f64 / 1e9;
        assert!((b - 9.24).abs() < 0.005, "{b}");
        assert_eq!(m.params(), ModelPreset::Gemma2_9b.spec().params());
        // Explicit tie_word_embeddings wins; head_dim equal to hidden/heads is not "explicit".
        let untied = gemma.replace(
            "\"head_dim\":256",
            "\"head_dim\":256,\"tie_word_embeddings\":false",
        );
        let u = ModelSpec::from_hf_config(&untied).unwrap();
        assert_eq!(u.params() - m.params(), 256000 * 3584);
        let same = r#"{"model_type":"llama","num_hidden_layers":32,"hidden_size":4096,
            "num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,
            "intermediate_size":14336,"vocab_size":128256,"max_position_embeddings":8192}"#;
        let l = ModelSpec::from_hf_config(same).unwrap();
        assert_eq!(l.explicit_head_dim, None);
        assert_eq!(l.params(), ModelPreset::Llama3_8b.spec().params());
        let zero = gemma.replace("\"head_dim\":256", "\"head_dim\":0");
        assert!(matches!(
            ModelSpec::from_hf_config(&zero),
            Err(ModelError::BadValue { .. })
        ));
        // The per-term sum, the FLOP count and the KV cache all use head_dim.
        assert_eq!(m.kv_cache_bytes_per_token(2), 2 * 42 * 2048 * 2);
    }

    #[test]
    fn llama_405b_and_llama2_presets() {
        // Llama 3.1 405B model card: 405B (the config counts 405.85B); Llama 2: 6.74B, 68.98B.
        let b = |p: ModelPreset| p.spec().params() as f64 / 1e9;
        assert!(
            (b(ModelPreset::Llama31_405b) - 405.85).abs() < 0.05,
            "{}",
            b(ModelPreset::Llama31_405b)
        );
        assert!((b(ModelPreset::Llama2_7b) - 6.74).abs() < 0.005);
        assert!((b(ModelPreset::Llama2_70b) - 68.98).abs() < 0.01);
        assert_eq!(
            "llama3.1-405b".parse::<ModelPreset>().unwrap(),
            ModelPreset::Llama31_405b
        );
        assert_eq!(
            "gemma-2-9b".parse::<ModelPreset>().unwrap(),
            ModelPreset::Gemma2_9b
        );
    }

    #[test]
    fn hf_config_errors_name_the_key() {
        let missing = r#"{"model_type":"mistral","num_hidden_layers":32,"hidden_size":4096,
            "num_attention_heads":32,"vocab_size":32000,"max_position_embeddings":32768}"#;
        let err = ModelSpec::from_hf_config(missing).unwrap_err();
        assert!(
            matches!(&err, ModelError::MissingKey { key, .. } if key == "intermediate_size"),
            "{err}"
        );
        assert!(err.to_string().contains("intermediate_size"));
        let bad = r#"{"n_layer":"twelve","n_embd":768,"n_head":12,"vocab_size":1,"n_positions":8}"#;
        assert!(matches!(
            ModelSpec::from_hf_config(bad),
            Err(ModelError::BadValue { .. })
        ));
        assert!(matches!(
            ModelSpec::from_hf_config("[1,2]"),
            Err(ModelError::NotAnObject)
        ));
        assert!(matches!(
            ModelSpec::from_hf_config("{not json"),
            Err(ModelError::Json { .. })
        ));
        let err = "gpt5".parse::<ModelPreset>().unwrap_err();
        assert!(err.to_string().contains("llama3-70b"), "{err}");
    }

    #[test]
    fn params_is_the_sum_of_its_terms() {
        for p in ModelPreset::ALL {
            let m = p.spec();
            let terms = m.layers as u64 * m.params_per_layer()
                + m.embedding_params()
                + m.output_params()
                + m.final_norm_params();
            assert_eq!(m.params(), terms, "{}", p.name());
        }
    }

    #[test]
    fn absurd_configs_are_refused_by_name() {
        // The issue's example: num_hidden_layers near u64::MAX used to plan "0.81B params".
        let text = r#"{"model_type":"llama","num_hidden_layers":18446744073709551615,
            "hidden_size":4096,"num_attention_heads":32,"intermediate_size":14336,
            "vocab_size":128256,"max_position_embeddings":8192}"#;
        let err = ModelSpec::from_hf_config(text).unwrap_err();
        assert!(
            matches!(
                err,
                ModelError::OverLimit {
                    field: "layers",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("18446744073709551615"), "{err}");
        // A hidden size of 2^32 used to print "73.01B params" (the count wrapped).
        let m = ModelSpec::gpt("custom", 96, 1 << 32, 96, 51200, 2048);
        assert!(matches!(
            m.validate(),
            Err(ModelError::OverLimit {
                field: "hidden",
                ..
            })
        ));
        // Every field within its limit, but the product is beyond any machine.
        let mut big = ModelSpec::gpt("custom", 1 << 16, 1 << 20, 1 << 10, 1 << 24, 2048);
        big.ffn = 1 << 22;
        big.experts = 1 << 12;
        assert!(matches!(
            big.validate(),
            Err(ModelError::TooManyParams { .. })
        ));
        assert_eq!(big.params(), u64::MAX);
    }

    #[test]
    fn input_files_are_checked_before_reading() {
        let dir = std::env::temp_dir().join(format!("tplab-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.json");
        let err = ModelSpec::from_preset_or_path(missing.to_str().unwrap()).unwrap_err();
        assert!(err.to_string().contains("not found"), "{err}");
        let err = read_input_file(&dir, "config.json", 100).unwrap_err();
        assert!(err.to_string().contains("directory"), "{err}");
        let big = dir.join("big.json");
        std::fs::write(&big, vec![b' '; 101]).unwrap();
        let err = read_input_file(&big, "config.json", 100).unwrap_err();
        assert!(
            matches!(err, InputFileError::TooLarge { size: 101, .. }),
            "{err}"
        );
        #[cfg(unix)]
        {
            // A FIFO nobody writes to: refused from its metadata, without blocking.
            let fifo = dir.join("fifo.json");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status();
            assert!(made.is_ok_and(|s| s.success()), "mkfifo failed");
            let err = ModelSpec::from_preset_or_path(fifo.to_str().unwrap()).unwrap_err();
            assert!(err.to_string().contains("FIFO"), "{err}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn nested_text_config_and_moe_keys() {
        // Llama 4 Scout's config.json nests the language model under `text_config`.
        let llama4 = r#"{"model_type":"llama4","architectures":["Llama4ForConditionalGeneration"],
            "text_config":{"model_type":"llama4_text","num_hidden_layers":48,"hidden_size":5120,
            "num_attention_heads":40,"num_key_value_heads":8,"head_dim":128,
            "intermediate_size":8192,"intermediate_size_mlp":16384,"vocab_size":202048,
            "max_position_embeddings":10485760,"num_local_experts":16,"num_experts_per_tok":1},
            "vision_config":{"num_hidden_layers":34,"hidden_size":1408}}"#;
        let m = ModelSpec::from_hf_config(llama4).unwrap();
        assert_eq!(
            (m.layers, m.hidden, m.experts, m.experts_per_token),
            (48, 5120, 16, 1)
        );
        assert_eq!(m.name, "llama4_text");
        // Its one shared expert per MoE layer (no config key): 17.2B active of 107.8B in the
        // language model (the card: 17B active, 109B with the vision encoder).
        assert_eq!((m.shared_ffn, m.dense_layers), (8192, 0));
        let b = |n: u64| n as f64 / 1e9;
        assert!(
            (b(m.active_params()) - 17.17).abs() < 0.05,
            "{}",
            b(m.active_params())
        );
        assert!((b(m.params()) - 107.77).abs() < 0.05, "{}", b(m.params()));
        // Maverick's shape: MoE every second layer, the others dense and 16384 wide.
        let maverick = llama4.replace(
            r#""num_experts_per_tok":1}"#,
            r#""num_experts_per_tok":1,"interleave_moe_layer_step":2}"#,
        );
        let mv = ModelSpec::from_hf_config(&maverick).unwrap();
        assert_eq!((mv.dense_layers, mv.dense_ffn), (24, 16384));
        // DeepSeek-V3: 256 routed experts, 8 per token, 2048-wide experts (this failed with
        // "8 experts per token must be between 1 and the number of experts (1)").
        let ds = r#"{"model_type":"deepseek_v3","num_hidden_layers":61,"hidden_size":7168,
            "num_attention_heads":128,"num_key_value_heads":128,"intermediate_size":18432,
            "moe_intermediate_size":2048,"n_routed_experts":256,"n_shared_experts":1,
            "num_experts_per_tok":8,"vocab_size":129280,"max_position_embeddings":163840}"#;
        let d = ModelSpec::from_hf_config(ds).unwrap();
        assert_eq!((d.experts, d.experts_per_token, d.ffn), (256, 8, 2048));
        // Qwen-MoE names them `num_experts`.
        let qwen = r#"{"model_type":"qwen2_moe","num_hidden_layers":24,"hidden_size":2048,
            "num_attention_heads":16,"num_key_value_heads":16,"intermediate_size":5632,
            "moe_intermediate_size":1408,"num_experts":60,"num_experts_per_tok":4,
            "vocab_size":151936,"max_position_embeddings":8192}"#;
        let q = ModelSpec::from_hf_config(qwen).unwrap();
        assert_eq!((q.experts, q.experts_per_token, q.ffn), (60, 4, 1408));
    }

    #[test]
    fn a_repository_name_reads_the_local_snapshot() {
        let dir = std::env::temp_dir().join(format!("tplab-hf-{}", std::process::id()));
        let root = dir.join("models--meta-llama--Llama-3.1-8B");
        let snap = root.join("snapshots").join("abc123");
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::create_dir_all(root.join("refs")).unwrap();
        std::fs::write(root.join("refs").join("main"), "abc123\n").unwrap();
        std::fs::write(
            snap.join("config.json"),
            r#"{"model_type":"llama","num_hidden_layers":32,"hidden_size":4096,
            "num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,
            "vocab_size":128256,"max_position_embeddings":131072}"#,
        )
        .unwrap();
        let dirs = vec![dir.join("missing"), dir.clone()];
        let m = ModelSpec::from_preset_path_or_repo("meta-llama/Llama-3.1-8B", &dirs).unwrap();
        assert_eq!(m.layers, 32);
        // A repository not in the cache: the error names where it looked and the fix.
        let err = ModelSpec::from_preset_path_or_repo("meta-llama/Nope", &dirs).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, ModelError::NoLocalSnapshot { .. }));
        assert!(
            msg.contains("hf download") && msg.contains("tplab-hf-"),
            "{msg}"
        );
        // Path tricks are not repository names.
        assert!(hf_snapshot_config("../etc", &dirs).is_none());
        assert!(hf_snapshot_config("a/..", &dirs).is_none());
        // A name without a slash stays a preset error.
        assert!(matches!(
            ModelSpec::from_preset_path_or_repo("llama9", &dirs),
            Err(ModelError::UnknownPreset { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn scenarios_resolve() {
        for s in Scenario::all() {
            assert_eq!(Scenario::by_id(s.id).unwrap().id, s.id);
            assert!(s.model.spec().validate().is_ok());
        }
        assert!(matches!(
            Scenario::by_id("nope"),
            Err(ModelError::UnknownScenario { .. })
        ));
    }
}
