#!/usr/bin/env bash
# Every native test: the core's unit and integration tests and the CLI's end-to-end tests.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
cargo test --workspace
