//! The vocabulary-parallel pass on CUDA (see [`crate::vocab`]), f32, walking the engine's
//! `vocab::events` in order and filling each event's measured time.

use super::*;
use crate::vocab::{VBuf, VocabLayout, VocabOutputs};
use ndarray::Array1;
use tplab_engine::collectives::ReduceOp;
use tplab_engine::labs::vocab::{self as ev, VocabConfig, VocabModel};
use tplab_engine::trace::Event;

struct VRank {
    rk: Rank<f32>,
    bufs: HashMap<VBuf, Buf>,
    ids: CudaSlice<i32>,
    targets: CudaSlice<i32>,
}

impl VRank {
    fn b(&self, v: VBuf) -> Buf {
        self.bufs.get(&v).copied().unwrap_or(usize::MAX)
    }
    fn a(&self, v: VBuf) -> u64 {
        self.rk.addr(self.b(v))
    }
    fn int_addr(&self, targets: bool) -> u64 {
        let s = if targets { &self.targets } else { &self.ids };
        let (p, _sync) = s.device_ptr(&self.rk.stream);
        p
    }
}

pub(crate) fn vocab_run(
    cfg: &VocabConfig,
    m: &VocabModel<f64>,
    mode: DeviceMode,
    events: &mut [Event],
) -> Result<VocabOutputs, GpuError> {
    crate::cuda::require_runtime()?;
    crate::error::guard("GPU vocabulary pass", || run_inner(cfg, m, mode, events))
}

fn run_inner(
    cfg: &VocabConfig,
    m: &VocabModel<f64>,
    mode: DeviceMode,
    events: &mut [Event],
) -> Result<VocabOutputs, GpuError> {
    let lay = VocabLayout::new(cfg);
    let tp = lay.tp;
    let ctxs = rank_contexts(mode, tp)?;
    check_free(&ctxs, mode, lay.bytes())?;
    let ids: Vec<i32> = m.ids.iter().map(|&i| i as i32).collect();
    let targets: Vec<i32> = m.targets.iter().map(|&i| i as i32).collect();
    let mut ranks = Vec::with_capacity(tp);
    for (r, ctx) in ctxs.iter().enumerate() {
        let mut rk = Rank::<f32>::open(ctx)?;
        let mut bufs = HashMap::new();
        for b in VocabLayout::BUFFERS {
            let id = match b {
                VBuf::Table => rk.upload(&ev::shard_table(cfg, m.embedding.view(), r))?,
                VBuf::Ids | VBuf::Targets => continue,
                other => rk.alloc(lay.len(other))?,
            };
            bufs.insert(b, id);
        }
        ranks.push(VRank {
            ids: rk.stream.clone_htod(&ids)?,
            targets: rk.stream.clone_htod(&targets)?,
            rk,
            bufs,
        });
    }
    let single = matches!(mode, DeviceMode::SingleDevice(_));
    let cstream = ctxs[0].new_stream()?;
    let ready: Vec<CudaEvent> = (0..tp)
        .map(|_| ctxs[0].new_event(None))
        .collect::<Result<_, _>>()?;
    let comms = if single {
        None
    } else {
        Some(cudarc::nccl::Comm::from_devices(
            ranks.iter().map(|r| r.rk.stream.clone()).collect(),
        )?)
    };
    // Address tables of every reduced buffer (one device).
    let mut tables: HashMap<VBuf, CudaSlice<u64>> = HashMap::new();
    if single {
        for b in [VBuf::E, VBuf::Max, VBuf::Sum, VBuf::Target, VBuf::DE] {
            let a: Vec<u64> = ranks.iter().map(|r| r.a(b)).collect();
            tables.insert(b, cstream.clone_htod(&a)?);
        }
        cstream.synchronize()?;
    }
    for r in &ranks {
        r.rk.stream.synchronize()?;
    }
    let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let pairs: Vec<(CudaEvent, CudaEvent, usize)> = events
        .iter()
        .map(|e| {
            let r = e.ranks.first().copied().unwrap_or(0);
            let c = if single { &ctxs[0] } else { &ctxs[r] };
            Ok((
                c.new_event(flags)?,
                c.new_event(flags)?,
                if single { 0 } else { r },
            ))
        })
        .collect::<Result<_, GpuError>>()?;
    let t0: Vec<CudaEvent> = ctxs
        .iter()
        .map(|c| c.new_event(flags))
        .collect::<Result<_, _>>()?;
    if single {
        t0[0].record(&ranks[0].rk.stream)?;
        for r in &ranks[1..] {
            r.rk.stream.wait(&t0[0])?;
        }
    } else {
        for (r, e) in ranks.iter().zip(&t0) {
            e.record(&r.rk.stream)?;
        }
    }
    let (t, h, vr) = (lay.t, lay.h, lay.vr);
    let inv_t = 1.0 / t as f32;
    for (e, (start, end, _)) in events.iter().zip(&pairs) {
        if let Some(c) = VocabLayout::collective(e.op) {
            // Before the reduction: keep the rank's maximum; rescale the sum to the global one.
            for (r, vrk) in ranks.iter().enumerate() {
                let s = &vrk.rk.stream;
                match e.op {
                    Op::CeMax => {
                        // SAFETY: both buffers hold t f32 values on this device.
                        unsafe {
                            cudarc::driver::result::memcpy_dtod_async(
                                vrk.a(VBuf::LocalMax),
                                vrk.a(VBuf::Max),
                                t * 4,
                                s.cu_stream(),
                            )
                        }?;
                    }
                    Op::CeSumExp => vrk.rk.launch(
                        "ce_rescale",
                        launch::elementwise(t),
                        &[
                            KArg::Ptr(vrk.a(VBuf::Sum)),
                            KArg::Ptr(vrk.a(VBuf::LocalMax)),
                            KArg::Ptr(vrk.a(VBuf::Max)),
                            KArg::I32(t as i32),
                        ],
                    )?,
                    _ => {}
                }
                if single {
                    ready[r].record(s)?;
                    cstream.wait(&ready[r])?;
                }
            }
            let len = lay.len(c.buf);
            if single {
                start.record(&cstream)?;
                if tp > 1 {
                    let tbl = tables.get(&c.buf).ok_or_else(|| {
                        GpuError::Unsupported(format!("no address table for {:?}", c.buf))
                    })?;
                    let (p, _sync) = tbl.device_ptr(&cstream);
                    let name = if c.op == ReduceOp::Max {
                        "max_ranks"
                    } else {
                        "sum_ranks"
                    };
                    let l = if c.op == ReduceOp::Max {
                        launch::elementwise(len)
                    } else {
                        launch::all_reduce(len)
                    };
                    launch_on(
                        &cstream,
                        ranks[0].rk.k.get(name)?,
                        l,
                        &[KArg::Ptr(p), KArg::I32(tp as i32), KArg::I64(len as i64)],
                    )?;
                }
                end.record(&cstream)?;
                for r in &ranks {
                    r.rk.stream.wait(end)?;
                }
            } else if let Some(comms) = &comms {
                let op = if c.op == ReduceOp::Max {
                    cudarc::nccl::ReduceOp::Max
                } else {
                    cudarc::nccl::ReduceOp::Sum
                };
                start.record(&ranks[0].rk.stream)?;
                cudarc::nccl::group_start()?;
                let mut res = Ok(());
                for (vrk, comm) in ranks.iter_mut().zip(comms) {
                    let b = vrk.b(c.buf);
                    if let Err(err) = comm.all_reduce_in_place(&mut vrk.rk.bufs[b], &op) {
                        res = Err(err);
                        break;
                    }
                }
                cudarc::nccl::group_end()?;
                res?;
                end.record(&ranks[0].rk.stream)?;
            }
            continue;
        }
        let r = e.ranks.first().copied().unwrap_or(0);
        let v = &ranks[r];
        let rk = &v.rk;
        let real = cfg.real_range(r).len();
        let row0 = cfg.rank_range(r).start;
        // The embedding's lookup (table rows to E) and its gradient (dE rows into the table's).
        let embed = |kernel, src, dst| {
            let ids = v.int_addr(false);
            rk.embed(kernel, ids, v.b(src), v.b(dst), t, h, row0, vr)
        };
        start.record(&rk.stream)?;
        match e.op {
            Op::EmbedLookup => embed(Embed::Lookup, VBuf::Table, VBuf::E)?,
            Op::LmHead => rk.gemm(
                &RowGemm::plain(t, vr, h, false, true),
                (v.b(VBuf::E), 0),
                (v.b(VBuf::Table), 0),
                (v.b(VBuf::Logits), 0),
            )?,
            Op::CeLocal => rk.launch(
                "ce_local",
                launch::per_row(t, vr),
                &[
                    KArg::Ptr(v.a(VBuf::Logits)),
                    KArg::Ptr(v.int_addr(true)),
                    KArg::Ptr(v.a(VBuf::Max)),
                    KArg::Ptr(v.a(VBuf::Sum)),
                    KArg::Ptr(v.a(VBuf::Target)),
                    KArg::I32(vr as i32),
                    KArg::I32(real as i32),
                    KArg::I32(row0 as i32),
                ],
            )?,
            Op::CeBwd => rk.launch(
                "ce_bwd",
                launch::elementwise(t * vr),
                &[
                    KArg::Ptr(v.a(VBuf::Logits)),
                    KArg::Ptr(v.a(VBuf::Max)),
                    KArg::Ptr(v.a(VBuf::Sum)),
                    KArg::Ptr(v.int_addr(true)),
                    KArg::Ptr(v.a(VBuf::DLogits)),
                    KArg::I32(t as i32),
                    KArg::I32(vr as i32),
                    KArg::I32(real as i32),
                    KArg::I32(row0 as i32),
                    KArg::F32(inv_t),
                ],
            )?,
            Op::LmHeadBwd => {
                rk.gemm(
                    &RowGemm::plain(t, h, vr, false, false),
                    (v.b(VBuf::DLogits), 0),
                    (v.b(VBuf::Table), 0),
                    (v.b(VBuf::DE), 0),
                )?;
                rk.gemm(
                    &RowGemm::plain(vr, h, t, true, false),
                    (v.b(VBuf::DLogits), 0),
                    (v.b(VBuf::E), 0),
                    (v.b(VBuf::Grad), 0),
                )?;
            }
            Op::EmbedBwd => embed(Embed::ScatterAdd, VBuf::DE, VBuf::Grad)?,
            other => {
                return Err(GpuError::Unsupported(format!(
                    "the GPU vocabulary pass has no kernel for `{other}` ({})",
                    other.label()
                )))
            }
        }
        end.record(&rk.stream)?;
    }
    cstream.synchronize()?;
    for r in &ranks {
        r.rk.stream.synchronize()?;
    }
    for (e, (start, end, clock)) in events.iter_mut().zip(&pairs) {
        let s = f64::from(t0[*clock].elapsed_ms(start)?);
        let d = f64::from(start.elapsed_ms(end)?).max(0.0);
        e.measured = Some(Timing {
            start_s: s * 1e-3,
            duration_s: d * 1e-3,
        });
    }
    let dl = |v: &VRank, b: VBuf| v.rk.download(v.b(b), lay.shape(b));
    let r0 = &ranks[0];
    let (mx, sum, tg) = (
        dl(r0, VBuf::Max)?,
        dl(r0, VBuf::Sum)?,
        dl(r0, VBuf::Target)?,
    );
    let losses = Array1::from_shape_fn(t, |i| sum[(0, i)].ln() - (tg[(0, i)] - mx[(0, i)]));
    let loss = losses.sum() / t as f64;
    let mut logits = Vec::new();
    let mut grads = Vec::new();
    for v in &ranks {
        logits.push(dl(v, VBuf::Logits)?);
        grads.push(dl(v, VBuf::Grad)?);
    }
    Ok(VocabOutputs {
        embedded: dl(r0, VBuf::E)?,
        losses,
        loss,
        logits,
        grad_embedding: grads,
    })
}
