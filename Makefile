# make run    build and start a local 3-member cluster (Ctrl-C stops it, data kept in ./data)
# make test   every check and every test: what CI runs
# make bench  the benchmarks (docs/benchmarks.md)
# make chaos DURATION=10m   membership churn under kills, pauses and partitions, checked for
#             linearizability (a short run is part of make test)
GO ?= go
BIN := bin

.PHONY: build run test check unit race bench chaos clean

build:
	$(GO) build -o $(BIN)/clusterd ./cmd/clusterd
	$(GO) build -o $(BIN)/clusterctl ./cmd/clusterctl

run: build
	scripts/run-cluster.sh

check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# The server packages run under the race detector; everything else, end-to-end and interop
# tests included, runs once without it. Packages run one at a time (-p 1): the process tests
# each start clusters, and the runbook tests need the fixed ports of make run, which another
# package's ephemeral ports could otherwise take.
race:
	$(GO) test -race -count=1 ./pkg/server/...

unit:
	$(GO) test -count=1 -p 1 -timeout 30m ./...

test: check race unit

bench: build
	$(GO) run ./tests/bench

DURATION ?= 10m
CHAOS_TIMEOUT ?= 60m
chaos:
	$(GO) test ./tests/chaos -run TestChaos -count=1 -v -timeout $(CHAOS_TIMEOUT) -args -duration=$(DURATION)

clean:
	rm -rf $(BIN)
