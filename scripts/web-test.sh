#!/usr/bin/env bash
# Browser test of the web edition: builds dist/ (scripts/web-build.sh) unless WEB_TEST_NO_BUILD=1,
# installs playwright-core from web/package-lock.json, then web/test.mjs serves dist/ on
# 127.0.0.1 and drives Debian's /usr/bin/chromium headless (no browser download): the app starts
# without console errors, its screenshot is not blank, a click on "TP=4" changes TP and the split
# drawn. Screenshots land in web/out/.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${WEB_TEST_NO_BUILD:-0}" != 1 ]; then
  scripts/web-build.sh
fi
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  echo "error: no chromium at ${CHROMIUM:-/usr/bin/chromium}: apt-get install chromium (or set CHROMIUM)" >&2
  exit 1
fi
(cd web && npm ci --no-audit --no-fund --silent)
node web/test.mjs
