#!/usr/bin/env bash
# How many partitions of binary codes a dense query reads (layout.probe, issue 24): for each probe
# count, the recall of the exact int8 top 10 in the partitioned index's dense top 10 and the share
# of the codes read (examples/probe_recall.rs), on NPL and Cranfield (../shared/data) and, when
# given (PROBE_SITE=<site>/sextant/index/manifest.*.json, with PROBE_QUERIES, by default the
# Python docs' bench/docs-python/queries.jsonl), a site's built index; how well the binary codes choose the shortlist rescored with int8
# vectors (examples/code_recall.rs: recall of the exact top 10 in the best R by code, the index's
# codes beside other code schemes); then `sextant eval` end to end with the default probe and with
# every partition read.
#   scripts/bench-probe.sh   (= make bench-probe)
#   PROBE_SITE=py/sextant/index/manifest.*.json scripts/bench-probe.sh
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
data=${SEXTANT_DATA:-../shared/data}
cargo build --quiet --release -p sextant-cli --bin sextant
cargo build --quiet --release -p sextant --example probe_recall --example code_recall
bin="$CARGO_TARGET_DIR/release/sextant"
model="$SEXTANT_MODEL_DIR"
work=$(mktemp -d "${TMPDIR:-/tmp}/sextant-probe-XXXXXX")
trap 'rm -rf "$work"' EXIT
for c in npl cranfield; do
  "$bin" build "$data/$c/corpus.jsonl" -o "$work/$c.sxt" >/dev/null
  echo "## $c"
  "$CARGO_TARGET_DIR/release/examples/probe_recall" "$work/$c.sxt" "$data/$c/queries.jsonl" "$model"
  "$CARGO_TARGET_DIR/release/examples/code_recall" "$work/$c.sxt" "$data/$c/queries.jsonl" "$model"
done
if [ -n "${PROBE_SITE:-}" ]; then
  # The manifest's name has its hash: a pattern is expanded here (an assignment does not).
  # shellcheck disable=SC2206
  site=($PROBE_SITE)
  [ -f "${site[0]}" ] || { echo "error: PROBE_SITE=$PROBE_SITE is not a file; name a site's sextant/index/manifest.*.json" >&2; exit 1; }
  queries=${PROBE_QUERIES:-bench/docs-python/queries.jsonl}
  echo "## ${site[0]}"
  "$CARGO_TARGET_DIR/release/examples/probe_recall" "${site[0]}" "$queries" "$model"
  "$CARGO_TARGET_DIR/release/examples/code_recall" "${site[0]}" "$queries" "$model"
fi
printf '[layout]\nprobe = 1000000\n' > "$work/all.toml"
echo "## eval, default probe"
"$bin" eval "$data/npl" "$data/cranfield" --all-modes | grep -A3 '^## mean'
echo "## eval, every partition"
"$bin" eval "$data/npl" "$data/cranfield" --all-modes --config "$work/all.toml" | grep -A3 '^## mean'
