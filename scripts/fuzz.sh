#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo-fuzz, libFuzzer, a nightly toolchain) of the index readers, the
# document loaders, the chunker, the framing, the query parser, front matter, searches with any
# query, and split-index manifests with the files offered under their names: each target runs for
# SECONDS (default 60), growing fuzz/corpus/<target>/; a crash or timeout lands in
# fuzz/artifacts/<target>/. Commit both: tests/fuzz_corpus.rs replays them in `make test`.
# Prints each target's executions and what it found (for RELIABILITY.md). The target `archive` is
# the research workspace's DOCX check in JavaScript (tests/js/fuzz-archive.mjs: seeded mutations,
# not coverage-guided), 5,000 executions per second of SECONDS.
# Usage: scripts/fuzz.sh [seconds] [target…]
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
SECONDS_EACH=${1:-60}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(index_files loaders chunker framing query front_matter search manifest archive)
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
# Sanitizer builds apart from the ordinary ones.
export CARGO_TARGET_DIR=$HOME/.cache/sextant/fuzz-target

# Seeds: real inputs of each kind (only added when the corpus is empty).
seed() {
  local target=$1
  shift
  mkdir -p "fuzz/corpus/$target"
  if [ -z "$(ls -A "fuzz/corpus/$target")" ]; then
    for f in "$@"; do cp "$f" "fuzz/corpus/$target/seed-$(basename "$f")"; done
  fi
}
seed index_files tests/fixtures/golden-v2.sxt tests/fixtures/golden-v2-fields.sxt tests/fixtures/golden-v2-packs.sxt tests/fixtures/golden-v2-factors.sxt tests/fixtures/golden-v2-layout.sxt tests/fixtures/golden-v1.sxt
seed loaders tests/fixtures/tiny/pages/security.html tests/fixtures/tiny/guide/install.md tests/fixtures/tiny/guide/search.mdx tests/fixtures/tiny/faq.jsonl tests/fixtures/tiny/notes.txt
seed chunker tests/fixtures/tiny/notes.txt tests/fixtures/tiny/guide/install.md
seed framing tests/fixtures/tiny/pages/security.html tests/fixtures/tiny/notes.txt
mkdir -p fuzz/corpus/query
if [ -z "$(ls -A fuzz/corpus/query)" ]; then
  head -n 50 tests/fixtures/docs-queries/queries.jsonl | python3 -c '
import json, sys
for i, line in enumerate(sys.stdin):
    open(f"fuzz/corpus/query/seed-{i}", "w").write(json.loads(line)["text"])'
  printf '"boundary layer" -flutter os.path.join \xe2\x80\x9cdefault_factory\xe2\x80\x9d -"x y' > fuzz/corpus/query/seed-syntax
fi

cd fuzz
for t in "${TARGETS[@]}"; do
  if [ "$t" = archive ]; then
    node ../tests/js/fuzz-archive.mjs $((SECONDS_EACH * 5000))
    continue
  fi
  mkdir -p "artifacts/$t"
  echo "## $t (${SECONDS_EACH} s)"
  before=$(ls "artifacts/$t" | wc -l)
  status=0
  cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="artifacts/$t/" 2> "/tmp/sextant-fuzz-$t.log" || status=$?
  grep -E 'stat::number_of_executed_units|stat::new_units_added' "/tmp/sextant-fuzz-$t.log" || true
  # Keep the smallest corpus with the same coverage (it is committed).
  cargo +nightly fuzz cmin "$t" "corpus/$t" > /dev/null 2>&1 || true
  echo "corpus: $(ls "corpus/$t" | wc -l) inputs; new findings: $(( $(ls "artifacts/$t" | wc -l) - before )); exit $status"
  [ $status -eq 0 ] || tail -n 40 "/tmp/sextant-fuzz-$t.log"
done
