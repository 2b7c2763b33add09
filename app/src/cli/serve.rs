//! `tplab serve`: serving with tensor parallelism.
//!
//! - For a model (`--model llama3-70b`, a preset or a Hugging Face `config.json`): the cost
//!   model's time per output token at each TP (`--tp 1,2,4,8`) on `--gpu`, split into the weight
//!   and KV-cache reads and the all-reduces, with tokens/s, memory per GPU and the time to first
//!   token; where more GPUs stop helping; whether the TP group crosses the node boundary.
//! - `--tiny`: the tiny character-level model trained on the guide (as `tplab train`), decoded on
//!   virtual GPUs at each TP: the generated text, the measured time per token on the virtual GPUs
//!   beside the cost model's for `--gpu`, and the check against the unsharded reference.

use clap::Args;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;
use tplab_engine::capacity::defaults;
use tplab_engine::capacity::hardware::{Catalogue, Cluster, MAX_GPUS};
use tplab_engine::capacity::models::ModelSpec;
use tplab_engine::config::human_bytes;
use tplab_engine::dtype::DType;
use tplab_engine::labs::serve::{self, Sampling, TinyModel};
use tplab_engine::labs::serve_cost::{
    self, AllReduceImpl, KvCacheFormat, Launch, ServeSetup, WeightFormat,
};
use tplab_engine::labs::train::TrainConfig;

#[derive(Args, Clone, Debug)]
pub struct ServeArgs {
    /// A preset (llama3-70b, llama3-8b, gpt3-175b, mixtral-8x7b, …) or a config.json path.
    #[arg(long, default_value = "llama3-70b")]
    pub model: String,
    /// GPU from the catalogue (h100, a100, h200, b200, …) or from --hardware.
    #[arg(long, default_value = defaults::GPU)]
    pub gpu: String,
    /// TOML file with extra GPUs and links, as `plan --hardware` (see docs/calibration.md,
    /// "User-defined hardware").
    #[arg(long)]
    pub hardware: Option<PathBuf>,
    /// Comma-separated TP sizes (default: 1,2,4,8,16 for a model, 1,2,4 with --tiny).
    #[arg(long = "tp", value_delimiter = ',')]
    pub tps: Vec<usize>,
    /// Pipeline stages: each TP group holds layers/PP layers, a token passes the stages in turn
    /// (TP × PP GPUs per row; the layers must split evenly; 1 to 64).
    #[arg(long, default_value_t = 1, value_parser = parse_pp)]
    pub pp: usize,
    /// Concurrent sequences decoded together (per replica); a comma-separated list sweeps them
    /// (1 to 1,000,000).
    #[arg(long, value_delimiter = ',', default_values_t = [defaults::SERVE_BATCH],
          value_parser = parse_batch)]
    pub batch: Vec<usize>,
    /// Tokens each sequence holds in the KV cache while decoding; a comma-separated list
    /// sweeps them (1 to 100,000,000; 1e6 notation accepted).
    #[arg(long, value_delimiter = ',', default_values_t = [defaults::SERVE_CONTEXT_TOKENS],
          value_parser = parse_context)]
    pub context: Vec<usize>,
    /// Print the sweep (every TP × batch × context point) as CSV, one row a point; points
    /// that break a rule are rows too, with the rule in the last column.
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// A latency–throughput curve: each TP over batch 1, 2, 4, … up to the sequences vLLM
    /// decodes together by default on this GPU (max_num_seqs: 1024 on H100/H200/B200, 256
    /// otherwise), or over --batch when it lists several; with --csv or --json as the sweep.
    #[arg(long)]
    pub curve: bool,
    /// Replicas against TP on one node: every way to fill a node of --gpus-per-node GPUs with
    /// replicas of one TP size (2 × TP 4 against 1 × TP 8 on 8 GPUs), each decoding --batch
    /// sequences: time per token, tokens/s per replica, per GPU and per node, and whether it
    /// fits.
    #[arg(long, conflicts_with_all = ["tps", "curve", "csv"])]
    pub replicas: bool,
    /// Prompt tokens for the time to first token (1 to 100,000,000).
    #[arg(long, default_value_t = defaults::PROMPT_TOKENS, value_parser = parse_prompt)]
    pub prompt_tokens: usize,
    /// Tokens a forward pass of the prefill takes (chunked prefill: vLLM's
    /// max_num_batched_tokens, SGLang's --chunked-prefill-size); 0 prefills the prompts at
    /// once. Default: vLLM's for an OpenAI-compatible server on this GPU, 8192 on GPUs of at
    /// least 70 GiB but A100s, 2048 otherwise.
    #[arg(long, value_parser = parse_chunk)]
    pub prefill_chunk: Option<usize>,
    /// GPUs per node (one NVLink domain).
    #[arg(long, default_value_t = defaults::GPUS_PER_NODE, value_parser = parse_gpus_per_node)]
    pub gpus_per_node: usize,
    /// Inter-node link: ib200, ib400, pcie4, pcie5, nvlink3..5, or one from --hardware
    /// (default: the GPU's own node's, as every command: ib200 for A100s, ib400 otherwise).
    #[arg(long)]
    pub inter_node: Option<String>,
    /// The TP all-reduces: nccl (NCCL's tuner, the calibrated predictor of `tplab collective`)
    /// or custom (vLLM's / TensorRT-LLM's one-shot and two-shot NVLink kernels, up to 8 MiB and
    /// 8 GPUs in one node; NCCL beyond).
    #[arg(long = "all-reduce", default_value = "nccl")]
    pub all_reduce: AllReduceImpl,
    /// Kernel launches: graphs (the step replayed as a CUDA graph, the host's turn overlapped:
    /// vLLM, SGLang since v0.4, TensorRT-LLM), graphs-sync (CUDA graphs, the host's turn between
    /// steps not overlapped: SGLang before v0.4) or eager (FasterTransformer, no graph capture).
    #[arg(long, default_value = "graphs")]
    pub launch: Launch,
    /// The linear layers' weights: bf16, fp8 (FP8 GEMMs: Hopper, Ada, Blackwell) or int4
    /// (weight-only W4A16, GPTQ/AWQ through Marlin: Ampere and later). Names as `plan
    /// --precision`.
    #[arg(long, default_value = "bf16")]
    pub weights: WeightFormat,
    /// The KV cache: bf16 or fp8 (GPUs with FP8 only).
    #[arg(long = "kv-cache", default_value = "bf16")]
    pub kv_cache: KvCacheFormat,
    /// Serve the tiny model on virtual GPUs instead (measured beside modeled, checked).
    #[arg(long)]
    pub tiny: bool,
    /// --tiny: the prompt (characters of the guide's alphabet).
    #[arg(long, default_value = "Tensor paralelliği")]
    pub prompt: String,
    /// --tiny: tokens to generate.
    #[arg(long, default_value_t = 24)]
    pub tokens: usize,
    /// --tiny: grouped-query attention's KV heads (default: one per head, 4).
    #[arg(long)]
    pub kv_heads: Option<usize>,
    /// --tiny: train a fresh model for this many steps before serving (0: seeded random
    /// weights). Default: the trained model tplab ships (multi-head attention), or 300 steps
    /// with --kv-heads.
    #[arg(long, value_parser = parse_train_steps)]
    pub train_steps: Option<usize>,
    /// --tiny: f32 or f64.
    #[arg(long, default_value = "f64")]
    pub dtype: DType,
    /// --tiny: sample with this temperature (seeded by --seed) instead of greedy.
    #[arg(long)]
    pub temperature: Option<f64>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// --tiny: decode on an NVIDIA GPU (CUDA, f32) instead of the virtual GPUs: measured time
    /// per token beside the cost model's for --gpu, checked against the CPU reference.
    #[arg(long)]
    pub cuda: bool,
    /// --cuda: the device whose CUDA streams are the ranks.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// --cuda: one rank per GPU with NCCL (needs TP devices) instead of streams on one.
    #[arg(long)]
    pub one_rank_per_device: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// The longest KV cache a sequence may hold: 10⁸ tokens (the longest context of any model
/// today is 10⁷, Llama 4 Scout's).
pub const MAX_CONTEXT_TOKENS: usize = 100_000_000;
/// The largest decode batch: 10⁶ sequences.
pub const MAX_BATCH: usize = 1_000_000;

/// A count written as an integer or in `1e6` notation, within `min..=max`.
pub fn parse_count(
    s: &str,
    what: &str,
    min: usize,
    max: usize,
    unit: &str,
) -> Result<usize, String> {
    let t = s.trim().replace('_', "");
    let v = match t.parse::<usize>() {
        Ok(v) => v as f64,
        Err(_) => t
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && x.fract() == 0.0)
            .ok_or_else(|| format!("'{s}' is not a whole number of {unit}"))?,
    };
    if v < min as f64 {
        return Err(format!(
            "{what} must be at least {min} (got {s}); the physical range is {min} to {max} {unit}"
        ));
    }
    if v > max as f64 {
        return Err(format!(
            "{what} {s} is outside the physical range {min} to {max} {unit}"
        ));
    }
    Ok(v as usize)
}

fn parse_context(s: &str) -> Result<usize, String> {
    parse_count(s, "--context", 1, MAX_CONTEXT_TOKENS, "tokens")
}

fn parse_batch(s: &str) -> Result<usize, String> {
    parse_count(s, "--batch", 1, MAX_BATCH, "sequences")
}

fn parse_prompt(s: &str) -> Result<usize, String> {
    parse_count(s, "--prompt-tokens", 1, MAX_CONTEXT_TOKENS, "tokens")
}

fn parse_chunk(s: &str) -> Result<usize, String> {
    parse_count(s, "--prefill-chunk", 0, MAX_CONTEXT_TOKENS, "tokens")
}

/// The most training steps `serve --tiny` runs before it serves: a demonstration (the shipped
/// model took 300); `tplab train` is the place for long runs.
pub const MAX_TINY_TRAIN_STEPS: usize = 5000;

fn parse_train_steps(s: &str) -> Result<usize, String> {
    parse_count(
        s,
        "--train-steps",
        0,
        MAX_TINY_TRAIN_STEPS,
        "steps (longer runs: tplab train)",
    )
}

fn parse_pp(s: &str) -> Result<usize, String> {
    parse_count(s, "--pp", 1, 64, "pipeline stages")
}

fn parse_gpus_per_node(s: &str) -> Result<usize, String> {
    parse_count(s, "--gpus-per-node", 1, MAX_GPUS, "GPUs")
}

/// One point of a sweep that breaks a rule: its setting and the rule.
#[derive(serde::Serialize)]
struct Invalid {
    tp: usize,
    pp: usize,
    batch: usize,
    context: usize,
    rule: String,
}

/// The inputs a model answer stands for, every default filled in: the `inputs` key of the
/// JSON.
impl ServeArgs {
    /// The serving setting these flags give at one TP, batch and context.
    fn setup(&self, tp: usize, batch: usize, context: usize) -> ServeSetup {
        ServeSetup {
            tp,
            pp: self.pp,
            batch,
            context,
            all_reduce: self.all_reduce,
            launch: self.launch,
            weights: self.weights,
            kv_cache: self.kv_cache,
        }
    }
}

fn inputs_json(a: &ServeArgs, model: &ModelSpec, cluster: &Cluster, chunk: usize) -> Value {
    json!({
        "model": model.name,
        "gpu": cluster.gpu.name,
        "gpus_per_node": cluster.gpus_per_node,
        "intra_node": cluster.intra_node.name,
        "inter_node": cluster.inter_node.name,
        "hardware": a.hardware.as_ref().map(|p| p.display().to_string()),
        "tp": a.tps,
        "pp": a.pp,
        "batch": a.batch,
        "context": a.context,
        "prompt_tokens": a.prompt_tokens,
        "prefill_chunk_tokens": chunk,
        "all_reduce": a.all_reduce.name(),
        "launch": a.launch.name(),
        "weights": a.weights.name(),
        "kv_cache": a.kv_cache.name(),
    })
}

/// The sweep's CSV columns; `invalid` (the rule a point breaks) is last.
const CSV_COLUMNS: [&str; 19] = [
    "schema",
    "tplab_version",
    "model",
    "gpu",
    "gpus_per_node",
    "tp",
    "pp",
    "batch",
    "context",
    "ms_per_token",
    "tokens_per_s",
    "tokens_per_s_per_gpu",
    "tokens_per_s_per_node",
    "ttft_ms",
    "prefill_chunk_tokens",
    "memory_per_gpu_bytes",
    "fits",
    "crosses_nodes",
    "invalid",
];

pub fn run(a: ServeArgs) -> anyhow::Result<ExitCode> {
    if a.cuda && !a.tiny {
        anyhow::bail!(
            "--cuda decodes the tiny model on the GPU: pass --tiny --cuda (a preset or config is \
             only priced by the cost model)"
        );
    }
    if a.tiny {
        if a.pp != 1 {
            anyhow::bail!(
                "--pp prices pipeline stages with the cost model; the tiny model decodes with TP \
                 only: drop --pp or --tiny"
            );
        }
        return run_tiny(a);
    }
    let model = ModelSpec::from_preset_or_path(&a.model)?;
    let catalogue = super::plan::catalogue(a.hardware.as_deref())?;
    if a.replicas {
        return run_replicas(&a, &model, &catalogue);
    }
    let (tps, cluster) = tps_and_cluster(&a, &catalogue, &[1, 2, 4, 8, 16])?;
    // A format the GPU cannot run is an error with its rule, not a skipped point per TP.
    serve_cost::check_formats(&cluster.gpu, a.weights, a.kv_cache)?;
    let chunk = a
        .prefill_chunk
        .unwrap_or_else(|| serve_cost::default_prefill_chunk_tokens(&cluster.gpu));
    // A curve over the batch: powers of two up to vLLM's default max_num_seqs on this GPU,
    // unless --batch lists the points.
    let batches = if a.curve && a.batch.len() <= 1 {
        serve_cost::curve_batches(serve_cost::default_max_batch(&cluster.gpu))
    } else {
        a.batch.clone()
    };
    // A bound on the work and the output before any point is computed.
    let asked = tps
        .len()
        .saturating_mul(a.context.len())
        .saturating_mul(batches.len());
    if asked > super::plan::MAX_SWEEP_POINTS {
        anyhow::bail!(
            "the sweep asks for {asked} points (--tp × --context × --batch values); at most {} \
             a run: give fewer values, or split the sweep over several runs",
            super::plan::MAX_SWEEP_POINTS
        );
    }
    // Every point of the sweep (each TP's points together): the ones that break a rule are
    // reported and skipped.
    let mut points = Vec::new();
    let mut invalid = Vec::new();
    for &tp in &tps {
        for &context in &a.context {
            for &batch in &batches {
                let setup = a.setup(tp, batch, context);
                let prefill = serve_cost::prefill_time_chunked(
                    &model,
                    &cluster,
                    ServeSetup {
                        context: a.prompt_tokens,
                        ..setup
                    },
                    chunk,
                );
                match (serve_cost::decode_time(&model, &cluster, setup), prefill) {
                    (Ok(d), Ok(p)) => points.push((d, p)),
                    (Err(e), _) | (_, Err(e)) => invalid.push(Invalid {
                        tp,
                        pp: a.pp,
                        batch,
                        context,
                        rule: e.to_string(),
                    }),
                }
            }
        }
    }
    if a.csv {
        outln!("{}", CSV_COLUMNS.join(","));
        let name = csv_field(&model.name);
        let gpu = csv_field(&cluster.gpu.name);
        let head = format!(
            "{},{},{name},{gpu},{}",
            super::JSON_SCHEMA,
            env!("CARGO_PKG_VERSION"),
            cluster.gpus_per_node
        );
        for (d, p) in &points {
            outln!(
                "{head},{},{},{},{},{:.6},{:.3},{:.3},{:.3},{:.6},{},{},{},{},",
                d.setup.tp,
                d.setup.pp,
                d.setup.batch,
                d.setup.context,
                d.step_s * 1e3,
                d.tokens_per_s,
                d.tokens_per_s_per_gpu,
                d.tokens_per_s_per_node,
                p.total_s * 1e3,
                p.chunk_tokens,
                d.memory_per_gpu_bytes,
                d.fits,
                d.spans_nodes
            );
        }
        // The measured columns of an invalid point are empty.
        let empty = ",".repeat(CSV_COLUMNS.len() - 10);
        for x in &invalid {
            outln!(
                "{head},{},{},{},{}{empty}{}",
                x.tp,
                x.pp,
                x.batch,
                x.context,
                csv_field(&x.rule)
            );
        }
        return Ok(exit_code(!points.is_empty()));
    }
    for x in &invalid {
        eprintln!(
            "skipped TP {} (batch {}, context {}): {}",
            x.tp, x.batch, x.context, x.rule
        );
    }
    if a.curve || batches.len() * a.context.len() > 1 {
        if a.json {
            let v = json!({
                "inputs": inputs_json(&a, &model, &cluster, chunk),
                "model": model,
                "gpu": cluster.gpu.name,
                "points": points.iter().map(|(d, p)| json!({
                    "decode": d, "prefill": p})).collect::<Vec<_>>(),
                "invalid": invalid,
            });
            outln!("{}", super::json_text("serve", &v)?);
            return Ok(exit_code(!points.is_empty()));
        }
        print_points(&a, &model, &cluster, &points, invalid.len());
        return Ok(exit_code(!points.is_empty()));
    }
    let batch = batches.first().copied().unwrap_or(defaults::SERVE_BATCH);
    let context = a
        .context
        .first()
        .copied()
        .unwrap_or(defaults::SERVE_CONTEXT_TOKENS);
    let tps: Vec<usize> = points.iter().map(|(d, _)| d.setup.tp).collect();
    if tps.is_empty() {
        anyhow::bail!(
            "no TP in the sweep can serve this model: {}",
            invalid
                .iter()
                .map(|x| format!("TP {}: {}", x.tp, x.rule))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let base = a.setup(1, batch, context);
    let sweep = serve_cost::sweep_tp(&model, &cluster, &tps, base)?;
    let prefill: Vec<_> = points.iter().map(|(_, p)| p.clone()).collect();
    if a.json {
        let v = json!({"inputs": inputs_json(&a, &model, &cluster, chunk), "model": model,
                       "sweep": sweep, "prefill": prefill, "invalid": invalid});
        outln!("{}", super::json_text("serve", &v)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "tplab serve: {} on {} ({} GPUs per node, {} between nodes){}, batch {}, context {} \
         tokens, prompt {} tokens, {} weights, {} KV cache, {} all-reduce, {} launches",
        model.summary(),
        cluster.gpu.name,
        cluster.gpus_per_node,
        cluster.inter_node.name,
        if a.pp > 1 {
            format!(
                ", {} pipeline stages of {} layers (TP × {} GPUs a row)",
                a.pp,
                model.layers / a.pp,
                a.pp
            )
        } else {
            String::new()
        },
        batch,
        context,
        a.prompt_tokens,
        a.weights.name(),
        a.kv_cache.name(),
        match a.all_reduce {
            AllReduceImpl::Nccl => "NCCL",
            AllReduceImpl::Custom => "custom (vLLM/TensorRT-LLM)",
        },
        launch_words(a.launch)
    );
    outln!();
    outln!(
        "  {:>3}  {:>10}  {:>9}  {:>9}  {:>9}  {:>11}  {:>9}{}  {:>17}  {:>10}  {:>10}  {:>10}  {:>9}  {:>11}  {:>10}  {}",
        "TP",
        "ms/token",
        "weights",
        "KV read",
        "fixed",
        "all-reduces",
        "one, µs",
        if a.pp > 1 {
            format!("  {:>11}", "stage sends")
        } else {
            String::new()
        },
        "runs as",
        "tokens/s",
        "tok/s/GPU",
        "tok/s/node",
        "TTFT ms",
        "memory/GPU",
        "fits",
        "link"
    );
    for (r, p) in sweep.rows.iter().zip(&prefill) {
        outln!(
            "  {:>3}  {:>10.2}  {:>9.2}  {:>9.2}  {:>9.2}  {:>11.2}  {:>9.1}{}  {:>17}  {:>10.1}  {:>10.1}  {:>10.1}  {:>9.1}  {:>11}  {:>10}  {}",
            r.setup.tp,
            r.step_s * 1e3,
            r.weights_s * 1e3,
            r.kv_s * 1e3,
            r.fixed_s * 1e3,
            r.collective_s * 1e3,
            r.all_reduce_s * 1e6,
            if a.pp > 1 {
                format!("  {:>11.3}", r.pipeline_send_s * 1e3)
            } else {
                String::new()
            },
            if r.setup.tp > 1 { r.all_reduce_how.as_str() } else { "-" },
            r.tokens_per_s,
            r.tokens_per_s_per_gpu,
            r.tokens_per_s_per_node,
            p.total_s * 1e3,
            human_bytes(r.memory_per_gpu_bytes),
            if r.fits { "yes" } else { "no" },
            if r.spans_nodes {
                format!("{} (crosses nodes)", cluster.inter_node.name)
            } else {
                cluster.intra_node.name.clone()
            }
        );
    }
    outln!();
    outln!(
        "Columns in ms per decode step: the weights and KV-cache reads from HBM (roofline at the \
         bandwidth a streaming kernel reaches on this GPU), the fixed costs ({} kernels a layer \
         at {:.1} µs each, {:.2} ms a step for sampling{}), and the {} all-reduces of {} values \
         per step ({} per layer: attention's and the MLP's g) plus the embedding's all-reduce \
         and the logits' all-gather; \"one, µs\" is one of those all-reduces and how it runs.",
        serve_cost::LAYER_KERNELS,
        a.launch.layer_s() / serve_cost::LAYER_KERNELS as f64 * 1e6,
        a.launch.step_s() * 1e3,
        match a.launch {
            Launch::GraphsSync => " and the host's turn the GPU waits for",
            Launch::Eager => " and the host's launches",
            Launch::Graphs => "",
        },
        2 * model.layers,
        batch * model.hidden,
        2
    );
    print_throughput_note(&cluster, Some(batch));
    print_ttft_note(&a, &cluster, chunk, prefill.first());
    if a.pp > 1 {
        let across = sweep
            .rows
            .iter()
            .map(|r| r.pipeline_sends_across_nodes)
            .max()
            .unwrap_or(0);
        outln!(
            "Pipeline: each token passes the {} stages in turn, so the weights, KV cache, fixed \
             costs and all-reduces add up over the stages as at PP=1; \"stage sends\" is the {} \
             sends of the activation between stages ({} of them across nodes at the widest TP), \
             the only time PP adds. PP cuts the memory per GPU (shown for the last stage, which \
             also holds the output projection), not the time per token.",
            a.pp,
            a.pp - 1,
            across
        );
    }
    outln!(
        "Memory per GPU: {} weights (linear layers in {}, the rest 16-bit) and the {} KV cache \
         of {} × {} tokens, against {} usable ({:.0}% of the {}'s memory):",
        a.weights.name(),
        a.weights.name(),
        a.kv_cache.name(),
        batch,
        context,
        human_bytes(sweep.rows.first().map_or(0, |r| r.usable_memory_bytes)),
        100.0 * tplab_engine::capacity::memory::USABLE_MEMORY_FRACTION,
        cluster.gpu.display_name()
    );
    for r in &sweep.rows {
        outln!(
            "  TP={:<3} {} weights + {} KV cache = {}: {}",
            r.setup.tp,
            human_bytes(r.weights_memory_bytes),
            human_bytes(r.kv_memory_bytes),
            human_bytes(r.memory_per_gpu_bytes),
            if r.fits { "fits" } else { "does NOT fit" }
        );
    }
    if let Some(best) = sweep.best_tp {
        outln!("Lowest time per token among the settings that fit: TP={best}.");
    } else {
        outln!(
            "No TP in the sweep fits; try more GPUs (--tp), a shorter --context or smaller \
             --batch, or smaller formats (--weights fp8 or int4, --kv-cache fp8)."
        );
    }
    if let Some(d) = sweep.diminishing_from {
        outln!(
            "From TP={d} on, doubling the GPUs cuts the time per token by less than 10%: the \
             weight reads keep halving, the all-reduces' latency does not."
        );
    }
    outln!(
        "Model only (engine/src/labs/serve_cost.rs); predicted against published decode \
         latencies in docs/calibration.md (Serving; reprinted by `cargo test -p tplab-engine \
         --test serve_calibration -- --nocapture`). Compare replicas against TP on a node with \
         --replicas, batch sizes with --curve."
    );
    Ok(ExitCode::SUCCESS)
}

/// How the launch mode reads in a heading.
fn launch_words(launch: Launch) -> &'static str {
    match launch {
        Launch::Graphs => "CUDA-graph",
        Launch::GraphsSync => "CUDA-graph (host turn not overlapped)",
        Launch::Eager => "eager",
    }
}

/// What tokens/s per GPU and per node mean, for a batch of `batch` sequences (`None`: each
/// row's own batch).
fn print_throughput_note(cluster: &Cluster, batch: Option<usize>) {
    // (what one replica decodes, what each replica of a full node decodes)
    let (seqs, each) = match batch {
        Some(1) => ("1 sequence".to_string(), "its own 1 sequence".to_string()),
        Some(b) => (format!("{b} sequences"), format!("its own {b} sequences")),
        None => ("the row's batch".to_string(), "the row's batch".to_string()),
    };
    outln!(
        "tokens/s: the output tokens a second of one replica (one TP × PP group) decoding \
         {seqs}; tok/s/GPU: divided by its GPUs; tok/s/node: a node of {} GPUs filled with \
         replicas of this size, each decoding {each} (a replica wider than a node: the \
         node's share of it).",
        cluster.gpus_per_node
    );
}

/// How the time to first token was priced.
fn print_ttft_note(
    a: &ServeArgs,
    cluster: &Cluster,
    chunk: usize,
    first: Option<&serve_cost::PrefillTime>,
) {
    let passes = first.map_or(1, |p| p.passes);
    let how = if chunk == 0 {
        "at once (--prefill-chunk 0)".to_string()
    } else if a.prefill_chunk.is_some() {
        format!("in chunks of up to {chunk} tokens (--prefill-chunk)")
    } else {
        format!(
            "in chunks of up to {chunk} tokens (vLLM's default max_num_batched_tokens on the {}; \
             --prefill-chunk sets it, 0 prefills at once)",
            cluster.gpu.display_name()
        )
    };
    outln!(
        "TTFT: {} × {} prompt tokens prefilled {how}: {passes} forward pass{} one after the \
         other, until the last prompt's first token, on an otherwise idle replica.",
        first.map_or(1, |p| p.batch),
        a.prompt_tokens,
        if passes == 1 { "" } else { "es" }
    );
}

/// The multi-point table (a sweep over batch or context, or `--curve`).
fn print_points(
    a: &ServeArgs,
    model: &ModelSpec,
    cluster: &Cluster,
    points: &[(serve_cost::DecodeTime, serve_cost::PrefillTime)],
    skipped: usize,
) {
    outln!(
        "tplab serve: {} on {} ({} GPUs per node), {} weights, {} KV cache, {} launches; {} \
         points ({} skipped){}:",
        model.summary(),
        cluster.gpu.name,
        cluster.gpus_per_node,
        a.weights.name(),
        a.kv_cache.name(),
        launch_words(a.launch),
        points.len(),
        skipped,
        if a.curve {
            ", latency against throughput over the batch"
        } else {
            ""
        }
    );
    outln!(
        "  {:>3}  {:>7}  {:>9}  {:>10}  {:>11}  {:>10}  {:>11}  {:>9}  {:>11}  {:>4}",
        "TP",
        "batch",
        "context",
        "ms/token",
        "tokens/s",
        "tok/s/GPU",
        "tok/s/node",
        "TTFT ms",
        "memory/GPU",
        "fits"
    );
    for (d, p) in points {
        outln!(
            "  {:>3}  {:>7}  {:>9}  {:>10.2}  {:>11.1}  {:>10.1}  {:>11.1}  {:>9.1}  {:>11}  {:>4}",
            d.setup.tp,
            d.setup.batch,
            d.setup.context,
            d.step_s * 1e3,
            d.tokens_per_s,
            d.tokens_per_s_per_gpu,
            d.tokens_per_s_per_node,
            p.total_s * 1e3,
            human_bytes(d.memory_per_gpu_bytes),
            if d.fits { "yes" } else { "no" }
        );
    }
    if a.curve {
        outln!(
            "Each sequence waits ms/token for its next token; the replica makes batch / ms/token \
             tokens a second. Up to the batch where the weights stop dominating the step, more \
             sequences cost little latency and multiply the throughput; past it the KV cache \
             and the GEMMs grow the step with the batch. Rows marked \"no\" do not fit in \
             memory. Batch sizes: powers of two up to vLLM's default max_num_seqs on this GPU \
             ({}), or --batch.",
            serve_cost::default_max_batch(&cluster.gpu)
        );
    }
    print_throughput_note(cluster, None);
}

/// `--replicas`: every way to fill one node with replicas of one TP size.
fn run_replicas(
    a: &ServeArgs,
    model: &ModelSpec,
    catalogue: &Catalogue,
) -> anyhow::Result<ExitCode> {
    let gpn = a.gpus_per_node;
    let cluster = Cluster::new(
        catalogue,
        &a.gpu,
        gpn,
        gpn,
        &defaults::inter_node(catalogue, &a.gpu, a.inter_node.as_deref())?,
    )?;
    serve_cost::check_formats(&cluster.gpu, a.weights, a.kv_cache)?;
    let chunk = a
        .prefill_chunk
        .unwrap_or_else(|| serve_cost::default_prefill_chunk_tokens(&cluster.gpu));
    let batch = a.batch.first().copied().unwrap_or(defaults::SERVE_BATCH);
    let context = a
        .context
        .first()
        .copied()
        .unwrap_or(defaults::SERVE_CONTEXT_TOKENS);
    if a.batch.len() > 1 || a.context.len() > 1 {
        anyhow::bail!(
            "--replicas compares one setting across the ways to fill a node; give one --batch \
             and one --context (or sweep them without --replicas)"
        );
    }
    let base = a.setup(1, batch, context);
    let splits = serve_cost::node_splits(model, &cluster, base);
    if splits.is_empty() {
        anyhow::bail!(
            "no TP × PP = TP × {} divides a node of {gpn} GPUs; give a --pp that divides \
             --gpus-per-node",
            a.pp
        );
    }
    let ttft: Vec<Option<f64>> = splits
        .iter()
        .map(|s| {
            serve_cost::prefill_time_chunked(
                model,
                &cluster,
                ServeSetup {
                    tp: s.tp,
                    context: a.prompt_tokens,
                    ..base
                },
                chunk,
            )
            .ok()
            .map(|p| p.total_s)
        })
        .collect();
    if a.json {
        let rows: Vec<Value> = splits
            .iter()
            .zip(&ttft)
            .map(|(s, t)| json!({"split": s, "ttft_s": t}))
            .collect();
        let v = json!({"inputs": inputs_json(a, model, &cluster, chunk), "model": model,
                       "node_splits": rows});
        outln!("{}", super::json_text("serve", &v)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "tplab serve --replicas: {} on one node of {gpn} × {} ({}), each replica decoding {batch} \
         sequence(s) of {context} tokens, {} weights, {} KV cache, {} launches",
        model.summary(),
        cluster.gpu.name,
        cluster.intra_node.name,
        a.weights.name(),
        a.kv_cache.name(),
        launch_words(a.launch)
    );
    outln!();
    outln!(
        "  {:>12}  {:>9}  {:>10}  {:>11}  {:>10}  {:>11}  {:>9}  {:>11}  {:>4}",
        "replicas",
        "seqs/node",
        "ms/token",
        "tok/s each",
        "tok/s/GPU",
        "tok/s/node",
        "TTFT ms",
        "memory/GPU",
        "fits"
    );
    for (s, t) in splits.iter().zip(&ttft) {
        let label = if s.pp > 1 {
            format!("{} × TP{}×PP{}", s.replicas, s.tp, s.pp)
        } else {
            format!("{} × TP{}", s.replicas, s.tp)
        };
        match &s.decode {
            Some(d) => outln!(
                "  {:>12}  {:>9}  {:>10.2}  {:>11.1}  {:>10.1}  {:>11.1}  {:>9}  {:>11}  {:>4}",
                label,
                s.replicas * batch,
                d.step_s * 1e3,
                d.tokens_per_s,
                d.tokens_per_s_per_gpu,
                d.tokens_per_s_per_node,
                t.map_or("-".to_string(), |t| format!("{:.1}", t * 1e3)),
                human_bytes(d.memory_per_gpu_bytes),
                if d.fits { "yes" } else { "no" }
            ),
            None => outln!(
                "  {:>12}  invalid: {}",
                label,
                s.rule.as_deref().unwrap_or("")
            ),
        }
    }
    outln!();
    let fitting: Vec<&serve_cost::NodeSplit> = splits
        .iter()
        .filter(|s| s.decode.as_ref().is_some_and(|d| d.fits))
        .collect();
    let fastest = fitting.iter().min_by(|x, y| {
        let (dx, dy) = (x.decode.as_ref(), y.decode.as_ref());
        dx.map_or(f64::INFINITY, |d| d.step_s)
            .total_cmp(&dy.map_or(f64::INFINITY, |d| d.step_s))
    });
    let most = fitting.iter().max_by(|x, y| {
        let (dx, dy) = (x.decode.as_ref(), y.decode.as_ref());
        dx.map_or(0.0, |d| d.tokens_per_s_per_node)
            .total_cmp(&dy.map_or(0.0, |d| d.tokens_per_s_per_node))
    });
    match (fastest, most) {
        (Some(f), Some(m)) => outln!(
            "Lowest time per token: {} × TP{}; most tokens a second from the node: {} × TP{}. \
             Replicas multiply the node's throughput by the sequences they add (seqs/node); a \
             wider TP group cuts each token's wait (fewer weight bytes per GPU) but pays its \
             all-reduces and holds one batch where the replicas hold several. For the same \
             load on the node, give each setting its share: --batch N for 1 × TP{}, N/2 for 2 \
             replicas, and compare the rows.",
            f.replicas,
            f.tp,
            m.replicas,
            m.tp,
            gpn / a.pp.max(1)
        ),
        _ => outln!(
            "No way to fill the node fits this model and cache; try --weights fp8 or int4, a \
             shorter --context, a smaller --batch or a larger --gpus-per-node."
        ),
    }
    print_throughput_note(&cluster, Some(batch));
    Ok(ExitCode::SUCCESS)
}

fn run_tiny(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let catalogue = super::plan::catalogue(a.hardware.as_deref())?;
    let (tps, cluster) = tps_and_cluster(&a, &catalogue, &[1, 2, 4])?;
    let sampling = match a.temperature {
        Some(temperature) => Sampling::Seeded {
            seed: a.seed,
            temperature,
        },
        None => Sampling::Greedy,
    };
    // The shipped model has one KV head per head; grouped-query attention trains its own.
    let steps = match (a.train_steps, a.kv_heads) {
        (None, None) => None,
        (None, Some(_)) => Some(300),
        (Some(s), _) => Some(s),
    };
    let cfg = serve::tiny_serving_config(a.kv_heads, a.dtype);
    let cfg = TrainConfig {
        steps: steps.unwrap_or(cfg.steps).max(1),
        seed: a.seed,
        ..cfg
    };
    let job = TinyJob {
        args: &a,
        cfg,
        steps,
        tps,
        sampling,
        cluster,
    };
    if a.cuda {
        return run_cuda(&job);
    }
    let cluster = &job.cluster;
    let decoded = match a.dtype {
        DType::F64 => tiny_report::<f64>(&job),
        DType::F32 => tiny_report::<f32>(&job),
        d => anyhow::bail!("the tiny model serves in f32 or f64, not {d}; pass --dtype f32 or f64"),
    };
    let (report, cfg) = decoded?;
    let code = exit_code(report.passed());
    if a.json {
        outln!("{}", super::json_text("serve", &report)?);
        return Ok(code);
    }
    outln!(
        "tplab serve --tiny: {} layers, hidden {}, {} heads, {} KV heads, ffn {}, context {}, {} \
         ({}), {}",
        cfg.layers,
        cfg.hidden,
        cfg.heads,
        cfg.kv_heads.unwrap_or(cfg.heads),
        cfg.ffn,
        cfg.seq,
        cfg.dtype,
        match steps {
            None => format!(
                "the shipped model, trained {} steps on the guide",
                cfg.steps
            ),
            Some(0) => "seeded random weights".to_string(),
            Some(s) => format!("trained {s} steps on the guide"),
        },
        match sampling {
            Sampling::Greedy => "greedy".to_string(),
            Sampling::Seeded { seed, temperature } =>
                format!("sampled at temperature {temperature}, seed {seed}"),
        }
    );
    outln!("prompt: {:?}", report.prompt);
    outln!(
        "reference (unsharded, no cache): {:?}",
        report.reference.text
    );
    outln!();
    outln!(
        "  {:>3}  {:>13}  {:>15}  {:>13}  {:>14}  {:>10}  {:>9}  {:>6}  text",
        "TP",
        "CPU ms/token",
        "of which coll.",
        "model µs/tok",
        "of which coll.",
        "KV/GPU",
        "max err",
        "check"
    );
    for r in &report.runs {
        let modeled_coll = r
            .modeled
            .iter()
            .skip(1)
            .map(|m| m.collective_s)
            .sum::<f64>()
            / r.modeled.len().saturating_sub(1).max(1) as f64;
        outln!(
            "  {:>3}  {:>13.3}  {:>15.3}  {:>13.2}  {:>14.2}  {}",
            r.comparison.tp,
            r.measured_decode_s * 1e3,
            r.measured_collective_s * 1e3,
            r.modeled_decode_s() * 1e6,
            modeled_coll * 1e6,
            check_columns(&r.generation, &r.comparison)
        );
    }
    outln!();
    outln!(
        "CPU ms/token: measured per decode step on this machine's virtual GPUs (ranks side by \
         side on the thread pool). model µs/tok: the cost model for the same steps on {} (the \
         trace's events, roofline compute in {}, α–β collectives). Check: same text as the \
         reference and every step's logits within {:.1e} relative ({}).",
        cluster.gpu.name,
        cfg.dtype,
        report.tolerance.relative,
        report.tolerance.reason
    );
    Ok(code)
}

/// The TP sizes asked for (`default` without `--tp`) and a cluster of `--gpu` wide enough for
/// the largest.
/// A CSV field: quoted, with inner quotes doubled, where it holds a comma, quote or newline.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn tps_and_cluster(
    a: &ServeArgs,
    catalogue: &Catalogue,
    default: &[usize],
) -> anyhow::Result<(Vec<usize>, Cluster)> {
    if a.tps.contains(&0) {
        anyhow::bail!("--tp must be at least 1 (the GPUs of one tensor-parallel group; got 0)");
    }
    let tps = if a.tps.is_empty() {
        default.to_vec()
    } else {
        a.tps.clone()
    };
    let widest = tps.iter().copied().max().unwrap_or(1);
    let cluster = Cluster::covering(
        catalogue,
        &a.gpu,
        widest.saturating_mul(a.pp.max(1)),
        a.gpus_per_node,
        &defaults::inter_node(catalogue, &a.gpu, a.inter_node.as_deref())?,
    )?;
    Ok((tps, cluster))
}

/// Success when every check passed, failure otherwise.
fn exit_code(passed: bool) -> ExitCode {
    if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The last columns of a decode table's row: the KV cache one GPU holds at the end (rank 0's),
/// the largest logits error, the check and the generated text.
fn check_columns(generation: &serve::Generation, comparison: &serve::Comparison) -> String {
    let kv = generation
        .steps
        .last()
        .and_then(|s| s.kv_cache_bytes_per_rank.first().copied())
        .unwrap_or(0);
    format!(
        "{:>10}  {:>9.1e}  {:>6}  {:?}",
        human_bytes(kv),
        comparison.max_logits_error,
        if comparison.passed { "PASS" } else { "FAIL" },
        generation.text
    )
}

/// A `--tiny` decode, from the flags: the model (trained `steps` with `cfg`, see
/// [`tiny_model`]), the TP sizes, the sampling and the cluster the cost model prices.
struct TinyJob<'a> {
    args: &'a ServeArgs,
    cfg: TrainConfig,
    steps: Option<usize>,
    tps: Vec<usize>,
    sampling: Sampling,
    cluster: Cluster,
}

/// The tiny model in `T` decoded on virtual GPUs at each TP size: the report and the model's
/// configuration.
fn tiny_report<T: tplab_engine::dtype::Element>(
    job: &TinyJob,
) -> anyhow::Result<(serve::TinyReport, TrainConfig)> {
    let (a, m) = (job.args, tiny_model::<T>(&job.cfg, job.steps)?);
    let r = serve::tiny_report(
        &m,
        &a.prompt,
        a.tokens,
        &job.tps,
        job.sampling,
        &job.cluster,
    )?;
    Ok((r, m.cfg))
}

fn tiny_model<T: tplab_engine::dtype::Element>(
    cfg: &TrainConfig,
    steps: Option<usize>,
) -> anyhow::Result<TinyModel<T>> {
    Ok(match steps {
        None => TinyModel::shipped()?,
        Some(0) => TinyModel::random(cfg),
        Some(_) => TinyModel::train(cfg)?,
    })
}

/// `tplab serve --tiny --cuda`: the same decode on the GPU, f32, per TP.
fn run_cuda(job: &TinyJob) -> anyhow::Result<ExitCode> {
    let (a, cluster) = (job.args, &job.cluster);
    use tplab_kernels::decode::{decode, DecodeOptions};
    if !matches!(a.dtype, DType::F32 | DType::F64) {
        anyhow::bail!(
            "the tiny model serves in f32 or f64, not {}; --cuda decodes in f32 (pass --dtype f32)",
            a.dtype
        );
    }
    super::gpu::require_gpu(
        "--cuda needs an NVIDIA GPU with the CUDA driver, NVRTC and cuBLAS (see above; `tplab \
         gpu info` says the same); without --cuda, `tplab serve --tiny` decodes on virtual GPUs",
    )?;
    // The reference and the device start from the same weights: the model in f64, which the
    // GPU stores rounded to f32.
    let model = tiny_model::<f64>(&job.cfg, job.steps)?;
    let mode = if a.one_rank_per_device {
        tplab_kernels::DeviceMode::OneRankPerDevice
    } else {
        tplab_kernels::DeviceMode::SingleDevice(a.device)
    };
    let mut runs = Vec::new();
    for &tp in &job.tps {
        eprintln!("decoding on the GPU at TP={tp} ...");
        let opts = DecodeOptions {
            tp,
            tokens: a.tokens,
            sampling: job.sampling,
            mode,
        };
        runs.push(decode(&model, &a.prompt, &opts, cluster)?);
    }
    let code = exit_code(runs.iter().all(|r| r.passed()));
    if a.json {
        outln!("{}", super::json_text("serve", &runs)?);
        return Ok(code);
    }
    let Some(first) = runs.first() else {
        anyhow::bail!("give at least one TP size (e.g. --tp 1,2,4)");
    };
    outln!(
        "tplab serve --tiny --cuda: {} — {}; {} layers, hidden {}, {} heads, {} KV heads, f32",
        first.devices.join(", "),
        first.mode,
        model.cfg.layers,
        model.cfg.hidden,
        model.cfg.heads,
        model.cfg.kv_heads.unwrap_or(model.cfg.heads)
    );
    outln!("prompt: {:?}", a.prompt);
    outln!(
        "reference (unsharded, no cache, f64): {:?}",
        first.reference.text
    );
    outln!();
    outln!(
        "  {:>3}  {:>12}  {:>14}  {:>13}  {:>14}  {:>10}  {:>9}  {:>6}  text",
        "TP",
        "GPU ms/tok",
        "of which coll.",
        "model ms/tok",
        "of which coll.",
        "KV/GPU",
        "max err",
        "check"
    );
    let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len().max(1) as f64;
    for r in &runs {
        let dec = || r.times.iter().skip(1);
        outln!(
            "  {:>3}  {:>12.4}  {:>14.4}  {:>13.4}  {:>14.4}  {}",
            r.layout.tp,
            r.decode_ms(),
            mean(dec().map(|t| t.collective_ms).collect()),
            r.predicted_decode_ms(),
            mean(dec().map(|t| t.predicted_collective_ms).collect()),
            check_columns(&r.generation, &r.comparison)
        );
    }
    outln!();
    outln!(
        "GPU ms/tok: device time per decode step (CUDA events, prefill excluded; one device: the \
         ranks are streams sharing it). model ms/tok: the serving cost model for the same steps \
         on {}. Check: the same tokens as the reference and every step's logits within {:.1e} \
         ({}).",
        cluster.gpu.name,
        first.tolerance.relative,
        first.tolerance.reason
    );
    Ok(code)
}
