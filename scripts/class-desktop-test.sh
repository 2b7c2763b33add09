#!/usr/bin/env bash
# A live class with the teacher on the desktop app: `tplab class --console` under Xvfb with a
# D-Bus session and the AT-SPI bus (scripts/atspi-test.sh's set-up), driven as a screen reader
# drives it (scripts/atspi_press.py), and three phones in headless Chromium
# (web/class-test.mjs with CLASS_TEACHER=desktop): a round, a challenge, the export's CSV.
#
#   scripts/class-desktop-test.sh [path/to/tplab]   (needs dist/ and web/node_modules: run
#                                                    scripts/web-class-test.sh first)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-"${CARGO_TARGET_DIR:-target}/debug/tplab"}
[ -f dist/index.html ] || { echo "class-desktop-test: no dist/: run scripts/web-build.sh" >&2; exit 1; }
[ -d web/node_modules ] || (cd web && npm ci --no-audit --no-fund --silent)
ATSPI_LIMIT_S=${ATSPI_LIMIT_S:-600} ATSPI_COMMAND="CLASS_TEACHER=desktop node web/class-test.mjs" \
  scripts/atspi-test.sh "$BIN"
