# fpdb — a persistent near-duplicate fingerprint database.
# `make` with no target prints this help.

GO       ?= go
BIN      ?= bin/fpdb
FPDB_DB  ?= fpdb-data
PYTHON   ?= python3
FUZZTIME ?= 30s
CRASH_CYCLES ?= 500
DURATION ?= 10m

.DEFAULT_GOAL := help
.PHONY: help build man test test-deps test-python test-short vet lint format-check mod-tidy-check demo fuzz crash soak bench bench-scale bench-full bench-dedup bench-cluster clean

help: ## print this help
	@echo "fpdb make targets:"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | awk -F'\t' '{printf "  %-16s %s\n", $$1, $$2}'

build: ## build the fpdb binary into bin/
	$(GO) build -o $(BIN) ./cmd/fpdb

man: ## regenerate the man pages in docs/man/ (fpdb man; commit them: a test checks they are current)
	rm -f docs/man/*.1
	$(GO) run ./cmd/fpdb man docs/man

test-deps: ## install what the tests use beyond Go when it is missing (jq, chromium, python3: from Debian's packages)
	@command -v jq >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq jq >/dev/null; } || \
	  { echo "make test needs jq (the help's pipelines use it): apt-get install jq"; exit 1; }
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; } || \
	  { echo "make test needs chromium (the report is rendered in it): apt-get install chromium chromium-driver"; exit 1; }
	@command -v $(PYTHON) >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq python3 >/dev/null; } || \
	  { echo "make test needs python3 (the Python client's tests): apt-get install python3"; exit 1; }

test: test-deps vet format-check test-python ## vet, format check, the Python client's tests, all Go tests with the race detector (FPDB_REQUIRE_BROWSER=1: the browser test must run) and the record outputs built without cgo (their pure-Go zstd)
	FPDB_REQUIRE_BROWSER=1 $(GO) test -race -count=1 -timeout 60m ./...
	CGO_ENABLED=0 $(GO) test -count=1 ./internal/records ./internal/zstdframe

test-python: build ## the Python client's tests (clients/python), each against an fpdb serve of bin/fpdb
	FPDB_BIN=$(BIN) PYTHONDONTWRITEBYTECODE=1 $(PYTHON) -m unittest discover -s clients/python/tests -v

test-short: ## all tests without the race detector, skipping the slow ones
	$(GO) test -short -count=1 ./...

vet: ## go vet
	$(GO) vet ./...

lint: vet format-check mod-tidy-check ## every static check

format-check: ## fail if gofmt would change a file
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

mod-tidy-check: ## fail if go.mod/go.sum are not tidy
	$(GO) mod tidy -diff

demo: build ## add the shipped example corpus to ./fpdb-data and query it
	./$(BIN) --db $(FPDB_DB) add examples/corpus; status=$$?; [ $$status -le 1 ] || exit $$status
	@echo
	@echo '$$ fpdb query --threshold 0.7 examples/query.txt'
	./$(BIN) --db $(FPDB_DB) query --threshold 0.7 examples/query.txt
	@echo
	./$(BIN) --db $(FPDB_DB) stats

fuzz: ## run every fuzz target for FUZZTIME each
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

crash: ## kill -9 crash harness: CRASH_CYCLES kill cycles (default 500), plus the power-loss test
	$(GO) test -count=1 -timeout 0 -run '^(TestCrash|TestPowerLoss)$$' -v ./db/ -crash.cycles=$(CRASH_CYCLES)

soak: ## model-based concurrency soak under -race for DURATION (default 10m)
	$(GO) test -race -count=1 -timeout 0 -run '^TestSoak$$' -v ./db/ -soak.duration=$(DURATION)

bench: ## quick benchmark suite (≤ 15 min): bench/results/quick.{md,json,svg}, latest.json
	FPDB_BENCH_COMMAND="make bench" $(GO) run ./bench/cmd/fpdb-bench -suite quick -out bench/results

bench-scale: ## the random section at 1 M and 10 M fingerprints, and 10 M again in the group width db.SuggestedGroupWidth suggests for it (≈ 6 min, ≈ 4 GB): bench/results/scale-partial.{md,json,svg}
	FPDB_BENCH_COMMAND="make bench-scale" $(GO) run ./bench/cmd/fpdb-bench -suite scale -sections random -out bench/results

bench-full: ## large benchmark suite (n from 1e5 to 1e7, skewed text and dedup at 1e6; ≤ 60 min on 2 cores, ~8 GB RAM): bench/results/full.{md,json,svg}, latest.json
	FPDB_BENCH_COMMAND="make bench-full" $(GO) run ./bench/cmd/fpdb-bench -suite full -out bench/results

bench-dedup: ## the dedup section at 1 M records of 2 KB (JSONL, JSONL.zst, Parquet, two rounds each; ≈ 4 GB of temporary files, ≈ 20 min on 2 cores): bench/results/dedup.{md,json}
	FPDB_BENCH_COMMAND="make bench-dedup" $(GO) run ./bench/cmd/fpdb-bench -suite quick -sections dedup -dedup-records 1000000 -name dedup -out bench/results

bench-cluster: ## cluster throughput on loopback: one database, a one-node and a three-node cluster, 16 clients (≈ 3 min), with the machine's scan speed: bench/results/cluster.txt
	{ uname -m; grep -m1 'model name' /proc/cpuinfo; nproc; $(GO) test ./internal/bitvec -run XXX -bench 'BenchmarkScan' -benchtime 2s; \
	  $(GO) test ./cluster -run XXX -bench Throughput -benchtime 5s; } 2>&1 | tee bench/results/cluster.txt

clean: ## remove build output and the demo database
	rm -rf bin $(FPDB_DB)
