//! The executor of a propagated [`Program`]: every GPU's local tensors, step by step, forward and
//! backward, with the collectives done on virtual GPUs. It knows no plan: Megatron's program is
//! one input among all the others. The kernels are the sharded executor's ([`super::kernels`]:
//! products into pooled buffers, blocked causal attention, row-wise LayerNorm) without its
//! fusions, and the plain LayerNorm backward ([`crate::block::ops`]); the unsharded reference
//! ([`crate::block::reference`]) stays the separate oracle it is compared with.
//!
//! A program a learner broke (`allow_wrong`) runs too: where an op reads a value held in a
//! placement it refuses, each GPU uses what it alone holds as if it were what the op needs
//! (a partial sum as the whole sum; its own slice, zeros elsewhere, as the whole tensor), which
//! is exactly what the GPUs of such a program would compute.

use super::kernels;
use crate::block::design::plan::Weight;
use crate::block::design::program::{
    feature_ranges, param_layout, weight_param, BackStep, ParamLayout, Place, Program, Step,
    Tensor, Value, ValueId,
};
use crate::block::ops::{self, AttnCache, LnCache};
use crate::config::Config;
use crate::dtype::Element;
use crate::params::{LayerParams, Model, ParamKind};
use ndarray::{concatenate, s, Array2, ArrayView2, Axis};
use thiserror::Error;

/// `f` on every rank, the ranks side by side on the thread pool as on GPUs (one rank runs on the
/// caller's thread, so its products keep the whole pool), results in rank order.
fn each_rank<R: Send>(
    tp: usize,
    f: impl Fn(usize) -> Result<R, ExecError> + Sync + Send,
) -> Result<Vec<R>, ExecError> {
    use rayon::prelude::*;
    if tp <= 1 {
        (0..tp).map(f).collect()
    } else {
        (0..tp).into_par_iter().map(f).collect()
    }
}

/// Why a program could not be run.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ExecError {
    #[error(
        "step {step}: {tensor} is not there on GPU {rank} (the program reads it before it is made)"
    )]
    Missing {
        step: usize,
        tensor: &'static str,
        rank: usize,
    },
    #[error("step {step}: {what} on GPU {rank} has shape {got:?}, the product needs {want:?}")]
    Shape {
        step: usize,
        what: &'static str,
        rank: usize,
        got: [usize; 2],
        want: [usize; 2],
    },
}

/// What every GPU holds of one value or gradient.
#[derive(Debug, Clone)]
pub struct Local<T> {
    pub place: Place,
    pub ranks: Vec<Array2<T>>,
}

/// Everything a run of the program produced, per GPU.
#[derive(Debug, Clone)]
pub struct ProgramRun<T> {
    /// The stack's output, as the program holds it.
    pub output: Local<T>,
    pub grad_input: Local<T>,
    /// Each GPU's parameter gradients per layer, `[rank][layer]`, laid out as the plan splits
    /// each parameter.
    pub grads: Vec<Vec<LayerParams<T>>>,
}

fn dims<T>(a: &Array2<T>) -> [usize; 2] {
    let (r, c) = a.dim();
    [r, c]
}

/// Rank `r`'s even share of `rows` rows (the tokens of an activation, a weight's input rows).
fn row_share(cfg: &Config, rows: usize, r: usize) -> std::ops::Range<usize> {
    let [a, b] = crate::block::design::program::even(rows, cfg.tp, r);
    a..b
}

/// Rank `r`'s part of a full tensor held as `place`. `by_heads`: the QKV-wide layout.
fn part<T: Element>(
    cfg: &Config,
    place: Place,
    by_heads: bool,
    full: ArrayView2<'_, T>,
    r: usize,
) -> Array2<T> {
    match place {
        Place::Replicate | Place::Partial => full.to_owned(),
        Place::Tokens => {
            let rows = row_share(cfg, full.nrows(), r);
            full.slice(s![rows, ..]).to_owned()
        }
        Place::Features => columns(full, &feature_ranges(cfg, full.ncols(), by_heads, r)),
    }
}

fn columns<T: Element>(full: ArrayView2<'_, T>, ranges: &[[usize; 2]]) -> Array2<T> {
    let views: Vec<ArrayView2<'_, T>> = ranges
        .iter()
        .map(|[a, b]| full.slice(s![.., *a..*b]))
        .collect();
    concatenate(Axis(1), &views).unwrap_or_else(|_| Array2::zeros((full.nrows(), 0)))
}

/// Writes rank `r`'s part of a `place`d tensor into `full` (a partial sum is added).
fn place_into<T: Element>(
    cfg: &Config,
    place: Place,
    by_heads: bool,
    full: &mut Array2<T>,
    local: ArrayView2<'_, T>,
    r: usize,
) {
    match place {
        Place::Replicate => full.assign(&local),
        Place::Partial => *full += &local,
        Place::Tokens => {
            let rows = row_share(cfg, full.nrows(), r);
            if rows.len() == local.nrows() && full.ncols() == local.ncols() {
                full.slice_mut(s![rows, ..]).assign(&local);
            }
        }
        Place::Features => {
            let mut off = 0;
            for [a, b] in feature_ranges(cfg, full.ncols(), by_heads, r) {
                let n = b - a;
                if off + n <= local.ncols() && full.nrows() == local.nrows() {
                    full.slice_mut(s![.., a..b])
                        .assign(&local.slice(s![.., off..off + n]));
                }
                off += n;
            }
        }
    }
}

/// The full tensor a placement's parts make: the sum of partial sums, the joined slices, or the
/// (first GPU's) whole copy.
pub fn assemble<T: Element>(
    cfg: &Config,
    l: &Local<T>,
    shape: [usize; 2],
    by_heads: bool,
) -> Array2<T> {
    let mut full = Array2::<T>::zeros((shape[0], shape[1]));
    match l.place {
        Place::Replicate => {
            if let Some(first) = l.ranks.first() {
                if dims(first) == shape {
                    full.assign(first);
                }
            }
        }
        _ => {
            for (r, local) in l.ranks.iter().enumerate() {
                place_into(cfg, l.place, by_heads, &mut full, local.view(), r);
            }
        }
    }
    full
}

/// Changes the placement of `l` to `to`, as the collective does (the sum is added in rank order).
fn convert<T: Element>(
    cfg: &Config,
    l: &Local<T>,
    to: Place,
    shape: [usize; 2],
    by_heads: bool,
) -> Local<T> {
    if l.place == to {
        return l.clone();
    }
    if l.place == Place::Replicate {
        // A local slice: each GPU cuts its part of its own copy.
        return Local {
            place: to,
            ranks: l
                .ranks
                .iter()
                .enumerate()
                .map(|(r, full)| part(cfg, to, by_heads, full.view(), r))
                .collect(),
        };
    }
    let full = assemble(cfg, l, shape, by_heads);
    Local {
        place: to,
        ranks: (0..l.ranks.len())
            .map(|r| part(cfg, to, by_heads, full.view(), r))
            .collect(),
    }
}

/// A misread: each GPU takes what it alone holds (zeros where it holds nothing) as if it were
/// held as `to`.
fn misread<T: Element>(
    cfg: &Config,
    l: &Local<T>,
    to: Place,
    shape: [usize; 2],
    by_heads: bool,
) -> Local<T> {
    Local {
        place: to,
        ranks: l
            .ranks
            .iter()
            .enumerate()
            .map(|(r, local)| {
                let mut own = Array2::<T>::zeros((shape[0], shape[1]));
                match l.place {
                    Place::Replicate | Place::Partial => {
                        if dims(local) == shape {
                            own.assign(local);
                        }
                    }
                    p => place_into(cfg, p, by_heads, &mut own, local.view(), r),
                }
                part(cfg, to, by_heads, own.view(), r)
            })
            .collect(),
    }
}

/// The placement a parameter's layout is (its rows are `Shard(0)`, its columns `Shard(1)`).
fn param_place(layout: ParamLayout) -> Place {
    match layout {
        ParamLayout::Whole => Place::Replicate,
        ParamLayout::Rows => Place::Tokens,
        ParamLayout::Columns => Place::Features,
    }
}

/// Rank `r`'s shard of a parameter under the program's plan.
pub fn shard_param<T: Element>(
    cfg: &Config,
    layout: ParamLayout,
    kind: ParamKind,
    full: ArrayView2<'_, T>,
    r: usize,
) -> Array2<T> {
    part(cfg, param_place(layout), by_heads_param(kind), full, r)
}

fn by_heads_param(kind: ParamKind) -> bool {
    matches!(kind, ParamKind::QkvWeight | ParamKind::QkvBias)
}

/// A parameter's full gradient from every GPU's shard (a whole one: GPU 0's copy).
pub fn assemble_param<T: Element>(
    cfg: &Config,
    layout: ParamLayout,
    kind: ParamKind,
    shards: &[&Array2<T>],
) -> Array2<T> {
    let l = Local {
        place: param_place(layout),
        ranks: shards.iter().map(|a| (*a).clone()).collect(),
    };
    assemble(cfg, &l, kind.shape(cfg), by_heads_param(kind))
}

/// The placement of a linear layer's input gradient `dX = dY·Wᵀ`.
pub fn linear_grad_input(split: crate::block::design::plan::Split, x: Place) -> Place {
    use crate::block::design::plan::Split;
    match (split, x) {
        (Split::Columns, _) => Place::Partial,
        (Split::Rows, _) => Place::Features,
        (Split::Replicate, Place::Partial) => Place::Replicate,
        (Split::Replicate, p) => p,
    }
}

struct Caches<T> {
    ln: Vec<Option<Vec<LnCache<T>>>>,
    attn: Vec<Option<Vec<AttnCache<T>>>>,
}

/// Runs `program` over every layer of `model` on `cfg.tp` virtual GPUs.
pub fn run_program<T: Element>(
    cfg: &Config,
    program: &Program,
    model: &Model<T>,
) -> Result<ProgramRun<T>, ExecError> {
    let tp = cfg.tp.max(1);
    let plan = &program.plan;
    let shards: Vec<Vec<LayerParams<T>>> = model
        .layers
        .iter()
        .map(|layer| {
            (0..tp)
                .map(|r| {
                    LayerParams::from_fn(|k| {
                        shard_param(cfg, param_layout(plan, k), k, layer.get(k).view(), r)
                    })
                })
                .collect()
        })
        .collect();
    let values = &program.values;
    let stream = values[program.input].place;
    let mut x = Local {
        place: stream,
        ranks: (0..tp)
            .map(|r| part(cfg, stream, false, model.input.view(), r))
            .collect(),
    };
    let mut saved: Vec<Forward<T>> = Vec::new();
    for p in &shards {
        let (vals, caches) = forward(cfg, program, p, x)?;
        x = vals[program.output].clone().ok_or(ExecError::Missing {
            step: program.forward.len(),
            tensor: "Y",
            rank: 0,
        })?;
        saved.push((vals, caches));
    }
    let output = x;
    let out_place = values[program.output].place.grad();
    let mut dy = Local {
        place: out_place,
        ranks: (0..tp)
            .map(|r| part(cfg, out_place, false, model.grad_output.view(), r))
            .collect(),
    };
    let mut grads_rl: Vec<Vec<LayerParams<T>>> = vec![Vec::new(); tp];
    for (layer, (vals, caches)) in saved.iter_mut().enumerate().rev() {
        let (dx, layer_grads) = backward(cfg, program, &shards[layer], vals, caches, dy)?;
        dy = dx;
        for (r, g) in layer_grads.into_iter().enumerate() {
            grads_rl[r].push(g);
        }
    }
    for g in &mut grads_rl {
        g.reverse();
    }
    Ok(ProgramRun {
        output,
        grad_input: dy,
        grads: grads_rl,
    })
}

fn get<'a, T>(
    vals: &'a [Option<Local<T>>],
    v: ValueId,
    step: usize,
    values: &[Value],
) -> Result<&'a Local<T>, ExecError> {
    vals.get(v)
        .and_then(Option::as_ref)
        .ok_or(ExecError::Missing {
            step,
            tensor: values.get(v).map_or("?", |x| x.tensor.name()),
            rank: 0,
        })
}

fn check_chain<T>(
    step: usize,
    what: &'static str,
    rank: usize,
    a: &Array2<T>,
    k: usize,
) -> Result<(), ExecError> {
    if a.ncols() == k {
        Ok(())
    } else {
        Err(ExecError::Shape {
            step,
            what,
            rank,
            got: dims(a),
            want: [a.nrows(), k],
        })
    }
}

/// The bias vector rank `r` adds to a value held as `place`.
fn bias_part<T: Element>(
    cfg: &Config,
    full: &Array2<T>,
    place: Place,
    by_heads: bool,
    r: usize,
) -> Array2<T> {
    match place {
        Place::Features => columns(full.view(), &feature_ranges(cfg, full.ncols(), by_heads, r)),
        _ => full.clone(),
    }
}

/// Local heads (query, KV) of an attention on QKV held as `place`.
fn local_heads(cfg: &Config, place: Place) -> (usize, usize) {
    match place {
        Place::Features => (cfg.heads_per_rank(), cfg.kv_heads_per_rank()),
        _ => (cfg.heads, cfg.kv_heads()),
    }
}

type Forward<T> = (Vec<Option<Local<T>>>, Caches<T>);

// `r` indexes a rank's parameters, inputs and outputs together.
#[allow(clippy::needless_range_loop)]
fn forward<T: Element>(
    cfg: &Config,
    program: &Program,
    p: &[LayerParams<T>],
    input: Local<T>,
) -> Result<Forward<T>, ExecError> {
    let values = &program.values;
    let tp = cfg.tp.max(1);
    let mut vals: Vec<Option<Local<T>>> = vec![None; values.len()];
    let mut caches = Caches {
        ln: (0..program.forward.len()).map(|_| None).collect(),
        attn: (0..program.forward.len()).map(|_| None).collect(),
    };
    vals[program.input] = Some(input);
    let full_bias = |w: Weight, r: usize| p[r].get(weight_param(w).1).clone();
    for (i, step) in program.forward.iter().enumerate() {
        match step {
            Step::LayerNorm { norm, x, y } => {
                let xl = get(&vals, *x, i, values)?;
                let (wk, bk) = norm.params();
                // The ranks side by side, as on GPUs.
                let (outs, cs): (Vec<_>, Vec<_>) = each_rank(tp, |r| {
                    check_chain(i, "LayerNorm input", r, &xl.ranks[r], cfg.hidden)?;
                    Ok(kernels::layer_norm(
                        xl.ranks[r].view(),
                        p[r].get(wk).view(),
                        p[r].get(bk).view(),
                    ))
                })?
                .into_iter()
                .unzip();
                caches.ln[i] = Some(cs);
                vals[*y] = Some(Local {
                    place: values[*y].place,
                    ranks: outs,
                });
            }
            Step::Linear { weight, x, y, bias } => {
                let xl = get(&vals, *x, i, values)?;
                let (wk, bk) = weight_param(*weight);
                let outs = each_rank(tp, |r| {
                    let w = p[r].get(wk);
                    check_chain(i, "linear input", r, &xl.ranks[r], w.nrows())?;
                    let mut o = kernels::matmul(xl.ranks[r].view(), w.view());
                    if *bias {
                        o += &p[r].get(bk).view();
                    }
                    Ok(o)
                })?;
                vals[*y] = Some(Local {
                    place: values[*y].place,
                    ranks: outs,
                });
            }
            Step::Attention { qkv, ctx } => {
                let ql = get(&vals, *qkv, i, values)?;
                let (hl, kvl) = local_heads(cfg, values[*qkv].place);
                let want = (hl + 2 * kvl) * cfg.head_dim();
                let (outs, cs): (Vec<_>, Vec<_>) = each_rank(tp, |r| {
                    check_chain(i, "attention's QKV", r, &ql.ranks[r], want)?;
                    Ok(kernels::attention(
                        ql.ranks[r].view(),
                        cfg.batch,
                        cfg.seq,
                        hl,
                        kvl,
                    ))
                })?
                .into_iter()
                .unzip();
                caches.attn[i] = Some(cs);
                vals[*ctx] = Some(Local {
                    place: values[*ctx].place,
                    ranks: outs,
                });
            }
            Step::Gelu { a, u } => {
                let al = get(&vals, *a, i, values)?;
                let outs = al.ranks.iter().map(|x| kernels::gelu(x.view())).collect();
                vals[*u] = Some(Local {
                    place: values[*u].place,
                    ranks: outs,
                });
            }
            Step::Bias { x, y, weight, once } => {
                let xl = get(&vals, *x, i, values)?;
                let place = values[*y].place;
                let heads = values[*y].tensor == Tensor::Qkv;
                let mut outs = Vec::with_capacity(tp);
                for r in 0..tp {
                    let mut o = xl.ranks[r].clone();
                    if !*once || r == 0 {
                        let b = bias_part(cfg, &full_bias(*weight, r), place, heads, r);
                        check_chain(i, "bias", r, &o, b.ncols())?;
                        o += &b.view();
                    }
                    outs.push(o);
                }
                vals[*y] = Some(Local { place, ranks: outs });
            }
            Step::Residual {
                stream,
                branch,
                y,
                bias,
            } => {
                let sl = get(&vals, *stream, i, values)?;
                let bl = get(&vals, *branch, i, values)?;
                let mut outs = Vec::with_capacity(tp);
                for r in 0..tp {
                    if bl.ranks[r].dim() != sl.ranks[r].dim() {
                        return Err(ExecError::Shape {
                            step: i,
                            what: "residual branch",
                            rank: r,
                            got: dims(&bl.ranks[r]),
                            want: dims(&sl.ranks[r]),
                        });
                    }
                    let mut o = &sl.ranks[r] + &bl.ranks[r];
                    if let Some(w) = bias {
                        o += &full_bias(*w, r).view();
                    }
                    outs.push(o);
                }
                vals[*y] = Some(Local {
                    place: values[*y].place,
                    ranks: outs,
                });
            }
            Step::Redistribute(rd) => {
                let l = get(&vals, rd.from, i, values)?;
                let to = values[rd.to];
                let shape = to.tensor.shape(cfg);
                let heads = to.tensor == Tensor::Qkv;
                let moved = if to.mislabelled {
                    misread(cfg, l, to.place, shape, heads)
                } else {
                    convert(cfg, l, to.place, shape, heads)
                };
                vals[rd.to] = Some(moved);
            }
        }
    }
    Ok((vals, caches))
}

/// Adds `g` to the gradient slot of value `v` (bringing a stray placement to the slot's).
fn accumulate<T: Element>(
    cfg: &Config,
    grads: &mut [Option<Local<T>>],
    v: ValueId,
    g: Local<T>,
    value: &Value,
) {
    let shape = value.tensor.shape(cfg);
    let heads = value.tensor == Tensor::Qkv;
    match &mut grads[v] {
        slot @ None => *slot = Some(g),
        Some(have) => {
            let g = if g.place == have.place {
                g
            } else {
                convert(cfg, &g, have.place, shape, heads)
            };
            for (a, b) in have.ranks.iter_mut().zip(&g.ranks) {
                if a.dim() == b.dim() {
                    *a += b;
                }
            }
        }
    }
}

fn add_param<T: Element>(
    acc: &mut [Vec<Option<Array2<T>>>],
    kind: ParamKind,
    r: usize,
    g: Array2<T>,
) {
    let slot = &mut acc[r][param_index(kind)];
    match slot {
        Some(a) if a.dim() == g.dim() => *a += &g,
        _ => *slot = Some(g),
    }
}

/// A bias's gradient on every GPU: the column sums of the gradient of what it was added to.
fn add_bias_grads<T: Element>(acc: &mut [Vec<Option<Array2<T>>>], w: Weight, g: &Local<T>) {
    for (r, gr) in g.ranks.iter().enumerate() {
        add_param(acc, weight_param(w).1, r, kernels::col_sum(gr.view()));
    }
}

fn param_index(kind: ParamKind) -> usize {
    ParamKind::ALL.iter().position(|k| *k == kind).unwrap_or(0)
}

type Backward<T> = (Local<T>, Vec<LayerParams<T>>);

// `r` indexes a rank's parameters, gradients and caches together.
#[allow(clippy::needless_range_loop)]
fn backward<T: Element>(
    cfg: &Config,
    program: &Program,
    p: &[LayerParams<T>],
    vals: &mut [Option<Local<T>>],
    caches: &Caches<T>,
    dy: Local<T>,
) -> Result<Backward<T>, ExecError> {
    let values = &program.values;
    let plan = &program.plan;
    let tp = cfg.tp.max(1);
    let mut grads: Vec<Option<Local<T>>> = vec![None; values.len()];
    let mut pacc: Vec<Vec<Option<Array2<T>>>> = vec![vec![None; ParamKind::ALL.len()]; tp];
    grads[program.output] = Some(dy);
    let take = |grads: &mut [Option<Local<T>>], v: ValueId, i: usize| {
        grads[v].take().ok_or(ExecError::Missing {
            step: i,
            tensor: values[v].tensor.name(),
            rank: 0,
        })
    };
    for (bi, bstep) in program.backward.iter().enumerate() {
        match bstep {
            BackStep::GradMove { value, to, .. } => {
                let g = take(&mut grads, *value, bi)?;
                let v = values[*value];
                grads[*value] = Some(convert(
                    cfg,
                    &g,
                    *to,
                    v.tensor.shape(cfg),
                    v.tensor == Tensor::Qkv,
                ));
            }
            BackStep::Regather { value, source } => {
                // Gathered again from the kept slices: the same values, one more all-gather.
                let src = get(vals, *source, bi, values)?.clone();
                let v = values[*value];
                vals[*value] = Some(convert(
                    cfg,
                    &src,
                    v.place,
                    v.tensor.shape(cfg),
                    v.tensor == Tensor::Qkv,
                ));
            }
            BackStep::KvGradSum { groups } => {
                let q = cfg.heads_per_rank() * cfg.head_dim();
                for kind in [ParamKind::QkvWeight, ParamKind::QkvBias] {
                    let k = param_index(kind);
                    for group in groups {
                        let mut sum: Option<Array2<T>> = None;
                        for &r in group {
                            if let Some(g) = &pacc[r][k] {
                                let kv = g.slice(s![.., q..]).to_owned();
                                sum = Some(match sum {
                                    Some(s) if s.dim() == kv.dim() => s + &kv,
                                    _ => kv,
                                });
                            }
                        }
                        if let Some(sum) = sum {
                            for &r in group {
                                if let Some(g) = &mut pacc[r][k] {
                                    if g.ncols() >= q && g.slice(s![.., q..]).dim() == sum.dim() {
                                        g.slice_mut(s![.., q..]).assign(&sum);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            BackStep::ParamGradSum { params } => {
                for kind in params {
                    let k = param_index(*kind);
                    let mut sum: Option<Array2<T>> = None;
                    for acc in pacc.iter() {
                        if let Some(g) = &acc[k] {
                            sum = Some(match sum {
                                Some(s) if s.dim() == g.dim() => s + g,
                                _ => g.clone(),
                            });
                        }
                    }
                    if let Some(sum) = sum {
                        for acc in pacc.iter_mut() {
                            acc[k] = Some(sum.clone());
                        }
                    }
                }
            }
            BackStep::ParamGradGather { param } => {
                let k = param_index(*param);
                let [rows, cols] = param.shape(cfg);
                let mut full = Array2::<T>::zeros((rows, cols));
                for (r, acc) in pacc.iter().enumerate() {
                    if let Some(g) = &acc[k] {
                        place_into(
                            cfg,
                            Place::Features,
                            by_heads_param(*param),
                            &mut full,
                            g.view(),
                            r,
                        );
                    }
                }
                for acc in pacc.iter_mut() {
                    acc[k] = Some(full.clone());
                }
            }
            BackStep::Grad { index } => {
                let i = *index;
                match &program.forward[i] {
                    Step::Residual {
                        stream,
                        branch,
                        y,
                        bias,
                    } => {
                        let g = take(&mut grads, *y, i)?;
                        if let Some(w) = bias {
                            add_bias_grads(&mut pacc, *w, &g);
                        }
                        let branch_g = Local {
                            place: values[*branch].place.grad(),
                            ranks: g.ranks.clone(),
                        };
                        accumulate(cfg, &mut grads, *branch, branch_g, &values[*branch]);
                        accumulate(cfg, &mut grads, *stream, g, &values[*stream]);
                    }
                    Step::Bias { x, y, weight, .. } => {
                        let g = take(&mut grads, *y, i)?;
                        add_bias_grads(&mut pacc, *weight, &g);
                        let gx = Local {
                            place: values[*x].place.grad(),
                            ranks: g.ranks,
                        };
                        accumulate(cfg, &mut grads, *x, gx, &values[*x]);
                    }
                    Step::Gelu { a, u } => {
                        let g = take(&mut grads, *u, i)?;
                        let al = get(vals, *a, i, values)?;
                        let ranks = al
                            .ranks
                            .iter()
                            .zip(&g.ranks)
                            .map(|(av, gv)| kernels::gelu_backward(av.view(), gv.view()))
                            .collect();
                        let gx = Local {
                            place: values[*a].place.grad(),
                            ranks,
                        };
                        accumulate(cfg, &mut grads, *a, gx, &values[*a]);
                    }
                    Step::Attention { qkv, ctx } => {
                        let g = take(&mut grads, *ctx, i)?;
                        let ql = get(vals, *qkv, i, values)?;
                        let (hl, kvl) = local_heads(cfg, values[*qkv].place);
                        let cs = caches.attn[i].as_ref().ok_or(ExecError::Missing {
                            step: i,
                            tensor: "attention probabilities",
                            rank: 0,
                        })?;
                        let ranks = (0..tp)
                            .map(|r| {
                                kernels::attention_backward(
                                    ql.ranks[r].view(),
                                    &cs[r],
                                    g.ranks[r].view(),
                                    cfg.batch,
                                    cfg.seq,
                                    hl,
                                    kvl,
                                )
                            })
                            .collect();
                        let gx = Local {
                            place: values[*qkv].place.grad(),
                            ranks,
                        };
                        accumulate(cfg, &mut grads, *qkv, gx, &values[*qkv]);
                    }
                    Step::LayerNorm { norm, x, y } => {
                        let g = take(&mut grads, *y, i)?;
                        let (wk, bk) = norm.params();
                        let cs = caches.ln[i].as_ref().ok_or(ExecError::Missing {
                            step: i,
                            tensor: "LayerNorm statistics",
                            rank: 0,
                        })?;
                        let mut ranks = Vec::with_capacity(tp);
                        for r in 0..tp {
                            let (dx, dw, db) = ops::layer_norm_backward(
                                g.ranks[r].view(),
                                &cs[r],
                                p[r].get(wk).view(),
                            );
                            add_param(&mut pacc, wk, r, dw);
                            add_param(&mut pacc, bk, r, db);
                            ranks.push(dx);
                        }
                        let gx = Local {
                            place: values[*x].place.grad(),
                            ranks,
                        };
                        accumulate(cfg, &mut grads, *x, gx, &values[*x]);
                    }
                    Step::Linear { weight, x, y, bias } => {
                        let g = take(&mut grads, *y, i)?;
                        let xl = get(vals, *x, i, values)?;
                        let (wk, bk) = weight_param(*weight);
                        // Each rank's input, weight and bias gradients side by side; the
                        // parameter gradients are then added in rank order.
                        let per_rank = each_rank(tp, |r| {
                            let w = p[r].get(wk);
                            check_chain(i, "output gradient", r, &g.ranks[r], w.ncols())?;
                            if xl.ranks[r].nrows() != g.ranks[r].nrows() {
                                return Err(ExecError::Shape {
                                    step: i,
                                    what: "linear input (rows)",
                                    rank: r,
                                    got: dims(&xl.ranks[r]),
                                    want: [g.ranks[r].nrows(), xl.ranks[r].ncols()],
                                });
                            }
                            let dx = kernels::matmul(g.ranks[r].view(), w.t());
                            let dw = kernels::matmul(xl.ranks[r].t(), g.ranks[r].view());
                            let db = bias.then(|| kernels::col_sum(g.ranks[r].view()));
                            Ok((dx, dw, db))
                        })?;
                        let mut ranks = Vec::with_capacity(tp);
                        for (r, (dx, dw, db)) in per_rank.into_iter().enumerate() {
                            ranks.push(dx);
                            add_param(&mut pacc, wk, r, dw);
                            if let Some(db) = db {
                                add_param(&mut pacc, bk, r, db);
                            }
                        }
                        let gx = Local {
                            place: linear_grad_input(plan.split(*weight), values[*x].place),
                            ranks,
                        };
                        accumulate(cfg, &mut grads, *x, gx, &values[*x]);
                    }
                    Step::Redistribute(rd) => {
                        // The conjugate is its own GradMove step; here the gradient only changes
                        // hands from the moved value to its source.
                        if let Some(g) = grads[rd.to].take() {
                            let from = values[rd.from];
                            let target = from.place.grad();
                            // Only a misread arrives in another placement: each GPU passes back
                            // what it holds as if it were what the source's gradient needs.
                            let g = if g.place == target {
                                g
                            } else {
                                misread(
                                    cfg,
                                    &g,
                                    target,
                                    from.tensor.shape(cfg),
                                    from.tensor == Tensor::Qkv,
                                )
                            };
                            accumulate(cfg, &mut grads, rd.from, g, &from);
                        }
                    }
                }
            }
        }
    }
    let dx = grads[program.input].take().ok_or(ExecError::Missing {
        step: program.backward.len(),
        tensor: "dX",
        rank: 0,
    })?;
    let layer_grads = pacc
        .into_iter()
        .enumerate()
        .map(|(r, acc)| {
            LayerParams::from_fn(|k| {
                acc[param_index(k)].clone().unwrap_or_else(|| {
                    let shard = p[r].get(k);
                    Array2::zeros(shard.dim())
                })
            })
        })
        .collect();
    Ok((dx, layer_grads))
}
