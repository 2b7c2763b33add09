#!/usr/bin/env bash
# Builds tplab's web edition into dist/: index.html, tplab.js (wasm-bindgen's glue) and
# tplab_bg.wasm (the app; egui's fonts are inside it). Serve dist/ from any static web server:
#   scripts/web-build.sh && python3 -m http.server -d dist 8080   # then open http://localhost:8080
# A release build without LTO (the workspace's release profile): about 10 minutes from nothing on
# two cores. CARGO_TARGET_DIR is honoured.
set -euo pipefail
cd "$(dirname "$0")/.."

# The CLI must be the very version of the wasm-bindgen crate in Cargo.lock.
WB_VERSION=$(awk '$0 == "name = \"wasm-bindgen\"" { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ -z "$WB_VERSION" ]; then
  echo "error: no wasm-bindgen in Cargo.lock" >&2
  exit 1
fi
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown
fi
if ! wasm-bindgen --version 2>/dev/null | grep -qx "wasm-bindgen $WB_VERSION"; then
  # Only the wasm-bindgen binary, without the test runner's TLS stack. Not --locked: the CLI's
  # own lock file names a webpki-roots release crates.io no longer serves.
  cargo install wasm-bindgen-cli --version "$WB_VERSION" --no-default-features --bin wasm-bindgen
fi

TARGET_DIR=${CARGO_TARGET_DIR:-target}
# --no-default-features: no CUDA (the kernels crate is not even a dependency on wasm32).
cargo build --release --target wasm32-unknown-unknown -p tplab --bin tplab --no-default-features

rm -rf dist
mkdir -p dist
# No function-name section: 1.1 MB that only a debugger reads.
wasm-bindgen --target web --no-typescript --remove-name-section --out-dir dist --out-name tplab \
  "$TARGET_DIR/wasm32-unknown-unknown/release/tplab.wasm"
cp index.html dist/
ls -l dist
