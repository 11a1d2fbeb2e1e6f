# Social Data Router — build, test, run.
# Everything a fresh machine with Go needs is installed from here.

SHELL     := bash
GO        ?= go
BIN       := bin
CADDY     := $(BIN)/caddy
SIM       := $(BIN)/upstream-sim
CUE       := $(BIN)/cue
CUE_VER   := v0.17.1
export GOFLAGS := -buildvcs=false

.PHONY: all build chromium mcpclient test test-unit test-e2e check fmt run demo demo-reload bench print-xcaddy clean

all: build

build: $(CADDY) $(SIM)

$(CADDY): FORCE
	$(GO) build -o $(CADDY) ./cmd/caddy

$(SIM): FORCE
	$(GO) build -o $(SIM) ./cmd/upstream-sim

FORCE:

$(CUE):
	GOBIN=$(abspath $(BIN)) $(GO) install cuelang.org/go/cmd/cue@$(CUE_VER)

## test: unit tests (race detector for router and store), then the
## end-to-end suite against the real binary. A `--- SKIP` in tests/ fails
## the run unless it is the documented skip for a missing PostgreSQL or
## Redis URL. Cold (empty build cache, 2 cores) it takes about 8 minutes:
## building the binary 4, race tests 2, the rest 2. `go vet` is in
## `make check` (it vets every dependency for facts: 3.5 more minutes cold),
## which .ci/run runs after this. ratelimit runs without -race: it imports
## Caddy's HTTP stack, ~600 more packages to instrument, for a package whose
## shared state lives in the limiter library and Redis.
test: build
	$(GO) test -race -count=1 ./caddymodule/router/... ./caddymodule/store/...
	$(GO) test -count=1 $$($(GO) list ./... | grep -v -e /tests -e /caddymodule/router -e /caddymodule/store)
	$(MAKE) test-e2e

test-e2e: build chromium mcpclient
	@set -o pipefail; SDR_BIN=$(abspath $(CADDY)) SDR_SIM_BIN=$(abspath $(SIM)) \
		$(GO) test -count=1 -p 1 -v -timeout 15m ./tests/ 2>&1 | tee $(BIN)/e2e.log | grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)|SKIP' ; \
	status=$${PIPESTATUS[0]}; \
	if ! bash scripts/check-skips.sh $(BIN)/e2e.log; then exit 1; fi; \
	if [ $$status -ne 0 ]; then tail -80 $(BIN)/e2e.log; fi; exit $$status

## chromium: Debian's Chromium, which the dashboard's browser test
## (tests/dashboard_browser_test.go) drives; installed only when missing.
chromium:
	@command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)

## mcpclient: the MCP TypeScript SDK client of tests/mcp_typescript_test.go,
## installed from its lockfile by npm (Node 20); again only when the
## lockfile is newer than the installed tree.
MCPCLIENT := tests/mcpclient
mcpclient: $(MCPCLIENT)/node_modules/.package-lock.json

$(MCPCLIENT)/node_modules/.package-lock.json: $(MCPCLIENT)/package.json $(MCPCLIENT)/package-lock.json
	npm ci --prefix $(MCPCLIENT) --no-audit --no-fund
	@touch $@

check: $(CUE)
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || (gofmt -l .; echo "gofmt needed: make fmt"; exit 1)
	$(CUE) vet ./schemas/*.cue ./services/*.cue
	$(CADDY) sdr check services 2>/dev/null || $(GO) run ./cmd/caddy sdr check services

fmt:
	gofmt -w .
	@test ! -x $(CUE) || $(CUE) fmt ./schemas/ ./services/

## run: the gateway alone with the default Caddyfile.
run: build
	$(CADDY) run --config Caddyfile --adapter caddyfile

## demo: simulator + gateway + a demo account and key + a curl that works.
demo: build
	@bash scripts/demo.sh

## demo-reload: while make demo runs, restart its simulator on services/ and
## reload its gateway with the demo's environment (after adding a service).
demo-reload:
	@bash scripts/demo.sh reload

## bench: load and micro benchmarks; prints figures and ratios.
bench: build
	@bash scripts/bench.sh

## print-xcaddy: the xcaddy command equivalent to xcaddy.toml.
print-xcaddy:
	@$(GO) run ./scripts/xcaddycmd

clean:
	rm -rf $(BIN)
