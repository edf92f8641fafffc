#!/usr/bin/env bash
# The Worker in workerd over a split index: cold first request, warm /search p50/p95, memory and
# the index files read. Usage: scripts/bench-worker.sh [rounds]   (for BENCHMARKS.md)
#   WORKER_SITE=demo     the demo docs with the Cranfield query texts (default)
#   WORKER_SITE=python   Python 3.11's HTML docs (Debian's python3.11-doc, 530 pages) with the
#                        session benchmark's ten queries (bench/python-queries.jsonl)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
scripts/worker-build.sh >/dev/null
case "${WORKER_SITE:-demo}" in
  demo)
    scripts/site.sh >/dev/null
    node bench/worker.mjs www/dist/site tests/fixtures/cranfield/queries.jsonl "${1:-2}"
    ;;
  python)
    PYDOC=/usr/share/doc/python3.11/html
    [ -d "$PYDOC" ] || { echo "bench-worker: install python3.11-doc first (apt-get install python3.11-doc)" >&2; exit 2; }
    SITE="$(mktemp -d)"
    trap 'rm -rf "$SITE"' EXIT
    cp -rL "$PYDOC/." "$SITE/"
    cargo build --quiet --release -p sextant-cli # 18,000 chunks to embed: not the debug CLI
    "$CARGO_TARGET_DIR/release/sextant" build --site "$SITE" >/dev/null
    node bench/worker.mjs "$SITE" bench/python-queries.jsonl "${1:-2}"
    ;;
  *) echo "bench-worker: unknown WORKER_SITE '${WORKER_SITE}' (demo, python)" >&2; exit 2 ;;
esac
