#!/usr/bin/env bash
# Formatting and clippy with warnings as errors.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
cargo fmt --all -- --check
cargo clippy --quiet --workspace --all-targets -- -D warnings
cargo clippy --quiet --target wasm32-unknown-unknown --no-default-features --features model --lib -- -D warnings
cargo clippy --quiet --target wasm32-unknown-unknown --no-default-features --lib -- -D warnings
cargo clippy --quiet --target wasm32-unknown-unknown --no-default-features --features encoder --lib -- -D warnings
cargo clippy --quiet --target wasm32-unknown-unknown --no-default-features --features collection --lib -- -D warnings
