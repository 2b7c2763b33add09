//! What a GPU run takes and gives, independent of whether CUDA is compiled in.

use crate::error::GpuError;
use ndarray::Array2;
use tplab_engine::params::{LayerParams, Model, ParamKind};
use tplab_engine::trace::Trace;
use tplab_engine::{config::Config, dtype::DType};

/// Rounds `v` to the GPU storage type of `dtype` and back (what the device actually holds).
pub fn round_to(dtype: DType, v: f64) -> f64 {
    match dtype {
        DType::Bf16 => half::bf16::from_f64(v).to_f64(),
        DType::F32 => f64::from(v as f32),
        DType::F16 => half::f16::from_f64(v).to_f64(),
        DType::F64 => v,
    }
}

/// Where the ranks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceMode {
    /// All ranks as streams on one device (the ordinal).
    SingleDevice(usize),
    /// Rank `r` on device `r`, all-reduce by NCCL; needs `tp` devices.
    OneRankPerDevice,
}

/// Settings of a GPU run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOptions {
    /// Timed iterations after one warm-up; the measured times come from the iteration with
    /// the median total time.
    pub iters: usize,
    pub mode: DeviceMode,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            iters: 5,
            mode: DeviceMode::SingleDevice(0),
        }
    }
}

/// What a GPU run gives back (values widened to f64).
#[derive(Debug, Clone)]
pub struct GpuRun {
    /// The engine's trace with `measured` filled on every event.
    pub trace: Trace,
    /// Block output `y` as rank 0 holds it, `[t, h]` (its token rows with sequence parallelism).
    pub output: Array2<f64>,
    /// Every rank's copy of the output (replicated after the last all-reduce; with sequence
    /// parallelism each rank's token rows, `Config::token_rows`).
    pub output_per_rank: Vec<Array2<f64>>,
    /// `dL/dx` of the input as rank 0 holds it (its token rows with sequence parallelism).
    pub grad_input: Array2<f64>,
    /// Every rank's copy of `dL/dx` (with sequence parallelism each rank's token rows).
    pub grad_input_per_rank: Vec<Array2<f64>>,
    /// Gradients of each rank's shards: `[rank][layer]`.
    pub grads: Vec<Vec<LayerParams<f64>>>,
    /// Wall time of each timed iteration on the device, ms.
    pub iteration_ms: Vec<f64>,
    /// Device names, one per device used.
    pub devices: Vec<String>,
    /// `single device, N streams` or `N devices, NCCL`.
    pub mode: String,
}

/// What a GPU run of a learner's plan gives back.
#[derive(Debug, Clone)]
pub struct PlanGpuRun {
    /// The plan's program trace with `measured` filled on every event.
    pub trace: Trace,
    /// Every rank's results, as the program holds them (widened to f64).
    pub run: tplab_engine::block::exec::design::ProgramRun<f64>,
    /// Tensor by tensor against the CPU reference of the same (rounded) model.
    pub checks: Vec<tplab_engine::block::verify::Check>,
    pub tolerance: tplab_engine::block::verify::Tolerance,
    pub iteration_ms: Vec<f64>,
    pub devices: Vec<String>,
    pub mode: String,
}

/// Validates `cfg` for the GPU executor.
pub fn check_config(cfg: &Config) -> Result<(), GpuError> {
    cfg.validate_shapes()?;
    if !crate::launch::gpu_dtype_supported(cfg.dtype) {
        return Err(GpuError::Unsupported(format!(
            "the GPU executor runs f32 or bf16, not {}; pass --dtype f32 or --dtype bf16",
            cfg.dtype
        )));
    }
    let max = i32::MAX as usize;
    if cfg.tokens() > max || cfg.seq * cfg.seq > max || cfg.hidden > max || cfg.ffn > max {
        return Err(GpuError::Unsupported(
            "sizes beyond 32-bit kernel indices; reduce seq, batch or widths".into(),
        ));
    }
    Ok(())
}

/// The model the GPU run uses: the engine's seeded model, rounded to the storage dtype (so the
/// CPU reference can start from exactly what the device holds).
pub fn device_model(cfg: &Config) -> Model<f64> {
    let mut m = Model::<f64>::random(cfg);
    let r = |a: &mut Array2<f64>| a.mapv_inplace(|v| round_to(cfg.dtype, v));
    r(&mut m.input);
    r(&mut m.grad_output);
    for l in &mut m.layers {
        for k in ParamKind::ALL {
            r(l.get_mut(k));
        }
    }
    m
}

/// Runs `cfg`'s forward and backward pass on the GPU (see [`crate::cuda::exec`]): `opts.iters`
/// timed iterations after a warm-up; `progress(stage, fraction)` is called along the way.
pub fn run(
    cfg: &Config,
    opts: &RunOptions,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<GpuRun, GpuError> {
    #[cfg(feature = "cuda")]
    {
        crate::cuda::exec::run(cfg, opts, progress)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (opts, progress);
        check_config(cfg)?;
        Err(GpuError::NotCompiled)
    }
}

/// Runs a learner's sharding plan (any valid one; see [`crate::program`]) forward and backward
/// on the GPU and compares every tensor with the CPU reference. A plan the rules refuse, or
/// one the GPU cannot lay out evenly, is refused before any device is touched.
pub fn run_plan(
    cfg: &Config,
    plan: &tplab_engine::block::design::ShardingPlan,
    opts: &RunOptions,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<PlanGpuRun, GpuError> {
    #[cfg(feature = "cuda")]
    {
        crate::cuda::exec::run_plan(cfg, plan, opts, progress)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (opts, progress);
        check_config(cfg)?;
        let program = tplab_engine::block::design::program::propagate(cfg, plan);
        crate::program::lower(cfg, &program)?;
        Err(GpuError::NotCompiled)
    }
}
