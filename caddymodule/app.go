// Package caddymodule wires Social Data Router into Caddy and holds only
// that wiring: the social_router app (registry, store, source clients,
// router and the state shared across reloads), the http.handlers module
// that serves the api package on /v1, the admin.api module that serves the
// admin package on /sdr/, the Caddyfile and the `caddy sdr` commands.
package caddymodule

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"socialrouter/caddymodule/admin"
	"socialrouter/caddymodule/api"
	"socialrouter/caddymodule/mcp"
	"socialrouter/caddymodule/metrics"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/sources"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/backend"
)

func init() {
	caddy.RegisterModule(App{})
}

// App is the social_router app. It owns the compiled service registry, the
// account store, the source clients and the router; handlers reach it with
// ctx.App("social_router").
type App struct {
	// Services is the directory of CUE service declarations. Default:
	// "./services".
	Services string `json:"services,omitempty"`
	// Storage selects the account store. Default: badger in
	// {caddy.AppDataDir}/social_router/badger.
	Storage *backend.Config `json:"storage,omitempty"`
	// KeyPrefix is the short prefix of API keys (keys are
	// <prefix>_live_…). Default: "sdr".
	KeyPrefix string `json:"key_prefix,omitempty"`
	// Sources configures each upstream by source id: base URL and token.
	Sources map[string]*SourceConfig `json:"sources,omitempty"`
	// AttemptTimeout bounds one offer attempt. Default: 120s.
	AttemptTimeout caddy.Duration `json:"attempt_timeout,omitempty"`
	// SoftTimeout fails an attempt with no upstream activity for this long.
	// Default: 30s.
	SoftTimeout caddy.Duration `json:"soft_timeout,omitempty"`
	// PollInterval between snapshot progress polls. Default: 2s.
	PollInterval caddy.Duration `json:"poll_interval,omitempty"`
	// MaxConcurrentRuns per account. Default: 16.
	MaxConcurrentRuns int `json:"max_concurrent_runs,omitempty"`
	// ServicesDigest is a digest of the service files, set by the Caddyfile
	// adapter, so that `caddy reload` sees a changed config (and reloads)
	// when only the declarations changed. It is informational otherwise.
	ServicesDigest string `json:"services_digest,omitempty"`
	// Async configures the asynchronous runs (app_async.go).
	Async

	reg      *registry.Registry
	store    store.Store
	storeKey string
	shared   *shared
	router   *router.Router
	logger   *zap.Logger
	mcp      *mcp.Endpoint
	tools    *mcp.Toolset
	async    asyncState
}

// SourceConfig is where a source lives and how to authenticate to it.
type SourceConfig struct {
	BaseURL string `json:"base_url,omitempty"`
	// Token is sent as a bearer token; it is never logged. Write it as a
	// runtime placeholder ({env.SOURCE_A_TOKEN}) so that the secret stays
	// out of the config served by the admin endpoint (see token.go).
	Token string `json:"token,omitempty"`
	// TokenFile names a file holding the token, read at Provision.
	TokenFile string `json:"token_file,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "social_router",
		New: func() caddy.Module { return new(App) },
	}
}

// stores holds what outlives a config generation: one open store per
// storage location (a reload provisions the new config before the old one
// is cleaned up, and badger refuses a second open of the same directory)
// and the shared state under sharedKey.
var stores = caddy.NewUsagePool()

// sharedKey names the usage-pool entry of the state every config generation
// shares: the breakers (a reload must not forget a failing offer) and the
// per-account in-flight counts (a reload must not reset the cap while runs
// are under way).
const sharedKey = "social_router.shared"

type shared struct {
	breakers *router.Breakers
	inflight *api.InFlight
}

func (shared) Destruct() error { return nil }

type storeHandle struct{ store.Store }

func (h storeHandle) Destruct() error { return h.Close() }

// Provision compiles the registry, opens (or shares) the store and builds
// the source clients and the router.
func (a *App) Provision(ctx caddy.Context) error {
	a.logger = ctx.Logger()
	if err := metrics.Register(ctx.GetMetricsRegistry()); err != nil {
		return fmt.Errorf("registering metrics: %v", err)
	}
	if a.Services == "" {
		a.Services = "./services"
	}
	if a.KeyPrefix == "" {
		a.KeyPrefix = "sdr"
	}
	if a.AttemptTimeout == 0 {
		a.AttemptTimeout = caddy.Duration(120 * time.Second)
	}
	if a.SoftTimeout == 0 {
		a.SoftTimeout = caddy.Duration(30 * time.Second)
	}
	if a.PollInterval == 0 {
		a.PollInterval = caddy.Duration(2 * time.Second)
	}
	if a.MaxConcurrentRuns == 0 {
		a.MaxConcurrentRuns = 16
	}
	if a.Storage == nil {
		a.Storage = &backend.Config{Type: backend.Badger}
	}
	if a.Storage.Type == backend.Badger && a.Storage.Dir == "" {
		a.Storage.Dir = filepath.Join(caddy.AppDataDir(), "social_router", "badger")
	}

	v, _, _ := stores.LoadOrNew(sharedKey, func() (caddy.Destructor, error) {
		return &shared{breakers: router.NewBreakers(), inflight: api.NewInFlight()}, nil
	})
	a.shared = v.(*shared)

	start := time.Now()
	reg, err := registry.Load(a.Services)
	metrics.RegistryLoaded(time.Since(start), err)
	if err != nil {
		return fmt.Errorf("%w (loading services from %s)", err, a.Services) // the operator's file:line:column first
	}
	a.reg = reg
	metrics.Offers(a.offerSources())
	a.logger.Info("services compiled", zap.Int("services", len(reg.Services)), zap.Duration("took", time.Since(start)))

	clients := map[string]sources.Client{}
	for _, src := range reg.Sources {
		cfg := a.Sources[src.ID]
		if cfg == nil {
			cfg = &SourceConfig{}
		}
		tok, err := cfg.token()
		if err != nil {
			return fmt.Errorf("configuring source %s: %v", src.ID, err)
		}
		c, err := sources.New(src.Protocol, sources.Config{
			BaseURL:      cfg.BaseURL,
			Token:        tok,
			HTTPClient:   metrics.UpstreamClient(src.ID),
			PollInterval: time.Duration(a.PollInterval),
			Logger:       a.logger.Named("sources." + src.ID),
		})
		if err != nil {
			return fmt.Errorf("configuring source %s: %v", src.ID, err)
		}
		clients[src.ID] = c
	}
	for id := range a.Sources {
		if _, ok := reg.Source(id); !ok {
			return fmt.Errorf("configuring source %s: no such source is declared in %s", id, a.Services)
		}
	}
	a.router = router.New(router.Config{
		AttemptTimeout: time.Duration(a.AttemptTimeout),
		SoftTimeout:    time.Duration(a.SoftTimeout),
		Observer:       metrics.Router{},
	}, clients, a.shared.breakers, a.logger.Named("router"))

	if err := a.openStore(); err != nil {
		return err
	}
	a.provisionAsync(clients)
	return a.provisionMCP()
}

func (a *App) openStore() error {
	key, err := a.Storage.Key()
	if err != nil {
		return err
	}
	v, _, err := stores.LoadOrNew(key, func() (caddy.Destructor, error) {
		s, err := a.Storage.Open(context.Background())
		if err != nil {
			return nil, err
		}
		// Decorated once per opened store, so every config generation
		// sharing it shares the decorator too.
		return storeHandle{metrics.InstrumentStore(s, a.Storage.Type)}, nil
	})
	if err != nil {
		return err
	}
	a.storeKey = key
	a.store = v.(storeHandle).Store
	return nil
}

// Validate checks the configuration.
func (a *App) Validate() error {
	if a.MaxConcurrentRuns < 0 {
		return fmt.Errorf("max_concurrent_runs must not be negative")
	}
	if err := a.validateAsync(); err != nil {
		return err
	}
	if a.SoftTimeout > a.AttemptTimeout {
		return fmt.Errorf("soft_timeout (%s) must not exceed attempt_timeout (%s)", time.Duration(a.SoftTimeout), time.Duration(a.AttemptTimeout))
	}
	return nil
}

// Start gives this config's tools to the MCP endpoint and makes this
// config generation the one the metrics' breaker and source states are read
// from; the handler and the admin routes find the app through their
// caddy.Context.
func (a *App) Start() error {
	a.startAsync()
	a.startMCP()
	metrics.PublishStatus(a)
	return nil
}

// Stop tells the MCP endpoint this config stopped and withdraws this
// generation from the metrics' state collector if a newer one has not
// already replaced it; Cleanup releases what Provision took.
func (a *App) Stop() error {
	a.stopMCP()
	metrics.WithdrawStatus(a)
	return nil
}

// Cleanup releases this config's references to the shared store, the
// shared state and the MCP endpoint.
func (a *App) Cleanup() error {
	mcpErr := a.cleanupMCP()
	a.cleanupAsync()
	if a.shared != nil {
		_, _ = stores.Delete(sharedKey)
	}
	if a.storeKey != "" {
		if _, err := stores.Delete(a.storeKey); err != nil {
			return fmt.Errorf("closing store: %v", err)
		}
	}
	return mcpErr
}

// Registry returns the compiled registry of this config.
func (a *App) Registry() *registry.Registry { return a.reg }

// sourceStatus is the live status of a source: the admin override, the
// declared coming_soon, or what the breakers compute.
func (a *App) sourceStatus(id string) string {
	src, ok := a.reg.Source(id)
	if !ok {
		return ""
	}
	var offers []*registry.Offer
	for _, s := range a.reg.Services {
		for _, o := range s.LiveOffers() {
			if o.Source == src {
				offers = append(offers, o)
			}
		}
	}
	return a.shared.breakers.SourceStatus(id, offers, src.Status)
}

// API builds the /v1 API of this config generation.
func (a *App) API(logger *zap.Logger) *api.API {
	return api.New(api.Config{
		Registry:          a.reg,
		Store:             a.store,
		Router:            a.router,
		KeyPrefix:         a.KeyPrefix,
		MaxConcurrentRuns: a.MaxConcurrentRuns,
		InFlight:          a.shared.inflight,
		SourceStatus:      a.sourceStatus,
		Logger:            logger,
		Async:             a.async.worker,
		AsyncRouter:       a.async.router,
		AsyncDeadline:     time.Duration(a.AsyncDeadline),
	})
}

// admin builds the /sdr admin routes of this config generation.
func (a *App) admin() *admin.Handler {
	return admin.New(admin.Config{
		Store:             a.store,
		Registry:          a.reg,
		KeyPrefix:         a.KeyPrefix,
		SetSourceOverride: a.shared.breakers.SetOverride,
		SourceStatus:      a.sourceStatus,
	})
}

// Interface guards
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.Validator    = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
)
