#!/usr/bin/env bash
# Builds the demo documentation site (www/content → www/dist/site) and indexes it with
# `sextant build --site`, which writes the search files into www/dist/site/sextant/.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
(cd www && if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then npm ci --no-audit --no-fund --silent && touch node_modules; fi)
node www/build-site.mjs www/dist/site
"$SEXTANT_BIN" build --site www/dist/site
# The site carries every package module the browser imports (PACKAGE_FILES in site.rs).
node tests/js/site-package.mjs www/dist/site
