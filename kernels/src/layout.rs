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

/// One batched product of the attention and where its operands start (element offsets into
/// the buffers the op names: see each variant of [`AttnProduct`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Product {
    pub gemm: RowGemm,
    pub a: usize,
    pub b: usize,
    pub c: usize,
}

/// The batched products of causal attention on one rank, for one sequence `b` of the micro-batch.
///
/// Buffers: `qkv [t, qc]` with the rank's `[Q | K | V]` (query head `j` at columns `j·d..`, KV head
/// `g` at `hp·d + g·d` and `(hp + kvp)·d + g·d`, `qc = (hp + 2·kvp)·d`), `ctx [t, hr]`,
/// scores/probabilities `[batch, hp, s, s]`.
///
/// Grouped-query attention: query head `j = g·m + i` (`m = hp/kvp` query heads per KV head)
/// reads KV head `g`, as the engine's `j / (hp/kvp)`. Each product is one cuBLAS call per group
/// member `i`, batched over the `kvp` KV heads (strides step from one group to the next), so
/// without GQA (`m = 1`) it is one call batched over every head, as before. The gradients of a
/// shared K or V are sums over the group's query heads: member 0 writes (`beta = 0`), the others
/// add (`beta = 1`), in head order like the engine's CPU attention.
#[derive(Debug, Clone, PartialEq)]
pub struct AttentionGemms {
    pub seq: usize,
    /// Query heads on the rank (`hp`).
    pub heads: usize,
    /// KV heads on the rank (`kvp`; replicated copies count once).
    pub kv_heads: usize,
    pub head_dim: usize,
}

impl AttentionGemms {
    /// Products for `heads` local query heads sharing `kv_heads` local KV heads, of size
    /// `head_dim`, over sequences of `seq` tokens.
    pub fn new(seq: usize, heads: usize, kv_heads: usize, head_dim: usize) -> Self {
        Self {
            seq,
            heads,
            kv_heads: kv_heads.clamp(1, heads.max(1)),
            head_dim,
        }
    }

    /// Query heads per KV head.
    pub fn group(&self) -> usize {
        (self.heads / self.kv_heads).max(1)
    }

    fn hr(&self) -> usize {
        self.heads * self.head_dim
    }

    /// Row stride of `qkv`: `(hp + 2·kvp)·d`.
    pub fn qkv_cols(&self) -> usize {
        (self.heads + 2 * self.kv_heads) * self.head_dim
    }

    fn scale(&self) -> f32 {
        1.0 / (self.head_dim as f32).sqrt()
    }

    /// Offset of sequence `b`'s Q (part 0), K (1) or V (2) in `qkv`.
    pub fn qkv_offset(&self, b: usize, part: usize) -> usize {
        let d = self.head_dim;
        let col = match part {
            0 => 0,
            1 => self.heads * d,
            _ => (self.heads + self.kv_heads) * d,
        };
        b * self.seq * self.qkv_cols() + col
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

    /// Where operand `o` of group member `i` of sequence `b` sits: `(leading dimension, stride
    /// from one KV group to the next, element offset)`. Query heads, their context columns and
    /// their score matrices step by a whole group (`m` heads) and start at member `i`'s; a KV
    /// head is shared by the group, so K and V step by one head and start at the group's.
    fn site(&self, o: Att, b: usize, i: usize) -> (usize, usize, usize) {
        let (s, d, m) = (self.seq, self.head_dim, self.group());
        let (q_stride, kv_stride, s_stride) = (m * d, d, m * s * s);
        match o {
            Att::Q => (self.qkv_cols(), q_stride, self.qkv_offset(b, 0) + i * d),
            Att::K => (self.qkv_cols(), kv_stride, self.qkv_offset(b, 1)),
            Att::V => (self.qkv_cols(), kv_stride, self.qkv_offset(b, 2)),
            Att::Ctx => (self.hr(), q_stride, self.ctx_offset(b) + i * d),
            Att::Scores => (s, s_stride, self.scores_offset(b) + i * s * s),
        }
    }

    /// The products of `which` for sequence `b`: one per group member `i`, batched over the KV
    /// heads, in member order. A product that writes a shared K or V (`dK`, `dV`) sums over the
    /// group: member 0 writes (`beta = 0`), the others add (`beta = 1`).
    pub fn products(&self, which: AttnProduct, b: usize) -> Vec<Product> {
        use Att::*;
        let (s, d, scale) = (self.seq, self.head_dim, self.scale());
        // (m, n, k), (op(A) = Aᵀ, op(B) = Bᵀ), [A, B, C], alpha.
        let (mnk, (trans_a, trans_b), [a, bo, c], alpha) = match which {
            AttnProduct::Scores => ((s, s, d), (false, true), [Q, K, Scores], scale),
            AttnProduct::Context => ((s, d, s), (false, false), [Scores, V, Ctx], 1.0),
            AttnProduct::DProbs => ((s, s, d), (false, true), [Ctx, V, Scores], 1.0),
            AttnProduct::DV => ((s, d, s), (true, false), [Scores, Ctx, V], 1.0),
            AttnProduct::DQ => ((s, d, s), (false, false), [Scores, K, Q], scale),
            AttnProduct::DK => ((s, d, s), (true, false), [Scores, Q, K], scale),
        };
        let (m, n, k) = mnk;
        let shared_out = matches!(c, K | V);
        (0..self.group())
            .map(|i| {
                let (lda, stride_a, oa) = self.site(a, b, i);
                let (ldb, stride_b, ob) = self.site(bo, b, i);
                let (ldc, stride_c, oc) = self.site(c, b, i);
                Product {
                    gemm: RowGemm {
                        m,
                        n,
                        k,
                        trans_a,
                        trans_b,
                        lda,
                        ldb,
                        ldc,
                        batch: self.kv_heads,
                        stride_a,
                        stride_b,
                        stride_c,
                        alpha,
                        beta: if shared_out && i > 0 { 1.0 } else { 0.0 },
                    },
                    a: oa,
                    b: ob,
                    c: oc,
                }
            })
            .collect()
    }
}

/// The batched products of causal attention ([`AttentionGemms::products`]), forward then
/// backward in the executor's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttnProduct {
    /// `S = Q·Kᵀ/√d`: A and B in `qkv`, C in the scores.
    Scores,
    /// `ctx = P·V`: A in the probabilities, B in `qkv`, C in `ctx`.
    Context,
    /// `dP = dctx·Vᵀ`: A in `dctx`, B in `qkv`, C in the score gradients.
    DProbs,
    /// `dV = Σ Pᵀ·dctx` over the group: A in the probabilities, B in `dctx`, C in `dqkv`.
    DV,
    /// `dQ = dS·K/√d`: A in the score gradients, B and C in `qkv` / `dqkv`.
    DQ,
    /// `dK = Σ dSᵀ·Q/√d` over the group: A in the score gradients, B in `qkv`, C in `dqkv`.
    DK,
}

/// An operand of the attention's products, as `AttentionGemms::site` places it: a query head's
/// Q columns, a KV head's K or V columns (in `qkv` or `dqkv`), a head's context columns (`ctx` or
/// `dctx`), a head's score matrix (scores, probabilities or their gradients).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Att {
    Q,
    K,
    V,
    Ctx,
    Scores,
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
                    // cuBLAS does not read C when beta is 0 (it may hold anything).
                    c[ci] = if g.beta == 0.0 {
                        f64::from(g.alpha) * acc
                    } else {
                        f64::from(g.alpha) * acc + f64::from(g.beta) * c[ci]
                    };
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

    /// Runs a list of products the way the executor issues them (in order, bounds checked).
    fn run_products(ps: &[Product], a: &[f64], b: &[f64], c: &mut [f64]) {
        for p in ps {
            p.gemm.validate().unwrap();
            let [ea, eb, ec] = p.gemm.extent();
            assert!(p.a + ea <= a.len() && p.b + eb <= b.len() && p.c + ec <= c.len());
            row_gemm_via_cublas(&p.gemm, &a[p.a..], &b[p.b..], &mut c[p.c..]);
        }
    }

    /// `causal_softmax_fwd` as the kernel computes it, on `[rows, s]`.
    fn softmax_rows(sc: &mut [f64], s: usize) {
        for (row, r) in sc.chunks_mut(s).enumerate() {
            let i = row % s;
            let m = r[..=i].iter().cloned().fold(f64::MIN, f64::max);
            let z: f64 = r[..=i].iter().map(|x| (x - m).exp()).sum();
            for (j, x) in r.iter_mut().enumerate() {
                *x = if j <= i { (*x - m).exp() / z } else { 0.0 };
            }
        }
    }

    /// (batch, seq, query heads, KV heads, head size): multi-head, grouped (2 and 3 query heads
    /// per KV head) and multi-query attention. Head sizes are powers of 4, so that the f32 scale
    /// `1/√d` the products carry is exact and the f64 comparisons can be tight.
    const SHAPES: [(usize, usize, usize, usize, usize); 4] = [
        (2, 5, 3, 3, 4),
        (2, 6, 4, 2, 4),
        (1, 7, 6, 2, 16),
        (2, 4, 4, 1, 1),
    ];

    /// Causal attention through the batched products and a CPU softmax, against a direct loop
    /// (query head `j` reading KV head `j / (hp/kvp)`).
    #[test]
    fn attention_products_match_direct_attention() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for (batch, s, hp, kvp, d) in SHAPES {
            let hr = hp * d;
            let t = batch * s;
            let ag = AttentionGemms::new(s, hp, kvp, d);
            let qc = ag.qkv_cols();
            assert_eq!(qc, (hp + 2 * kvp) * d);
            let qkv = rand_vec(&mut rng, t * qc);
            let mut sc = vec![0.0; ag.scores_len(batch)];
            let mut ctx = vec![0.0; t * hr];
            for b in 0..batch {
                for p in ag
                    .products(AttnProduct::Scores, b)
                    .iter()
                    .chain(&ag.products(AttnProduct::Context, b))
                {
                    let [ea, eb, ec] = p.gemm.extent();
                    assert!(ea > 0 && eb > 0 && ec > 0);
                }
                run_products(&ag.products(AttnProduct::Scores, b), &qkv, &qkv, &mut sc);
            }
            softmax_rows(&mut sc, s);
            for b in 0..batch {
                run_products(&ag.products(AttnProduct::Context, b), &sc, &qkv, &mut ctx);
            }
            let scale = 1.0 / (d as f64).sqrt();
            let m = hp / kvp;
            for b in 0..batch {
                for j in 0..hp {
                    let (kc, vc) = (hp * d + (j / m) * d, (hp + kvp) * d + (j / m) * d);
                    for i in 0..s {
                        let row = |tok: usize| (b * s + tok) * qc;
                        let sc: Vec<f64> = (0..=i)
                            .map(|u| {
                                (0..d)
                                    .map(|e| qkv[row(i) + j * d + e] * qkv[row(u) + kc + e])
                                    .sum::<f64>()
                                    * scale
                            })
                            .collect();
                        let mx = sc.iter().cloned().fold(f64::MIN, f64::max);
                        let z: f64 = sc.iter().map(|x| (x - mx).exp()).sum();
                        for e in 0..d {
                            let want: f64 = (0..=i)
                                .map(|u| (sc[u] - mx).exp() / z * qkv[row(u) + vc + e])
                                .sum();
                            let got = ctx[(b * s + i) * hr + j * d + e];
                            // f64 throughout; only summation order differs.
                            assert!(
                                (got - want).abs() < 1e-12,
                                "hp={hp} kvp={kvp} b={b} head={j} i={i} e={e}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// The forward and backward products (with the softmax backward the kernel does) against
    /// the engine's CPU attention, with and without grouped-query attention.
    #[test]
    fn attention_backward_products_match_engine() {
        use ndarray::Array2;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for (batch, s, hp, kvp, d) in SHAPES {
            let hr = hp * d;
            let t = batch * s;
            let ag = AttentionGemms::new(s, hp, kvp, d);
            let qc = ag.qkv_cols();
            let qkv = Array2::from_shape_vec((t, qc), rand_vec(&mut rng, t * qc)).unwrap();
            let dctx = Array2::from_shape_vec((t, hr), rand_vec(&mut rng, t * hr)).unwrap();
            let mm = |a: ndarray::ArrayView2<'_, f64>, b: ndarray::ArrayView2<'_, f64>| a.dot(&b);
            let (want_ctx, cache) =
                tplab_engine::block::ops::attention(qkv.view(), batch, s, hp, kvp, mm);
            let want = tplab_engine::block::ops::attention_backward(
                qkv.view(),
                &cache,
                dctx.view(),
                batch,
                s,
                hp,
                kvp,
                mm,
            );
            let q = qkv.as_slice().unwrap();
            let dc = dctx.as_slice().unwrap();
            // Forward through the products: the same probabilities and context as the engine.
            let mut probs = vec![0.0; ag.scores_len(batch)];
            let mut ctx = vec![0.0; t * hr];
            for b in 0..batch {
                run_products(&ag.products(AttnProduct::Scores, b), q, q, &mut probs);
            }
            softmax_rows(&mut probs, s);
            for b in 0..batch {
                run_products(&ag.products(AttnProduct::Context, b), &probs, q, &mut ctx);
            }
            for (m, p) in cache.probs.iter().enumerate() {
                for (got, want) in probs[m * s * s..(m + 1) * s * s].iter().zip(p.iter()) {
                    assert!((got - want).abs() < 1e-12, "probabilities");
                }
            }
            for (got, want) in ctx.iter().zip(want_ctx.iter()) {
                assert!((got - want).abs() < 1e-12, "context {got} vs {want}");
            }
            let mut dp = vec![0.0; ag.scores_len(batch)];
            // Every element of dqkv is written by a beta = 0 product first: start from garbage.
            let mut dqkv = vec![f64::NAN; t * qc];
            for b in 0..batch {
                run_products(&ag.products(AttnProduct::DProbs, b), dc, q, &mut dp);
                run_products(&ag.products(AttnProduct::DV, b), &probs, dc, &mut dqkv);
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
                run_products(&ag.products(AttnProduct::DQ, b), &dp, q, &mut dqkv);
                run_products(&ag.products(AttnProduct::DK, b), &dp, q, &mut dqkv);
            }
            for (got, want) in dqkv.iter().zip(want.iter()) {
                // f64 throughout; only summation order differs.
                assert!(
                    (got - want).abs() < 1e-12,
                    "hp={hp} kvp={kvp}: {got} vs {want}"
                );
            }
        }
    }

    /// The launch parameters of two products, written out: with groups of two query heads per KV
    /// head the query side steps by a group and starts at the member's head, the KV side steps
    /// by one head, and a product into a shared K (or V) adds from the second member on.
    #[test]
    fn gqa_products_pin_leading_dimensions_strides_offsets_and_beta() {
        // seq 3, 4 query heads on 2 KV heads, d = 2, sequence 1: qkv rows of (4 + 2·2)·2 = 16
        // columns with its Q at 48, K at 56 and V at 60; ctx rows of 8 from 24; scores from 36.
        let ag = AttentionGemms::new(3, 4, 2, 2);
        let gemm =
            |(m, n, k), (trans_a, trans_b), (lda, ldb, ldc), (sa, sb, sc), alpha, beta| RowGemm {
                m,
                n,
                k,
                trans_a,
                trans_b,
                lda,
                ldb,
                ldc,
                batch: 2,
                stride_a: sa,
                stride_b: sb,
                stride_c: sc,
                alpha,
                beta,
            };
        let scale = 1.0 / 2f32.sqrt();
        let d_k: Vec<Product> = (0..2)
            .map(|i| Product {
                gemm: gemm(
                    (3, 2, 3),
                    (true, false),
                    (3, 16, 16),
                    (18, 4, 2),
                    scale,
                    if i == 0 { 0.0 } else { 1.0 },
                ),
                a: 36 + 9 * i,
                b: 48 + 2 * i,
                c: 56,
            })
            .collect();
        assert_eq!(ag.products(AttnProduct::DK, 1), d_k);
        let context: Vec<Product> = (0..2)
            .map(|i| Product {
                gemm: gemm((3, 2, 3), (false, false), (3, 16, 8), (18, 2, 4), 1.0, 0.0),
                a: 36 + 9 * i,
                b: 60,
                c: 24 + 2 * i,
            })
            .collect();
        assert_eq!(ag.products(AttnProduct::Context, 1), context);
    }

    #[test]
    fn validate_rejects_short_leading_dimension() {
        let mut g = RowGemm::plain(4, 4, 4, false, false);
        g.lda = 3;
        assert!(g.validate().is_err());
    }
}
