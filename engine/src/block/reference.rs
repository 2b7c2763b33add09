//! The unsharded CPU reference: the whole block on one device, plain ndarray, no splitting.
//!
//! It uses ndarray's `dot` for every product (not the executors' `gemm` path) and its own plain
//! LayerNorm, GeLU and attention (the `plain` module: no code shared with the executors'
//! kernels), keeps the
//! intermediate values that the sharded run's collectives produce (the out-projection's and fc2's
//! outputs before their bias, and the gradients at the LayerNorm outputs), and computes every
//! gradient: the input's and every parameter's.

use crate::block::ops::{AttnCache, LnCache};
use crate::config::Config;
use crate::dtype::Element;
use crate::params::{LayerParams, Model};
use ndarray::Array2;

/// Values one block's forward saves for its backward (and for verification).
#[derive(Debug, Clone)]
pub struct BlockCache<T> {
    pub x: Array2<T>,
    pub ln1: Array2<T>,
    pub ln1_cache: LnCache<T>,
    pub qkv: Array2<T>,
    pub attn_cache: AttnCache<T>,
    pub ctx: Array2<T>,
    /// `ctx · W_out` before the bias: what the forward `g` all-reduce produces.
    pub attn_proj: Array2<T>,
    pub x1: Array2<T>,
    pub ln2: Array2<T>,
    pub ln2_cache: LnCache<T>,
    pub fc1: Array2<T>,
    pub act: Array2<T>,
    /// `GeLU(fc1) · W_2` before the bias: what the second `g` all-reduce produces.
    pub mlp_proj: Array2<T>,
}

/// Gradients the backward `f` all-reduces produce, per block.
#[derive(Debug, Clone)]
pub struct BlockBackward<T> {
    /// `dL/d LN2(x1)`: the `mlp.f.bwd` all-reduce's result.
    pub d_ln2: Array2<T>,
    /// `dL/d LN1(x)`: the `attn.f.bwd` all-reduce's result.
    pub d_ln1: Array2<T>,
}

/// Everything the reference computes.
#[derive(Debug, Clone)]
pub struct ReferenceRun<T> {
    pub output: Array2<T>,
    pub caches: Vec<BlockCache<T>>,
    pub backward: Vec<BlockBackward<T>>,
    pub grad_input: Array2<T>,
    pub grads: Vec<LayerParams<T>>,
}

impl<T: Element> ReferenceRun<T> {
    /// LayerNorm conditioning of this run's data, `κ = max_t rms(x_t)/σ(x_t)` over every row that
    /// entered a LayerNorm (see [`crate::block::verify`]): the tolerance of a comparison grows with it.
    pub fn layer_norm_condition(&self) -> f64 {
        self.caches
            .iter()
            .flat_map(|c| [(&c.x, &c.ln1_cache), (&c.x1, &c.ln2_cache)])
            .map(|(x, ln)| {
                let rows = x.mapv(Element::to_f64);
                let rstd: Vec<f64> = ln.rstd.iter().map(|&v| Element::to_f64(v)).collect();
                crate::block::verify::layer_norm_condition(rows.view(), &rstd)
            })
            .fold(0.0, f64::max)
    }
}

/// One block forward.
pub fn block_forward<T: Element>(
    cfg: &Config,
    p: &LayerParams<T>,
    x: &Array2<T>,
) -> (Array2<T>, BlockCache<T>) {
    let (ln1, ln1_cache) = plain::layer_norm(x.view(), p.ln1_w.view(), p.ln1_b.view());
    let mut qkv = ln1.dot(&p.qkv_w);
    qkv += &p.qkv_b;
    let (ctx, attn_cache) =
        plain::attention(qkv.view(), cfg.batch, cfg.seq, cfg.heads, cfg.kv_heads());
    let attn_proj = ctx.dot(&p.out_w);
    let x1 = x + &attn_proj + &p.out_b;
    let (ln2, ln2_cache) = plain::layer_norm(x1.view(), p.ln2_w.view(), p.ln2_b.view());
    let mut fc1 = ln2.dot(&p.fc1_w);
    fc1 += &p.fc1_b;
    let act = plain::gelu(fc1.view());
    let mlp_proj = act.dot(&p.fc2_w);
    let y = &x1 + &mlp_proj + &p.fc2_b;
    let cache = BlockCache {
        x: x.clone(),
        ln1,
        ln1_cache,
        qkv,
        attn_cache,
        ctx,
        attn_proj,
        x1,
        ln2,
        ln2_cache,
        fc1,
        act,
        mlp_proj,
    };
    (y, cache)
}

/// One block backward: from `dy` to `(dx, parameter gradients, the f all-reduce values)`.
pub fn block_backward<T: Element>(
    cfg: &Config,
    p: &LayerParams<T>,
    c: &BlockCache<T>,
    dy: &Array2<T>,
) -> (Array2<T>, LayerParams<T>, BlockBackward<T>) {
    let mut g = LayerParams::<T>::zeros(cfg);
    // y = x1 + act·W2 + b2
    g.fc2_b = plain::col_sum(dy.view());
    g.fc2_w = c.act.t().dot(dy);
    let dact = dy.dot(&p.fc2_w.t());
    let dfc1 = plain::gelu_backward(c.fc1.view(), dact.view());
    g.fc1_w = c.ln2.t().dot(&dfc1);
    g.fc1_b = plain::col_sum(dfc1.view());
    let d_ln2 = dfc1.dot(&p.fc1_w.t());
    let (dx1_ln, g_ln2w, g_ln2b) =
        plain::layer_norm_backward(d_ln2.view(), &c.ln2_cache, p.ln2_w.view());
    g.ln2_w = g_ln2w;
    g.ln2_b = g_ln2b;
    let dx1 = dy + &dx1_ln;
    // x1 = x + ctx·Wout + bout
    g.out_b = plain::col_sum(dx1.view());
    g.out_w = c.ctx.t().dot(&dx1);
    let dctx = dx1.dot(&p.out_w.t());
    let dqkv = plain::attention_backward(
        c.qkv.view(),
        &c.attn_cache,
        dctx.view(),
        cfg.batch,
        cfg.seq,
        cfg.heads,
        cfg.kv_heads(),
    );
    g.qkv_w = c.ln1.t().dot(&dqkv);
    g.qkv_b = plain::col_sum(dqkv.view());
    let d_ln1 = dqkv.dot(&p.qkv_w.t());
    let (dx_ln, g_ln1w, g_ln1b) =
        plain::layer_norm_backward(d_ln1.view(), &c.ln1_cache, p.ln1_w.view());
    g.ln1_w = g_ln1w;
    g.ln1_b = g_ln1b;
    let dx = &dx1 + &dx_ln;
    (dx, g, BlockBackward { d_ln2, d_ln1 })
}

/// Forward only (no caches kept beyond the output): used by finite-difference checks.
pub fn forward<T: Element>(cfg: &Config, model: &Model<T>) -> Array2<T> {
    model
        .layers
        .iter()
        .fold(model.input.clone(), |x, p| block_forward(cfg, p, &x).0)
}

/// Forward and backward of the whole stack with upstream gradient `model.grad_output`.
pub fn run<T: Element>(cfg: &Config, model: &Model<T>) -> ReferenceRun<T> {
    let mut x = model.input.clone();
    let mut caches = Vec::with_capacity(model.layers.len());
    for p in &model.layers {
        let (y, c) = block_forward(cfg, p, &x);
        caches.push(c);
        x = y;
    }
    let output = x;
    let mut dy = model.grad_output.clone();
    let mut grads = Vec::with_capacity(model.layers.len());
    let mut backward = Vec::with_capacity(model.layers.len());
    for (p, c) in model.layers.iter().zip(&caches).rev() {
        let (dx, g, b) = block_backward(cfg, p, c, &dy);
        grads.push(g);
        backward.push(b);
        dy = dx;
    }
    grads.reverse();
    backward.reverse();
    ReferenceRun {
        output,
        caches,
        backward,
        grad_input: dy,
        grads,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Preset;
    use crate::params::ParamKind;

    /// The reference backward against central finite differences of `L = Σ y ⊙ G` on a tiny f64
    /// config (2 layers), for the input and one entry of every parameter.
    #[test]
    fn reference_backward_matches_finite_differences() {
        check_finite_differences(Config {
            layers: 2,
            ..Preset::Tiny.config()
        });
    }

    /// The same with grouped-query attention: 4 query heads sharing 2 KV heads.
    #[test]
    fn reference_backward_matches_finite_differences_with_gqa() {
        check_finite_differences(Config {
            layers: 2,
            kv_heads: Some(2),
            ..Preset::Tiny.config()
        });
    }

    fn check_finite_differences(cfg: Config) {
        let model = Model::<f64>::random(&cfg);
        let r = run(&cfg, &model);
        let loss = |m: &Model<f64>| (&forward(&cfg, m) * &m.grad_output).sum();
        let h = 1e-5;
        // Truncation O(h²·|L'''|) ≈ 1e-10 and cancellation ε·|L|/h ≈ 1e-10 for |L| ~ 10.
        let tol = |g: f64| 1e-6 * (1.0 + g.abs());
        for idx in [(0, 0), (5, 3), (15, 15)] {
            let mut m = model.clone();
            m.input[idx] += h;
            let lp = loss(&m);
            m.input[idx] -= 2.0 * h;
            let fd = (lp - loss(&m)) / (2.0 * h);
            let g = r.grad_input[idx];
            assert!((fd - g).abs() < tol(g), "input{idx:?}: fd {fd} vs {g}");
        }
        for layer in 0..2 {
            for k in ParamKind::ALL {
                let shape = k.shape(&cfg);
                let idx = (shape[0] / 2, (shape[1] * 2) / 3);
                let mut m = model.clone();
                m.layers[layer].get_mut(k)[idx] += h;
                let lp = loss(&m);
                m.layers[layer].get_mut(k)[idx] -= 2.0 * h;
                let fd = (lp - loss(&m)) / (2.0 * h);
                let g = r.grads[layer].get(k)[idx];
                assert!(
                    (fd - g).abs() < tol(g),
                    "{}{idx:?}: fd {fd} vs {g}",
                    k.name(layer)
                );
            }
        }
    }
}

/// The reference's own kernels, written for clarity with ndarray and std alone: it shares no code
/// path with the executors' optimised kernels ([`crate::block::ops`]), only the data types of what it
/// saves (so the verification can read both) and the constants of the model (`LN_EPS`, GeLU's tanh
/// approximation).
pub(crate) mod plain {
    use crate::block::ops::{AttnCache, LnCache, LN_EPS};
    use crate::dtype::Element;
    use ndarray::{s, Array1, Array2, ArrayView2, Axis};

    /// Sum over rows: `[1, cols]`.
    pub fn col_sum<T: Element>(x: ArrayView2<'_, T>) -> Array2<T> {
        x.sum_axis(Axis(0)).insert_axis(Axis(0))
    }

    /// `y = (x − mean)/sqrt(var + eps) · w + b`, row by row.
    pub fn layer_norm<T: Element>(
        x: ArrayView2<'_, T>,
        w: ArrayView2<'_, T>,
        b: ArrayView2<'_, T>,
    ) -> (Array2<T>, LnCache<T>) {
        let (rows, cols) = x.dim();
        let n = T::from_f64(cols as f64);
        let eps = T::from_f64(LN_EPS);
        let mut xhat = Array2::<T>::zeros((rows, cols));
        let mut rstd = Array1::<T>::zeros(rows);
        for i in 0..rows {
            let row = x.row(i);
            let mean = row.sum() / n;
            let var = row
                .iter()
                .map(|&v| (v - mean) * (v - mean))
                .fold(T::zero(), |a, v| a + v)
                / n;
            let r = T::one() / (var + eps).sqrt();
            rstd[i] = r;
            for j in 0..cols {
                xhat[[i, j]] = (row[j] - mean) * r;
            }
        }
        let mut y = xhat.clone();
        for i in 0..rows {
            for j in 0..cols {
                y[[i, j]] = xhat[[i, j]] * w[[0, j]] + b[[0, j]];
            }
        }
        (y, LnCache { xhat, rstd })
    }

    /// LayerNorm backward: `(dx, dw, db)`, with `g = dy·w`:
    /// `dx = rstd · (g − mean(g) − xhat · mean(g · xhat))`.
    pub fn layer_norm_backward<T: Element>(
        dy: ArrayView2<'_, T>,
        cache: &LnCache<T>,
        w: ArrayView2<'_, T>,
    ) -> (Array2<T>, Array2<T>, Array2<T>) {
        let (rows, cols) = dy.dim();
        let n = T::from_f64(cols as f64);
        let mut dx = Array2::<T>::zeros((rows, cols));
        let mut dw = Array2::<T>::zeros((1, cols));
        let mut db = Array2::<T>::zeros((1, cols));
        for i in 0..rows {
            let (mut mean_g, mut mean_gx) = (T::zero(), T::zero());
            for j in 0..cols {
                let g = dy[[i, j]] * w[[0, j]];
                mean_g += g;
                mean_gx += g * cache.xhat[[i, j]];
                dw[[0, j]] += dy[[i, j]] * cache.xhat[[i, j]];
                db[[0, j]] += dy[[i, j]];
            }
            mean_g /= n;
            mean_gx /= n;
            for j in 0..cols {
                let g = dy[[i, j]] * w[[0, j]];
                dx[[i, j]] = cache.rstd[i] * (g - mean_g - cache.xhat[[i, j]] * mean_gx);
            }
        }
        (dx, dw, db)
    }

    const GELU_C: f64 = 0.797_884_560_802_865_4; // sqrt(2/π)
    const GELU_A: f64 = 0.044_715;

    /// GeLU, tanh approximation, with std's `tanh`.
    pub fn gelu<T: Element>(x: ArrayView2<'_, T>) -> Array2<T> {
        let (c, a, half) = (T::from_f64(GELU_C), T::from_f64(GELU_A), T::from_f64(0.5));
        x.mapv(|v| half * v * (T::one() + (c * (v + a * v * v * v)).tanh()))
    }

    /// `dy · GeLU'(x)`.
    pub fn gelu_backward<T: Element>(x: ArrayView2<'_, T>, dy: ArrayView2<'_, T>) -> Array2<T> {
        let (c, a, half) = (T::from_f64(GELU_C), T::from_f64(GELU_A), T::from_f64(0.5));
        let three = T::from_f64(3.0);
        let mut out = Array2::<T>::zeros(x.dim());
        for ((o, &v), &g) in out.iter_mut().zip(x.iter()).zip(dy.iter()) {
            let th = (c * (v + a * v * v * v)).tanh();
            let d = half * (T::one() + th)
                + half * v * (T::one() - th * th) * c * (T::one() + three * a * v * v);
            *o = g * d;
        }
        out
    }

    /// Column ranges of query head `j`'s Q, K and V in the packed `[Q | K | V]` layout.
    fn head_cols(
        cols: usize,
        heads: usize,
        kv_heads: usize,
        j: usize,
    ) -> [std::ops::Range<usize>; 3] {
        let kv = kv_heads.clamp(1, heads.max(1));
        let d = cols / (heads + 2 * kv).max(1);
        let g = j / (heads / kv).max(1);
        [
            j * d..(j + 1) * d,
            (heads + g) * d..(heads + g + 1) * d,
            (heads + kv + g) * d..(heads + kv + g + 1) * d,
        ]
    }

    /// Causal multi-head (grouped-query) attention, one (batch, head) at a time: scores
    /// `QKᵀ/√d` over the positions up to each row, softmax, times V.
    pub fn attention<T: Element>(
        qkv: ArrayView2<'_, T>,
        batch: usize,
        seq: usize,
        heads: usize,
        kv_heads: usize,
    ) -> (Array2<T>, AttnCache<T>) {
        let [q0, _, _] = head_cols(qkv.ncols(), heads, kv_heads, 0);
        let d = q0.len();
        let scale = T::from_f64(1.0 / (d as f64).sqrt());
        let mut ctx = Array2::<T>::zeros((batch * seq, heads * d));
        let mut probs = Vec::with_capacity(batch * heads);
        for b in 0..batch {
            let rows = b * seq..(b + 1) * seq;
            for j in 0..heads {
                let [qc, kc, vc] = head_cols(qkv.ncols(), heads, kv_heads, j);
                let q = qkv.slice(s![rows.clone(), qc]);
                let k = qkv.slice(s![rows.clone(), kc]);
                let v = qkv.slice(s![rows.clone(), vc]);
                let mut p = Array2::<T>::zeros((seq, seq));
                for i in 0..seq {
                    let scores: Vec<T> = (0..=i).map(|t| q.row(i).dot(&k.row(t)) * scale).collect();
                    let max = scores.iter().fold(T::neg_infinity(), |m, &x| m.max(x));
                    let exps: Vec<T> = scores.iter().map(|&x| (x - max).exp()).collect();
                    let sum = exps.iter().fold(T::zero(), |a, &x| a + x);
                    for (t, e) in exps.into_iter().enumerate() {
                        p[[i, t]] = e / sum;
                    }
                }
                let o = p.dot(&v);
                ctx.slice_mut(s![rows.clone(), j * d..(j + 1) * d])
                    .assign(&o);
                probs.push(p);
            }
        }
        (ctx, AttnCache { probs })
    }

    /// Attention backward to `dqkv`: `dV = Pᵀ·dO`, `dP = dO·Vᵀ`, `dS = P ⊙ (dP − rowsum(dP ⊙ P))`,
    /// `dQ = dS·K/√d`, `dK = dSᵀ·Q/√d`; a KV head's gradients summed over its query heads.
    #[allow(clippy::too_many_arguments)]
    pub fn attention_backward<T: Element>(
        qkv: ArrayView2<'_, T>,
        cache: &AttnCache<T>,
        dctx: ArrayView2<'_, T>,
        batch: usize,
        seq: usize,
        heads: usize,
        kv_heads: usize,
    ) -> Array2<T> {
        let [q0, _, _] = head_cols(qkv.ncols(), heads, kv_heads, 0);
        let d = q0.len();
        let scale = T::from_f64(1.0 / (d as f64).sqrt());
        let mut dqkv = Array2::<T>::zeros(qkv.dim());
        for b in 0..batch {
            let rows = b * seq..(b + 1) * seq;
            for j in 0..heads {
                let [qc, kc, vc] = head_cols(qkv.ncols(), heads, kv_heads, j);
                let p = &cache.probs[b * heads + j];
                let q = qkv.slice(s![rows.clone(), qc.clone()]);
                let k = qkv.slice(s![rows.clone(), kc.clone()]);
                let v = qkv.slice(s![rows.clone(), vc.clone()]);
                let dout = dctx.slice(s![rows.clone(), j * d..(j + 1) * d]);
                let dv = p.t().dot(&dout);
                let dp = dout.dot(&v.t());
                let mut ds = Array2::<T>::zeros((seq, seq));
                for i in 0..seq {
                    let dot = (0..seq).fold(T::zero(), |a, t| a + dp[[i, t]] * p[[i, t]]);
                    for t in 0..seq {
                        ds[[i, t]] = p[[i, t]] * (dp[[i, t]] - dot) * scale;
                    }
                }
                let dq = ds.dot(&k);
                let dk = ds.t().dot(&q);
                dqkv.slice_mut(s![rows.clone(), qc]).assign(&dq);
                let mut kk = dqkv.slice_mut(s![rows.clone(), kc]);
                kk += &dk;
                let mut vv = dqkv.slice_mut(s![rows.clone(), vc]);
                vv += &dv;
            }
        }
        dqkv
    }
}
