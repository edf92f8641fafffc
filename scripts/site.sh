#!/usr/bin/env bash
# Builds the demo documentation site (www/content → www/dist/site) and indexes it with
# `sextant build --site`, which writes the search files into www/dist/site/sextant/.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
(cd www && [ -d node_modules ] || npm ci --no-audit --no-fund --silent)
node www/build-site.mjs www/dist/site
"$SEXTANT_BIN" build --site www/dist/site
