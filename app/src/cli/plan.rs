//! `tplab plan`: rank 3D-parallel layouts for a model on a cluster, or evaluate one layout.
//!
//! The flags shared with `tplab memory` live in [`ModelClusterArgs`].

use anyhow::{bail, Context};
use clap::Args;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tplab_engine::capacity::cost::{IterationTime, TrainSetup};
use tplab_engine::capacity::defaults;
use tplab_engine::capacity::hardware::{Catalogue, Cluster};
use tplab_engine::capacity::memory::{self, Layout, MemoryBreakdown, Recompute};
use tplab_engine::capacity::models::{ModelSpec, Scenario, Workload};
use tplab_engine::capacity::moe_cost::MoeRouting;
use tplab_engine::capacity::planner::{self, PlanRequest};
use tplab_engine::capacity::stack::{self, Precision, Stack, StackIteration, WhatIf};
use tplab_engine::config::human_bytes;

/// Model, cluster and layout flags shared by `tplab plan` and `tplab memory`.
#[derive(Args, Debug, Clone, Default)]
pub struct ModelClusterArgs {
    /// One of the guide's scenarios (175b-one-node, 70b-serve-tp4, 1t-3d); fills the model,
    /// cluster and batch, which other flags then override.
    #[arg(long)]
    pub scenario: Option<String>,
    /// Model preset (gpt2-small, llama3-8b, llama3-70b, gpt3-175b, mixtral-8x7b, megatron-1t)
    /// or a Hugging Face config.json path.
    #[arg(long, conflicts_with_all = ["layers", "hidden", "heads"])]
    pub model: Option<String>,
    /// Transformer blocks (custom GPT-style model; needs --hidden, --heads, --vocab).
    #[arg(long)]
    pub layers: Option<usize>,
    /// Model width.
    #[arg(long)]
    pub hidden: Option<usize>,
    /// Attention heads.
    #[arg(long)]
    pub heads: Option<usize>,
    /// Key/value heads (grouped-query attention); default: --heads.
    #[arg(long)]
    pub kv_heads: Option<usize>,
    /// MLP width; default 4 × hidden.
    #[arg(long)]
    pub ffn: Option<usize>,
    /// Vocabulary size.
    #[arg(long)]
    pub vocab: Option<usize>,
    /// Sequence length (default: the model's context for training, 4096 tokens of KV cache
    /// with --serve, as `tplab serve --context`).
    #[arg(long)]
    pub seq: Option<usize>,
    /// Sequences per iteration (training) or concurrent sequences (serving; default 1, as
    /// `tplab serve --batch`).
    #[arg(long)]
    pub global_batch: Option<usize>,
    /// Micro-batch size; default: try 1, 2, 4, 8 (1 with --layout).
    #[arg(long)]
    pub micro_batch: Option<usize>,
    /// GPU: v100, a100 (= a100-80gb), a100-40gb, h100, h200, b200, or one from --hardware
    /// (default h100, as every command).
    #[arg(long)]
    pub gpu: Option<String>,
    /// GPUs in the cluster (default: one node).
    #[arg(long)]
    pub gpus: Option<usize>,
    /// GPUs per node (NVLink domain; default 8, as every command).
    #[arg(long)]
    pub gpus_per_node: Option<usize>,
    /// Inter-node link: ib200, ib400, pcie4, pcie5, nvlink3..5, or one from --hardware
    /// (default: the GPU's own node's, as every command: ib200 for A100s, ib400 otherwise).
    #[arg(long)]
    pub inter_node: Option<String>,
    /// Evaluate this layout only: TP,PP,DP (e.g. 8,8,16).
    #[arg(long, value_parser = parse_layout)]
    pub layout: Option<(usize, usize, usize)>,
    /// Sequence parallelism on (default: the planner tries both; off with --layout).
    #[arg(long)]
    pub sp: bool,
    /// Activation recomputation: none, selective, full (default: the planner tries all; none
    /// with --layout).
    #[arg(long)]
    pub recompute: Option<Recompute>,
    /// ZeRO stage over the data-parallel group (0–3).
    #[arg(long, default_value_t = 1)]
    pub zero: u8,
    /// Expert-parallel size for a Mixture-of-Experts model (with --layout, or the rows of
    /// `tplab memory`): experts split over EP of the data-parallel ranks (DP % EP == 0). The
    /// planner tries every valid EP itself.
    #[arg(long)]
    pub ep: Option<usize>,
    /// Expert tensor-parallel size with --ep (default: TP's). Another value folds the experts
    /// apart from attention (Megatron-Core's MoE parallel folding): EP × ETP must divide
    /// TP × DP, so EP may exceed DP (e.g. --layout 2,8,16 --ep 32 --etp 1).
    #[arg(long)]
    pub etp: Option<usize>,
    /// Do not overlap the data-parallel gradient all-reduce with the last backward pass.
    #[arg(long)]
    pub no_overlap: bool,
    /// Serving instead of training: 16-bit weights plus the KV cache of --global-batch
    /// sequences of --seq tokens.
    #[arg(long)]
    pub serve: bool,
    /// TOML file with extra GPUs and links (see docs/calibration.md).
    #[arg(long)]
    pub hardware: Option<PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

fn parse_layout(s: &str) -> Result<(usize, usize, usize), String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let nums: Result<Vec<usize>, _> = parts.iter().map(|p| p.parse::<usize>()).collect();
    match nums {
        Ok(v) if v.len() == 3 && v.iter().all(|&x| x > 0) => Ok((v[0], v[1], v[2])),
        _ => Err(format!(
            "'{s}' is not a layout; write TP,PP,DP as three positive integers, e.g. 8,8,16"
        )),
    }
}

/// Everything the flags resolve to.
pub struct Resolved {
    pub scenario: Option<Scenario>,
    pub model: ModelSpec,
    pub cluster: Cluster,
    pub setup: TrainSetup,
    pub serve_tp: Option<usize>,
}

/// The hardware catalogue: the built-in GPUs and links, with those of the `--hardware` TOML file
/// if one is given.
pub fn catalogue(hardware: Option<&Path>) -> anyhow::Result<Catalogue> {
    let cat = Catalogue::default();
    let Some(path) = hardware else {
        return Ok(cat);
    };
    let text = tplab_engine::capacity::models::read_input_file(
        path,
        "hardware TOML",
        tplab_engine::capacity::models::MAX_INPUT_FILE_BYTES,
    )
    .context("cannot read the hardware file")?;
    let names = |c: &Catalogue| -> Vec<(String, String)> {
        c.gpus
            .iter()
            .map(|g| (g.name.clone(), g.display_name().to_string()))
            .chain(
                c.links
                    .iter()
                    .map(|l| (l.name.clone(), l.display_name().to_string())),
            )
            .collect()
    };
    let built_in = names(&cat);
    let cat = cat
        .from_toml(&text)
        .with_context(|| format!("in {}", path.display()))?;
    // A file's entry takes a built-in's place where their names match (`H100` for h100-sxm):
    // say so, so that a number is never priced on hardware the user did not know they chose.
    let now = names(&cat);
    for (name, shown) in built_in.iter().filter(|b| !now.contains(b)) {
        eprintln!(
            "note: {} replaces the built-in {name} ({shown}) with its own entry of that name",
            path.display()
        );
    }
    Ok(cat)
}

impl ModelClusterArgs {
    /// Resolves presets, files and defaults; errors name the missing or bad flag.
    pub fn resolve(&self) -> anyhow::Result<Resolved> {
        let scenario = match &self.scenario {
            Some(id) => Some(Scenario::by_id(id)?),
            None => None,
        };
        let catalogue = catalogue(self.hardware.as_deref())?;
        let mut model = if let Some(m) = &self.model {
            ModelSpec::from_preset_or_path(m)?
        } else if self.layers.is_some() || self.hidden.is_some() || self.heads.is_some() {
            let need = |v: Option<usize>, flag: &str| {
                v.with_context(|| format!("a custom model needs {flag} (or use --model PRESET)"))
            };
            let hidden = need(self.hidden, "--hidden")?;
            let heads = need(self.heads, "--heads")?;
            let mut m = ModelSpec::gpt(
                "custom",
                need(self.layers, "--layers")?,
                hidden,
                heads,
                need(self.vocab, "--vocab")?,
                self.seq.unwrap_or(2048),
            );
            m.kv_heads = self.kv_heads.unwrap_or(heads);
            m.ffn = self.ffn.unwrap_or(hidden.saturating_mul(4));
            m
        } else if let Some(s) = &scenario {
            s.model.spec()
        } else {
            bail!("give a model: --model PRESET|config.json, --scenario NAME, or --layers L --hidden H --heads A --vocab V");
        };
        if let Some(kv) = self.kv_heads {
            model.kv_heads = kv;
        }
        if let Some(f) = self.ffn {
            model.ffn = f;
        }
        if let Some(v) = self.vocab {
            model.vocab = v;
        }
        let serving = self.serve
            || matches!(
                scenario.as_ref().map(|s| s.workload),
                Some(Workload::Serve { .. })
            );
        // Training defaults to the model's context; serving to `tplab serve`'s cache.
        let seq = self
            .seq
            .or(scenario.as_ref().map(|s| s.seq))
            .unwrap_or(if serving {
                defaults::SERVE_CONTEXT_TOKENS
            } else {
                model.seq
            });
        model.seq = model.seq.max(seq); // learned positions must cover the sequence
        model.validate()?;
        let from_scenario = |f: fn(&Scenario) -> String| scenario.as_ref().map(f);
        // Flags, then the scenario, then the defaults every command shares.
        let gpu = self
            .gpu
            .clone()
            .or_else(|| from_scenario(|s| s.gpu.to_string()))
            .unwrap_or_else(|| defaults::GPU.to_string());
        let gpus_per_node = self
            .gpus_per_node
            .or(scenario.as_ref().map(|s| s.gpus_per_node))
            .unwrap_or(defaults::GPUS_PER_NODE);
        let gpus = self
            .gpus
            .or(scenario.as_ref().map(|s| s.gpus))
            .unwrap_or(gpus_per_node);
        let named = self
            .inter_node
            .clone()
            .or_else(|| from_scenario(|s| s.inter_node.to_string()));
        let inter = defaults::inter_node(&catalogue, &gpu, named.as_deref())?;
        let cluster = Cluster::new(&catalogue, &gpu, gpus, gpus_per_node, &inter)?;
        let global_batch = match self
            .global_batch
            .or(scenario.as_ref().map(|s| s.global_batch))
        {
            Some(b) => b,
            None if serving => defaults::SERVE_BATCH,
            None => bail!(
                "give --global-batch (sequences per iteration; training has no default batch, serving's is {})",
                defaults::SERVE_BATCH
            ),
        };
        let setup = TrainSetup {
            seq,
            global_batch,
            overlap_dp: !self.no_overlap,
        };
        setup.validate()?;
        if self.micro_batch == Some(0) {
            bail!("--micro-batch must be at least 1 (got 0)");
        }
        if let Some(b) = self.micro_batch.filter(|&b| b > global_batch) {
            bail!(
                "--micro-batch {b} is larger than the global batch {global_batch}; a micro-batch \
                 holds some of the global batch's sequences"
            );
        }
        if self.etp == Some(0) {
            bail!(
                "--etp must be at least 1 (the experts' tensor-parallel size; leave --etp out \
                 for the experts to follow TP)"
            );
        }
        if self.zero > 3 {
            bail!(
                "--zero must be 0, 1, 2 or 3 (the ZeRO stages; got {})",
                self.zero
            );
        }
        let serve_tp = match (self.serve, scenario.as_ref().map(|s| s.workload)) {
            (_, Some(Workload::Serve { tp })) => Some(self.layout.map_or(tp, |l| l.0)),
            (true, _) => Some(self.layout.map_or(0, |l| l.0)),
            _ => None,
        };
        if let Some(tp) = serve_tp.filter(|&t| t > 0) {
            // The same rules as training's layouts (plus vLLM's KV-head replication).
            memory::check_serving_tp(&model, tp, cluster.gpus)?;
        }
        Ok(Resolved {
            scenario,
            model,
            cluster,
            setup,
            serve_tp,
        })
    }

    /// The `--layout` with this command's SP, recomputation, micro-batch and ZeRO choices.
    pub fn fixed_layout(&self) -> Option<Layout> {
        self.layout.map(|(tp, pp, dp)| Layout {
            tp,
            pp,
            dp,
            micro_batch: self.micro_batch.unwrap_or(1),
            sp: self.sp,
            recompute: self.recompute.unwrap_or_default(),
            zero: self.zero,
            ep: self.ep.unwrap_or(1),
            etp: self.etp.unwrap_or(0),
        })
    }

    /// The planner request for these flags.
    pub fn request(&self, r: &Resolved) -> PlanRequest {
        PlanRequest {
            model: r.model.clone(),
            setup: r.setup,
            cluster: r.cluster.clone(),
            micro_batch: self.micro_batch,
            sp: self.sp.then_some(true),
            recompute: self.recompute,
            zero: self.zero,
        }
    }
}

/// The training stack's switches (`tplab_engine::capacity::stack`).
#[derive(Args, Debug, Clone, Default)]
pub struct StackArgs {
    /// Software stack: current (Megatron-Core/NeMo today, the default) or megatron-2021 (the
    /// stack of Narayanan et al. 2021, which the A100 calibration reproduces).
    #[arg(long, default_value = "current", value_parser = parse_stack)]
    pub stack: StackPreset,
    /// GEMM precision: bf16 or fp8 (Transformer Engine FP8 GEMMs on Hopper/Blackwell).
    #[arg(long)]
    pub precision: Option<Precision>,
    /// Attention without FlashAttention (s x s scores through HBM).
    #[arg(long)]
    pub no_flash_attention: bool,
    /// Element-wise ops unfused (one HBM pass each).
    #[arg(long)]
    pub no_fused_kernels: bool,
    /// One GEMM efficiency (0.7) for every GPU instead of the per-generation table.
    #[arg(long)]
    pub no_gemm_table: bool,
    /// TP collectives not overlapped with GEMMs.
    #[arg(long)]
    pub no_tp_overlap: bool,
    /// No bucketed DP gradient reduce-scatter / parameter all-gather overlap.
    #[arg(long)]
    pub no_dp_overlap: bool,
    /// Optimizer states not sharded over DP (with --zero 0).
    #[arg(long)]
    pub no_distributed_optimizer: bool,
    /// Pipeline sends and receives not overlapped.
    #[arg(long)]
    pub no_pp_overlap: bool,
    /// Refuse pipeline stages of unequal layer counts (PP must divide the layers).
    #[arg(long)]
    pub no_uneven_stages: bool,
    /// Megatron-LM's unfused cross-entropy (52 bytes of HBM traffic a logit, its default)
    /// instead of the fused one NeMo's and Megatron-Bridge's recipes use (40).
    #[arg(long)]
    pub no_fused_cross_entropy: bool,
    /// Interleaved 1F1B: model chunks per GPU (1 = plain 1F1B). Default: the planner tries 1 to
    /// 8 wherever every stage has a layer per chunk (plain 1F1B with --layout)
    #[arg(long)]
    pub virtual_stages: Option<usize>,
    /// Context-parallel size (GPUs sharing each sequence); TP x PP x DP x CP = GPUs.
    #[arg(long)]
    pub cp: Option<usize>,
    /// MoE routing: dropless (the default: the busiest expert-parallel rank gets 1.084× the
    /// mean load, as measured), balanced (load forced even, as NVIDIA's MoE benchmarks run) or
    /// capacity=F (token dropping, each expert padded to F × its mean load).
    #[arg(long, value_parser = parse_moe_routing)]
    pub moe_routing: Option<MoeRouting>,
    /// MoE all-to-alls overlapped with the other micro-batch's computation (Megatron-Core's
    /// --overlap-moe-expert-parallel-comm).
    #[arg(long)]
    pub ep_overlap: bool,
}

fn parse_moe_routing(s: &str) -> Result<MoeRouting, String> {
    s.parse()
}

/// `--stack` presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StackPreset {
    #[default]
    Current,
    Megatron2021,
}

fn parse_stack(s: &str) -> Result<StackPreset, String> {
    match s.to_ascii_lowercase().as_str() {
        "current" | "today" => Ok(StackPreset::Current),
        "megatron-2021" | "2021" | "legacy" => Ok(StackPreset::Megatron2021),
        _ => Err(format!(
            "unknown stack '{s}'; expected current or megatron-2021"
        )),
    }
}

impl StackArgs {
    /// The stack these flags describe (`--no-overlap` also turns the DP overlap off).
    pub fn stack(&self, no_overlap: bool) -> anyhow::Result<Stack> {
        let mut st = match self.stack {
            StackPreset::Current => Stack::current(),
            StackPreset::Megatron2021 => Stack::megatron_2021(),
        };
        if let Some(p) = self.precision {
            st.precision = p;
        }
        for (off, field) in [
            (self.no_flash_attention, &mut st.flash_attention),
            (self.no_fused_kernels, &mut st.fused_kernels),
            (self.no_gemm_table, &mut st.gemm_per_generation),
            (self.no_tp_overlap, &mut st.tp_overlap),
            (self.no_dp_overlap || no_overlap, &mut st.dp_overlap),
            (self.no_distributed_optimizer, &mut st.distributed_optimizer),
            (self.no_pp_overlap, &mut st.pp_overlap),
            (self.no_uneven_stages, &mut st.uneven_stages),
            (self.no_fused_cross_entropy, &mut st.fused_cross_entropy),
        ] {
            if off {
                *field = false;
            }
        }
        if let Some(v) = self.virtual_stages {
            if v == 0 {
                bail!("--virtual-stages must be at least 1 (1 = plain 1F1B; got 0)");
            }
            st.virtual_stages = v;
        }
        if let Some(cp) = self.cp {
            if cp == 0 {
                bail!("--cp must be at least 1 (1 = no context parallelism; got 0)");
            }
            st.context_parallel = cp;
        }
        if let Some(r) = self.moe_routing {
            st.moe_routing = r;
        }
        if self.ep_overlap {
            st.ep_overlap = true;
        }
        Ok(st)
    }
}

/// Flags of `tplab plan`.
#[derive(Args, Debug, Clone, Default)]
pub struct PlanArgs {
    #[command(flatten)]
    pub common: ModelClusterArgs,
    #[command(flatten)]
    pub stack: StackArgs,
    /// Rows of the ranked table (1 to 10000).
    #[arg(long, default_value_t = 10, value_parser = parse_top)]
    pub top: usize,
    /// Sweep an axis, AXIS=V1,V2,…; repeat for more axes (every combination is planned):
    /// gpus, batch (global batch), seq, v (interleaving depth), mb (micro-batch size). Prints the
    /// fastest layout that fits at each point; points that break a rule are reported with it
    #[arg(long = "sweep", value_name = "AXIS=LIST", value_parser = parse_sweep_axis)]
    pub sweep: Vec<(SweepAxis, Vec<usize>)>,
    /// With --sweep: print CSV, one row a point (schema and version on every row)
    #[arg(long, requires = "sweep", conflicts_with = "json")]
    pub csv: bool,
}

/// An axis of `plan --sweep`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepAxis {
    Gpus,
    Batch,
    Seq,
    Virtual,
    MicroBatch,
}

/// `--top`: 1 to 10000 rows.
fn parse_top(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n @ 1..=10_000) => Ok(n),
        _ => Err("expected a number of rows from 1 to 10000".to_string()),
    }
}

fn parse_sweep_axis(s: &str) -> Result<(SweepAxis, Vec<usize>), String> {
    let (axis, list) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}': expected AXIS=V1,V2,… (e.g. gpus=8192,16384)"))?;
    let axis = match axis.trim().to_ascii_lowercase().as_str() {
        "gpus" => SweepAxis::Gpus,
        "batch" | "global-batch" => SweepAxis::Batch,
        "seq" => SweepAxis::Seq,
        "v" | "virtual-stages" => SweepAxis::Virtual,
        "mb" | "micro-batch" => SweepAxis::MicroBatch,
        other => {
            return Err(format!(
                "unknown sweep axis '{other}'; expected gpus, batch, seq, v or mb"
            ))
        }
    };
    let values = list
        .split(',')
        .map(|x| {
            x.trim()
                .parse::<usize>()
                .map_err(|_| format!("'{x}' in {s} is not a whole number"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(v) = super::first_repeat(&values) {
        return Err(format!(
            "{s} lists {v} more than once: give each value once (a repeated point is priced again)"
        ));
    }
    Ok((axis, values))
}

/// Seconds with a sensible unit.
pub fn secs(s: f64) -> String {
    if s == 0.0 {
        "0".to_string()
    } else if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

/// The header lines: scenario story, model, cluster.
pub fn print_header(r: &Resolved) {
    if let Some(s) = &r.scenario {
        outln!("{}\n", s.title);
        outln!("{}\n", s.story);
    }
    outln!("model    {}", r.model.summary());
    let c = &r.cluster;
    outln!(
        "cluster  {} × {} ({} of {}; intra-node {} {} GB/s, inter-node {} {} GB/s per GPU)",
        c.gpus,
        c.gpu.name,
        super::nodes(c.nodes()),
        c.gpus_per_node,
        c.intra_node.name,
        c.intra_node.bandwidth_gbs,
        c.inter_node.name,
        c.inter_node.bandwidth_gbs
    );
}

/// JSON of the cluster a plan answers for.
pub fn cluster_json(c: &Cluster) -> Value {
    json!({"gpu": c.gpu.name, "gpus": c.gpus, "gpus_per_node": c.gpus_per_node,
           "intra_node": c.intra_node.name, "inter_node": c.inter_node.name,
           "nics_per_node": c.nics()})
}

/// `value` (an object) with what it answers for added: the model, the cluster, the sequence
/// length and the batch (every default filled in), and the scenario if one was named.
pub fn with_inputs(r: &Resolved, mut value: Value) -> Value {
    if let Some(obj) = value.as_object_mut() {
        obj.insert("model".into(), json!(r.model));
        obj.insert("cluster".into(), cluster_json(&r.cluster));
        obj.insert(
            "inputs".into(),
            json!({"seq": r.setup.seq, "global_batch": r.setup.global_batch,
                   "scenario": r.scenario.as_ref().map(|s| s.id)}),
        );
    }
    value
}

/// JSON of a memory breakdown.
pub fn memory_json(m: &MemoryBreakdown, limit_bytes: u64) -> Value {
    json!({
        "params_per_gpu": m.params_per_gpu,
        "weights": m.weights_bytes,
        "gradients": m.gradients_bytes,
        "optimizer": m.optimizer_bytes,
        "activations": m.activations_bytes,
        "kv_cache": m.kv_cache_bytes,
        "total": m.total_bytes,
        "usable_limit": limit_bytes,
        "fits": m.total_bytes <= limit_bytes,
    })
}

/// JSON of one evaluated layout.
pub fn layout_json(it: &IterationTime) -> Value {
    let l = &it.layout;
    json!({
        "layout": {"tp": l.tp, "pp": l.pp, "dp": l.dp, "micro_batch": l.micro_batch, "sp": l.sp,
                   "recompute": l.recompute.name(), "zero": l.zero, "label": l.label()},
        "iteration_time_s": it.iteration_time_s,
        "time_split_s": {
            "compute": it.compute_s, "tp_comm": it.tp_comm_s, "pp_comm": it.pp_comm_s,
            "pipeline_bubble": it.pipeline_bubble_s, "dp_comm": it.dp_comm_s,
            "optimizer": it.optimizer_s,
        },
        "micro_batches": it.micro_batches,
        "bubble_fraction": it.bubble_fraction,
        "tp_spans_nodes": it.tp_spans_nodes,
        "dp_spans_nodes": it.dp_spans_nodes,
        "pp_spans_nodes": it.pp_spans_nodes,
        "model_flops_per_iteration": it.model_flops,
        "hardware_flops_per_iteration": it.hardware_flops,
        "tflops_per_gpu": it.tflops_per_gpu,
        "mfu": it.mfu,
        "tokens_per_s": it.tokens_per_s,
        "memory_per_gpu_bytes": memory_json(&it.memory, it.memory_limit_bytes),
    })
}

/// JSON of the stack's switches.
pub fn stack_json(st: &Stack) -> Value {
    json!({
        "label": st.label(),
        "flash_attention": st.flash_attention,
        "fused_kernels": st.fused_kernels,
        "gemm_per_generation": st.gemm_per_generation,
        "precision": st.precision.name(),
        "tp_overlap": st.tp_overlap,
        "dp_overlap": st.dp_overlap,
        "distributed_optimizer": st.distributed_optimizer,
        "pp_overlap": st.pp_overlap,
        "virtual_stages": st.virtual_stages,
        "uneven_stages": st.uneven_stages,
        "context_parallel": st.context_parallel,
        "moe_routing": st.moe_routing.name(),
        "ep_overlap": st.ep_overlap,
    })
}

/// JSON of one layout under a stack: every key of [`layout_json`] plus `stack`, `breakdown`
/// (each term's seconds and share of the iteration) and, when given, `what_if`.
pub fn stack_layout_json(r: &StackIteration, what_if: Option<&[WhatIf]>) -> Value {
    let mut v = layout_json(&r.it);
    let b = &r.breakdown;
    let total = r.it.iteration_time_s;
    let term = |s: f64| json!({"s": s, "share": s / total});
    let extra = json!({
        "stack": stack_json(&b.stack),
        "breakdown": {
            "stage_layers": b.stage_layers,
            "gemm": term(b.gemm_s),
            "attention": term(b.attention_s),
            "elementwise": term(b.elementwise_s),
            "recompute": term(b.recompute_s),
            "tp_comm_total": term(b.tp_comm_total_s),
            "tp_comm_hidden": term(b.tp_comm_hidden_s),
            "dp_comm_total": term(b.dp_comm_total_s),
            "dp_comm_hidden": term(b.dp_comm_hidden_s),
            "pp_comm_total": term(b.pp_comm_total_s),
            "pp_comm_hidden": term(b.pp_comm_hidden_s),
            "cp_comm": term(b.cp_comm_s),
            "gemm_efficiency": b.gemm_efficiency,
            "precision": b.precision.name(),
            "context_parallel": b.context_parallel,
            "virtual_stages": b.virtual_stages,
            "ep_comm_total": term(b.ep_comm_total_s),
            "ep_comm_hidden": term(b.ep_comm_hidden_s),
            "moe_dispatch": term(b.moe_dispatch_s),
            "moe_grouped_gemm_utilisation": b.moe_grouped_gemm_utilisation,
            "moe_busiest_over_mean": b.moe_busiest_over_mean,
        },
    });
    if let (Some(obj), Some(add)) = (v.as_object_mut(), extra.as_object()) {
        for (k, x) in add {
            obj.insert(k.clone(), x.clone());
        }
        // The layout as the user gives it: DP alone, CP beside it.
        if let Some(layout) = obj.get_mut("layout").and_then(Value::as_object_mut) {
            layout.insert("cp".into(), b.context_parallel.into());
            layout.insert(
                "label".into(),
                label_with_cp(&r.it.layout, b.context_parallel).into(),
            );
        }
        if let Some(w) = what_if {
            obj.insert("what_if".into(), what_if_json(w));
        }
    }
    v
}

/// JSON of a what-if table.
pub fn what_if_json(rows: &[WhatIf]) -> Value {
    Value::Array(
        rows.iter()
            .map(|w| {
                json!({"switch": w.switch.key(), "on": w.on,
                       "flipped_iteration_time_s": w.flipped_time_s,
                       "change": w.change, "flipped_fits": w.flipped_fits})
            })
            .collect(),
    )
}

fn print_stack(r: &StackIteration, what_if: &[WhatIf]) {
    let b = &r.breakdown;
    let total = r.it.iteration_time_s;
    outln!(
        "stack    {}  (GEMMs in {} at {:.0}% of peak; stages {})",
        b.stack.label(),
        b.precision.name(),
        100.0 * b.gemm_efficiency,
        stage_summary(&b.stage_layers)
    );
    let pct = |s: f64| 100.0 * s / total;
    for (name, s, hidden) in [
        ("GEMMs", b.gemm_s, None),
        ("attention core", b.attention_s, None),
        ("element-wise", b.elementwise_s, None),
        ("recompute", b.recompute_s, None),
        (
            "TP collectives",
            b.tp_comm_total_s,
            Some(b.tp_comm_hidden_s),
        ),
        (
            "DP collectives",
            b.dp_comm_total_s,
            Some(b.dp_comm_hidden_s),
        ),
        (
            "pipeline sends",
            b.pp_comm_total_s,
            Some(b.pp_comm_hidden_s),
        ),
        ("CP exchange", b.cp_comm_s, None),
        ("MoE dispatch", b.moe_dispatch_s, None),
        if b.ep_comm_total_s > 0.0 {
            (
                "EP all-to-alls",
                b.ep_comm_total_s,
                Some(b.ep_comm_hidden_s),
            )
        } else {
            ("EP all-to-alls", r.it.ep_comm_s, None)
        },
    ] {
        if s == 0.0 {
            continue;
        }
        match hidden {
            Some(h) => outln!(
                "  {name:<18} {:>10}  {:>5.1}%  ({} hidden by overlap)",
                secs(s),
                pct(s),
                secs(h)
            ),
            None => outln!("  {name:<18} {:>10}  {:>5.1}%", secs(s), pct(s)),
        }
    }
    if b.moe_busiest_over_mean > 0.0 {
        outln!(
            "  MoE experts: grouped GEMMs at {:.0}% utilisation, busiest rank {:.3}x the mean \
             load ({})",
            100.0 * b.moe_grouped_gemm_utilisation,
            b.moe_busiest_over_mean,
            b.stack.moe_routing.name()
        );
    }
    if !what_if.is_empty() {
        outln!("what if (one switch flipped, iteration time):");
        for w in what_if {
            let name = w.switch.key();
            let dir = if w.on { "off" } else { "on" };
            match (w.change, w.flipped_fits) {
                (Some(c), Some(fits)) => outln!(
                    "  {name:<22} {dir:<3} {:>+7.1}%{}",
                    100.0 * c,
                    if fits {
                        ""
                    } else {
                        "  (does not fit in memory)"
                    }
                ),
                // Every rule but FP8's holds for both sides of the FP8 switch.
                _ if w.switch == stack::Switch::Fp8 => {
                    outln!("  {name:<22} {dir:<3}     n/a  (this GPU has no FP8 tensor cores)")
                }
                _ => outln!("  {name:<22} {dir:<3}     n/a  (not valid for this layout)"),
            }
        }
    }
}

/// `[7, 8 x 14, 7]` for 126 layers on 16 stages.
fn stage_summary(stages: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < stages.len() {
        let mut j = i;
        while j + 1 < stages.len() && stages[j + 1] == stages[i] {
            j += 1;
        }
        let n = j - i + 1;
        parts.push(if n == 1 {
            stages[i].to_string()
        } else {
            format!("{} x {n}", stages[i])
        });
        i = j + 1;
    }
    format!("[{}]", parts.join(", "))
}

fn print_layout(it: &IterationTime, cp: usize) {
    let l = &it.layout;
    outln!("\nlayout   {}", label_with_cp(l, cp));
    outln!(
        "iteration {}  ({} micro-batches, bubble (p-1)/m = {:.3})",
        secs(it.iteration_time_s),
        it.micro_batches,
        it.bubble_fraction
    );
    let tp_note = match it.tp_spans_nodes {
        true => "  (TP group spans nodes: inter-node link)",
        false => "  (inside one node)",
    };
    let dp_note = match it.dp_spans_nodes {
        true => "  (exposed; DP group spans nodes)",
        false => "  (exposed)",
    };
    let rows = [
        ("compute", it.compute_s, ""),
        ("TP communication", it.tp_comm_s, tp_note),
        ("EP all-to-alls", it.ep_comm_s, ""),
        ("pipeline sends", it.pp_comm_s, ""),
        ("pipeline bubble", it.pipeline_bubble_s, ""),
        ("DP communication", it.dp_comm_s, dp_note),
        ("optimizer step", it.optimizer_s, ""),
    ];
    for (name, s, note) in rows {
        if name == "EP all-to-alls" && l.ep <= 1 {
            continue;
        }
        outln!(
            "  {name:<18} {:>10}  {:>5.1}%{note}",
            secs(s),
            100.0 * s / it.iteration_time_s
        );
    }
    outln!(
        "TFLOP/s per GPU {:.1} (incl. recomputation)   MFU {:.1}%   {:.0} tokens/s",
        it.tflops_per_gpu,
        100.0 * it.mfu,
        it.tokens_per_s
    );
    print_memory(&it.memory, it.memory_limit_bytes);
}

/// The memory table of one GPU.
pub fn print_memory(m: &MemoryBreakdown, limit_bytes: u64) {
    outln!("memory per GPU ({} parameters):", m.params_per_gpu);
    for (name, bytes) in m.terms() {
        if bytes > 0 || name == "weights" {
            outln!("  {name:<12} {:>12}", human_bytes(bytes));
        }
    }
    outln!(
        "  {:<12} {:>12}  of {} usable: {}",
        "total",
        human_bytes(m.total_bytes),
        human_bytes(limit_bytes),
        if m.total_bytes <= limit_bytes {
            "fits"
        } else {
            "does NOT fit"
        }
    );
}

/// Serving: weights and KV cache per GPU at each TP size (or the given one).
fn serve(r: &Resolved, common: &ModelClusterArgs) -> anyhow::Result<ExitCode> {
    let limit = (r.cluster.gpu.memory_bytes() * memory::USABLE_MEMORY_FRACTION) as u64;
    let tps: Vec<usize> = match r.serve_tp {
        Some(tp) if tp > 0 => {
            memory::check_serving_tp(&r.model, tp, r.cluster.gpus)?;
            vec![tp]
        }
        // Every servable TP size up to the cluster's GPUs, from the heads' divisors.
        _ => memory::serving_tp_sizes(&r.model)
            .into_iter()
            .filter(|&t| t <= r.cluster.gpus)
            .collect(),
    };
    let sequences = r.setup.global_batch;
    let rows: Vec<(usize, MemoryBreakdown, u64)> = tps
        .iter()
        .map(|&tp| {
            (
                tp,
                memory::serving_memory(&r.model, tp, 1, sequences, r.setup.seq),
                memory::max_kv_tokens(&r.model, tp, 1, r.cluster.gpu.memory_bytes()),
            )
        })
        .collect();
    if common.json {
        let v: Vec<Value> = rows
            .iter()
            .map(|(tp, m, max_tokens)| {
                json!({"tp": tp, "sequences": sequences, "context": r.setup.seq,
                       "kv_cache_bytes_per_token_per_gpu":
                           memory::kv_cache_bytes_per_token_per_gpu(&r.model, *tp, 1, 2),
                       "max_kv_tokens": max_tokens,
                       "memory_per_gpu_bytes": memory_json(m, limit)})
            })
            .collect();
        outln!(
            "{}",
            super::json_text("plan", &with_inputs(r, json!({"serving": v})))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    print_header(r);
    outln!(
        "\nserving {sequences} sequences × {} tokens, 16-bit weights and KV cache, {} usable per GPU",
        r.setup.seq,
        human_bytes(limit)
    );
    outln!(
        "{:>4} {:>12} {:>14} {:>12} {:>16} {:>8}",
        "TP",
        "weights",
        "KV cache",
        "total",
        "KV/token/GPU",
        "fits"
    );
    for (tp, m, max_tokens) in &rows {
        outln!(
            "{:>4} {:>12} {:>14} {:>12} {:>16} {:>8}   room for {} tokens of cache",
            tp,
            human_bytes(m.weights_bytes),
            human_bytes(m.kv_cache_bytes),
            human_bytes(m.total_bytes),
            human_bytes(memory::kv_cache_bytes_per_token_per_gpu(
                &r.model, *tp, 1, 2
            )),
            if m.total_bytes <= limit { "yes" } else { "NO" },
            max_tokens
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(args: PlanArgs) -> anyhow::Result<ExitCode> {
    let common = &args.common;
    let r = common.resolve()?;
    if r.serve_tp.is_some() {
        return serve(&r, common);
    }
    let req = common.request(&r);
    let st = args.stack.stack(common.no_overlap)?;
    // FP8 on a GPU without FP8 tensor cores is an error with its rule, before any search.
    stack::check_precision(&st, &r.cluster.gpu)?;
    if !args.sweep.is_empty() && common.fixed_layout().is_some() {
        bail!(
            "--sweep ranks layouts at each point; --layout fixes one: give one or the other \
             (to price one layout at several points, run --layout once a point)"
        );
    }
    if let Some(layout) = common.fixed_layout() {
        let res = planner::evaluate_with(&req, &layout, &st)?;
        let wi = stack::what_if(&req.model, &req.setup, &req.cluster, &layout, &st)?;
        if common.json {
            let v = with_inputs(&r, stack_layout_json(&res, Some(&wi)));
            outln!("{}", super::json_text("plan", &v)?);
        } else {
            print_header(&r);
            print_layout(&res.it, res.breakdown.context_parallel);
            print_stack(&res, &wi);
        }
        return Ok(ExitCode::SUCCESS);
    }
    if !args.sweep.is_empty() {
        return sweep(&args, &r, &req, &st);
    }
    // Context parallelism's shape rules, said with the fix before a search that could find
    // nothing (and before a "more GPUs" hint that does not know CP).
    let cp = st.context_parallel.max(1);
    if cp > 1 && !r.cluster.gpus.is_multiple_of(cp) {
        bail!(
            "--cp {cp} must divide --gpus {} (TP × PP × DP × CP = GPUs); pick a CP that divides \
             it ({}) or a GPU count that is a multiple of {cp}",
            r.cluster.gpus,
            (2..=r.cluster.gpus.min(64))
                .filter(|c| r.cluster.gpus.is_multiple_of(*c))
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if cp > 1 && !req.setup.seq.is_multiple_of(2 * cp) {
        bail!(
            "--seq {} must be a multiple of 2 × --cp = {} (load-balanced context parallelism \
             gives each GPU two chunks of the sequence); pick --seq {} or another --cp",
            req.setup.seq,
            2 * cp,
            req.setup.seq.div_ceil(2 * cp) * 2 * cp
        );
    }
    // Interleaving searched unless --virtual-stages fixes it (the 2021 stack has none).
    let plan = if args.stack.virtual_stages.is_none() {
        planner::plan_search(&req, &st, &planner::VIRTUAL_STAGE_CANDIDATES)
    } else {
        planner::plan_with(&req, &st)
    };
    let winner_what_if = plan.ranked.first().and_then(|w| {
        let s = w.breakdown.stack;
        stack::what_if(&req.model, &req.setup, &req.cluster, &w.it.layout, &s).ok()
    });
    if common.json {
        let v = with_inputs(
            &r,
            json!({
                "stack": stack_json(&st),
                "ranked": plan.ranked.iter().take(args.top).enumerate().map(|(i, x)| {
                    stack_layout_json(x, if i == 0 { winner_what_if.as_deref() } else { None })
                }).collect::<Vec<_>>(),
                "ranked_total": plan.ranked.len(),
                "dropped_total": plan.dropped.len(),
                "dropped": plan.dropped.iter().take(args.top).map(|d| json!({
                    "layout": d.layout.label(), "virtual_stages": d.virtual_stages,
                    "needed_bytes": d.needed_bytes, "reason": d.reason
                })).collect::<Vec<_>>(),
                "explanations": plan.explanations,
            }),
        );
        outln!("{}", super::json_text("plan", &v)?);
        return Ok(ExitCode::SUCCESS);
    }
    print_header(&r);
    outln!("stack    {}", st.label());
    if args.stack.virtual_stages.is_none() && !st.is_megatron_2021() {
        outln!("         interleaving depth searched: v = 1 to 8 where every stage has a layer a chunk");
    }
    outln!(
        "\n{} layouts fit, {} dropped (memory or batch rules); fastest first (within 0.5%, the simpler first):",
        plan.ranked.len(),
        plan.dropped.len()
    );
    if !plan.ranked.is_empty() {
        outln!(
            "{:>3}  {:<46} {:>9} {:>9} {:>7} {:>6} {:>9} {:>9} {:>9} {:>9} {:>10}",
            "#",
            "layout",
            "iter",
            "tok/s",
            "TFLOP/s",
            "MFU",
            "compute",
            "TP comm",
            "bubble",
            "DP comm",
            "mem/GPU"
        );
    }
    for (i, x) in plan.ranked.iter().take(args.top).enumerate() {
        let it = &x.it;
        outln!(
            "{:>3}  {:<46} {:>9} {:>9.0} {:>7.1} {:>5.1}% {:>9} {:>9} {:>9} {:>9} {:>10}",
            i + 1,
            label_with_depth(x),
            secs(it.iteration_time_s),
            it.tokens_per_s,
            it.tflops_per_gpu,
            100.0 * it.mfu,
            secs(it.compute_s),
            secs(it.tp_comm_s),
            secs(it.pipeline_bubble_s),
            secs(it.dp_comm_s),
            human_bytes(it.memory.total_bytes)
        );
    }
    outln!();
    if let (Some(w), Some(wi)) = (plan.ranked.first(), &winner_what_if) {
        outln!("winner   {}", label_with_depth(w));
        print_stack(w, wi);
        outln!();
    }
    // The planner's sentences name layouts by TP, PP and DP; under CP each gets its CP too.
    for e in &plan.explanations {
        outln!("- {}", with_cp_labels(e, cp));
    }
    // More GPUs help only where memory was the reason (the hint prices the 2021 stack, no CP).
    let memory_was_why = plan.dropped.iter().any(|d| d.needed_bytes > 0);
    if plan.ranked.is_empty() && memory_was_why && cp == 1 {
        if let Some((gpus, best)) = planner::smallest_fitting_cluster(&req) {
            outln!(
                "- With {gpus} GPUs ({} nodes) it fits: {} needs {} per GPU and runs at {:.1} \
                 TFLOP/s per GPU ({} per iteration).",
                gpus / r.cluster.gpus_per_node.max(1),
                best.layout.label(),
                human_bytes(best.memory.total_bytes),
                best.tflops_per_gpu,
                secs(best.iteration_time_s)
            );
        }
    }
    let memory_drops: Vec<_> = plan.dropped.iter().filter(|d| d.needed_bytes > 0).collect();
    if !memory_drops.is_empty() {
        outln!("\nclosest layouts that do not fit:");
        for d in memory_drops.iter().take(3) {
            outln!(
                "  {}: {}",
                dropped_label(d, cp),
                with_cp_labels(&d.reason, cp)
            );
        }
    }
    let rule_drops = plan.dropped.len() - memory_drops.len();
    if rule_drops > 0 {
        if let Some(d) = plan.dropped.iter().find(|d| d.needed_bytes == 0) {
            outln!(
                "{rule_drops} layouts break a batch or shape rule, e.g. {}: {}",
                dropped_label(d, cp),
                with_cp_labels(&d.reason, cp)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A dropped layout's label with its CP and the interleaving depth it was priced at: the search
/// drops the same layout at several depths, and without `v=` they read as duplicates.
fn dropped_label(d: &planner::Dropped, cp: usize) -> String {
    planner::label_at_depth(&label_with_cp(&d.layout, cp), d.virtual_stages)
}

/// A layout's label with its context-parallel size and interleaving depth where it has them
/// (`TP=8 PP=1 DP=2 CP=3 …`, `… v=4`): with CP, TP × PP × DP × CP is the cluster's GPUs.
fn label_with_depth(r: &StackIteration) -> String {
    planner::label_at_depth(
        &label_with_cp(&r.it.layout, r.breakdown.context_parallel),
        r.breakdown.virtual_stages,
    )
}

/// `text` with ` CP=cp` after every `DP=<n>` in it when `cp > 1` (the planner's sentences
/// label layouts without their CP).
fn with_cp_labels(text: &str, cp: usize) -> String {
    if cp <= 1 {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("DP=") {
        let digits = rest[i + 3..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len() - i - 3);
        let end = i + 3 + digits;
        out.push_str(&rest[..end]);
        if digits > 0 {
            out.push_str(&format!(" CP={cp}"));
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `layout`'s label with ` CP=cp` after its DP when `cp > 1`.
fn label_with_cp(layout: &Layout, cp: usize) -> String {
    let label = layout.label();
    if cp <= 1 {
        return label;
    }
    let dp = format!("DP={}", layout.dp);
    match label.find(&dp) {
        Some(i) => format!(
            "{} CP={cp}{}",
            &label[..i + dp.len()],
            &label[i + dp.len()..]
        ),
        None => format!("{label} CP={cp}"),
    }
}

/// The most points one `plan --sweep` or `serve` sweep computes (each `plan` point is a search
/// of the layouts, ~0.5 ms to 5 ms; 4096 points stay within seconds).
pub const MAX_SWEEP_POINTS: usize = 4096;

/// `plan --sweep`: every combination of the axes, the fastest layout that fits at each.
fn sweep(args: &PlanArgs, r: &Resolved, req: &PlanRequest, st: &Stack) -> anyhow::Result<ExitCode> {
    if args.stack.virtual_stages.is_some()
        && args.sweep.iter().any(|(a, _)| *a == SweepAxis::Virtual)
    {
        bail!("--virtual-stages and --sweep v=… both set the interleaving depth: give one");
    }
    // A bound on the work and the output: each point is a search of the layouts.
    let points: usize = args
        .sweep
        .iter()
        .fold(1usize, |n, (_, v)| n.saturating_mul(v.len().max(1)));
    if points > MAX_SWEEP_POINTS {
        bail!(
            "--sweep asks for {points} points (the product of the axes' lengths); at most \
             {MAX_SWEEP_POINTS} a run: sweep fewer values, or split the sweep over several runs"
        );
    }
    let mut axes = planner::PlanSweep::default();
    for (axis, values) in &args.sweep {
        let slot = match axis {
            SweepAxis::Gpus => &mut axes.gpus,
            SweepAxis::Batch => &mut axes.global_batch,
            SweepAxis::Seq => &mut axes.seq,
            SweepAxis::Virtual => &mut axes.virtual_stages,
            SweepAxis::MicroBatch => &mut axes.micro_batch,
        };
        slot.extend(values);
    }
    if axes.virtual_stages.is_empty() {
        if let Some(v) = args.stack.virtual_stages {
            axes.virtual_stages.push(v);
        }
    }
    let points = planner::sweep(req, st, &axes);
    if args.common.json {
        let v = with_inputs(
            r,
            json!({"stack": stack_json(st), "sweep": axes, "points": points}),
        );
        outln!("{}", super::json_text("plan", &v)?);
        return Ok(ExitCode::SUCCESS);
    }
    if args.csv {
        out!(
            "{}",
            planner::sweep_csv(
                &points,
                &r.model.name,
                &r.cluster.gpu.name,
                super::JSON_SCHEMA,
                env!("CARGO_PKG_VERSION")
            )
        );
        return Ok(ExitCode::SUCCESS);
    }
    print_header(r);
    outln!("stack    {}\n", st.label());
    outln!(
        "{:>7} {:>7} {:>7} {:>6} {:>6}  {:<50} {:>9} {:>6} {:>10} {:>10}",
        "GPUs",
        "batch",
        "seq",
        "v",
        "b",
        "fastest layout that fits",
        "iter",
        "MFU",
        "mem/GPU",
        "fitting"
    );
    let asked = |x: Option<usize>| x.map_or("search".to_string(), |v| v.to_string());
    for p in &points {
        let (layout, iter, mfu, mem) = match (&p.best, &p.invalid) {
            (Some(b), _) => (
                label_with_depth(b),
                secs(b.it.iteration_time_s),
                format!("{:.1}%", 100.0 * b.it.mfu),
                human_bytes(b.it.memory.total_bytes),
            ),
            (None, Some(rule)) => (
                format!("invalid: {rule}"),
                String::new(),
                String::new(),
                String::new(),
            ),
            (None, None) => (
                "nothing fits".to_string(),
                String::new(),
                String::new(),
                String::new(),
            ),
        };
        outln!(
            "{:>7} {:>7} {:>7} {:>6} {:>6}  {:<50} {:>9} {:>6} {:>10} {:>10}",
            p.gpus,
            p.global_batch,
            p.seq,
            asked(p.virtual_stages),
            asked(p.micro_batch),
            layout,
            iter,
            mfu,
            mem,
            p.fitting
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_axes_parse_and_reject() {
        assert_eq!(
            parse_sweep_axis("gpus=8192, 16384"),
            Ok((SweepAxis::Gpus, vec![8192, 16384]))
        );
        assert_eq!(
            parse_sweep_axis("v=1,2,4"),
            Ok((SweepAxis::Virtual, vec![1, 2, 4]))
        );
        for bad in ["gpus", "tp=8", "seq=8k", "batch="] {
            assert!(parse_sweep_axis(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cp_goes_beside_every_dp() {
        assert_eq!(
            with_cp_labels("TP=1 PP=1 DP=8 b=1 beats TP=2 PP=1 DP=4 b=2", 3),
            "TP=1 PP=1 DP=8 CP=3 b=1 beats TP=2 PP=1 DP=4 CP=3 b=2"
        );
        assert_eq!(with_cp_labels("DP=16", 2), "DP=16 CP=2");
        assert_eq!(with_cp_labels("DP= x, DP 8", 2), "DP= x, DP 8");
        assert_eq!(with_cp_labels("TP=1 DP=8", 1), "TP=1 DP=8");
        assert_eq!(
            label_with_cp(&Layout::new(8, 2, 4), 3),
            Layout::new(8, 2, 4).label().replace("DP=4", "DP=4 CP=3")
        );
    }

    #[test]
    fn layout_flag_parses_and_rejects() {
        assert_eq!(parse_layout("8, 8,16"), Ok((8, 8, 16)));
        for bad in ["8,8", "8,0,1", "a,b,c", "1,2,3,4"] {
            assert!(parse_layout(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn resolve_fills_from_scenario_and_names_missing_flags() {
        let args = ModelClusterArgs {
            scenario: Some("1t-3d".into()),
            ..Default::default()
        };
        let r = args.resolve().unwrap();
        assert_eq!((r.cluster.gpus, r.setup.global_batch), (3072, 3072));
        let args = ModelClusterArgs {
            model: Some("gpt3-175b".into()),
            gpu: Some("a100".into()),
            gpus: Some(8),
            gpus_per_node: Some(8),
            ..Default::default()
        };
        let err = args.resolve().err().unwrap();
        assert!(err.to_string().contains("--global-batch"), "{err}");
        let custom = ModelClusterArgs {
            layers: Some(4),
            hidden: Some(512),
            ..Default::default()
        };
        let err = custom.resolve().err().unwrap();
        assert!(err.to_string().contains("--heads"), "{err}");
    }

    /// Every numeric flag of `plan`/`memory` at the values a careful user tries (0, 1, an odd
    /// number, 2^32, 10^11, u64::MAX): `resolve` answers with flags it accepts, which then plan
    /// without a panic, or with an error naming the problem.
    #[test]
    fn extreme_flag_values_resolve_or_are_refused() {
        let base = ModelClusterArgs {
            model: Some("llama3-8b".into()),
            gpu: Some("h100".into()),
            gpus: Some(16),
            gpus_per_node: Some(8),
            global_batch: Some(16),
            seq: Some(2048),
            ..Default::default()
        };
        let custom = ModelClusterArgs {
            model: None,
            layers: Some(24),
            hidden: Some(1024),
            heads: Some(16),
            vocab: Some(50257),
            ..base.clone()
        };
        type Set = fn(&mut ModelClusterArgs, usize);
        let fields: [(&str, Set); 11] = [
            ("layers", |a, v| a.layers = Some(v)),
            ("hidden", |a, v| a.hidden = Some(v)),
            ("heads", |a, v| a.heads = Some(v)),
            ("kv_heads", |a, v| a.kv_heads = Some(v)),
            ("ffn", |a, v| a.ffn = Some(v)),
            ("vocab", |a, v| a.vocab = Some(v)),
            ("seq", |a, v| a.seq = Some(v)),
            ("global_batch", |a, v| a.global_batch = Some(v)),
            ("micro_batch", |a, v| a.micro_batch = Some(v)),
            ("gpus", |a, v| a.gpus = Some(v)),
            ("gpus_per_node", |a, v| a.gpus_per_node = Some(v)),
        ];
        for (name, set) in fields {
            for v in [0, 1, 7, 1 << 32, 100_000_000_000, usize::MAX] {
                for serve in [false, true] {
                    let mut a = if ["layers", "hidden", "heads"].contains(&name) {
                        custom.clone()
                    } else {
                        base.clone()
                    };
                    a.serve = serve;
                    set(&mut a, v);
                    match a.resolve() {
                        Ok(r) if r.serve_tp.is_none() => {
                            let plan = planner::plan(&a.request(&r));
                            for it in &plan.ranked {
                                assert!(it.fits && it.tokens_per_s.is_finite(), "{name}={v}");
                            }
                        }
                        Ok(r) => {
                            for tp in memory::serving_tp_sizes(&r.model) {
                                let m = memory::serving_memory(
                                    &r.model,
                                    tp,
                                    1,
                                    r.setup.global_batch,
                                    r.setup.seq,
                                );
                                assert!(m.total_bytes >= m.weights_bytes, "{name}={v}");
                            }
                        }
                        Err(e) => assert!(!e.to_string().is_empty(), "{name}={v}"),
                    }
                }
            }
        }
        for zero in [4u8, 9, 255] {
            let a = ModelClusterArgs {
                zero,
                ..base.clone()
            };
            let err = a.resolve().err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains("--zero"), "{zero}: {err}");
        }
        let a = ModelClusterArgs {
            layout: Some((usize::MAX, usize::MAX, 2)),
            ..base.clone()
        };
        let r = a.resolve().unwrap();
        let layout = a.fixed_layout().unwrap();
        assert!(planner::evaluate(&a.request(&r), &layout).is_err());
    }

    #[test]
    fn layout_json_has_the_documented_fields() {
        let args = ModelClusterArgs {
            scenario: Some("1t-3d".into()),
            layout: Some((8, 64, 6)),
            recompute: Some(Recompute::Full),
            ..Default::default()
        };
        let r = args.resolve().unwrap();
        let layout = args.fixed_layout().unwrap();
        let it = planner::evaluate(&args.request(&r), &layout).unwrap();
        let v = layout_json(&it);
        for key in ["iteration_time_s", "tflops_per_gpu", "mfu"] {
            assert!(v[key].as_f64().is_some_and(|x| x > 0.0), "{key}");
        }
        for key in ["compute", "tp_comm", "pipeline_bubble", "dp_comm"] {
            assert!(v["time_split_s"][key].as_f64().is_some(), "{key}");
        }
        for key in ["weights", "gradients", "optimizer", "activations", "total"] {
            assert!(
                v["memory_per_gpu_bytes"][key]
                    .as_u64()
                    .is_some_and(|b| b > 0),
                "{key}"
            );
        }
    }
}
