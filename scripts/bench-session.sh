#!/usr/bin/env bash
# sextant against Pagefind over a 10-query visitor session (bench/pagefind-session.mjs): each
# engine's drop-in UI in headless Chromium, gzip-compressed like a real host, on loopback and on
# an emulated phone connection (10 Mbit/s down, 5 up, 40 ms). Sites: the demo docs and Python
# 3.11's HTML documentation (Debian's python3.11-doc); on request (SESSION_SITES), python-sections:
# the same docs with a `section` filter on every page (bench/sectioned-site.py), searched with
# `section: library` ticked after the first query.
# Usage: scripts/bench-session.sh   (release CLI; for BENCHMARKS.md)
#   SESSION_SITES="demo"            the sites to run (default: demo python; also python-sections)
#   SESSION_SEXTANT=path/to/sextant  use this CLI instead of building the release one
#   SESSION_TYPING_MS=100           a delay between keystrokes (default 0)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
SITES="${SESSION_SITES:-demo python}"
CLI="${SESSION_SEXTANT:-$CARGO_TARGET_DIR/release/sextant}"
[ -n "${SESSION_SEXTANT:-}" ] || cargo build --quiet --release -p sextant-cli
(cd bench && [ -x node_modules/.bin/pagefind ] || npm install --no-audit --no-fund --ignore-scripts --silent)
(cd tests/js && [ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund --silent)
ARGS=()
DEMO=""
SECTIONS=""
trap '[ -z "$DEMO" ] || rm -rf "$DEMO"; [ -z "$SECTIONS" ] || rm -rf "$SECTIONS"' EXIT
PYDOC=/usr/share/doc/python3.11/html
python_docs() {
  if [ ! -d "$PYDOC" ]; then
    echo "bench: installing python3.11-doc for the larger site" >&2
    if [ "$(id -u)" = 0 ]; then apt-get install -y -qq python3.11-doc >/dev/null; else sudo apt-get install -y -qq python3.11-doc >/dev/null; fi
  fi
}
for site in $SITES; do
  case "$site" in
    demo)
      (cd www && if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then npm ci --no-audit --no-fund --silent && touch node_modules; fi)
      DEMO="$(mktemp -d)"
      node www/build-site.mjs "$DEMO" >/dev/null
      ARGS+=("demo=$DEMO")
      ;;
    python)
      python_docs
      ARGS+=("python=$PYDOC")
      ;;
    python-sections)
      python_docs
      SECTIONS="$(mktemp -d)"
      python3 bench/sectioned-site.py "$PYDOC" "$SECTIONS/site" >/dev/null
      ARGS+=("python-sections=$SECTIONS/site")
      ;;
    *) echo "bench-session: unknown site '$site' (demo, python, python-sections)" >&2; exit 2 ;;
  esac
done
node bench/pagefind-session.mjs "$CLI" "${ARGS[@]}"
