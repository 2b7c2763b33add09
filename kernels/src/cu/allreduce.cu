// The single-device all-reduce: `bufs` holds the device addresses of the n ranks' buffers of
// `len` elements. Each element is summed over ranks in rank order (f32 accumulation) and the sum
// is written back to every rank's buffer, in place. Each element is read and written by one
// thread only, so in place is safe. Four elements per thread per step (16-byte f32 / 8-byte
// bf16 accesses; cudaMalloc aligns buffers to 256 bytes), then a scalar tail.
#if TPLAB_BF16
typedef uint2 vec4_t;
__device__ __forceinline__ void unpack(vec4_t u, float* a) {
    a[0] += ld((elem_t)(u.x & 0xffffu)); a[1] += ld((elem_t)(u.x >> 16));
    a[2] += ld((elem_t)(u.y & 0xffffu)); a[3] += ld((elem_t)(u.y >> 16));
}
__device__ __forceinline__ vec4_t pack(const float* a) {
    vec4_t u;
    u.x = (unsigned int)st(a[0]) | ((unsigned int)st(a[1]) << 16);
    u.y = (unsigned int)st(a[2]) | ((unsigned int)st(a[3]) << 16);
    return u;
}
#else
typedef float4 vec4_t;
__device__ __forceinline__ void unpack(vec4_t f, float* a) {
    a[0] += f.x; a[1] += f.y; a[2] += f.z; a[3] += f.w;
}
__device__ __forceinline__ vec4_t pack(const float* a) { return make_float4(a[0], a[1], a[2], a[3]); }
#endif

extern "C" __global__ void sum_ranks(const unsigned long long* __restrict__ bufs, int n, long len) {
    long tid = blockIdx.x * (long)blockDim.x + threadIdx.x;
    long stride = (long)gridDim.x * blockDim.x;
    long nvec = len / 4;
    for (long v = tid; v < nvec; v += stride) {
        float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int r = 0; r < n; ++r) unpack(((const vec4_t*)bufs[r])[v], a);
        vec4_t out = pack(a);
        for (int r = 0; r < n; ++r) ((vec4_t*)bufs[r])[v] = out;
    }
    for (long i = nvec * 4 + tid; i < len; i += stride) {
        float s = 0.0f;
        for (int r = 0; r < n; ++r) s += ld(((const elem_t*)bufs[r])[i]);
        elem_t e = st(s);
        for (int r = 0; r < n; ++r) ((elem_t*)bufs[r])[i] = e;
    }
}
