//! The iteration in trace order, timed with CUDA events, and the all-reduce sites.

use super::*;

/// A buffer to read and a different one to write, from one arena.
pub(super) fn two<T>(bufs: &mut [T], read: usize, write: usize) -> Result<(&T, &mut T), GpuError> {
    if read == write || read >= bufs.len() || write >= bufs.len() {
        return Err(GpuError::Unsupported(format!(
            "a collective needs two distinct buffers (got {read} and {write})"
        )));
    }
    if read < write {
        let (a, b) = bufs.split_at_mut(write);
        Ok((&a[read], &mut b[0]))
    } else {
        let (a, b) = bufs.split_at_mut(read);
        Ok((&b[0], &mut a[write]))
    }
}

/// Timing events of one trace event.
pub(super) struct EvPair {
    pub(super) start: CudaEvent,
    pub(super) end: CudaEvent,
    /// Index of the device clock (`t0`) the pair is read against.
    pub(super) clock: usize,
}

/// Measured (start, duration) in ms per trace event for one iteration, plus its makespan.
pub(super) struct IterTimes {
    pub(super) events: Vec<(f64, f64)>,
    pub(super) makespan_ms: f64,
}

impl<T: GpuElem> Exec<T> {
    pub(super) fn new_events(&self, trace: &Trace) -> Result<Vec<EvPair>, GpuError> {
        let single = matches!(self.coll, Collective::Single { .. });
        trace
            .events
            .iter()
            .map(|e| {
                // Compute: the rank's stream; a collective: the reducing stream on one device,
                // else the stream of the group's first rank.
                let r = e.ranks.first().copied().unwrap_or(0);
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

    /// One forward and backward pass in trace order.
    pub(super) fn iteration(
        &mut self,
        trace: &Trace,
        evs: &[EvPair],
        t0: &[CudaEvent],
    ) -> Result<(), GpuError> {
        origin(&self.ranks, &self.coll, t0)?;
        for (i, (e, ev)) in trace.events.iter().zip(evs).enumerate() {
            match &e.kind {
                EventKind::Compute { .. } => {
                    let r = e.ranks[0];
                    let rk = &self.ranks[r];
                    ev.start.record(&rk.stream)?;
                    rk.compute(e.op, e.layer, &self.lay, &self.attn)?;
                    ev.end.record(&rk.stream)?;
                }
                EventKind::Collective { .. } => self.collective(i, ev)?,
            }
        }
        Ok(())
    }

    /// The collective of trace event `i`: packs, moves, unpacks.
    pub(super) fn collective(&mut self, i: usize, ev: &EvPair) -> Result<(), GpuError> {
        let Some(Some(ec)) = self.events.get(i) else {
            return Err(GpuError::Unsupported(format!(
                "trace event {i} has no collective plan"
            )));
        };
        let plan = ec.plan;
        let group = ec.ranks.clone();
        if plan.kind == CollectiveKind::Identity {
            // No communication: a zero-length mark on the group's first stream (a stream that
            // is always part of the walk, so that a graph capture contains the mark too).
            let s = self.ranks[group[0]].stream.clone();
            ev.start.record(&s)?;
            ev.end.record(&s)?;
            return Ok(());
        }
        if let Some(p) = plan.pack {
            for &r in &group {
                self.ranks[r].pack_grads(p, &self.lay, false)?;
            }
        }
        let n = group.len();
        match &self.coll {
            Collective::Single { stream, ready } => {
                for &r in &group {
                    ready[r].record(&self.ranks[r].stream)?;
                    stream.wait(&ready[r])?;
                }
                ev.start.record(stream)?;
                if let Some((send, recv)) = &ec.tables {
                    let (ps, _s) = send.device_ptr(stream);
                    let (pr, _r) = recv.device_ptr(stream);
                    let k = &self.ranks[0].k;
                    let c = plan.count;
                    let (ni, ci) = (KArg::I32(n as i32), KArg::I64(c as i64));
                    let (name, l, args) = match plan.kind {
                        CollectiveKind::AllGather => (
                            "gather_ranks",
                            launch::elementwise(c * n),
                            vec![KArg::Ptr(ps), KArg::Ptr(pr), ni, ci],
                        ),
                        CollectiveKind::ReduceScatter => (
                            "scatter_sum_ranks",
                            launch::elementwise(c * n),
                            vec![KArg::Ptr(ps), KArg::Ptr(pr), ni, ci],
                        ),
                        // An all-reduce sums in place (send and receive are the same buffers).
                        _ => (
                            "sum_ranks",
                            launch::all_reduce(c),
                            vec![KArg::Ptr(ps), ni, ci],
                        ),
                    };
                    // One rank's all-reduce is the identity; a gather or scatter still copies.
                    if n > 1 || plan.kind != CollectiveKind::AllReduce {
                        launch_on(stream, k.get(name)?, l, &args)?;
                    }
                }
                ev.end.record(stream)?;
                for &r in &group {
                    self.ranks[r].stream.wait(&ev.end)?;
                }
            }
            Collective::Nccl { comms } => {
                let comms: &[cudarc::nccl::Comm] = match &ec.comms {
                    Some(c) => c,
                    None => comms,
                };
                let first = self.ranks[group[0]].stream.clone();
                ev.start.record(&first)?;
                cudarc::nccl::group_start()?;
                let mut res = Ok(());
                for (&r, c) in group.iter().zip(comms.iter()) {
                    let rk = &mut self.ranks[r];
                    let (s, d) = (rk.buf(plan.send), rk.buf(plan.recv));
                    let out = match plan.kind {
                        CollectiveKind::AllGather => {
                            let (src, dst) = two(&mut rk.bufs, s, d)?;
                            c.all_gather(src, dst).map(|_| ())
                        }
                        CollectiveKind::ReduceScatter => {
                            let (src, dst) = two(&mut rk.bufs, s, d)?;
                            c.reduce_scatter(src, dst, &cudarc::nccl::ReduceOp::Sum)
                                .map(|_| ())
                        }
                        _ => c
                            .all_reduce_in_place(&mut rk.bufs[s], &cudarc::nccl::ReduceOp::Sum)
                            .map(|_| ()),
                    };
                    if let Err(e) = out {
                        res = Err(e);
                        break;
                    }
                }
                cudarc::nccl::group_end()?;
                res?;
                ev.end.record(&first)?;
            }
        }
        if let Some(p) = plan.pack {
            for &r in &group {
                self.ranks[r].pack_grads(p, &self.lay, true)?;
            }
        }
        Ok(())
    }

    /// Makes `origin` wait for every other stream's work so far (ranks and the reducing
    /// stream): the join of a graph capture, and the end of a back-to-back timed step.
    pub(super) fn join(
        &self,
        origin: &Arc<CudaStream>,
        joins: &[CudaEvent],
    ) -> Result<(), GpuError> {
        let mut others: Vec<&Arc<CudaStream>> = self.ranks[1..].iter().map(|r| &r.stream).collect();
        if let Collective::Single { stream, .. } = &self.coll {
            others.push(stream);
        }
        for (s, e) in others.into_iter().zip(joins) {
            e.record(s)?;
            origin.wait(e)?;
        }
        Ok(())
    }

    pub(super) fn synchronize(&self) -> Result<(), GpuError> {
        synchronize(&self.ranks, &self.coll)
    }

    pub(super) fn read_times(
        &self,
        evs: &[EvPair],
        t0: &[CudaEvent],
    ) -> Result<IterTimes, GpuError> {
        read_times(evs, t0)
    }
}

/// A common origin for an iteration's times: on one device every rank starts after `t0[0]`;
/// on several, each rank's clock `t0[r]` is recorded on its stream.
pub(super) fn origin<T: GpuElem>(
    ranks: &[Rank<T>],
    coll: &Collective,
    t0: &[CudaEvent],
) -> Result<(), GpuError> {
    if matches!(coll, Collective::Single { .. }) {
        t0[0].record(&ranks[0].stream)?;
        for rk in &ranks[1..] {
            rk.stream.wait(&t0[0])?;
        }
    } else {
        for (rk, ev) in ranks.iter().zip(t0) {
            ev.record(&rk.stream)?;
        }
    }
    Ok(())
}

/// Waits for every rank's stream and the reducing stream.
pub(super) fn synchronize<T: GpuElem>(
    ranks: &[Rank<T>],
    coll: &Collective,
) -> Result<(), GpuError> {
    for rk in ranks {
        rk.stream.synchronize()?;
    }
    if let Collective::Single { stream, .. } = coll {
        stream.synchronize()?;
    }
    Ok(())
}

/// Each event's (start against its rank's origin `t0`, duration) in ms, and the makespan.
pub(super) fn read_times(evs: &[EvPair], t0: &[CudaEvent]) -> Result<IterTimes, GpuError> {
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
