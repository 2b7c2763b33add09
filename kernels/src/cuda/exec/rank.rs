//! A rank's buffers and kernel launches: its arena, uploads and downloads, cuBLAS products,
//! LayerNorm, bias, softmax and the launch of any NVRTC kernel.

use super::*;

impl<T: GpuElem> Rank<T> {
    /// A rank with its context, stream, cuBLAS handle and kernels, and no buffers yet.
    pub(super) fn empty(
        ctx: Arc<CudaContext>,
        stream: Arc<CudaStream>,
        blas: CudaBlas,
        k: Arc<Kernels>,
    ) -> Self {
        Rank {
            ctx,
            stream,
            blas,
            k,
            bufs: Vec::new(),
            stats: Vec::new(),
            xs: Vec::new(),
            layers: Vec::new(),
            s: Scratch::default(),
            dout: 0,
        }
    }

    pub(super) fn alloc(&mut self, n: usize) -> Result<Buf, GpuError> {
        self.bufs.push(self.stream.alloc_zeros::<T>(n.max(1))?);
        Ok(self.bufs.len() - 1)
    }
    pub(super) fn alloc_stats(&mut self, n: usize) -> Result<Buf, GpuError> {
        self.stats.push(self.stream.alloc_zeros::<f32>(n.max(1))?);
        Ok(self.stats.len() - 1)
    }
    pub(super) fn upload(&mut self, a: &Array2<f64>) -> Result<Buf, GpuError> {
        let host: Vec<T> = a.iter().map(|&v| T::from_f64(v)).collect();
        self.bufs.push(self.stream.clone_htod(&host)?);
        Ok(self.bufs.len() - 1)
    }
    pub(super) fn download(&self, b: Buf, shape: [usize; 2]) -> Result<Array2<f64>, GpuError> {
        let v: Vec<T> = self.stream.clone_dtoh(&self.bufs[b])?;
        let v: Vec<f64> = v.into_iter().map(T::to_f64).collect();
        Array2::from_shape_vec((shape[0], shape[1]), v)
            .map_err(|e| GpuError::Unsupported(format!("downloaded buffer has a bad shape: {e}")))
    }
    pub(super) fn addr(&self, b: Buf) -> u64 {
        let (p, _sync) = self.bufs[b].device_ptr(&self.stream);
        p
    }
    pub(super) fn stat_addr(&self, b: Buf) -> u64 {
        let (p, _sync) = self.stats[b].device_ptr(&self.stream);
        p
    }
    pub(super) fn len(&self, b: Buf) -> usize {
        self.bufs[b].len()
    }

    pub(super) fn launch(
        &self,
        name: &'static str,
        l: Launch,
        args: &[KArg],
    ) -> Result<(), GpuError> {
        launch_on(&self.stream, self.k.get(name)?, l, args)
    }

    /// `C = op(A)·op(B)` on row-major buffers at element offsets, via the transpose trick.
    pub(super) fn gemm(
        &self,
        g: &RowGemm,
        (a, oa): (Buf, usize),
        (b, ob): (Buf, usize),
        (c, oc): (Buf, usize),
    ) -> Result<(), GpuError> {
        g.validate().map_err(GpuError::Unsupported)?;
        let [ea, eb, ec] = g.extent();
        if oa + ea > self.len(a) || ob + eb > self.len(b) || oc + ec > self.len(c) {
            return Err(GpuError::Unsupported(format!(
                "matrix product out of bounds: {g:?} on buffers of {}, {}, {} elements",
                self.len(a),
                self.len(b),
                self.len(c)
            )));
        }
        let cg = g.to_col_major();
        let e = std::mem::size_of::<T>() as u64;
        // cuBLAS's A is our B and vice versa (see `layout`).
        let pa = self.addr(b) + ob as u64 * e;
        let pb = self.addr(a) + oa as u64 * e;
        let pc = self.addr(c) + oc as u64 * e;
        let op = |t: bool| {
            if t {
                cublas_sys::cublasOperation_t::CUBLAS_OP_T
            } else {
                cublas_sys::cublasOperation_t::CUBLAS_OP_N
            }
        };
        let (alpha, beta) = (cg.alpha, cg.beta);
        // SAFETY: bounds were checked above; f32 scalars match CUBLAS_COMPUTE_32F.
        unsafe {
            cudarc::cublas::result::gemm_strided_batched_ex(
                *self.blas.handle(),
                op(cg.trans_a),
                op(cg.trans_b),
                cg.m as i32,
                cg.n as i32,
                cg.k as i32,
                (&alpha) as *const f32 as *const _,
                pa as *const _,
                T::CUDA_TYPE,
                cg.lda as i32,
                cg.stride_a as i64,
                pb as *const _,
                T::CUDA_TYPE,
                cg.ldb as i32,
                cg.stride_b as i64,
                (&beta) as *const f32 as *const _,
                pc as *mut _,
                T::CUDA_TYPE,
                cg.ldc as i32,
                cg.stride_c as i64,
                cg.batch as i32,
                cublas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                cublas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }?;
        Ok(())
    }
}

impl<T: GpuElem> Rank<T> {
    pub(super) fn setup(
        &mut self,
        cfg: &Config,
        dm: &Dims,
        model: &Model<f64>,
        shards: &[LayerParams<f64>],
    ) -> Result<(), GpuError> {
        let (t, h, hr, fr) = (dm.t, dm.h, dm.hr, dm.fr);
        let sc = dm.batch * dm.hp * dm.seq * dm.seq;
        let x0 = self.upload(&model.input)?;
        self.xs.push(x0);
        for lp in shards.iter().take(cfg.layers) {
            let mut w = [0; 12];
            let mut g = [0; 12];
            for (i, k) in ParamKind::ALL.into_iter().enumerate() {
                w[i] = self.upload(lp.get(k))?;
                g[i] = self.alloc(lp.get(k).len())?;
            }
            let lb = LayerBufs {
                w,
                g,
                xn1: self.alloc(t * h)?,
                qkv: self.alloc(t * 3 * hr)?,
                probs: self.alloc(sc)?,
                ctx: self.alloc(t * hr)?,
                attn_out: self.alloc(t * h)?,
                x1: self.alloc(t * h)?,
                xn2: self.alloc(t * h)?,
                fc1: self.alloc(t * fr)?,
                act: self.alloc(t * fr)?,
                mlp_out: self.alloc(t * h)?,
                mean1: self.alloc_stats(t)?,
                rstd1: self.alloc_stats(t)?,
                mean2: self.alloc_stats(t)?,
                rstd2: self.alloc_stats(t)?,
            };
            self.layers.push(lb);
            let y = self.alloc(t * h)?;
            self.xs.push(y);
        }
        self.s = Scratch {
            grad: [self.alloc(t * h)?, self.alloc(t * h)?],
            d_act: self.alloc(t * fr)?,
            d_fc1: self.alloc(t * fr)?,
            dxn: self.alloc(t * h)?,
            dx1: self.alloc(t * h)?,
            dctx: self.alloc(t * hr)?,
            dprobs: self.alloc(sc)?,
            dqkv: self.alloc(t * 3 * hr)?,
        };
        self.dout = self.upload(&model.grad_output)?;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn ln_fwd(
        &self,
        x: Buf,
        w: Buf,
        b: Buf,
        y: Buf,
        mean: Buf,
        rstd: Buf,
        dm: &Dims,
    ) -> Result<(), GpuError> {
        self.launch(
            "ln_fwd",
            launch::per_row(dm.t, dm.h),
            &[
                KArg::Ptr(self.addr(x)),
                KArg::Ptr(self.addr(w)),
                KArg::Ptr(self.addr(b)),
                KArg::Ptr(self.addr(y)),
                KArg::Ptr(self.stat_addr(mean)),
                KArg::Ptr(self.stat_addr(rstd)),
                KArg::I32(dm.h as i32),
                KArg::F32(tplab_engine::ops::LN_EPS as f32),
            ],
        )
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn ln_bwd(
        &self,
        dy: Buf,
        x: Buf,
        w: Buf,
        mean: Buf,
        rstd: Buf,
        resid: Buf,
        dx: Buf,
        dw: Buf,
        db: Buf,
        dm: &Dims,
    ) -> Result<(), GpuError> {
        self.launch(
            "ln_bwd_input",
            launch::per_row(dm.t, dm.h),
            &[
                KArg::Ptr(self.addr(dy)),
                KArg::Ptr(self.addr(x)),
                KArg::Ptr(self.addr(w)),
                KArg::Ptr(self.stat_addr(mean)),
                KArg::Ptr(self.stat_addr(rstd)),
                KArg::Ptr(self.addr(resid)),
                KArg::Ptr(self.addr(dx)),
                KArg::I32(dm.h as i32),
            ],
        )?;
        self.launch(
            "ln_bwd_params",
            launch::per_column(dm.h),
            &[
                KArg::Ptr(self.addr(dy)),
                KArg::Ptr(self.addr(x)),
                KArg::Ptr(self.stat_addr(mean)),
                KArg::Ptr(self.stat_addr(rstd)),
                KArg::Ptr(self.addr(dw)),
                KArg::Ptr(self.addr(db)),
                KArg::I32(dm.t as i32),
                KArg::I32(dm.h as i32),
            ],
        )
    }

    pub(super) fn bias_add(
        &self,
        y: Buf,
        bias: Buf,
        rows: usize,
        cols: usize,
    ) -> Result<(), GpuError> {
        let n = rows * cols;
        self.launch(
            "bias_add",
            launch::elementwise(n),
            &[
                KArg::Ptr(self.addr(y)),
                KArg::Ptr(self.addr(bias)),
                KArg::I64(n as i64),
                KArg::I32(cols as i32),
            ],
        )
    }

    pub(super) fn col_sum(
        &self,
        x: Buf,
        out: Buf,
        rows: usize,
        cols: usize,
    ) -> Result<(), GpuError> {
        self.launch(
            "col_sum",
            launch::per_column(cols),
            &[
                KArg::Ptr(self.addr(x)),
                KArg::Ptr(self.addr(out)),
                KArg::I32(rows as i32),
                KArg::I32(cols as i32),
            ],
        )
    }

    pub(super) fn bias_residual(
        &self,
        res: Buf,
        a: Buf,
        bias: Buf,
        y: Buf,
        dm: &Dims,
    ) -> Result<(), GpuError> {
        let n = dm.t * dm.h;
        self.launch(
            "bias_residual",
            launch::elementwise(n),
            &[
                KArg::Ptr(self.addr(res)),
                KArg::Ptr(self.addr(a)),
                KArg::Ptr(self.addr(bias)),
                KArg::Ptr(self.addr(y)),
                KArg::I64(n as i64),
                KArg::I32(dm.h as i32),
            ],
        )
    }

    pub(super) fn softmax(
        &self,
        name: &'static str,
        args: &[KArg],
        dm: &Dims,
    ) -> Result<(), GpuError> {
        let rows = dm.batch * dm.hp * dm.seq;
        self.launch(name, launch::per_row(rows, dm.seq), args)
    }
}

/// Launches `f` on `stream` with `args`.
pub(super) fn launch_on(
    stream: &Arc<CudaStream>,
    f: &CudaFunction,
    l: Launch,
    args: &[KArg],
) -> Result<(), GpuError> {
    launch::check(l).map_err(GpuError::Unsupported)?;
    let mut b = stream.launch_builder(f);
    for a in args {
        match a {
            KArg::Ptr(p) => b.arg(p),
            KArg::I32(v) => b.arg(v),
            KArg::I64(v) => b.arg(v),
            KArg::F32(v) => b.arg(v),
        };
    }
    let cfg = LaunchConfig {
        grid_dim: (l.grid, 1, 1),
        block_dim: (l.block, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: callers pass live device buffers sized for the launch and the kernel's exact
    // parameter list.
    unsafe { b.launch(cfg) }?;
    Ok(())
}
