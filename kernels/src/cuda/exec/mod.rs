//! The executor: walks the engine's trace on CUDA and fills `Event::measured`.
//!
//! Every buffer is owned by one rank (its shards, saved activations, gradients, scratch) and
//! used only on that rank's stream, so cudarc's automatic cross-stream event tracking is turned
//! off and the only synchronisation is the collectives': the reducing stream waits for every
//! rank's "ready" event, and every rank waits for the collective's "done" event. Kernels and
//! cuBLAS receive raw device addresses from the rank's buffer arena.

use crate::error::GpuError;
use crate::launch::{self, Launch};
use crate::layout::{AttentionGemms, RowGemm};
use cudarc::cublas::{sys as cublas_sys, CudaBlas};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr,
    LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use ndarray::Array2;
use std::sync::Arc;
use tplab_engine::block::Op;
use tplab_engine::params::{LayerParams, Model, ParamKind};
use tplab_engine::plan::ShardPlan;
use tplab_engine::trace::{EventKind, Timing, Trace};
use tplab_engine::{Config, DType};

use super::compile::{kernels_for, Kernels};

mod ops;
mod rank;
mod timing;

use crate::run::{check_config, device_model, DeviceMode, GpuRun, RunOptions};
use rank::launch_on;

/// A storage type the GPU executor runs in.
pub trait GpuElem:
    DeviceRepr + ValidAsZeroBits + Copy + Default + Send + Sync + cudarc::nccl::NcclType + 'static
{
    const DTYPE: DType;
    const CUDA_TYPE: cublas_sys::cudaDataType;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
}

impl GpuElem for f32 {
    const DTYPE: DType = DType::F32;
    const CUDA_TYPE: cublas_sys::cudaDataType = cublas_sys::cudaDataType::CUDA_R_32F;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl GpuElem for half::bf16 {
    const DTYPE: DType = DType::Bf16;
    const CUDA_TYPE: cublas_sys::cudaDataType = cublas_sys::cudaDataType::CUDA_R_16BF;
    fn from_f64(v: f64) -> Self {
        half::bf16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        half::bf16::to_f64(self)
    }
}

/// A buffer id in a rank's arena.
type Buf = usize;

/// Per-layer buffers of one rank.
#[derive(Debug, Clone, Copy)]
struct LayerBufs {
    w: [Buf; 12],
    g: [Buf; 12],
    xn1: Buf,
    qkv: Buf,
    probs: Buf,
    ctx: Buf,
    attn_out: Buf,
    x1: Buf,
    xn2: Buf,
    fc1: Buf,
    act: Buf,
    mlp_out: Buf,
    // f32 statistics
    mean1: Buf,
    rstd1: Buf,
    mean2: Buf,
    rstd2: Buf,
}

/// Backward scratch of one rank.
#[derive(Debug, Clone, Copy, Default)]
struct Scratch {
    grad: [Buf; 2],
    d_act: Buf,
    d_fc1: Buf,
    dxn: Buf,
    dx1: Buf,
    dctx: Buf,
    dprobs: Buf,
    dqkv: Buf,
}

fn pidx(k: ParamKind) -> usize {
    ParamKind::ALL.iter().position(|p| *p == k).unwrap_or(0)
}

struct Rank<T: GpuElem> {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    blas: CudaBlas,
    k: Arc<Kernels>,
    bufs: Vec<CudaSlice<T>>,
    stats: Vec<CudaSlice<f32>>,
    /// `xs[l]` is the input of layer `l`; `xs[layers]` the output.
    xs: Vec<Buf>,
    layers: Vec<LayerBufs>,
    s: Scratch,
    dout: Buf,
}

/// A kernel argument.
#[derive(Debug, Clone, Copy)]
enum KArg {
    Ptr(u64),
    I32(i32),
    I64(i64),
    F32(f32),
}

/// Shapes of one scenario on one rank.
#[derive(Debug, Clone, Copy)]
struct Dims {
    t: usize,
    h: usize,
    hr: usize,
    fr: usize,
    batch: usize,
    seq: usize,
    hp: usize,
    d: usize,
}

impl Dims {
    fn new(cfg: &Config) -> Self {
        let tp = cfg.tp.max(1);
        Self {
            t: cfg.tokens(),
            h: cfg.hidden,
            hr: cfg.hidden / tp,
            fr: cfg.ffn / tp,
            batch: cfg.batch,
            seq: cfg.seq,
            hp: cfg.heads / tp,
            d: cfg.head_dim(),
        }
    }

    /// Device bytes one rank allocates (weights, gradients, saved activations, scratch).
    fn bytes_per_rank(&self, layers: usize, elem: usize) -> u64 {
        let (t, h, hr, fr) = (self.t, self.h, self.hr, self.fr);
        let sc = self.batch * self.hp * self.seq * self.seq;
        let params = h * 3 * hr + 3 * hr + hr * h + h + h * fr + fr + fr * h + h + 4 * h;
        let acts = 2 * t * h + t * 3 * hr + sc + t * hr + 2 * t * h + t * h + 2 * t * fr + t * h;
        let scratch = 2 * t * h + 2 * t * fr + 2 * t * h + t * hr + sc + t * 3 * hr;
        let elems = layers * (2 * params + acts) + scratch + 3 * t * h;
        (elems * elem + layers * 4 * t * 4) as u64
    }
}

/// Bytes of device memory a run of `cfg` needs per rank (checked before allocating).
pub fn bytes_per_rank(cfg: &Config) -> u64 {
    Dims::new(cfg).bytes_per_rank(cfg.layers, cfg.dtype.size_bytes())
}

enum Collective {
    /// One device: a sum kernel over the ranks' buffers, on its own stream.
    Single {
        stream: Arc<CudaStream>,
        /// Device arrays of the ranks' buffer addresses, per all-reduce site.
        tables: Vec<CudaSlice<u64>>,
        ready: Vec<CudaEvent>,
    },
    /// One rank per device: NCCL.
    Nccl { comms: Vec<cudarc::nccl::Comm> },
}

/// All-reduce sites: per layer the attention and MLP outputs, and the shared backward buffer.
fn site_attn(l: usize) -> usize {
    2 * l
}
fn site_mlp(l: usize) -> usize {
    2 * l + 1
}
fn site_dxn(layers: usize) -> usize {
    2 * layers
}

struct Exec<T: GpuElem> {
    cfg: Config,
    dims: Dims,
    ranks: Vec<Rank<T>>,
    coll: Collective,
    attn: AttentionGemms,
}

/// Maps a driver out-of-memory error to [`GpuError::OutOfMemory`].
fn oom(e: GpuError, what: &str, needed: u64) -> GpuError {
    match e {
        GpuError::Driver(d)
            if d.0 == cudarc::driver::sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY =>
        {
            GpuError::OutOfMemory {
                what: what.to_string(),
                needed: tplab_engine::config::human_bytes(needed),
            }
        }
        other => other,
    }
}

impl<T: GpuElem> Exec<T> {
    fn new(cfg: &Config, model: &Model<f64>, mode: DeviceMode) -> Result<Self, GpuError> {
        let dims = Dims::new(cfg);
        let tp = cfg.tp;
        let plan = ShardPlan::new(cfg);
        let shards = plan.shard_model(model);
        let ctxs: Vec<Arc<CudaContext>> = match mode {
            DeviceMode::SingleDevice(o) => {
                let c = CudaContext::new(o)?;
                vec![c; tp]
            }
            DeviceMode::OneRankPerDevice => {
                let n = CudaContext::device_count()? as usize;
                if n < tp {
                    return Err(GpuError::Unsupported(format!(
                        "one rank per device needs {tp} GPUs but {n} are visible; use a single \
                         device (ranks as streams) or a smaller TP"
                    )));
                }
                (0..tp).map(CudaContext::new).collect::<Result<_, _>>()?
            }
        };
        let needed = bytes_per_rank(cfg);
        for (i, c) in ctxs.iter().enumerate() {
            // SAFETY: every buffer is used on its own rank's stream only; collectives
            // synchronise explicitly with events (see the module docs).
            unsafe { c.disable_event_tracking() };
            let per_device = if matches!(mode, DeviceMode::SingleDevice(_)) {
                needed * tp as u64
            } else {
                needed
            };
            let (free, _) = c.mem_get_info()?;
            if per_device > free as u64 {
                return Err(GpuError::OutOfMemory {
                    what: format!(
                        "device {} has {} free",
                        c.ordinal(),
                        tplab_engine::config::human_bytes(free as u64)
                    ),
                    needed: tplab_engine::config::human_bytes(per_device),
                });
            }
            let _ = i;
        }
        let mut ranks = Vec::with_capacity(tp);
        for (r, ctx) in ctxs.iter().enumerate() {
            let stream = ctx.new_stream()?;
            let blas = CudaBlas::new(stream.clone())?;
            let k = kernels_for(ctx, T::DTYPE)?;
            let mut rk = Rank::<T>::empty(ctx.clone(), stream, blas, k);
            rk.setup(cfg, &dims, model, &shards[r])
                .map_err(|e| oom(e, "allocating a rank's buffers", needed))?;
            ranks.push(rk);
        }
        let coll = match mode {
            DeviceMode::SingleDevice(_) => {
                let ctx = &ctxs[0];
                let stream = ctx.new_stream()?;
                let mut tables = Vec::new();
                for l in 0..cfg.layers {
                    for pick in [0usize, 1] {
                        let addrs: Vec<u64> = ranks
                            .iter()
                            .map(|rk| {
                                let lb = rk.layers[l];
                                rk.addr(if pick == 0 { lb.attn_out } else { lb.mlp_out })
                            })
                            .collect();
                        tables.push(stream.clone_htod(&addrs)?);
                    }
                }
                let addrs: Vec<u64> = ranks.iter().map(|rk| rk.addr(rk.s.dxn)).collect();
                tables.push(stream.clone_htod(&addrs)?);
                let ready = (0..tp)
                    .map(|_| ctx.new_event(None))
                    .collect::<Result<_, _>>()?;
                stream.synchronize()?;
                Collective::Single {
                    stream,
                    tables,
                    ready,
                }
            }
            DeviceMode::OneRankPerDevice => {
                let streams = ranks.iter().map(|r| r.stream.clone()).collect();
                Collective::Nccl {
                    comms: cudarc::nccl::Comm::from_devices(streams)?,
                }
            }
        };
        for rk in &ranks {
            rk.stream.synchronize()?;
        }
        Ok(Self {
            cfg: cfg.clone(),
            dims,
            ranks,
            coll,
            attn: AttentionGemms::new(dims.seq, dims.hp, dims.d),
        })
    }
}

/// Runs `cfg`'s forward and backward pass on the GPU: `iters` timed iterations after a
/// warm-up, measured times into a copy of the trace, results copied back.
pub fn run(
    cfg: &Config,
    opts: &RunOptions,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<GpuRun, GpuError> {
    check_config(cfg)?;
    let model = device_model(cfg);
    crate::error::guard("GPU run", || match cfg.dtype {
        DType::Bf16 => run_typed::<half::bf16>(cfg, &model, opts, progress),
        _ => run_typed::<f32>(cfg, &model, opts, progress),
    })
}

fn run_typed<T: GpuElem>(
    cfg: &Config,
    model: &Model<f64>,
    opts: &RunOptions,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<GpuRun, GpuError> {
    super::require_runtime()?;
    progress("compiling kernels and uploading shards", 0.0);
    let mut ex = Exec::<T>::new(cfg, model, opts.mode)?;
    let mut trace = tplab_engine::trace::schedule(cfg);
    let evs = ex.new_events(&trace)?;
    let t0: Vec<CudaEvent> = ex
        .ranks
        .iter()
        .map(|r| r.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)))
        .collect::<Result<_, _>>()?;
    let iters = opts.iters.max(1);
    let mut times = Vec::with_capacity(iters);
    let mut grad_buf = 0;
    for it in 0..=iters {
        grad_buf = ex.iteration(&trace, &evs, &t0)?;
        ex.synchronize()?;
        if it > 0 {
            times.push(ex.read_times(&evs, &t0)?);
        }
        progress(
            if it == 0 {
                "warm-up done"
            } else {
                "timed iteration"
            },
            (it + 1) as f64 / (iters + 1) as f64,
        );
    }
    let mut order: Vec<usize> = (0..times.len()).collect();
    order.sort_by(|&a, &b| times[a].makespan_ms.total_cmp(&times[b].makespan_ms));
    let med = &times[order[order.len() / 2]];
    for (e, &(start, dur)) in trace.events.iter_mut().zip(&med.events) {
        e.measured = Some(Timing {
            start_s: start * 1e-3,
            duration_s: dur * 1e-3,
        });
    }
    let plan = ShardPlan::new(cfg);
    let (t, h) = (ex.dims.t, ex.dims.h);
    let mut output_per_rank = Vec::new();
    let mut grads = Vec::new();
    for (r, rk) in ex.ranks.iter().enumerate() {
        output_per_rank.push(rk.download(rk.xs[cfg.layers], [t, h])?);
        let mut per_layer = Vec::new();
        for lb in &rk.layers {
            let mut err = None;
            let lp = LayerParams::from_fn(|k| {
                match rk.download(lb.g[pidx(k)], plan.param(k).shard_shape(r)) {
                    Ok(a) => a,
                    Err(e) => {
                        err = Some(e);
                        Array2::zeros((0, 0))
                    }
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
            per_layer.push(lp);
        }
        grads.push(per_layer);
    }
    let grad_input = ex.ranks[0].download(grad_buf, [t, h])?;
    let devices: Vec<String> = {
        let mut d: Vec<String> = ex
            .ranks
            .iter()
            .map(|r| r.ctx.name().unwrap_or_else(|_| "unknown GPU".into()))
            .collect();
        if matches!(opts.mode, DeviceMode::SingleDevice(_)) {
            d.truncate(1);
        }
        d
    };
    let mode = match opts.mode {
        DeviceMode::SingleDevice(o) => {
            format!("single device (GPU {o}), {} ranks as CUDA streams", cfg.tp)
        }
        DeviceMode::OneRankPerDevice => {
            format!("{} devices, one rank each, NCCL all-reduce", cfg.tp)
        }
    };
    progress("done", 1.0);
    Ok(GpuRun {
        trace,
        output: output_per_rank[0].clone(),
        output_per_rank,
        grad_input,
        grads,
        iteration_ms: times.iter().map(|t| t.makespan_ms).collect(),
        devices,
        mode,
    })
}

/// Isolated timings for the benchmark: one stream on one device.
pub(crate) struct Micro<T: GpuElem> {
    rank: Rank<T>,
}

impl<T: GpuElem> Micro<T> {
    pub(crate) fn new(ordinal: usize) -> Result<Self, GpuError> {
        super::require_runtime()?;
        let ctx = CudaContext::new(ordinal)?;
        // SAFETY: one stream uses every buffer here.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream()?;
        let blas = CudaBlas::new(stream.clone())?;
        let k = kernels_for(&ctx, T::DTYPE)?;
        Ok(Self {
            rank: Rank::empty(ctx, stream, blas, k),
        })
    }

    pub(crate) fn device_name(&self) -> String {
        self.rank
            .ctx
            .name()
            .unwrap_or_else(|_| "unknown GPU".into())
    }

    /// Mean ms of `reps` runs of `f` after two warm-ups, timed with CUDA events.
    fn time(
        &self,
        reps: usize,
        mut f: impl FnMut(&Rank<T>) -> Result<(), GpuError>,
    ) -> Result<f64, GpuError> {
        let rk = &self.rank;
        f(rk)?;
        f(rk)?;
        let a = rk.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        let b = rk.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        a.record(&rk.stream)?;
        for _ in 0..reps.max(1) {
            f(rk)?;
        }
        b.record(&rk.stream)?;
        b.synchronize()?;
        Ok(f64::from(a.elapsed_ms(&b)?) / reps.max(1) as f64)
    }

    fn release(&mut self) -> Result<(), GpuError> {
        self.rank.stream.synchronize()?;
        self.rank.bufs.clear();
        Ok(())
    }

    /// Mean ms of the row-major product `[m, k]·[k, n]` (inputs seeded, not zeros).
    pub(crate) fn gemm_ms(
        &mut self,
        m: usize,
        n: usize,
        k: usize,
        reps: usize,
    ) -> Result<f64, GpuError> {
        let fill = |len: usize, s: f64| {
            Array2::from_shape_fn((1, len), |(_, i)| ((i as f64 * s).sin()) * 0.5)
        };
        let a = self.rank.upload(&fill(m * k, 0.37))?;
        let b = self.rank.upload(&fill(k * n, 0.91))?;
        let c = self.rank.alloc(m * n)?;
        let g = RowGemm::plain(m, n, k, false, false);
        let ms = self.time(reps, |rk| rk.gemm(&g, (a, 0), (b, 0), (c, 0)))?;
        self.release()?;
        Ok(ms)
    }

    /// Mean ms of the single-device all-reduce of `n` buffers of `len` elements, and of a
    /// device-to-device copy moving the same bytes (`n·len` elements read and written).
    pub(crate) fn all_reduce_vs_copy_ms(
        &mut self,
        n: usize,
        len: usize,
        reps: usize,
    ) -> Result<(f64, f64), GpuError> {
        let mut ids = Vec::new();
        for r in 0..n {
            let init = Array2::from_shape_fn((1, len), |(_, i)| ((i + r) as f64 * 0.1).cos());
            ids.push(self.rank.upload(&init)?);
        }
        let addrs: Vec<u64> = ids.iter().map(|&b| self.rank.addr(b)).collect();
        let table = self.rank.stream.clone_htod(&addrs)?;
        let tp = {
            let (p, _sync) = table.device_ptr(&self.rank.stream);
            p
        };
        let sum_ms = self.time(reps, |rk| {
            launch_on(
                &rk.stream,
                rk.k.get("sum_ranks")?,
                launch::all_reduce(len),
                &[KArg::Ptr(tp), KArg::I32(n as i32), KArg::I64(len as i64)],
            )
        })?;
        let src = self.rank.alloc(n * len)?;
        let dst = self.rank.alloc(n * len)?;
        let bytes = n * len * std::mem::size_of::<T>();
        let (ps, pd) = (self.rank.addr(src), self.rank.addr(dst));
        let copy_ms = self.time(reps, |rk| {
            // SAFETY: both buffers hold `bytes` bytes on this device.
            unsafe {
                cudarc::driver::result::memcpy_dtod_async(pd, ps, bytes, rk.stream.cu_stream())
            }?;
            Ok(())
        })?;
        self.release()?;
        drop(table);
        Ok((sum_ms, copy_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tplab_engine::Preset;

    #[test]
    fn all_reduce_sites_are_distinct() {
        let layers = 3;
        let mut ids: Vec<usize> = (0..layers)
            .flat_map(|l| [site_attn(l), site_mlp(l)])
            .collect();
        ids.push(site_dxn(layers));
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n);
        // Tables are built in this order: one per (layer, attn|mlp), then the backward buffer.
        assert_eq!(ids, (0..n).collect::<Vec<_>>());
    }

    #[test]
    fn memory_per_rank_shrinks_with_tp_and_counts_every_buffer() {
        let cfg = Preset::Gpt2Small.config();
        let at = |tp| bytes_per_rank(&Config { tp, ..cfg.clone() });
        assert!(at(1) > at(2) && at(2) > at(4));
        // At least the shards (weights + gradients) and the replicated activations.
        let d = Dims::new(&Config {
            tp: 4,
            ..cfg.clone()
        });
        let params = tplab_engine::plan::ShardPlan::new(&Config {
            tp: 4,
            ..cfg.clone()
        })
        .elems_per_rank_per_layer(0);
        let floor = (2 * params + 6 * d.t * d.h) * 4;
        assert!(at(4) >= floor as u64, "{} < {floor}", at(4));
    }

    #[test]
    fn config_checks_name_the_fix() {
        let cfg = Config {
            dtype: DType::F64,
            ..Preset::Tiny.config()
        };
        let e = check_config(&cfg).unwrap_err().to_string();
        assert!(e.contains("--dtype f32"), "{e}");
        let bad_tp = Config {
            tp: 3,
            dtype: DType::F32,
            ..Preset::Tiny.config()
        };
        assert!(matches!(check_config(&bad_tp), Err(GpuError::Config(_))));
        let sp = Config {
            sequence_parallel: true,
            dtype: DType::F32,
            ..Preset::Tiny.config()
        };
        let e = check_config(&sp).unwrap_err().to_string();
        assert!(e.contains("CPU engine only"), "{e}");
    }
}
