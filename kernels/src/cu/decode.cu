// Decode with a KV cache (tplab serve on the GPU): the vocabulary-parallel embedding lookup,
// the position embedding, appending K and V to the rank's cache, and attention of the new rows
// over the cache.

// out[i, :] = table[ids[i] - row0, :] if the rank holds that id (row0 <= id < row0 + rows),
// else 0: each rank contributes its vocabulary rows, and the all-reduce sums them.
extern "C" __global__ void embed_lookup(const int* __restrict__ ids,
                                        const elem_t* __restrict__ table,
                                        elem_t* __restrict__ out, int n, int h, int row0,
                                        int rows) {
    long total = (long)n * h;
    TPLAB_GRID_STRIDE(e, total) {
        int i = (int)(e / h), c = (int)(e - (long)i * h);
        int local = ids[i] - row0;
        out[e] = (local >= 0 && local < rows) ? table[(long)local * h + c] : st(0.0f);
    }
}

// y += a, element-wise (the position embeddings of the step's positions).
extern "C" __global__ void add_inplace(elem_t* __restrict__ y, const elem_t* __restrict__ a,
                                       long n) {
    TPLAB_GRID_STRIDE(i, n)
        y[i] = st(ld(y[i]) + ld(a[i]));
}

// Appends the new rows' K and V (columns q_cols.. and q_cols+kw.. of qkv [n, qc]) to the
// cache [context, kw] at rows start..start+n.
extern "C" __global__ void kv_append(const elem_t* __restrict__ qkv, elem_t* __restrict__ kc,
                                     elem_t* __restrict__ vc, int n, int qc, int q_cols, int kw,
                                     int start) {
    long total = (long)n * kw;
    TPLAB_GRID_STRIDE(e, total) {
        int i = (int)(e / kw), c = (int)(e - (long)i * kw);
        long dst = (long)(start + i) * kw + c;
        kc[dst] = qkv[(long)i * qc + q_cols + c];
        vc[dst] = qkv[(long)i * qc + q_cols + kw + c];
    }
}

// One block per (new row i, query head j): scores of the query against the cached keys of
// positions 0..=start+i (kept in dynamic shared memory, start+n floats), softmax, and the
// weighted sum of the cached values. Query head j reads local KV head j / (hp / kvp).
extern "C" __global__ void cached_attention(const elem_t* __restrict__ qkv,
                                            const elem_t* __restrict__ kc,
                                            const elem_t* __restrict__ vc,
                                            elem_t* __restrict__ ctx, int hp, int kvp, int d,
                                            int qc, int start, float scale) {
    extern __shared__ float sc[];
    __shared__ float red[32];
    int i = blockIdx.x / hp, j = blockIdx.x - (blockIdx.x / hp) * hp;
    int g = j / (hp / kvp);
    int kw = kvp * d;
    int len = start + i + 1;
    const elem_t* q = qkv + (long)i * qc + j * d;
    float m = TPLAB_NEG_INF;
    for (int p = threadIdx.x; p < len; p += blockDim.x) {
        const elem_t* k = kc + (long)p * kw + g * d;
        float s = 0.0f;
        for (int e = 0; e < d; ++e) s += ld(q[e]) * ld(k[e]);
        s *= scale;
        sc[p] = s;
        m = fmaxf(m, s);
    }
    m = block_max(m, red);
    float z = 0.0f;
    for (int p = threadIdx.x; p < len; p += blockDim.x) {
        float w = expf(sc[p] - m);
        sc[p] = w;
        z += w;
    }
    z = block_sum(z, red);
    float inv = 1.0f / z;
    for (int e = threadIdx.x; e < d; e += blockDim.x) {
        float o = 0.0f;
        for (int p = 0; p < len; ++p) o += sc[p] * ld(vc[(long)p * kw + g * d + e]);
        ctx[(long)i * hp * d + j * d + e] = st(o * inv);
    }
}
