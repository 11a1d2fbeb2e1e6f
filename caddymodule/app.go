// Package caddymodule wires Social Data Router into Caddy: the
// social_router app (shared state: registry, store, source clients,
// breakers), the HTTP handler that serves /v1, the admin routes under /sdr/
// and the `caddy sdr` subcommands. It is thin: the work is done by the
// packages beneath it (registry, router, sources, store, ratelimit).
package caddymodule

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/sources"
	"socialrouter/caddymodule/store"
	badgerstore "socialrouter/caddymodule/store/badger"
	pgstore "socialrouter/caddymodule/store/postgres"
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
	Storage *StorageConfig `json:"storage,omitempty"`
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

	reg      *registry.Registry
	store    store.Store
	storeKey string
	router   *router.Router
	logger   *zap.Logger
}

// StorageConfig selects the store: "badger" with a directory (one process)
// or "postgres" with a URL (several gateway nodes).
type StorageConfig struct {
	Type string `json:"type"`
	Dir  string `json:"dir,omitempty"`
	URL  string `json:"url,omitempty"`
}

// SourceConfig is where a source lives and how to authenticate to it.
type SourceConfig struct {
	BaseURL string `json:"base_url,omitempty"`
	// Token is sent as a bearer token; it is never logged.
	Token string `json:"token,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "social_router",
		New: func() caddy.Module { return new(App) },
	}
}

// stores shares one open store per storage location across config
// generations: a reload provisions the new config before the old one is
// cleaned up, and badger refuses a second open of the same directory.
var stores = caddy.NewUsagePool()

// breakers outlive reloads so a reload does not forget a failing offer.
var breakers = router.NewBreakers()

// current is the running app, for the admin routes (which run in a fresh
// module instance). Start sets it; Stop clears it only if still its own.
var current atomic.Pointer[App]

// inflight counts runs in flight per account, across config generations.
var inflight sync.Map // account id → *atomic.Int64

type storeHandle struct{ store.Store }

func (h storeHandle) Destruct() error { return h.Close() }

// Provision compiles the registry, opens (or shares) the store and builds
// the source clients and the router.
func (a *App) Provision(ctx caddy.Context) error {
	a.logger = ctx.Logger()
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
		a.Storage = &StorageConfig{Type: "badger"}
	}
	if a.Storage.Type == "badger" && a.Storage.Dir == "" {
		a.Storage.Dir = filepath.Join(caddy.AppDataDir(), "social_router", "badger")
	}

	start := time.Now()
	reg, err := registry.Load(a.Services)
	if err != nil {
		return fmt.Errorf("%w (loading services from %s)", err, a.Services) // the operator's file:line:column first
	}
	a.reg = reg
	a.logger.Info("services compiled", zap.Int("services", len(reg.Services)), zap.Duration("took", time.Since(start)))

	clients := map[string]sources.Client{}
	for _, src := range reg.Sources {
		cfg := a.Sources[src.ID]
		if cfg == nil {
			cfg = &SourceConfig{}
		}
		c, err := sources.New(src.Protocol, sources.Config{
			BaseURL:      cfg.BaseURL,
			Token:        cfg.Token,
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
	}, clients, breakers, a.logger.Named("router"))

	if err := a.openStore(ctx); err != nil {
		return err
	}
	return nil
}

func (a *App) openStore(ctx caddy.Context) error {
	switch a.Storage.Type {
	case "badger":
		dir, err := filepath.Abs(a.Storage.Dir)
		if err != nil {
			return fmt.Errorf("resolving storage directory: %v", err)
		}
		a.storeKey = "badger:" + dir
		v, _, err := stores.LoadOrNew(a.storeKey, func() (caddy.Destructor, error) {
			s, err := badgerstore.Open(dir, badgerstore.Options{})
			if err != nil {
				return nil, err
			}
			return storeHandle{s}, nil
		})
		if err != nil {
			return fmt.Errorf("opening badger store: %v", err)
		}
		a.store = v.(storeHandle).Store
	case "postgres":
		if a.Storage.URL == "" {
			return fmt.Errorf("opening postgres store: storage postgres needs a URL")
		}
		a.storeKey = "postgres:" + a.Storage.URL
		v, _, err := stores.LoadOrNew(a.storeKey, func() (caddy.Destructor, error) {
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := pgstore.Open(cctx, a.Storage.URL)
			if err != nil {
				return nil, err
			}
			return storeHandle{s}, nil
		})
		if err != nil {
			return fmt.Errorf("opening postgres store: %v", err)
		}
		a.store = v.(storeHandle).Store
	default:
		return fmt.Errorf("opening store: unknown storage type %q (use badger or postgres)", a.Storage.Type)
	}
	return nil
}

// Validate checks the configuration.
func (a *App) Validate() error {
	if a.MaxConcurrentRuns < 0 {
		return fmt.Errorf("max_concurrent_runs must not be negative")
	}
	if a.SoftTimeout > a.AttemptTimeout {
		return fmt.Errorf("soft_timeout (%s) must not exceed attempt_timeout (%s)", time.Duration(a.SoftTimeout), time.Duration(a.AttemptTimeout))
	}
	return nil
}

// Start publishes the app for the admin routes.
func (a *App) Start() error {
	current.Store(a)
	return nil
}

// Stop withdraws the app from the admin routes if a newer config has not
// already replaced it.
func (a *App) Stop() error {
	current.CompareAndSwap(a, nil)
	return nil
}

// Cleanup releases this config's reference to the shared store.
func (a *App) Cleanup() error {
	if a.storeKey != "" {
		if _, err := stores.Delete(a.storeKey); err != nil {
			return fmt.Errorf("closing store: %v", err)
		}
	}
	return nil
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
	return breakers.SourceStatus(id, offers, src.Status)
}

// acquireRun counts a run in flight for the account; false when the
// account already has MaxConcurrentRuns in flight.
func (a *App) acquireRun(account string) (release func(), ok bool) {
	v, _ := inflight.LoadOrStore(account, new(atomic.Int64))
	n := v.(*atomic.Int64)
	if n.Add(1) > int64(a.MaxConcurrentRuns) {
		n.Add(-1)
		return nil, false
	}
	return func() { n.Add(-1) }, true
}

// Interface guards
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.Validator    = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
)
