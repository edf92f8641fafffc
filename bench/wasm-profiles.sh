#!/usr/bin/env bash
# Size and Node query latency of the wasm build under different opt-levels, one after another
# in one run (its own target dir, so it does not disturb other builds). For BENCHMARKS.md.
# Usage: bench/wasm-profiles.sh [rounds]
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
cd "$SEXTANT_ROOT"
ROUNDS=${1:-2}
export CARGO_TARGET_DIR=${PROFILE_TARGET_DIR:-$HOME/.cache/sextant/target-profiles}
BUNDLE=${BENCH_BUNDLE:-$HOME/.cache/sextant/bench/cranfield.sxt}
OUT=$(mktemp -d)
variant() {
  local name=$1; shift
  cargo build --quiet --target wasm32-unknown-unknown --no-default-features --profile wasm --lib "$@"
  rm -rf "$OUT/$name" && cp -r pkg-template "$OUT/$name"
  wasm-bindgen --target web --remove-name-section --remove-producers-section --out-dir "$OUT/$name" \
    --out-name sextant_wasm "$CARGO_TARGET_DIR/wasm32-unknown-unknown/wasm/sextant.wasm"
  local size gz
  size=$(stat -c %s "$OUT/$name/sextant_wasm_bg.wasm")
  gz=$(gzip -9 -c "$OUT/$name/sextant_wasm_bg.wasm" | wc -c)
  echo "$name: wasm $size bytes, $gz gzip"
  node bench/wasm-node.mjs "$OUT/$name" "$BUNDLE" tests/fixtures/cranfield/queries.jsonl "$SEXTANT_MODEL_DIR" "$ROUNDS"
}
variant "z, hot crates at 3 (shipped)"
variant "s everywhere" --config 'profile.wasm.opt-level="s"' --config 'profile.wasm.package.tract-linalg.opt-level="s"' \
  --config 'profile.wasm.package.sextant.opt-level="s"' --config 'profile.wasm.package.instant-distance.opt-level="s"'
variant "3 everywhere" --config 'profile.wasm.opt-level=3' --config 'profile.wasm.package.tract-linalg.opt-level=3' \
  --config 'profile.wasm.package.sextant.opt-level=3' --config 'profile.wasm.package.instant-distance.opt-level=3'
rm -rf "$OUT"
