//! The executor: walks the engine's trace on CUDA and fills `Event::measured`.
//!
//! Every buffer is owned by one rank (its shards, saved activations, gradients, scratch) and
//! used only on that rank's stream, so cudarc's automatic cross-stream event tracking is turned
//! off and the only synchronisation is the collectives': the reducing stream waits for every
//! rank's "ready" event, and every rank waits for the collective's "done" event. Kernels and
//! cuBLAS receive raw device addresses from the rank's buffer arena.

use crate::buffers::{BufId, CollPlan, Pack, RankLayout, SP_VECTORS};
use crate::error::GpuError;
use crate::launch::{self, Launch};
use crate::layout::{AttentionGemms, AttnProduct, RowGemm};
use cudarc::cublas::{sys as cublas_sys, CudaBlas};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr,
    LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use ndarray::Array2;
use std::collections::HashMap;
use std::sync::Arc;
use tplab_engine::block::plan::ShardPlan;
use tplab_engine::block::Op;
use tplab_engine::collectives::CollectiveKind;
use tplab_engine::params::{LayerParams, Model, ParamKind};
use tplab_engine::trace::{EventKind, Timing, Trace};
use tplab_engine::{config::Config, dtype::DType};

use super::compile::{kernels_for, Kernels};

mod decode;
mod ops;
mod program;
mod rank;
mod timing;
mod vocab;

pub(crate) use decode::decode;
pub use program::run_plan;
pub(crate) use vocab::vocab_run;

use crate::run::{check_config, device_model, DeviceMode, GpuRun, RunOptions};
use rank::{launch_on, Embed};

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

struct Rank<T: GpuElem> {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    blas: CudaBlas,
    k: Arc<Kernels>,
    bufs: Vec<CudaSlice<T>>,
    stats: Vec<CudaSlice<f32>>,
    /// Where each buffer of the layout lives in `bufs`.
    map: HashMap<BufId, Buf>,
    /// Per layer: LayerNorm 1 mean and rstd, LayerNorm 2 mean and rstd (`stats` ids).
    ln_stats: Vec<[Buf; 4]>,
}

/// A kernel argument.
#[derive(Debug, Clone, Copy)]
enum KArg {
    Ptr(u64),
    I32(i32),
    I64(i64),
    F32(f32),
}

/// Bytes of device memory a run of `cfg` needs per rank (checked before allocating).
pub fn bytes_per_rank(cfg: &Config) -> u64 {
    RankLayout::new(cfg).bytes(cfg.dtype.size_bytes())
}

/// The device side of one collective event of the trace.
struct EventColl {
    plan: CollPlan,
    /// The ranks of the group (every rank, or the copies of one KV head).
    ranks: Vec<usize>,
    /// One device: device arrays of the group's send and receive addresses.
    tables: Option<(CudaSlice<u64>, CudaSlice<u64>)>,
    /// Several devices: the group's communicators (`None`: the full group's).
    comms: Option<Vec<cudarc::nccl::Comm>>,
}

enum Collective {
    /// One device: the sum, gather and scatter kernels over the ranks' buffers, on their own
    /// stream.
    Single {
        stream: Arc<CudaStream>,
        ready: Vec<CudaEvent>,
    },
    /// One rank per device: NCCL.
    Nccl { comms: Vec<cudarc::nccl::Comm> },
}

struct Exec<T: GpuElem> {
    lay: RankLayout,
    ranks: Vec<Rank<T>>,
    coll: Collective,
    attn: AttentionGemms,
    /// Per trace event: its collective's device side (`None` for compute events).
    events: Vec<Option<EventColl>>,
}

impl Collective {
    /// The collectives of `ranks` in `mode`: a reducing stream with one "ready" event per rank
    /// on the single device, or the ranks' NCCL communicators.
    fn open<T: GpuElem>(
        mode: DeviceMode,
        ctxs: &[Arc<CudaContext>],
        ranks: &[Rank<T>],
    ) -> Result<Self, GpuError> {
        Ok(match mode {
            DeviceMode::SingleDevice(_) => {
                let ctx = &ctxs[0];
                Collective::Single {
                    stream: ctx.new_stream()?,
                    ready: (0..ranks.len())
                        .map(|_| ctx.new_event(None))
                        .collect::<Result<_, _>>()?,
                }
            }
            DeviceMode::OneRankPerDevice => {
                let streams = ranks.iter().map(|r| r.stream.clone()).collect();
                Collective::Nccl {
                    comms: cudarc::nccl::Comm::from_devices(streams)?,
                }
            }
        })
    }
}

/// Puts the times of the median iteration (by makespan) onto the trace's events.
fn measured_into(trace: &mut Trace, times: &[timing::IterTimes]) {
    let mut order: Vec<usize> = (0..times.len()).collect();
    order.sort_by(|&a, &b| times[a].makespan_ms.total_cmp(&times[b].makespan_ms));
    let Some(med) = order.get(order.len() / 2).map(|&i| &times[i]) else {
        return;
    };
    for (e, &(start, dur)) in trace.events.iter_mut().zip(&med.events) {
        e.measured = Some(Timing {
            start_s: start * 1e-3,
            duration_s: dur * 1e-3,
        });
    }
}

/// The devices' names (one on a single device) and the mode in words.
fn devices_and_mode<T: GpuElem>(ranks: &[Rank<T>], mode: DeviceMode) -> (Vec<String>, String) {
    let mut devices: Vec<String> = ranks
        .iter()
        .map(|r| r.ctx.name().unwrap_or_else(|_| "unknown GPU".into()))
        .collect();
    let tp = ranks.len();
    let words = match mode {
        DeviceMode::SingleDevice(o) => {
            devices.truncate(1);
            format!("single device (GPU {o}), {tp} ranks as CUDA streams")
        }
        DeviceMode::OneRankPerDevice => format!("{tp} devices, one rank each, NCCL collectives"),
    };
    (devices, words)
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

/// The contexts of `tp` ranks: one device for all, or device `r` for rank `r`.
pub(crate) fn rank_contexts(
    mode: DeviceMode,
    tp: usize,
) -> Result<Vec<Arc<CudaContext>>, GpuError> {
    Ok(match mode {
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
    })
}

/// Checks that every device has room for `needed` bytes per rank.
pub(crate) fn check_free(
    ctxs: &[Arc<CudaContext>],
    mode: DeviceMode,
    needed: u64,
) -> Result<(), GpuError> {
    let tp = ctxs.len() as u64;
    for c in ctxs {
        // SAFETY: every buffer is used on its own rank's stream only; collectives
        // synchronise explicitly with events (see the module docs).
        unsafe { c.disable_event_tracking() };
        let per_device = if matches!(mode, DeviceMode::SingleDevice(_)) {
            needed * tp
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
    }
    Ok(())
}

impl<T: GpuElem> Exec<T> {
    fn new(
        cfg: &Config,
        model: &Model<f64>,
        mode: DeviceMode,
        trace: &Trace,
    ) -> Result<Self, GpuError> {
        let lay = RankLayout::new(cfg);
        let tp = cfg.tp;
        let plan = ShardPlan::new(cfg);
        let shards = plan.shard_model(model);
        let ctxs = rank_contexts(mode, tp)?;
        let needed = bytes_per_rank(cfg);
        check_free(&ctxs, mode, needed)?;
        let mut ranks = Vec::with_capacity(tp);
        for (r, ctx) in ctxs.iter().enumerate() {
            let mut rk = Rank::<T>::open(ctx)?;
            let rows = cfg.token_rows(r);
            let input = model.input.slice(ndarray::s![rows.clone(), ..]).to_owned();
            let dout = model.grad_output.slice(ndarray::s![rows, ..]).to_owned();
            rk.setup(&lay, &input, &dout, &shards[r])
                .map_err(|e| oom(e, "allocating a rank's buffers", needed))?;
            ranks.push(rk);
        }
        let coll = Collective::open(mode, &ctxs, &ranks)?;
        // The collectives of the program, resolved once: buffers, address tables, groups.
        let mut events = Vec::with_capacity(trace.events.len());
        for e in &trace.events {
            if !e.is_collective() {
                events.push(None);
                continue;
            }
            let plan = lay.collective(e.op, e.layer).ok_or_else(|| {
                GpuError::Unsupported(format!(
                    "the GPU executor does not know the collective `{}` ({})",
                    e.op,
                    e.op.label()
                ))
            })?;
            let group = e.ranks.clone();
            let tables = match &coll {
                Collective::Single { stream, .. } if plan.kind != CollectiveKind::Identity => {
                    let addrs = |b: BufId| -> Vec<u64> {
                        group.iter().map(|&r| ranks[r].addr_of(b)).collect()
                    };
                    Some((
                        stream.clone_htod(&addrs(plan.send))?,
                        stream.clone_htod(&addrs(plan.recv))?,
                    ))
                }
                _ => None,
            };
            let comms = match &coll {
                Collective::Nccl { .. }
                    if group.len() < tp && plan.kind != CollectiveKind::Identity =>
                {
                    let streams = group.iter().map(|&r| ranks[r].stream.clone()).collect();
                    Some(cudarc::nccl::Comm::from_devices(streams)?)
                }
                _ => None,
            };
            events.push(Some(EventColl {
                plan,
                ranks: group,
                tables,
                comms,
            }));
        }
        if let Collective::Single { stream, .. } = &coll {
            stream.synchronize()?;
        }
        for rk in &ranks {
            rk.stream.synchronize()?;
        }
        Ok(Self {
            attn: AttentionGemms::new(lay.seq, lay.hp, lay.kvp, lay.d),
            lay,
            ranks,
            coll,
            events,
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
    let mut trace = tplab_engine::block::program::schedule(cfg)?;
    let mut ex = Exec::<T>::new(cfg, model, opts.mode, &trace)?;
    let evs = ex.new_events(&trace)?;
    let t0: Vec<CudaEvent> = ex
        .ranks
        .iter()
        .map(|r| r.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)))
        .collect::<Result<_, _>>()?;
    let iters = opts.iters.max(1);
    let mut times = Vec::with_capacity(iters);
    for it in 0..=iters {
        ex.iteration(&trace, &evs, &t0)?;
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
    measured_into(&mut trace, &times);
    let lay = &ex.lay;
    let mut output_per_rank = Vec::new();
    let mut grad_input_per_rank = Vec::new();
    let mut grads = Vec::new();
    for rk in &ex.ranks {
        let out = BufId::X(cfg.layers);
        output_per_rank.push(rk.download(rk.buf(out), lay.shape(out))?);
        let dx = lay.dx(0);
        grad_input_per_rank.push(rk.download(rk.buf(dx), lay.shape(dx))?);
        let mut per_layer = Vec::new();
        for l in 0..cfg.layers {
            per_layer.push(LayerParams::try_from_fn(|k| {
                let g = BufId::G(l, k);
                rk.download(rk.buf(g), lay.shape(g))
            })?);
        }
        grads.push(per_layer);
    }
    let (devices, mode) = devices_and_mode(&ex.ranks, opts.mode);
    progress("done", 1.0);
    Ok(GpuRun {
        trace,
        output: output_per_rank[0].clone(),
        output_per_rank,
        grad_input: grad_input_per_rank[0].clone(),
        grad_input_per_rank,
        grads,
        iteration_ms: times.iter().map(|t| t.makespan_ms).collect(),
        devices,
        mode,
    })
}

/// One forward and backward step of `cfg` on one device, `reps` times back to back as plain
/// launches and as replays of a CUDA graph captured from the same walk (every stream joins the
/// capture through the events the walk already records), mean ms each.
pub(crate) fn graph_timing<T: GpuElem>(
    cfg: &Config,
    ordinal: usize,
    reps: usize,
) -> Result<crate::bench::GraphTiming, GpuError> {
    use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
    check_config(cfg)?;
    let model = device_model(cfg);
    crate::error::guard("CUDA graph capture", || {
        super::require_runtime()?;
        let trace = tplab_engine::block::program::schedule(cfg)?;
        let mut ex = Exec::<T>::new(cfg, &model, DeviceMode::SingleDevice(ordinal), &trace)?;
        let evs = ex.new_events(&trace)?;
        let ctx = ex.ranks[0].ctx.clone();
        let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
        let t0: Vec<CudaEvent> = ex
            .ranks
            .iter()
            .map(|_| ctx.new_event(flags))
            .collect::<Result<_, _>>()?;
        let origin = ex.ranks[0].stream.clone();
        let joins: Vec<CudaEvent> = (0..ex.ranks.len() + 1)
            .map(|_| ctx.new_event(None))
            .collect::<Result<_, _>>()?;
        let (a, b) = (ctx.new_event(flags)?, ctx.new_event(flags)?);
        let reps = reps.max(1);
        ex.iteration(&trace, &evs, &t0)?;
        ex.join(&origin, &joins)?;
        ex.synchronize()?;
        a.record(&origin)?;
        for _ in 0..reps {
            ex.iteration(&trace, &evs, &t0)?;
            ex.join(&origin, &joins)?;
        }
        b.record(&origin)?;
        b.synchronize()?;
        let plain_ms = f64::from(a.elapsed_ms(&b)?) / reps as f64;
        origin.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)?;
        let walked = ex
            .iteration(&trace, &evs, &t0)
            .and_then(|_| ex.join(&origin, &joins));
        // The capture must end whatever happened inside it.
        let graph = origin.end_capture(CUgraphInstantiate_flags(0));
        walked?;
        let graph = graph?.ok_or_else(|| {
            GpuError::Unsupported("the stream capture produced an empty graph".into())
        })?;
        graph.launch()?;
        origin.synchronize()?;
        a.record(&origin)?;
        for _ in 0..reps {
            graph.launch()?;
        }
        b.record(&origin)?;
        b.synchronize()?;
        let graph_ms = f64::from(a.elapsed_ms(&b)?) / reps as f64;
        Ok(crate::bench::GraphTiming {
            reps,
            plain_ms,
            graph_ms,
        })
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
        Ok(Self {
            rank: Rank::open(&ctx)?,
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
    use tplab_engine::config::Preset;

    /// The all-reduce sites of the program are distinct buffers: per layer the attention's and
    /// the MLP's `g`, and the backward's input-gradient buffer shared by the layers' `f`s.
    #[test]
    fn all_reduce_sites_are_distinct() {
        let cfg = Config {
            layers: 3,
            tp: 2,
            ..Preset::Tiny.config()
        };
        let lay = RankLayout::new(&cfg);
        let trace =
            tplab_engine::block::program::schedule(&cfg).expect("Megatron's plan propagates");
        let mut forward: Vec<BufId> = Vec::new();
        let mut backward: Vec<BufId> = Vec::new();
        for e in trace.events.iter().filter(|e| e.is_collective()) {
            let c = lay.collective(e.op, e.layer).unwrap();
            if c.kind == CollectiveKind::AllReduce {
                match e.pass {
                    tplab_engine::block::op::Pass::Forward => forward.push(c.send),
                    tplab_engine::block::op::Pass::Backward => backward.push(c.send),
                }
            }
        }
        let n = forward.len();
        assert_eq!(n, 2 * cfg.layers);
        forward.sort_unstable();
        forward.dedup();
        assert_eq!(forward.len(), n);
        assert_eq!(backward.len(), 2 * cfg.layers);
        assert!(backward.iter().all(|b| *b == BufId::DH));
    }

    #[test]
    fn memory_per_rank_shrinks_with_tp_and_counts_every_buffer() {
        let cfg = Preset::Gpt2Small.config();
        let at = |tp| bytes_per_rank(&Config { tp, ..cfg.clone() });
        assert!(at(1) > at(2) && at(2) > at(4));
        // At least the shards (weights + gradients) and the replicated activations.
        let lay = RankLayout::new(&Config {
            tp: 4,
            ..cfg.clone()
        });
        let params = tplab_engine::block::plan::ShardPlan::new(&Config {
            tp: 4,
            ..cfg.clone()
        })
        .elems_per_rank_per_layer(0);
        let floor = (2 * params + 6 * lay.t * lay.h) * 4;
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
        // Sequence parallelism and grouped-query attention run on the GPU too; a sequence the
        // ranks cannot split is refused with the engine's rule.
        let sp = Config {
            sequence_parallel: true,
            dtype: DType::F32,
            ..Preset::Tiny.config()
        };
        check_config(&sp).unwrap();
        let gqa = Config {
            heads: 4,
            kv_heads: Some(1),
            tp: 2,
            dtype: DType::F32,
            ..Preset::Tiny.config()
        };
        check_config(&gqa).unwrap();
        let odd = Config { seq: 7, ..sp };
        assert!(matches!(check_config(&odd), Err(GpuError::Config(_))));
    }
}
