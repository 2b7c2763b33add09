// The vocabulary-parallel cross-entropy (tplab gpu vocab): statistics of each rank's logit
// columns, the gradient of the mean loss, and the embedding gradient's scatter. `real` is the
// number of the rank's columns that are real ids (the rest is padding), `row0` its first id.

// One block per token row i of logits [t, vr]: the row maximum over the real columns, the sum of
// exp(z - that maximum), and the target's logit if the rank holds the target (else 0).
extern "C" __global__ void ce_local(const elem_t* __restrict__ logits, const int* __restrict__ targets,
                                    elem_t* __restrict__ mx, elem_t* __restrict__ sum,
                                    elem_t* __restrict__ tgt, int vr, int real, int row0) {
    __shared__ float sh[32];
    long i = blockIdx.x;
    const elem_t* z = logits + i * vr;
    float m = TPLAB_NEG_INF;
    for (int j = threadIdx.x; j < real; j += blockDim.x) m = fmaxf(m, ld(z[j]));
    m = block_max(m, sh);
    float s = 0.0f;
    for (int j = threadIdx.x; j < real; j += blockDim.x) s += expf(ld(z[j]) - m);
    s = block_sum(s, sh);
    if (threadIdx.x == 0) {
        int local = targets[i] - row0;
        mx[i] = st(m);
        sum[i] = st(s);
        tgt[i] = (local >= 0 && local < real) ? z[local] : st(0.0f);
    }
}

// Before the sum of exponentials is all-reduced: rescale the rank's sum from its own maximum
// `local` to the global one `global` (s * exp(m_r - M)); an empty shard contributes 0.
extern "C" __global__ void ce_rescale(elem_t* __restrict__ sum, const elem_t* __restrict__ local,
                                      const elem_t* __restrict__ global, int t) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < t; i += gridDim.x * blockDim.x) {
        float m = ld(local[i]);
        sum[i] = st(m == TPLAB_NEG_INF ? 0.0f : ld(sum[i]) * expf(m - ld(global[i])));
    }
}

// dlogits[i, j] = (exp(z - M_i) / S_i - [row0 + j == target_i]) * inv_t on real columns, 0 on
// padding.
extern "C" __global__ void ce_bwd(const elem_t* __restrict__ logits, const elem_t* __restrict__ mx,
                                  const elem_t* __restrict__ sum, const int* __restrict__ targets,
                                  elem_t* __restrict__ dlogits, int t, int vr, int real, int row0,
                                  float inv_t) {
    long total = (long)t * vr;
    TPLAB_GRID_STRIDE(e, total) {
        int i = (int)(e / vr), j = (int)(e - (long)i * vr);
        float d = 0.0f;
        if (j < real) {
            float p = expf(ld(logits[e]) - ld(mx[i])) / ld(sum[i]);
            d = (p - (row0 + j == targets[i] ? 1.0f : 0.0f)) * inv_t;
        }
        dlogits[e] = st(d);
    }
}

// grad[k, c] += sum over tokens i with ids[i] == row0 + k of dx[i, c], in token order (no
// atomics: one thread per element of the rank's table gradient).
extern "C" __global__ void embed_scatter_add(const int* __restrict__ ids,
                                             const elem_t* __restrict__ dx,
                                             elem_t* __restrict__ grad, int t, int h, int row0,
                                             int rows) {
    long total = (long)rows * h;
    TPLAB_GRID_STRIDE(e, total) {
        int k = (int)(e / h), c = (int)(e - (long)k * h);
        float g = ld(grad[e]);
        for (int i = 0; i < t; ++i)
            if (ids[i] == row0 + k) g += ld(dx[(long)i * h + c]);
        grad[e] = st(g);
    }
}
