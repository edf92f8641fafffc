#!/usr/bin/env bash
# Installs what the build and tests need, idempotently: the pinned Rust toolchain's components
# and the default model. Safe to run on every CI start.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"

if ! command -v cargo >/dev/null; then
  echo "error: cargo is not installed; install Rust with rustup (https://rustup.rs) and rerun" >&2
  exit 1
fi
# rust-toolchain.toml pins the toolchain and lists its components; this installs them if missing.
rustup show active-toolchain >/dev/null
mkdir -p "$CARGO_TARGET_DIR"
scripts/fetch-model.sh "$SEXTANT_MODEL_DIR"
