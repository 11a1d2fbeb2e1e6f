# Social Data Router — build, test, run.
# Everything a fresh machine with Go needs is installed from here.

SHELL     := bash
GO        ?= go
BIN       := bin
CADDY     := $(BIN)/caddy
SIM       := $(BIN)/upstream-sim
CUE       := $(BIN)/cue
CUE_VER   := v0.17.1
PEBBLE_VER := v2.10.3
PEBBLE    := $(BIN)/pebble-$(PEBBLE_VER)/pebble
CHALLTEST := $(BIN)/pebble-$(PEBBLE_VER)/pebble-challtestsrv
STRIPE_MOCK_VER := v0.203.0
STRIPE_MOCK := $(BIN)/stripe-mock-$(STRIPE_MOCK_VER)/stripe-mock
export GOFLAGS := -buildvcs=false

.PHONY: all build release pebble stripe-mock chromium mcpclient test test-unit test-e2e check fmt snapshots run demo demo-reload bench print-xcaddy clean

all: build

build: $(CADDY) $(SIM)

$(CADDY): FORCE
	$(GO) build -o $(CADDY) ./cmd/caddy

$(SIM): FORCE
	$(GO) build -o $(SIM) ./cmd/upstream-sim

FORCE:

## release: the binary to ship, bin/release/caddy, built from a fresh clone
## of the committed HEAD (uncommitted changes are not shipped; a git
## worktree's .git file is not a repository to `go build`, so its binary
## would carry no version): -trimpath (no build machine paths), stripped
## (-s -w: no symbol table or DWARF; panics still print stack traces), with
## VCS stamping so that `caddy build-info` names this module's version
## (`mod socialrouter <tag or pseudo-version of the commit>`), and
## caddy.CustomVersion so that `caddy version` starts with
## `socialrouter <VERSION>` (default: git describe; make release
## VERSION=v1.4.0 names another). Prints the size and both versions.
VERSION ?= $(shell git describe --tags --always 2>/dev/null || echo unknown)
RELEASE := $(BIN)/release/caddy
RELEASE_SRC := $(BIN)/release/src
release:
	@git diff --quiet HEAD 2>/dev/null || echo "release: uncommitted changes are not in the release (it builds HEAD)"
	rm -rf $(RELEASE_SRC) && git clone -q . $(RELEASE_SRC) && git -C $(RELEASE_SRC) checkout -q $$(git rev-parse HEAD)
	cd $(RELEASE_SRC) && GOFLAGS=-buildvcs=true $(GO) build -trimpath \
		-ldflags '-s -w -X "github.com/caddyserver/caddy/v2.CustomVersion=socialrouter $(VERSION)"' \
		-o $(abspath $(RELEASE)) ./cmd/caddy
	rm -rf $(RELEASE_SRC)
	@echo "size:       $$(du -h $(RELEASE) | cut -f1) ($$(stat -c %s $(RELEASE)) bytes)"
	@echo "version:    $$($(RELEASE) version)"
	@echo "build-info: $$($(RELEASE) build-info | grep -m1 '^mod' | tr '\t' ' ')"

$(CUE):
	GOBIN=$(abspath $(BIN)) $(GO) install cuelang.org/go/cmd/cue@$(CUE_VER)

## pebble: Let's Encrypt's ACME test server and its challenge test server
## (DNS for the test domain), which tests/acme_test.go issues certificates
## from; installed from the Go module proxy, pinned, into a directory named
## after the version (a new pin installs afresh).
pebble: $(PEBBLE) $(CHALLTEST)

$(PEBBLE) $(CHALLTEST) &:
	GOBIN=$(abspath $(BIN))/pebble-$(PEBBLE_VER) $(GO) install \
		github.com/letsencrypt/pebble/v2/cmd/pebble@$(PEBBLE_VER) \
		github.com/letsencrypt/pebble/v2/cmd/pebble-challtestsrv@$(PEBBLE_VER)

## stripe-mock: Stripe's official mock of its API, which the payments
## tests (tests/payments_test.go) create Checkout Sessions and
## PaymentIntents against; installed from the Go module proxy, pinned.
stripe-mock: $(STRIPE_MOCK)

$(STRIPE_MOCK):
	GOBIN=$(abspath $(BIN))/stripe-mock-$(STRIPE_MOCK_VER) $(GO) install github.com/stripe/stripe-mock@$(STRIPE_MOCK_VER)

## test: unit tests (race detector for router and store), then the
## end-to-end suite against the real binary. A `--- SKIP` in tests/ fails
## the run unless it is the documented skip for a missing PostgreSQL or
## Redis URL. Cold (empty build cache, 2 cores) it takes about 8 minutes:
## building the binary 4, race tests 2, the rest 2. `go vet` is in
## `make check` (it vets every dependency for facts: 3.5 more minutes cold),
## which .ci/run runs after this. The e2e suite includes the client
## libraries' own suites (tests/sdk_test.go: sdk/go's go test -race, sdk/typescript's
## npm test), about a minute warm. ratelimit runs without -race: it imports
## Caddy's HTTP stack, ~600 more packages to instrument, for a package whose
## shared state lives in the limiter library and Redis.
test: build
	$(GO) test -race -count=1 ./caddymodule/router/... ./caddymodule/store/...
	$(GO) test -count=1 $$($(GO) list ./... | grep -v -e /tests -e /caddymodule/router -e /caddymodule/store)
	$(MAKE) test-e2e

test-e2e: build chromium mcpclient pebble stripe-mock
	@set -o pipefail; SDR_BIN=$(abspath $(CADDY)) SDR_SIM_BIN=$(abspath $(SIM)) \
		SDR_PEBBLE_BIN=$(abspath $(PEBBLE)) SDR_CHALLTESTSRV_BIN=$(abspath $(CHALLTEST)) \
		SDR_STRIPE_MOCK_BIN=$(abspath $(STRIPE_MOCK)) \
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

## sdk: regenerate the client libraries under sdk/ from the OpenAPI document
## the gateway serves for services/ (scripts/sdkgen: sdk/openapi.json, the Go
## types and calls, the TypeScript calls; then the pinned openapi-typescript:
## sdk/typescript/src/schema.gen.ts). SDK_URL=http://host/v1/openapi.json
## reads a running gateway's document instead. Tests fail on a stale copy.
.PHONY: sdk sdk-ts
SDK_URL ?=
sdk: sdk-ts
	$(GO) run ./scripts/sdkgen $(if $(SDK_URL),-url $(SDK_URL))
	npm run --silent --prefix $(SDKTS) generate

## sdk-ts: the TypeScript SDK's packages, installed from its lockfile by npm
## (Node 20) like mcpclient, again only when the lockfile changes.
SDKTS := sdk/typescript
sdk-ts: $(SDKTS)/node_modules/.package-lock.json

$(SDKTS)/node_modules/.package-lock.json: $(SDKTS)/package.json $(SDKTS)/package-lock.json
	npm ci --prefix $(SDKTS) --no-audit --no-fund
	@touch $@

# tests/sdk_test.go runs the TypeScript SDK's suite.
test-e2e: sdk-ts

check: $(CUE)
	$(GO) vet ./...
	cd sdk/go && $(GO) vet ./...
	@test -z "$$(gofmt -l .)" || (gofmt -l .; echo "gofmt needed: make fmt"; exit 1)
	$(CUE) vet ./schemas/*.cue ./services/*.cue
	$(CADDY) sdr check services 2>/dev/null || $(GO) run ./cmd/caddy sdr check services

## snapshots: rewrite every golden file that follows services/ or what the
## gateway generates from it (the MCP tool snapshots, the OpenAPI golden,
## the variant payloads' golden records), after adding a service or
## changing the generation; review them with git diff. A test that finds
## one out of date names this target.
snapshots:
	$(GO) test -count=1 ./caddymodule/mcp -run '^TestToolSnapshots$$' -update
	$(GO) test -count=1 ./caddymodule/registry -run '^(TestOpenAPIGolden|TestVariantPayloads)$$' -update -update-variants

fmt:
	gofmt -w .
	@test ! -x $(CUE) || $(CUE) fmt ./schemas/ ./services/

## run: the gateway alone with the default Caddyfile.
run: build
	$(CADDY) run --config Caddyfile --adapter caddyfile

## demo: simulator + gateway + a demo account, a test key and a live key + curls that work.
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
