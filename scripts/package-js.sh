#!/usr/bin/env bash
# Copies the package's JavaScript, types and README from pkg-template/ into pkg/, and writes
# pkg/package.json with the crate's version. This is the one list of the package's own files
# (package.json `files` adds the wasm-bindgen output); the .wasm and .js files wasm-bindgen wrote
# into pkg/ are left as they are. scripts/build-wasm.sh runs it last; run it alone after editing
# pkg-template/.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"

FILES=(
  errors.js fetching.js chat.js rerank.js graph.js index-files.js core.js browser.js keyword.js encoder.js node.js workerd.js collection.js embed-worker.js research.js memory.js otlp.js
  index.d.ts collection.d.ts research.d.ts memory.d.ts README.md
)
mkdir -p pkg
for f in "${FILES[@]}"; do cp "pkg-template/$f" "pkg/$f"; done
rm -rf pkg/ui
cp -r pkg-template/ui pkg/ui
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
sed "s/\"version\": \"0.0.0\"/\"version\": \"$version\"/" pkg-template/package.json > pkg/package.json
