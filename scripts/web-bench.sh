#!/usr/bin/env bash
# The web edition's download size (wasm + js + html, raw and gzip) and time to first frame in
# headless chromium (median of WEB_BENCH_RUNS=5 cold starts). Builds dist/ first unless
# WEB_BENCH_NO_BUILD=1.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${WEB_BENCH_NO_BUILD:-0}" != 1 ]; then
  scripts/web-build.sh
fi
(cd web && npm ci --no-audit --no-fund --silent)
node web/bench.mjs
