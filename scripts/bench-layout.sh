#!/usr/bin/env bash
# Why format 2's layout defaults: Python 3.11's HTML docs (Debian's python3.11-doc, 530 pages)
# indexed with the defaults and with one [layout] knob changed at a time, and the gzip bytes of
# the index files that the session benchmark's ten queries fetch (bench/index-bytes.mjs: keyword
# then hybrid, k = 10, as the UI runs them). rescore's effect on quality is measured apart
# (examples/quantization.rs, in `make bench`).
# Usage: scripts/bench-layout.sh   (for BENCHMARKS.md; the first build embeds 18,000 chunks, about
# ten minutes on 2 cores, unless the embedding cache has them; the others reuse them)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
PYDOC=/usr/share/doc/python3.11/html
[ -d "$PYDOC" ] || { echo "bench-layout: install python3.11-doc first (apt-get install python3.11-doc)" >&2; exit 2; }
cargo build --quiet --release -p sextant-cli
CLI="$CARGO_TARGET_DIR/release/sextant"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cp -rL "$PYDOC" "$WORK/site"
echo "## $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%Y-%m-%d)"
for knob in "" "rescore = 30" "rescore = 100" "block_chunks = 2" "block_chunks = 8" "block_chunks = 16" \
  "fragment_chunks = 4" "fragment_chunks = 16" "keyword_shard_bytes = 4096" "keyword_shard_bytes = 16384"; do
  printf '[layout]\n%s\n' "$knob" > "$WORK/sextant.toml"
  rm -rf "$WORK/site/sextant"
  "$CLI" build --site "$WORK/site" --config "$WORK/sextant.toml" >/dev/null
  echo "${knob:-defaults}: $(node bench/index-bytes.mjs "$WORK/site" bench/python-queries.jsonl 10)"
done
