#!/usr/bin/env bash
# A site built in N shares (N = 2 and 4) against one machine's build of it, side by side in one
# run (BENCHMARKS.md, issue 24): every build cold (--no-cache), each shard one after the other
# with all of this machine's cores (the time one of N machines would take), then the merge, and
# the merged files compared byte for byte with the single build's.
#   scripts/bench-shards.sh [SITE, default /usr/share/doc/python3.11/html]   (= make bench-shards)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
cargo build --quiet --release -p sextant-cli
bin="$CARGO_TARGET_DIR/release/sextant"
site=${1:-/usr/share/doc/python3.11/html}
work=$(mktemp -d "${TMPDIR:-/tmp}/sextant-shards-XXXXXX")
trap 'rm -rf "$work"' EXIT
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
run() { local start; start=$(date +%s%N); "$@" >/dev/null; ms_since "$start"; }
cp -rL "$site" "$work/single"
echo "single build: $(run "$bin" build --site "$work/single" --no-cache) ms"
for n in 2 4; do
  cp -rL "$site" "$work/n$n"
  for i in $(seq 0 $((n - 1))); do
    echo "N=$n shard $i/$n: $(run "$bin" build --site "$work/n$n" --no-cache --shard "$i/$n" --partial "$work/p$n-$i.sxs") ms"
  done
  echo "N=$n merge: $(run "$bin" merge --site "$work/n$n" "$work"/p$n-*.sxs) ms"
  if diff -r "$work/single/sextant" "$work/n$n/sextant" >/dev/null; then
    echo "N=$n: every file of the merged build is byte-identical to the single build's"
  else
    echo "N=$n: the merged build DIFFERS from the single build"; exit 1
  fi
done
