# Everything runs through tsx, with no build step, but `make test` (below). `make run`, `make test`, `make bench`, `make sim`, `make lint`.
SHELL := /bin/bash
NODE_FLAGS := --import tsx
TESTS = $(shell find test -name '*.test.ts' -not -path '*/node_modules/*' | sort)

.PHONY: install run test deps sim bench lint typecheck chromium pgbouncer screenshots fuzz

install: node_modules/.package-lock.json

# A node_modules that is a link to another checkout's (a git worktree) is that checkout's to install: npm ci
# here would empty the shared directory through the link while every other checkout uses it.
node_modules/.package-lock.json: package-lock.json
	@if [ -L node_modules ]; then echo "make: node_modules links to $$(readlink node_modules): install there, not here"; \
	else npm ci --no-audit --no-fund; fi

run: install
	node $(NODE_FLAGS) src/app/main.ts

sim: install
	node $(NODE_FLAGS) src/sim/main.ts

# Four test processes at a time on two cores. The suite is CPU-bound here (a full run kept both cores ~90 % busy:
# module loading, PGlite, service processes), so more files at once would not finish sooner; four keeps a
# core busy while other files wait on streams paced at a set rate or on child processes. test/run.mjs runs
# a directory's files in one process, up to six one after another (each process loads its modules first,
# most of a small file's CPU), and the longest files alone and first (node --test would sort them by name).
# --liftoff-only (passed on to every test file's process): V8 compiles PGlite's 9 MB of WASM with its
# baseline compiler only. A test process lives for seconds to a minute, too short to repay the optimising
# tier's compiles: test/api/chats.test.ts took 9.9 s of CPU instead of 13.5 s. The service's own children
# get the same flag (test/helpers/process.ts); `make run` keeps both tiers.
# The suite runs compiled (test/compile.mjs writes .build/: each .ts as .js beside a link to it), not
# through tsx: tsx's loader hooks cost ~2 s of CPU in each of ~180 test and service processes and in every
# actor thread. One file alone still runs from source: `node --import tsx --test test/api/chats.test.ts`.
# The typecheck and the layer check run beside the suite rather than before it: they need ~35 s of one
# core, and the suite leaves about that much idle (while its first files start, and in its tail). Their
# output comes after the suite's; either failing fails `make test`.
TEST_NODE_FLAGS := --liftoff-only
test: install chromium pgbouncer
	node test/compile.mjs
	@checks=$$(mktemp); $(MAKE) --no-print-directory -s typecheck deps > $$checks 2>&1 & pid=$$!; \
	status=0; node $(TEST_NODE_FLAGS) test/run.mjs $(patsubst %.ts,.build/%.js,$(TESTS)) || status=$$?; \
	if wait $$pid; then echo "# typecheck and layer check: passed"; \
	else status=1; cat $$checks; echo "# typecheck or layer check: FAILED (above)"; fi; \
	rm -f $$checks; exit $$status

# The layers (.dependency-cruiser.cjs, lowest first at its top): fails on an import that runs upward or
# round in a circle, and when the actor runtime does not compile alone (actors/runtime/tsconfig.json).
deps: install
	npx depcruise --config .dependency-cruiser.cjs src actors bench test
	npx tsc -p actors/runtime

# The browser tests (test/browser) drive Debian's chromium through playwright-core. Installed here when
# missing (apt-get, quietly, as root); when that cannot be done the browser suites say they were skipped.
chromium:
	@[ -x /usr/bin/chromium ] || { echo "make: installing Debian's chromium for the browser tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium) >/dev/null 2>&1 \
	  || echo "make: chromium could not be installed (apt-get failed): the browser tests will be skipped"; }

# The PgBouncer tests (test/store/db.test.ts, through test/helpers/pgbouncer.ts) start Debian's pgbouncer
# on a port of their own in front of the test Postgres. Installed here when missing, as chromium is; the
# package's own daemon is not wanted (the tests start theirs), so policy-rc.d keeps apt from starting it.
pgbouncer:
	@[ -x /usr/sbin/pgbouncer ] || [ -x /usr/bin/pgbouncer ] || { echo "make: installing Debian's pgbouncer for the PgBouncer tests"; \
	  policy=/usr/sbin/policy-rc.d; made=; [ -e $$policy ] || { printf '#!/bin/sh\nexit 101\n' > $$policy && chmod +x $$policy && made=1; }; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends pgbouncer) >/dev/null 2>&1 \
	  || echo "make: pgbouncer could not be installed (apt-get failed): the PgBouncer tests will be skipped"; \
	  [ -z "$$made" ] || rm -f $$policy; }

# Remakes the web client's screenshots in docs/.
screenshots: install chromium
	node $(NODE_FLAGS) test/browser/screenshots.ts

# The load test (bench/load/bench.ts; figures in bench/, raw files in bench/out/). K=5,000 streams
# need ~3 descriptors per stream across the processes: raise the soft open-files limit to the hard one.
# It installs Debian's nginx-light (the relay baseline) when nginx is missing.
bench: install
	ulimit -n $$(ulimit -Hn) 2>/dev/null; node $(NODE_FLAGS) bench/load/bench.ts

# The fuzzer at full size: 12,000 seeded requests (make test runs 2,500). FUZZ_REQUESTS and FUZZ_SEED
# change the run; FUZZ_ONLY=<index,…> replays single requests of a failure report.
fuzz: install
	FUZZ_REQUESTS=$${FUZZ_REQUESTS:-12000} node $(NODE_FLAGS) --test --test-timeout=7200000 test/fuzz/fuzz.test.ts

typecheck: install
	npx tsc --noEmit

lint: typecheck deps
