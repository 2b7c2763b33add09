// LayerNorm over the last axis (eps given by the host, 1e-5): one block per row.
// y = (x - mean) * rstd * w + b; mean and rstd are saved (f32) for the backward pass.
extern "C" __global__ void ln_fwd(const elem_t* __restrict__ x, const elem_t* __restrict__ w,
                                  const elem_t* __restrict__ b, elem_t* __restrict__ y,
                                  float* __restrict__ mean, float* __restrict__ rstd, int cols,
                                  float eps) {
    __shared__ float sh[32];
    long row = blockIdx.x;
    const elem_t* xr = x + row * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += ld(xr[c]);
    float mu = block_sum(s, sh) / cols;
    float v = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float d = ld(xr[c]) - mu;
        v += d * d;
    }
    float r = rsqrtf(block_sum(v, sh) / cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[row * cols + c] = st((ld(xr[c]) - mu) * r * ld(w[c]) + ld(b[c]));
    if (threadIdx.x == 0) { mean[row] = mu; rstd[row] = r; }
}

// Input gradient plus the residual branch's gradient (fused):
// dx = resid + rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * w.
extern "C" __global__ void ln_bwd_input(const elem_t* __restrict__ dy, const elem_t* __restrict__ x,
                                        const elem_t* __restrict__ w, const float* __restrict__ mean,
                                        const float* __restrict__ rstd,
                                        const elem_t* __restrict__ resid, elem_t* __restrict__ dx,
                                        int cols) {
    __shared__ float sh[32];
    long row = blockIdx.x;
    long base = row * cols;
    float mu = mean[row], r = rstd[row];
    float sg = 0.0f, sgx = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float g = ld(dy[base + c]) * ld(w[c]);
        float xh = (ld(x[base + c]) - mu) * r;
        sg += g;
        sgx += g * xh;
    }
    float mg = block_sum(sg, sh) / cols;
    float mgx = block_sum(sgx, sh) / cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float g = ld(dy[base + c]) * ld(w[c]);
        float xh = (ld(x[base + c]) - mu) * r;
        dx[base + c] = st(ld(resid[base + c]) + r * (g - mg - xh * mgx));
    }
}

// Gain and shift gradients: one thread per column, summing over rows (coalesced across threads).
extern "C" __global__ void ln_bwd_params(const elem_t* __restrict__ dy, const elem_t* __restrict__ x,
                                         const float* __restrict__ mean,
                                         const float* __restrict__ rstd, elem_t* __restrict__ dw,
                                         elem_t* __restrict__ db, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float gw = 0.0f, gb = 0.0f;
    for (int r = 0; r < rows; ++r) {
        float g = ld(dy[(long)r * cols + c]);
        gw += g * (ld(x[(long)r * cols + c]) - mean[r]) * rstd[r];
        gb += g;
    }
    dw[c] = st(gw);
    db[c] = st(gb);
}
