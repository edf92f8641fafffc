#!/usr/bin/env bash
# wasm-bindgen tests of the core compiled to WebAssembly, in Node and in headless Chromium:
# golden embeddings, and parity with the native CLI on a Cranfield bundle the CLI builds here.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
# Every temporary file and browser profile of the run in one folder, removed when it ends (runs
# used to leave hundreds of megabytes in /tmp each).
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/sextant-test-XXXXXX")
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT

SEXTANT_PARITY_DIR=$(scripts/parity-fixtures.sh)
export SEXTANT_PARITY_DIR

export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-900}
echo "wasm tests in Node"
cargo test --target wasm32-unknown-unknown --no-default-features --features model --test wasm_parity
echo "wasm tests in headless Chromium"
# webdriver.json (read by the runner from this folder) gives chromedriver a 15-minute script
# timeout: the runner reads the page's output with a synchronous script, which waits while a test
# holds the main thread (the model embedding passages), and chromedriver's default 30 s failed CI
# on a busy machine.
WASM_BINDGEN_USE_BROWSER=1 CHROMEDRIVER=${CHROMEDRIVER:-/usr/bin/chromedriver} \
  cargo test --target wasm32-unknown-unknown --no-default-features --features model --test wasm_parity
