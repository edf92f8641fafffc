#!/usr/bin/env bash
# Builds the `sextant` CLI (dev profile: dependencies at opt-level 3, shared with the tests).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
if [ -n "${SEXTANT_PREBUILT_BIN:-}" ]; then
  [ -x "$SEXTANT_PREBUILT_BIN" ] || { echo "error: SEXTANT_PREBUILT_BIN=$SEXTANT_PREBUILT_BIN is not an executable" >&2; exit 1; }
  echo "cli: $SEXTANT_BIN (prebuilt)"
  exit 0
fi
cargo build --quiet -p sextant-cli
echo "cli: $SEXTANT_BIN"
