# The two commands of the README are `make demo` and `make test`; each target is one small
# script in scripts/ that also runs on its own.
SHELL := /bin/bash

.PHONY: demo test setup model cli lint test-native bench clean

demo: setup cli
	scripts/demo.sh

test: setup lint test-native

setup:
	scripts/setup.sh

model:
	scripts/fetch-model.sh

cli:
	scripts/cli.sh

lint:
	scripts/lint.sh

test-native:
	scripts/test-native.sh

bench: setup cli
	scripts/bench-native.sh

clean:
	rm -rf www/dist pkg
