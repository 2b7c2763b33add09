// The single-device collectives besides the all-reduce (allreduce.cu), and the packing of
// non-contiguous gradients for an all-reduce. `send` and `recv` hold the device addresses of the
// n ranks' buffers; sums run in rank order with f32 accumulation, like sum_ranks.

// All-gather: rank s's `part` elements land at s*part in every rank's recv buffer.
extern "C" __global__ void gather_ranks(const unsigned long long* __restrict__ send,
                                        const unsigned long long* __restrict__ recv, int n,
                                        long part) {
    long total = part * n;
    TPLAB_GRID_STRIDE(i, total) {
        int src = (int)(i / part);
        elem_t v = ((const elem_t*)send[src])[i - (long)src * part];
        for (int r = 0; r < n; ++r) ((elem_t*)recv[r])[i] = v;
    }
}

// Reduce-scatter: rank o keeps the sum over ranks of elements o*part .. (o+1)*part.
extern "C" __global__ void scatter_sum_ranks(const unsigned long long* __restrict__ send,
                                             const unsigned long long* __restrict__ recv, int n,
                                             long part) {
    long total = part * n;
    TPLAB_GRID_STRIDE(i, total) {
        float s = 0.0f;
        for (int r = 0; r < n; ++r) s += ld(((const elem_t*)send[r])[i]);
        int owner = (int)(i / part);
        ((elem_t*)recv[owner])[i - (long)owner * part] = st(s);
    }
}

// dst[r, c] = src[r, col0 + c] for a [rows, cols] block of a row-major matrix of row stride ld.
extern "C" __global__ void pack_cols(const elem_t* __restrict__ src, elem_t* __restrict__ dst,
                                     int rows, int cols, int ld, int col0) {
    long total = (long)rows * cols;
    TPLAB_GRID_STRIDE(i, total) {
        long r = i / cols, c = i - r * cols;
        dst[i] = src[r * ld + col0 + c];
    }
}

// The inverse of pack_cols.
extern "C" __global__ void unpack_cols(const elem_t* __restrict__ src, elem_t* __restrict__ dst,
                                       int rows, int cols, int ld, int col0) {
    long total = (long)rows * cols;
    TPLAB_GRID_STRIDE(i, total) {
        long r = i / cols, c = i - r * cols;
        dst[r * ld + col0 + c] = src[i];
    }
}

// All-reduce with max, in place (the cross-entropy's row maximum): every rank's buffer gets
// the element-wise maximum over ranks.
extern "C" __global__ void max_ranks(const unsigned long long* __restrict__ bufs, int n, long len) {
    TPLAB_GRID_STRIDE(i, len) {
        float m = TPLAB_NEG_INF;
        for (int r = 0; r < n; ++r) m = fmaxf(m, ld(((const elem_t*)bufs[r])[i]));
        elem_t e = st(m);
        for (int r = 0; r < n; ++r) ((elem_t*)bufs[r])[i] = e;
    }
}

// A [rows, cols] block from a row-major matrix of row stride sld into one of row stride dld
// (both pointers at the block's first element); with add, added to what is there.
extern "C" __global__ void copy_block(const elem_t* __restrict__ src, elem_t* __restrict__ dst,
                                      int rows, int cols, int sld, int dld, int add) {
    long total = (long)rows * cols;
    TPLAB_GRID_STRIDE(i, total) {
        long r = i / cols, c = i - r * cols;
        elem_t v = src[r * sld + c];
        dst[r * dld + c] = add ? st(ld(dst[r * dld + c]) + ld(v)) : v;
    }
}

// All-to-all: rank o's recv gets rank s's elements o*part .. (o+1)*part at s*part.
extern "C" __global__ void all_to_all_ranks(const unsigned long long* __restrict__ send,
                                            const unsigned long long* __restrict__ recv, int n,
                                            long part) {
    long total = part * n * n;
    TPLAB_GRID_STRIDE(i, total) {
        long per = part * n;
        int o = (int)(i / per);
        long rem = i - (long)o * per;
        int s = (int)(rem / part);
        long k = rem - (long)s * part;
        ((elem_t*)recv[o])[(long)s * part + k] = ((const elem_t*)send[s])[(long)o * part + k];
    }
}
