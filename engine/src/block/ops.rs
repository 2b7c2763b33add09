//! Plain CPU kernels: matrix products, LayerNorm, GeLU, causal attention, and their backward
//! passes, used by the labs (training, serving, vocabulary) and the GPU layout tests, and the
//! cache types ([`LnCache`], [`AttnCache`]) every executor saves. The sharded executor runs the
//! fused kernels of [`crate::block::exec::kernels`] instead, whose tests check them against these.
//! Every function is generic over [`Element`] (`f32`, `f64`).
//!
//! The fast matrix product ([`matmul`]) uses the `gemm` crate, which reads arbitrary strides, so a
//! transposed view costs nothing. The unsharded reference uses ndarray's own `dot` instead, so that
//! the two executors do not share a matrix-product implementation.

use crate::dtype::Element;
use ndarray::{s, Array1, Array2, ArrayView2, ArrayViewMut2, Axis, Zip};
use rayon::prelude::*;

/// LayerNorm epsilon (GPT-2's `layer_norm_epsilon`).
pub const LN_EPS: f64 = 1e-5;

/// Products with fewer multiply-adds than this run on one thread (threads cost more than they save).
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
const PARALLEL_MIN_MACS: usize = 1 << 18;

/// `a · b` through `gemm` (any strides, so `x.t()` is free).
pub fn matmul<T: Element>(a: ArrayView2<'_, T>, b: ArrayView2<'_, T>) -> Array2<T> {
    let m = a.nrows();
    let n = b.ncols();
    let mut out = Array2::<T>::zeros((m, n));
    matmul_into(a, b, out.view_mut(), false);
    out
}

/// `out = a · b` (or `out += a · b` when `accumulate`), through `gemm`.
///
/// **Panics** if the shapes do not chain (`a` is `m×k`, `b` is `k×n`, `out` is `m×n`); the
/// executors only call it with shapes from a validated plan.
pub fn matmul_into<T: Element>(
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
    out: ArrayViewMut2<'_, T>,
    accumulate: bool,
) {
    gemm_into(a, b, out, accumulate, T::one(), true);
}

/// `out = beta·a·b` (or `out += beta·a·b` when `accumulate`) through `gemm`, on the thread pool
/// when `parallel` and the product is large enough.
///
/// **Panics** if the shapes do not chain; the executor only passes shapes from a validated plan.
pub(crate) fn gemm_into<T: Element>(
    a: ArrayView2<'_, T>,
    b: ArrayView2<'_, T>,
    mut out: ArrayViewMut2<'_, T>,
    accumulate: bool,
    beta: T,
    parallel: bool,
) {
    let (m, k) = a.dim();
    let (k2, n) = b.dim();
    assert!(
        k == k2 && out.dim() == (m, n),
        "matmul shapes do not chain: {m}x{k} · {k2}x{n} -> {:?}",
        out.dim()
    );
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            out.fill(T::zero());
        }
        return;
    }
    #[cfg(not(target_arch = "wasm32"))]
    let par = if parallel && m * n * k >= PARALLEL_MIN_MACS {
        gemm::Parallelism::Rayon(0)
    } else {
        gemm::Parallelism::None
    };
    #[cfg(target_arch = "wasm32")]
    let par = {
        let _ = (parallel, PARALLEL_MIN_MACS);
        gemm::Parallelism::None
    };
    let (a_rs, a_cs) = (a.strides()[0], a.strides()[1]);
    let (b_rs, b_cs) = (b.strides()[0], b.strides()[1]);
    let (o_rs, o_cs) = (out.strides()[0], out.strides()[1]);
    // SAFETY: the pointers and strides come from live ndarray views whose shapes were checked
    // above to be m×k, k×n and m×n; `out` is a unique mutable view that does not alias `a` or `b`
    // (the borrow checker guarantees it), and gemm only reads/writes inside those extents.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.as_mut_ptr(),
            o_cs,
            o_rs,
            accumulate,
            a.as_ptr(),
            a_cs,
            a_rs,
            b.as_ptr(),
            b_cs,
            b_rs,
            T::one(),
            beta,
            false,
            false,
            false,
            par,
        );
    }
}

/// Adds a `[1, n]` row vector to every row of `x`.
pub fn add_row<T: Element>(x: &mut Array2<T>, row: ArrayView2<'_, T>) {
    *x += &row;
}

/// Column sums, as a `[1, n]` matrix (the gradient of a bias).
pub fn col_sum<T: Element>(x: ArrayView2<'_, T>) -> Array2<T> {
    x.sum_axis(Axis(0)).insert_axis(Axis(0))
}

/// What LayerNorm's backward needs from its forward.
#[derive(Debug, Clone, PartialEq)]
pub struct LnCache<T> {
    /// `(x − mean) · rstd`, `[t, h]`.
    pub xhat: Array2<T>,
    /// `1 / sqrt(var + eps)` per row.
    pub rstd: Array1<T>,
}

/// LayerNorm over the last axis: `y = (x − mean)/sqrt(var + eps) · γ + β` (biased variance).
pub fn layer_norm<T: Element>(
    x: ArrayView2<'_, T>,
    gamma: ArrayView2<'_, T>,
    beta: ArrayView2<'_, T>,
) -> (Array2<T>, LnCache<T>) {
    let (t, h) = x.dim();
    let hn = T::from_f64(h as f64);
    let eps = T::from_f64(LN_EPS);
    let mut xhat = Array2::<T>::zeros((t, h));
    let mut rstd = Array1::<T>::zeros(t);
    Zip::from(xhat.rows_mut())
        .and(x.rows())
        .and(&mut rstd)
        .par_for_each(|mut xr, row, rs| {
            let mean = row.sum() / hn;
            let var = row.fold(T::zero(), |acc, &v| acc + (v - mean) * (v - mean)) / hn;
            let r = T::one() / (var + eps).sqrt();
            *rs = r;
            Zip::from(&mut xr)
                .and(&row)
                .for_each(|o, &v| *o = (v - mean) * r);
        });
    let mut y = &xhat * &gamma;
    y += &beta;
    (y, LnCache { xhat, rstd })
}

/// LayerNorm backward: returns `(dx, dγ, dβ)`.
///
/// `dx = rstd · (dx̂ − mean(dx̂) − x̂ · mean(dx̂ · x̂))` with `dx̂ = dy · γ`.
pub fn layer_norm_backward<T: Element>(
    dy: ArrayView2<'_, T>,
    cache: &LnCache<T>,
    gamma: ArrayView2<'_, T>,
) -> (Array2<T>, Array2<T>, Array2<T>) {
    let (t, h) = dy.dim();
    let hn = T::from_f64(h as f64);
    let dgamma = col_sum((&dy * &cache.xhat).view());
    let dbeta = col_sum(dy);
    let dxhat = &dy * &gamma;
    let mut dx = Array2::<T>::zeros((t, h));
    Zip::from(dx.rows_mut())
        .and(dxhat.rows())
        .and(cache.xhat.rows())
        .and(&cache.rstd)
        .par_for_each(|mut o, g, xh, &r| {
            let m1 = g.sum() / hn;
            let m2 = Zip::from(&g)
                .and(&xh)
                .fold(T::zero(), |acc, &a, &b| acc + a * b)
                / hn;
            Zip::from(&mut o)
                .and(&g)
                .and(&xh)
                .for_each(|o, &gv, &xv| *o = r * (gv - m1 - xv * m2));
        });
    (dx, dgamma, dbeta)
}

const GELU_C: f64 = 0.797_884_560_802_865_4; // sqrt(2/π)

/// `tanh(u) = 1 − 2/(e^{2u} + 1)`: one `exp` instead of libm's slower `tanh` (3× faster here).
/// Its absolute error is a few ε (cancellation near 0 costs relative, not absolute, accuracy,
/// and GeLU uses `1 + tanh`, so that is what matters); `exp` overflowing to ∞ gives exactly 1.
#[inline]
fn tanh_fast<T: Element>(u: T) -> T {
    T::one() - (T::one() + T::one()) / ((u + u).exp() + T::one())
}
const GELU_A: f64 = 0.044_715;

/// GeLU, tanh approximation: `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
pub fn gelu<T: Element>(x: ArrayView2<'_, T>) -> Array2<T> {
    let (c, a, half) = (T::from_f64(GELU_C), T::from_f64(GELU_A), T::from_f64(0.5));
    let mut out = x.to_owned();
    out.par_mapv_inplace(|v| half * v * (T::one() + tanh_fast(c * (v + a * v * v * v))));
    out
}

/// GeLU backward: `dy · gelu'(x)`.
pub fn gelu_backward<T: Element>(x: ArrayView2<'_, T>, dy: ArrayView2<'_, T>) -> Array2<T> {
    let (c, a, half, three) = (
        T::from_f64(GELU_C),
        T::from_f64(GELU_A),
        T::from_f64(0.5),
        T::from_f64(3.0),
    );
    let mut out = Array2::<T>::zeros(x.dim());
    Zip::from(&mut out)
        .and(&x)
        .and(&dy)
        .par_for_each(|o, &v, &g| {
            let th = tanh_fast(c * (v + a * v * v * v));
            let d = half * (T::one() + th)
                + half * v * (T::one() - th * th) * c * (T::one() + three * a * v * v);
            *o = g * d;
        });
    out
}

/// Softmax of each row of `s` over its causal columns: row `i` is query position `offset + i`
/// and keeps columns `0..=offset + i`; the rest become 0.
fn causal_softmax_rows<T: Element>(mut s: ArrayViewMut2<'_, T>, offset: usize) {
    for (i, mut row) in s.rows_mut().into_iter().enumerate() {
        let last = offset + i;
        let mut max = T::neg_infinity();
        for &v in row.iter().take(last + 1) {
            max = max.max(v);
        }
        let mut sum = T::zero();
        for (j, v) in row.iter_mut().enumerate() {
            if j <= last {
                *v = (*v - max).exp();
                sum += *v;
            } else {
                *v = T::zero();
            }
        }
        row.mapv_inplace(|v| v / sum);
    }
}

/// Query rows per block of causal attention: block `[r0, r1)` attends to keys `0..r1` only, so
/// the masked upper triangle is never multiplied (about half the work at long sequences).
pub(crate) const ATTN_BLOCK_ROWS: usize = 64;

/// The row blocks `[r0, r1)` of a sequence of `seq` positions.
pub(crate) fn row_blocks(seq: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..seq)
        .step_by(ATTN_BLOCK_ROWS)
        .map(move |r0| (r0, (r0 + ATTN_BLOCK_ROWS).min(seq)))
}

/// What attention's backward needs: the softmax probabilities of every (batch, head), `[s, s]`.
#[derive(Debug, Clone, PartialEq)]
pub struct AttnCache<T> {
    pub probs: Vec<Array2<T>>,
}

/// Causal multi-head attention core on packed `qkv` `[b·s, (heads + 2·kv_heads)·d]` laid out
/// `[Q | K | V]`: `heads` query heads, then `kv_heads` key heads, then `kv_heads` value heads,
/// head `j` in columns `j·d..(j+1)·d` of its part. Query head `j` attends with KV head
/// `j / (heads / kv_heads)` (grouped-query attention; `kv_heads == heads` is plain multi-head
/// attention). Returns the context `[b·s, heads·d]` (heads side by side) and the cache. `matmul`
/// is the product to use (the reference passes ndarray's `dot`).
pub fn attention<T: Element>(
    qkv: ArrayView2<'_, T>,
    batch: usize,
    seq: usize,
    heads: usize,
    kv_heads: usize,
    mm: impl Fn(ArrayView2<'_, T>, ArrayView2<'_, T>) -> Array2<T> + Sync,
) -> (Array2<T>, AttnCache<T>) {
    attention_by_head(
        qkv,
        batch,
        seq,
        heads,
        kv_heads,
        |[q, k, v], scale, mut o| {
            // Block by block of query rows, against the keys up to the block's last row.
            let mut p = Array2::<T>::zeros((seq, seq));
            for (r0, r1) in row_blocks(seq) {
                let mut sc = mm(q.slice(s![r0..r1, ..]), k.slice(s![..r1, ..]).t());
                sc.mapv_inplace(|x| x * scale);
                causal_softmax_rows(sc.view_mut(), r0);
                o.slice_mut(s![r0..r1, ..])
                    .assign(&mm(sc.view(), v.slice(s![..r1, ..])));
                p.slice_mut(s![r0..r1, ..r1]).assign(&sc);
            }
            p
        },
    )
}

/// The frame of causal attention's forward (here and in [`crate::block::exec::kernels`]): `head` takes
/// one (batch, query head)'s `[Q, K, V]` views, the score scale `1/√d` and the head's `[s, d]`
/// block of the context, which it fills, and returns the head's probabilities `[s, s]`. The
/// (batch, head) pairs are independent and run on the thread pool, each writing its own block of
/// the context `[b·s, heads·d]` (heads side by side) in place.
pub(crate) fn attention_by_head<T: Element>(
    qkv: ArrayView2<'_, T>,
    batch: usize,
    seq: usize,
    heads: usize,
    kv_heads: usize,
    head: impl Fn([ArrayView2<'_, T>; 3], T, ArrayViewMut2<'_, T>) -> Array2<T> + Sync,
) -> (Array2<T>, AttnCache<T>) {
    let l = QkvLayout::new(qkv.ncols(), heads, kv_heads);
    let d = l.d;
    let scale = T::from_f64(1.0 / (d as f64).sqrt());
    let mut ctx = Array2::<T>::zeros((batch * seq, heads * d));
    let mut probs = Array2::from_elem((batch, heads), Array2::<T>::zeros((0, 0)));
    if seq > 0 && d > 0 {
        // The context's (b, j) block, rows b·s.., columns j·d.., is head (b, j)'s output.
        Zip::indexed(ctx.exact_chunks_mut((seq, d)))
            .and(&mut probs)
            .par_for_each(|(b, j), o, p| *p = head(l.head(qkv, b, seq, j), scale, o));
    }
    (
        ctx,
        AttnCache {
            probs: probs.into_iter().collect(),
        },
    )
}

/// Column ranges of the packed `[Q | K | V]` layout: `heads` query heads, then `kv_heads` key
/// heads, then `kv_heads` value heads, each `d` wide; query head `j` reads KV head
/// `j / (heads / kv_heads)` (also the layout of the sharded executor's kernels).
#[derive(Clone, Copy)]
pub(crate) struct QkvLayout {
    pub(crate) d: usize,
    pub(crate) heads: usize,
    pub(crate) kv_heads: usize,
}

impl QkvLayout {
    pub(crate) fn new(cols: usize, heads: usize, kv_heads: usize) -> Self {
        let kv_heads = kv_heads.clamp(1, heads.max(1));
        Self {
            d: cols / (heads + 2 * kv_heads).max(1),
            heads,
            kv_heads,
        }
    }

    /// Query heads per KV head.
    pub(crate) fn group(&self) -> usize {
        (self.heads / self.kv_heads).max(1)
    }

    pub(crate) fn q(&self, j: usize) -> std::ops::Range<usize> {
        j * self.d..(j + 1) * self.d
    }

    /// KV head `g`'s key columns.
    pub(crate) fn k_of_group(&self, g: usize) -> std::ops::Range<usize> {
        let c = (self.heads + g) * self.d;
        c..c + self.d
    }

    /// KV head `g`'s value columns.
    pub(crate) fn v_of_group(&self, g: usize) -> std::ops::Range<usize> {
        let c = (self.heads + self.kv_heads + g) * self.d;
        c..c + self.d
    }

    /// `Q`, `K` and `V` of query head `j` in sequence `b` (rows `b·seq..`).
    pub(crate) fn head<'a, T>(
        &self,
        qkv: ArrayView2<'a, T>,
        b: usize,
        seq: usize,
        j: usize,
    ) -> [ArrayView2<'a, T>; 3] {
        let (rows, g) = (b * seq..(b + 1) * seq, j / self.group());
        [
            qkv.slice_move(s![rows.clone(), self.q(j)]),
            qkv.slice_move(s![rows.clone(), self.k_of_group(g)]),
            qkv.slice_move(s![rows, self.v_of_group(g)]),
        ]
    }
}

/// Attention core backward: from `dctx` `[b·s, heads·d]` to `dqkv` (the shape of `qkv`).
///
/// With `P = softmax(S)`, `S = QKᵀ/√d`: `dV = Pᵀ·dO`, `dP = dO·Vᵀ`, `dS = P ⊙ (dP − rowsum(dP ⊙ P))`,
/// `dQ = dS·K/√d`, `dK = dSᵀ·Q/√d`. With grouped-query attention a KV head's gradient is the sum
/// over the query heads of its group, added in head order.
#[allow(clippy::too_many_arguments)]
pub fn attention_backward<T: Element>(
    qkv: ArrayView2<'_, T>,
    cache: &AttnCache<T>,
    dctx: ArrayView2<'_, T>,
    batch: usize,
    seq: usize,
    heads: usize,
    kv_heads: usize,
    mm: impl Fn(ArrayView2<'_, T>, ArrayView2<'_, T>) -> Array2<T> + Sync,
) -> Array2<T> {
    let l = QkvLayout::new(qkv.ncols(), heads, kv_heads);
    let d = l.d;
    let scale = T::from_f64(1.0 / (d as f64).sqrt());
    let per_head: Vec<[Array2<T>; 3]> = (0..batch * heads)
        .into_par_iter()
        .map(|bj| {
            let (b, j) = (bj / heads, bj % heads);
            let p = &cache.probs[bj];
            let [q, k, v] = l.head(qkv, b, seq, j);
            let dout = dctx.slice(s![b * seq..(b + 1) * seq, j * d..(j + 1) * d]);
            // Block by block of query rows, as the forward: the masked upper triangle of P is 0
            // and is skipped.
            let (mut dq, mut dk, mut dv) = (
                Array2::<T>::zeros((seq, d)),
                Array2::<T>::zeros((seq, d)),
                Array2::<T>::zeros((seq, d)),
            );
            for (r0, r1) in row_blocks(seq) {
                let pb = p.slice(s![r0..r1, ..r1]);
                let db = dout.slice(s![r0..r1, ..]);
                let mut dv_part = dv.slice_mut(s![..r1, ..]);
                dv_part += &mm(pb.t(), db);
                let mut ds = mm(db, v.slice(s![..r1, ..]).t());
                Zip::from(ds.rows_mut())
                    .and(pb.rows())
                    .for_each(|mut dr, pr| {
                        let dot = Zip::from(&dr)
                            .and(&pr)
                            .fold(T::zero(), |acc, &a, &b| acc + a * b);
                        Zip::from(&mut dr)
                            .and(&pr)
                            .for_each(|x, &pv| *x = pv * (*x - dot) * scale);
                    });
                dq.slice_mut(s![r0..r1, ..])
                    .assign(&mm(ds.view(), k.slice(s![..r1, ..])));
                let mut dk_part = dk.slice_mut(s![..r1, ..]);
                dk_part += &mm(ds.t(), q.slice(s![r0..r1, ..]));
            }
            [dq, dk, dv]
        })
        .collect();
    let mut dqkv = Array2::<T>::zeros(qkv.dim());
    for (bj, [dq, dk, dv]) in per_head.into_iter().enumerate() {
        let (b, j) = (bj / heads, bj % heads);
        let rows = b * seq..(b + 1) * seq;
        dqkv.slice_mut(s![rows.clone(), l.q(j)]).assign(&dq);
        // `+=`: the query heads of a group share their KV head (plain assignment without GQA,
        // since the buffer starts at zero and each KV head then has one query head).
        let g = j / l.group();
        let mut k = dqkv.slice_mut(s![rows.clone(), l.k_of_group(g)]);
        k += &dk;
        let mut v = dqkv.slice_mut(s![rows, l.v_of_group(g)]);
        v += &dv;
    }
    dqkv
}

/// ndarray's own product, for the reference.
pub fn dot<T: Element>(a: ArrayView2<'_, T>, b: ArrayView2<'_, T>) -> Array2<T> {
    a.dot(&b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Model;
    use ndarray::Array2;
    use rand::{Rng, SeedableRng};

    fn rand_mat(r: usize, c: usize, seed: u64) -> Array2<f64> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        Array2::from_shape_simple_fn((r, c), || rng.random_range(-1.0..1.0))
    }

    #[test]
    fn gemm_matches_ndarray_dot_with_transposes() {
        let a = rand_mat(37, 53, 1);
        let b = rand_mat(53, 29, 2);
        let want = a.dot(&b);
        let got = matmul(a.view(), b.view());
        // f64, K=53: rounding differs only by summation order, far below 1e-12.
        assert!((&got - &want).iter().all(|e| e.abs() < 1e-12));
        let bt = b.t().to_owned();
        let got_t = matmul(a.view(), bt.t());
        assert!((&got_t - &want).iter().all(|e| e.abs() < 1e-12));
        let big_a = rand_mat(200, 300, 3);
        let big_b = rand_mat(300, 100, 4);
        let d = &matmul(big_a.view(), big_b.view()) - &big_a.dot(&big_b);
        assert!(d.iter().all(|e| e.abs() < 1e-11));
    }

    /// Central finite differences of a scalar loss `sum(out ⊙ g)` against an op's backward.
    fn check_grad(
        x: &Array2<f64>,
        g: &Array2<f64>,
        f: impl Fn(&Array2<f64>) -> Array2<f64>,
        dx: &Array2<f64>,
    ) {
        let h = 1e-6;
        let mut xp = x.clone();
        for idx in [(0, 0), (1, 2), (x.nrows() - 1, x.ncols() - 1), (2, 1)] {
            let orig = xp[idx];
            xp[idx] = orig + h;
            let lp = (&f(&xp) * g).sum();
            xp[idx] = orig - h;
            let lm = (&f(&xp) * g).sum();
            xp[idx] = orig;
            let fd = (lp - lm) / (2.0 * h);
            // Central differences: truncation O(h²)≈1e-12, cancellation ≈ ε·|L|/h ≈ 1e-9.
            assert!(
                (fd - dx[idx]).abs() < 1e-7,
                "{idx:?}: fd {fd} vs {}",
                dx[idx]
            );
        }
    }

    #[test]
    fn layer_norm_gelu_attention_backward_match_finite_differences() {
        let x = rand_mat(6, 8, 5);
        let g = rand_mat(6, 8, 6);
        let gamma = rand_mat(1, 8, 7);
        let beta = rand_mat(1, 8, 8);
        let (_, cache) = layer_norm(x.view(), gamma.view(), beta.view());
        let (dx, _, _) = layer_norm_backward(g.view(), &cache, gamma.view());
        check_grad(
            &x,
            &g,
            |x| layer_norm(x.view(), gamma.view(), beta.view()).0,
            &dx,
        );

        let dgx = gelu_backward(x.view(), g.view());
        check_grad(&x, &g, |x| gelu(x.view()), &dgx);

        // 2 sequences of 3 tokens, 2 heads of size 2: qkv is [6, 12].
        let qkv = rand_mat(6, 12, 9);
        let gc = rand_mat(6, 4, 10);
        let (_, ac) = attention(qkv.view(), 2, 3, 2, 2, dot);
        let dq = attention_backward(qkv.view(), &ac, gc.view(), 2, 3, 2, 2, dot);
        check_grad(&qkv, &gc, |q| attention(q.view(), 2, 3, 2, 2, dot).0, &dq);

        // Grouped-query: 4 query heads share 2 KV heads of size 2: qkv is [6, (4 + 4)·2].
        let qkv = rand_mat(6, 16, 11);
        let gc = rand_mat(6, 8, 12);
        let (_, ac) = attention(qkv.view(), 2, 3, 4, 2, dot);
        let dq = attention_backward(qkv.view(), &ac, gc.view(), 2, 3, 4, 2, dot);
        check_grad(&qkv, &gc, |q| attention(q.view(), 2, 3, 4, 2, dot).0, &dq);
    }

    /// Grouped-query attention is multi-head attention with each KV head repeated for its group's
    /// query heads (what `repeat_kv` does in Hugging Face's Llama).
    #[test]
    fn gqa_equals_mha_with_repeated_kv() {
        let (heads, kv, d, t) = (6, 2, 3, 5);
        let qkv = rand_mat(t, (heads + 2 * kv) * d, 21);
        let mut full = Array2::<f64>::zeros((t, 3 * heads * d));
        full.slice_mut(s![.., 0..heads * d])
            .assign(&qkv.slice(s![.., 0..heads * d]));
        for j in 0..heads {
            let g = j / (heads / kv);
            for part in 1..3 {
                let src = (heads + (part - 1) * kv + g) * d;
                let dst = (part * heads + j) * d;
                full.slice_mut(s![.., dst..dst + d])
                    .assign(&qkv.slice(s![.., src..src + d]));
            }
        }
        let (a, _) = attention(qkv.view(), 1, t, heads, kv, dot);
        let (b, _) = attention(full.view(), 1, t, heads, heads, dot);
        assert!((&a - &b).iter().all(|v| v.abs() < 1e-14));
    }

    #[test]
    fn tanh_fast_matches_tanh() {
        for i in -4000..=4000 {
            let u = i as f64 / 200.0;
            // Absolute error of 1 − 2/(e^{2u}+1): a few ε of the terms near 1.
            assert!((tanh_fast(u) - u.tanh()).abs() < 4.0 * f64::EPSILON, "{u}");
            let u32v = u as f32;
            assert!(
                (tanh_fast(u32v) - u32v.tanh()).abs() < 4.0 * f32::EPSILON,
                "{u}"
            );
        }
        assert_eq!(tanh_fast(1e6f64), 1.0);
        assert_eq!(tanh_fast(-1e6f32), -1.0);
    }

    #[test]
    fn attention_is_causal() {
        let cfg = crate::config::Preset::Tiny.config();
        let m = Model::<f64>::random(&cfg);
        let qkv = m.layers[0].qkv_w.slice(s![0..8, ..]).to_owned();
        let (ctx, _) = attention(qkv.view(), 1, 8, 4, 4, dot);
        let mut qkv2 = qkv.clone();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for c in 0..qkv2.ncols() {
            qkv2[(7, c)] += rng.random_range(-1.0..1.0); // perturb the last token only
        }
        let (ctx2, _) = attention(qkv2.view(), 1, 8, 4, 4, dot);
        assert_eq!(ctx.slice(s![0..7, ..]), ctx2.slice(s![0..7, ..]));
        assert_ne!(ctx.row(7), ctx2.row(7));
    }
}
