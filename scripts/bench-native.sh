#!/usr/bin/env bash
# Native benchmarks on Cranfield, all in one run (release build):
#   cold build time and throughput, index bytes per kind of file, nDCG@10 / MRR@10 / Recall@100
#   per mode, the quantized index against the f32 vectors it comes from (quality and candidate
#   recall), per-stage query latency, and onnxruntime embedding the same queries as the anchor
#   for embedding speed.
# Usage: scripts/bench-native.sh [rounds]   (results for BENCHMARKS.md)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
ROUNDS=${1:-3}
DATA=tests/fixtures/cranfield
OUT=${BENCH_DIR:-$HOME/.cache/sextant/bench}
mkdir -p "$OUT"
cargo build --quiet --release -p sextant-cli
cargo build --quiet --release --example bench_native --example quantization
BIN=$CARGO_TARGET_DIR/release/sextant

echo "## machine"
echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%Y-%m-%d)"

echo "## build (sextant build $DATA/corpus.jsonl)"
"$BIN" build "$DATA/corpus.jsonl" -o "$OUT/cranfield.sxt" --no-cache --json | tee "$OUT/build.json"

echo "## quality (sextant eval --all-modes)"
"$BIN" eval "$OUT/cranfield.sxt" --queries "$DATA/queries.jsonl" --qrels "$DATA/qrels.tsv" --all-modes

echo "## quantized against f32 (examples/quantization.rs)"
"$CARGO_TARGET_DIR/release/examples/quantization" "$DATA/corpus.jsonl" "$DATA/queries.jsonl" "$DATA/qrels.tsv" "$SEXTANT_MODEL_DIR"

echo "## query latency (examples/bench_native.rs, $ROUNDS rounds)"
"$CARGO_TARGET_DIR/release/examples/bench_native" "$OUT/cranfield.sxt" "$DATA/queries.jsonl" "$SEXTANT_MODEL_DIR" "$ROUNDS"

echo "## anchor: onnxruntime embedding the same queries"
if python3 -c "import onnxruntime, tokenizers, numpy" 2>/dev/null; then
  python3 scripts/bench-onnxruntime.py "$DATA/queries.jsonl" "$SEXTANT_MODEL_DIR" "$ROUNDS"
else
  echo "skipped: pip install onnxruntime tokenizers numpy"
fi
