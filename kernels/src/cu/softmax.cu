// Causal softmax over score matrices [mats * seq, seq] (already scaled by 1/sqrt(d)),
// one block per row. Row i of each matrix attends to columns 0..=i; later columns become 0.
extern "C" __global__ void causal_softmax_fwd(elem_t* __restrict__ s, int seq) {
    __shared__ float sh[32];
    long row = blockIdx.x;
    int i = (int)(row % seq);
    elem_t* sr = s + row * seq;
    float m = TPLAB_NEG_INF;
    for (int j = threadIdx.x; j <= i; j += blockDim.x) m = fmaxf(m, ld(sr[j]));
    m = block_max(m, sh);
    float z = 0.0f;
    for (int j = threadIdx.x; j <= i; j += blockDim.x) z += expf(ld(sr[j]) - m);
    z = block_sum(z, sh);
    float inv = 1.0f / z;
    for (int j = threadIdx.x; j < seq; j += blockDim.x)
        sr[j] = st(j <= i ? expf(ld(sr[j]) - m) * inv : 0.0f);
}

// In place: dp becomes the score gradient ds = p * (dp - sum_j p_j dp_j); masked entries get 0.
extern "C" __global__ void causal_softmax_bwd(const elem_t* __restrict__ p, elem_t* __restrict__ dp,
                                              int seq) {
    __shared__ float sh[32];
    long row = blockIdx.x;
    int i = (int)(row % seq);
    const elem_t* pr = p + row * seq;
    elem_t* dr = dp + row * seq;
    float dot = 0.0f;
    for (int j = threadIdx.x; j <= i; j += blockDim.x) dot += ld(pr[j]) * ld(dr[j]);
    dot = block_sum(dot, sh);
    for (int j = threadIdx.x; j < seq; j += blockDim.x)
        dr[j] = st(j <= i ? ld(pr[j]) * (ld(dr[j]) - dot) : 0.0f);
}
