#!/usr/bin/env bash
# Tests of the built npm package (pkg/): Node (node:test) and headless Chromium (playwright-core).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT/tests/js"
node --test --test-concurrency=1 package.test.mjs browser.test.mjs
