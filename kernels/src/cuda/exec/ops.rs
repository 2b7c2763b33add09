//! The walk of the block program on one rank: one arm per compute op of the op vocabulary (the
//! compiler lists every op the GPU must learn or refuse). Every operand comes from
//! [`RankLayout::io_buffers`], in the engine's order of the op's reads and writes, so the
//! buffers are the ones whose shapes are tested against the engine's placements.

use super::*;

impl<T: GpuElem> Rank<T> {
    /// One compute event of the trace on this rank.
    pub(super) fn compute(
        &self,
        op: Op,
        layer: usize,
        lay: &RankLayout,
        ag: &AttentionGemms,
    ) -> Result<(), GpuError> {
        let Some((r, w)) = lay.io_buffers(op, layer) else {
            return Err(GpuError::Unsupported(format!(
                "the GPU executor has no kernel for `{op}` ({})",
                op.label()
            )));
        };
        let r: Vec<Buf> = r.into_iter().map(|b| self.buf(b)).collect();
        let w: Vec<Buf> = w.into_iter().map(|b| self.buf(b)).collect();
        let (t, tl, h, qc, hr, fr) = (lay.t, lay.tl, lay.h, lay.qc, lay.hr, lay.fr);
        let st = self.ln_stats.get(layer).copied().unwrap_or_default();
        let probs = self.buf(BufId::Probs(layer));
        let dprobs = self.buf(BufId::DProbs);
        // Row-parallel backward, reads [dY (all tokens), X, W], writes [dX, grad W]: the input
        // gradient, then the weight's (the bias gradient is the token-row op's).
        let row_parallel_bwd = |inp: usize| -> Result<(), GpuError> {
            self.linear_dx(r[0], r[2], w[0], t, inp, h)?;
            self.linear_dw(r[1], r[0], w[1], t, inp, h)
        };
        // Column-parallel backward, reads [dY, X (all tokens), W], writes [dX (partial),
        // grad W, grad b]: the weight gradient, the bias gradient, then the input gradient.
        let col_parallel_bwd = |out: usize| -> Result<(), GpuError> {
            self.linear_dw(r[1], r[0], w[1], t, h, out)?;
            self.col_sum(r[0], w[2], t, out)?;
            self.linear_dx(r[0], r[2], w[0], t, h, out)
        };
        // LayerNorm backward with the forward's statistics, reads [dH (summed), X, ln.w, dY
        // (the residual's gradient)], writes [dX, grad ln.w, grad ln.b] over the token rows.
        let ln_bwd =
            |stats: [Buf; 2]| self.ln_bwd(r[0], r[1], r[2], stats, r[3], w[0], w[1], w[2], tl, h);
        // The attention's batched products of sequence `b` on buffers [A, B, C].
        let attn = |which: AttnProduct, b: usize, [a, bb, c]: [Buf; 3]| -> Result<(), GpuError> {
            for p in ag.products(which, b) {
                self.gemm(&p.gemm, (a, p.a), (bb, p.b), (c, p.c))?;
            }
            Ok(())
        };
        match op {
            // reads [X, ln1.w, ln1.b], writes [H1]
            Op::Ln1 => self.ln_fwd(r[0], r[1], r[2], w[0], st[0], st[1], tl, h),
            // reads [H1 (all tokens), W_qkv, b_qkv], writes [QKV]
            Op::Qkv => self.linear(r[0], r[1], Some(r[2]), w[0], t, h, qc),
            // reads [QKV], writes [Ctx]
            Op::AttnCore => {
                for b in 0..lay.batch {
                    attn(AttnProduct::Scores, b, [r[0], r[0], probs])?;
                }
                self.softmax(
                    "causal_softmax_fwd",
                    &[KArg::Ptr(self.addr(probs)), KArg::I32(lay.seq as i32)],
                    lay,
                )?;
                for b in 0..lay.batch {
                    attn(AttnProduct::Context, b, [probs, r[0], w[0]])?;
                }
                Ok(())
            }
            // reads [Ctx, W_out], writes [Z (partial)]
            Op::AttnOut => self.linear(r[0], r[1], None, w[0], t, hr, h),
            // reads [X, Z (summed), b_out], writes [X1]
            Op::AttnBiasResidual => self.bias_residual(r[0], r[1], r[2], w[0], tl, h),
            // reads [X1, ln2.w, ln2.b], writes [H2]
            Op::Ln2 => self.ln_fwd(r[0], r[1], r[2], w[0], st[2], st[3], tl, h),
            // reads [H2 (all tokens), W1, b1], writes [A]
            Op::Fc1 => self.linear(r[0], r[1], Some(r[2]), w[0], t, h, fr),
            // reads [A], writes [U]
            Op::Gelu => self.gelu(r[0], w[0], t * fr),
            // reads [U, W2], writes [M (partial)]
            Op::Fc2 => self.linear(r[0], r[1], None, w[0], t, fr, h),
            // reads [X1, M (summed), b2], writes [Y]
            Op::MlpBiasResidual => self.bias_residual(r[0], r[1], r[2], w[0], tl, h),
            // reads [dY], writes [grad b2] (over the rank's token rows)
            Op::MlpBiasResidualBwd => self.col_sum(r[0], w[0], tl, h),
            // reads [dY (all tokens), U, W2], writes [dU, grad W2]
            Op::Fc2Bwd => row_parallel_bwd(fr),
            // reads [A, dU], writes [dA]
            Op::GeluBwd => {
                let n = t * fr;
                self.launch(
                    "gelu_bwd",
                    launch::elementwise(n),
                    &[
                        KArg::Ptr(self.addr(r[1])),
                        KArg::Ptr(self.addr(r[0])),
                        KArg::Ptr(self.addr(w[0])),
                        KArg::I64(n as i64),
                    ],
                )
            }
            // reads [dA, H2 (all tokens), W1], writes [dH2 (partial), grad W1, grad b1]
            Op::Fc1Bwd => col_parallel_bwd(fr),
            // reads [dH2 (summed), X1, ln2.w, dY], writes [dX1, grad ln2.w, grad ln2.b]
            Op::Ln2Bwd => ln_bwd([st[2], st[3]]),
            // reads [dX1], writes [grad b_out]
            Op::AttnBiasResidualBwd => self.col_sum(r[0], w[0], tl, h),
            // reads [dX1 (all tokens), Ctx, W_out], writes [dCtx, grad W_out]
            Op::AttnOutBwd => row_parallel_bwd(hr),
            // reads [dCtx, QKV], writes [dQKV]
            Op::AttnCoreBwd => {
                let (dctx, qkv, dqkv) = (r[0], r[1], w[0]);
                for b in 0..lay.batch {
                    attn(AttnProduct::DProbs, b, [dctx, qkv, dprobs])?;
                    attn(AttnProduct::DV, b, [probs, dctx, dqkv])?;
                }
                self.softmax(
                    "causal_softmax_bwd",
                    &[
                        KArg::Ptr(self.addr(probs)),
                        KArg::Ptr(self.addr(dprobs)),
                        KArg::I32(lay.seq as i32),
                    ],
                    lay,
                )?;
                for b in 0..lay.batch {
                    attn(AttnProduct::DQ, b, [dprobs, qkv, dqkv])?;
                    attn(AttnProduct::DK, b, [dprobs, qkv, dqkv])?;
                }
                Ok(())
            }
            // reads [dQKV, H1 (all tokens), W_qkv], writes [dH1 (partial), grad W_qkv,
            // grad b_qkv] (and, with replicated KV heads, the packed K/V gradients, which the
            // collective `attn.kv.grads` packs itself)
            Op::QkvBwd => col_parallel_bwd(qc),
            // reads [dH1 (summed), X, ln1.w, dX1], writes [dX, grad ln1.w, grad ln1.b]
            Op::Ln1Bwd => ln_bwd([st[0], st[1]]),
            // Collectives are not compute events; the vocabulary ends are not in the block.
            crate::buffers::block_collectives!()
            | crate::buffers::model_ends!()
            | crate::buffers::design_ops!()
            | crate::buffers::decode_ops!() => Err(GpuError::Unsupported(format!(
                "`{op}` ({}) is not a compute op of the block",
                op.label()
            ))),
        }
    }

    /// Packs (or unpacks) the gradients a collective sums that are not contiguous.
    pub(super) fn pack_grads(
        &self,
        pack: Pack,
        lay: &RankLayout,
        unpack: bool,
    ) -> Result<(), GpuError> {
        match pack {
            Pack::KvCols(l) => {
                let kp = self.buf(BufId::KvPack);
                let (h, kc, qc, q0) = (lay.h, lay.kv_cols(), lay.qc, lay.hr);
                let gw = self.buf(BufId::G(l, ParamKind::QkvWeight));
                let gb = self.buf(BufId::G(l, ParamKind::QkvBias));
                self.pack(unpack, gw, kp, 0, h, kc, qc, q0)?;
                self.pack(unpack, gb, kp, h * kc, 1, kc, qc, q0)
            }
            Pack::SpVectors(l) => {
                let sp = self.buf(BufId::SpPack);
                for (i, k) in SP_VECTORS.into_iter().enumerate() {
                    let g = self.buf(BufId::G(l, k));
                    self.pack(unpack, g, sp, i * lay.h, 1, lay.h, lay.h, 0)?;
                }
                Ok(())
            }
        }
    }
}
