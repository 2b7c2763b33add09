"""numpy (OpenBLAS) side of scripts/bench-ratios.sh: the same block forward and the same sgemm
shapes, timed as medians in this process, then the ratios against the Rust numbers in argv[1]."""
import json
import sys
import time

import numpy as np

from check_export import block

REPS = 15


def median_s(f):
    f()
    t = []
    for _ in range(REPS):
        s = time.perf_counter()
        f()
        t.append(time.perf_counter() - s)
    return sorted(t)[REPS // 2]


def main():
    rust = json.loads(sys.argv[1])
    rng = np.random.default_rng(0)
    t, h, f, heads, seq = 512, 768, 3072, 12, 512
    r = lambda *s: rng.standard_normal(s, dtype=np.float32) * 0.02
    # Named as in a `tplab run --export` folder: check_export.block reads them.
    names = ["ln1.weight", "ln1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.out.weight",
             "attn.out.bias", "ln2.weight", "ln2.bias", "mlp.fc1.weight", "mlp.fc1.bias",
             "mlp.fc2.weight", "mlp.fc2.bias"]
    p = dict(zip(names, [1 + r(h), r(h), r(h, 3 * h), r(3 * h), r(h, h), r(h),
                         1 + r(h), r(h), r(h, f), r(f), r(f, h), r(h)]))
    x = rng.standard_normal((t, h), dtype=np.float32)
    np_fwd = median_s(lambda: block(x, p, heads, heads, t // seq, seq))
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
    print("\nMegatron's plan as `tplab design` runs it (the same walk, the parameters sharded inside each call)\nover the run on resident shards above, fwd+bwd:")
    for tp, r in rust.get("design_over_sharded", {}).items():
        print(f"  TP={tp}: {r:.2f}x")


if __name__ == "__main__":
    main()
