# docflow — the two commands are `make run` and `make test`.
SHELL := /bin/bash
GO ?= go
BIN := bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.Version=$(VERSION)
# The server tests create their databases on: the private cluster of
# scripts/pgtest.sh once `make services` started it (evaluated per command,
# so a cluster started earlier in the same make counts).
export DOCFLOW_TEST_DATABASE_URL ?= $(shell bash scripts/pgtest.sh url)

.PHONY: run test test-stress build web lint imports bench chaos deps deps-run services clean help

help:
	@echo "make run    start docflow (installs and starts what it needs)"
	@echo "make test   run the whole test suite, the fuzz targets and the short chaos run (installs what the tests need; TEST_CHAOS=0, TEST_FUZZTIME=2s, TEST_FLAGS=-count=1, TEST_CPU=1)"
	@echo "make test-stress  the suite 3 times beside a CPU-burning load (STRESS_RUNS, STRESS_BURNERS, STRESS_PKGS)"
	@echo "make bench  run the speed and memory benchmarks"
	@echo "make load   the mixed workload at the highest rate held (LOAD_DURATION=10m)"
	@echo "make soak   the mixed workload for an hour, the server's resources watched (SOAK_DURATION=1h)"
	@echo "make fuzz   fuzz every target for a minute each (FUZZTIME=…)"
	@echo "make chaos  run the chaos suite: 10,000 documents under faults (DOCS=…)"
	@echo "make build  build bin/docflow"
	@echo "make lint   gofmt, go vet, the import map and the documentation links"

# The /ops page's chart library: npm ci with web/ops's lock file, copied
# into http/static/vendor, which the binary embeds.
web:
	@echo "==> front-end assets"
	@bash scripts/web.sh

build: web
	@echo "==> building $(BIN)/docflow ($(VERSION))"
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/docflow ./cmd/docflow

# System tools the processing steps use (Tesseract, poppler, LibreOffice…),
# and for tests the servers they talk to.
deps:
	@echo "==> checking system packages (tests)"
	@bash scripts/install-deps.sh test
	@echo "==> checking the test servers built from Go (once per machine)"
	@bash scripts/testbin.sh

deps-run:
	@echo "==> checking system packages"
	@bash scripts/install-deps.sh run

# Services the tests talk to: PostgreSQL and a private ClickHouse.
services:
	@echo "==> checking PostgreSQL"
	@bash scripts/postgres.sh
	@echo "==> checking the tests' PostgreSQL (a private cluster without fsync)"
	@bash scripts/pgtest.sh start || echo "the tests' cluster could not start: tests use the server on 5432"
	@echo "==> checking ClickHouse (tests)"
	@bash scripts/clickhouse.sh start || echo "ClickHouse could not start: its tests will skip and say why"
	@echo "==> checking chDB (the ClickHouse SQL on a current engine)"
	@bash scripts/chdb.sh >/dev/null || echo "libchdb.so not fetched: the current-engine check will skip and say why"

run: deps-run build
	@echo "==> checking PostgreSQL"
	@bash scripts/postgres.sh
	@echo "==> starting docflow serve (Ctrl-C to stop); open http://$${LISTEN_ADDR:-127.0.0.1:8000}"
	$(BIN)/docflow serve

# Packages tested at once (-p) and tests of one package run at once
# (-parallel, for t.Parallel tests); go test's default for both is the
# number of cores, but most tests wait on PostgreSQL, servers and clocks
# rather than the CPU. TEST_FLAGS adds flags (-count=1 to run every test
# again rather than reuse go test's cache of passed packages).
TEST_PROCS ?= 4
TEST_PARALLEL ?= 4
TEST_FLAGS ?=
# TEST_CPU=1 runs each test binary under internal/testexec, and the
# summary gives each package's CPU (with the tools it started) beside its
# wall time and lists the packages that used the most; go test caches no
# package run so.
TEST_CPU ?= 0
TEST_EXEC = $(if $(filter 1,$(TEST_CPU)),-exec $(abspath $(BIN))/testexec,)
# Each fuzz target runs this long after the tests (scripts/fuzz.sh).
TEST_FUZZTIME ?= 2s
# The short chaos run (150 documents under every fault, about two
# minutes) follows, on its own so that it loads no other test; 0 leaves
# it out.
TEST_CHAOS ?= 1
# The longest packages first: go test starts packages in the order given,
# and the suite's wall time is at least its longest package's from when it
# starts.
TEST_FIRST ?= ./e2e/api ./e2e/browser ./internal/app ./processing/ocr ./actors/delivery ./actors/pipeline ./http ./e2e
test: TEST_START := $(shell date +%s)
test: deps services imports web
	@# vet with the race build's flags, so go test reuses every package vet compiled
	@echo "==> go vet -race"
	$(GO) vet -race ./...
	@echo "==> go test -race ./... (this takes a while on 2 cores)"
	@if [ "$(TEST_CPU)" = 1 ]; then mkdir -p $(BIN) && $(GO) build -o $(BIN)/testexec ./internal/testexec; fi
	@# -ldflags=-w: no DWARF in the test binaries, a quarter less link time each.
	@# Then every fuzz target for TEST_FUZZTIME (its corpus already ran as
	@# tests), then the short chaos run; the run fails when any failed.
	@set -o pipefail; $(GO) test -race -ldflags=-w -json -timeout 60m -p $(TEST_PROCS) -parallel $(TEST_PARALLEL) $(TEST_EXEC) $(TEST_FLAGS) $(TEST_FIRST) ./... 2>&1 | $(GO) run ./internal/testsummary -since $(TEST_START); \
	  st=$$?; FUZZTIME=$(TEST_FUZZTIME) bash scripts/fuzz.sh || st=1; \
	  if [ "$(TEST_CHAOS)" != 0 ]; then echo "==> chaos: the short run (TEST_CHAOS=0 leaves it out)"; \
	    DOCFLOW_CHAOS=1 $(GO) test -count=1 -timeout 15m -run TestChaosShort ./e2e/chaos || st=1; fi; \
	  echo "==> make test: $$(( $$(date +%s) - $(TEST_START) )) s in all"; exit $$st

# The suite STRESS_RUNS times (3) beside STRESS_BURNERS busy processes
# (one per core) at nice 19: a test that waits for a guessed time shows
# itself here. STRESS_PKGS narrows the packages, STRESS_RUN the tests
# (docs/testing.md, "Under load").
test-stress: deps services web
	@bash scripts/stress.sh

# Every fuzz target for FUZZTIME each (go test, and so make test, runs
# each target's committed corpus as ordinary tests); docs/testing.md says
# how to keep an input that fails.
.PHONY: fuzz
fuzz: services
	@FUZZTIME=$${FUZZTIME:-60s} bash scripts/fuzz.sh

# The import map: ARCHITECTURE.md's package table says what each package may
# import, and TestImportsFollowTheMap holds the code to it (go test, no tools
# needed); beside it, the root doc.go's file index, the links between the
# Markdown pages and the settings in docs/configuration.md are checked. The
# shared check-imports beside the clone runs too when it is there.
CHECK_IMPORTS ?= ../shared/tools/check-imports
imports:
	@echo "==> import map and documentation links"
	$(GO) test -count=1 -run 'TestImportsFollowTheMap|TestImportMapRules|TestDocIndexesEveryFile|TestDocLinks|TestConfigurationDocumentsEverySetting' .
	@if [ -x "$(CHECK_IMPORTS)" ]; then "$(CHECK_IMPORTS)"; fi

lint: imports
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

bench: bench-bin
	$(BIN)/docflow-bench $(BENCH_ARGS)

.PHONY: bench-bin load soak
bench-bin: deps services web
	@echo "==> building the benchmark driver"
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/docflow-bench ./cmd/docflow-bench
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/docflow ./cmd/docflow

# The mixed workload on a docflow serve (docs/benchmarks.md, "Load and
# soak"): load finds the highest rate the machine holds and runs it for
# LOAD_DURATION (also a section of make bench); soak runs it at SOAK_RATE
# requests a second for SOAK_DURATION and watches the server's memory,
# goroutines, open files and database connections. Not in CI.
LOAD_DURATION ?= 10m
SOAK_DURATION ?= 1h
SOAK_RATE ?= 20
load: bench-bin
	$(BIN)/docflow-bench -only load -load-duration $(LOAD_DURATION) $(BENCH_ARGS)

soak: bench-bin
	$(BIN)/docflow-bench -only soak -soak-duration $(SOAK_DURATION) -soak-rate $(SOAK_RATE) $(BENCH_ARGS)

# The chaos suite (docs/chaos.md): broker, two api and three worker
# processes on a private PostgreSQL and ClickHouse, DOCS documents under
# random faults, then the invariants. CHAOS_ARGS adds flags (-seed, -keep,
# -short, -duration).
DOCS ?= 10000
# The short form (150 documents, every fault once, about two minutes).
.PHONY: chaos-short
chaos-short: deps services
	DOCFLOW_CHAOS=1 $(GO) test -count=1 -timeout 15m -run TestChaosShort -v ./e2e/chaos

chaos: deps services web
	@echo "==> building docflow and the chaos driver"
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/docflow ./cmd/docflow
	$(GO) build -o $(BIN)/docflow-chaos ./cmd/docflow-chaos
	$(BIN)/docflow-chaos -docs $(DOCS) -bin $(BIN)/docflow $(CHAOS_ARGS)

clean:
	rm -rf $(BIN)
