#!/usr/bin/env bash
# WebAssembly benchmarks, for BENCHMARKS.md: package size (raw, gzip, brotli), cold load and
# per-stage query latency in Node and in headless Chromium, and in the same Chromium run
# Transformers.js embedding the same queries with the same model.onnx (the anchor).
# Usage: scripts/bench-wasm.sh [rounds]   (after make wasm)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
ROUNDS=${1:-3}
BUNDLE=${BENCH_BUNDLE:-$HOME/.cache/sextant/bench/cranfield.sxt}
QUERIES=tests/fixtures/cranfield/queries.jsonl
if [ ! -f "$BUNDLE" ]; then
  scripts/cli.sh >/dev/null
  mkdir -p "$(dirname "$BUNDLE")"
  "$SEXTANT_BIN" build tests/fixtures/cranfield/corpus.jsonl -o "$BUNDLE"
fi
(cd bench && [ -d node_modules ] || npm install --no-audit --no-fund --ignore-scripts --silent)

wasm=pkg/sextant_wasm_bg.wasm
echo "## size"
echo "wasm $(stat -c %s $wasm) bytes, gzip -9 $(gzip -9 -c $wasm | wc -c), brotli -q 11 $(python3 -c 'import brotli,sys; print(len(brotli.compress(open(sys.argv[1],"rb").read(), quality=11)))' $wasm 2>/dev/null || echo '(pip install brotli)')"
echo "## node"
node bench/wasm-node.mjs pkg "$BUNDLE" "$QUERIES" "$SEXTANT_MODEL_DIR" "$ROUNDS"
echo "## headless chromium: sextant and Transformers.js, same page"
node bench/wasm-browser.mjs pkg "$BUNDLE" "$QUERIES" "$SEXTANT_MODEL_DIR" "$ROUNDS"
