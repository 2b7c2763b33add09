//! The executor of a propagated [`Program`]: every GPU's local tensors, step by step, forward and
//! backward, with the collectives done on virtual GPUs. It knows no plan: Megatron's program is
//! one input among all the others ([`super::sharded`] runs Megatron's split through it). The
//! kernels are [`super::kernels`]' (products into pooled buffers, blocked causal attention,
//! row-wise LayerNorm); a residual add and the LayerNorm that reads it run in one pass, a
//! LayerNorm backward adds the residual's gradient in its own pass, a value nothing reads again
//! is consumed in place, and what the backward does not read is given back to the pool at the
//! end of each layer's forward. Sums (all-reduce, reduce-scatter) and token gathers run through
//! [`crate::collectives`] with the configured algorithm; the precision lab's [`Rounding`] hook
//! sees every forward op's output. The events it issues are its program's trace
//! ([`crate::block::design::trace`]), in order. The unsharded reference
//! ([`crate::block::reference`]) stays the separate oracle it is compared with.
//!
//! A program a learner broke (`allow_wrong`) runs too: where an op reads a value held in a
//! placement it refuses, each GPU uses what it alone holds as if it were what the op needs
//! (a partial sum as the whole sum; its own slice, zeros elsewhere, as the whole tensor), which
//! is exactly what the GPUs of such a program would compute.

use super::kernels;
use super::sharded::{CollectiveRecord, Exact, Issued, Options, Rounding};
use crate::block::design::plan::Weight;
use crate::block::design::program::{
    feature_ranges, param_layout, weight_param, BackStep, Move, ParamLayout, Place, Program, Step,
    Tensor, Value, ValueId,
};
use crate::block::design::trace::{back_op, forward_op, grad_op, identity_op};
use crate::block::op::{Op, Pass};
use crate::block::ops::{self, AttnCache, LnCache};
use crate::collectives::{self, CollectiveError};
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
    #[error("the shards are for {got} GPUs with unequal layers; the program runs on {want}")]
    Shards { want: usize, got: usize },
    #[error("an op the walk runs has no name in the program's trace (step {step})")]
    Unnamed { step: usize },
    #[error("the {what} has shape {got:?}; the config's block needs {want:?} (tokens × hidden)")]
    Input {
        what: &'static str,
        got: [usize; 2],
        want: [usize; 2],
    },
    #[error("the plan is refused: {0}")]
    Refused(String),
    #[error(transparent)]
    Collective(#[from] CollectiveError),
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
pub fn part<T: Element>(
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
    place_columns(cfg, place, by_heads, full, local, r, false);
}

/// [`place_into`], adding the columns instead of assigning them when `sum_copies`: the gradient
/// of a tensor whose columns several GPUs hold copies of (the KV heads of grouped-query attention
/// when there are fewer KV heads than GPUs) is the sum of the copies' gradients. Every other
/// column is held once, so adding it into a zero tensor is assigning it.
fn place_columns<T: Element>(
    cfg: &Config,
    place: Place,
    by_heads: bool,
    full: &mut Array2<T>,
    local: ArrayView2<'_, T>,
    r: usize,
    sum_copies: bool,
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
                    let src = local.slice(s![.., off..off + n]);
                    let mut dst = full.slice_mut(s![.., a..b]);
                    if sum_copies {
                        dst += &src;
                    } else {
                        dst.assign(&src);
                    }
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

/// Whether the columns of a by-heads tensor held as `place` include copies (KV heads shared by
/// several GPUs), whose gradients must be summed, not picked, when they are gathered.
fn has_copies(cfg: &Config, place: Place, by_heads: bool) -> bool {
    place == Place::Features && by_heads && cfg.kv_replicas() > 1
}

/// [`convert`] for a gradient: the copies' parts of a by-heads gradient are summed.
fn convert_grad<T: Element>(
    cfg: &Config,
    l: &Local<T>,
    to: Place,
    shape: [usize; 2],
    by_heads: bool,
) -> Local<T> {
    if l.place == to || !has_copies(cfg, l.place, by_heads) {
        return convert(cfg, l, to, shape, by_heads);
    }
    let mut full = Array2::<T>::zeros((shape[0], shape[1]));
    for (r, local) in l.ranks.iter().enumerate() {
        place_columns(cfg, l.place, by_heads, &mut full, local.view(), r, true);
    }
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
pub fn param_place(layout: ParamLayout) -> Place {
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

/// Whether a parameter is laid out by heads (QKV's weight and bias).
pub fn by_heads_param(kind: ParamKind) -> bool {
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

/// What one GPU kept of one layer's forward for its backward, besides the values themselves.
struct Caches<T> {
    ln: Vec<Option<Vec<LnCache<T>>>>,
    attn: Vec<Option<Vec<AttnCache<T>>>>,
}

impl<T: Element> Caches<T> {
    /// Elements rank `r` keeps in the caches (LayerNorm's normalised rows and inverse standard
    /// deviations, attention's probabilities), as [`crate::capacity::memory`] counts them.
    fn elements(&self, r: usize) -> usize {
        let ln: usize = self
            .ln
            .iter()
            .flatten()
            .filter_map(|c| c.get(r))
            .map(|c| c.xhat.len() + c.rstd.len())
            .sum();
        let attn: usize = self
            .attn
            .iter()
            .flatten()
            .filter_map(|c| c.get(r))
            .map(|c| c.probs.iter().map(|p| p.len()).sum::<usize>())
            .sum();
        ln + attn
    }

    /// Every array given up (for [`kernels::recycle`]).
    fn into_arrays(self) -> impl Iterator<Item = Array2<T>> {
        let ln = self.ln.into_iter().flatten().flatten().map(|c| c.xhat);
        let attn = self
            .attn
            .into_iter()
            .flatten()
            .flatten()
            .flat_map(|c| c.probs);
        ln.chain(attn)
    }
}

/// Which values a program's walk keeps, computed once per program.
struct Liveness {
    /// The last forward step that reads each value (`None`: no forward step does).
    last_read: Vec<Option<usize>>,
    /// Kept from the forward for the backward: a linear layer's input, GeLU's input,
    /// attention's QKV, a regather's source; not a value the backward gathers again.
    kept: Vec<bool>,
    /// The forward's identity halves ([`Program::forward_identities`]), issued, never run.
    identities: Vec<(usize, ValueId)>,
}

impl Liveness {
    fn of(program: &Program) -> Self {
        let n = program.values.len();
        let mut last_read = vec![None; n];
        for (i, s) in program.forward.iter().enumerate() {
            for v in s.reads() {
                if let Some(slot) = last_read.get_mut(v) {
                    *slot = Some(i);
                }
            }
        }
        let mut kept = vec![false; n];
        let mut regathered = vec![false; n];
        for b in &program.backward {
            match b {
                BackStep::Grad { index } => match program.forward.get(*index) {
                    Some(Step::Linear { x, .. }) => kept[*x] = true,
                    Some(Step::Gelu { a, .. }) => kept[*a] = true,
                    Some(Step::Attention { qkv, .. }) => kept[*qkv] = true,
                    _ => {}
                },
                BackStep::Regather { value, source } => {
                    kept[*source] = true;
                    regathered[*value] = true;
                }
                _ => {}
            }
        }
        for (k, r) in kept.iter_mut().zip(&regathered) {
            *k &= !*r;
        }
        Self {
            last_read,
            kept,
            identities: program.forward_identities(),
        }
    }

    /// Whether step `i` is the last use of `v` in the whole walk of a layer (so it may be
    /// consumed in place).
    fn dies_at(&self, program: &Program, v: ValueId, i: usize) -> bool {
        self.last_read.get(v) == Some(&Some(i))
            && !self.kept.get(v).copied().unwrap_or(true)
            && v != program.output
    }
}

/// What a walk of a program over a stack of layers produced.
pub struct Walked<T> {
    /// The stack's output, as the program holds it.
    pub output: Local<T>,
    /// The input gradient (`None` for a forward-only walk).
    pub grad_input: Option<Local<T>>,
    /// `[rank][layer]` parameter-shard gradients (no layers for a forward-only walk).
    pub grads: Vec<Vec<LayerParams<T>>>,
    /// Every sum of activations or activation gradients (an all-reduce or reduce-scatter) with
    /// each GPU's partial input, when [`Options::record_collectives`].
    pub collectives: Vec<CollectiveRecord<T>>,
    /// The events the walk issued, in order: those of the program's trace
    /// ([`crate::block::design::trace::trace`]).
    pub issued: Vec<Issued>,
    /// Elements each GPU kept for the backward pass, summed over layers.
    pub saved_elements_per_rank: Vec<usize>,
}

/// Runs `program` over every layer of `model` on `cfg.tp` virtual GPUs, the parameters split as
/// the program's plan splits them.
pub fn run_program<T: Element>(
    cfg: &Config,
    program: &Program,
    model: &Model<T>,
) -> Result<ProgramRun<T>, ExecError> {
    let shards = shard_model(cfg, program, model);
    let w = walk(
        cfg,
        program,
        &shards,
        model.input.view(),
        model.grad_output.view(),
        Options {
            backward: true,
            record_collectives: false,
        },
        &Exact,
    )?;
    let grad_input = w.grad_input.ok_or(ExecError::Missing {
        step: program.backward.len(),
        tensor: "dX",
        rank: 0,
    })?;
    Ok(ProgramRun {
        output: w.output,
        grad_input,
        grads: w.grads,
    })
}

/// Every GPU's shards of `model` under the program's plan, `[rank][layer]`.
pub fn shard_model<T: Element>(
    cfg: &Config,
    program: &Program,
    model: &Model<T>,
) -> Vec<Vec<LayerParams<T>>> {
    let plan = &program.plan;
    (0..cfg.tp.max(1))
        .map(|r| {
            model
                .layers
                .iter()
                .map(|layer| {
                    LayerParams::from_fn(|k| {
                        shard_param(cfg, param_layout(plan, k), k, layer.get(k).view(), r)
                    })
                })
                .collect()
        })
        .collect()
}

/// The walk: `program` on every layer, forward then backward, on shards resident on each GPU
/// (`shards[rank][layer]`). `input` and `grad_output` are the whole tensors; each GPU takes
/// what the program's placement gives it. Collectives of sums run through
/// [`crate::collectives`] with the configured algorithm; `hook` sees every forward op's output
/// and may sum the all-reduces itself.
pub fn walk<T: Element>(
    cfg: &Config,
    program: &Program,
    shards: &[Vec<LayerParams<T>>],
    input: ArrayView2<'_, T>,
    grad_output: ArrayView2<'_, T>,
    options: Options,
    hook: &dyn Rounding<T>,
) -> Result<Walked<T>, ExecError> {
    let tp = cfg.tp.max(1);
    let layers = shards.first().map_or(0, Vec::len);
    if shards.len() != tp || shards.iter().any(|s| s.len() != layers) {
        return Err(ExecError::Shards {
            want: tp,
            got: shards.len(),
        });
    }
    let want = [cfg.tokens(), cfg.hidden];
    let check = |what, a: ArrayView2<'_, T>| {
        let (r, c) = a.dim();
        if [r, c] == want {
            Ok(())
        } else {
            Err(ExecError::Input {
                what,
                got: [r, c],
                want,
            })
        }
    };
    check("input", input)?;
    if options.backward && layers > 0 {
        check("output gradient", grad_output)?;
    }
    let live = Liveness::of(program);
    let mut ex = Exec {
        cfg,
        program,
        hook,
        options,
        live: &live,
        issued: Vec::new(),
        collectives: Vec::new(),
        layer: 0,
        pass: Pass::Forward,
    };
    let values = &program.values;
    let stream = values[program.input].place;
    let mut x = Local {
        place: stream,
        ranks: (0..tp)
            .map(|r| part(cfg, stream, false, input, r))
            .collect(),
    };
    let mut saved: Vec<Forward<T>> = Vec::with_capacity(layers);
    let mut saved_elements_per_rank = vec![0; tp];
    for layer in 0..layers {
        ex.layer = layer;
        let p: Vec<&LayerParams<T>> = shards.iter().map(|s| &s[layer]).collect();
        let (mut vals, caches) = ex.forward(&p, x)?;
        x = vals[program.output].take().ok_or(ExecError::Missing {
            step: program.forward.len(),
            tensor: "Y",
            rank: 0,
        })?;
        // Only what the backward reads stays; the rest serves the next kernels.
        for (v, slot) in vals.iter_mut().enumerate() {
            if !live.kept[v] {
                if let Some(l) = slot.take() {
                    kernels::recycle(l.ranks);
                }
            }
        }
        for (r, n) in saved_elements_per_rank.iter_mut().enumerate() {
            let kept: usize = vals
                .iter()
                .flatten()
                .filter_map(|l| l.ranks.get(r))
                .map(|a| a.len())
                .sum();
            *n += kept + caches.elements(r);
        }
        if options.backward {
            saved.push((vals, caches));
        } else {
            kernels::recycle(vals.into_iter().flatten().flat_map(|l| l.ranks));
            kernels::recycle(caches.into_arrays());
        }
    }
    let output = x;
    let mut grads: Vec<Vec<LayerParams<T>>> = vec![Vec::new(); tp];
    let mut grad_input = None;
    if options.backward {
        ex.pass = Pass::Backward;
        let out_place = values[program.output].place.grad();
        let mut dy = Local {
            place: out_place,
            ranks: (0..tp)
                .map(|r| part(cfg, out_place, false, grad_output, r))
                .collect(),
        };
        for layer in (0..layers).rev() {
            ex.layer = layer;
            let p: Vec<&LayerParams<T>> = shards.iter().map(|s| &s[layer]).collect();
            let Some((mut vals, caches)) = saved.pop() else {
                break;
            };
            let (dx, layer_grads) = ex.backward(&p, &mut vals, &caches, dy)?;
            dy = dx;
            for (r, g) in layer_grads.into_iter().enumerate() {
                grads[r].push(g);
            }
            kernels::recycle(vals.into_iter().flatten().flat_map(|l| l.ranks));
            kernels::recycle(caches.into_arrays());
        }
        for g in &mut grads {
            g.reverse();
        }
        grad_input = Some(dy);
    }
    Ok(Walked {
        output,
        grad_input,
        grads,
        collectives: ex.collectives,
        issued: ex.issued,
        saved_elements_per_rank,
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
pub fn local_heads(cfg: &Config, place: Place) -> (usize, usize) {
    match place {
        Place::Features => (cfg.heads_per_rank(), cfg.kv_heads_per_rank()),
        _ => (cfg.heads, cfg.kv_heads()),
    }
}

type Forward<T> = (Vec<Option<Local<T>>>, Caches<T>);

/// Value `v` for step `i` to own: moved out where nothing reads it again, else a copy.
fn consume<T: Element>(
    vals: &mut [Option<Local<T>>],
    v: ValueId,
    i: usize,
    live: &Liveness,
    program: &Program,
) -> Result<Local<T>, ExecError> {
    if live.dies_at(program, v, i) {
        vals.get_mut(v)
            .and_then(Option::take)
            .ok_or(ExecError::Missing {
                step: i,
                tensor: program.values.get(v).map_or("?", |x| x.tensor.name()),
                rank: 0,
            })
    } else {
        get(vals, v, i, &program.values).cloned()
    }
}

/// A LayerNorm's output and what its backward needs.
type Normed<T> = (Array2<T>, LnCache<T>);

fn to_bufs<T: Element>(parts: Vec<Array2<T>>) -> Vec<Vec<T>> {
    parts
        .into_iter()
        .map(|p| {
            if p.is_standard_layout() {
                p.into_raw_vec_and_offset().0
            } else {
                p.iter().copied().collect()
            }
        })
        .collect()
}

fn from_buf<T: Element>(rows: usize, cols: usize, v: Vec<T>) -> Result<Array2<T>, ExecError> {
    let found = v.len();
    Array2::from_shape_vec((rows, cols), v).map_err(|_| {
        ExecError::Collective(CollectiveError::LengthMismatch {
            rank: 0,
            expected: rows * cols,
            found,
        })
    })
}

/// The walk's state: what it issued and recorded, where it is.
struct Exec<'a, T> {
    cfg: &'a Config,
    program: &'a Program,
    hook: &'a dyn Rounding<T>,
    options: Options,
    live: &'a Liveness,
    issued: Vec<Issued>,
    collectives: Vec<CollectiveRecord<T>>,
    layer: usize,
    pass: Pass,
}

impl<T: Element> Exec<'_, T> {
    /// A compute op's events, one per GPU (none for an op that computes nothing).
    fn record_compute(&mut self, op: Op) {
        if op.compute().is_none() {
            return;
        }
        for r in 0..self.cfg.tp.max(1) {
            self.issued.push(Issued {
                layer: self.layer,
                pass: self.pass,
                op,
                ranks: vec![r],
            });
        }
    }

    fn record_collective(&mut self, op: Op, ranks: Vec<usize>) {
        self.issued.push(Issued {
            layer: self.layer,
            pass: self.pass,
            op,
            ranks,
        });
    }

    /// Rounds each GPU's output of a forward op (the precision lab's hook).
    fn round(&self, op: Op, outs: &mut [Array2<T>]) {
        if self.pass == Pass::Forward && self.hook.rounds() {
            for o in outs {
                self.hook.round(op, o);
            }
        }
    }

    /// Changes the placement of `l` (moved in) to `to` by `mv`, as the GPUs do: sums through the
    /// collectives' schedules, gathers and slices by copying; a misread as the broken program
    /// computes it.
    fn redistribute(
        &mut self,
        op: Op,
        l: Local<T>,
        to: Value,
        mv: Move,
        grad: bool,
    ) -> Result<Local<T>, ExecError> {
        let cfg = self.cfg;
        let shape = to.tensor.shape(cfg);
        let heads = to.tensor == Tensor::Qkv;
        let tp = cfg.tp.max(1);
        self.record_collective(op, (0..tp).collect());
        if to.mislabelled {
            return Ok(misread(cfg, &l, to.place, shape, heads));
        }
        let even_rows = shape[0].is_multiple_of(tp) && tp > 1;

        let uniform = l.ranks.iter().all(|a| a.dim() == l.ranks[0].dim());
        match (mv, l.place, to.place) {
            (Move::AllReduce, Place::Partial, Place::Replicate) if uniform => {
                let (rows, cols) = l.ranks[0].dim();
                let kept = self.options.record_collectives.then(|| l.ranks.clone());
                let results: Vec<Array2<T>> = if let Some(sum) = self.hook.all_reduce(op, &l.ranks)
                {
                    vec![sum; tp]
                } else {
                    let mut bufs = to_bufs(l.ranks);
                    collectives::all_reduce_in_place(&mut bufs, cfg.algorithm)?;
                    bufs.into_iter()
                        .map(|v| from_buf(rows, cols, v))
                        .collect::<Result<_, _>>()?
                };
                if let Some(partials) = kept {
                    let max_rank_disagreement = results
                        .iter()
                        .skip(1)
                        .flat_map(|r| {
                            r.iter()
                                .zip(results[0].iter())
                                .map(|(a, b)| (*a - *b).abs().to_f64())
                        })
                        .fold(0.0, f64::max);
                    self.collectives.push(CollectiveRecord {
                        layer: self.layer,
                        pass: self.pass,
                        op,
                        partials,
                        result: results[0].clone(),
                        max_rank_disagreement,
                    });
                }
                Ok(Local {
                    place: to.place,
                    ranks: results,
                })
            }
            (Move::ReduceScatter, Place::Partial, Place::Tokens) if even_rows && uniform => {
                let (rows, cols) = l.ranks[0].dim();
                let kept = self.options.record_collectives.then(|| l.ranks.clone());
                let algorithm = crate::block::program::gather_scatter_algorithm(cfg);
                let out = collectives::reduce_scatter(&to_bufs(l.ranks), algorithm)?;
                let shards: Vec<Array2<T>> = out
                    .outputs
                    .into_iter()
                    .map(|v| from_buf(rows / tp, cols, v))
                    .collect::<Result<_, _>>()?;
                if let Some(partials) = kept {
                    let views: Vec<_> = shards.iter().map(|a| a.view()).collect();
                    let result = concatenate(Axis(0), &views).map_err(|_| {
                        CollectiveError::LengthMismatch {
                            rank: 0,
                            expected: rows * cols,
                            found: 0,
                        }
                    })?;
                    self.collectives.push(CollectiveRecord {
                        layer: self.layer,
                        pass: self.pass,
                        op,
                        partials,
                        result,
                        max_rank_disagreement: 0.0,
                    });
                }
                Ok(Local {
                    place: to.place,
                    ranks: shards,
                })
            }
            (Move::AllGather, Place::Tokens, Place::Replicate) if even_rows && uniform => {
                let (rows, cols) = l.ranks[0].dim();
                let algorithm = crate::block::program::gather_scatter_algorithm(cfg);
                let out = collectives::all_gather(&to_bufs(l.ranks), algorithm)?;
                let ranks = out
                    .outputs
                    .into_iter()
                    .map(|v| from_buf(rows * tp, cols, v))
                    .collect::<Result<_, _>>()?;
                Ok(Local {
                    place: to.place,
                    ranks,
                })
            }
            // The other moves copy (an all-gather of columns, an all-to-all, a slice): the
            // same values whatever the schedule.
            _ if grad => Ok(convert_grad(cfg, &l, to.place, shape, heads)),
            _ => Ok(convert(cfg, &l, to.place, shape, heads)),
        }
    }

    // `r` indexes a rank's parameters, inputs and outputs together.
    #[allow(clippy::needless_range_loop)]
    fn forward(&mut self, p: &[&LayerParams<T>], input: Local<T>) -> Result<Forward<T>, ExecError> {
        let (cfg, program, live) = (self.cfg, self.program, self.live);
        let values = &program.values;
        let tp = cfg.tp.max(1);
        let mut vals: Vec<Option<Local<T>>> = vec![None; values.len()];
        let mut caches = Caches {
            ln: (0..program.forward.len()).map(|_| None).collect(),
            attn: (0..program.forward.len()).map(|_| None).collect(),
        };
        vals[program.input] = Some(input);
        let full_bias = |w: Weight, r: usize| p[r].get(weight_param(w).1);
        // A LayerNorm computed by the residual pass before it (its input's only writer).
        let mut fused_ln: Option<(ValueId, Vec<Normed<T>>)> = None;
        for (i, step) in program.forward.iter().enumerate() {
            // The forward halves of the backward's sums (f): drawn and issued, nothing runs.
            for &(_, v) in live.identities.iter().filter(|(at, _)| *at == i) {
                self.record_collective(identity_op(program, v, Pass::Forward), (0..tp).collect());
            }
            let op = forward_op(program, step);
            match step {
                Step::LayerNorm { norm, x, y } => {
                    let (wk, bk) = norm.params();
                    let computed = match fused_ln.take() {
                        Some((v, out)) if v == *x => out,
                        _ => {
                            let xl = get(&vals, *x, i, values)?;
                            each_rank(tp, |r| {
                                check_chain(i, "LayerNorm input", r, &xl.ranks[r], cfg.hidden)?;
                                Ok(kernels::layer_norm(
                                    xl.ranks[r].view(),
                                    p[r].get(wk).view(),
                                    p[r].get(bk).view(),
                                ))
                            })?
                        }
                    };
                    self.record_compute(op);
                    let (mut outs, cs): (Vec<_>, Vec<_>) = computed.into_iter().unzip();
                    self.round(op, &mut outs);
                    caches.ln[i] = Some(cs);
                    vals[*y] = Some(Local {
                        place: values[*y].place,
                        ranks: outs,
                    });
                }
                Step::Linear { weight, x, y, bias } => {
                    let xl = get(&vals, *x, i, values)?;
                    let (wk, bk) = weight_param(*weight);
                    let mut outs = each_rank(tp, |r| {
                        let w = p[r].get(wk);
                        check_chain(i, "linear input", r, &xl.ranks[r], w.nrows())?;
                        Ok(if *bias {
                            kernels::linear_bias(xl.ranks[r].view(), w.view(), p[r].get(bk).view())
                        } else {
                            kernels::matmul(xl.ranks[r].view(), w.view())
                        })
                    })?;
                    self.record_compute(op);
                    self.round(op, &mut outs);
                    vals[*y] = Some(Local {
                        place: values[*y].place,
                        ranks: outs,
                    });
                }
                Step::Attention { qkv, ctx } => {
                    let ql = get(&vals, *qkv, i, values)?;
                    let (hl, kvl) = local_heads(cfg, values[*qkv].place);
                    let want = (hl + 2 * kvl) * cfg.head_dim();
                    let (mut outs, cs): (Vec<_>, Vec<_>) = each_rank(tp, |r| {
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
                    self.record_compute(op);
                    self.round(op, &mut outs);
                    caches.attn[i] = Some(cs);
                    vals[*ctx] = Some(Local {
                        place: values[*ctx].place,
                        ranks: outs,
                    });
                }
                Step::Gelu { a, u } => {
                    let al = get(&vals, *a, i, values)?;
                    let mut outs = each_rank(tp, |r| Ok(kernels::gelu(al.ranks[r].view())))?;
                    self.record_compute(op);
                    self.round(op, &mut outs);
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
                            let b = bias_part(cfg, full_bias(*weight, r), place, heads, r);
                            check_chain(i, "bias", r, &o, b.ncols())?;
                            o += &b.view();
                        }
                        outs.push(o);
                    }
                    self.record_compute(op);
                    self.round(op, &mut outs);
                    vals[*y] = Some(Local { place, ranks: outs });
                }
                Step::Residual {
                    stream,
                    branch,
                    y,
                    bias,
                } => {
                    let place = values[*y].place;
                    // The branch is consumed in place where nothing reads it again.
                    let branch_l = consume(&mut vals, *branch, i, live, program)?;
                    let sl = get(&vals, *stream, i, values)?;
                    for r in 0..tp {
                        if branch_l.ranks[r].dim() != sl.ranks[r].dim() {
                            return Err(ExecError::Shape {
                                step: i,
                                what: "residual branch",
                                rank: r,
                                got: dims(&branch_l.ranks[r]),
                                want: dims(&sl.ranks[r]),
                            });
                        }
                    }
                    let biases: Vec<Option<Array2<T>>> = (0..tp)
                        .map(|r| bias.map(|w| bias_part(cfg, full_bias(w, r), place, false, r)))
                        .collect();
                    // The LayerNorm that reads this sum, if it is the next step, runs in the same
                    // pass (the same values bit for bit) unless a hook may round the sum first.
                    let next_ln = match program.forward.get(i + 1) {
                        Some(Step::LayerNorm { norm, x, .. })
                            if *x == *y && !self.hook.rounds() && bias.is_some() =>
                        {
                            Some(norm.params())
                        }
                        _ => None,
                    };
                    let done: Vec<(Array2<T>, Option<Normed<T>>)> = {
                        use rayon::prelude::*;
                        branch_l
                            .ranks
                            .into_par_iter()
                            .enumerate()
                            .map(|(r, mut z)| {
                                let res = sl.ranks[r].view();
                                match (&biases[r], next_ln) {
                                    (Some(b), Some((wk, bk))) => {
                                        let ln = kernels::residual_bias_layer_norm(
                                            &mut z,
                                            res,
                                            b.view(),
                                            p[r].get(wk).view(),
                                            p[r].get(bk).view(),
                                        );
                                        (z, Some(ln))
                                    }
                                    (Some(b), None) => {
                                        kernels::residual_bias_in_place(&mut z, res, b.view());
                                        (z, None)
                                    }
                                    (None, _) => {
                                        kernels::add_in_place(&mut z, res);
                                        (z, None)
                                    }
                                }
                            })
                            .collect()
                    };
                    let (mut outs, lns): (Vec<_>, Vec<_>) = done.into_iter().unzip();
                    if next_ln.is_some() {
                        fused_ln = Some((*y, lns.into_iter().flatten().collect()));
                    }
                    self.record_compute(op);
                    self.round(op, &mut outs);
                    vals[*y] = Some(Local { place, ranks: outs });
                }
                Step::Redistribute(rd) => {
                    let l = consume(&mut vals, rd.from, i, live, program)?;
                    let moved = self.redistribute(op, l, values[rd.to], rd.mv, false)?;
                    vals[rd.to] = Some(moved);
                }
            }
        }
        Ok((vals, caches))
    }

    // `r` indexes a rank's parameters, gradients and caches together.
    #[allow(clippy::needless_range_loop)]
    fn backward(
        &mut self,
        p: &[&LayerParams<T>],
        vals: &mut [Option<Local<T>>],
        caches: &Caches<T>,
        dy: Local<T>,
    ) -> Result<Backward<T>, ExecError> {
        let (cfg, program) = (self.cfg, self.program);
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
                BackStep::GradMove { value, to, mv, .. } => {
                    let g = take(&mut grads, *value, bi)?;
                    let v = values[*value];
                    let op = back_op(program, bstep).ok_or(ExecError::Unnamed { step: bi })?;
                    let target = Value {
                        place: *to,
                        mislabelled: false,
                        ..v
                    };
                    grads[*value] = Some(self.redistribute(op, g, target, *mv, true)?);
                }
                BackStep::Regather { value, source } => {
                    // Gathered again from the kept slices: the same values, one more all-gather.
                    let src = get(vals, *source, bi, values)?.clone();
                    let v = values[*value];
                    let mv = Move::between(src.place, v.place).unwrap_or(Move::AllGather);
                    let target = Value {
                        mislabelled: false,
                        ..v
                    };
                    let op = back_op(program, bstep).ok_or(ExecError::Unnamed { step: bi })?;
                    vals[*value] = Some(self.redistribute(op, src, target, mv, false)?);
                }
                // The conjugate of a forward all-reduce (g backward): issued, nothing runs.
                BackStep::PassThrough { value, .. } => {
                    self.record_collective(
                        identity_op(program, *value, Pass::Backward),
                        (0..tp).collect(),
                    );
                }
                BackStep::KvGradSum { groups } => {
                    let q = cfg.heads_per_rank() * cfg.head_dim();
                    let kw = param_index(ParamKind::QkvWeight);
                    let kb = param_index(ParamKind::QkvBias);
                    for group in groups {
                        self.record_collective(Op::KvGrads, group.clone());
                        // Each copy's K and V columns of the weight and bias gradients, packed.
                        let kv = |m: &Option<Array2<T>>| -> Vec<T> {
                            m.as_ref()
                                .filter(|m| m.ncols() >= q)
                                .map(|m| m.slice(s![.., q..]).iter().copied().collect())
                                .unwrap_or_default()
                        };
                        let mut bufs: Vec<Vec<T>> = group
                            .iter()
                            .map(|&r| {
                                let mut v = kv(&pacc[r][kw]);
                                v.extend(kv(&pacc[r][kb]));
                                v
                            })
                            .collect();
                        collectives::all_reduce_in_place(&mut bufs, cfg.algorithm)?;
                        for (&r, buf) in group.iter().zip(bufs) {
                            let mut it = buf.into_iter();
                            for k in [kw, kb] {
                                if let Some(m) = pacc[r][k].as_mut().filter(|m| m.ncols() >= q) {
                                    m.slice_mut(s![.., q..])
                                        .iter_mut()
                                        .zip(it.by_ref())
                                        .for_each(|(d, x)| *d = x);
                                }
                            }
                        }
                    }
                }
                BackStep::ParamGradSum { params } => {
                    self.record_collective(Op::SpGrads, (0..tp).collect());
                    // The partial gradients packed into one buffer per GPU, summed at once.
                    let mut bufs: Vec<Vec<T>> = pacc
                        .iter()
                        .map(|acc| {
                            params
                                .iter()
                                .flat_map(|k| {
                                    acc[param_index(*k)]
                                        .iter()
                                        .flat_map(|a| a.iter().copied())
                                        .collect::<Vec<T>>()
                                })
                                .collect()
                        })
                        .collect();
                    collectives::all_reduce_in_place(&mut bufs, cfg.algorithm)?;
                    for (acc, buf) in pacc.iter_mut().zip(bufs) {
                        let mut it = buf.into_iter();
                        for k in params {
                            if let Some(a) = acc[param_index(*k)].as_mut() {
                                a.iter_mut().zip(it.by_ref()).for_each(|(d, x)| *d = x);
                            }
                        }
                    }
                }
                BackStep::ParamGradGather { param } => {
                    self.record_collective(Op::ParamGradGather, (0..tp).collect());
                    let k = param_index(*param);
                    let [rows, cols] = param.shape(cfg);
                    let mut full = Array2::<T>::zeros((rows, cols));
                    let by_heads = by_heads_param(*param);
                    // Copies' parts of a bias gradient (KV heads shared by GPUs) are summed.
                    let sum = has_copies(cfg, Place::Features, by_heads);
                    for (r, acc) in pacc.iter().enumerate() {
                        if let Some(g) = &acc[k] {
                            place_columns(
                                cfg,
                                Place::Features,
                                by_heads,
                                &mut full,
                                g.view(),
                                r,
                                sum,
                            );
                        }
                    }
                    for acc in pacc.iter_mut() {
                        acc[k] = Some(full.clone());
                    }
                }
                BackStep::Grad { index } => {
                    let i = *index;
                    let step = &program.forward[i];
                    if let Some(op) = grad_op(program, step) {
                        self.record_compute(op);
                    }
                    match step {
                        Step::Residual {
                            stream,
                            branch,
                            y,
                            bias,
                        } => {
                            let g = take(&mut grads, *y, i)?;
                            if let Some(w) = bias {
                                add_bias_grads(&mut pacc, *w, &g)?;
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
                            add_bias_grads(&mut pacc, *weight, &g)?;
                            let gx = Local {
                                place: values[*x].place.grad(),
                                ranks: g.ranks,
                            };
                            accumulate(cfg, &mut grads, *x, gx, &values[*x]);
                        }
                        Step::Gelu { a, u } => {
                            let g = take(&mut grads, *u, i)?;
                            let al = get(vals, *a, i, values)?;
                            let ranks = {
                                use rayon::prelude::*;
                                g.ranks
                                    .into_par_iter()
                                    .enumerate()
                                    .map(|(r, mut gv)| {
                                        if gv.dim() == al.ranks[r].dim() {
                                            kernels::gelu_backward_in_place(
                                                al.ranks[r].view(),
                                                &mut gv,
                                            );
                                            gv
                                        } else {
                                            kernels::gelu_backward(al.ranks[r].view(), gv.view())
                                        }
                                    })
                                    .collect()
                            };
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
                            let ranks = each_rank(tp, |r| {
                                Ok(kernels::attention_backward(
                                    ql.ranks[r].view(),
                                    &cs[r],
                                    g.ranks[r].view(),
                                    cfg.batch,
                                    cfg.seq,
                                    hl,
                                    kvl,
                                ))
                            })?;
                            kernels::recycle(g.ranks);
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
                            let xv = values[*x];
                            let place = xv.place.grad();
                            // The gradient the residual already left on `x`, added in the same
                            // pass as it is where the shapes allow.
                            let res = match grads[*x].take() {
                                Some(have)
                                    if have.place == place
                                        && have
                                            .ranks
                                            .iter()
                                            .zip(&g.ranks)
                                            .all(|(a, b)| a.dim() == b.dim()) =>
                                {
                                    Some(have)
                                }
                                other => {
                                    grads[*x] = other;
                                    None
                                }
                            };
                            let out: Vec<(Array2<T>, Array2<T>, Array2<T>)> = {
                                use rayon::prelude::*;
                                g.ranks
                                    .into_par_iter()
                                    .enumerate()
                                    .map(|(r, mut gr)| {
                                        let w = p[r].get(wk).view();
                                        match &res {
                                            Some(res) => {
                                                let (dw, db, _) =
                                                    kernels::layer_norm_backward_residual_in_place(
                                                        &mut gr,
                                                        &cs[r],
                                                        w,
                                                        res.ranks[r].view(),
                                                        false,
                                                    );
                                                (gr, dw, db)
                                            }
                                            None => ops::layer_norm_backward(gr.view(), &cs[r], w),
                                        }
                                    })
                                    .collect()
                            };
                            let mut ranks = Vec::with_capacity(tp);
                            for (r, (dx, dw, db)) in out.into_iter().enumerate() {
                                add_param(&mut pacc, wk, r, dw);
                                add_param(&mut pacc, bk, r, db);
                                ranks.push(dx);
                            }
                            let gx = Local { place, ranks };
                            match res {
                                Some(res) => {
                                    kernels::recycle(res.ranks);
                                    grads[*x] = Some(gx);
                                }
                                None => accumulate(cfg, &mut grads, *x, gx, &xv),
                            }
                        }
                        Step::Linear { weight, x, y, bias } => {
                            let g = take(&mut grads, *y, i)?;
                            let xl = get(vals, *x, i, values)?;
                            let (wk, bk) = weight_param(*weight);
                            // Each GPU's input, weight and bias gradients side by side; the
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
                                let dw = kernels::matmul(xl.ranks[r].t(), g.ranks[r].view());
                                let db = bias.then(|| kernels::col_sum(g.ranks[r].view()));
                                let dx = kernels::matmul(g.ranks[r].view(), w.t());
                                Ok((dx, dw, db))
                            })?;
                            kernels::recycle(g.ranks);
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
                            // The conjugate is its own GradMove step; here the gradient only
                            // changes hands from the moved value to its source.
                            if let Some(g) = grads[rd.to].take() {
                                let from = values[rd.from];
                                let target = from.place.grad();
                                // Only a misread arrives in another placement: each GPU passes
                                // back what it holds as if it were what the source's gradient
                                // needs.
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
            .map(|(r, mut acc)| {
                LayerParams::from_fn(|k| {
                    acc[param_index(k)].take().unwrap_or_else(|| {
                        let shard = p[r].get(k);
                        Array2::zeros(shard.dim())
                    })
                })
            })
            .collect();
        Ok((dx, layer_grads))
    }
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
                    kernels::add_in_place(a, b.view());
                }
            }
            kernels::recycle(g.ranks);
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
fn add_bias_grads<T: Element>(
    acc: &mut [Vec<Option<Array2<T>>>],
    w: Weight,
    g: &Local<T>,
) -> Result<(), ExecError> {
    let sums = each_rank(g.ranks.len(), |r| Ok(kernels::col_sum(g.ranks[r].view())))?;
    for (r, s) in sums.into_iter().enumerate() {
        add_param(acc, weight_param(w).1, r, s);
    }
    Ok(())
}

/// A parameter's index in `ParamKind::ALL`.
pub fn param_index(kind: ParamKind) -> usize {
    ParamKind::ALL.iter().position(|k| *k == kind).unwrap_or(0)
}

type Backward<T> = (Local<T>, Vec<LayerParams<T>>);
