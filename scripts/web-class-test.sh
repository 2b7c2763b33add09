#!/usr/bin/env bash
# Browser test of a live class: builds dist/ (scripts/web-build.sh) unless WEB_TEST_NO_BUILD=1
# and the desktop binary (the class server), installs playwright-core from web/package-lock.json,
# then web/class-test.mjs starts `tplab class` on 127.0.0.1 and drives the teacher's console and
# three phones in Debian's headless /usr/bin/chromium through a round and a design-lab challenge,
# and checks the export's CSV. Screenshots land in web/out/.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${WEB_TEST_NO_BUILD:-0}" != 1 ]; then
  scripts/web-build.sh
  cargo build -p tplab --bin tplab --no-default-features
fi
TARGET_DIR=${CARGO_TARGET_DIR:-target}
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  echo "error: no chromium at ${CHROMIUM:-/usr/bin/chromium}: apt-get install chromium (or set CHROMIUM)" >&2
  exit 1
fi
(cd web && npm ci --no-audit --no-fund --silent)
TPLAB_BIN=${TPLAB_BIN:-$TARGET_DIR/debug/tplab} node web/class-test.mjs
