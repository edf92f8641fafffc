#!/usr/bin/env bash
# The Worker in workerd with the demo bundle: cold first request, warm /search p50/p95, memory.
# Usage: scripts/bench-worker.sh [rounds]   (for BENCHMARKS.md)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
scripts/site.sh >/dev/null
scripts/worker-build.sh >/dev/null
node bench/worker.mjs www/dist/site tests/fixtures/cranfield/queries.jsonl "${1:-2}"
