#!/usr/bin/env bash
# Installs what the build and tests need, idempotently (safe on every CI start):
#   Rust components and the wasm32 target, the wasm-bindgen CLI pinned to Cargo.lock's version,
#   Debian's chromium and chromium-driver, the npm packages of the JS tests, and the model.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"

need() { command -v "$1" >/dev/null 2>&1; }
if ! need cargo; then
  echo "error: cargo is not installed; install Rust with rustup (https://rustup.rs) and rerun" >&2
  exit 1
fi
# rust-toolchain.toml pins the toolchain; make sure it and the wasm target are installed.
rustup show active-toolchain >/dev/null
rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
mkdir -p "$CARGO_TARGET_DIR"

want=$(scripts/wasm-bindgen-version.sh)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$want" ]; then
  echo "setup: installing wasm-bindgen-cli $want"
  cargo install --quiet wasm-bindgen-cli --version "$want"
fi

apt_missing=()
for p in chromium chromium-driver; do
  dpkg -s "$p" >/dev/null 2>&1 || apt_missing+=("$p")
done
if [ ${#apt_missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; elif need sudo; then SUDO="sudo"; else
    echo "error: install ${apt_missing[*]} (apt-get install ${apt_missing[*]}) and rerun" >&2
    exit 1
  fi
  echo "setup: apt-get install ${apt_missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${apt_missing[@]}" >/dev/null
fi

if ! need node || ! need npm; then
  echo "error: Node.js 20+ and npm are needed for the package tests; install them and rerun" >&2
  exit 1
fi
for dir in tests/js www; do
  (cd "$dir" && if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
    npm ci --no-audit --no-fund --silent && touch node_modules
  fi)
done

scripts/fetch-model.sh "$SEXTANT_MODEL_DIR"
