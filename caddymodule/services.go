package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/mcp"
	"socialrouter/caddymodule/metrics"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/servicecheck"
	"socialrouter/caddymodule/sources"
)

// compiled is what one compilation of the services directory makes: the
// registry, the source clients' router over it and the MCP tools. A
// registry swap replaces it whole, so a call holds one consistent set from
// its start to its end; what outlives it (the store, the breakers, the
// in-flight counts, the MCP sessions, the listeners) is the app's.
type compiled struct {
	reg    *registry.Registry
	router *router.Router
	// asyncRouter runs async runs: the same clients, the async deadline.
	asyncRouter *router.Router
	tools       *mcp.Toolset
	digest      string

	// testRouter and testAsyncRouter serve test keys: the same registry,
	// clients answering from the examples (testmode.go), no upstream.
	testRouter, testAsyncRouter *router.Router
}

// swapState is the services an app serves now, swapped in place; mu
// serializes swaps (the admin route's and the watcher's); stop ends the
// watcher.
type swapState struct {
	live atomic.Pointer[compiled]
	mu   sync.Mutex
	stop func()
}

// live is the services serving now, or nil for an App built by hand (a
// test), which has only its reg, router and tools fields.
func (a *App) live() *compiled {
	if a.swap == nil {
		return nil
	}
	return a.swap.live.Load()
}

// current is the services serving now.
func (a *App) current() *compiled {
	if c := a.live(); c != nil {
		return c
	}
	return &compiled{reg: a.reg, router: a.router, tools: a.tools}
}

// compile loads the services directory as Provision does and builds the
// source clients, the router and the MCP tools over it. It changes
// nothing: Provision and a swap install what it returns.
func (a *App) compile(ctx context.Context) (*compiled, error) {
	digest := registry.Digest(a.Services)
	start := time.Now()
	// The same loader and checks as `caddy sdr check`: a reload or a swap
	// refuses (and the old services keep serving) what check refuses.
	reg, err := servicecheck.Load(ctx, a.Services)
	metrics.RegistryLoaded(time.Since(start), err)
	if err != nil {
		return nil, fmt.Errorf("%w (loading services from %s)", err, a.Services) // the operator's file:line:column first
	}
	a.logger.Info("services compiled", zap.Int("services", len(reg.Services)), zap.Duration("took", time.Since(start)))

	clients := map[string]sources.Client{}
	for _, src := range reg.Sources {
		cfg := a.Sources[src.ID]
		if cfg == nil {
			cfg = &SourceConfig{}
		}
		tok, err := cfg.token()
		if err != nil {
			return nil, fmt.Errorf("configuring source %s: %v", src.ID, err)
		}
		cb, err := a.callbackConfig(src.ID, cfg)
		if err != nil {
			return nil, fmt.Errorf("configuring source %s: %v", src.ID, err)
		}
		c, err := sources.New(src.Protocol, sources.Config{
			BaseURL:      cfg.BaseURL,
			Token:        tok,
			HTTPClient:   metrics.UpstreamClient(src.ID),
			PollInterval: time.Duration(a.PollInterval),
			Callbacks:    cb,
			Logger:       a.logger.Named("sources." + src.ID),
		})
		if err != nil {
			return nil, fmt.Errorf("configuring source %s: %v", src.ID, err)
		}
		clients[src.ID] = c
	}
	for id := range a.Sources {
		if _, ok := reg.Source(id); !ok {
			return nil, fmt.Errorf("configuring source %s: no such source is declared in %s", id, a.Services)
		}
	}
	rt := router.New(router.Config{
		AttemptTimeout: time.Duration(a.AttemptTimeout),
		SoftTimeout:    time.Duration(a.SoftTimeout),
		Observer:       metrics.Router{},
	}, clients, a.shared.breakers, a.logger.Named("router"))
	tools, err := mcp.NewToolset(reg)
	if err != nil {
		return nil, err
	}
	c := &compiled{reg: reg, router: rt, asyncRouter: a.asyncRouter(clients), tools: tools, digest: digest}
	if err := a.compileTestMode(c); err != nil {
		return nil, err
	}
	return c, nil
}

// SwapResult is the answer of a registry swap.
type SwapResult struct {
	// Services is how many services the new registry declares.
	Services int `json:"services"`
	// Added and Removed name the services (platform/service) the swap
	// added and removed.
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	// Digest is the digest of the service files now serving.
	Digest string `json:"digest"`
	// TookMS is how long compiling and swapping took.
	TookMS int64 `json:"took_ms"`
}

// SwapServices recompiles the services directory and, if it compiles,
// makes it the registry of every call that starts from now on: the /v1
// API, the MCP tools (connected MCP clients are sent
// notifications/tools/list_changed), the dashboard and the admin routes.
// Listeners, connections, the store, the breakers and the calls in flight
// are untouched: a call keeps the registry and router it started with.
// A directory that does not compile changes nothing; the error's first
// line is the operator's file:line:column.
func (a *App) SwapServices() (*SwapResult, error) {
	if a.swap == nil {
		return nil, fmt.Errorf("the social_router app is not provisioned")
	}
	a.swap.mu.Lock()
	defer a.swap.mu.Unlock()
	start := time.Now()
	old := a.current()
	c, err := a.compile(context.Background())
	if err != nil {
		a.logger.Error("registry swap refused; the running services keep serving", zap.Error(err))
		return nil, err
	}
	a.swap.live.Store(c)
	if a.async.started {
		a.setAsyncRunner(c)
	}
	metrics.Offers(a.offerSources())
	if a.mcp != nil {
		a.mcp.Replace(a, c.tools, a.toolBackend(c))
	}
	res := &SwapResult{Services: len(c.reg.Services), Digest: c.digest, TookMS: time.Since(start).Milliseconds()}
	res.Added, res.Removed = serviceDiff(old.reg, c.reg)
	running.note(a, c.digest)
	a.logger.Info("registry swapped", zap.Int("services", res.Services), zap.Strings("added", res.Added),
		zap.Strings("removed", res.Removed), zap.String("digest", c.digest), zap.Duration("took", time.Since(start)))
	return res, nil
}

// serviceDiff names the services new has and old has not, and the
// reverse.
func serviceDiff(old, new *registry.Registry) (added, removed []string) {
	names := func(r *registry.Registry) map[string]bool {
		m := map[string]bool{}
		if r != nil {
			for _, s := range r.Services {
				m[s.Key] = true
			}
		}
		return m
	}
	o, n := names(old), names(new)
	added, removed = []string{}, []string{}
	for k := range n {
		if !o[k] {
			added = append(added, k)
		}
	}
	for k := range o {
		if !n[k] {
			removed = append(removed, k)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	return added, removed
}

// running remembers the social_router config that started last, so that
// the next config's Provision (a `caddy reload`) can tell whether only the
// services changed: a reload then restarts the HTTP servers, where a swap
// would have dropped nothing.
var running runningConfig

type runningConfig struct {
	mu     sync.Mutex
	owner  *App
	rest   string // the app's config without services_digest
	digest string // the digest of the services it serves
}

// fingerprint is the app's config as JSON without its services digest.
func (a *App) fingerprint() string {
	b, err := json.Marshal(a)
	if err != nil {
		return ""
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return ""
	}
	delete(m, "services_digest")
	b, _ = json.Marshal(m)
	return string(b)
}

// note records a's config (at Start) or a swap's new digest.
func (r *runningConfig) note(a *App, digest string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.owner != a {
		r.owner, r.rest = a, a.fingerprint()
	}
	r.digest = digest
}

// noteServicesOnly logs, while a reload provisions a, when a's config
// differs from the running one's only in the services it compiles.
func (a *App) noteServicesOnly() {
	running.mu.Lock()
	owner, rest, digest := running.owner, running.rest, running.digest
	running.mu.Unlock()
	if owner == nil || owner == a {
		return
	}
	now := a.current().digest
	if now != "" && now != digest && a.fingerprint() == rest {
		a.logger.Info("this reload changes only the services of the social_router app: "+
			"`caddy sdr services reload` (POST /sdr/registry/reload) swaps them in place without restarting "+
			"the HTTP servers, dropping no connection", zap.String("digest", now), zap.String("running_digest", digest))
	}
}
