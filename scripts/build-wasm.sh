#!/usr/bin/env bash
# Builds the npm package into pkg/: the core crate for wasm32 (profile `wasm`, +simd128),
# wasm-bindgen (pinned to the crate's exact version), wasm-opt when available, and the JS API,
# types and README from pkg-template/.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"

want=$(scripts/wasm-bindgen-version.sh)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$want" ]; then
  echo "error: wasm-bindgen CLI $want is needed (found ${have:-none}); run scripts/setup.sh or 'cargo install wasm-bindgen-cli --version $want'" >&2
  exit 1
fi

# The full engine (with the model) and the keyword-only one a page loads first.
cargo build --quiet --target wasm32-unknown-unknown --no-default-features --features model --profile wasm --lib
cargo build --quiet --target wasm32-unknown-unknown --no-default-features --profile wasm-keyword --lib
rm -rf pkg
mkdir -p pkg
wasm-bindgen --target web --remove-name-section --remove-producers-section --out-dir pkg --out-name sextant_wasm \
  "$CARGO_TARGET_DIR/wasm32-unknown-unknown/wasm/sextant.wasm"
wasm-bindgen --target web --remove-name-section --remove-producers-section --out-dir pkg --out-name sextant_keyword \
  "$CARGO_TARGET_DIR/wasm32-unknown-unknown/wasm-keyword/sextant.wasm"
# The encoder engine: the full engine's search with sextant's own BERT encoder instead of tract
# (reads the encoder file `sextant build --site` writes): what the search box loads for meaning
# search. Same profile as the full engine, so the kernels and tokenizers are compiled once.
cargo build --quiet --target wasm32-unknown-unknown --no-default-features --features encoder --profile wasm --lib
wasm-bindgen --target web --remove-name-section --remove-producers-section --out-dir pkg --out-name sextant_encoder \
  "$CARGO_TARGET_DIR/wasm32-unknown-unknown/wasm/sextant.wasm"
# The collection engine (the full one plus the document loaders and the index writer) for
# building indexes in the browser. Same profile as the full engine, so tract is compiled once;
# built after the full engine's wasm-bindgen, since both write the same sextant.wasm.
cargo build --quiet --target wasm32-unknown-unknown --no-default-features --features collection --profile wasm --lib
wasm-bindgen --target web --remove-name-section --remove-producers-section --out-dir pkg --out-name sextant_collection \
  "$CARGO_TARGET_DIR/wasm32-unknown-unknown/wasm/sextant.wasm"

# wasm-opt runs only when WASM_OPT names a binaryen wasm-opt: measured on this build it made the
# gzip larger and queries no faster (BENCHMARKS.md), and Debian's binaryen 108 breaks
# wasm-bindgen's externref table.
if [ -n "${WASM_OPT:-}" ]; then
  "$WASM_OPT" -O3 --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue \
    pkg/sextant_wasm_bg.wasm -o pkg/sextant_wasm_bg.opt.wasm
  mv pkg/sextant_wasm_bg.opt.wasm pkg/sextant_wasm_bg.wasm
fi

scripts/package-js.sh
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
size=$(stat -c %s pkg/sextant_wasm_bg.wasm)
gz=$(gzip -9 -c pkg/sextant_wasm_bg.wasm | wc -c)
ksize=$(stat -c %s pkg/sextant_keyword_bg.wasm)
kgz=$(gzip -9 -c pkg/sextant_keyword_bg.wasm | wc -c)
csize=$(stat -c %s pkg/sextant_collection_bg.wasm)
cgz=$(gzip -9 -c pkg/sextant_collection_bg.wasm | wc -c)
esize=$(stat -c %s pkg/sextant_encoder_bg.wasm)
egz=$(gzip -9 -c pkg/sextant_encoder_bg.wasm | wc -c)
echo "pkg: sextant-search $version, wasm $size bytes ($gz gzip), keyword-only wasm $ksize bytes ($kgz gzip), encoder wasm $esize bytes ($egz gzip), collection wasm $csize bytes ($cgz gzip)"
