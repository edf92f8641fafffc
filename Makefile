# The two commands of the README are `make demo` and `make test`; each target is one small
# script in scripts/ that also runs on its own.
SHELL := /bin/bash
# Seconds each fuzz target runs under `make fuzz`.
FUZZ_SECONDS ?= 60

.PHONY: demo test setup model cli wasm worker lint test-native test-wasm test-js bench bench-wasm bench-worker bench-pagefind bench-session bench-build bench-shards bench-rustdoc bench-packs bench-probe bench-layout bench-adversarial bench-collection bench-fields fuzz unicode-tables clean

demo: setup cli wasm
	scripts/demo.sh

test: setup lint test-native wasm test-wasm test-js

setup:
	scripts/setup.sh

model:
	scripts/fetch-model.sh

cli:
	scripts/cli.sh

wasm:
	scripts/build-wasm.sh

worker: setup cli wasm
	scripts/worker.sh

lint:
	scripts/lint.sh

test-native:
	scripts/test-native.sh

test-wasm:
	scripts/test-wasm.sh

test-js: wasm cli
	scripts/test-js.sh

bench: setup cli
	scripts/bench-native.sh

bench-wasm: setup wasm
	scripts/bench-wasm.sh

bench-worker: setup cli wasm
	scripts/bench-worker.sh

bench-pagefind: setup cli wasm
	scripts/bench-pagefind.sh

bench-session: setup wasm
	scripts/bench-session.sh

bench-build: setup wasm
	scripts/bench-build.sh

bench-shards: setup wasm
	scripts/bench-shards.sh

bench-rustdoc: setup wasm
	scripts/bench-rustdoc.sh

bench-packs: setup wasm
	scripts/bench-packs.sh

bench-probe: setup
	scripts/bench-probe.sh

bench-layout: setup wasm
	scripts/bench-layout.sh

bench-adversarial: setup wasm
	scripts/bench-adversarial.sh

bench-collection: setup wasm
	scripts/bench-collection.sh

bench-fields: setup cli
	scripts/bench-fields.sh

fuzz: setup
	scripts/fuzz.sh $(FUZZ_SECONDS)

# Regenerates src/frame/unicode.rs from the Unicode data (pinned crates; committed, so builds
# need none of it).
unicode-tables:
	scripts/unicode-tables.sh

clean:
	rm -rf www/dist pkg www/worker/dist tests/artifacts
