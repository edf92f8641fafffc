#!/usr/bin/env bash
# Builds the `sextant` CLI (dev profile: dependencies at opt-level 3, shared with the tests).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
cargo build --quiet -p sextant-cli
echo "cli: $SEXTANT_BIN"
