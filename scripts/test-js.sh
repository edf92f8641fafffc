#!/usr/bin/env bash
# Tests of the built npm package (pkg/) in Node (node:test) and headless Chromium (playwright-core),
# end-to-end tests of the demo site with the drop-in UI (screenshots in tests/artifacts/), and the
# Worker in workerd.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
# Every temporary file and browser profile of the run in one folder, removed when it ends (runs
# used to leave hundreds of megabytes in /tmp each).
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/sextant-test-XXXXXX")
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
# The Worker test needs the bundled Worker and the Cranfield parity fixtures.
SEXTANT_PARITY_DIR=$(scripts/parity-fixtures.sh)
export SEXTANT_PARITY_DIR
scripts/site.sh >/dev/null
scripts/worker-build.sh
cd tests/js
node --test --test-concurrency=1 static-server.test.mjs package.test.mjs collection.test.mjs research-agent.test.mjs memory.test.mjs otlp.test.mjs rerank.test.mjs graph.test.mjs research.test.mjs research-chat.test.mjs research-workspace.test.mjs archive.test.mjs docs-queries.test.mjs quality.test.mjs split.test.mjs types.test.mjs browser.test.mjs e2e.test.mjs service-worker.test.mjs worker.test.mjs embed.test.mjs multisite.test.mjs worker-r2.test.mjs worker-cold.test.mjs faults.test.mjs
