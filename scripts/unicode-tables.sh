#!/usr/bin/env bash
# Writes src/frame/unicode.rs (the Unicode data framing's look-alike matching reads) with
# tools/unicode-tables: UTS #39 skeletons from unicode-security, Default_Ignorable_Code_Point and
# General_Category from icu_properties. The output is committed; run this only to move to a newer
# Unicode version (then bump the pinned crates in tools/unicode-tables/Cargo.toml).
set -euo pipefail
source "$(dirname "$0")/env.sh"
cd "$SEXTANT_ROOT/tools/unicode-tables"
cargo run --quiet --release -- "$SEXTANT_ROOT/src/frame/unicode.rs"
