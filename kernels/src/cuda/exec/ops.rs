//! The walk of the block program on one rank: one arm per compute op of the op vocabulary
//! (the compiler lists every op the GPU must learn or refuse).

use super::*;

impl<T: GpuElem> Rank<T> {
    /// One compute event of the trace on this rank.
    pub(super) fn compute(
        &self,
        op: Op,
        layer: usize,
        cur: &mut Buf,
        dm: &Dims,
        ag: &AttentionGemms,
    ) -> Result<(), GpuError> {
        let lb = self.layers[layer];
        let (t, h, hr, fr) = (dm.t, dm.h, dm.hr, dm.fr);
        let w = |k: ParamKind| lb.w[pidx(k)];
        let g = |k: ParamKind| lb.g[pidx(k)];
        let x = self.xs[layer];
        let s = self.s;
        // The gradient flowing into this layer's output (the upstream `dout` for the last layer).
        let gy = *cur;
        use ParamKind as P;
        match op {
            Op::Ln1 => self.ln_fwd(
                x,
                w(P::Ln1Weight),
                w(P::Ln1Bias),
                lb.xn1,
                lb.mean1,
                lb.rstd1,
                dm,
            ),
            Op::Qkv => {
                self.gemm(
                    &RowGemm::plain(t, 3 * hr, h, false, false),
                    (lb.xn1, 0),
                    (w(P::QkvWeight), 0),
                    (lb.qkv, 0),
                )?;
                self.bias_add(lb.qkv, w(P::QkvBias), t, 3 * hr)
            }
            Op::AttnCore => {
                for b in 0..dm.batch {
                    self.gemm(
                        &ag.scores,
                        (lb.qkv, ag.qkv_offset(b, 0)),
                        (lb.qkv, ag.qkv_offset(b, 1)),
                        (lb.probs, ag.scores_offset(b)),
                    )?;
                }
                self.softmax(
                    "causal_softmax_fwd",
                    &[KArg::Ptr(self.addr(lb.probs)), KArg::I32(dm.seq as i32)],
                    dm,
                )?;
                for b in 0..dm.batch {
                    self.gemm(
                        &ag.context,
                        (lb.probs, ag.scores_offset(b)),
                        (lb.qkv, ag.qkv_offset(b, 2)),
                        (lb.ctx, ag.ctx_offset(b)),
                    )?;
                }
                Ok(())
            }
            Op::AttnOut => self.gemm(
                &RowGemm::plain(t, h, hr, false, false),
                (lb.ctx, 0),
                (w(P::OutWeight), 0),
                (lb.attn_out, 0),
            ),
            Op::AttnBiasResidual => self.bias_residual(x, lb.attn_out, w(P::OutBias), lb.x1, dm),
            Op::Ln2 => self.ln_fwd(
                lb.x1,
                w(P::Ln2Weight),
                w(P::Ln2Bias),
                lb.xn2,
                lb.mean2,
                lb.rstd2,
                dm,
            ),
            Op::Fc1 => {
                self.gemm(
                    &RowGemm::plain(t, fr, h, false, false),
                    (lb.xn2, 0),
                    (w(P::Fc1Weight), 0),
                    (lb.fc1, 0),
                )?;
                self.bias_add(lb.fc1, w(P::Fc1Bias), t, fr)
            }
            Op::Gelu => {
                let n = t * fr;
                self.launch(
                    "gelu_fwd",
                    launch::elementwise(n),
                    &[
                        KArg::Ptr(self.addr(lb.fc1)),
                        KArg::Ptr(self.addr(lb.act)),
                        KArg::I64(n as i64),
                    ],
                )
            }
            Op::Fc2 => self.gemm(
                &RowGemm::plain(t, h, fr, false, false),
                (lb.act, 0),
                (w(P::Fc2Weight), 0),
                (lb.mlp_out, 0),
            ),
            Op::MlpBiasResidual => {
                self.bias_residual(lb.x1, lb.mlp_out, w(P::Fc2Bias), self.xs[layer + 1], dm)
            }
            Op::MlpBiasResidualBwd => self.col_sum(gy, g(P::Fc2Bias), t, h),
            Op::Fc2Bwd => {
                self.gemm(
                    &RowGemm::plain(t, fr, h, false, true),
                    (gy, 0),
                    (w(P::Fc2Weight), 0),
                    (s.d_act, 0),
                )?;
                self.gemm(
                    &RowGemm::plain(fr, h, t, true, false),
                    (lb.act, 0),
                    (gy, 0),
                    (g(P::Fc2Weight), 0),
                )
            }
            Op::GeluBwd => {
                let n = t * fr;
                self.launch(
                    "gelu_bwd",
                    launch::elementwise(n),
                    &[
                        KArg::Ptr(self.addr(s.d_act)),
                        KArg::Ptr(self.addr(lb.fc1)),
                        KArg::Ptr(self.addr(s.d_fc1)),
                        KArg::I64(n as i64),
                    ],
                )
            }
            Op::Fc1Bwd => {
                self.gemm(
                    &RowGemm::plain(h, fr, t, true, false),
                    (lb.xn2, 0),
                    (s.d_fc1, 0),
                    (g(P::Fc1Weight), 0),
                )?;
                self.col_sum(s.d_fc1, g(P::Fc1Bias), t, fr)?;
                self.gemm(
                    &RowGemm::plain(t, h, fr, false, true),
                    (s.d_fc1, 0),
                    (w(P::Fc1Weight), 0),
                    (s.dxn, 0),
                )
            }
            Op::Ln2Bwd => self.ln_bwd(
                s.dxn,
                lb.x1,
                w(P::Ln2Weight),
                lb.mean2,
                lb.rstd2,
                gy,
                s.dx1,
                g(P::Ln2Weight),
                g(P::Ln2Bias),
                dm,
            ),
            Op::AttnBiasResidualBwd => self.col_sum(s.dx1, g(P::OutBias), t, h),
            Op::AttnOutBwd => {
                self.gemm(
                    &RowGemm::plain(t, hr, h, false, true),
                    (s.dx1, 0),
                    (w(P::OutWeight), 0),
                    (s.dctx, 0),
                )?;
                self.gemm(
                    &RowGemm::plain(hr, h, t, true, false),
                    (lb.ctx, 0),
                    (s.dx1, 0),
                    (g(P::OutWeight), 0),
                )
            }
            Op::AttnCoreBwd => {
                for b in 0..dm.batch {
                    let so = ag.scores_offset(b);
                    self.gemm(
                        &ag.d_probs,
                        (s.dctx, ag.ctx_offset(b)),
                        (lb.qkv, ag.qkv_offset(b, 2)),
                        (s.dprobs, so),
                    )?;
                    self.gemm(
                        &ag.d_v,
                        (lb.probs, so),
                        (s.dctx, ag.ctx_offset(b)),
                        (s.dqkv, ag.qkv_offset(b, 2)),
                    )?;
                }
                self.softmax(
                    "causal_softmax_bwd",
                    &[
                        KArg::Ptr(self.addr(lb.probs)),
                        KArg::Ptr(self.addr(s.dprobs)),
                        KArg::I32(dm.seq as i32),
                    ],
                    dm,
                )?;
                for b in 0..dm.batch {
                    let so = ag.scores_offset(b);
                    self.gemm(
                        &ag.d_q,
                        (s.dprobs, so),
                        (lb.qkv, ag.qkv_offset(b, 1)),
                        (s.dqkv, ag.qkv_offset(b, 0)),
                    )?;
                    self.gemm(
                        &ag.d_k,
                        (s.dprobs, so),
                        (lb.qkv, ag.qkv_offset(b, 0)),
                        (s.dqkv, ag.qkv_offset(b, 1)),
                    )?;
                }
                Ok(())
            }
            Op::QkvBwd => {
                self.gemm(
                    &RowGemm::plain(h, 3 * hr, t, true, false),
                    (lb.xn1, 0),
                    (s.dqkv, 0),
                    (g(P::QkvWeight), 0),
                )?;
                self.col_sum(s.dqkv, g(P::QkvBias), t, 3 * hr)?;
                self.gemm(
                    &RowGemm::plain(t, h, 3 * hr, false, true),
                    (s.dqkv, 0),
                    (w(P::QkvWeight), 0),
                    (s.dxn, 0),
                )
            }
            Op::Ln1Bwd => {
                let next = if gy == s.grad[0] {
                    s.grad[1]
                } else {
                    s.grad[0]
                };
                self.ln_bwd(
                    s.dxn,
                    x,
                    w(P::Ln1Weight),
                    lb.mean1,
                    lb.rstd1,
                    s.dx1,
                    next,
                    g(P::Ln1Weight),
                    g(P::Ln1Bias),
                    dm,
                )?;
                *cur = next;
                Ok(())
            }
            // Collectives are not compute events; the vocabulary pass does not run on the GPU.
            Op::AttnF
            | Op::AttnG
            | Op::MlpF
            | Op::MlpG
            | Op::MlpGBwd
            | Op::MlpFBwdGather
            | Op::MlpFBwd
            | Op::AttnGBwd
            | Op::AttnFBwdGather
            | Op::KvGrads
            | Op::AttnFBwd
            | Op::SpGrads
            | Op::EmbedLookup
            | Op::EmbedG
            | Op::LmHead
            | Op::CeLocal
            | Op::CeMax
            | Op::CeSumExp
            | Op::CeTarget
            | Op::CeBwd
            | Op::LmHeadBwd
            | Op::LmHeadFBwd
            | Op::EmbedBwd
            | Op::PosEmbed
            | Op::FinalLn
            | Op::LogitsGather => Err(GpuError::Unsupported(format!(
                "the GPU executor has no kernel for `{op}` ({})",
                op.label()
            ))),
        }
    }
}
