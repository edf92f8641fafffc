#!/usr/bin/env bash
# The Cranfield bundle built by the native CLI (passages int8a8, the default) and the CLI's own
# results for the first 25 queries in every mode (`sextant search --json`), with int8 query
# weights (the default: expected.jsonl),
# f32 weights (expected-f32.jsonl) and five-bit layers (expected-int5.jsonl), and by page
# (expected-pages.jsonl): what the wasm and Worker parity tests compare against.
# Rebuilt only when the CLI, this script or the corpus changes. Prints the folder.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
dir="${SEXTANT_PARITY_DIR:-$HOME/.cache/sextant/parity}"
mkdir -p "$dir"
scripts/cli.sh >/dev/null
key=$(cat "$SEXTANT_BIN" scripts/parity-fixtures.sh tests/fixtures/cranfield/corpus.jsonl tests/fixtures/cranfield/queries.jsonl | sha256sum | cut -d' ' -f1)
if [ "$(cat "$dir/key" 2>/dev/null)" != "$key" ]; then
  echo "parity: building the Cranfield bundle with the native CLI" >&2
  "$SEXTANT_BIN" build tests/fixtures/cranfield/corpus.jsonl -o "$dir/cranfield.sxt" >&2
  head -n 25 tests/fixtures/cranfield/queries.jsonl > "$dir/queries.jsonl"
  for weights in int8 f32 int5; do
    out="$dir/expected.jsonl"
    [ "$weights" = int8 ] || out="$dir/expected-$weights.jsonl"
    : > "$out.tmp"
    for mode in hybrid dense keyword; do
      "$SEXTANT_BIN" search "$dir/cranfield.sxt" --queries "$dir/queries.jsonl" --mode "$mode" --weights "$weights" -k 10 --json >> "$out.tmp"
    done
    mv "$out.tmp" "$out"
  done
  # Results by page (BM25 of whole documents): keyword one per document, hybrid pages fused with
  # three sections each at most, as the drop-in UI asks.
  : > "$dir/expected-pages.jsonl.tmp"
  "$SEXTANT_BIN" search "$dir/cranfield.sxt" --queries "$dir/queries.jsonl" --mode keyword --per-document -k 10 --json >> "$dir/expected-pages.jsonl.tmp"
  "$SEXTANT_BIN" search "$dir/cranfield.sxt" --queries "$dir/queries.jsonl" --mode hybrid --fuse-documents true --sub-results 3 -k 10 --json >> "$dir/expected-pages.jsonl.tmp"
  mv "$dir/expected-pages.jsonl.tmp" "$dir/expected-pages.jsonl"
  echo "$key" > "$dir/key"
fi
echo "$dir"
