#!/usr/bin/env bash
# Runs tplab's GPU checks on a machine with an NVIDIA GPU, from the repository root, with the
# binaries built by scripts/gpu-build.sh in ./gpu-bin (no cargo, no network needed).
# Writes logs under $OUT (default /tmp/tplab-gpu-out) and ends with a short table.
# Budget: about 7 minutes in all (each step has its own timeout; steps past the budget are
# skipped and listed as such).
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/tplab-gpu-out}"
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
T0=$(date +%s)
declare -a STEPS=()

note() { echo "$*" | tee -a "$SUMMARY"; }

# step NAME TIMEOUT_S CMD...: runs CMD with a timeout, logs to $OUT/NAME.log, records rc and time.
step() {
  local name=$1 limit=$2
  shift 2
  if [ $(( $(date +%s) - T0 )) -gt 420 ]; then
    STEPS+=("$(printf '%-14s SKIPPED (over the 7-minute budget)' "$name")")
    return 0
  fi
  local s=$(date +%s)
  echo
  echo "================ $name (limit ${limit}s): $*"
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$OUT/$name.log"
  local rc=${PIPESTATUS[0]}
  local d=$(( $(date +%s) - s ))
  STEPS+=("$(printf '%-14s rc=%-4s %4ss' "$name" "$rc" "$d")")
  return 0
}

echo "================ environment"
uname -a
(ldd --version | head -1) 2>/dev/null
if [ ! -x gpu-bin/tplab ]; then
  note "gpu-bin/tplab is missing: run scripts/gpu-build.sh on the build machine and carry gpu-bin"
  exit 2
fi
ls -l gpu-bin

# ---- find the CUDA libraries: driver, NVRTC, cuBLAS, NCCL -------------------------------
# The machine's own toolkit NVRTC first: PTX from an NVRTC newer than the driver does not load.
LIBDIRS=()
add_dir() {
  [ -d "$1" ] || return 0
  local x
  for x in "${LIBDIRS[@]:-}"; do [ "$x" = "$1" ] && return 0; done
  LIBDIRS+=("$1")
}
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/nvidia/lib64 \
         /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64; do
  add_dir "$d"
done
PYNV=$(python3 -c 'import nvidia, os; print("\n".join(os.path.abspath(p) for p in nvidia.__path__))' 2>/dev/null || true)
for base in $PYNV; do
  for d in "$base"/cu13/lib "$base"/*/lib; do add_dir "$d"; done
done

find_lib() { # prints the first file matching lib$1.so* in LIBDIRS
  local stem=$1 d f
  for d in "${LIBDIRS[@]}"; do
    for f in "$d"/lib"$stem".so "$d"/lib"$stem".so.[0-9]*; do
      [ -e "$f" ] && { echo "$f"; return 0; }
    done
  done
  ldconfig -p 2>/dev/null | awk -v s="lib$stem.so" '$1 ~ "^"s {print $NF; exit}'
}

SHIM=/tmp/tplab-libshim
rm -rf "$SHIM" && mkdir -p "$SHIM"
echo
echo "================ CUDA libraries found"
LDP=""
for stem in cuda nvrtc nvrtc-builtins cublas cublasLt nccl; do
  f=$(find_lib "$stem")
  if [ -n "$f" ]; then
    note "  lib$stem: $f"
    d=$(dirname "$f")
    case ":$LDP:" in *":$d:"*) ;; *) LDP="$LDP:$d" ;; esac
    # cudarc asks for lib<stem>.so, .so.13, .so.12, ... but NCCL ships only libnccl.so.2:
    # give every library an unversioned name in a shim directory.
    if [ ! -e "$d/lib$stem.so" ]; then ln -sf "$f" "$SHIM/lib$stem.so"; fi
  else
    note "  lib$stem: NOT FOUND in ${LIBDIRS[*]}"
  fi
done
export LD_LIBRARY_PATH="$SHIM${LDP}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
note "  LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
ls -l "$SHIM"

step nvidia-smi 30 nvidia-smi
step gpu-info 30 gpu-bin/tplab gpu info
APP_OK=1
if ! grep -q "CUDA support compiled in" "$OUT/gpu-info.log"; then
  APP_OK=0
  note "  the tplab binary did not start here (see gpu-info.log); using the test binaries only"
  ldd gpu-bin/tplab | grep "not found" | tee -a "$SUMMARY"
fi

export TPLAB_REQUIRE_GPU=1
step nvrtc-test 60 env CI=1 gpu-bin/kernels-nvrtc --test-threads=1
step unit-tests 30 gpu-bin/kernels-unit --test-threads=1
# The GPU half of tests/gpu.rs: f32/bf16 TP 1/2/4, TP 3, GPT-2 small, sequence parallelism,
# grouped-query attention (split and replicated KV heads), the decode, the vocabulary pass and
# every learner plan (81 assignments x SP at TP 4, and with copied KV heads) through the
# lowered launch list.
step gpu-tests 210 gpu-bin/kernels-gpu --test-threads=1 --nocapture
if [ "$APP_OK" = 1 ]; then
  step run-f32 45 gpu-bin/tplab gpu run --preset gpt2-small --tp 4 --iters 5 --export "$OUT/run-f32"
  step run-bf16 45 gpu-bin/tplab gpu run --preset gpt2-small --tp 4 --dtype bf16 --iters 5
  step run-sp 45 gpu-bin/tplab gpu run --preset gpt2-small --tp 4 --sequence-parallel --iters 5
  step run-gqa 45 gpu-bin/tplab gpu run --preset gpt2-small --heads 12 --kv-heads 2 --tp 4 --iters 5
  step plan-rtc 45 gpu-bin/tplab gpu run --preset gpt2-small --tp 4 --plan rows-then-columns --iters 5
  step plan-megatron 45 gpu-bin/tplab gpu run --preset gpt2-small --tp 4 --plan megatron --iters 5
  step plan-cc-sp 45 gpu-bin/tplab gpu run --preset gpt2-small --tp 4 --plan columns-columns --sequence-parallel --iters 5
  step vocab 45 gpu-bin/tplab gpu vocab --tp 4
  step serve 60 gpu-bin/tplab serve --tiny --cuda --gpu h200 --tp 1,2,4 --tokens 24
  step bench 120 gpu-bin/tplab gpu bench --json "$OUT/bench.json"
  step bench-bf16 90 gpu-bin/tplab gpu bench --dtype bf16 --tps 1,4 --json "$OUT/bench-bf16.json"
else
  step bench 120 gpu-bin/kernels-gpu --ignored --nocapture --test-threads=1 bench_report
fi

echo
echo "================ summary ($(( $(date +%s) - T0 ))s)"
{
  printf '%s\n' "${STEPS[@]}"
  echo "--- gpu info"
  grep -E "found|MISSING|GPU [0-9]|ready|unavailable" "$OUT/gpu-info.log" | head -12
  echo "--- GPU tests"
  grep -E "^(test |test result)|PASS|FAIL|panicked" "$OUT/gpu-tests.log" | head -30
  for r in run-f32 run-bf16 run-sp run-gqa vocab; do
    [ -f "$OUT/$r.log" ] && { echo "--- $r"; grep -E "verification|iteration|loss|error" "$OUT/$r.log"; }
  done
  [ -f "$OUT/serve.log" ] && { echo "--- serve"; grep -E "^ +[0-9]+ |error|reference" "$OUT/serve.log"; }
  for b in bench bench-bf16; do
    [ -f "$OUT/$b.log" ] && { echo "--- $b"; grep -E "^ *TP|^ *[0-9]+ +[0-9.]+ |targets|gemm columns|CUDA graph|test result|error" "$OUT/$b.log" | head -24; }
  done
} | tee -a "$SUMMARY"
