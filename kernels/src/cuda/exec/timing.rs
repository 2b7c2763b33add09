//! The iteration in trace order, timed with CUDA events, and the all-reduce sites.

use super::*;

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
    /// The all-reduce site of a collective event.
    pub(super) fn site(&self, op: Op, layer: usize) -> Result<usize, GpuError> {
        match op {
            Op::AttnG => Ok(site_attn(layer)),
            Op::MlpG => Ok(site_mlp(layer)),
            Op::MlpFBwd | Op::AttnFBwd => Ok(site_dxn(self.cfg.layers)),
            other => Err(GpuError::Unsupported(format!(
                "the GPU executor does not know the all-reduce `{other}`"
            ))),
        }
    }

    pub(super) fn site_buf(&self, rank: usize, site: usize) -> Buf {
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

    pub(super) fn new_events(&self, trace: &Trace) -> Result<Vec<EvPair>, GpuError> {
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
    pub(super) fn iteration(
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

    pub(super) fn all_reduce(&mut self, site: usize, ev: &EvPair) -> Result<(), GpuError> {
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

    pub(super) fn synchronize(&self) -> Result<(), GpuError> {
        for rk in &self.ranks {
            rk.stream.synchronize()?;
        }
        if let Collective::Single { stream, .. } = &self.coll {
            stream.synchronize()?;
        }
        Ok(())
    }

    pub(super) fn read_times(
        &self,
        evs: &[EvPair],
        t0: &[CudaEvent],
    ) -> Result<IterTimes, GpuError> {
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
