#!/usr/bin/env bash
# Cost of hostile input, each beside normal input of the same size as its anchor, all in one run:
# loading and chunking (release build, the real tokenizer, no embedding), and reading an LLM event
# stream whose answer comes as one 20 MB line against the same answer in 20,000 events.
# Usage: scripts/bench-adversarial.sh   (= make bench-adversarial; results for BENCHMARKS.md)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
cargo build --quiet --release --example bench_adversarial
echo "## machine"
echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%Y-%m-%d)"
echo "## indexing (examples/bench_adversarial.rs)"
"$CARGO_TARGET_DIR/release/examples/bench_adversarial" "$SEXTANT_MODEL_DIR" tests/fixtures/cranfield/corpus.jsonl
echo "## event stream (bench/sse-line.mjs)"
node bench/sse-line.mjs "$SEXTANT_ROOT/pkg"
