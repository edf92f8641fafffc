#!/usr/bin/env bash
# The Worker in workerd over a split index: cold first request, warm /search p50/p95, memory and
# the index files read; then the Worker under load (bench/worker-load.mjs): 50 concurrent clients
# for 60 s over the Cranfield index, mixed /search, /context and /mcp, after a one-client anchor
# phase; it fails on any 5xx or isolate memory at 128 MB.
# Usage: scripts/bench-worker.sh [rounds]   (for BENCHMARKS.md)
#   WORKER_SITE=demo     the demo docs with the Cranfield query texts (default)
#   WORKER_SITE=python   Python 3.11's HTML docs (Debian's python3.11-doc, 530 pages) with the
#                        session benchmark's ten queries (bench/python-queries.jsonl)
#   WORKER_SITE=/path/to/site  a site already built with `sextant build --site` (or merged from
#                        shards: rust-doc), with WORKER_QUERIES=file.jsonl (default
#                        bench/python-queries.jsonl)
#   WORKER_WEIGHTS="int8 f32" and WORKER_FILES="assets r2": what bench/worker.mjs measures
#   WORKER_BENCH=latency|load|all (default all); WORKER_LOAD_SECONDS (60), WORKER_LOAD_CLIENTS (50),
#   SEED (the load's request mix; printed)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
scripts/worker-build.sh >/dev/null
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/sextant-bench-XXXXXX")
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
if [ "${WORKER_BENCH:-all}" != latency ]; then
  SEXTANT_PARITY_DIR=$(scripts/parity-fixtures.sh)
  assets=$(SEXTANT_PARITY_DIR="$SEXTANT_PARITY_DIR" node --input-type=module -e \
    "import { cranfieldAssets } from './tests/js/assets.mjs'; console.log(cranfieldAssets(process.env.SEXTANT_PARITY_DIR));")
  node --experimental-websocket --no-warnings bench/worker-load.mjs "$assets" tests/fixtures/cranfield/queries.jsonl \
    "${WORKER_LOAD_SECONDS:-60}" "${WORKER_LOAD_CLIENTS:-50}"
fi
[ "${WORKER_BENCH:-all}" = load ] && exit 0
case "${WORKER_SITE:-demo}" in
  demo)
    scripts/site.sh >/dev/null
    node --experimental-websocket --no-warnings bench/worker.mjs www/dist/site tests/fixtures/cranfield/queries.jsonl "${1:-2}"
    ;;
  python)
    PYDOC=/usr/share/doc/python3.11/html
    [ -d "$PYDOC" ] || { echo "bench-worker: install python3.11-doc first (apt-get install python3.11-doc)" >&2; exit 2; }
    SITE="$(mktemp -d)"
    cp -rL "$PYDOC/." "$SITE/"
    cargo build --quiet --release -p sextant-cli # 18,000 chunks to embed: not the debug CLI
    "$CARGO_TARGET_DIR/release/sextant" build --site "$SITE" >/dev/null
    node --experimental-websocket --no-warnings bench/worker.mjs "$SITE" bench/python-queries.jsonl "${1:-2}"
    ;;
  *)
    [ -f "$WORKER_SITE/sextant/sextant.json" ] || { echo "bench-worker: WORKER_SITE '${WORKER_SITE}' is neither demo, python nor a site built with \`sextant build --site\`" >&2; exit 2; }
    node --experimental-websocket --no-warnings bench/worker.mjs "$WORKER_SITE" "${WORKER_QUERIES:-bench/python-queries.jsonl}" "${1:-2}"
    ;;
esac
