#!/usr/bin/env bash
# Build speed on Python 3.11's HTML docs (Debian's python3.11-doc, 530 pages), side by side in
# one run: a full cold `sextant build --site` by the anchor commit (before index format 2 and the
# embedding cache; built from a git worktree into its own target dir) and by this tree, then this
# tree's rebuild after one page is edited, and with nothing changed.
# Usage: scripts/bench-build.sh   (for BENCHMARKS.md; ~25 minutes on 2 cores)
#   BUILD_ANCHOR=<commit>   the anchor (default ba9c9e5)
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT"
ANCHOR="${BUILD_ANCHOR:-ba9c9e5}"
PYDOC=/usr/share/doc/python3.11/html
[ -d "$PYDOC" ] || { echo "bench-build: install python3.11-doc first (apt-get install python3.11-doc)" >&2; exit 2; }
cargo build --quiet --release -p sextant-cli
NEW="$CARGO_TARGET_DIR/release/sextant"
ANCHOR_DIR="$HOME/.cache/sextant/anchor-$ANCHOR"
[ -d "$ANCHOR_DIR" ] || git worktree add --detach "$ANCHOR_DIR" "$ANCHOR" >/dev/null
(cd "$ANCHOR_DIR" && CARGO_TARGET_DIR="$CARGO_TARGET_DIR/anchor" cargo build --quiet --release -p sextant-cli)
OLD="$CARGO_TARGET_DIR/anchor/release/sextant"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
for v in old new; do cp -rL "$PYDOC" "$WORK/site-$v"; done
run() { # label, command…
  local label="$1"; shift
  local t0; t0=$(date +%s.%N)
  "$@" --json > "$WORK/out.json"
  python3 - "$label" "$t0" "$(date +%s.%N)" "$WORK/out.json" <<'PY'
import json, sys
label, t0, t1, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
s = json.load(open(path))
seconds = t1 - t0
e = s.get("embedding", {})
print(json.dumps({"build": label, "seconds": round(seconds, 1), "chunks": s["chunks"],
                  "chunks_per_second": round(s["chunks"] / seconds, 1),
                  "embedded": e.get("embedded"), "reused": e.get("reused"),
                  "embed_chunks_per_second": round(e.get("chunks_per_second", 0), 1) or None,
                  "embed_tokens_per_second": round(e.get("tokens_per_second", 0)) or None}))
PY
}
echo "## $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(date -u +%Y-%m-%d)"
run "anchor $ANCHOR, cold" "$OLD" build --site "$WORK/site-old" --package pkg
run "this tree, cold (empty cache)" "$NEW" build --site "$WORK/site-new" --cache-dir "$WORK/cache"
ls "$WORK/site-new/sextant/index" > "$WORK/before.txt"
python3 - "$WORK/site-new/library/json.html" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
i = s.index('<p>', s.index('<h1'))
open(p, 'w').write(s[:i] + '<p>Edited: json.dumps writes compact output when separators are given.</p>' + s[i:])
PY
run "this tree, one page edited" "$NEW" build --site "$WORK/site-new" --cache-dir "$WORK/cache"
# What a redeploy uploads: the index files that are new after the edit (names are content hashes).
ls "$WORK/site-new/sextant/index" | comm -13 "$WORK/before.txt" - | (cd "$WORK/site-new/sextant/index" && xargs -r stat -c '%n %s') |
  python3 -c 'import collections, json, sys
kinds = collections.Counter(); size = 0
for line in sys.stdin:
    name, n = line.split(); kinds[name.split(".")[0]] += 1; size += int(n)
print(json.dumps({"new_index_files_after_edit": sum(kinds.values()), "bytes": size, "by_kind": dict(sorted(kinds.items())), "of": int(sys.argv[1])}))' "$(ls "$WORK/site-new/sextant/index" | wc -l)"
run "this tree, nothing changed" "$NEW" build --site "$WORK/site-new" --cache-dir "$WORK/cache"
