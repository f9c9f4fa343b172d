# rebalancelab — see README.md. `make demo` runs the main job; `make test` runs every test.
GO        ?= go
BIN       := bin/rebalancelab
VERSION   := $(shell git describe --always --dirty 2>/dev/null || echo dev)
# Packages with goroutines run under the race detector; the whole suite does.
TESTFLAGS ?= -race -count=1 -timeout 30m
FUZZTIME  ?= 15s

.PHONY: all build deps test fuzz demo vet clean difftest kafka-scenarios

all: build

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/rebalancelab

deps:
	@scripts/deps.sh

# The optional Docker ZooKeeper (lab/zkcontainer.go) builds only with -tags container: vetted, built
# and its test run with the tag here, and the default CLI checked to link no Docker package.
vet:
	$(GO) vet ./...
	$(GO) vet -tags container ./lab/
	$(GO) build -tags container ./...
	$(GO) test -count=1 -tags container -run '^TestContainerBackend' ./lab/
	@if $(GO) list -deps ./cmd/rebalancelab | grep -i docker; then \
		echo "vet: the default build of cmd/rebalancelab links the Docker packages above (keep them behind -tags container)"; exit 1; fi

# Tests need a real ZooKeeper, a JRE, kcat and kafka-python: `deps` installs them when missing.
# Every test runs (no -short): `go test -json` piped into scripts/testsummary, which prints what go test
# prints without -v (a line per package, the output of what failed) and fails the target when a test
# failed or was skipped, listing the skipped ones (skips exist only under -short; CONTRIBUTING.md).
# pipefail keeps go test's own exit status. Then every `go test` benchmark once (`bench-check`), for
# the checks built into them (assignment validity, the peers' answers), then the bounded fuzzing.
# The fast tier, without ZooKeeper or a JVM: `go test -short ./...` (not a target; CONTRIBUTING.md).
test: deps build vet largefiles
	$(GO) build -o bin/testsummary ./scripts/testsummary
	REBALANCELAB_BIN=$(CURDIR)/$(BIN) bash -o pipefail -c "$(GO) test -json $(TESTFLAGS) ./... | bin/testsummary"
	$(MAKE) bench-check
	$(MAKE) fuzz

# No committed file over 1 MiB outside scripts/largefiles.allow (scripts/largefiles.sh; its test,
# scripts/largefiles_test.go, runs in `go test ./...`). LARGEFILES_RANGE=main..HEAD checks every
# commit of a branch instead of HEAD's tree.
.PHONY: largefiles
largefiles:
	@scripts/largefiles.sh $(or $(LARGEFILES_RANGE),HEAD)

# Every `go test` benchmark of every package run once (-benchtime 1x), under the race detector like the
# tests: not to measure (see bench-report) but so that the checks they make before timing anything
# (each assignor's assignment valid, the peers' answers equal, the lab's ZooKeeper and Kafka 3.9 brokers
# started as in the tests) run in CI.
.PHONY: bench-check
bench-check: deps
	$(GO) test $(TESTFLAGS) -run '^$$' -bench . -benchtime 1x ./...

# Bounded fuzzing of the parsers that face the network and the disk. -fuzzminimizetime 0: a run once failed
# with only "context deadline exceeded" when -fuzztime ended, and wrote no failing input; the likely cause is
# the deadline landing while a new interesting input was being minimised. A crasher is still reported and
# written to testdata/fuzz, just not minimised.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzRequest$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 0 ./broker
	$(GO) test -run '^$$' -fuzz '^FuzzMessageSet$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 0 ./broker
	$(GO) test -run '^$$' -fuzz '^FuzzAppend$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 0 ./broker/storage
	$(GO) test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 0 ./internal/recordbatch
	$(GO) test -run '^$$' -fuzz '^FuzzDecompress$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 0 ./internal/recordbatch

# Long runs, outside `make test`: FID-ORDER's stress test with 300 membership changes per rebalance
# protocol (`make test` makes 30) under random coordinator-link latency.
.PHONY: soak
soak: deps
	$(GO) test -race -count=1 -timeout 90m -run '^TestFIDOrderStress$$' -v ./newconsumer/ -args -fidorder.changes=300

# The differential test alone (conformance/, TestDifferential), verbose, every difference found (listed in docs/reference/fidelity.md's table or not) written
# to difftest-out.txt. `make test` runs it too.
difftest: deps
	DIFFTEST_OUT=$(CURDIR)/difftest-out.txt $(GO) test -count=1 -v -run TestDifferential ./conformance/

# Every scenario of the catalogue (`scenario list --json`) on every era against real Kafka 3.9 brokers
# (`--era all --broker kafka`, each at its small size, the one its test runs; test hosts where it needs
# them: root), outside `make test` (tens of minutes here); fails when a run does not pass (an error
# recorded, a relation failed). Results in kafka-scenarios-out/ (summary.txt: a line per scenario with
# its relations held, failed and skipped). KAFKA_SCENARIOS_ONLY=a,b runs those.
kafka-scenarios: deps build
	@scripts/kafka-scenarios.sh $(BIN)

# connect-workers on both Connect protocols (sessioned, eager): real Connect 3.9 workers on the lab's
# broker, the four layouts and a kill -9 (docs/reference/fidelity.md "Kafka Connect workers"). `make test` runs the sessioned
# one (TestConnectWorkers).
.PHONY: connect-workers
connect-workers: deps build
	$(BIN) scenario run connect-workers --connect-protocol sessioned,eager

# The zk era's mixed group (real 0.8.2.2 connectors and zkconsumers) on both brokers: ours (also in
# `make test`) and a real Kafka 3.9 one (docs/reference/fidelity.md, "The real 0.8.2.2 connector beside zkconsumer").
.PHONY: mixed-groups
mixed-groups: deps
	$(GO) test -count=1 -v -run '^TestMixedGroupRealOldConnector' ./zkconsumer/

# The main job (scripts/demo.sh): split-brain-zombie, then herd-join and storm swept over N up to 256
# within a 5-minute budget (DEMO_BUDGET seconds). It needs only ZooKeeper and a JRE (demo-deps), not
# what the tests need, and no root when both are present.
.PHONY: demo-deps
demo-deps:
	@scripts/deps.sh demo

demo: demo-deps build
	@scripts/demo.sh $(BIN)

# The hot-path figures (docs/reference/performance.md), by one command: the `go test` benchmarks that run their peers in the same
# loop (kgo's balancers, kfake, Kafka 3.9 started by the lab, its JVM warmed before timing; 3 iterations
# per run), then the broker's
# own (zero-copy fetch, locating a fetch's batches and frame reading against the old ways, commits sharing an fsync against one
# fsync each), BENCH_COUNT runs each, summarised by `rebalancelab bench report` (medians, min-max,
# benchstat's 95% interval from 6 runs) into Markdown, the medians, spreads, peers' settings and load
# appended to benchmark/history.jsonl (--history: bench report appends nowhere by default). The raw output stays in bench-out.txt. docs/reference/performance.md shows a history
# line's tables in a "<!-- BEGIN BENCH TABLE <time> -->" block that `make bench-tables` fills.
BENCH_COUNT ?= 6
.PHONY: bench-report
bench-report: deps build
	bash -o pipefail -c "$(GO) test -run '^\$$' -bench 'Assignor|CoordinatorRebalance|ZKAssignment' -benchtime 3x -count $(BENCH_COUNT) -timeout 90m ./benchmark/ | tee bench-out.txt"
	bash -o pipefail -c "$(GO) test -run '^\$$' -bench 'FetchAnswer|ReadFrame' -count $(BENCH_COUNT) ./broker/ | tee -a bench-out.txt"
	bash -o pipefail -c "$(GO) test -run '^\$$' -bench 'SliceUpTo' -count $(BENCH_COUNT) ./broker/storage/ | tee -a bench-out.txt"
	bash -o pipefail -c "$(GO) test -run '^\$$' -bench 'DriverCommitFsync' -count $(BENCH_COUNT) ./broker/coordinator/ | tee -a bench-out.txt"
	$(BIN) bench report --markdown --history benchmark/history.jsonl bench-out.txt

# The performance tables (docs/reference/performance.md), regenerated from benchmark/history.jsonl: every
# "<!-- BEGIN BENCH TABLE <time> -->" block gets `rebalancelab bench table --at <time>`
# (TestReadmeBenchTablesFromHistory fails while one differs).
.PHONY: bench-tables
bench-tables: build
	$(BIN) bench table --readme docs/reference/performance.md

# The reference pages derived from the code (docs/refgen): the CLI reference docs/reference/cli/ (cobra/doc,
# one page per command), the scenario catalogue and the figure definitions (the ref-* generated blocks
# of docs/reference/scenarios.md and docs/design.md). TestCLIReferenceFresh (cmd/rebalancelab) and
# TestReferenceBlocksFresh (docs/refgen) fail while a committed page differs from what this writes.
.PHONY: docs-ref
docs-ref: build
	$(BIN) gen-docs docs

clean:
	rm -rf bin site

# The documentation site (scripts/site.sh, mkdocs.yml): README.md as the home page, the course, the
# design, the reference pages, CONTRIBUTING.md, the figures and the HTML reports of docs/figures/,
# built by MkDocs with the Material theme into site/ (SITE_DIR), which opens from the file system
# (site/index.html, no server). site-deps (scripts/site-deps.sh; `deps` runs it too) installs the pinned
# generator into .cache/site-venv and mermaid's bundle from the npm registry into .cache/site-npm.
# The browser test (docs/site, in `make test`) builds it and loads every page in headless Chromium.
.PHONY: site site-deps
site-deps:
	@scripts/site-deps.sh

site: site-deps
	@scripts/site.sh

# The course in docs/: every figure regenerated from real runs by docs/gen, and the generated blocks
# of the chapters refilled. DOCS_ONLY=ch4 regenerates one chapter (comma-separated list);
# DOCS_FLAGS=-small runs the smallest sizes (as docs/docs_test.go does), -check only prints the plan,
# -allow-dirty lets a full-size run record figures from uncommitted changes (refused otherwise);
# DOCS_OUT and DOCS_MD redirect the figures and the chapters to refill (DOCS_MD= refills none).
DOCS_OUT   ?= docs/figures
DOCS_MD    ?= docs
DOCS_ONLY  ?=
DOCS_FLAGS ?=

.PHONY: docs
docs: deps build
	$(GO) run ./docs/gen -out $(DOCS_OUT) $(if $(DOCS_MD),-md $(DOCS_MD)) $(if $(DOCS_ONLY),-only $(DOCS_ONLY)) -version $(VERSION) -bin $(CURDIR)/$(BIN) $(DOCS_FLAGS)
