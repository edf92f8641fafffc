#!/usr/bin/env bash
# Tests of the built npm package (pkg/) in Node (node:test) and headless Chromium (playwright-core),
# and end-to-end tests of the demo site with the drop-in UI (screenshots in tests/artifacts/).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT/tests/js"
node --test --test-concurrency=1 package.test.mjs browser.test.mjs e2e.test.mjs
