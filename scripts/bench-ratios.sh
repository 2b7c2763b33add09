#!/usr/bin/env bash
# Prints the issue-2 speed ratios measured in one run on this machine:
#  - sharded fwd+bwd at TP 2,3,4,6 over TP 1 (12 heads: TP=8 is invalid) (same executor, same threads; target <= 1.10)
#  - block forward: numpy (OpenBLAS) time over tplab time (target >= 5)
#  - tplab matrix products over OpenBLAS sgemm on the same shapes (target >= 0.80)
#  - forward+backward at TP=1: GFLOP/s of its matrix products (linear layers and the causal part
#    of attention; element-wise work not counted) over the best sgemm rate of this run (>= 0.70)
#  - Megatron's plan as `tplab design` runs it (the same walk, parameters sharded inside each call)
#    over the run on resident shards, same TP (the cost of slicing the weights every call)
# The machine's load moves every figure: compare ratios from one run, and take several runs.
# Needs numpy (pip install numpy). OPENBLAS_CORETYPE/L2_SIZE are unset for this command only,
# since they slow a current numpy (see the workplace notes).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p tplab-engine --example bench_ratios
rust_json=$(./target/release/examples/bench_ratios)
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 scripts/bench_numpy.py "$rust_json"
