//! Any valid sharding plan on the GPU: the engine's propagated [`Program`] lowered to one list of
//! launches per rank, host logic only.
//!
//! Megatron-LM's plan has its own fused buffer layout ([`crate::buffers`]); a learner's plan
//! (rows-then-columns, columns-columns, a replicated weight, sequence parallelism with any
//! split) is lowered here instead, step by step as the engine's CPU walk
//! (`tplab_engine::block::exec::design`) runs it: every value of every layer gets a buffer of
//! its local shape on each rank, every forward step and every derived backward step becomes
//! cuBLAS products and the NVRTC kernels (LayerNorm, bias, GeLU, causal softmax, element-wise
//! adds, strided copies), and every redistribution becomes a contiguous collective between
//! local copies:
//!
//! - a sum to whole tensors (`Partial → Replicate`) is an all-reduce of a copy;
//! - a sum to token rows is a reduce-scatter; to columns, a reduce-scatter of the columns packed
//!   rank by rank;
//! - a gather of token rows is an all-gather; of columns, an all-gather of the packed columns,
//!   unpacked into place;
//! - rows to columns (and back) is an all-to-all of packed blocks;
//! - a local slice is a copy at the rank's own offset.
//!
//! Each instruction writes only a buffer made for its output, so a gradient two steps share is
//! never changed under one of them. The blocks come in the order the CPU walk issues its events,
//! and expand to exactly the program's trace (tested), so the measured times land on the trace's
//! events. The CUDA side (`cuda::exec::program`) maps each instruction to one launch; the tests
//! here run the same list on the CPU, with cuBLAS's product semantics and the kernels' formulas,
//! for all 81 assignments of the four weights, with and without sequence parallelism, at TP 1, 2
//! and 4, and compare it with the unsharded reference.

use crate::error::GpuError;
use crate::layout::{AttentionGemms, AttnProduct, RowGemm};
use tplab_engine::block::design::plan::Weight;
use tplab_engine::block::design::program::{
    feature_ranges, param_layout, weight_param, BackStep, Move, Place, Program, Step, Tensor,
    ValueId,
};
use tplab_engine::block::design::trace::{back_op, forward_op, grad_op, identity_op};
use tplab_engine::block::exec::design::{
    by_heads_param, linear_grad_input, local_heads, param_index, param_place, part,
};
use tplab_engine::block::op::{Op, Pass};
use tplab_engine::config::Config;
use tplab_engine::params::ParamKind;

/// A buffer of every rank (the same index and length on each).
pub type BufIx = usize;

/// What a buffer starts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Init {
    Zero,
    /// The block input, as the program's input placement gives it to the rank.
    Input(Place),
    /// The output gradient, as the gradient of the program's output is held.
    GradOutput(Place),
    /// The rank's shard of a parameter.
    Param {
        layer: usize,
        kind: ParamKind,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufSpec {
    /// Elements (at least 1).
    pub len: usize,
    pub init: Init,
}

/// A `[rows, cols]` block of a row-major buffer: element offset (per rank, or one for all) and
/// row stride.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strided {
    pub buf: BufIx,
    /// One offset for every rank, or one per rank (a local slice).
    pub off: Vec<usize>,
    pub ld: usize,
}

impl Strided {
    fn at(buf: BufIx, off: usize, ld: usize) -> Self {
        Self {
            buf,
            off: vec![off],
            ld,
        }
    }

    /// Rank `r`'s offset.
    pub fn offset(&self, r: usize) -> usize {
        match self.off.as_slice() {
            [one] => *one,
            many => many.get(r).copied().unwrap_or(0),
        }
    }
}

/// One launch on a rank (or, for the collectives, between the ranks of a block).
#[derive(Debug, Clone, PartialEq)]
pub enum Instr {
    /// `C = alpha·op(A)·op(B) + beta·C` (cuBLAS, row-major via the transpose trick).
    Gemm {
        g: RowGemm,
        a: (BufIx, usize),
        b: (BufIx, usize),
        c: (BufIx, usize),
    },
    /// `y[i, c] += bias[c]` (`bias_add`); on rank 0 only for a bias added once to a partial sum.
    BiasAdd {
        y: BufIx,
        bias: BufIx,
        rows: usize,
        cols: usize,
        rank0_only: bool,
    },
    /// `y = res + a + bias` (`bias_residual`).
    BiasResidual {
        res: BufIx,
        a: BufIx,
        bias: BufIx,
        y: BufIx,
        rows: usize,
        cols: usize,
    },
    /// `y += x` over `n` elements (`add_inplace`).
    Add { y: BufIx, x: BufIx, n: usize },
    /// A `[rows, cols]` block copied between strided places (`copy_block`).
    Copy {
        src: Strided,
        dst: Strided,
        rows: usize,
        cols: usize,
    },
    /// A `[rows, cols]` block added into a strided place (`copy_block` adding): the copies of
    /// a KV head's gradient summed as they are gathered.
    AddBlock {
        src: Strided,
        dst: Strided,
        rows: usize,
        cols: usize,
    },
    /// `n` zeros (a memset).
    Zero { buf: BufIx, n: usize },
    /// `u = GeLU(a)` (`gelu_fwd`).
    Gelu { a: BufIx, u: BufIx, n: usize },
    /// `dx = dy·GeLU'(a)` (`gelu_bwd`).
    GeluBwd {
        dy: BufIx,
        a: BufIx,
        dx: BufIx,
        n: usize,
    },
    /// `out[c] = Σ_r x[r, c]` (`col_sum`).
    ColSum {
        x: BufIx,
        out: BufIx,
        rows: usize,
        cols: usize,
    },
    /// LayerNorm over `rows` rows of width `h`; `mean` and `rstd` are stat buffers (f32).
    LnFwd {
        x: BufIx,
        w: BufIx,
        b: BufIx,
        y: BufIx,
        mean: usize,
        rstd: usize,
        rows: usize,
        h: usize,
    },
    /// `dx = resid + LN'(dy)`, `dw`, `db` (`ln_bwd_input`, `ln_bwd_params`).
    LnBwd {
        dy: BufIx,
        x: BufIx,
        w: BufIx,
        mean: usize,
        rstd: usize,
        resid: BufIx,
        dx: BufIx,
        dw: BufIx,
        db: BufIx,
        rows: usize,
        h: usize,
    },
    /// Causal softmax in place over `rows` score rows of `seq` (`causal_softmax_fwd`).
    SoftmaxFwd {
        probs: BufIx,
        rows: usize,
        seq: usize,
    },
    /// `dprobs` becomes the score gradient in place (`causal_softmax_bwd`).
    SoftmaxBwd {
        probs: BufIx,
        dprobs: BufIx,
        rows: usize,
        seq: usize,
    },
    /// In-place sum of `len` elements over the block's ranks.
    AllReduce { buf: BufIx, len: usize },
    /// Rank `s`'s `part` elements land at `s·part` in every rank's `recv`.
    AllGather {
        send: BufIx,
        recv: BufIx,
        part: usize,
    },
    /// Rank `o` gets the sum over ranks of elements `o·part ..` of `send`.
    ReduceScatter {
        send: BufIx,
        recv: BufIx,
        part: usize,
    },
    /// Rank `o` gets rank `s`'s elements `o·part ..` at `s·part`.
    AllToAll {
        send: BufIx,
        recv: BufIx,
        part: usize,
    },
}

impl Instr {
    pub fn is_collective(&self) -> bool {
        matches!(
            self,
            Instr::AllReduce { .. }
                | Instr::AllGather { .. }
                | Instr::ReduceScatter { .. }
                | Instr::AllToAll { .. }
        )
    }
}

/// The launches of one op of the program: a compute op (one trace event per rank), a
/// collective (one event for its group), or work the trace does not draw (`event: None`).
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub layer: usize,
    pub pass: Pass,
    pub event: Option<Op>,
    pub collective: bool,
    /// The ranks that take part (every rank, or one group of KV-head copies).
    pub ranks: Vec<usize>,
    pub instrs: Vec<Instr>,
}

/// A value's buffer and local shape, and how it is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub buf: BufIx,
    pub rows: usize,
    pub cols: usize,
    pub place: Place,
}

impl Slot {
    pub fn len(&self) -> usize {
        self.rows * self.cols
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A parameter's gradient: its buffer and the `[rows, cols]` of the rank's shard.
pub type ParamGrad = (ParamKind, BufIx, [usize; 2]);

/// A program lowered for every layer of a stack.
#[derive(Debug, Clone, PartialEq)]
pub struct Lowered {
    pub tp: usize,
    pub bufs: Vec<BufSpec>,
    /// Lengths of the f32 statistic buffers (LayerNorm means and inverse deviations).
    pub stats: Vec<usize>,
    pub blocks: Vec<Block>,
    /// The stack's output as the last layer leaves it.
    pub output: Slot,
    /// `dL/dx` of the stack's input.
    pub grad_input: Slot,
    /// Per layer, per parameter (in `ParamKind::ALL` order): the gradient's buffer, `[rows,
    /// cols]` of the rank's shard.
    pub grads: Vec<Vec<ParamGrad>>,
}

impl Lowered {
    /// Bytes of device memory one rank needs.
    pub fn bytes_per_rank(&self, elem: usize) -> u64 {
        let e: usize = self.bufs.iter().map(|b| b.len.max(1)).sum();
        let s: usize = self.stats.iter().map(|n| (*n).max(1)).sum();
        (e * elem + s * 4) as u64
    }

    /// The trace events the blocks stand for, in order: `(layer, pass, op, ranks)`.
    pub fn events(&self) -> Vec<(usize, Pass, Op, Vec<usize>)> {
        let mut out = Vec::new();
        for b in &self.blocks {
            let Some(op) = b.event else { continue };
            if b.collective {
                out.push((b.layer, b.pass, op, b.ranks.clone()));
            } else {
                for &r in &b.ranks {
                    out.push((b.layer, b.pass, op, vec![r]));
                }
            }
        }
        out
    }
}

/// Rank `r`'s part of a whole `[tokens, hidden]` tensor (the block input, the output gradient)
/// held as `place`: the engine's own slicing.
pub fn local_part(
    cfg: &Config,
    full: &ndarray::Array2<f64>,
    place: Place,
    r: usize,
) -> ndarray::Array2<f64> {
    part(cfg, place, false, full.view(), r)
}

fn refuse(what: impl Into<String>) -> GpuError {
    GpuError::Unsupported(what.into())
}

/// The local `[rows, cols]` of a tensor of global `shape` held as `place` (the same on every
/// rank, or refused: the GPU runs even splits only).
fn local_shape(
    cfg: &Config,
    shape: [usize; 2],
    place: Place,
    by_heads: bool,
) -> Result<[usize; 2], GpuError> {
    let tp = cfg.tp.max(1);
    Ok(match place {
        Place::Replicate | Place::Partial => shape,
        Place::Tokens => {
            if !shape[0].is_multiple_of(tp) {
                return Err(refuse(format!(
                    "{} token rows do not split evenly over {tp} GPUs; the GPU runs even splits \
                     (choose a sequence and batch whose tokens divide by TP)",
                    shape[0]
                )));
            }
            [shape[0] / tp, shape[1]]
        }
        Place::Features => {
            let widths: Vec<usize> = (0..tp)
                .map(|r| {
                    feature_ranges(cfg, shape[1], by_heads, r)
                        .iter()
                        .map(|[a, b]| b - a)
                        .sum()
                })
                .collect();
            if widths.iter().any(|w| *w != widths[0]) || (!by_heads && !shape[1].is_multiple_of(tp))
            {
                return Err(refuse(format!(
                    "{} columns do not split evenly over {tp} GPUs; the GPU runs even splits",
                    shape[1]
                )));
            }
            [shape[0], widths[0]]
        }
    })
}

/// The lowering's state.
struct Lower<'a> {
    cfg: &'a Config,
    program: &'a Program,
    tp: usize,
    bufs: Vec<BufSpec>,
    stats: Vec<usize>,
    blocks: Vec<Block>,
    layer: usize,
    pass: Pass,
    /// Lowering a gradient's move (a by-heads gradient's copies are summed when gathered).
    grad: bool,
}

/// Forward state of one layer kept for its backward.
struct Saved {
    vals: Vec<Option<Slot>>,
    /// Per forward step: LayerNorm statistics (mean, rstd).
    ln: Vec<Option<(usize, usize)>>,
    /// Per forward step: attention probabilities.
    probs: Vec<Option<BufIx>>,
}

impl Lower<'_> {
    fn buf(&mut self, len: usize, init: Init) -> BufIx {
        self.bufs.push(BufSpec {
            len: len.max(1),
            init,
        });
        self.bufs.len() - 1
    }

    fn slot(&mut self, rows: usize, cols: usize, place: Place) -> Slot {
        Slot {
            buf: self.buf(rows * cols, Init::Zero),
            rows,
            cols,
            place,
        }
    }

    fn stat(&mut self, n: usize) -> usize {
        self.stats.push(n.max(1));
        self.stats.len() - 1
    }

    /// Whether a by-heads tensor's columns include copies (fewer KV heads than GPUs).
    fn has_copies(&self, by_heads: bool) -> bool {
        by_heads && self.cfg.kv_replicas() > 1
    }

    fn all(&self) -> Vec<usize> {
        (0..self.tp).collect()
    }

    fn push(&mut self, event: Option<Op>, collective: bool, ranks: Vec<usize>, instrs: Vec<Instr>) {
        // An op the trace does not draw as a compute event (it computes nothing).
        let event = event.filter(|op| collective || op.compute().is_some());
        if event.is_none() && instrs.is_empty() {
            return;
        }
        self.blocks.push(Block {
            layer: self.layer,
            pass: self.pass,
            event,
            collective,
            ranks,
            instrs,
        });
    }

    fn param(&self, layer: usize, kind: ParamKind) -> Result<[usize; 2], GpuError> {
        let layout = param_layout(&self.program.plan, kind);
        local_shape(
            self.cfg,
            kind.shape(self.cfg),
            param_place(layout),
            by_heads_param(kind),
        )
        .map_err(|e| refuse(format!("layer {layer}, {}: {e}", kind.name(layer))))
    }

    /// A full copy of `s` into a new buffer.
    fn copy_of(&mut self, s: Slot, out: &mut Vec<Instr>) -> Slot {
        let d = self.slot(s.rows, s.cols, s.place);
        out.push(Instr::Copy {
            src: Strided::at(s.buf, 0, s.cols),
            dst: Strided::at(d.buf, 0, d.cols),
            rows: s.rows,
            cols: s.cols,
        });
        d
    }

    /// Copies every rank's feature columns (rank `j`'s chunk at `j·rows·cw`, packed) from the
    /// whole-width `full` (`unpack`: back into it).
    #[allow(clippy::too_many_arguments)]
    fn pack_columns(
        &self,
        full: BufIx,
        width: usize,
        packed: BufIx,
        rows: usize,
        cw: usize,
        by_heads: bool,
        unpack: bool,
        out: &mut Vec<Instr>,
    ) {
        // A gradient's copies (KV heads several GPUs hold) are summed as they are unpacked.
        let sum = unpack && self.grad && self.has_copies(by_heads);
        if sum {
            out.push(Instr::Zero {
                buf: full,
                n: rows * width,
            });
        }
        for j in 0..self.tp {
            let mut o = 0;
            for [a, b] in feature_ranges(self.cfg, width, by_heads, j) {
                let (wide, narrow) = (
                    Strided::at(full, a, width),
                    Strided::at(packed, j * rows * cw + o, cw),
                );
                let (src, dst) = if unpack {
                    (narrow, wide)
                } else {
                    (wide, narrow)
                };
                let cols = b - a;
                out.push(if sum {
                    Instr::AddBlock {
                        src,
                        dst,
                        rows,
                        cols,
                    }
                } else {
                    Instr::Copy {
                        src,
                        dst,
                        rows,
                        cols,
                    }
                });
                o += b - a;
            }
        }
    }

    /// The instructions and result of changing `s` (a tensor of global `shape`) to `to`.
    fn redistribute(
        &mut self,
        s: Slot,
        to: Place,
        shape: [usize; 2],
        by_heads: bool,
        mv: Move,
    ) -> Result<(Vec<Instr>, Slot), GpuError> {
        let tp = self.tp;
        let [rows, width] = shape;
        let [lr, lc] = local_shape(self.cfg, shape, to, by_heads)?;
        let mut out = Vec::new();
        if s.place == to {
            return Ok((out, s));
        }
        let d = self.slot(lr, lc, to);
        match (s.place, to) {
            (Place::Partial, Place::Replicate) => {
                out.push(Instr::Copy {
                    src: Strided::at(s.buf, 0, s.cols),
                    dst: Strided::at(d.buf, 0, d.cols),
                    rows: s.rows,
                    cols: s.cols,
                });
                out.push(Instr::AllReduce {
                    buf: d.buf,
                    len: d.len(),
                });
            }
            (Place::Partial, Place::Tokens) => out.push(Instr::ReduceScatter {
                send: s.buf,
                recv: d.buf,
                part: d.len(),
            }),
            (Place::Partial, Place::Features) => {
                let staging = self.buf(tp * d.len(), Init::Zero);
                self.pack_columns(s.buf, width, staging, rows, lc, by_heads, false, &mut out);
                out.push(Instr::ReduceScatter {
                    send: staging,
                    recv: d.buf,
                    part: d.len(),
                });
            }
            (Place::Tokens, Place::Replicate) => out.push(Instr::AllGather {
                send: s.buf,
                recv: d.buf,
                part: s.len(),
            }),
            (Place::Features, Place::Replicate) => {
                let staging = self.buf(tp * s.len(), Init::Zero);
                out.push(Instr::AllGather {
                    send: s.buf,
                    recv: staging,
                    part: s.len(),
                });
                self.pack_columns(
                    d.buf, width, staging, rows, s.cols, by_heads, true, &mut out,
                );
            }
            (Place::Replicate, Place::Tokens) => out.push(Instr::Copy {
                src: Strided {
                    buf: s.buf,
                    off: (0..tp).map(|r| r * lr * width).collect(),
                    ld: width,
                },
                dst: Strided::at(d.buf, 0, lc),
                rows: lr,
                cols: lc,
            }),
            (Place::Replicate, Place::Features) => {
                // Each rank copies its own ranges: one copy per range index, offsets per rank.
                let per_rank: Vec<Vec<[usize; 2]>> = (0..tp)
                    .map(|r| feature_ranges(self.cfg, width, by_heads, r))
                    .collect();
                let n = per_rank[0].len();
                let mut o = 0;
                for k in 0..n {
                    let w = per_rank[0][k][1] - per_rank[0][k][0];
                    if per_rank
                        .iter()
                        .any(|rs| rs.len() != n || rs[k][1] - rs[k][0] != w)
                    {
                        return Err(refuse("uneven column ranges; the GPU runs even splits"));
                    }
                    out.push(Instr::Copy {
                        src: Strided {
                            buf: s.buf,
                            off: per_rank.iter().map(|rs| rs[k][0]).collect(),
                            ld: width,
                        },
                        dst: Strided::at(d.buf, o, lc),
                        rows,
                        cols: w,
                    });
                    o += w;
                }
            }
            (Place::Tokens, Place::Features) => {
                // Rank j's columns of my rows, packed at j·lr_in·lc; received in token order.
                let staging = self.buf(tp * s.rows * lc, Init::Zero);
                self.pack_columns(s.buf, width, staging, s.rows, lc, by_heads, false, &mut out);
                out.push(Instr::AllToAll {
                    send: staging,
                    recv: d.buf,
                    part: s.rows * lc,
                });
            }
            (Place::Features, Place::Tokens) => {
                let staging = self.buf(tp * lr * s.cols, Init::Zero);
                out.push(Instr::AllToAll {
                    send: s.buf,
                    recv: staging,
                    part: lr * s.cols,
                });
                self.pack_columns(d.buf, width, staging, lr, s.cols, by_heads, true, &mut out);
            }
            (from, to) => {
                return Err(refuse(format!(
                    "no GPU lowering of a {} from {from:?} to {to:?}",
                    mv.name()
                )))
            }
        }
        Ok((out, d))
    }

    /// The bias vector rank `r` adds to a value held as `place` `cols` wide: its shard, or the
    /// rank's columns of a whole one (copied out).
    fn bias_for(
        &mut self,
        layer: usize,
        w: Weight,
        place: Place,
        cols: usize,
        by_heads: bool,
        out: &mut Vec<Instr>,
    ) -> Result<BufIx, GpuError> {
        let bk = weight_param(w).1;
        let [_, bc] = self.param(layer, bk)?;
        let b = self.param_buf(layer, bk);
        if bc == cols {
            return Ok(b);
        }
        let full = bk.shape(self.cfg)[1];
        if place != Place::Features || bc != full {
            return Err(refuse(format!(
                "the bias {} has {bc} columns where the value has {cols}",
                bk.name(layer)
            )));
        }
        let whole = Slot {
            buf: b,
            rows: 1,
            cols: full,
            place: Place::Replicate,
        };
        let (mut ins, part) =
            self.redistribute(whole, Place::Features, [1, full], by_heads, Move::Slice)?;
        out.append(&mut ins);
        Ok(part.buf)
    }

    /// The buffers of the uploaded parameters, by (layer, kind).
    fn param_buf(&self, layer: usize, kind: ParamKind) -> BufIx {
        layer * ParamKind::ALL.len() + param_index(kind)
    }

    fn value_shape(&self, v: ValueId) -> ([usize; 2], bool) {
        let t = self.program.values[v].tensor;
        (t.shape(self.cfg), t == Tensor::Qkv)
    }

    fn forward(&mut self, input: Slot) -> Result<(Saved, Slot), GpuError> {
        let program = self.program;
        let cfg = self.cfg;
        let layer = self.layer;
        let n = program.forward.len();
        let mut saved = Saved {
            vals: vec![None; program.values.len()],
            ln: vec![None; n],
            probs: vec![None; n],
        };
        saved.vals[program.input] = Some(input);
        let identities = program.forward_identities();
        for (i, step) in program.forward.iter().enumerate() {
            for &(_, v) in identities.iter().filter(|(at, _)| *at == i) {
                let op = identity_op(program, v, Pass::Forward);
                self.push(Some(op), true, self.all(), Vec::new());
            }
            let op = forward_op(program, step);
            let get = |vals: &[Option<Slot>], v: ValueId| -> Result<Slot, GpuError> {
                vals.get(v).copied().flatten().ok_or_else(|| {
                    refuse(format!(
                        "step {i} reads {} before it is made",
                        program.values[v].tensor.name()
                    ))
                })
            };
            let place_of = |v: ValueId| program.values[v].place;
            let mut ins = Vec::new();
            match step {
                Step::LayerNorm { norm, x, y } => {
                    let xs = get(&saved.vals, *x)?;
                    if xs.cols != cfg.hidden {
                        return Err(refuse("LayerNorm reads less than whole rows"));
                    }
                    let (wk, bk) = norm.params();
                    let ys = self.slot(xs.rows, xs.cols, place_of(*y));
                    let (mean, rstd) = (self.stat(xs.rows), self.stat(xs.rows));
                    ins.push(Instr::LnFwd {
                        x: xs.buf,
                        w: self.param_buf(layer, wk),
                        b: self.param_buf(layer, bk),
                        y: ys.buf,
                        mean,
                        rstd,
                        rows: xs.rows,
                        h: xs.cols,
                    });
                    saved.ln[i] = Some((mean, rstd));
                    saved.vals[*y] = Some(ys);
                }
                Step::Linear { weight, x, y, bias } => {
                    let xs = get(&saved.vals, *x)?;
                    let (wk, _) = weight_param(*weight);
                    let [k, nn] = self.param(layer, wk)?;
                    if xs.cols != k {
                        return Err(refuse(format!(
                            "{} reads {} columns; its shard has {k} rows",
                            wk.name(layer),
                            xs.cols
                        )));
                    }
                    let ys = self.slot(xs.rows, nn, place_of(*y));
                    ins.push(Instr::Gemm {
                        g: RowGemm::plain(xs.rows, nn, k, false, false),
                        a: (xs.buf, 0),
                        b: (self.param_buf(layer, wk), 0),
                        c: (ys.buf, 0),
                    });
                    if *bias {
                        let (_, by) = self.value_shape(*y);
                        let b = self.bias_for(layer, *weight, ys.place, nn, by, &mut ins)?;
                        ins.push(Instr::BiasAdd {
                            y: ys.buf,
                            bias: b,
                            rows: ys.rows,
                            cols: nn,
                            rank0_only: false,
                        });
                    }
                    saved.vals[*y] = Some(ys);
                }
                Step::Attention { qkv, ctx } => {
                    let qs = get(&saved.vals, *qkv)?;
                    let (hl, kvl) = local_heads(self.cfg, qs.place);
                    let ag = AttentionGemms::new(cfg.seq, hl, kvl, cfg.head_dim());
                    if qs.cols != ag.qkv_cols() || qs.rows != cfg.tokens() {
                        return Err(refuse(
                            "attention reads QKV in a shape it cannot split by heads",
                        ));
                    }
                    let probs = self.buf(ag.scores_len(cfg.batch), Init::Zero);
                    let cs = self.slot(qs.rows, hl * cfg.head_dim(), place_of(*ctx));
                    for b in 0..cfg.batch {
                        attn(
                            &mut ins,
                            &ag,
                            AttnProduct::Scores,
                            b,
                            [qs.buf, qs.buf, probs],
                        );
                    }
                    ins.push(Instr::SoftmaxFwd {
                        probs,
                        rows: cfg.batch * hl * cfg.seq,
                        seq: cfg.seq,
                    });
                    for b in 0..cfg.batch {
                        attn(
                            &mut ins,
                            &ag,
                            AttnProduct::Context,
                            b,
                            [probs, qs.buf, cs.buf],
                        );
                    }
                    saved.probs[i] = Some(probs);
                    saved.vals[*ctx] = Some(cs);
                }
                Step::Gelu { a, u } => {
                    let as_ = get(&saved.vals, *a)?;
                    let us = self.slot(as_.rows, as_.cols, place_of(*u));
                    ins.push(Instr::Gelu {
                        a: as_.buf,
                        u: us.buf,
                        n: as_.len(),
                    });
                    saved.vals[*u] = Some(us);
                }
                Step::Bias { x, y, weight, once } => {
                    let xs = get(&saved.vals, *x)?;
                    let mut ys = self.copy_of(xs, &mut ins);
                    ys.place = place_of(*y);
                    let (_, by) = self.value_shape(*y);
                    let b = self.bias_for(layer, *weight, ys.place, ys.cols, by, &mut ins)?;
                    ins.push(Instr::BiasAdd {
                        y: ys.buf,
                        bias: b,
                        rows: ys.rows,
                        cols: ys.cols,
                        rank0_only: *once,
                    });
                    saved.vals[*y] = Some(ys);
                }
                Step::Residual {
                    stream,
                    branch,
                    y,
                    bias,
                } => {
                    let ss = get(&saved.vals, *stream)?;
                    let bs = get(&saved.vals, *branch)?;
                    if (ss.rows, ss.cols) != (bs.rows, bs.cols) {
                        return Err(refuse(
                            "the residual add reads two differently shaped sides",
                        ));
                    }
                    let ys = self.slot(ss.rows, ss.cols, place_of(*y));
                    match bias {
                        Some(w) => {
                            let b = self.bias_for(layer, *w, ys.place, ys.cols, false, &mut ins)?;
                            ins.push(Instr::BiasResidual {
                                res: ss.buf,
                                a: bs.buf,
                                bias: b,
                                y: ys.buf,
                                rows: ys.rows,
                                cols: ys.cols,
                            });
                        }
                        None => {
                            ins.push(Instr::Copy {
                                src: Strided::at(ss.buf, 0, ss.cols),
                                dst: Strided::at(ys.buf, 0, ys.cols),
                                rows: ss.rows,
                                cols: ss.cols,
                            });
                            ins.push(Instr::Add {
                                y: ys.buf,
                                x: bs.buf,
                                n: ys.len(),
                            });
                        }
                    }
                    saved.vals[*y] = Some(ys);
                }
                Step::Redistribute(rd) => {
                    let s = get(&saved.vals, rd.from)?;
                    let (shape, by) = self.value_shape(rd.to);
                    let (mv_ins, d) =
                        self.redistribute(s, program.values[rd.to].place, shape, by, rd.mv)?;
                    self.push(Some(op), true, self.all(), mv_ins);
                    saved.vals[rd.to] = Some(d);
                    continue;
                }
            }
            self.push(Some(op), false, self.all(), ins);
        }
        let out = saved.vals[program.output]
            .ok_or_else(|| refuse("the program never makes its output"))?;
        Ok((saved, out))
    }

    /// Adds `g` to the gradient slot of `v` (a new buffer: the old one may be shared).
    fn accumulate(
        &mut self,
        grads: &mut [Option<Slot>],
        v: ValueId,
        g: Slot,
        out: &mut Vec<Instr>,
    ) -> Result<(), GpuError> {
        match grads[v] {
            None => grads[v] = Some(g),
            Some(have) => {
                if have.place != g.place || (have.rows, have.cols) != (g.rows, g.cols) {
                    return Err(refuse(format!(
                        "two gradients of {} arrive held differently ({:?} and {:?}); the GPU \
                         adds gradients held alike only",
                        self.program.values[v].tensor.name(),
                        have.place,
                        g.place
                    )));
                }
                let sum = self.copy_of(have, out);
                out.push(Instr::Add {
                    y: sum.buf,
                    x: g.buf,
                    n: sum.len(),
                });
                grads[v] = Some(sum);
            }
        }
        Ok(())
    }

    fn add_param(
        &mut self,
        acc: &mut [Option<(BufIx, [usize; 2])>],
        kind: ParamKind,
        g: (BufIx, [usize; 2]),
        out: &mut Vec<Instr>,
    ) {
        let k = param_index(kind);
        match acc[k] {
            Some((have, shape)) if shape == g.1 => {
                let s = Slot {
                    buf: have,
                    rows: shape[0],
                    cols: shape[1],
                    place: Place::Replicate,
                };
                let sum = self.copy_of(s, out);
                out.push(Instr::Add {
                    y: sum.buf,
                    x: g.0,
                    n: shape[0] * shape[1],
                });
                acc[k] = Some((sum.buf, shape));
            }
            _ => acc[k] = Some(g),
        }
    }

    fn bias_grads(
        &mut self,
        acc: &mut [Option<(BufIx, [usize; 2])>],
        w: Weight,
        g: Slot,
        out: &mut Vec<Instr>,
    ) {
        let db = self.buf(g.cols, Init::Zero);
        out.push(Instr::ColSum {
            x: g.buf,
            out: db,
            rows: g.rows,
            cols: g.cols,
        });
        self.add_param(acc, weight_param(w).1, (db, [1, g.cols]), out);
    }

    fn backward(
        &mut self,
        saved: &mut Saved,
        dy: Slot,
    ) -> Result<(Slot, Vec<ParamGrad>), GpuError> {
        let program = self.program;
        let cfg = self.cfg;
        let layer = self.layer;
        let values = &program.values;
        let mut grads: Vec<Option<Slot>> = vec![None; values.len()];
        let mut acc: Vec<Option<(BufIx, [usize; 2])>> = vec![None; ParamKind::ALL.len()];
        grads[program.output] = Some(dy);
        let take = |grads: &mut [Option<Slot>], v: ValueId| {
            grads[v].take().ok_or_else(|| {
                refuse(format!(
                    "the gradient of {} is not there when the backward reads it",
                    values[v].tensor.name()
                ))
            })
        };
        let val = |saved: &Saved, v: ValueId| {
            saved.vals[v].ok_or_else(|| {
                refuse(format!(
                    "the backward reads {}, which the forward did not keep",
                    values[v].tensor.name()
                ))
            })
        };
        for bstep in &program.backward {
            let mut ins = Vec::new();
            match bstep {
                BackStep::GradMove { value, to, mv, .. } => {
                    let g = take(&mut grads, *value)?;
                    let (shape, by) = self.value_shape(*value);
                    self.grad = true;
                    let moved = self.redistribute(g, *to, shape, by, *mv);
                    self.grad = false;
                    let (mv_ins, d) = moved?;
                    let op = back_op(program, bstep);
                    self.push(op, true, self.all(), mv_ins);
                    grads[*value] = Some(d);
                }
                BackStep::Regather { value, source } => {
                    let s = val(saved, *source)?;
                    let (shape, by) = self.value_shape(*value);
                    let to = values[*value].place;
                    let mv = Move::between(s.place, to).unwrap_or(Move::AllGather);
                    let (mv_ins, d) = self.redistribute(s, to, shape, by, mv)?;
                    self.push(back_op(program, bstep), true, self.all(), mv_ins);
                    saved.vals[*value] = Some(d);
                }
                BackStep::PassThrough { value, .. } => {
                    let op = identity_op(program, *value, Pass::Backward);
                    self.push(Some(op), true, self.all(), Vec::new());
                }
                BackStep::KvGradSum { groups } => {
                    let q = cfg.heads_per_rank() * cfg.head_dim();
                    let (kw, kb) = (ParamKind::QkvWeight, ParamKind::QkvBias);
                    let (Some((gw, [wr, wc])), Some((gb, [_, bc]))) =
                        (acc[param_index(kw)], acc[param_index(kb)])
                    else {
                        return Err(refuse("the K and V gradients are summed before they exist"));
                    };
                    if wc < q || bc != wc {
                        return Err(refuse("the K and V gradients have an unexpected width"));
                    }
                    let kvc = wc - q;
                    for group in groups {
                        let staging = self.buf(wr * kvc + kvc, Init::Zero);
                        let mut g_ins = Vec::new();
                        for unpack in [false, true] {
                            let pairs = [
                                (Strided::at(gw, q, wc), Strided::at(staging, 0, kvc), wr),
                                (
                                    Strided::at(gb, q, bc),
                                    Strided::at(staging, wr * kvc, kvc),
                                    1,
                                ),
                            ];
                            for (m, p, rows) in pairs {
                                let (src, dst) = if unpack { (p, m) } else { (m, p) };
                                g_ins.push(Instr::Copy {
                                    src,
                                    dst,
                                    rows,
                                    cols: kvc,
                                });
                            }
                            if !unpack {
                                g_ins.push(Instr::AllReduce {
                                    buf: staging,
                                    len: wr * kvc + kvc,
                                });
                            }
                        }
                        self.push(Some(Op::KvGrads), true, group.clone(), g_ins);
                    }
                }
                BackStep::ParamGradSum { params } => {
                    let present: Vec<(BufIx, usize)> = params
                        .iter()
                        .filter_map(|k| acc[param_index(*k)])
                        .map(|(b, [r, c])| (b, r * c))
                        .collect();
                    let total: usize = present.iter().map(|p| p.1).sum();
                    let staging = self.buf(total, Init::Zero);
                    let mut o = 0;
                    for &(b, n) in &present {
                        ins.push(Instr::Copy {
                            src: Strided::at(b, 0, n),
                            dst: Strided::at(staging, o, n),
                            rows: 1,
                            cols: n,
                        });
                        o += n;
                    }
                    ins.push(Instr::AllReduce {
                        buf: staging,
                        len: total,
                    });
                    o = 0;
                    for &(b, n) in &present {
                        ins.push(Instr::Copy {
                            src: Strided::at(staging, o, n),
                            dst: Strided::at(b, 0, n),
                            rows: 1,
                            cols: n,
                        });
                        o += n;
                    }
                    self.push(Some(Op::SpGrads), true, self.all(), ins);
                }
                BackStep::ParamGradGather { param } => {
                    let k = param_index(*param);
                    let [rows, cols] = param.shape(cfg);
                    let Some((b, [lr, lc])) = acc[k] else {
                        return Err(refuse(format!(
                            "{} is gathered before it exists",
                            param.name(layer)
                        )));
                    };
                    let s = Slot {
                        buf: b,
                        rows: lr,
                        cols: lc,
                        place: Place::Features,
                    };
                    self.grad = true;
                    let moved = self.redistribute(
                        s,
                        Place::Replicate,
                        [rows, cols],
                        by_heads_param(*param),
                        Move::AllGather,
                    );
                    self.grad = false;
                    let (g_ins, d) = moved?;
                    acc[k] = Some((d.buf, [rows, cols]));
                    self.push(Some(Op::ParamGradGather), true, self.all(), g_ins);
                }
                BackStep::Grad { index } => {
                    let i = *index;
                    let step = &program.forward[i];
                    let op = grad_op(program, step);
                    match step {
                        Step::Residual {
                            stream,
                            branch,
                            y,
                            bias,
                        } => {
                            let g = take(&mut grads, *y)?;
                            if let Some(w) = bias {
                                self.bias_grads(&mut acc, *w, g, &mut ins);
                            }
                            let bg = Slot {
                                place: values[*branch].place.grad(),
                                ..g
                            };
                            self.accumulate(&mut grads, *branch, bg, &mut ins)?;
                            self.accumulate(&mut grads, *stream, g, &mut ins)?;
                        }
                        Step::Bias { x, y, weight, .. } => {
                            let g = take(&mut grads, *y)?;
                            self.bias_grads(&mut acc, *weight, g, &mut ins);
                            let gx = Slot {
                                place: values[*x].place.grad(),
                                ..g
                            };
                            self.accumulate(&mut grads, *x, gx, &mut ins)?;
                        }
                        Step::Gelu { a, u } => {
                            let g = take(&mut grads, *u)?;
                            let as_ = val(saved, *a)?;
                            let dx = self.slot(g.rows, g.cols, values[*a].place.grad());
                            ins.push(Instr::GeluBwd {
                                dy: g.buf,
                                a: as_.buf,
                                dx: dx.buf,
                                n: g.len(),
                            });
                            self.accumulate(&mut grads, *a, dx, &mut ins)?;
                        }
                        Step::Attention { qkv, ctx } => {
                            let g = take(&mut grads, *ctx)?;
                            let qs = val(saved, *qkv)?;
                            let probs = saved.probs[i].ok_or_else(|| {
                                refuse("the attention probabilities were not kept")
                            })?;
                            let (hl, kvl) = local_heads(self.cfg, qs.place);
                            let ag = AttentionGemms::new(cfg.seq, hl, kvl, cfg.head_dim());
                            let dprobs = self.buf(ag.scores_len(cfg.batch), Init::Zero);
                            let dq = self.slot(qs.rows, qs.cols, values[*qkv].place.grad());
                            for b in 0..cfg.batch {
                                attn(
                                    &mut ins,
                                    &ag,
                                    AttnProduct::DProbs,
                                    b,
                                    [g.buf, qs.buf, dprobs],
                                );
                                attn(&mut ins, &ag, AttnProduct::DV, b, [probs, g.buf, dq.buf]);
                            }
                            ins.push(Instr::SoftmaxBwd {
                                probs,
                                dprobs,
                                rows: cfg.batch * hl * cfg.seq,
                                seq: cfg.seq,
                            });
                            for b in 0..cfg.batch {
                                attn(&mut ins, &ag, AttnProduct::DQ, b, [dprobs, qs.buf, dq.buf]);
                                attn(&mut ins, &ag, AttnProduct::DK, b, [dprobs, qs.buf, dq.buf]);
                            }
                            self.accumulate(&mut grads, *qkv, dq, &mut ins)?;
                        }
                        Step::LayerNorm { norm, x, y } => {
                            let g = take(&mut grads, *y)?;
                            let xs = val(saved, *x)?;
                            let (wk, bk) = norm.params();
                            let (mean, rstd) = saved.ln[i]
                                .ok_or_else(|| refuse("the LayerNorm statistics were not kept"))?;
                            let place = values[*x].place.grad();
                            // The residual's gradient already on `x` is added in the same pass.
                            let res = match grads[*x] {
                                Some(h)
                                    if h.place == place && (h.rows, h.cols) == (g.rows, g.cols) =>
                                {
                                    grads[*x] = None;
                                    Some(h)
                                }
                                _ => None,
                            };
                            let resid = match res {
                                Some(h) => h.buf,
                                None => self.buf(g.len(), Init::Zero),
                            };
                            let dx = self.slot(g.rows, g.cols, place);
                            let dw = self.buf(g.cols, Init::Zero);
                            let db = self.buf(g.cols, Init::Zero);
                            ins.push(Instr::LnBwd {
                                dy: g.buf,
                                x: xs.buf,
                                w: self.param_buf(layer, wk),
                                mean,
                                rstd,
                                resid,
                                dx: dx.buf,
                                dw,
                                db,
                                rows: g.rows,
                                h: g.cols,
                            });
                            self.add_param(&mut acc, wk, (dw, [1, g.cols]), &mut ins);
                            self.add_param(&mut acc, bk, (db, [1, g.cols]), &mut ins);
                            if res.is_some() {
                                grads[*x] = Some(dx);
                            } else {
                                self.accumulate(&mut grads, *x, dx, &mut ins)?;
                            }
                        }
                        Step::Linear { weight, x, y, bias } => {
                            let g = take(&mut grads, *y)?;
                            let xs = val(saved, *x)?;
                            let (wk, _) = weight_param(*weight);
                            let [k, nn] = self.param(layer, wk)?;
                            if g.cols != nn || xs.rows != g.rows || xs.cols != k {
                                return Err(refuse(format!(
                                    "{}'s backward reads shapes that do not chain",
                                    wk.name(layer)
                                )));
                            }
                            let dw = self.buf(k * nn, Init::Zero);
                            ins.push(Instr::Gemm {
                                g: RowGemm::plain(k, nn, g.rows, true, false),
                                a: (xs.buf, 0),
                                b: (g.buf, 0),
                                c: (dw, 0),
                            });
                            if *bias {
                                self.bias_grads(&mut acc, *weight, g, &mut ins);
                            }
                            let place =
                                linear_grad_input(program.plan.split(*weight), values[*x].place);
                            let dx = self.slot(g.rows, k, place);
                            ins.push(Instr::Gemm {
                                g: RowGemm::plain(g.rows, k, nn, false, true),
                                a: (g.buf, 0),
                                b: (self.param_buf(layer, wk), 0),
                                c: (dx.buf, 0),
                            });
                            self.add_param(&mut acc, wk, (dw, [k, nn]), &mut ins);
                            self.accumulate(&mut grads, *x, dx, &mut ins)?;
                        }
                        Step::Redistribute(rd) => {
                            if let Some(g) = grads[rd.to].take() {
                                let target = values[rd.from].place.grad();
                                if g.place != target {
                                    return Err(refuse(
                                        "a gradient arrives held unlike its source's (a broken \
                                         program); the GPU runs valid plans only",
                                    ));
                                }
                                self.accumulate(&mut grads, rd.from, g, &mut ins)?;
                            }
                        }
                    }
                    self.push(op, false, self.all(), ins);
                }
            }
        }
        let dx = grads[program.input]
            .take()
            .ok_or_else(|| refuse("the backward never reaches the block's input"))?;
        let mut out = Vec::with_capacity(ParamKind::ALL.len());
        for kind in ParamKind::ALL {
            let shard = self.param(layer, kind)?;
            let (b, shape) = match acc[param_index(kind)] {
                Some(g) => g,
                // A parameter nothing reads keeps a zero gradient.
                None => (self.buf(shard[0] * shard[1], Init::Zero), shard),
            };
            if shape != shard {
                return Err(refuse(format!(
                    "the gradient of {} is {shape:?}; its shard is {shard:?}",
                    kind.name(layer)
                )));
            }
            out.push((kind, b, shape));
        }
        Ok((dx, out))
    }
}

/// The attention's batched products of sequence `b` on buffers `[A, B, C]`.
fn attn(
    out: &mut Vec<Instr>,
    ag: &AttentionGemms,
    which: AttnProduct,
    b: usize,
    [a, bb, c]: [BufIx; 3],
) {
    for p in ag.products(which, b) {
        out.push(Instr::Gemm {
            g: p.gemm,
            a: (a, p.a),
            b: (bb, p.b),
            c: (c, p.c),
        });
    }
}

/// Lowers `program` (valid, propagated for `cfg`) over `cfg.layers` layers. The first
/// `layers · ParamKind::ALL.len()` buffers are the parameter shards, layer by layer in
/// `ParamKind::ALL` order.
pub fn lower(cfg: &Config, program: &Program) -> Result<Lowered, GpuError> {
    if !program.valid() {
        let why = program
            .errors
            .first()
            .map(|e| e.rule.clone())
            .unwrap_or_default();
        return Err(refuse(format!(
            "the GPU runs valid plans only; this one is refused: {why}"
        )));
    }
    if program.tp != cfg.tp.max(1) {
        return Err(refuse(format!(
            "the program is for {} GPUs, the config for {}",
            program.tp, cfg.tp
        )));
    }
    let values = &program.values;
    if values[program.input].place != values[program.output].place {
        return Err(refuse(
            "the block's output is held unlike its input, so the layers do not chain",
        ));
    }
    let mut l = Lower {
        cfg,
        program,
        tp: cfg.tp.max(1),
        bufs: Vec::new(),
        stats: Vec::new(),
        blocks: Vec::new(),
        layer: 0,
        pass: Pass::Forward,
        grad: false,
    };
    for layer in 0..cfg.layers {
        for kind in ParamKind::ALL {
            let [r, c] = l.param(layer, kind)?;
            l.buf(r * c, Init::Param { layer, kind });
        }
    }
    let in_place = values[program.input].place;
    let [r, c] = local_shape(cfg, Tensor::X.shape(cfg), in_place, false)?;
    let mut x = Slot {
        buf: l.buf(r * c, Init::Input(in_place)),
        rows: r,
        cols: c,
        place: in_place,
    };
    let mut saved = Vec::with_capacity(cfg.layers);
    for layer in 0..cfg.layers {
        l.layer = layer;
        let (s, out) = l.forward(x)?;
        saved.push(s);
        x = out;
    }
    let output = x;
    l.pass = Pass::Backward;
    let out_place = values[program.output].place.grad();
    let [r, c] = local_shape(cfg, Tensor::Y.shape(cfg), out_place, false)?;
    let mut dy = Slot {
        buf: l.buf(r * c, Init::GradOutput(out_place)),
        rows: r,
        cols: c,
        place: out_place,
    };
    let mut grads = vec![Vec::new(); cfg.layers];
    for layer in (0..cfg.layers).rev() {
        l.layer = layer;
        let mut s = saved
            .pop()
            .ok_or_else(|| refuse("a layer's forward was not kept"))?;
        let (dx, g) = l.backward(&mut s, dy)?;
        grads[layer] = g;
        dy = dx;
    }
    Ok(Lowered {
        tp: l.tp,
        bufs: l.bufs,
        stats: l.stats,
        blocks: l.blocks,
        output,
        grad_input: dy,
        grads,
    })
}

#[cfg(test)]
mod tests;
