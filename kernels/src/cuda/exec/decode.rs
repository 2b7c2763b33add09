//! Decode on CUDA (see [`crate::decode`]): the engine's serving decode, step by step, on f32
//! ranks. Per step and rank: the lookup of its vocabulary rows, `embed.g` (all-reduce), the
//! positions, then per layer LayerNorm, QKV, appending K and V to the rank's cache, attention of
//! the new rows over the cache, the out-projection, `attn.g` (all-reduce), bias and residual,
//! LayerNorm, fc1, GeLU, fc2, `mlp.g` (all-reduce), bias and residual; then the final LayerNorm
//! of the last position, its logits over the rank's vocabulary rows and their all-gather.
//! Rank 0's gathered row is read back and sampled on the host by the engine's `serve::sample`.
//!
//! The sequence is not written here: each step walks the engine's program of it
//! (`serve::step_trace`, the events the CPU decoder walks and the cost model prices), one match
//! arm per op, each rank's launches on its own stream.

use super::*;
use crate::decode::{DecodeLayout, DecodeOptions, StepTime};
use std::time::Instant;
use tplab_engine::collectives::Algorithm;
use tplab_engine::labs::serve::{self, Generation, Phase, StepRecord, TinyModel};

/// What the device produced: the generation and each step's measured times.
pub(crate) struct DecodeRun {
    pub(crate) generation: Generation,
    pub(crate) times: Vec<StepTime>,
    pub(crate) devices: Vec<String>,
    pub(crate) mode: String,
}

/// One rank's decode buffers (arena ids of its [`Rank`]).
#[derive(Debug, Clone, Default)]
struct DBufs {
    table: Buf,
    pos: Buf,
    lnf: [Buf; 2],
    /// Per layer, the 12 block shards in `ParamKind::ALL` order.
    w: Vec<[Buf; 12]>,
    kc: Vec<Buf>,
    vc: Vec<Buf>,
    x: Buf,
    x1: Buf,
    xn: Buf,
    qkv: Buf,
    actx: Buf,
    z: Buf,
    a: Buf,
    u: Buf,
    last: Buf,
    zf: Buf,
    logits: Buf,
    gathered: Buf,
    stats: [Buf; 2],
}

struct Decoder {
    lay: DecodeLayout,
    ranks: Vec<Rank<f32>>,
    b: Vec<DBufs>,
    ids: Vec<CudaSlice<i32>>,
    coll: Collective,
    /// One device: address tables of `x`, `z`, and the logits' send and receive buffers.
    tables: Option<[CudaSlice<u64>; 4]>,
    /// Per collective of a step: its timing events.
    coll_evs: Vec<(CudaEvent, CudaEvent)>,
    t0: Vec<CudaEvent>,
    t1: CudaEvent,
}

fn widx(k: ParamKind) -> usize {
    ParamKind::ALL.iter().position(|p| *p == k).unwrap_or(0)
}

/// Which buffer a step's collective works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Site {
    X,
    Z,
    Logits,
}

/// One step of the walk: a compute op on every rank (the program's per-rank events of it), or
/// one collective (with its kind).
#[derive(Debug, Clone)]
struct DecodeStep {
    layer: usize,
    op: Op,
    collective: Option<CollectiveKind>,
}

/// The program's events grouped into [`DecodeStep`]s, in issue order.
fn decode_steps(program: &Trace) -> Vec<DecodeStep> {
    let mut out: Vec<DecodeStep> = Vec::new();
    for e in &program.events {
        let collective = match e.kind {
            EventKind::Collective { kind, .. } => Some(kind),
            EventKind::Compute { .. } => None,
        };
        let same = out.last().is_some_and(|last| {
            collective.is_none()
                && last.collective.is_none()
                && (last.layer, last.op) == (e.layer, e.op)
        });
        if !same {
            out.push(DecodeStep {
                layer: e.layer,
                op: e.op,
                collective,
            });
        }
    }
    out
}

pub(crate) fn decode(
    model: &TinyModel<f64>,
    lay: &DecodeLayout,
    prompt: &[usize],
    opts: &DecodeOptions,
) -> Result<DecodeRun, GpuError> {
    crate::cuda::require_runtime()?;
    crate::error::guard("GPU decode", || {
        let mut dec = Decoder::new(model, lay, opts.mode)?;
        dec.generate(model, prompt, opts)
    })
}

impl Decoder {
    fn new(model: &TinyModel<f64>, lay: &DecodeLayout, mode: DeviceMode) -> Result<Self, GpuError> {
        let tp = lay.tp;
        let cfg = tplab_engine::labs::train::TrainConfig {
            tp,
            ..model.cfg.clone()
        };
        let shards = model.full.shard(&cfg);
        let ctxs = rank_contexts(mode, tp)?;
        let needed = lay.bytes(4);
        check_free(&ctxs, mode, needed)?;
        let (c, h) = (lay.context, lay.h);
        let mut ranks = Vec::with_capacity(tp);
        let mut bufs = Vec::with_capacity(tp);
        let mut ids = Vec::with_capacity(tp);
        for (r, ctx) in ctxs.iter().enumerate() {
            let mut rk = Rank::<f32>::open(ctx)?;
            let sh = &shards[r];
            let mut b = DBufs {
                table: rk.upload(&sh.table)?,
                pos: rk.upload(&sh.pos)?,
                lnf: [rk.upload(&sh.lnf_w)?, rk.upload(&sh.lnf_b)?],
                ..DBufs::default()
            };
            for lp in &sh.layers {
                let mut w = [0; 12];
                for (i, k) in ParamKind::ALL.into_iter().enumerate() {
                    w[i] = rk.upload(lp.get(k))?;
                }
                b.w.push(w);
                b.kc.push(rk.alloc(c * lay.kv_width())?);
                b.vc.push(rk.alloc(c * lay.kv_width())?);
            }
            let hr = lay.hp * lay.d;
            b.x = rk.alloc(c * h)?;
            b.x1 = rk.alloc(c * h)?;
            b.xn = rk.alloc(c * h)?;
            b.qkv = rk.alloc(c * lay.qc)?;
            b.actx = rk.alloc(c * hr)?;
            b.z = rk.alloc(c * h)?;
            b.a = rk.alloc(c * lay.fr)?;
            b.u = rk.alloc(c * lay.fr)?;
            b.last = rk.alloc(h)?;
            b.zf = rk.alloc(h)?;
            b.logits = rk.alloc(lay.vr)?;
            b.gathered = rk.alloc(lay.padded_vocab)?;
            b.stats = [rk.alloc_stats(c)?, rk.alloc_stats(c)?];
            ids.push(rk.stream.alloc_zeros::<i32>(c.max(1))?);
            ranks.push(rk);
            bufs.push(b);
        }
        let coll = match mode {
            DeviceMode::SingleDevice(_) => Collective::Single {
                stream: ctxs[0].new_stream()?,
                ready: (0..tp)
                    .map(|_| ctxs[0].new_event(None))
                    .collect::<Result<_, _>>()?,
            },
            DeviceMode::OneRankPerDevice => Collective::Nccl {
                comms: cudarc::nccl::Comm::from_devices(
                    ranks.iter().map(|r| r.stream.clone()).collect(),
                )?,
            },
        };
        let tables = match &coll {
            Collective::Single { stream, .. } => {
                let t = |f: &dyn Fn(&DBufs) -> Buf| -> Result<CudaSlice<u64>, GpuError> {
                    let a: Vec<u64> = ranks
                        .iter()
                        .zip(&bufs)
                        .map(|(rk, b)| rk.addr(f(b)))
                        .collect();
                    Ok(stream.clone_htod(&a)?)
                };
                let out = [
                    t(&|b| b.x)?,
                    t(&|b| b.z)?,
                    t(&|b| b.logits)?,
                    t(&|b| b.gathered)?,
                ];
                stream.synchronize()?;
                Some(out)
            }
            Collective::Nccl { .. } => None,
        };
        let ev_ctx = &ctxs[0];
        let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
        let n_coll = 2 + 2 * lay.layers;
        let coll_evs = (0..n_coll)
            .map(|_| Ok((ev_ctx.new_event(flags)?, ev_ctx.new_event(flags)?)))
            .collect::<Result<_, GpuError>>()?;
        let t0 = ctxs
            .iter()
            .map(|c| c.new_event(flags))
            .collect::<Result<_, _>>()?;
        let t1 = ev_ctx.new_event(flags)?;
        for rk in &ranks {
            rk.stream.synchronize()?;
        }
        Ok(Self {
            lay: lay.clone(),
            ranks,
            b: bufs,
            ids,
            coll,
            tables,
            coll_evs,
            t0,
            t1,
        })
    }

    /// The stream collectives are timed on: the reducing stream, or rank 0's.
    fn timing_stream(&self) -> Arc<CudaStream> {
        match &self.coll {
            Collective::Single { stream, .. } => stream.clone(),
            Collective::Nccl { .. } => self.ranks[0].stream.clone(),
        }
    }

    /// All-reduce of the first `len` elements of `site` (or the logits' all-gather), timed by
    /// the `i`-th event pair of the step.
    fn collective(&mut self, site: Site, len: usize, i: usize) -> Result<(), GpuError> {
        let (start, end) = &self.coll_evs[i];
        let tp = self.ranks.len();
        match &self.coll {
            Collective::Single { stream, ready } => {
                for (rk, rd) in self.ranks.iter().zip(ready) {
                    rd.record(&rk.stream)?;
                    stream.wait(rd)?;
                }
                start.record(stream)?;
                if let Some(t) = &self.tables {
                    let k = self.ranks[0].k.clone();
                    let p = |s: &CudaSlice<u64>| {
                        let (p, _sync) = s.device_ptr(stream);
                        p
                    };
                    let (n, c) = (KArg::I32(tp as i32), KArg::I64(len as i64));
                    match site {
                        Site::X | Site::Z if tp > 1 => {
                            let tbl = if site == Site::X { &t[0] } else { &t[1] };
                            launch_on(
                                stream,
                                k.get("sum_ranks")?,
                                launch::all_reduce(len),
                                &[KArg::Ptr(p(tbl)), n, c],
                            )?;
                        }
                        Site::X | Site::Z => {}
                        Site::Logits => launch_on(
                            stream,
                            k.get("gather_ranks")?,
                            launch::elementwise(len * tp),
                            &[KArg::Ptr(p(&t[2])), KArg::Ptr(p(&t[3])), n, c],
                        )?,
                    }
                }
                end.record(stream)?;
                for rk in &self.ranks {
                    rk.stream.wait(end)?;
                }
            }
            Collective::Nccl { comms } => {
                start.record(&self.ranks[0].stream)?;
                cudarc::nccl::group_start()?;
                let mut res: Result<(), GpuError> = Ok(());
                for ((rk, b), c) in self.ranks.iter_mut().zip(&self.b).zip(comms) {
                    let out: Result<(), GpuError> = match site {
                        Site::X | Site::Z => {
                            let id = if site == Site::X { b.x } else { b.z };
                            let mut view = rk.bufs[id].slice_mut(0..len);
                            c.all_reduce_in_place(&mut view, &cudarc::nccl::ReduceOp::Sum)
                                .map(|_| ())
                                .map_err(GpuError::from)
                        }
                        Site::Logits => {
                            match super::timing::two(&mut rk.bufs, b.logits, b.gathered) {
                                Ok((s, d)) => {
                                    c.all_gather(s, d).map(|_| ()).map_err(GpuError::from)
                                }
                                Err(e) => Err(e),
                            }
                        }
                    };
                    if let Err(e) = out {
                        res = Err(e);
                        break;
                    }
                }
                cudarc::nccl::group_end()?;
                res?;
                end.record(&self.ranks[0].stream)?;
            }
        }
        Ok(())
    }

    /// The collective of `step` on `site` (`len` elements), of the kind the program names:
    /// nothing for the identity (`f`), else the next timed collective of the step.
    fn collective_step(
        &mut self,
        step: &DecodeStep,
        site: Site,
        len: usize,
        ci: &mut usize,
    ) -> Result<(), GpuError> {
        let want = match site {
            Site::X | Site::Z => CollectiveKind::AllReduce,
            Site::Logits => CollectiveKind::AllGather,
        };
        match step.collective {
            Some(CollectiveKind::Identity) => Ok(()),
            Some(kind) if kind == want && *ci < self.coll_evs.len() => {
                self.collective(site, len, *ci)?;
                *ci += 1;
                Ok(())
            }
            other => Err(GpuError::Unsupported(format!(
                "the GPU decode has no {} for `{}` (collective {} of {})",
                other.map_or("compute op", |k| k.name()),
                step.op,
                *ci + 1,
                self.coll_evs.len()
            ))),
        }
    }

    /// One step: walks `program` (the engine's decode-step program, `serve::step_trace`, for
    /// `ids` at positions `start..`) event by event, one match arm per op, each rank's launches
    /// on its own stream; returns the real logits of the last position and the step's measured
    /// times.
    fn step(
        &mut self,
        program: &Trace,
        ids: &[usize],
        start: usize,
    ) -> Result<(Vec<f64>, StepTime), GpuError> {
        let wall = Instant::now();
        let lay = self.lay.clone();
        let (n, h, qc, fr) = (ids.len(), lay.h, lay.qc, lay.fr);
        let hr = lay.hp * lay.d;
        let kw = lay.kv_width();
        if start + n > lay.context {
            return Err(GpuError::Unsupported(format!(
                "position {} is past the model's context of {}",
                start + n,
                lay.context
            )));
        }
        let host_ids: Vec<i32> = ids.iter().map(|&i| i as i32).collect();
        // A common origin on one device; on several each rank's own.
        match &self.coll {
            Collective::Single { .. } => {
                self.t0[0].record(&self.ranks[0].stream)?;
                for rk in &self.ranks[1..] {
                    rk.stream.wait(&self.t0[0])?;
                }
            }
            Collective::Nccl { .. } => {
                for (rk, ev) in self.ranks.iter().zip(&self.t0) {
                    ev.record(&rk.stream)?;
                }
            }
        }
        use ParamKind as P;
        let scale = 1.0 / (lay.d as f32).sqrt();
        let attn = launch::cached_attention(n, lay.hp, start + n).map_err(GpuError::Unsupported)?;
        let mut ci = 0;
        for step in decode_steps(program) {
            let l = step.layer;
            if l >= lay.layers {
                return Err(GpuError::Unsupported(format!(
                    "the decode program's `{}` is on layer {l} of {}",
                    step.op, lay.layers
                )));
            }
            let w = |b: &DBufs, k: P| b.w[l][widx(k)];
            match step.op {
                // Each rank its vocabulary rows (zeros for ids it does not hold).
                Op::EmbedLookup => {
                    for (r, (rk, b)) in self.ranks.iter().zip(&self.b).enumerate() {
                        rk.stream.memcpy_htod(&host_ids, &mut self.ids[r])?;
                        let (pid, _sync) = self.ids[r].device_ptr(&rk.stream);
                        rk.embed(Embed::Lookup, pid, b.table, b.x, n, h, r * lay.vr, lay.vr)?;
                    }
                }
                Op::EmbedG => self.collective_step(&step, Site::X, n * h, &mut ci)?,
                Op::PosEmbed => {
                    for (rk, b) in self.ranks.iter().zip(&self.b) {
                        rk.launch(
                            "add_inplace",
                            launch::elementwise(n * h),
                            &[
                                KArg::Ptr(rk.addr(b.x)),
                                KArg::Ptr(rk.addr(b.pos) + (start * h * 4) as u64),
                                KArg::I64((n * h) as i64),
                            ],
                        )?;
                    }
                }
                Op::Ln1 | Op::Ln2 => {
                    for (rk, b) in self.ranks.iter().zip(&self.b) {
                        let (x, lw, lb) = if step.op == Op::Ln1 {
                            (b.x, P::Ln1Weight, P::Ln1Bias)
                        } else {
                            (b.x1, P::Ln2Weight, P::Ln2Bias)
                        };
                        rk.ln_fwd(x, w(b, lw), w(b, lb), b.xn, b.stats[0], b.stats[1], n, h)?;
                    }
                }
                // `f`: the identity forward.
                Op::AttnF | Op::MlpF => self.collective_step(&step, Site::X, n * h, &mut ci)?,
                Op::Qkv => {
                    for (rk, b) in self.ranks.iter().zip(&self.b) {
                        let (cw, cb) = (w(b, P::QkvWeight), w(b, P::QkvBias));
                        rk.linear(b.xn, cw, Some(cb), b.qkv, n, h, qc)?;
                    }
                }
                Op::KvAppend => {
                    for (rk, b) in self.ranks.iter().zip(&self.b) {
                        rk.launch(
                            "kv_append",
                            launch::elementwise(n * kw),
                            &[
                                KArg::Ptr(rk.addr(b.qkv)),
                                KArg::Ptr(rk.addr(b.kc[l])),
                                KArg::Ptr(rk.addr(b.vc[l])),
                                KArg::I32(n as i32),
                                KArg::I32(qc as i32),
                                KArg::I32(hr as i32),
                                KArg::I32(kw as i32),
                                KArg::I32(start as i32),
                            ],
                        )?;
                    }
                }
                Op::AttnCore => {
                    for (rk, b) in self.ranks.iter().zip(&self.b) {
                        rk.launch(
                            "cached_attention",
                            attn,
                            &[
                                KArg::Ptr(rk.addr(b.qkv)),
                                KArg::Ptr(rk.addr(b.kc[l])),
                                KArg::Ptr(rk.addr(b.vc[l])),
                                KArg::Ptr(rk.addr(b.actx)),
                                KArg::I32(lay.hp as i32),
                                KArg::I32(lay.kvp as i32),
                                KArg::I32(lay.d as i32),
                                KArg::I32(qc as i32),
                                KArg::I32(start as i32),
                                KArg::F32(scale),
                            ],
                        )?;
                    }
                }
                Op::AttnOut => {
                    for (rk, b) in self.ranks.iter().zip(&self.b) {
                        rk.linear(b.actx, w(b, P::OutWeight), None, b.z, n, hr, h)?;
                    }
                }
                // `g`: the all-reduce of the row-parallel partial sums.
                Op::AttnG | Op::MlpG => self.collective_step(&step, Site::Z, n * h, &mut ci)?,
                Op::AttnBiasResidual => {
                    for (rk, b) in self.ranks.iter().zip(&self.b) {
                        rk.bias_residual(b.x, b.z, w(b, P::OutBias), b.x1, n, h)?;
                    }
                }
                Op::Fc1 => {
                    for (rk, b) in self.ranks.iter().zip(&self.b) {
                        let (cw, cb) = (w(b, P::Fc1Weight), w(b, P::Fc1Bias));
                        rk.linear(b.xn, cw, Some(cb), b.a, n, h, fr)?;
                    }
                }
                Op::Gelu => {
                    for (rk, b) in self.ranks.iter().zip(&self.b) {
                        rk.gelu(b.a, b.u, n * fr)?;
                    }
                }
                Op::Fc2 => {
                    for (rk, b) in self.ranks.iter().zip(&self.b) {
                        rk.linear(b.u, w(b, P::Fc2Weight), None, b.z, n, fr, h)?;
                    }
                }
                Op::MlpBiasResidual => {
                    for (rk, b) in self.ranks.iter().zip(&self.b) {
                        rk.bias_residual(b.x1, b.z, w(b, P::Fc2Bias), b.x, n, h)?;
                    }
                }
                // The head runs on the last position only.
                Op::FinalLn => {
                    for (rk, b) in self.ranks.iter().zip(&self.b) {
                        // SAFETY: `x` holds at least n rows of h f32 values, `last` h of them.
                        unsafe {
                            cudarc::driver::result::memcpy_dtod_async(
                                rk.addr(b.last),
                                rk.addr(b.x) + ((n - 1) * h * 4) as u64,
                                h * 4,
                                rk.stream.cu_stream(),
                            )
                        }?;
                        rk.ln_fwd(
                            b.last, b.lnf[0], b.lnf[1], b.zf, b.stats[0], b.stats[1], 1, h,
                        )?;
                    }
                }
                Op::LmHead => {
                    for (rk, b) in self.ranks.iter().zip(&self.b) {
                        rk.gemm(
                            &RowGemm::plain(1, lay.vr, h, false, true),
                            (b.zf, 0),
                            (b.table, 0),
                            (b.logits, 0),
                        )?;
                    }
                }
                Op::LogitsGather => self.collective_step(&step, Site::Logits, lay.vr, &mut ci)?,
                // Training's ops and a learner's plan's moves are not in the decode program.
                other => {
                    return Err(GpuError::Unsupported(format!(
                        "`{other}` ({}) is not an op of the decode step",
                        other.label()
                    )))
                }
            }
        }
        let ts = self.timing_stream();
        self.t1.record(&ts)?;
        self.t1.synchronize()?;
        let gathered: Vec<f32> = self.ranks[0]
            .stream
            .clone_dtoh(&self.ranks[0].bufs[self.b[0].gathered])?;
        let logits = lay.real_logits(&gathered);
        let device_ms = f64::from(self.t0[0].elapsed_ms(&self.t1)?);
        let mut collective_ms = 0.0;
        for (s, e) in &self.coll_evs[..ci] {
            collective_ms += f64::from(s.elapsed_ms(e)?).max(0.0);
        }
        Ok((
            logits,
            StepTime {
                device_ms,
                collective_ms,
                wall_ms: wall.elapsed().as_secs_f64() * 1e3,
                predicted_ms: 0.0,
                predicted_collective_ms: 0.0,
            },
        ))
    }

    fn generate(
        &mut self,
        model: &TinyModel<f64>,
        prompt: &[usize],
        opts: &DecodeOptions,
    ) -> Result<DecodeRun, GpuError> {
        let mut next = prompt.to_vec();
        let mut len = 0;
        let mut tokens = Vec::with_capacity(opts.tokens);
        let mut steps = Vec::with_capacity(opts.tokens);
        let mut times = Vec::with_capacity(opts.tokens);
        for i in 0..opts.tokens {
            // The step's program: what this walk runs, and what the cost model prices.
            let program = serve::step_trace(
                model,
                self.lay.tp,
                Algorithm::Ring,
                next.len(),
                len + next.len(),
            );
            let (logits, time) = self.step(&program, &next, len)?;
            let token = tplab_engine::labs::serve::sample(&logits, opts.sampling, i);
            let position = len;
            len += next.len();
            steps.push(StepRecord {
                phase: Phase::of_step(i),
                position,
                new_tokens: next.len(),
                logits,
                token,
                compute_s: (time.device_ms - time.collective_ms).max(0.0) * 1e-3,
                collective_s: time.collective_ms * 1e-3,
                kv_cache_bytes_per_rank: vec![self.lay.kv_cache_bytes(len, 4); self.lay.tp],
            });
            times.push(time);
            tokens.push(token);
            next = vec![token];
        }
        let devices = {
            let mut d: Vec<String> = self
                .ranks
                .iter()
                .map(|r| r.ctx.name().unwrap_or_else(|_| "unknown GPU".into()))
                .collect();
            if matches!(self.coll, Collective::Single { .. }) {
                d.truncate(1);
            }
            d
        };
        let mode = match opts.mode {
            DeviceMode::SingleDevice(o) => {
                format!(
                    "single device (GPU {o}), {} ranks as CUDA streams",
                    self.lay.tp
                )
            }
            DeviceMode::OneRankPerDevice => {
                format!("{} devices, one rank each, NCCL collectives", self.lay.tp)
            }
        };
        Ok(DecodeRun {
            generation: Generation {
                tp: self.lay.tp,
                text: model.decode(&tokens),
                prompt: prompt.to_vec(),
                tokens,
                steps,
            },
            times,
            devices,
            mode,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk's steps are the program's ops in order, one per op and layer, and its timed
    /// collectives (all but the identity `f`s) are the ones `Decoder::new` allocates events for:
    /// the embedding's all-reduce, two per layer and the logits' gather.
    #[test]
    fn the_walk_follows_the_decode_program() {
        for kv in [None, Some(2), Some(1)] {
            let cfg = serve::tiny_serving_config(kv, tplab_engine::dtype::DType::F64);
            let m = TinyModel::<f64>::random(&cfg);
            for tp in [1, 2, 4] {
                let lay = DecodeLayout::new(&m, tp).unwrap_or_else(|e| panic!("{e}"));
                for (n, ctx) in [(7, 7), (1, 12)] {
                    let program = serve::step_trace(&m, tp, Algorithm::Ring, n, ctx);
                    let steps = decode_steps(&program);
                    let mut ops: Vec<(usize, Op)> =
                        program.events.iter().map(|e| (e.layer, e.op)).collect();
                    ops.dedup();
                    let walked: Vec<(usize, Op)> = steps.iter().map(|s| (s.layer, s.op)).collect();
                    assert_eq!(walked, ops);
                    let timed = steps
                        .iter()
                        .filter(|s| s.collective.is_some_and(|k| k != CollectiveKind::Identity))
                        .count();
                    assert_eq!(timed, 2 + 2 * lay.layers);
                    let appends = steps.iter().filter(|s| s.op == Op::KvAppend).count();
                    assert_eq!(appends, lay.layers);
                }
            }
        }
    }
}
