// Shared prelude of every tplab kernel. The host prepends `#define TPLAB_BF16 0|1`.
// Storage type `elem_t` is f32 or bf16 (as raw 16-bit words); all arithmetic is in f32.
#define TPLAB_NEG_INF __int_as_float(0xff800000)
// Grid-stride loop: `i` (a long) runs over 0..n, one element per thread per pass of the grid,
// so any grid covers any n (launch::elementwise caps the grid).
#define TPLAB_GRID_STRIDE(i, n) \
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (n); \
         i += (long)gridDim.x * blockDim.x)
#if TPLAB_BF16
typedef unsigned short elem_t;
__device__ __forceinline__ float ld(elem_t v) { return __uint_as_float(((unsigned int)v) << 16); }
// Round to nearest even, NaN stays NaN.
__device__ __forceinline__ elem_t st(float f) {
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (elem_t)0x7fc0u;
    u += 0x7fffu + ((u >> 16) & 1u);
    return (elem_t)(u >> 16);
}
#else
typedef float elem_t;
__device__ __forceinline__ float ld(elem_t v) { return v; }
__device__ __forceinline__ elem_t st(float f) { return f; }
#endif

// Sum of `v` over the block (blockDim.x a power of two, at most 1024). `sh` holds 32 floats.
__device__ __forceinline__ float block_sum(float v, float* sh) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    float t = (threadIdx.x < nwarps) ? sh[threadIdx.x] : 0.0f;
    if (warp == 0) {
        for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
        if (lane == 0) sh[0] = t;
    }
    __syncthreads();
    return sh[0];
}

__device__ __forceinline__ float block_max(float v, float* sh) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    float t = (threadIdx.x < nwarps) ? sh[threadIdx.x] : TPLAB_NEG_INF;
    if (warp == 0) {
        for (int o = 16; o > 0; o >>= 1) t = fmaxf(t, __shfl_xor_sync(0xffffffffu, t, o));
        if (lane == 0) sh[0] = t;
    }
    __syncthreads();
    return sh[0];
}
