# Sourced by the other scripts: shared defaults. Everything can be overridden from the environment.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sextant/target}"
export SEXTANT_MODEL_DIR="${SEXTANT_MODEL_DIR:-$HOME/.cache/sextant/models/minilm-l6-v2-int8}"
export PATH="$HOME/.cargo/bin:$PATH"
SEXTANT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export SEXTANT_ROOT
# The CLI as built by `scripts/cli.sh` (the dev profile: dependencies optimised, shared with tests).
# SEXTANT_PREBUILT_BIN names a CLI built elsewhere instead: `scripts/cli.sh` then builds nothing
# (another clone's tests running beside a build in this one).
export SEXTANT_BIN="${SEXTANT_PREBUILT_BIN:-$CARGO_TARGET_DIR/debug/sextant}"
# This clone's package (what `make wasm` writes): the target dir may be shared by several clones,
# so the CLI's compiled-in default could point at another one.
export SEXTANT_PACKAGE_DIR="${SEXTANT_PACKAGE_DIR:-$SEXTANT_ROOT/pkg}"
