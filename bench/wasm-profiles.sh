#!/usr/bin/env bash
# Size and Node query latency of the wasm build under different opt-levels (and with wasm-opt),
# for BENCHMARKS.md. Builds each variant once into ~/.cache/sextant/wasm-variants (its own
# target dir, so other builds are not disturbed), then measures all of them in one run,
# interleaved round by round so machine noise hits every variant alike.
# Usage: bench/wasm-profiles.sh [rounds]
set -euo pipefail
source "$(dirname "$0")/../scripts/env.sh"
cd "$SEXTANT_ROOT"
ROUNDS=${1:-3}
export CARGO_TARGET_DIR=${PROFILE_TARGET_DIR:-$HOME/.cache/sextant/target-profiles}
VARIANTS=$HOME/.cache/sextant/wasm-variants
BUNDLE=${BENCH_BUNDLE:-$HOME/.cache/sextant/bench/cranfield.sxt}
WASM_OPT=${WASM_OPT:-$SEXTANT_ROOT/bench/node_modules/.bin/wasm-opt}
mkdir -p "$VARIANTS"

build() {
  local name=$1; shift
  [ -f "$VARIANTS/$name/sextant_wasm_bg.wasm" ] && return
  cargo build --quiet --target wasm32-unknown-unknown --no-default-features --profile wasm --lib "$@"
  rm -rf "$VARIANTS/$name" && cp -r pkg-template "$VARIANTS/$name"
  wasm-bindgen --target web --remove-name-section --remove-producers-section --out-dir "$VARIANTS/$name" \
    --out-name sextant_wasm "$CARGO_TARGET_DIR/wasm32-unknown-unknown/wasm/sextant.wasm"
}
all() { local l=$1; for p in tract-linalg sextant instant-distance; do echo --config "profile.wasm.package.$p.opt-level=$l"; done; }
build z-hot3
build s $(all '"s"') --config 'profile.wasm.opt-level="s"'
build o3 $(all 3) --config 'profile.wasm.opt-level=3'
build z-hot3-core3 --config 'profile.wasm.package.tract-core.opt-level=3'
build z-hot3-core-s --config 'profile.wasm.package.tract-core.opt-level="s"'
build z-hot3-data3 --config 'profile.wasm.package.tract-data.opt-level=3'
build z-hot3-relaxed-simd --config 'target.wasm32-unknown-unknown.rustflags=["-C", "target-feature=+simd128,+relaxed-simd", "--cfg", "getrandom_backend=\"wasm_js\""]'
if [ -x "$WASM_OPT" ] && [ ! -f "$VARIANTS/z-hot3-wasmopt-O3/sextant_wasm_bg.wasm" ]; then
  cp -r "$VARIANTS/z-hot3" "$VARIANTS/z-hot3-wasmopt-O3"
  "$WASM_OPT" -O3 --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue \
    "$VARIANTS/z-hot3/sextant_wasm_bg.wasm" -o "$VARIANTS/z-hot3-wasmopt-O3/sextant_wasm_bg.wasm"
fi
names=$(ls "$VARIANTS")
for name in $names; do
  w="$VARIANTS/$name/sextant_wasm_bg.wasm"
  echo "$name: wasm $(stat -c %s "$w") bytes, $(gzip -9 -c "$w" | wc -c) gzip"
done
for round in $(seq 1 "$ROUNDS"); do
  for name in $names; do
    echo -n "$name round $round: "
    flags=(); [[ $name == *relaxed* ]] && flags=(--experimental-wasm-relaxed-simd) # not on by default in Node 20
    node "${flags[@]}" bench/wasm-node.mjs "$VARIANTS/$name" "$BUNDLE" tests/fixtures/cranfield/queries.jsonl "$SEXTANT_MODEL_DIR" 1
  done
done
