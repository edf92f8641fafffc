#!/usr/bin/env bash
# Indexes the sample docs in www/content and runs a few searches against the bundle.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
mkdir -p www/dist
"$SEXTANT_BIN" build www/content -o www/dist/docs.sxt
for query in "what stops prompt injection" "bundle file layout and checksums" "how do I index a folder of markdown"; do
  echo
  echo "\$ sextant search www/dist/docs.sxt \"$query\" -k 3"
  "$SEXTANT_BIN" search www/dist/docs.sxt "$query" -k 3
done
