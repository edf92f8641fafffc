#!/usr/bin/env bash
# Debian's rust-doc (the Rust standard library's API docs and the books: 32,101 HTML pages) end
# to end, against Pagefind 1.6 on the same folder (BENCHMARKS.md, issue 24): the site built in N
# shards one after the other (each the time one of N machines takes; a shard already written is
# kept, so an interrupted run resumes), merged, checked byte for byte against a single build from
# the embedding cache the shards filled, and indexed by Pagefind; `/usr/bin/time -v` gives each
# step's wall time and peak RSS. Then the 10-query Chromium session on both sites
# (bench/pagefind-session.mjs, bench/rust-queries.jsonl) and the Worker in workerd from the
# static assets and from R2 (bench/worker.mjs).
#   scripts/bench-rustdoc.sh   (= make bench-rustdoc; about 100 minutes of embedding on 2 cores)
#   RUSTDOC_WORK=dir   where the site copies, partials and logs go (default ~/.cache/sextant/rustdoc)
#   RUSTDOC_SHARDS=N   shards (default 16); RUSTDOC_STEPS="build session worker probe" (default
#   all; probe: where a session's index bytes go by object kind at probe 8/16/32, examples/
#   session_bytes, and the dense recall of the exact int8 top 10 by probe, examples/probe_recall)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
cargo build --quiet --release -p sextant-cli
bin="$CARGO_TARGET_DIR/release/sextant"
work=${RUSTDOC_WORK:-$HOME/.cache/sextant/rustdoc}
n=${RUSTDOC_SHARDS:-16}
steps=${RUSTDOC_STEPS:-build session worker probe}
mkdir -p "$work/parts"
(cd bench && [ -x node_modules/.bin/pagefind ] || npm install --no-audit --no-fund --ignore-scripts --silent)

# The package's HTML, links followed (Debian links shared files to other packages' copies).
if [ ! -d "$work/pristine" ]; then
  (cd "$work" && rm -f rust-doc_*.deb && apt-get download rust-doc >/dev/null)
  rm -rf "$work/pkg" && dpkg-deb -x "$work"/rust-doc_*.deb "$work/pkg"
  # Its links into packages not installed here (MathJax, fonts) lead nowhere: dropped.
  find -L "$work/pkg/usr/share/doc/rust-doc/html" -type l -delete
  cp -rL "$work/pkg/usr/share/doc/rust-doc/html" "$work/pristine.tmp" && mv "$work/pristine.tmp" "$work/pristine"
fi
echo "rust-doc: $(find "$work/pristine" -name '*.html' | wc -l) HTML pages, $(du -sh "$work/pristine" | cut -f1)"

# `/usr/bin/time -v`'s wall time and peak RSS of a step's log.
timing() { awk -F': ' '/Elapsed \(wall/ {w=$2} /Maximum resident/ {printf "%s wall, %.0f MB peak RSS", w, $2/1024} END {}' "$1"; }
fresh() { rm -rf "$work/$1" && cp -r "$work/pristine" "$work/$1"; }

if [[ " $steps " == *" build "* ]]; then
  [ -d "$work/sextant-site" ] || fresh sextant-site
  for i in $(seq 0 $((n - 1))); do
    part="$work/parts/$i-of-$n.part"
    [ -f "$part" ] && { echo "shard $i/$n: kept ($(timing "$part.time"))"; continue; }
    /usr/bin/time -v "$bin" build --site "$work/sextant-site" --shard "$i/$n" --partial "$part.tmp" --json \
      >"$part.json" 2>"$part.time"
    mv "$part.tmp" "$part"
    echo "shard $i/$n: $(timing "$part.time")"
  done
  /usr/bin/time -v "$bin" merge --site "$work/sextant-site" $(ls "$work"/parts/*-of-"$n".part | sort -V) --json \
    >"$work/merge.json" 2>"$work/merge.time"
  echo "merge: $(timing "$work/merge.time")"
  fresh single
  /usr/bin/time -v "$bin" build --site "$work/single" --json >"$work/single.json" 2>"$work/single.time"
  echo "single build from the embedding cache: $(timing "$work/single.time")"
  if diff -r "$work/single/sextant" "$work/sextant-site/sextant" >/dev/null; then
    echo "merged: every file byte-identical to the single build's"
  else
    echo "merged: DIFFERS from the single build"; exit 1
  fi
  rm -rf "$work/single"
  fresh pagefind-site
  /usr/bin/time -v bench/node_modules/.bin/pagefind --site "$work/pagefind-site" >"$work/pagefind.out" 2>"$work/pagefind.time"
  echo "Pagefind: $(grep -o 'Indexed [0-9]* pages' "$work/pagefind.out"), $(timing "$work/pagefind.time")"
  for engine in sextant pagefind; do
    folder="$work/$engine-site/$engine"
    largest=$(find "$folder" -type f -printf '%s\n' | sort -n | tail -1)
    echo "$engine: $(find "$folder" -type f | wc -l) files, $(du -sb "$folder" | cut -f1) bytes, largest $largest bytes"
  done
  echo "sextant index: $(ls "$work/sextant-site/sextant/index" | wc -l) files; manifest $(gzip -c "$work"/sextant-site/sextant/index/manifest.*.json | wc -c) bytes gzip"
fi
if [[ " $steps " == *" session "* ]]; then
  (cd tests/js && [ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund --silent)
  node bench/pagefind-session.mjs "$bin" "rust=$work/sextant-site,$work/pagefind-site"
fi
if [[ " $steps " == *" worker "* ]]; then
  WORKER_BENCH=latency WORKER_SITE="$work/sextant-site" WORKER_QUERIES=bench/rust-queries.jsonl \
    WORKER_WEIGHTS=int8 WORKER_FILES="assets r2" scripts/bench-worker.sh 5
fi
if [[ " $steps " == *" probe "* ]]; then
  manifest=$(ls "$work"/sextant-site/sextant/index/manifest.*.json)
  for probe in 8 16 32; do
    cargo run --quiet --release --example session_bytes -- "$manifest" bench/rust-queries.jsonl "$SEXTANT_MODEL_DIR" "$probe" | tail -1
  done
  cargo run --quiet --release --example probe_recall -- "$manifest" bench/rust-queries.jsonl "$SEXTANT_MODEL_DIR"
fi
