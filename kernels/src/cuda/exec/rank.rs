//! A rank's buffers and kernel launches: its arena, uploads and downloads, cuBLAS products,
//! LayerNorm, bias, softmax and the launch of any NVRTC kernel.

use super::*;

impl<T: GpuElem> Rank<T> {
    /// A rank on `ctx`: a new stream, its cuBLAS handle and the kernels in `T`, and no
    /// buffers yet.
    pub(super) fn open(ctx: &Arc<CudaContext>) -> Result<Self, GpuError> {
        let stream = ctx.new_stream()?;
        let blas = CudaBlas::new(stream.clone())?;
        let k = kernels_for(ctx, T::DTYPE)?;
        Ok(Rank {
            ctx: ctx.clone(),
            stream,
            blas,
            k,
            bufs: Vec::new(),
            stats: Vec::new(),
            map: HashMap::new(),
            ln_stats: Vec::new(),
        })
    }

    /// The arena id of a layout buffer (allocated by [`Rank::setup`]).
    pub(super) fn buf(&self, id: BufId) -> Buf {
        self.map.get(&id).copied().unwrap_or(usize::MAX)
    }

    /// The device address of a layout buffer.
    pub(super) fn addr_of(&self, id: BufId) -> u64 {
        self.addr(self.buf(id))
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
        match self.bufs.get(b) {
            Some(s) => {
                let (p, _sync) = s.device_ptr(&self.stream);
                p
            }
            None => 0,
        }
    }
    pub(super) fn stat_addr(&self, b: Buf) -> u64 {
        let (p, _sync) = self.stats[b].device_ptr(&self.stream);
        p
    }
    pub(super) fn len(&self, b: Buf) -> usize {
        self.bufs.get(b).map_or(0, |s| s.len())
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
    /// Allocates every buffer of the layout: the rank's input rows, output gradient rows and
    /// shards uploaded, everything else zeroed.
    pub(super) fn setup(
        &mut self,
        lay: &RankLayout,
        input: &Array2<f64>,
        dout: &Array2<f64>,
        shards: &[LayerParams<f64>],
    ) -> Result<(), GpuError> {
        for id in lay.buffers() {
            let b = match id {
                BufId::X(0) => self.upload(input)?,
                BufId::DOut => self.upload(dout)?,
                BufId::W(l, k) => match shards.get(l) {
                    Some(lp) => self.upload(lp.get(k))?,
                    None => {
                        return Err(GpuError::Unsupported(format!(
                            "no shard of layer {l} to upload"
                        )))
                    }
                },
                other => self.alloc(lay.len(other))?,
            };
            if self.len(b) != lay.len(id).max(1) {
                return Err(GpuError::Unsupported(format!(
                    "{id:?} holds {} elements, the layout says {}",
                    self.len(b),
                    lay.len(id)
                )));
            }
            self.map.insert(id, b);
        }
        for _ in 0..lay.layers {
            let mut st = [0; 4];
            for s in &mut st {
                *s = self.alloc_stats(lay.tl)?;
            }
            self.ln_stats.push(st);
        }
        Ok(())
    }

    /// LayerNorm forward over `rows` rows of width `h`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn ln_fwd(
        &self,
        x: Buf,
        w: Buf,
        b: Buf,
        y: Buf,
        mean: Buf,
        rstd: Buf,
        rows: usize,
        h: usize,
    ) -> Result<(), GpuError> {
        self.launch(
            "ln_fwd",
            launch::per_row(rows, h),
            &[
                KArg::Ptr(self.addr(x)),
                KArg::Ptr(self.addr(w)),
                KArg::Ptr(self.addr(b)),
                KArg::Ptr(self.addr(y)),
                KArg::Ptr(self.stat_addr(mean)),
                KArg::Ptr(self.stat_addr(rstd)),
                KArg::I32(h as i32),
                KArg::F32(tplab_engine::block::ops::LN_EPS as f32),
            ],
        )
    }

    /// LayerNorm backward: `dx = resid + LN'(dy)` and the gain and shift gradients.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn ln_bwd(
        &self,
        dy: Buf,
        x: Buf,
        w: Buf,
        [mean, rstd]: [Buf; 2],
        resid: Buf,
        dx: Buf,
        dw: Buf,
        db: Buf,
        rows: usize,
        h: usize,
    ) -> Result<(), GpuError> {
        self.launch(
            "ln_bwd_input",
            launch::per_row(rows, h),
            &[
                KArg::Ptr(self.addr(dy)),
                KArg::Ptr(self.addr(x)),
                KArg::Ptr(self.addr(w)),
                KArg::Ptr(self.stat_addr(mean)),
                KArg::Ptr(self.stat_addr(rstd)),
                KArg::Ptr(self.addr(resid)),
                KArg::Ptr(self.addr(dx)),
                KArg::I32(h as i32),
            ],
        )?;
        self.launch(
            "ln_bwd_params",
            launch::per_column(h),
            &[
                KArg::Ptr(self.addr(dy)),
                KArg::Ptr(self.addr(x)),
                KArg::Ptr(self.stat_addr(mean)),
                KArg::Ptr(self.stat_addr(rstd)),
                KArg::Ptr(self.addr(dw)),
                KArg::Ptr(self.addr(db)),
                KArg::I32(rows as i32),
                KArg::I32(h as i32),
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

    /// `y = res + a + bias` over `rows × cols`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn bias_residual(
        &self,
        res: Buf,
        a: Buf,
        bias: Buf,
        y: Buf,
        rows: usize,
        cols: usize,
    ) -> Result<(), GpuError> {
        let n = rows * cols;
        self.launch(
            "bias_residual",
            launch::elementwise(n),
            &[
                KArg::Ptr(self.addr(res)),
                KArg::Ptr(self.addr(a)),
                KArg::Ptr(self.addr(bias)),
                KArg::Ptr(self.addr(y)),
                KArg::I64(n as i64),
                KArg::I32(cols as i32),
            ],
        )
    }

    /// `y[rows, out] = x[rows, inp]·W[inp, out]`, plus `bias` on every row when given.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn linear(
        &self,
        x: Buf,
        w: Buf,
        bias: Option<Buf>,
        y: Buf,
        rows: usize,
        inp: usize,
        out: usize,
    ) -> Result<(), GpuError> {
        self.gemm(
            &RowGemm::plain(rows, out, inp, false, false),
            (x, 0),
            (w, 0),
            (y, 0),
        )?;
        match bias {
            Some(b) => self.bias_add(y, b, rows, out),
            None => Ok(()),
        }
    }

    /// The input gradient of [`Rank::linear`]: `dx[rows, inp] = dy[rows, out]·Wᵀ`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn linear_dx(
        &self,
        dy: Buf,
        w: Buf,
        dx: Buf,
        rows: usize,
        inp: usize,
        out: usize,
    ) -> Result<(), GpuError> {
        self.gemm(
            &RowGemm::plain(rows, inp, out, false, true),
            (dy, 0),
            (w, 0),
            (dx, 0),
        )
    }

    /// The weight gradient of [`Rank::linear`]: `gw[inp, out] = xᵀ·dy`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn linear_dw(
        &self,
        x: Buf,
        dy: Buf,
        gw: Buf,
        rows: usize,
        inp: usize,
        out: usize,
    ) -> Result<(), GpuError> {
        self.gemm(
            &RowGemm::plain(inp, out, rows, true, false),
            (x, 0),
            (dy, 0),
            (gw, 0),
        )
    }

    /// `u = GeLU(a)` over `n` elements.
    pub(super) fn gelu(&self, a: Buf, u: Buf, n: usize) -> Result<(), GpuError> {
        self.launch(
            "gelu_fwd",
            launch::elementwise(n),
            &[
                KArg::Ptr(self.addr(a)),
                KArg::Ptr(self.addr(u)),
                KArg::I64(n as i64),
            ],
        )
    }

    /// One of the vocabulary-parallel embedding's row kernels (they share their parameters):
    /// `tokens` ids at `ids` against the rank's `rows` table rows of width `h`, from id `row0`.
    /// [`Embed::Lookup`] writes `dst [tokens, h]` from the table `src`; [`Embed::ScatterAdd`]
    /// adds the rows of `src [tokens, h]` into the table gradient `dst [rows, h]`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn embed(
        &self,
        kernel: Embed,
        ids: u64,
        src: Buf,
        dst: Buf,
        tokens: usize,
        h: usize,
        row0: usize,
        rows: usize,
    ) -> Result<(), GpuError> {
        // One thread per element written.
        let (name, written) = match kernel {
            Embed::Lookup => ("embed_lookup", tokens * h),
            Embed::ScatterAdd => ("embed_scatter_add", rows * h),
        };
        self.launch(
            name,
            launch::elementwise(written),
            &[
                KArg::Ptr(ids),
                KArg::Ptr(self.addr(src)),
                KArg::Ptr(self.addr(dst)),
                KArg::I32(tokens as i32),
                KArg::I32(h as i32),
                KArg::I32(row0 as i32),
                KArg::I32(rows as i32),
            ],
        )
    }

    /// Copies `[rows, cols]` from column `col0` of a matrix of row stride `ld` into a packed
    /// buffer (or back, with `unpack`), at element offsets `off_packed` of the packed buffer.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn pack(
        &self,
        unpack: bool,
        matrix: Buf,
        packed: Buf,
        off_packed: usize,
        rows: usize,
        cols: usize,
        ld: usize,
        col0: usize,
    ) -> Result<(), GpuError> {
        let e = std::mem::size_of::<T>() as u64;
        let p = self.addr(packed) + off_packed as u64 * e;
        let m = self.addr(matrix);
        let (name, src, dst) = if unpack {
            ("unpack_cols", p, m)
        } else {
            ("pack_cols", m, p)
        };
        if off_packed + rows * cols > self.len(packed)
            || (rows - 1) * ld + col0 + cols > self.len(matrix)
        {
            return Err(GpuError::Unsupported(format!(
                "packing {rows}x{cols} from column {col0} out of bounds"
            )));
        }
        self.launch(
            name,
            launch::elementwise(rows * cols),
            &[
                KArg::Ptr(src),
                KArg::Ptr(dst),
                KArg::I32(rows as i32),
                KArg::I32(cols as i32),
                KArg::I32(ld as i32),
                KArg::I32(col0 as i32),
            ],
        )
    }

    /// Causal softmax (forward or backward) over the rank's `batch·hp·seq` score rows.
    pub(super) fn softmax(
        &self,
        name: &'static str,
        args: &[KArg],
        lay: &RankLayout,
    ) -> Result<(), GpuError> {
        let rows = lay.batch * lay.hp * lay.seq;
        self.launch(name, launch::per_row(rows, lay.seq), args)
    }
}

/// The embedding kernels of [`Rank::embed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Embed {
    /// `embed_lookup` (`decode.cu`): each token's row if the rank holds its id, else 0.
    Lookup,
    /// `embed_scatter_add` (`vocab.cu`): the lookup's gradient, summed per id in token order.
    ScatterAdd,
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
        shared_mem_bytes: l.shared_bytes,
    };
    // SAFETY: callers pass live device buffers sized for the launch and the kernel's exact
    // parameter list.
    unsafe { b.launch(cfg) }?;
    Ok(())
}
