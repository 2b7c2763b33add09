#!/usr/bin/env bash
# Builds what scripts/gpu-check.sh runs on the GPU machine (which has no cargo and no network):
# the release `tplab` binary and the release test binaries of tplab-kernels, stripped, in
# ./gpu-bin/ (git-ignored; carry it to the device: `carry: ["gpu-bin"]`).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== building tplab (release)"
cargo build --release -p tplab

echo "== building tplab-kernels test binaries (release, not run)"
cargo test -p tplab-kernels --release --no-run --message-format=json >target/gpu-build-tests.json

rm -rf gpu-bin
mkdir -p gpu-bin
cp target/release/tplab gpu-bin/tplab
# One executable per test target: the unit tests (lib), tests/gpu.rs and tests/nvrtc.rs.
python3 - <<'PY'
import json, shutil
names = {"lib": "kernels-unit", "gpu": "kernels-gpu", "nvrtc": "kernels-nvrtc"}
found = set()
for line in open("target/gpu-build-tests.json"):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    if not m["package_id"].split("#")[0].endswith("kernels") and "tplab-kernels" not in m["package_id"]:
        continue
    t = m["target"]["name"]
    key = "lib" if "lib" in m["target"]["kind"] else t
    if key in names:
        shutil.copy(m["executable"], "gpu-bin/" + names[key])
        found.add(names[key])
missing = set(names.values()) - found
if missing:
    raise SystemExit("test binaries not found: %s" % sorted(missing))
PY
strip gpu-bin/* 2>/dev/null || true
chmod +x gpu-bin/*

echo "== gpu-bin/ (the device carry limit is 64 MiB for the whole tree)"
ls -l gpu-bin
total_kib=$(du -sk gpu-bin | cut -f1)
echo "total: ${total_kib} KiB"
tree_kib=$(git ls-files -z --cached --others --exclude-standard | xargs -0 du -ck 2>/dev/null | tail -1 | cut -f1)
echo "working tree that travels: ${tree_kib} KiB; with gpu-bin: $((tree_kib + total_kib)) KiB (limit 65536)"
if [ $((tree_kib + total_kib)) -gt 60000 ]; then
  echo "WARNING: close to or over the device's 64 MiB limit for the tree plus carried paths" >&2
fi
echo "== shared libraries tplab needs (must exist on the device image too):"
ldd gpu-bin/tplab || true
