#!/usr/bin/env bash
# Fields and identifiers, measured (BENCHMARKS.md "Fields, identifiers, phrases, fallback and
# reranking"): Cranfield and the demo docs' queries indexed with each [fields] setting, every mode
# evaluated, each query's metrics kept; then bench/fields-cv.py cross-validates the title weight
# (5 folds, seed 1) and gives each difference a 95% paired-bootstrap interval.
# Usage: scripts/bench-fields.sh   (release build; the demo site must be built: make demo)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
cargo build --quiet --release -p sextant-cli
BIN=$CARGO_TARGET_DIR/release/sextant
DATA=tests/fixtures/cranfield
DOCS=tests/fixtures/docs-queries
SITE=www/dist/site
[ -f "$SITE/index.html" ] || { echo "build the demo site first (make demo)" >&2; exit 1; }
OUT=${BENCH_DIR:-$HOME/.cache/sextant/bench}/fields
mkdir -p "$OUT"
# name title_weight heading_weight embed_context
for setting in "t0h1e0 0 1 false" "t1h1e0 1 1 false" "t2h1e0 2 1 false" "t3h1e0 3 1 false" "t1h1e1 1 1 true" "t2h2e1 2 2 true"; do
  set -- $setting
  name=$1
  printf '[fields]\ntitle_weight = %s\nheading_weight = %s\nembed_context = %s\n' "$2" "$3" "$4" > "$OUT/$name.toml"
  "$BIN" build "$DATA/corpus.jsonl" -o "$OUT/cranfield-$name.sxt" --config "$OUT/$name.toml" > /dev/null
  echo "## cranfield $name (title $2, headings $3, embed context $4)"
  "$BIN" eval "$OUT/cranfield-$name.sxt" --queries "$DATA/queries.jsonl" --qrels "$DATA/qrels.tsv" --all-modes \
    --per-query "$OUT/cranfield-$name.jsonl" | grep -E "^(hybrid|dense|keyword) "
  rm -rf "$OUT/site-$name"
  mkdir -p "$OUT/site-$name"
  (cd "$SITE" && tar cf - --exclude=./sextant --exclude=./sextant-sw.js .) | (cd "$OUT/site-$name" && tar xf -)
  "$BIN" build --site "$OUT/site-$name" --config "$OUT/$name.toml" > /dev/null
  echo "## docs $name"
  "$BIN" eval "$OUT"/site-$name/sextant/index/manifest.*.json --queries "$DOCS/queries.jsonl" --qrels "$DOCS/qrels.tsv" \
    --all-modes --fuse-documents true --per-query "$OUT/docs-$name.jsonl" | grep -E "^(hybrid|dense|keyword) "
done
python3 bench/fields-cv.py "$OUT"
