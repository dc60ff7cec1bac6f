# Everything runs through tsx: no build step. `make run`, `make test`, `make bench`, `make sim`, `make lint`.
SHELL := /bin/bash
NODE_FLAGS := --import tsx
TESTS = $(shell find test -name '*.test.ts' -not -path '*/node_modules/*' | sort)

.PHONY: install run test sim bench lint typecheck

install: node_modules/.package-lock.json

node_modules/.package-lock.json: package-lock.json
	npm ci --no-audit --no-fund

run: install
	node $(NODE_FLAGS) src/main.ts

sim: install
	node $(NODE_FLAGS) test/sim/main.ts

test: install
	node $(NODE_FLAGS) --test --test-concurrency=2 --test-timeout=120000 $(TESTS)

# The load test (test/load/bench.ts; figures in bench/, raw files in bench/out/). K=5,000 streams
# need ~3 descriptors per stream across the processes: raise the soft open-files limit to the hard one.
# It installs Debian's nginx-light (the relay baseline) when nginx is missing.
bench: install
	ulimit -n $$(ulimit -Hn) 2>/dev/null; node $(NODE_FLAGS) test/load/bench.ts

typecheck: install
	npx tsc --noEmit

lint: typecheck
