#!/usr/bin/env bash
# The Cranfield bundle built by the native CLI and the CLI's own results for the first 25
# queries in every mode (`sextant search --json`): what the wasm and Worker parity tests compare
# against. Rebuilt only when the CLI or the corpus changes. Prints the folder.
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
dir="${SEXTANT_PARITY_DIR:-$HOME/.cache/sextant/parity}"
mkdir -p "$dir"
scripts/cli.sh >/dev/null
key=$(cat "$SEXTANT_BIN" tests/fixtures/cranfield/corpus.jsonl tests/fixtures/cranfield/queries.jsonl | sha256sum | cut -d' ' -f1)
if [ "$(cat "$dir/key" 2>/dev/null)" != "$key" ]; then
  echo "parity: building the Cranfield bundle with the native CLI" >&2
  "$SEXTANT_BIN" build tests/fixtures/cranfield/corpus.jsonl -o "$dir/cranfield.sxt" >&2
  head -n 25 tests/fixtures/cranfield/queries.jsonl > "$dir/queries.jsonl"
  : > "$dir/expected.jsonl.tmp"
  for mode in hybrid dense keyword; do
    "$SEXTANT_BIN" search "$dir/cranfield.sxt" --queries "$dir/queries.jsonl" --mode "$mode" -k 10 --json >> "$dir/expected.jsonl.tmp"
  done
  mv "$dir/expected.jsonl.tmp" "$dir/expected.jsonl"
  echo "$key" > "$dir/key"
fi
echo "$dir"
