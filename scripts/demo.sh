#!/usr/bin/env bash
# The demo: sextant's own docs (www/content) built into a static site, indexed with
# `sextant build --site`, served on 127.0.0.1:$PORT (default 8080) with the drop-in search UI.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
scripts/site.sh
exec node www/serve.mjs www/dist/site
