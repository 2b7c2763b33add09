//! Matrix products as cuBLAS sees them, and the attention's batched products.
//!
//! Every tensor in tplab is row-major (`[rows, cols]`, `W` stored `[in, out]`). cuBLAS is
//! column-major, and a row-major `[r, c]` matrix with row stride `ld` *is* a column-major
//! `[c, r]` matrix with leading dimension `ld`. So a row-major `C = op(A)·op(B)` is computed as
//! the column-major `Cᵀ = op(B)ᵀ·op(A)ᵀ`: swap the operands and the sizes `m`/`n`, keep each
//! operand's transpose flag. [`RowGemm::to_col_major`] does that and is tested here against a
//! column-major reference product, without a GPU.

/// `C[m, n] = alpha · op(A)[m, k] · op(B)[k, n] + beta · C`, all row-major, optionally batched
/// with element strides between consecutive matrices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowGemm {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// `op(A) = Aᵀ` (A stored `[k, m]`).
    pub trans_a: bool,
    /// `op(B) = Bᵀ` (B stored `[n, k]`).
    pub trans_b: bool,
    pub lda: usize,
    pub ldb: usize,
    pub ldc: usize,
    pub batch: usize,
    pub stride_a: usize,
    pub stride_b: usize,
    pub stride_c: usize,
    pub alpha: f32,
    pub beta: f32,
}

/// The same product in cuBLAS's column-major terms; `a` is the row-major `B`, `b` the row-major `A`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColGemm {
    pub trans_a: bool,
    pub trans_b: bool,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub lda: usize,
    pub ldb: usize,
    pub ldc: usize,
    pub batch: usize,
    pub stride_a: usize,
    pub stride_b: usize,
    pub stride_c: usize,
    pub alpha: f32,
    pub beta: f32,
}

impl RowGemm {
    /// A plain (unbatched, tight) row-major product `C = op(A)·op(B)`.
    pub fn plain(m: usize, n: usize, k: usize, trans_a: bool, trans_b: bool) -> Self {
        Self {
            m,
            n,
            k,
            trans_a,
            trans_b,
            lda: if trans_a { m } else { k },
            ldb: if trans_b { k } else { n },
            ldc: n,
            batch: 1,
            stride_a: 0,
            stride_b: 0,
            stride_c: 0,
            alpha: 1.0,
            beta: 0.0,
        }
    }

    /// Column-major form for cuBLAS: `Cᵀ[n, m] = op(B)ᵀ · op(A)ᵀ`.
    pub fn to_col_major(&self) -> ColGemm {
        ColGemm {
            trans_a: self.trans_b,
            trans_b: self.trans_a,
            m: self.n,
            n: self.m,
            k: self.k,
            lda: self.ldb,
            ldb: self.lda,
            ldc: self.ldc,
            batch: self.batch,
            stride_a: self.stride_b,
            stride_b: self.stride_a,
            stride_c: self.stride_c,
            alpha: self.alpha,
            beta: self.beta,
        }
    }

    /// Stored shape `[rows, cols]` of A and B (row-major, before `op`).
    pub fn stored_a(&self) -> [usize; 2] {
        if self.trans_a {
            [self.k, self.m]
        } else {
            [self.m, self.k]
        }
    }

    pub fn stored_b(&self) -> [usize; 2] {
        if self.trans_b {
            [self.n, self.k]
        } else {
            [self.k, self.n]
        }
    }

    /// Elements of A, B and C the product touches from the given offsets (for bounds checks).
    pub fn extent(&self) -> [usize; 3] {
        let ext = |[r, c]: [usize; 2], ld: usize, stride: usize| {
            if r == 0 || c == 0 {
                0
            } else {
                (self.batch - 1) * stride + (r - 1) * ld + c
            }
        };
        [
            ext(self.stored_a(), self.lda, self.stride_a),
            ext(self.stored_b(), self.ldb, self.stride_b),
            ext([self.m, self.n], self.ldc, self.stride_c),
        ]
    }

    /// Leading dimensions must cover each stored row; sizes must fit cuBLAS's 32-bit ints.
    pub fn validate(&self) -> Result<(), String> {
        let [_, ca] = self.stored_a();
        let [_, cb] = self.stored_b();
        if self.lda < ca || self.ldb < cb || self.ldc < self.n {
            return Err(format!("leading dimension smaller than a row: {self:?}"));
        }
        if self.batch == 0 {
            return Err("batch of 0 matrices".into());
        }
        let max = i32::MAX as usize;
        if [self.m, self.n, self.k, self.lda, self.ldb, self.ldc]
            .iter()
            .any(|&v| v > max)
        {
            return Err(format!("size beyond cuBLAS's 32-bit range: {self:?}"));
        }
        Ok(())
    }
}

/// The batched products of causal attention on one rank, for one sequence `b` of the micro-batch
/// (cuBLAS batches over the rank's `hp` heads). Offsets are in elements.
///
/// Buffers: `qkv [t, 3·hr]` (`[Q | K | V]`, head `j` at columns `j·d..`), `ctx [t, hr]`,
/// scores/probabilities `[batch, hp, s, s]`.
#[derive(Debug, Clone, PartialEq)]
pub struct AttentionGemms {
    pub seq: usize,
    pub heads: usize,
    pub head_dim: usize,
    /// `S = Q·Kᵀ / √d`.
    pub scores: RowGemm,
    /// `ctx = P·V`.
    pub context: RowGemm,
    /// `dP = dctx·Vᵀ`.
    pub d_probs: RowGemm,
    /// `dV = Pᵀ·dctx`.
    pub d_v: RowGemm,
    /// `dQ = dS·K / √d`.
    pub d_q: RowGemm,
    /// `dK = dSᵀ·Q / √d`.
    pub d_k: RowGemm,
}

impl AttentionGemms {
    /// Products for `heads` local heads of size `head_dim` over sequences of `seq` tokens.
    pub fn new(seq: usize, heads: usize, head_dim: usize) -> Self {
        let (s, d, hr) = (seq, head_dim, heads * head_dim);
        let scale = 1.0 / (d as f32).sqrt();
        let g = |m, n, k, ta, tb, lda, ldb, ldc, sa, sb, sc, alpha| RowGemm {
            m,
            n,
            k,
            trans_a: ta,
            trans_b: tb,
            lda,
            ldb,
            ldc,
            batch: heads,
            stride_a: sa,
            stride_b: sb,
            stride_c: sc,
            alpha,
            beta: 0.0,
        };
        Self {
            seq,
            heads,
            head_dim,
            scores: g(s, s, d, false, true, 3 * hr, 3 * hr, s, d, d, s * s, scale),
            context: g(s, d, s, false, false, s, 3 * hr, hr, s * s, d, d, 1.0),
            d_probs: g(s, s, d, false, true, hr, 3 * hr, s, d, d, s * s, 1.0),
            d_v: g(s, d, s, true, false, s, hr, 3 * hr, s * s, d, d, 1.0),
            d_q: g(s, d, s, false, false, s, 3 * hr, 3 * hr, s * s, d, d, scale),
            d_k: g(s, d, s, true, false, s, 3 * hr, 3 * hr, s * s, d, d, scale),
        }
    }

    fn hr(&self) -> usize {
        self.heads * self.head_dim
    }

    /// Offset of sequence `b`'s Q (part 0), K (1) or V (2) in `qkv`.
    pub fn qkv_offset(&self, b: usize, part: usize) -> usize {
        b * self.seq * 3 * self.hr() + part * self.hr()
    }

    /// Offset of sequence `b` in `ctx` (`[t, hr]`).
    pub fn ctx_offset(&self, b: usize) -> usize {
        b * self.seq * self.hr()
    }

    /// Offset of sequence `b`'s score matrices.
    pub fn scores_offset(&self, b: usize) -> usize {
        b * self.heads * self.seq * self.seq
    }

    /// Elements of the score buffer for `batch` sequences.
    pub fn scores_len(&self, batch: usize) -> usize {
        batch * self.heads * self.seq * self.seq
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// cuBLAS's strided-batched gemm semantics on column-major data, in f64.
    pub(crate) fn col_gemm(g: &ColGemm, a: &[f64], b: &[f64], c: &mut [f64]) {
        for bi in 0..g.batch {
            for j in 0..g.n {
                for i in 0..g.m {
                    let mut acc = 0.0;
                    for p in 0..g.k {
                        let av = if g.trans_a {
                            a[bi * g.stride_a + i * g.lda + p]
                        } else {
                            a[bi * g.stride_a + p * g.lda + i]
                        };
                        let bv = if g.trans_b {
                            b[bi * g.stride_b + p * g.ldb + j]
                        } else {
                            b[bi * g.stride_b + j * g.ldb + p]
                        };
                        acc += av * bv;
                    }
                    let ci = bi * g.stride_c + j * g.ldc + i;
                    c[ci] = f64::from(g.alpha) * acc + f64::from(g.beta) * c[ci];
                }
            }
        }
    }

    /// Runs a row-major product through the column-major mapping (operands swapped).
    pub(crate) fn row_gemm_via_cublas(g: &RowGemm, a: &[f64], b: &[f64], c: &mut [f64]) {
        col_gemm(&g.to_col_major(), b, a, c);
    }

    fn rand_vec(rng: &mut rand_chacha::ChaCha8Rng, n: usize) -> Vec<f64> {
        (0..n).map(|_| rng.random_range(-1.0..1.0)).collect()
    }

    #[test]
    fn transpose_trick_gives_row_major_products() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let (m, n, k) = (5, 7, 4);
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let g = RowGemm::plain(m, n, k, ta, tb);
            g.validate().unwrap();
            let a = rand_vec(&mut rng, m * k);
            let b = rand_vec(&mut rng, k * n);
            let mut c = vec![0.0; m * n];
            row_gemm_via_cublas(&g, &a, &b, &mut c);
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k)
                        .map(|p| {
                            let av = if ta { a[p * m + i] } else { a[i * k + p] };
                            let bv = if tb { b[j * k + p] } else { b[p * n + j] };
                            av * bv
                        })
                        .sum();
                    // Same products in the same order in f64: only the final rounding differs.
                    assert!((c[i * n + j] - want).abs() < 1e-12, "ta={ta} tb={tb}");
                }
            }
        }
    }

    /// Causal attention through the batched products and a CPU softmax, against a direct loop.
    #[test]
    fn attention_products_match_direct_attention() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let (batch, s, hp, d) = (2, 5, 3, 4);
        let hr = hp * d;
        let t = batch * s;
        let ag = AttentionGemms::new(s, hp, d);
        let qkv = rand_vec(&mut rng, t * 3 * hr);
        let mut sc = vec![0.0; ag.scores_len(batch)];
        let mut ctx = vec![0.0; t * hr];
        for b in 0..batch {
            let (q, k, v) = (
                ag.qkv_offset(b, 0),
                ag.qkv_offset(b, 1),
                ag.qkv_offset(b, 2),
            );
            for g in [ag.scores, ag.context] {
                let [ea, eb, ec] = g.extent();
                assert!(ea > 0 && eb > 0 && ec > 0);
            }
            let so = ag.scores_offset(b);
            row_gemm_via_cublas(&ag.scores, &qkv[q..], &qkv[k..], &mut sc[so..]);
            for row in 0..hp * s {
                let i = row % s;
                let r = &mut sc[so + row * s..so + (row + 1) * s];
                let m = r[..=i].iter().cloned().fold(f64::MIN, f64::max);
                let z: f64 = r[..=i].iter().map(|x| (x - m).exp()).sum();
                for (j, x) in r.iter_mut().enumerate() {
                    *x = if j <= i { (*x - m).exp() / z } else { 0.0 };
                }
            }
            let co = ag.ctx_offset(b);
            row_gemm_via_cublas(&ag.context, &sc[so..], &qkv[v..], &mut ctx[co..]);
        }
        let scale = 1.0 / (d as f64).sqrt();
        for b in 0..batch {
            for j in 0..hp {
                for i in 0..s {
                    let row = |tok: usize| (b * s + tok) * 3 * hr;
                    let sc: Vec<f64> = (0..=i)
                        .map(|u| {
                            (0..d)
                                .map(|e| qkv[row(i) + j * d + e] * qkv[row(u) + hr + j * d + e])
                                .sum::<f64>()
                                * scale
                        })
                        .collect();
                    let m = sc.iter().cloned().fold(f64::MIN, f64::max);
                    let z: f64 = sc.iter().map(|x| (x - m).exp()).sum();
                    for e in 0..d {
                        let want: f64 = (0..=i)
                            .map(|u| (sc[u] - m).exp() / z * qkv[row(u) + 2 * hr + j * d + e])
                            .sum();
                        let got = ctx[(b * s + i) * hr + j * d + e];
                        // f64 throughout; only summation order differs.
                        assert!((got - want).abs() < 1e-12, "b={b} head={j} i={i} e={e}");
                    }
                }
            }
        }
    }

    /// The backward products (with the softmax backward the kernel does) against the engine's
    /// CPU attention backward.
    #[test]
    fn attention_backward_products_match_engine() {
        use ndarray::Array2;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let (batch, s, hp, d) = (2, 6, 2, 4);
        let hr = hp * d;
        let t = batch * s;
        let ag = AttentionGemms::new(s, hp, d);
        let qkv = Array2::from_shape_vec((t, 3 * hr), rand_vec(&mut rng, t * 3 * hr)).unwrap();
        let dctx = Array2::from_shape_vec((t, hr), rand_vec(&mut rng, t * hr)).unwrap();
        let mm = |a: ndarray::ArrayView2<'_, f64>, b: ndarray::ArrayView2<'_, f64>| a.dot(&b);
        let (_, cache) = tplab_engine::ops::attention(qkv.view(), batch, s, hp, hp, mm);
        let want = tplab_engine::ops::attention_backward(
            qkv.view(),
            &cache,
            dctx.view(),
            batch,
            s,
            hp,
            hp,
            mm,
        );
        // Probabilities in the GPU layout [batch, hp, s, s] (the engine keeps b-major, head-minor).
        let mut probs = vec![0.0; ag.scores_len(batch)];
        for (m, p) in cache.probs.iter().enumerate() {
            probs[m * s * s..(m + 1) * s * s].copy_from_slice(p.as_slice().unwrap());
        }
        let q = qkv.as_slice().unwrap();
        let dc = dctx.as_slice().unwrap();
        let mut dp = vec![0.0; ag.scores_len(batch)];
        let mut dqkv = vec![0.0; t * 3 * hr];
        for b in 0..batch {
            let so = ag.scores_offset(b);
            let co = ag.ctx_offset(b);
            row_gemm_via_cublas(
                &ag.d_probs,
                &dc[co..],
                &q[ag.qkv_offset(b, 2)..],
                &mut dp[so..],
            );
            row_gemm_via_cublas(
                &ag.d_v,
                &probs[so..],
                &dc[co..],
                &mut dqkv[ag.qkv_offset(b, 2)..],
            );
        }
        // causal_softmax_bwd, as the kernel computes it.
        for row in 0..batch * hp * s {
            let i = row % s;
            let (p, g) = (
                &probs[row * s..(row + 1) * s],
                &mut dp[row * s..(row + 1) * s],
            );
            let dot: f64 = (0..=i).map(|j| p[j] * g[j]).sum();
            for j in 0..s {
                g[j] = if j <= i { p[j] * (g[j] - dot) } else { 0.0 };
            }
        }
        for b in 0..batch {
            let so = ag.scores_offset(b);
            let (oq, ok) = (ag.qkv_offset(b, 0), ag.qkv_offset(b, 1));
            row_gemm_via_cublas(&ag.d_q, &dp[so..], &q[ok..], &mut dqkv[oq..]);
            row_gemm_via_cublas(&ag.d_k, &dp[so..], &q[oq..], &mut dqkv[ok..]);
        }
        for (got, want) in dqkv.iter().zip(want.iter()) {
            // f64 throughout; only summation order differs.
            assert!((got - want).abs() < 1e-12, "{got} vs {want}");
        }
    }

    #[test]
    fn validate_rejects_short_leading_dimension() {
        let mut g = RowGemm::plain(4, 4, 4, false, false);
        g.lda = 3;
        assert!(g.validate().is_err());
    }
}
