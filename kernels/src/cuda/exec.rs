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
use crate::run::{check_config, device_model, DeviceMode, GpuRun, RunOptions};

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
#[derive(Debug, Clone, Copy)]
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

impl<T: GpuElem> Rank<T> {
    fn alloc(&mut self, n: usize) -> Result<Buf, GpuError> {
        self.bufs.push(self.stream.alloc_zeros::<T>(n.max(1))?);
        Ok(self.bufs.len() - 1)
    }
    fn alloc_stats(&mut self, n: usize) -> Result<Buf, GpuError> {
        self.stats.push(self.stream.alloc_zeros::<f32>(n.max(1))?);
        Ok(self.stats.len() - 1)
    }
    fn upload(&mut self, a: &Array2<f64>) -> Result<Buf, GpuError> {
        let host: Vec<T> = a.iter().map(|&v| T::from_f64(v)).collect();
        self.bufs.push(self.stream.clone_htod(&host)?);
        Ok(self.bufs.len() - 1)
    }
    fn download(&self, b: Buf, shape: [usize; 2]) -> Result<Array2<f64>, GpuError> {
        let v: Vec<T> = self.stream.clone_dtoh(&self.bufs[b])?;
        let v: Vec<f64> = v.into_iter().map(T::to_f64).collect();
        Array2::from_shape_vec((shape[0], shape[1]), v)
            .map_err(|e| GpuError::Unsupported(format!("downloaded buffer has a bad shape: {e}")))
    }
    fn addr(&self, b: Buf) -> u64 {
        let (p, _sync) = self.bufs[b].device_ptr(&self.stream);
        p
    }
    fn stat_addr(&self, b: Buf) -> u64 {
        let (p, _sync) = self.stats[b].device_ptr(&self.stream);
        p
    }
    fn len(&self, b: Buf) -> usize {
        self.bufs[b].len()
    }

    fn launch(&self, name: &'static str, l: Launch, args: &[KArg]) -> Result<(), GpuError> {
        launch_on(&self.stream, self.k.get(name)?, l, args)
    }

    /// `C = op(A)·op(B)` on row-major buffers at element offsets, via the transpose trick.
    fn gemm(
        &self,
        g: &RowGemm,
        (a, oa): (Buf, usize),
        (b, ob): (Buf, usize),
        (c, oc): (Buf, usize),
    ) -> Result<(), GpuError> {
        g.validate().map_err(GpuError::Unsupported)?;
        let [ea, eb, ec] = g.extent();
        if oa + ea > self.len(a) || ob + eb > self.len(b) || oc + ec > self.len(c) {
            return Err(GpuError::Unsupported(format!(
                "matrix product out of bounds: {g:?} on buffers of {}, {}, {} elements",
                self.len(a),
                self.len(b),
                self.len(c)
            )));
        }
        let cg = g.to_col_major();
        let e = std::mem::size_of::<T>() as u64;
        // cuBLAS's A is our B and vice versa (see `layout`).
        let pa = self.addr(b) + ob as u64 * e;
        let pb = self.addr(a) + oa as u64 * e;
        let pc = self.addr(c) + oc as u64 * e;
        let op = |t: bool| {
            if t {
                cublas_sys::cublasOperation_t::CUBLAS_OP_T
            } else {
                cublas_sys::cublasOperation_t::CUBLAS_OP_N
            }
        };
        let (alpha, beta) = (cg.alpha, cg.beta);
        // SAFETY: bounds were checked above; f32 scalars match CUBLAS_COMPUTE_32F.
        unsafe {
            cudarc::cublas::result::gemm_strided_batched_ex(
                *self.blas.handle(),
                op(cg.trans_a),
                op(cg.trans_b),
                cg.m as i32,
                cg.n as i32,
                cg.k as i32,
                (&alpha) as *const f32 as *const _,
                pa as *const _,
                T::CUDA_TYPE,
                cg.lda as i32,
                cg.stride_a as i64,
                pb as *const _,
                T::CUDA_TYPE,
                cg.ldb as i32,
                cg.stride_b as i64,
                (&beta) as *const f32 as *const _,
                pc as *mut _,
                T::CUDA_TYPE,
                cg.ldc as i32,
                cg.stride_c as i64,
                cg.batch as i32,
                cublas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                cublas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }?;
        Ok(())
    }
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
            let mut rk = Rank::<T> {
                ctx: ctx.clone(),
                stream,
                blas,
                k,
                bufs: Vec::new(),
                stats: Vec::new(),
                xs: Vec::new(),
                layers: Vec::new(),
                s: Scratch {
                    grad: [0; 2],
                    d_act: 0,
                    d_fc1: 0,
                    dxn: 0,
                    dx1: 0,
                    dctx: 0,
                    dprobs: 0,
                    dqkv: 0,
                },
                dout: 0,
            };
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

impl<T: GpuElem> Rank<T> {
    fn setup(
        &mut self,
        cfg: &Config,
        dm: &Dims,
        model: &Model<f64>,
        shards: &[LayerParams<f64>],
    ) -> Result<(), GpuError> {
        let (t, h, hr, fr) = (dm.t, dm.h, dm.hr, dm.fr);
        let sc = dm.batch * dm.hp * dm.seq * dm.seq;
        let x0 = self.upload(&model.input)?;
        self.xs.push(x0);
        for lp in shards.iter().take(cfg.layers) {
            let mut w = [0; 12];
            let mut g = [0; 12];
            for (i, k) in ParamKind::ALL.into_iter().enumerate() {
                w[i] = self.upload(lp.get(k))?;
                g[i] = self.alloc(lp.get(k).len())?;
            }
            let lb = LayerBufs {
                w,
                g,
                xn1: self.alloc(t * h)?,
                qkv: self.alloc(t * 3 * hr)?,
                probs: self.alloc(sc)?,
                ctx: self.alloc(t * hr)?,
                attn_out: self.alloc(t * h)?,
                x1: self.alloc(t * h)?,
                xn2: self.alloc(t * h)?,
                fc1: self.alloc(t * fr)?,
                act: self.alloc(t * fr)?,
                mlp_out: self.alloc(t * h)?,
                mean1: self.alloc_stats(t)?,
                rstd1: self.alloc_stats(t)?,
                mean2: self.alloc_stats(t)?,
                rstd2: self.alloc_stats(t)?,
            };
            self.layers.push(lb);
            let y = self.alloc(t * h)?;
            self.xs.push(y);
        }
        self.s = Scratch {
            grad: [self.alloc(t * h)?, self.alloc(t * h)?],
            d_act: self.alloc(t * fr)?,
            d_fc1: self.alloc(t * fr)?,
            dxn: self.alloc(t * h)?,
            dx1: self.alloc(t * h)?,
            dctx: self.alloc(t * hr)?,
            dprobs: self.alloc(sc)?,
            dqkv: self.alloc(t * 3 * hr)?,
        };
        self.dout = self.upload(&model.grad_output)?;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn ln_fwd(
        &self,
        x: Buf,
        w: Buf,
        b: Buf,
        y: Buf,
        mean: Buf,
        rstd: Buf,
        dm: &Dims,
    ) -> Result<(), GpuError> {
        self.launch(
            "ln_fwd",
            launch::per_row(dm.t, dm.h),
            &[
                KArg::Ptr(self.addr(x)),
                KArg::Ptr(self.addr(w)),
                KArg::Ptr(self.addr(b)),
                KArg::Ptr(self.addr(y)),
                KArg::Ptr(self.stat_addr(mean)),
                KArg::Ptr(self.stat_addr(rstd)),
                KArg::I32(dm.h as i32),
                KArg::F32(tplab_engine::ops::LN_EPS as f32),
            ],
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn ln_bwd(
        &self,
        dy: Buf,
        x: Buf,
        w: Buf,
        mean: Buf,
        rstd: Buf,
        resid: Buf,
        dx: Buf,
        dw: Buf,
        db: Buf,
        dm: &Dims,
    ) -> Result<(), GpuError> {
        self.launch(
            "ln_bwd_input",
            launch::per_row(dm.t, dm.h),
            &[
                KArg::Ptr(self.addr(dy)),
                KArg::Ptr(self.addr(x)),
                KArg::Ptr(self.addr(w)),
                KArg::Ptr(self.stat_addr(mean)),
                KArg::Ptr(self.stat_addr(rstd)),
                KArg::Ptr(self.addr(resid)),
                KArg::Ptr(self.addr(dx)),
                KArg::I32(dm.h as i32),
            ],
        )?;
        self.launch(
            "ln_bwd_params",
            launch::per_column(dm.h),
            &[
                KArg::Ptr(self.addr(dy)),
                KArg::Ptr(self.addr(x)),
                KArg::Ptr(self.stat_addr(mean)),
                KArg::Ptr(self.stat_addr(rstd)),
                KArg::Ptr(self.addr(dw)),
                KArg::Ptr(self.addr(db)),
                KArg::I32(dm.t as i32),
                KArg::I32(dm.h as i32),
            ],
        )
    }

    fn bias_add(&self, y: Buf, bias: Buf, rows: usize, cols: usize) -> Result<(), GpuError> {
        let n = rows * cols;
        self.launch(
            "bias_add",
            launch::elementwise(n),
            &[
                KArg::Ptr(self.addr(y)),
                KArg::Ptr(self.addr(bias)),
                KArg::I64(n as i64),
                KArg::I32(cols as i32),
            ],
        )
    }

    fn col_sum(&self, x: Buf, out: Buf, rows: usize, cols: usize) -> Result<(), GpuError> {
        self.launch(
            "col_sum",
            launch::per_column(cols),
            &[
                KArg::Ptr(self.addr(x)),
                KArg::Ptr(self.addr(out)),
                KArg::I32(rows as i32),
                KArg::I32(cols as i32),
            ],
        )
    }

    fn bias_residual(
        &self,
        res: Buf,
        a: Buf,
        bias: Buf,
        y: Buf,
        dm: &Dims,
    ) -> Result<(), GpuError> {
        let n = dm.t * dm.h;
        self.launch(
            "bias_residual",
            launch::elementwise(n),
            &[
                KArg::Ptr(self.addr(res)),
                KArg::Ptr(self.addr(a)),
                KArg::Ptr(self.addr(bias)),
                KArg::Ptr(self.addr(y)),
                KArg::I64(n as i64),
                KArg::I32(dm.h as i32),
            ],
        )
    }

    fn softmax(&self, name: &'static str, args: &[KArg], dm: &Dims) -> Result<(), GpuError> {
        let rows = dm.batch * dm.hp * dm.seq;
        self.launch(name, launch::per_row(rows, dm.seq), args)
    }

    /// One compute event of the trace on this rank.
    fn compute(
        &self,
        op: Op,
        layer: usize,
        cur: &mut Buf,
        dm: &Dims,
        ag: &AttentionGemms,
    ) -> Result<(), GpuError> {
        let lb = self.layers[layer];
        let (t, h, hr, fr) = (dm.t, dm.h, dm.hr, dm.fr);
        let w = |k: ParamKind| lb.w[pidx(k)];
        let g = |k: ParamKind| lb.g[pidx(k)];
        let x = self.xs[layer];
        let s = self.s;
        // The gradient flowing into this layer's output (the upstream `dout` for the last layer).
        let gy = *cur;
        use ParamKind as P;
        match op {
            Op::Ln1 => self.ln_fwd(
                x,
                w(P::Ln1Weight),
                w(P::Ln1Bias),
                lb.xn1,
                lb.mean1,
                lb.rstd1,
                dm,
            ),
            Op::Qkv => {
                self.gemm(
                    &RowGemm::plain(t, 3 * hr, h, false, false),
                    (lb.xn1, 0),
                    (w(P::QkvWeight), 0),
                    (lb.qkv, 0),
                )?;
                self.bias_add(lb.qkv, w(P::QkvBias), t, 3 * hr)
            }
            Op::AttnCore => {
                for b in 0..dm.batch {
                    self.gemm(
                        &ag.scores,
                        (lb.qkv, ag.qkv_offset(b, 0)),
                        (lb.qkv, ag.qkv_offset(b, 1)),
                        (lb.probs, ag.scores_offset(b)),
                    )?;
                }
                self.softmax(
                    "causal_softmax_fwd",
                    &[KArg::Ptr(self.addr(lb.probs)), KArg::I32(dm.seq as i32)],
                    dm,
                )?;
                for b in 0..dm.batch {
                    self.gemm(
                        &ag.context,
                        (lb.probs, ag.scores_offset(b)),
                        (lb.qkv, ag.qkv_offset(b, 2)),
                        (lb.ctx, ag.ctx_offset(b)),
                    )?;
                }
                Ok(())
            }
            Op::AttnOut => self.gemm(
                &RowGemm::plain(t, h, hr, false, false),
                (lb.ctx, 0),
                (w(P::OutWeight), 0),
                (lb.attn_out, 0),
            ),
            Op::AttnBiasResidual => self.bias_residual(x, lb.attn_out, w(P::OutBias), lb.x1, dm),
            Op::Ln2 => self.ln_fwd(
                lb.x1,
                w(P::Ln2Weight),
                w(P::Ln2Bias),
                lb.xn2,
                lb.mean2,
                lb.rstd2,
                dm,
            ),
            Op::Fc1 => {
                self.gemm(
                    &RowGemm::plain(t, fr, h, false, false),
                    (lb.xn2, 0),
                    (w(P::Fc1Weight), 0),
                    (lb.fc1, 0),
                )?;
                self.bias_add(lb.fc1, w(P::Fc1Bias), t, fr)
            }
            Op::Gelu => {
                let n = t * fr;
                self.launch(
                    "gelu_fwd",
                    launch::elementwise(n),
                    &[
                        KArg::Ptr(self.addr(lb.fc1)),
                        KArg::Ptr(self.addr(lb.act)),
                        KArg::I64(n as i64),
                    ],
                )
            }
            Op::Fc2 => self.gemm(
                &RowGemm::plain(t, h, fr, false, false),
                (lb.act, 0),
                (w(P::Fc2Weight), 0),
                (lb.mlp_out, 0),
            ),
            Op::MlpBiasResidual => {
                self.bias_residual(lb.x1, lb.mlp_out, w(P::Fc2Bias), self.xs[layer + 1], dm)
            }
            Op::MlpBiasResidualBwd => self.col_sum(gy, g(P::Fc2Bias), t, h),
            Op::Fc2Bwd => {
                self.gemm(
                    &RowGemm::plain(t, fr, h, false, true),
                    (gy, 0),
                    (w(P::Fc2Weight), 0),
                    (s.d_act, 0),
                )?;
                self.gemm(
                    &RowGemm::plain(fr, h, t, true, false),
                    (lb.act, 0),
                    (gy, 0),
                    (g(P::Fc2Weight), 0),
                )
            }
            Op::GeluBwd => {
                let n = t * fr;
                self.launch(
                    "gelu_bwd",
                    launch::elementwise(n),
                    &[
                        KArg::Ptr(self.addr(s.d_act)),
                        KArg::Ptr(self.addr(lb.fc1)),
                        KArg::Ptr(self.addr(s.d_fc1)),
                        KArg::I64(n as i64),
                    ],
                )
            }
            Op::Fc1Bwd => {
                self.gemm(
                    &RowGemm::plain(h, fr, t, true, false),
                    (lb.xn2, 0),
                    (s.d_fc1, 0),
                    (g(P::Fc1Weight), 0),
                )?;
                self.col_sum(s.d_fc1, g(P::Fc1Bias), t, fr)?;
                self.gemm(
                    &RowGemm::plain(t, h, fr, false, true),
                    (s.d_fc1, 0),
                    (w(P::Fc1Weight), 0),
                    (s.dxn, 0),
                )
            }
            Op::Ln2Bwd => self.ln_bwd(
                s.dxn,
                lb.x1,
                w(P::Ln2Weight),
                lb.mean2,
                lb.rstd2,
                gy,
                s.dx1,
                g(P::Ln2Weight),
                g(P::Ln2Bias),
                dm,
            ),
            Op::AttnBiasResidualBwd => self.col_sum(s.dx1, g(P::OutBias), t, h),
            Op::AttnOutBwd => {
                self.gemm(
                    &RowGemm::plain(t, hr, h, false, true),
                    (s.dx1, 0),
                    (w(P::OutWeight), 0),
                    (s.dctx, 0),
                )?;
                self.gemm(
                    &RowGemm::plain(hr, h, t, true, false),
                    (lb.ctx, 0),
                    (s.dx1, 0),
                    (g(P::OutWeight), 0),
                )
            }
            Op::AttnCoreBwd => {
                for b in 0..dm.batch {
                    let so = ag.scores_offset(b);
                    self.gemm(
                        &ag.d_probs,
                        (s.dctx, ag.ctx_offset(b)),
                        (lb.qkv, ag.qkv_offset(b, 2)),
                        (s.dprobs, so),
                    )?;
                    self.gemm(
                        &ag.d_v,
                        (lb.probs, so),
                        (s.dctx, ag.ctx_offset(b)),
                        (s.dqkv, ag.qkv_offset(b, 2)),
                    )?;
                }
                self.softmax(
                    "causal_softmax_bwd",
                    &[
                        KArg::Ptr(self.addr(lb.probs)),
                        KArg::Ptr(self.addr(s.dprobs)),
                        KArg::I32(dm.seq as i32),
                    ],
                    dm,
                )?;
                for b in 0..dm.batch {
                    let so = ag.scores_offset(b);
                    self.gemm(
                        &ag.d_q,
                        (s.dprobs, so),
                        (lb.qkv, ag.qkv_offset(b, 1)),
                        (s.dqkv, ag.qkv_offset(b, 0)),
                    )?;
                    self.gemm(
                        &ag.d_k,
                        (s.dprobs, so),
                        (lb.qkv, ag.qkv_offset(b, 0)),
                        (s.dqkv, ag.qkv_offset(b, 1)),
                    )?;
                }
                Ok(())
            }
            Op::QkvBwd => {
                self.gemm(
                    &RowGemm::plain(h, 3 * hr, t, true, false),
                    (lb.xn1, 0),
                    (s.dqkv, 0),
                    (g(P::QkvWeight), 0),
                )?;
                self.col_sum(s.dqkv, g(P::QkvBias), t, 3 * hr)?;
                self.gemm(
                    &RowGemm::plain(t, h, 3 * hr, false, true),
                    (s.dqkv, 0),
                    (w(P::QkvWeight), 0),
                    (s.dxn, 0),
                )
            }
            Op::Ln1Bwd => {
                let next = if gy == s.grad[0] {
                    s.grad[1]
                } else {
                    s.grad[0]
                };
                self.ln_bwd(
                    s.dxn,
                    x,
                    w(P::Ln1Weight),
                    lb.mean1,
                    lb.rstd1,
                    s.dx1,
                    next,
                    g(P::Ln1Weight),
                    g(P::Ln1Bias),
                    dm,
                )?;
                *cur = next;
                Ok(())
            }
            // Collectives are not compute events; the vocabulary pass does not run on the GPU.
            Op::AttnF
            | Op::AttnG
            | Op::MlpF
            | Op::MlpG
            | Op::MlpGBwd
            | Op::MlpFBwdGather
            | Op::MlpFBwd
            | Op::AttnGBwd
            | Op::AttnFBwdGather
            | Op::KvGrads
            | Op::AttnFBwd
            | Op::SpGrads
            | Op::EmbedLookup
            | Op::EmbedG
            | Op::LmHead
            | Op::CeLocal
            | Op::CeMax
            | Op::CeSumExp
            | Op::CeTarget
            | Op::CeBwd
            | Op::LmHeadBwd
            | Op::LmHeadFBwd
            | Op::EmbedBwd
            | Op::PosEmbed
            | Op::FinalLn
            | Op::LogitsGather => Err(GpuError::Unsupported(format!(
                "the GPU executor has no kernel for `{op}` ({})",
                op.label()
            ))),
        }
    }
}

/// Launches `f` on `stream` with `args`.
fn launch_on(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    l: Launch,
    args: &[KArg],
) -> Result<(), GpuError> {
    launch::check(l).map_err(GpuError::Unsupported)?;
    let mut b = stream.launch_builder(f);
    for a in args {
        match a {
            KArg::Ptr(p) => b.arg(p),
            KArg::I32(v) => b.arg(v),
            KArg::I64(v) => b.arg(v),
            KArg::F32(v) => b.arg(v),
        };
    }
    let cfg = LaunchConfig {
        grid_dim: (l.grid, 1, 1),
        block_dim: (l.block, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: callers pass live device buffers sized for the launch and the kernel's exact
    // parameter list.
    unsafe { b.launch(cfg) }?;
    Ok(())
}

/// Timing events of one trace event.
struct EvPair {
    start: CudaEvent,
    end: CudaEvent,
    /// Index of the device clock (`t0`) the pair is read against.
    clock: usize,
}

/// Measured (start, duration) in ms per trace event for one iteration, plus its makespan.
struct IterTimes {
    events: Vec<(f64, f64)>,
    makespan_ms: f64,
}

impl<T: GpuElem> Exec<T> {
    /// The all-reduce site of a collective event.
    fn site(&self, op: Op, layer: usize) -> Result<usize, GpuError> {
        match op {
            Op::AttnG => Ok(site_attn(layer)),
            Op::MlpG => Ok(site_mlp(layer)),
            Op::MlpFBwd | Op::AttnFBwd => Ok(site_dxn(self.cfg.layers)),
            other => Err(GpuError::Unsupported(format!(
                "the GPU executor does not know the all-reduce `{other}`"
            ))),
        }
    }

    fn site_buf(&self, rank: usize, site: usize) -> Buf {
        let rk = &self.ranks[rank];
        let layers = self.cfg.layers;
        if site == site_dxn(layers) {
            rk.s.dxn
        } else if site.is_multiple_of(2) {
            rk.layers[site / 2].attn_out
        } else {
            rk.layers[site / 2].mlp_out
        }
    }

    fn new_events(&self, trace: &Trace) -> Result<Vec<EvPair>, GpuError> {
        let single = matches!(self.coll, Collective::Single { .. });
        trace
            .events
            .iter()
            .map(|e| {
                let r = if e.is_collective() { 0 } else { e.ranks[0] };
                let ctx = if single {
                    &self.ranks[0].ctx
                } else {
                    &self.ranks[r].ctx
                };
                Ok(EvPair {
                    start: ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?,
                    end: ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?,
                    clock: if single { 0 } else { r },
                })
            })
            .collect()
    }

    /// One forward and backward pass in trace order; returns the buffer holding `dL/dx`.
    fn iteration(
        &mut self,
        trace: &Trace,
        evs: &[EvPair],
        t0: &[CudaEvent],
    ) -> Result<Buf, GpuError> {
        // A common origin: every rank starts after t0.
        if matches!(self.coll, Collective::Single { .. }) {
            t0[0].record(&self.ranks[0].stream)?;
            for rk in &self.ranks[1..] {
                rk.stream.wait(&t0[0])?;
            }
        } else {
            for (rk, ev) in self.ranks.iter().zip(t0) {
                ev.record(&rk.stream)?;
            }
        }
        let mut cur: Vec<Buf> = self.ranks.iter().map(|r| r.dout).collect();
        for (e, ev) in trace.events.iter().zip(evs) {
            match &e.kind {
                EventKind::Compute { .. } => {
                    let r = e.ranks[0];
                    let rk = &self.ranks[r];
                    ev.start.record(&rk.stream)?;
                    rk.compute(e.op, e.layer, &mut cur[r], &self.dims, &self.attn)?;
                    ev.end.record(&rk.stream)?;
                }
                EventKind::Collective { kind, .. } => {
                    use tplab_engine::trace::CollectiveKind;
                    match kind {
                        CollectiveKind::Identity => {
                            // No communication: a zero-length mark on rank 0's stream.
                            ev.start.record(&self.ranks[0].stream)?;
                            ev.end.record(&self.ranks[0].stream)?;
                        }
                        CollectiveKind::AllReduce => {
                            let site = self.site(e.op, e.layer)?;
                            self.all_reduce(site, ev)?;
                        }
                        other => {
                            return Err(GpuError::Unsupported(format!(
                                "the GPU executor runs all-reduce only, not {}",
                                other.name()
                            )))
                        }
                    }
                }
            }
        }
        Ok(cur[0])
    }

    fn all_reduce(&mut self, site: usize, ev: &EvPair) -> Result<(), GpuError> {
        let n = self.ranks.len();
        let len = self.dims.t * self.dims.h;
        let bufs: Vec<Buf> = (0..n).map(|r| self.site_buf(r, site)).collect();
        match &mut self.coll {
            Collective::Single {
                stream,
                tables,
                ready,
                ..
            } => {
                for (rk, rd) in self.ranks.iter().zip(ready.iter()) {
                    rd.record(&rk.stream)?;
                    stream.wait(rd)?;
                }
                ev.start.record(stream)?;
                if n > 1 {
                    let (tbl, _sync) = tables[site].device_ptr(stream);
                    let f = self.ranks[0].k.get("sum_ranks")?;
                    launch_on(
                        stream,
                        f,
                        launch::all_reduce(len),
                        &[KArg::Ptr(tbl), KArg::I32(n as i32), KArg::I64(len as i64)],
                    )?;
                }
                ev.end.record(stream)?;
                for rk in &self.ranks {
                    rk.stream.wait(&ev.end)?;
                }
            }
            Collective::Nccl { comms } => {
                ev.start.record(&self.ranks[0].stream)?;
                cudarc::nccl::group_start()?;
                let mut res = Ok(());
                for ((rk, c), b) in self.ranks.iter_mut().zip(comms.iter()).zip(&bufs) {
                    if let Err(e) =
                        c.all_reduce_in_place(&mut rk.bufs[*b], &cudarc::nccl::ReduceOp::Sum)
                    {
                        res = Err(e);
                        break;
                    }
                }
                cudarc::nccl::group_end()?;
                res?;
                ev.end.record(&self.ranks[0].stream)?;
            }
        }
        Ok(())
    }

    fn synchronize(&self) -> Result<(), GpuError> {
        for rk in &self.ranks {
            rk.stream.synchronize()?;
        }
        if let Collective::Single { stream, .. } = &self.coll {
            stream.synchronize()?;
        }
        Ok(())
    }

    fn read_times(&self, evs: &[EvPair], t0: &[CudaEvent]) -> Result<IterTimes, GpuError> {
        let mut events = Vec::with_capacity(evs.len());
        let mut makespan_ms = 0.0f64;
        for ev in evs {
            let start = f64::from(t0[ev.clock].elapsed_ms(&ev.start)?);
            let dur = f64::from(ev.start.elapsed_ms(&ev.end)?).max(0.0);
            makespan_ms = makespan_ms.max(start + dur);
            events.push((start, dur));
        }
        Ok(IterTimes {
            events,
            makespan_ms,
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
            rank: Rank {
                ctx,
                stream,
                blas,
                k,
                bufs: Vec::new(),
                stats: Vec::new(),
                xs: Vec::new(),
                layers: Vec::new(),
                s: Scratch {
                    grad: [0; 2],
                    d_act: 0,
                    d_fc1: 0,
                    dxn: 0,
                    dx1: 0,
                    dctx: 0,
                    dprobs: 0,
                    dqkv: 0,
                },
                dout: 0,
            },
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
