#!/usr/bin/env bash
# Indexing in the browser and in Node (issue 11), for BENCHMARKS.md: documents and chunks per
# second for a collection (parse, chunk, embed, write), against Transformers.js embedding the
# same chunks in the same Chromium page; storage per 1,000 chunks; and the research workspace's
# time from dropping a 100-page PDF to its first keyword result and to hybrid results.
# Usage: scripts/bench-collection.sh [documents] [rounds]   (after make wasm)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
DOCS=${1:-150}
ROUNDS=${2:-3}
CORPUS=tests/fixtures/cranfield/corpus.jsonl
scripts/cli.sh >/dev/null
(cd bench && [ -d node_modules ] || npm install --no-audit --no-fund --ignore-scripts --silent)
(cd tests/js && [ -d node_modules ] || npm install --no-audit --no-fund --ignore-scripts --silent)
echo "## node: collection of $DOCS Cranfield documents"
node bench/collection-node.mjs pkg "$CORPUS" "$DOCS" "$SEXTANT_MODEL_DIR" "$ROUNDS"
echo "## headless chromium: collection in OPFS and Transformers.js, same page"
node bench/collection-browser.mjs pkg "$CORPUS" "$DOCS" "$SEXTANT_MODEL_DIR" "$ROUNDS"
echo "## headless chromium: research workspace, a 100-page PDF dropped"
node bench/collection-pdf.mjs "$CORPUS" 100 "$ROUNDS"
