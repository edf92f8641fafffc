#!/usr/bin/env bash
# Packs, pages and partitioned codes (issue 24, format 2.4) against the anchor's layout (format
# 2.3, every object a file and named in the manifest, every code read by a dense query), side by
# side in one run on one site: files a host must serve, the largest, the manifest (gzip), and the
# index bytes the session benchmark's ten queries fetch (bench/index-bytes.mjs: keyword then
# hybrid, k = 10; whole files gzipped, pack ranges as stored), each read by this tree's package.
# The probe count's recall is measured apart (examples/probe_recall.rs, make bench-probe).
#   scripts/bench-packs.sh [ANCHOR_COMMIT [SITE]]   (= make bench-packs; needs the embedding
#   cache warm for the site, or about ten minutes a build for the Python docs)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
anchor=${1:-eff5504e}
site=${2:-/usr/share/doc/python3.11/html}
work=$(mktemp -d "${TMPDIR:-/tmp}/sextant-packs-XXXXXX")
trap 'git worktree remove --force "$work/anchor" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
# The anchor's CLI, built in its own worktree beside this tree's (the same target dir: only the
# workspace's own crates compile again), then this tree's again.
git worktree add --detach "$work/anchor" "$anchor" >/dev/null 2>&1
(cd "$work/anchor" && cargo build --quiet --release -p sextant-cli)
cp "$CARGO_TARGET_DIR/release/sextant" "$work/sextant-anchor"
cargo build --quiet --release -p sextant-cli
bin="$CARGO_TARGET_DIR/release/sextant"
echo "## $(nproc) cores, $(date -u +%Y-%m-%d), anchor $anchor, site $site"
measure() { # name, CLI, config
  local dir="$work/$1"
  cp -rL "$site" "$dir"
  printf '%s\n' "$3" > "$work/$1.toml"
  "$2" build --site "$dir" --config "$work/$1.toml" >/dev/null
  local index manifest
  manifest=$(ls "$dir"/sextant/index/manifest.*.json)
  index=$(dirname "$manifest")
  echo "$1: files $(ls "$index" | grep -vc '^manifest\.') largest $(ls -S "$index" | head -1 | xargs -I{} stat -c %s "$index/{}") bytes $(du -sb "$index" | cut -f1) manifest_gzip $(gzip -9 -c "$manifest" | wc -c)"
  echo "$1: $(node bench/index-bytes.mjs "$dir" bench/python-queries.jsonl 10)"
}
measure anchor "$work/sextant-anchor" ""
measure packs "$bin" ""
measure files "$bin" $'[layout]\npack_bytes = 0'
measure every-code "$bin" $'[layout]\nprobe = 1000000'
