# make man    regenerate the man pages in docs/man
# make proto  regenerate pkg/wire/clusterdpb's Go from its .proto and its generated.sum
#             (scripts/genproto.sh; no protoc: buf and the plugins are built once, in .cache)
# make run    build and start a local 3-member cluster (Ctrl-C stops it, data kept in ./data);
#             make run TLS=1: TLS and client certificates on both ports (data in ./data-tls);
#             make run PORT_OFFSET=100: every port moved by 100, beside another cluster (README)
# make test   every check and every test: what CI runs
# make bench  the benchmarks (docs/benchmarks.md)
# make chaos DURATION=10m   membership churn under kills, pauses and partitions, checked for
#             linearizability (a short run is part of make test); the shape and the faults:
#             make chaos DURATION=30m VOTERS=7 LEARNERS=2 FAULTS=all (TLS=0 for plain http)
GO ?= go
BIN := bin
# Static binaries, as etcd releases its own: no cgo, so no dynamic loader and libc to start
# (about a tenth of a short clusterctl run); paths trimmed; no symbol table or DWARF. Stack
# traces keep their function names. The grpcnotrace tag keeps grpc from linking
# golang.org/x/net/trace, which neither binary uses; the debug pages it registers at start-up
# kept net/http's server and the templates' execution in both binaries: a quarter of clusterctl's
# size, and about a tenth of a short clusterctl run. tests/bench builds with these flags and tags,
# the other tests with these tags (internal/testkit/cluster.BuildTags).
TAGS := grpcnotrace
# VERSION is what `clusterctl version` and `clusterd --version` print (pkg/version); a plain
# `go build` prints the VCS revision instead.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
BUILD := CGO_ENABLED=0 $(GO) build -trimpath -tags=$(TAGS) -ldflags=-s\ -w\ -X\ github.com/clusterctl/clusterctl/pkg/version.Version=$(VERSION)

.PHONY: build run test check unit race bench chaos clean man proto

build:
	$(BUILD) -o $(BIN)/clusterd ./cmd/clusterd
	$(BUILD) -o $(BIN)/clusterctl ./cmd/clusterctl

run: build
	PORT_OFFSET=$(or $(PORT_OFFSET),0) scripts/run-cluster.sh $(if $(filter 1 yes true,$(TLS)),--tls)

check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Each test runs once: the server, client and command packages (pkg/, cmd/) under the race
# detector, and the rest (the end-to-end, interop, runbook and chaos tests under tests/, the test
# kits under internal/, scripts/) without it. The two runs go side by side, each one's output
# printed when it ends; the rest runs two packages at a time, and inside a package its process
# tests run side by side as go test's -parallel allows (one per core), each with ports and
# directories of its own: most of their time is spent waiting on members. The runbook tests run
# make run's cluster and the runbooks with a PORT_OFFSET whose moved ports are free, below the
# ephemeral range other packages' ports come from (freeport.Offset).
race:
	$(GO) test -race -count=1 -timeout 30m ./pkg/... ./cmd/...

unit:
	$(GO) test -count=1 -p 2 -timeout 30m ./tests/... ./internal/... ./scripts/...

# make test needs no code generator: the test that the generated code is up to date compares
# hashes (pkg/wire/clusterdpb/generated.sum, written by make proto). It ends with every fuzz
# target for a few seconds each, beyond the seed corpora that the race run already replays.
test: check
	$(MAKE) --no-print-directory -j2 --output-sync=target race unit
	$(MAKE) --no-print-directory fuzz FUZZTIME=3s

# make bench BENCHFLAGS=-profile=bench-results/profile   also profiles the leader (docs/benchmarks.md)
# make bench BENCHFLAGS=-only=cluster-status (or =history)  runs that series alone
# The bench program builds bin/clusterd, bin/clusterctl and its floors itself, with BUILD's flags.
# BENCH_TIMEOUT (seconds) bounds the whole target, the program's own compile included: it gets
# what is left as -timeout and stops its members when that runs out; timeout(1) is the backstop
# (SIGTERM 5 s later, SIGKILL 5 s after that; --foreground keeps Ctrl-C working).
BENCH_TIMEOUT ?= 600
bench:
	@deadline=$$(( $$(date +%s) + $(BENCH_TIMEOUT) )); \
	echo "$(GO) build -o $(BIN)/bench ./tests/bench"; \
	timeout --foreground -k 5 $(BENCH_TIMEOUT) $(GO) build -o $(BIN)/bench ./tests/bench || exit; \
	left=$$(( deadline - $$(date +%s) )); \
	echo "$(BIN)/bench -timeout=$${left}s $(BENCHFLAGS)"; \
	timeout --foreground -k 5 $$(( left + 5 )) $(BIN)/bench -timeout=$${left}s $(BENCHFLAGS)

# The shape (most voters, who are also the members at the start, and most learners), the fault
# kinds (all, or names with - for spaces: kill-leader,crash-point,full-disk,...; docs/chaos.md)
# and TLS with client certificates on both ports, which every long run has unless TLS=0.
DURATION ?= 10m
CHAOS_TIMEOUT ?= 60m
VOTERS ?= 5
LEARNERS ?= 1
FAULTS ?= all
chaos:
	$(GO) test ./tests/chaos -run TestChaos -count=1 -v -timeout $(CHAOS_TIMEOUT) -args -duration=$(DURATION) \
		-voters=$(VOTERS) -learners=$(LEARNERS) -faults=$(FAULTS) -tls=$(if $(filter 0 no false,$(TLS)),false,true)

proto:
	GO=$(GO) scripts/genproto.sh

clean:
	rm -rf $(BIN)

# make man   regenerate docs/man from the command definitions (github.com/spf13/cobra/doc):
#            clusterctl's by scripts/genman, clusterd's by its package's test, the one place that
#            reaches its flags without linking the generator into it. Tests fail when docs/man
#            is out of date.
man:
	$(GO) run ./scripts/genman -out docs/man
	$(GO) test ./cmd/clusterd -run '^TestManPage$$' -count=1 -args -update

# make promtool   install promtool (Debian's prometheus package) if missing, for the metrics
#                 and alert-rule tests, which otherwise install it themselves or skip
.PHONY: promtool
promtool:
	scripts/install-promtool.sh

# make fuzz [FUZZTIME=30s]   run every fuzz target for FUZZTIME each, one at a time
#                            (scripts/fuzz.sh). A crash is written to the package's
#                            testdata/fuzz, where it then runs as an ordinary test.
FUZZTIME ?= 30s
FUZZ_TARGETS := \
	./pkg/membership:FuzzCanonicalURL \
	./pkg/membership:FuzzValidateName \
	./pkg/datadir:FuzzParseInitialCluster \
	./pkg/datadir:FuzzReadStatus \
	./pkg/datadir:FuzzReadWAL \
	./pkg/datadir:FuzzReadSnapFile \
	./pkg/storage:FuzzLoad \
	./pkg/client:FuzzParseEndpoint \
	./pkg/client:FuzzResolveIn \
	./pkg/client:FuzzDecodeAnswers \
	./cmd/clusterctl/command:FuzzConfigFile \
	./cmd/clusterd:FuzzParse \
	./pkg/server/transport:FuzzEnvelope \
	./pkg/wire:FuzzMessages \
	./pkg/server/api:FuzzRequests \
	./pkg/server/raftnode:FuzzProposalOf \
	./pkg/server/raftnode:FuzzStep
.PHONY: fuzz
fuzz:
	scripts/fuzz.sh $(FUZZTIME) $(FUZZ_TARGETS)
