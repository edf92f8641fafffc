#!/usr/bin/env bash
# wasm-bindgen tests of the core compiled to WebAssembly, in Node and in headless Chromium:
# golden embeddings, and parity with the native CLI on a Cranfield bundle the CLI builds here.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"

export SEXTANT_PARITY_DIR="${SEXTANT_PARITY_DIR:-$HOME/.cache/sextant/parity}"
mkdir -p "$SEXTANT_PARITY_DIR"
scripts/cli.sh >/dev/null
# The bundle and expected results depend on the CLI and the corpus: rebuild when either changes.
key=$(cat "$SEXTANT_BIN" tests/fixtures/cranfield/corpus.jsonl tests/fixtures/cranfield/queries.jsonl | sha256sum | cut -d' ' -f1)
if [ "$(cat "$SEXTANT_PARITY_DIR/key" 2>/dev/null)" != "$key" ]; then
  echo "wasm parity: building the Cranfield bundle with the native CLI"
  "$SEXTANT_BIN" build tests/fixtures/cranfield/corpus.jsonl -o "$SEXTANT_PARITY_DIR/cranfield.sxt"
  head -n 25 tests/fixtures/cranfield/queries.jsonl > "$SEXTANT_PARITY_DIR/queries.jsonl"
  : > "$SEXTANT_PARITY_DIR/expected.jsonl.tmp"
  for mode in hybrid dense keyword; do
    "$SEXTANT_BIN" search "$SEXTANT_PARITY_DIR/cranfield.sxt" --queries "$SEXTANT_PARITY_DIR/queries.jsonl" \
      --mode "$mode" -k 10 --json >> "$SEXTANT_PARITY_DIR/expected.jsonl.tmp"
  done
  mv "$SEXTANT_PARITY_DIR/expected.jsonl.tmp" "$SEXTANT_PARITY_DIR/expected.jsonl"
  echo "$key" > "$SEXTANT_PARITY_DIR/key"
fi

export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-900}
echo "wasm tests in Node"
cargo test --target wasm32-unknown-unknown --no-default-features --test wasm_parity
echo "wasm tests in headless Chromium"
WASM_BINDGEN_USE_BROWSER=1 CHROMEDRIVER=${CHROMEDRIVER:-/usr/bin/chromedriver} \
  cargo test --target wasm32-unknown-unknown --no-default-features --test wasm_parity
