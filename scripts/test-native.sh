#!/usr/bin/env bash
# Every native test: the core's unit and integration tests and the CLI's end-to-end tests.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
# Every temporary file and browser profile of the run in one folder, removed when it ends (runs
# used to leave hundreds of megabytes in /tmp each).
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/sextant-test-XXXXXX")
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
cargo test --workspace
