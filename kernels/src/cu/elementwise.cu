// Element-wise kernels; all use grid-stride loops over `n = rows * cols` elements.

// y[i, c] += bias[c] (column-parallel layers add their bias slice locally).
extern "C" __global__ void bias_add(elem_t* __restrict__ y, const elem_t* __restrict__ bias,
                                    long n, int cols) {
    TPLAB_GRID_STRIDE(i, n)
        y[i] = st(ld(y[i]) + ld(bias[i % cols]));
}

// Residual add with the row-parallel bias, added once after the all-reduce: y = res + a + bias.
extern "C" __global__ void bias_residual(const elem_t* __restrict__ res, const elem_t* __restrict__ a,
                                         const elem_t* __restrict__ bias, elem_t* __restrict__ y,
                                         long n, int cols) {
    TPLAB_GRID_STRIDE(i, n)
        y[i] = st(ld(res[i]) + ld(a[i]) + ld(bias[i % cols]));
}

#define GELU_K0 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_K1 0.044715f

// GeLU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
extern "C" __global__ void gelu_fwd(const elem_t* __restrict__ x, elem_t* __restrict__ y, long n) {
    TPLAB_GRID_STRIDE(i, n) {
        float v = ld(x[i]);
        float t = tanhf(GELU_K0 * (v + GELU_K1 * v * v * v));
        y[i] = st(0.5f * v * (1.0f + t));
    }
}

// dx = dy * GeLU'(x).
extern "C" __global__ void gelu_bwd(const elem_t* __restrict__ dy, const elem_t* __restrict__ x,
                                    elem_t* __restrict__ dx, long n) {
    TPLAB_GRID_STRIDE(i, n) {
        float v = ld(x[i]);
        float u = GELU_K0 * (v + GELU_K1 * v * v * v);
        float t = tanhf(u);
        float du = GELU_K0 * (1.0f + 3.0f * GELU_K1 * v * v);
        float g = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du;
        dx[i] = st(ld(dy[i]) * g);
    }
}

// Bias gradient: out[c] = sum over rows of x[r, c]; one thread per column.
extern "C" __global__ void col_sum(const elem_t* __restrict__ x, elem_t* __restrict__ out, int rows,
                                   int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < rows; ++r) s += ld(x[(long)r * cols + c]);
    out[c] = st(s);
}
