#!/usr/bin/env bash
# sextant against Pagefind (npm `pagefind`, which ships its binary) on the same built sites: the
# demo docs and Python 3.11's HTML documentation (Debian's python3.11-doc), in one run.
# Usage: scripts/bench-pagefind.sh   (release CLI; for BENCHMARKS.md)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
cargo build --quiet --release -p sextant-cli
scripts/site.sh >/dev/null
(cd bench && [ -x node_modules/.bin/pagefind ] || npm install --no-audit --no-fund --ignore-scripts --silent)
PYDOC=/usr/share/doc/python3.11/html
if [ ! -d "$PYDOC" ]; then
  echo "bench: installing python3.11-doc for the larger site" >&2
  if [ "$(id -u)" = 0 ]; then apt-get install -y -qq python3.11-doc >/dev/null; else sudo apt-get install -y -qq python3.11-doc >/dev/null; fi
fi
node bench/pagefind.mjs "$CARGO_TARGET_DIR/release/sextant" demo=www/dist/site python="$PYDOC"
