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
use std::process::ExitCode;
use tplab_engine::capacity::hardware::{Catalogue, Cluster};
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
    /// GPU from the catalogue (h100, a100, h200, b200, …).
    #[arg(long, default_value = "h100")]
    pub gpu: String,
    /// Comma-separated TP sizes (default: 1,2,4,8,16 for a model, 1,2,4 with --tiny).
    #[arg(long = "tp", value_delimiter = ',')]
    pub tps: Vec<usize>,
    /// Pipeline stages: each TP group holds layers/PP layers, a token passes the stages in turn
    /// (TP × PP GPUs per row; the layers must split evenly).
    #[arg(long, default_value_t = 1)]
    pub pp: usize,
    /// Concurrent sequences decoded together; a comma-separated list sweeps them (1 to
    /// 1,000,000).
    #[arg(long, value_delimiter = ',', default_value = "1", value_parser = parse_batch)]
    pub batch: Vec<usize>,
    /// Tokens each sequence holds in the KV cache while decoding; a comma-separated list
    /// sweeps them (1 to 100,000,000; 1e6 notation accepted).
    #[arg(long, value_delimiter = ',', default_value = "4096", value_parser = parse_context)]
    pub context: Vec<usize>,
    /// Print the sweep (every TP × batch × context point) as CSV, one row a point; points
    /// that break a rule are rows too, with the rule in the last column.
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Prompt tokens for the time to first token.
    #[arg(long, default_value_t = 1024)]
    pub prompt_tokens: usize,
    #[arg(long, default_value_t = 8)]
    pub gpus_per_node: usize,
    #[arg(long, default_value = "ib400")]
    pub inter_node: String,
    /// The TP all-reduces: nccl (NCCL's tuner, the calibrated predictor of `tplab collective`)
    /// or custom (vLLM's / TensorRT-LLM's one-shot and two-shot NVLink kernels, up to 8 MiB and
    /// 8 GPUs in one node; NCCL beyond).
    #[arg(long = "all-reduce", default_value = "nccl")]
    pub all_reduce: AllReduceImpl,
    /// Kernel launches: graphs (the step replayed as a CUDA graph: vLLM, SGLang, TensorRT-LLM)
    /// or eager (FasterTransformer, no graph capture).
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
    #[arg(long)]
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

/// One point of a sweep that breaks a rule: its setting and the rule.
#[derive(serde::Serialize)]
struct Invalid {
    tp: usize,
    pp: usize,
    batch: usize,
    context: usize,
    rule: String,
}

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
    if a.prompt_tokens == 0 {
        anyhow::bail!("--prompt-tokens must be at least 1 (got 0)");
    }
    let model = ModelSpec::from_preset_or_path(&a.model)?;
    let (tps, cluster) = tps_and_cluster(&a, &[1, 2, 4, 8, 16])?;
    // A format the GPU cannot run is an error with its rule, not a skipped point per TP.
    serve_cost::check_formats(&cluster.gpu, a.weights, a.kv_cache)?;
    // Every point of the sweep: the ones that break a rule are reported and skipped.
    let mut points = Vec::new();
    let mut invalid = Vec::new();
    for &context in &a.context {
        for &batch in &a.batch {
            for &tp in &tps {
                let setup = ServeSetup {
                    tp,
                    pp: a.pp,
                    batch,
                    context,
                    all_reduce: a.all_reduce,
                    launch: a.launch,
                    weights: a.weights,
                    kv_cache: a.kv_cache,
                };
                let prefill = serve_cost::prefill_time(
                    &model,
                    &cluster,
                    ServeSetup {
                        context: a.prompt_tokens,
                        ..setup
                    },
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
        outln!(
            "schema,tplab_version,model,gpu,tp,pp,batch,context,ms_per_token,tokens_per_s,\
             tokens_per_s_per_gpu,ttft_ms,memory_per_gpu_bytes,fits,crosses_nodes,invalid"
        );
        let name = csv_field(&model.name);
        for (d, p) in &points {
            let gpus = (d.setup.tp * d.setup.pp.max(1)) as f64;
            outln!(
                "{},{},{name},{},{},{},{},{},{:.6},{:.3},{:.3},{:.6},{},{},{},",
                super::JSON_SCHEMA,
                env!("CARGO_PKG_VERSION"),
                cluster.gpu.name,
                d.setup.tp,
                d.setup.pp,
                d.setup.batch,
                d.setup.context,
                d.step_s * 1e3,
                d.tokens_per_s,
                d.tokens_per_s / gpus,
                p.total_s * 1e3,
                d.memory_per_gpu_bytes,
                d.fits,
                d.spans_nodes
            );
        }
        for x in &invalid {
            outln!(
                "{},{},{name},{},{},{},{},{},,,,,,,,{}",
                super::JSON_SCHEMA,
                env!("CARGO_PKG_VERSION"),
                cluster.gpu.name,
                x.tp,
                x.pp,
                x.batch,
                x.context,
                csv_field(&x.rule)
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    for x in &invalid {
        eprintln!(
            "skipped TP {} (batch {}, context {}): {}",
            x.tp, x.batch, x.context, x.rule
        );
    }
    if a.batch.len() * a.context.len() > 1 {
        if a.json {
            let v = serde_json::json!({
                "model": model,
                "gpu": cluster.gpu.name,
                "points": points.iter().map(|(d, p)| serde_json::json!({
                    "decode": d, "prefill": p})).collect::<Vec<_>>(),
                "invalid": invalid,
            });
            outln!("{}", super::json_text("serve", &v)?);
            return Ok(ExitCode::SUCCESS);
        }
        outln!(
            "tplab serve: {} on {}; {} points ({} skipped), ms per output token:",
            model.summary(),
            cluster.gpu.name,
            points.len(),
            invalid.len()
        );
        outln!(
            "  {:>3}  {:>7}  {:>9}  {:>10}  {:>11}  {:>11}  {:>4}",
            "TP",
            "batch",
            "context",
            "ms/token",
            "tokens/s",
            "memory/GPU",
            "fits"
        );
        for (d, _) in &points {
            outln!(
                "  {:>3}  {:>7}  {:>9}  {:>10.2}  {:>11.1}  {:>11}  {:>4}",
                d.setup.tp,
                d.setup.batch,
                d.setup.context,
                d.step_s * 1e3,
                d.tokens_per_s,
                human_bytes(d.memory_per_gpu_bytes),
                if d.fits { "yes" } else { "no" }
            );
        }
        return Ok(if points.is_empty() {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        });
    }
    let batch = a.batch.first().copied().unwrap_or(1);
    let context = a.context.first().copied().unwrap_or(4096);
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
    let base = ServeSetup {
        tp: 1,
        pp: a.pp,
        batch,
        context,
        all_reduce: a.all_reduce,
        launch: a.launch,
        weights: a.weights,
        kv_cache: a.kv_cache,
    };
    let sweep = serve_cost::sweep_tp(&model, &cluster, &tps, base)?;
    let prefill = tps
        .iter()
        .map(|&tp| {
            serve_cost::prefill_time(
                &model,
                &cluster,
                ServeSetup {
                    tp,
                    pp: a.pp,
                    context: a.prompt_tokens,
                    ..base
                },
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    if a.json {
        let v = serde_json::json!({"model": model, "sweep": sweep, "prefill": prefill,
                                   "invalid": invalid});
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
        match a.launch {
            Launch::Graphs => "CUDA-graph",
            Launch::Eager => "eager",
        }
    );
    outln!();
    outln!(
        "  {:>3}  {:>10}  {:>9}  {:>9}  {:>9}  {:>11}  {:>9}{}  {:>17}  {:>10}  {:>9}  {:>11}  {:>10}  {}",
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
        "TTFT ms",
        "memory/GPU",
        "fits",
        "link"
    );
    for (r, p) in sweep.rows.iter().zip(&prefill) {
        outln!(
            "  {:>3}  {:>10.2}  {:>9.2}  {:>9.2}  {:>9.2}  {:>11.2}  {:>9.1}{}  {:>17}  {:>10.1}  {:>9.1}  {:>11}  {:>10}  {}",
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
         bandwidth a streaming kernel reaches on this GPU), the fixed costs (kernel launches per \
         layer, sampling per step), and the {} all-reduces of {} values per step ({} per layer: \
         attention's and the MLP's g) plus the embedding's all-reduce and the logits' all-gather; \
         \"one, µs\" is one of those all-reduces and how it runs.",
        2 * model.layers,
        batch * model.hidden,
        2
    );
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
         --test serve_calibration -- --nocapture`)."
    );
    Ok(ExitCode::SUCCESS)
}

fn run_tiny(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let (tps, cluster) = tps_and_cluster(&a, &[1, 2, 4])?;
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

fn tps_and_cluster(a: &ServeArgs, default: &[usize]) -> anyhow::Result<(Vec<usize>, Cluster)> {
    let tps = if a.tps.is_empty() {
        default.to_vec()
    } else {
        a.tps.clone()
    };
    let widest = tps.iter().copied().max().unwrap_or(1);
    let cluster = Cluster::covering(
        &Catalogue::default(),
        &a.gpu,
        widest.saturating_mul(a.pp.max(1)),
        a.gpus_per_node,
        &a.inter_node,
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
