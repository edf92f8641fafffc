#!/usr/bin/env bash
# Bundles the Worker (www/worker) with wrangler, offline (`wrangler deploy --dry-run`, exactly
# what a deploy would upload). www/worker/workerd-config.mjs writes the workerd config that
# serves it on loopback. Run scripts/site.sh first.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT/www/worker"
[ -f ../dist/site/sextant/sextant.json ] || { echo "error: no search assets; run scripts/site.sh first" >&2; exit 1; }
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  npm ci --no-audit --no-fund --silent && touch node_modules
fi
# The package is a file: dependency; refresh it so the bundle has the pkg/ just built.
rm -rf node_modules/sextant-search && npm install --no-audit --no-fund --silent --no-save ../../pkg
rm -rf dist
WRANGLER_SEND_METRICS=false WRANGLER_LOG=error CI=1 node_modules/.bin/wrangler deploy --dry-run --outdir dist >/dev/null
wasm=$(cd dist && ls *.wasm)
echo "worker: www/worker/dist ($(stat -c %s dist/index.js) bytes of JS, $(stat -c %s "dist/$wasm") bytes of wasm)"
