"""numpy (OpenBLAS) side of scripts/bench-ratios.sh: the same block forward and the same sgemm
shapes, timed as medians in this process, then the ratios against the Rust numbers in argv[1]."""
import json
import sys
import time

import numpy as np

REPS = 15


def median_s(f):
    f()
    t = []
    for _ in range(REPS):
        s = time.perf_counter()
        f()
        t.append(time.perf_counter() - s)
    return sorted(t)[REPS // 2]


def layer_norm(x, g, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x**3)))


def block(x, p, heads, seq):
    t, h = x.shape
    d = h // heads
    a = layer_norm(x, p["ln1w"], p["ln1b"])
    qkv = a @ p["wqkv"] + p["bqkv"]
    q, k, v = (qkv[:, i * h:(i + 1) * h].reshape(t // seq, seq, heads, d).transpose(0, 2, 1, 3) for i in range(3))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)
    mask = np.triu(np.ones((seq, seq), dtype=bool), 1)
    s = np.where(mask, -np.inf, s)
    s = np.exp(s - s.max(-1, keepdims=True))
    s /= s.sum(-1, keepdims=True)
    ctx = (s @ v).transpose(0, 2, 1, 3).reshape(t, h)
    x1 = x + ctx @ p["wout"] + p["bout"]
    m = gelu(layer_norm(x1, p["ln2w"], p["ln2b"]) @ p["w1"] + p["b1"])
    return x1 + m @ p["w2"] + p["b2"]


def main():
    rust = json.loads(sys.argv[1])
    rng = np.random.default_rng(0)
    t, h, f, heads, seq = 512, 768, 3072, 12, 512
    r = lambda *s: rng.standard_normal(s, dtype=np.float32) * 0.02
    p = dict(ln1w=1 + r(h), ln1b=r(h), wqkv=r(h, 3 * h), bqkv=r(3 * h), wout=r(h, h), bout=r(h),
             ln2w=1 + r(h), ln2b=r(h), w1=r(h, f), b1=r(f), w2=r(f, h), b2=r(h))
    x = rng.standard_normal((t, h), dtype=np.float32)
    np_fwd = median_s(lambda: block(x, p, heads, seq))
    print(f"threads: {rust['threads']}, numpy {np.__version__}")
    fb = rust["fwd_bwd_s"]
    print("\nsharded fwd+bwd, one layer (t=512, h=768, 12 heads, f32), medians of 15 interleaved rounds:")
    for tp, s in fb.items():
        print(f"  TP={tp}: {s*1e3:8.2f} ms   ratio to TP=1: {s / fb['1']:.3f}   (target <= 1.10)")
    print(f"\nblock forward: tplab {rust['fwd_s']*1e3:.2f} ms, numpy {np_fwd*1e3:.2f} ms, "
          f"numpy/tplab = {np_fwd / rust['fwd_s']:.2f}x   (target >= 5)")
    print("\nmatrix products (GFLOP/s):")
    openblas = []
    for shape, gf in rust["gemm_gflops"].items():
        m, k, n = map(int, shape.split("x"))
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        s = median_s(lambda: a @ b)
        ob = 2 * m * k * n / s / 1e9
        openblas.append(ob)
        print(f"  {shape:>14}: tplab {gf:7.1f}  OpenBLAS {ob:7.1f}  ratio {gf / ob:.2f}   (target >= 0.80)")
    # The block's useful matrix work (linear layers, causal attention products; no element-wise
    # work) per second of the TP=1 forward+backward, against the best sgemm rate above.
    sgemm = max(openblas + list(rust["gemm_gflops"].values()))
    rate = rust["fwd_bwd_gflop"] / fb["1"]
    print(f"\nforward+backward at TP=1: {rust['fwd_bwd_gflop']:.2f} GFLOP of products in {fb['1']*1e3:.2f} ms = "
          f"{rate:.1f} GFLOP/s, {rate / sgemm:.2f} of the best sgemm rate above ({sgemm:.1f})   (target >= 0.70)")


if __name__ == "__main__":
    main()
