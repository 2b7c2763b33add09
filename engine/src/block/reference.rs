//! The unsharded CPU reference: the whole block on one device, plain ndarray, no splitting.
//!
//! It uses ndarray's `dot` for every product (not the executors' `gemm` path), keeps the
//! intermediate values that the sharded run's collectives produce (the out-projection's and fc2's
//! outputs before their bias, and the gradients at the LayerNorm outputs), and computes every
//! gradient: the input's and every parameter's.

use crate::config::Config;
use crate::dtype::Element;
use crate::ops::{self, AttnCache, LnCache};
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
    /// entered a LayerNorm (see [`crate::verify`]): the tolerance of a comparison grows with it.
    pub fn layer_norm_condition(&self) -> f64 {
        self.caches
            .iter()
            .flat_map(|c| [(&c.x, &c.ln1_cache), (&c.x1, &c.ln2_cache)])
            .map(|(x, ln)| {
                let rows = x.mapv(Element::to_f64);
                let rstd: Vec<f64> = ln.rstd.iter().map(|&v| Element::to_f64(v)).collect();
                crate::verify::layer_norm_condition(rows.view(), &rstd)
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
    let (ln1, ln1_cache) = ops::layer_norm(x.view(), p.ln1_w.view(), p.ln1_b.view());
    let mut qkv = ln1.dot(&p.qkv_w);
    qkv += &p.qkv_b;
    let (ctx, attn_cache) = ops::attention(
        qkv.view(),
        cfg.batch,
        cfg.seq,
        cfg.heads,
        cfg.kv_heads(),
        ops::dot,
    );
    let attn_proj = ctx.dot(&p.out_w);
    let x1 = x + &attn_proj + &p.out_b;
    let (ln2, ln2_cache) = ops::layer_norm(x1.view(), p.ln2_w.view(), p.ln2_b.view());
    let mut fc1 = ln2.dot(&p.fc1_w);
    fc1 += &p.fc1_b;
    let act = ops::gelu(fc1.view());
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
    g.fc2_b = ops::col_sum(dy.view());
    g.fc2_w = c.act.t().dot(dy);
    let dact = dy.dot(&p.fc2_w.t());
    let dfc1 = ops::gelu_backward(c.fc1.view(), dact.view());
    g.fc1_w = c.ln2.t().dot(&dfc1);
    g.fc1_b = ops::col_sum(dfc1.view());
    let d_ln2 = dfc1.dot(&p.fc1_w.t());
    let (dx1_ln, g_ln2w, g_ln2b) =
        ops::layer_norm_backward(d_ln2.view(), &c.ln2_cache, p.ln2_w.view());
    g.ln2_w = g_ln2w;
    g.ln2_b = g_ln2b;
    let dx1 = dy + &dx1_ln;
    // x1 = x + ctx·Wout + bout
    g.out_b = ops::col_sum(dx1.view());
    g.out_w = c.ctx.t().dot(&dx1);
    let dctx = dx1.dot(&p.out_w.t());
    let dqkv = ops::attention_backward(
        c.qkv.view(),
        &c.attn_cache,
        dctx.view(),
        cfg.batch,
        cfg.seq,
        cfg.heads,
        cfg.kv_heads(),
        ops::dot,
    );
    g.qkv_w = c.ln1.t().dot(&dqkv);
    g.qkv_b = ops::col_sum(dqkv.view());
    let d_ln1 = dqkv.dot(&p.qkv_w.t());
    let (dx_ln, g_ln1w, g_ln1b) =
        ops::layer_norm_backward(d_ln1.view(), &c.ln1_cache, p.ln1_w.view());
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
