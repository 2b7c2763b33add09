//! The lowered launch lists run on the CPU, in f64, with cuBLAS's product semantics
//! (`layout::tests::row_gemm_via_cublas`) and each kernel's formula as `src/cu/*.cu` writes it,
//! against the unsharded reference (`tplab_engine::block::reference`) through the engine's own
//! comparison. What this cannot check is the GPU itself: that each launch does what its formula
//! here says (the kernels' hardware record is in docs/gpu.md).

#![allow(clippy::needless_range_loop)] // buffers are indexed as the kernels index them

use super::*;
use crate::layout::tests::row_gemm_via_cublas;
use ndarray::Array2;
use tplab_engine::block::design::program::propagate;
use tplab_engine::block::design::{NamedPlan, ShardingPlan};
use tplab_engine::block::exec::design::{shard_model, Local, ProgramRun};
use tplab_engine::block::ops::LN_EPS;
use tplab_engine::block::verify::Tolerance;
use tplab_engine::config::Preset;
use tplab_engine::params::{LayerParams, Model};

/// Every rank's buffers, as a device would hold them.
struct Cpu {
    bufs: Vec<Vec<Vec<f64>>>,
    stats: Vec<Vec<Vec<f64>>>,
}

fn part(cfg: &Config, full: &Array2<f64>, place: Place, r: usize) -> Vec<f64> {
    local_part(cfg, full, place, r).iter().copied().collect()
}

const GELU_K0: f64 = 0.797_884_560_802_865_4;
const GELU_K1: f64 = 0.044715;

impl Cpu {
    fn new(cfg: &Config, program: &Program, low: &Lowered, model: &Model<f64>) -> Self {
        let shards = shard_model(cfg, program, model);
        let bufs = (0..low.tp)
            .map(|r| {
                low.bufs
                    .iter()
                    .map(|b| {
                        let v = match b.init {
                            Init::Zero => vec![0.0; b.len],
                            Init::Input(p) => part(cfg, &model.input, p, r),
                            Init::GradOutput(p) => part(cfg, &model.grad_output, p, r),
                            Init::Param { layer, kind } => {
                                shards[r][layer].get(kind).iter().copied().collect()
                            }
                        };
                        assert_eq!(v.len().max(1), b.len, "{:?}", b.init);
                        v
                    })
                    .collect()
            })
            .collect();
        let stats = (0..low.tp)
            .map(|_| low.stats.iter().map(|n| vec![0.0; *n]).collect())
            .collect();
        Self { bufs, stats }
    }

    fn run(&mut self, low: &Lowered) {
        for b in &low.blocks {
            for ins in &b.instrs {
                if ins.is_collective() {
                    self.collective(ins, &b.ranks);
                } else {
                    for &r in &b.ranks {
                        self.local(ins, r);
                    }
                }
            }
        }
    }

    fn collective(&mut self, ins: &Instr, ranks: &[usize]) {
        let n = ranks.len();
        match *ins {
            Instr::AllReduce { buf, len } => {
                let mut sum = vec![0.0; len];
                for &r in ranks {
                    for (s, v) in sum.iter_mut().zip(&self.bufs[r][buf][..len]) {
                        *s += v;
                    }
                }
                for &r in ranks {
                    self.bufs[r][buf][..len].copy_from_slice(&sum);
                }
            }
            Instr::AllGather { send, recv, part } => {
                let parts: Vec<Vec<f64>> = ranks
                    .iter()
                    .map(|&r| self.bufs[r][send][..part].to_vec())
                    .collect();
                for &r in ranks {
                    for (s, p) in parts.iter().enumerate() {
                        self.bufs[r][recv][s * part..(s + 1) * part].copy_from_slice(p);
                    }
                }
            }
            Instr::ReduceScatter { send, recv, part } => {
                for (o, &ro) in ranks.iter().enumerate() {
                    let mut sum = vec![0.0; part];
                    for &r in ranks {
                        for (s, v) in sum.iter_mut().zip(&self.bufs[r][send][o * part..]) {
                            *s += v;
                        }
                    }
                    self.bufs[ro][recv][..part].copy_from_slice(&sum);
                }
            }
            Instr::AllToAll { send, recv, part } => {
                let sent: Vec<Vec<f64>> = ranks
                    .iter()
                    .map(|&r| self.bufs[r][send][..n * part].to_vec())
                    .collect();
                for (o, &ro) in ranks.iter().enumerate() {
                    for (s, from) in sent.iter().enumerate() {
                        self.bufs[ro][recv][s * part..(s + 1) * part]
                            .copy_from_slice(&from[o * part..(o + 1) * part]);
                    }
                }
            }
            _ => unreachable!("not a collective"),
        }
    }

    fn local(&mut self, ins: &Instr, r: usize) {
        let b = &mut self.bufs[r];
        match ins {
            Instr::Gemm { g, a, b: bb, c } => {
                let av = b[a.0][a.1..].to_vec();
                let bv = b[bb.0][bb.1..].to_vec();
                row_gemm_via_cublas(g, &av, &bv, &mut b[c.0][c.1..]);
            }
            Instr::BiasAdd {
                y,
                bias,
                rows,
                cols,
                rank0_only,
            } => {
                if *rank0_only && r != 0 {
                    return;
                }
                let bv = b[*bias].clone();
                for i in 0..rows * cols {
                    b[*y][i] += bv[i % cols];
                }
            }
            Instr::BiasResidual {
                res,
                a,
                bias,
                y,
                rows,
                cols,
            } => {
                for i in 0..rows * cols {
                    b[*y][i] = b[*res][i] + b[*a][i] + b[*bias][i % cols];
                }
            }
            Instr::Add { y, x, n } => {
                for i in 0..*n {
                    b[*y][i] += b[*x][i];
                }
            }
            Instr::Copy {
                src,
                dst,
                rows,
                cols,
            } => {
                let (so, d0) = (src.offset(r), dst.offset(r));
                for i in 0..*rows {
                    for c in 0..*cols {
                        let v = b[src.buf][so + i * src.ld + c];
                        b[dst.buf][d0 + i * dst.ld + c] = v;
                    }
                }
            }
            Instr::AddBlock {
                src,
                dst,
                rows,
                cols,
            } => {
                let (so, d0) = (src.offset(r), dst.offset(r));
                for i in 0..*rows {
                    for c in 0..*cols {
                        let v = b[src.buf][so + i * src.ld + c];
                        b[dst.buf][d0 + i * dst.ld + c] += v;
                    }
                }
            }
            Instr::Zero { buf, n } => b[*buf][..*n].iter_mut().for_each(|v| *v = 0.0),
            Instr::Gelu { a, u, n } => {
                for i in 0..*n {
                    let v = b[*a][i];
                    let t = (GELU_K0 * (v + GELU_K1 * v * v * v)).tanh();
                    b[*u][i] = 0.5 * v * (1.0 + t);
                }
            }
            Instr::GeluBwd { dy, a, dx, n } => {
                for i in 0..*n {
                    let v = b[*a][i];
                    let t = (GELU_K0 * (v + GELU_K1 * v * v * v)).tanh();
                    let du = GELU_K0 * (1.0 + 3.0 * GELU_K1 * v * v);
                    let g = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * du;
                    b[*dx][i] = b[*dy][i] * g;
                }
            }
            Instr::ColSum { x, out, rows, cols } => {
                for c in 0..*cols {
                    b[*out][c] = (0..*rows).map(|i| b[*x][i * cols + c]).sum();
                }
            }
            Instr::LnFwd {
                x,
                w,
                b: bias,
                y,
                mean,
                rstd,
                rows,
                h,
            } => {
                let st = &mut self.stats[r];
                for i in 0..*rows {
                    let row = &b[*x][i * h..(i + 1) * h];
                    let mu = row.iter().sum::<f64>() / *h as f64;
                    let var = row.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / *h as f64;
                    let rs = 1.0 / (var + LN_EPS).sqrt();
                    st[*mean][i] = mu;
                    st[*rstd][i] = rs;
                    for c in 0..*h {
                        let v = (b[*x][i * h + c] - mu) * rs * b[*w][c] + b[*bias][c];
                        b[*y][i * h + c] = v;
                    }
                }
            }
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
            } => {
                let st = &self.stats[r];
                for i in 0..*rows {
                    let (mu, rs) = (st[*mean][i], st[*rstd][i]);
                    let (mut sg, mut sgx) = (0.0, 0.0);
                    for c in 0..*h {
                        let g = b[*dy][i * h + c] * b[*w][c];
                        let xh = (b[*x][i * h + c] - mu) * rs;
                        sg += g;
                        sgx += g * xh;
                    }
                    let (mg, mgx) = (sg / *h as f64, sgx / *h as f64);
                    for c in 0..*h {
                        let g = b[*dy][i * h + c] * b[*w][c];
                        let xh = (b[*x][i * h + c] - mu) * rs;
                        b[*dx][i * h + c] = b[*resid][i * h + c] + rs * (g - mg - xh * mgx);
                    }
                }
                for c in 0..*h {
                    let (mut gw, mut gb) = (0.0, 0.0);
                    for i in 0..*rows {
                        let g = b[*dy][i * h + c];
                        gw += g * (b[*x][i * h + c] - st[*mean][i]) * st[*rstd][i];
                        gb += g;
                    }
                    b[*dw][c] = gw;
                    b[*db][c] = gb;
                }
            }
            Instr::SoftmaxFwd { probs, rows, seq } => {
                for row in 0..*rows {
                    let i = row % seq;
                    let sr = &mut b[*probs][row * seq..(row + 1) * seq];
                    let m = sr[..=i].iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let z: f64 = sr[..=i].iter().map(|v| (v - m).exp()).sum();
                    for (j, v) in sr.iter_mut().enumerate() {
                        *v = if j <= i { (*v - m).exp() / z } else { 0.0 };
                    }
                }
            }
            Instr::SoftmaxBwd {
                probs,
                dprobs,
                rows,
                seq,
            } => {
                let p = b[*probs].clone();
                for row in 0..*rows {
                    let i = row % seq;
                    let pr = &p[row * seq..(row + 1) * seq];
                    let dr = &mut b[*dprobs][row * seq..(row + 1) * seq];
                    let dot: f64 = (0..=i).map(|j| pr[j] * dr[j]).sum();
                    for j in 0..*seq {
                        dr[j] = if j <= i { pr[j] * (dr[j] - dot) } else { 0.0 };
                    }
                }
            }
            _ => unreachable!("a collective"),
        }
    }

    fn get(&self, r: usize, buf: BufIx, shape: [usize; 2]) -> Array2<f64> {
        let v = self.bufs[r][buf][..shape[0] * shape[1]].to_vec();
        Array2::from_shape_vec((shape[0], shape[1]), v).unwrap()
    }

    fn results(&self, low: &Lowered) -> ProgramRun<f64> {
        let local = |s: Slot| Local {
            place: s.place,
            ranks: (0..low.tp)
                .map(|r| self.get(r, s.buf, [s.rows, s.cols]))
                .collect(),
        };
        ProgramRun {
            output: local(low.output),
            grad_input: local(low.grad_input),
            grads: (0..low.tp)
                .map(|r| {
                    low.grads
                        .iter()
                        .map(|per| {
                            LayerParams::from_fn(|k| {
                                let (_, b, shape) =
                                    per.iter().find(|(kk, _, _)| *kk == k).copied().unwrap();
                                self.get(r, b, shape)
                            })
                        })
                        .collect()
                })
                .collect(),
        }
    }
}

fn tiny(tp: usize, sp: bool, layers: usize) -> Config {
    Config {
        tp,
        layers,
        sequence_parallel: sp,
        dtype: tplab_engine::dtype::DType::F64,
        ..Preset::Tiny.config()
    }
}

/// Lowers `plan`, runs the list on the CPU and compares with the reference: the worst failing
/// tensors (empty when everything is within the tolerance).
fn lowered_run_failures(cfg: &Config, plan: &ShardingPlan) -> Vec<String> {
    let program = propagate(cfg, plan);
    let low = lower(cfg, &program).unwrap_or_else(|e| panic!("{}: {e}", plan.describe()));
    let model = Model::<f64>::random(cfg);
    let mut dev = Cpu::new(cfg, &program, &low, &model);
    dev.run(&low);
    let got = dev.results(&low);
    let want = tplab_engine::block::reference::run(cfg, &model);
    let tol = Tolerance::for_run(cfg, cfg.dtype, want.layer_norm_condition());
    let checks = tplab_engine::block::design::compare_program_run(cfg, &program, &got, &want, &tol);
    assert!(!checks.is_empty());
    checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| format!("{} {:.2e}", c.name, c.max_rel_error))
        .collect()
}

/// The launch list's events are the program's trace, event for event, so the GPU's measured
/// times land where the views draw them.
fn assert_events_are_the_trace(cfg: &Config, plan: &ShardingPlan) {
    let program = propagate(cfg, plan);
    let low = lower(cfg, &program).unwrap();
    let trace = tplab_engine::block::design::trace::trace(cfg, &program).unwrap();
    let want: Vec<(usize, Pass, Op, Vec<usize>)> = trace
        .events
        .iter()
        .map(|e| (e.layer, e.pass, e.op, e.ranks.clone()))
        .collect();
    assert_eq!(low.events(), want, "{}", plan.describe());
}

#[test]
fn every_plan_lowered_for_the_gpu_equals_the_reference() {
    for tp in [1, 2, 4] {
        for sp in [false, true] {
            let cfg = tiny(tp, sp, 2);
            for plan in ShardingPlan::all_assignments(sp) {
                let bad = lowered_run_failures(&cfg, &plan);
                assert!(
                    bad.is_empty(),
                    "tp {tp} sp {sp} {}: {bad:?}",
                    plan.describe()
                );
                assert_events_are_the_trace(&cfg, &plan);
            }
        }
    }
}

#[test]
fn grouped_query_attention_plans_lower_and_match() {
    // Fewer KV heads than GPUs: each KV head has copies whose gradients are summed.
    for (kv, tp) in [(1, 2), (2, 4)] {
        for sp in [false, true] {
            let cfg = Config {
                heads: 4,
                kv_heads: Some(kv),
                ..tiny(tp, sp, 1)
            };
            for plan in ShardingPlan::all_assignments(sp) {
                let bad = lowered_run_failures(&cfg, &plan);
                assert!(
                    bad.is_empty(),
                    "kv {kv} tp {tp} {}: {bad:?}",
                    plan.describe()
                );
                assert_events_are_the_trace(&cfg, &plan);
            }
        }
    }
}

#[test]
fn a_broken_lowering_is_caught() {
    // Drop the first all-reduce: the comparison must fail, so the test above can.
    let cfg = tiny(2, false, 1);
    let plan = NamedPlan::Megatron.plan();
    let program = propagate(&cfg, &plan);
    let mut low = lower(&cfg, &program).unwrap();
    let b = low
        .blocks
        .iter_mut()
        .find(|b| {
            b.instrs
                .iter()
                .any(|i| matches!(i, Instr::AllReduce { .. }))
        })
        .unwrap();
    b.instrs.retain(|i| !matches!(i, Instr::AllReduce { .. }));
    let model = Model::<f64>::random(&cfg);
    let mut dev = Cpu::new(&cfg, &program, &low, &model);
    dev.run(&low);
    let got = dev.results(&low);
    let want = tplab_engine::block::reference::run(&cfg, &model);
    let tol = Tolerance::for_run(&cfg, cfg.dtype, want.layer_norm_condition());
    let checks =
        tplab_engine::block::design::compare_program_run(&cfg, &program, &got, &want, &tol);
    assert!(checks.iter().any(|c| !c.passed && c.max_rel_error > 1e-2));
}

#[test]
fn a_broken_plan_is_refused_with_its_rule() {
    let cfg = tiny(2, false, 1);
    let mut plan = NamedPlan::Megatron.plan();
    plan.manual = Some(Vec::new());
    let program = propagate(&cfg, &plan);
    assert!(!program.valid());
    let e = lower(&cfg, &program).unwrap_err().to_string();
    assert!(e.contains("valid plans only"), "{e}");
}

#[test]
fn every_buffer_is_written_before_it_is_read_and_sized_for_its_launches() {
    // Bounds: every launch stays inside its buffers (the CUDA side checks products too).
    let cfg = tiny(4, true, 1);
    for plan in ShardingPlan::all_assignments(true) {
        let program = propagate(&cfg, &plan);
        let low = lower(&cfg, &program).unwrap();
        for b in &low.blocks {
            for ins in &b.instrs {
                if let Instr::Gemm { g, a, b: bb, c } = ins {
                    let [ea, eb, ec] = g.extent();
                    assert!(a.1 + ea <= low.bufs[a.0].len);
                    assert!(bb.1 + eb <= low.bufs[bb.0].len);
                    assert!(c.1 + ec <= low.bufs[c.0].len);
                }
                if let Instr::Copy {
                    src,
                    dst,
                    rows,
                    cols,
                } = ins
                {
                    for r in 0..low.tp {
                        let end = |s: &Strided| s.offset(r) + (rows - 1) * s.ld + cols;
                        assert!(end(src) <= low.bufs[src.buf].len, "{}", plan.describe());
                        assert!(end(dst) <= low.bufs[dst.buf].len, "{}", plan.describe());
                    }
                }
            }
        }
    }
}
