#!/usr/bin/env bash
# `make worker`: builds what the Worker needs (demo bundle included) and serves it in workerd on
# 127.0.0.1:$PORT (default 8787). Try: curl 'http://127.0.0.1:8787/search?q=bundle+format'
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
scripts/site.sh
scripts/worker-build.sh
PORT=${PORT:-8787}
export CORS_ORIGINS=${CORS_ORIGINS:-*}
echo "sextant worker: http://127.0.0.1:$PORT/healthz  (Ctrl-C to stop)"
config=$(node www/worker/workerd-config.mjs www/dist/site "127.0.0.1:$PORT")
exec www/worker/node_modules/.bin/workerd serve "$config"
