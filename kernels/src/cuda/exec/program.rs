//! Any valid sharding plan on CUDA: the launch list [`crate::program::lower`] makes of the
//! plan's propagated program, one launch per instruction, each rank on its own stream, the
//! collectives between them as in the Megatron walk (one device: the rank-table kernels on a
//! reducing stream; several: NCCL). Measured times go onto the program's trace, whose events
//! the list's blocks stand for one to one (tested on the CPU in `program::tests`).
//!
//! Not yet run on hardware (no device was lent while it was written); docs/gpu.md says so.

use super::*;
use crate::program::{local_part, lower, Block, Init, Instr, Lowered, Strided};
use crate::run::PlanGpuRun;
use timing::EvPair;
use tplab_engine::block::design::program::propagate;
use tplab_engine::block::design::ShardingPlan;
use tplab_engine::block::exec::design::{shard_model, Local, ProgramRun};

/// The device side of one collective instruction.
struct CollDev {
    /// One device: device arrays of the block's ranks' send and receive addresses.
    tables: Option<(CudaSlice<u64>, CudaSlice<u64>)>,
    /// Several devices, a group smaller than every rank: its communicators.
    comms: Option<Vec<cudarc::nccl::Comm>>,
}

struct PlanExec<T: GpuElem> {
    /// Shared so a walk can hold the blocks while it launches them.
    low: Arc<Lowered>,
    ranks: Vec<Rank<T>>,
    coll: Collective,
    /// Per (block, instruction) of a collective.
    colls: HashMap<(usize, usize), CollDev>,
}

fn elem<T>() -> u64 {
    std::mem::size_of::<T>() as u64
}

impl<T: GpuElem> Rank<T> {
    /// Rank `r`'s launch of a local instruction on its stream.
    fn instr(&self, ins: &Instr, r: usize) -> Result<(), GpuError> {
        match ins {
            Instr::Gemm { g, a, b, c } => self.gemm(g, *a, *b, *c),
            Instr::BiasAdd {
                y,
                bias,
                rows,
                cols,
                rank0_only,
            } => {
                if *rank0_only && r != 0 {
                    return Ok(());
                }
                self.bias_add(*y, *bias, *rows, *cols)
            }
            Instr::BiasResidual {
                res,
                a,
                bias,
                y,
                rows,
                cols,
            } => self.bias_residual(*res, *a, *bias, *y, *rows, *cols),
            Instr::Add { y, x, n } => self.launch(
                "add_inplace",
                launch::elementwise(*n),
                &[
                    KArg::Ptr(self.addr(*y)),
                    KArg::Ptr(self.addr(*x)),
                    KArg::I64(*n as i64),
                ],
            ),
            Instr::Copy {
                src,
                dst,
                rows,
                cols,
            } => self.copy_block(src, dst, *rows, *cols, false, r),
            Instr::AddBlock {
                src,
                dst,
                rows,
                cols,
            } => self.copy_block(src, dst, *rows, *cols, true, r),
            Instr::Zero { buf, n } => {
                if *buf >= self.bufs.len() || *n > self.len(*buf) {
                    return Err(GpuError::Unsupported(format!(
                        "zeroing {n} elements of buffer {buf} is out of bounds"
                    )));
                }
                let bytes = n * std::mem::size_of::<T>();
                // SAFETY: the first `n` elements of a live buffer of this device (checked above),
                // on its own rank's stream.
                unsafe {
                    cudarc::driver::result::memset_d8_async(
                        self.addr(*buf),
                        0,
                        bytes,
                        self.stream.cu_stream(),
                    )
                }?;
                Ok(())
            }
            Instr::Gelu { a, u, n } => self.gelu(*a, *u, *n),
            Instr::GeluBwd { dy, a, dx, n } => self.launch(
                "gelu_bwd",
                launch::elementwise(*n),
                &[
                    KArg::Ptr(self.addr(*dy)),
                    KArg::Ptr(self.addr(*a)),
                    KArg::Ptr(self.addr(*dx)),
                    KArg::I64(*n as i64),
                ],
            ),
            Instr::ColSum { x, out, rows, cols } => self.col_sum(*x, *out, *rows, *cols),
            Instr::LnFwd {
                x,
                w,
                b,
                y,
                mean,
                rstd,
                rows,
                h,
            } => self.ln_fwd(*x, *w, *b, *y, *mean, *rstd, *rows, *h),
            Instr::LnBwd {
                dy,
                x,
                w,
                mean,
                rstd,
                resid,
                dx,
                dw,
                db,
                rows,
                h,
            } => self.ln_bwd(
                *dy,
                *x,
                *w,
                [*mean, *rstd],
                *resid,
                *dx,
                *dw,
                *db,
                *rows,
                *h,
            ),
            Instr::SoftmaxFwd { probs, rows, seq } => self.launch(
                "causal_softmax_fwd",
                launch::per_row(*rows, *seq),
                &[KArg::Ptr(self.addr(*probs)), KArg::I32(*seq as i32)],
            ),
            Instr::SoftmaxBwd {
                probs,
                dprobs,
                rows,
                seq,
            } => self.launch(
                "causal_softmax_bwd",
                launch::per_row(*rows, *seq),
                &[
                    KArg::Ptr(self.addr(*probs)),
                    KArg::Ptr(self.addr(*dprobs)),
                    KArg::I32(*seq as i32),
                ],
            ),
            Instr::AllReduce { .. }
            | Instr::AllGather { .. }
            | Instr::ReduceScatter { .. }
            | Instr::AllToAll { .. } => Err(GpuError::Unsupported(
                "a collective is not a rank's local launch".into(),
            )),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn copy_block(
        &self,
        src: &Strided,
        dst: &Strided,
        rows: usize,
        cols: usize,
        add: bool,
        r: usize,
    ) -> Result<(), GpuError> {
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        let (so, d0) = (src.offset(r), dst.offset(r));
        let end = |off: usize, ld: usize| off + (rows - 1) * ld + cols;
        if end(so, src.ld) > self.len(src.buf) || end(d0, dst.ld) > self.len(dst.buf) {
            return Err(GpuError::Unsupported(format!(
                "a {rows}x{cols} copy out of bounds (buffers {} and {})",
                src.buf, dst.buf
            )));
        }
        let e = elem::<T>();
        self.launch(
            "copy_block",
            launch::elementwise(rows * cols),
            &[
                KArg::Ptr(self.addr(src.buf) + so as u64 * e),
                KArg::Ptr(self.addr(dst.buf) + d0 as u64 * e),
                KArg::I32(rows as i32),
                KArg::I32(cols as i32),
                KArg::I32(src.ld as i32),
                KArg::I32(dst.ld as i32),
                KArg::I32(i32::from(add)),
            ],
        )
    }
}

/// The send and receive buffers of a collective instruction.
fn coll_bufs(ins: &Instr) -> Option<(usize, usize)> {
    match *ins {
        Instr::AllReduce { buf, .. } => Some((buf, buf)),
        Instr::AllGather { send, recv, .. }
        | Instr::ReduceScatter { send, recv, .. }
        | Instr::AllToAll { send, recv, .. } => Some((send, recv)),
        _ => None,
    }
}

impl<T: GpuElem> PlanExec<T> {
    fn new(
        cfg: &Config,
        program: &tplab_engine::block::design::Program,
        model: &Model<f64>,
        mode: DeviceMode,
    ) -> Result<Self, GpuError> {
        let low = lower(cfg, program)?;
        let tp = cfg.tp.max(1);
        let shards = shard_model(cfg, program, model);
        let ctxs = rank_contexts(mode, tp)?;
        let needed = low.bytes_per_rank(std::mem::size_of::<T>());
        check_free(&ctxs, mode, needed)?;
        let mut ranks = Vec::with_capacity(tp);
        for (r, ctx) in ctxs.iter().enumerate() {
            let mut rk = Rank::<T>::open(ctx)?;
            for spec in &low.bufs {
                let b = match spec.init {
                    Init::Zero => rk.alloc(spec.len),
                    Init::Input(p) => rk.upload(&local_part(cfg, &model.input, p, r)),
                    Init::GradOutput(p) => rk.upload(&local_part(cfg, &model.grad_output, p, r)),
                    Init::Param { layer, kind } => match shards.get(r).and_then(|s| s.get(layer)) {
                        Some(lp) => rk.upload(lp.get(kind)),
                        None => Err(GpuError::Unsupported(format!(
                            "no shard of layer {layer} for GPU {r}"
                        ))),
                    },
                }
                .map_err(|e| oom(e, "allocating a rank's buffers", needed))?;
                if rk.len(b) != spec.len {
                    return Err(GpuError::Unsupported(format!(
                        "buffer {b} holds {} elements; the launch list says {}",
                        rk.len(b),
                        spec.len
                    )));
                }
            }
            for n in &low.stats {
                rk.alloc_stats(*n)?;
            }
            ranks.push(rk);
        }
        let coll = Collective::open(mode, &ctxs, &ranks)?;
        let mut colls = HashMap::new();
        for (bi, b) in low.blocks.iter().enumerate() {
            for (ii, ins) in b.instrs.iter().enumerate() {
                let Some((send, recv)) = coll_bufs(ins) else {
                    continue;
                };
                let tables = match &coll {
                    Collective::Single { stream, .. } => {
                        let addrs = |x: usize| -> Vec<u64> {
                            b.ranks.iter().map(|&r| ranks[r].addr(x)).collect()
                        };
                        Some((
                            stream.clone_htod(&addrs(send))?,
                            stream.clone_htod(&addrs(recv))?,
                        ))
                    }
                    Collective::Nccl { .. } => None,
                };
                let comms = match &coll {
                    Collective::Nccl { .. } if b.ranks.len() < tp => {
                        let streams = b.ranks.iter().map(|&r| ranks[r].stream.clone()).collect();
                        Some(cudarc::nccl::Comm::from_devices(streams)?)
                    }
                    _ => None,
                };
                colls.insert((bi, ii), CollDev { tables, comms });
            }
        }
        if let Collective::Single { stream, .. } = &coll {
            stream.synchronize()?;
        }
        for rk in &ranks {
            rk.stream.synchronize()?;
        }
        Ok(Self {
            low: Arc::new(low),
            ranks,
            coll,
            colls,
        })
    }

    /// Timing events, one pair per trace event, in the blocks' order.
    fn new_events(&self) -> Result<Vec<EvPair>, GpuError> {
        let single = matches!(self.coll, Collective::Single { .. });
        let mut out = Vec::new();
        for b in &self.low.blocks {
            if b.event.is_none() {
                continue;
            }
            let clocks: Vec<usize> = if b.collective {
                vec![b.ranks.first().copied().unwrap_or(0)]
            } else {
                b.ranks.clone()
            };
            for r in clocks {
                let ctx = if single {
                    &self.ranks[0].ctx
                } else {
                    &self.ranks[r].ctx
                };
                out.push(EvPair {
                    start: ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?,
                    end: ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?,
                    clock: if single { 0 } else { r },
                });
            }
        }
        Ok(out)
    }

    /// One forward and backward pass, block by block.
    fn iteration(&mut self, evs: &[EvPair], t0: &[CudaEvent]) -> Result<(), GpuError> {
        timing::origin(&self.ranks, &self.coll, t0)?;
        let mut e = 0;
        let low = Arc::clone(&self.low);
        for (bi, b) in low.blocks.iter().enumerate() {
            match (b.event.is_some(), b.collective) {
                (true, false) => {
                    for &r in &b.ranks {
                        let ev = &evs[e];
                        e += 1;
                        let rk = &self.ranks[r];
                        ev.start.record(&rk.stream)?;
                        for ins in &b.instrs {
                            rk.instr(ins, r)?;
                        }
                        ev.end.record(&rk.stream)?;
                    }
                }
                (false, _) => {
                    for &r in &b.ranks {
                        for ins in &b.instrs {
                            self.ranks[r].instr(ins, r)?;
                        }
                    }
                }
                (true, true) => {
                    let ev = &evs[e];
                    e += 1;
                    self.collective_block(bi, b, ev)?;
                }
            }
        }
        Ok(())
    }

    /// A collective block: the ranks' local packing, the collective, their unpacking. The event
    /// spans the collective itself (or, with no collective, the first rank's local copies).
    fn collective_block(&mut self, bi: usize, b: &Block, ev: &EvPair) -> Result<(), GpuError> {
        let at = b.instrs.iter().position(Instr::is_collective);
        let (pre, post) = match at {
            Some(i) => (&b.instrs[..i], &b.instrs[i + 1..]),
            None => (&b.instrs[..], &b.instrs[..0]),
        };
        let first = b.ranks.first().copied().unwrap_or(0);
        let Some(i) = at else {
            // A slice, or an identity half: local work only.
            let s = self.ranks[first].stream.clone();
            ev.start.record(&s)?;
            for &r in &b.ranks {
                for ins in pre {
                    self.ranks[r].instr(ins, r)?;
                }
            }
            ev.end.record(&s)?;
            return Ok(());
        };
        for &r in &b.ranks {
            for ins in pre {
                self.ranks[r].instr(ins, r)?;
            }
        }
        let ins = b.instrs[i].clone();
        let dev = self
            .colls
            .get(&(bi, i))
            .ok_or_else(|| GpuError::Unsupported(format!("block {bi} has no collective plan")))?;
        let n = b.ranks.len();
        match &self.coll {
            Collective::Single { stream, ready } => {
                for &r in &b.ranks {
                    ready[r].record(&self.ranks[r].stream)?;
                    stream.wait(&ready[r])?;
                }
                ev.start.record(stream)?;
                let (send, recv) = dev
                    .tables
                    .as_ref()
                    .ok_or_else(|| GpuError::Unsupported("no address tables".into()))?;
                let (ps, _s) = send.device_ptr(stream);
                let (pr, _r) = recv.device_ptr(stream);
                let k = &self.ranks[0].k;
                let ni = KArg::I32(n as i32);
                let (name, l, args) = match ins {
                    Instr::AllReduce { len, .. } => (
                        "sum_ranks",
                        launch::all_reduce(len),
                        vec![KArg::Ptr(ps), ni, KArg::I64(len as i64)],
                    ),
                    Instr::AllGather { part, .. } => (
                        "gather_ranks",
                        launch::elementwise(part * n),
                        vec![KArg::Ptr(ps), KArg::Ptr(pr), ni, KArg::I64(part as i64)],
                    ),
                    Instr::ReduceScatter { part, .. } => (
                        "scatter_sum_ranks",
                        launch::elementwise(part * n),
                        vec![KArg::Ptr(ps), KArg::Ptr(pr), ni, KArg::I64(part as i64)],
                    ),
                    Instr::AllToAll { part, .. } => (
                        "all_to_all_ranks",
                        launch::elementwise(part * n * n),
                        vec![KArg::Ptr(ps), KArg::Ptr(pr), ni, KArg::I64(part as i64)],
                    ),
                    _ => return Err(GpuError::Unsupported("not a collective".into())),
                };
                launch_on(stream, k.get(name)?, l, &args)?;
                ev.end.record(stream)?;
                for &r in &b.ranks {
                    self.ranks[r].stream.wait(&ev.end)?;
                }
            }
            Collective::Nccl { comms } => {
                let comms: &[cudarc::nccl::Comm] = match &dev.comms {
                    Some(c) => c,
                    None => comms,
                };
                let s = self.ranks[first].stream.clone();
                ev.start.record(&s)?;
                cudarc::nccl::group_start()?;
                let mut res = Ok(());
                for (&r, c) in b.ranks.iter().zip(comms.iter()) {
                    let rk = &mut self.ranks[r];
                    let out = match ins {
                        Instr::AllReduce { buf, .. } => c
                            .all_reduce_in_place(&mut rk.bufs[buf], &cudarc::nccl::ReduceOp::Sum)
                            .map(|_| ()),
                        Instr::AllGather { send, recv, .. } => {
                            let (src, dst) = timing::two(&mut rk.bufs, send, recv)?;
                            c.all_gather(src, dst).map(|_| ())
                        }
                        Instr::ReduceScatter { send, recv, .. } => {
                            let (src, dst) = timing::two(&mut rk.bufs, send, recv)?;
                            c.reduce_scatter(src, dst, &cudarc::nccl::ReduceOp::Sum)
                                .map(|_| ())
                        }
                        Instr::AllToAll { send, recv, part } => {
                            let (src, dst) = timing::two(&mut rk.bufs, send, recv)?;
                            let mut out = Ok(());
                            for peer in 0..n {
                                let o = peer * part;
                                let sent = c.send(&src.slice(o..o + part), peer as i32);
                                let got = sent.and_then(|_| {
                                    c.recv(&mut dst.slice_mut(o..o + part), peer as i32)
                                        .map(|_| ())
                                });
                                if let Err(e) = got {
                                    out = Err(e);
                                    break;
                                }
                            }
                            out
                        }
                        _ => Ok(()),
                    };
                    if let Err(e) = out {
                        res = Err(e);
                        break;
                    }
                }
                cudarc::nccl::group_end()?;
                res?;
                ev.end.record(&s)?;
            }
        }
        for &r in &b.ranks {
            for ins in post {
                self.ranks[r].instr(ins, r)?;
            }
        }
        Ok(())
    }

    fn synchronize(&self) -> Result<(), GpuError> {
        timing::synchronize(&self.ranks, &self.coll)
    }

    fn results(&self) -> Result<ProgramRun<f64>, GpuError> {
        let local = |s: crate::program::Slot| -> Result<Local<f64>, GpuError> {
            Ok(Local {
                place: s.place,
                ranks: self
                    .ranks
                    .iter()
                    .map(|rk| rk.download(s.buf, [s.rows, s.cols]))
                    .collect::<Result<_, _>>()?,
            })
        };
        let mut grads = Vec::with_capacity(self.ranks.len());
        for rk in &self.ranks {
            let mut per_layer = Vec::with_capacity(self.low.grads.len());
            for per in &self.low.grads {
                per_layer.push(LayerParams::try_from_fn(|k| {
                    per.iter()
                        .find(|(kk, _, _)| *kk == k)
                        .ok_or_else(|| GpuError::Unsupported(format!("no gradient of {k:?}")))
                        .and_then(|(_, b, shape)| rk.download(*b, *shape))
                })?);
            }
            grads.push(per_layer);
        }
        Ok(ProgramRun {
            output: local(self.low.output)?,
            grad_input: local(self.low.grad_input)?,
            grads,
        })
    }
}

/// Runs `plan` (propagated for `cfg`; valid plans only) forward and backward on the GPU,
/// `opts.iters` timed iterations after a warm-up, and compares every tensor with the CPU
/// reference of the same rounded model.
pub fn run_plan(
    cfg: &Config,
    plan: &ShardingPlan,
    opts: &RunOptions,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<PlanGpuRun, GpuError> {
    check_config(cfg)?;
    let program = propagate(cfg, plan);
    // Refused before any device is touched: the launch list needs only the host.
    lower(cfg, &program)?;
    let model = device_model(cfg);
    crate::error::guard("GPU run of a plan", || match cfg.dtype {
        DType::Bf16 => run_plan_typed::<half::bf16>(cfg, &program, &model, opts, progress),
        _ => run_plan_typed::<f32>(cfg, &program, &model, opts, progress),
    })
}

fn run_plan_typed<T: GpuElem>(
    cfg: &Config,
    program: &tplab_engine::block::design::Program,
    model: &Model<f64>,
    opts: &RunOptions,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<PlanGpuRun, GpuError> {
    crate::cuda::require_runtime()?;
    progress("compiling kernels and uploading shards", 0.0);
    let mut trace = tplab_engine::block::design::trace::trace(cfg, program)?;
    let mut ex = PlanExec::<T>::new(cfg, program, model, opts.mode)?;
    let evs = ex.new_events()?;
    if evs.len() != trace.events.len() {
        return Err(GpuError::Unsupported(format!(
            "the launch list stands for {} events, the trace has {}",
            evs.len(),
            trace.events.len()
        )));
    }
    let t0: Vec<CudaEvent> = ex
        .ranks
        .iter()
        .map(|r| r.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)))
        .collect::<Result<_, _>>()?;
    let iters = opts.iters.max(1);
    let mut times = Vec::with_capacity(iters);
    for it in 0..=iters {
        ex.iteration(&evs, &t0)?;
        ex.synchronize()?;
        if it > 0 {
            times.push(timing::read_times(&evs, &t0)?);
        }
        progress("iteration", (it + 1) as f64 / (iters + 1) as f64);
    }
    measured_into(&mut trace, &times);
    let run = ex.results()?;
    let want = tplab_engine::block::reference::run(cfg, model);
    let tolerance = crate::verify::tolerance(cfg, want.layer_norm_condition());
    let checks =
        tplab_engine::block::design::compare_program_run(cfg, program, &run, &want, &tolerance);
    let (devices, mode) = devices_and_mode(&ex.ranks, opts.mode);
    progress("done", 1.0);
    Ok(PlanGpuRun {
        trace,
        run,
        checks,
        tolerance,
        iteration_ms: times.iter().map(|t| t.makespan_ms).collect(),
        devices,
        mode,
    })
}
