// Package caddymodule wires Social Data Router into Caddy and holds only
// that wiring: the social_router app (registry, store, source clients,
// router and the state shared across reloads), the http.handlers module
// that serves the api package on /v1, the admin.api module that serves the
// admin package on /sdr/, the Caddyfile and the `caddy sdr` commands.
package caddymodule

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"socialrouter/caddymodule/limits"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"socialrouter/caddymodule/admin"
	"socialrouter/caddymodule/api"
	"socialrouter/caddymodule/cache"
	"socialrouter/caddymodule/callbacks"
	"socialrouter/caddymodule/mcp"
	"socialrouter/caddymodule/metrics"
	"socialrouter/caddymodule/payments"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/retention"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/backend"
	"socialrouter/caddymodule/webhooks"
)

func init() {
	caddy.RegisterModule(App{})
}

// App is the social_router app. It owns the compiled service registry, the
// account store, the source clients and the router; handlers reach it with
// ctx.App("social_router").
type App struct {
	// CacheMaxBytes bounds the freshness cache's entries (app_cache.go);
	// 0: unbounded (entries still expire).
	CacheMaxBytes int64 `json:"cache_max_bytes,omitempty"`
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
	// MCPOrigins are the web origins, besides the site's own, whose pages
	// may call /mcp from a browser (such as http://localhost:6274, the MCP
	// Inspector); any other Origin is refused (mcp.CheckOrigin).
	MCPOrigins []string `json:"mcp_origins,omitempty"`
	// RunRetention, when set, deletes a run's records this long after the
	// run was created, in the background, keeping its billing facts (id,
	// status, service, served_by, credits_used, counts, timestamps), so
	// usage and invoices do not change; GET /v1/extractions/{id} then
	// answers the run with "data": [] and "records_expired": true.
	// Default 0: runs keep their records for ever.
	RunRetention caddy.Duration `json:"run_retention,omitempty"`
	// ServicesDigest is a digest of the service files, set by the Caddyfile
	// adapter, so that `caddy reload` sees a changed config (and reloads)
	// when only the declarations changed. It is informational otherwise.
	ServicesDigest string `json:"services_digest,omitempty"`
	// HSTS is the Strict-Transport-Security header of TLS responses
	// (hsts.go). Default: max-age of a year, no includeSubDomains.
	HSTS *HSTS `json:"hsts,omitempty"`
	// WatchServices recompiles the services directory when a file in it
	// changes and swaps the registry in place (services.go), as
	// POST /sdr/registry/reload does. Default: off.
	WatchServices bool `json:"watch_services,omitempty"`
	// WatchDebounce is how long the directory must stay unchanged before
	// a change is compiled (an editor or a deploy writes several files).
	// Default: 1s.
	WatchDebounce caddy.Duration `json:"watch_debounce,omitempty"`

	WebhooksConfig // webhooks_allow_private, webhooks_retry_schedule (webhooks.go)

	// Async configures the asynchronous runs (app_async.go).
	Async

	// Payments configures top-ups by card (payments.go). Default: off.
	Payments *PaymentsConfig `json:"payments,omitempty"`

	reg      *registry.Registry
	store    store.Store
	storeKey string
	// storeMark is this generation's mark as the running store
	// (storageswitch.go).
	storeMark *string
	shared    *shared
	router    *router.Router
	logger    *zap.Logger
	mcp       *mcp.Endpoint
	tools     *mcp.Toolset
	retain    *retention.Runner // nil without run_retention

	// swap holds the services serving now (reg, router and tools as
	// Provision compiled them, until a registry swap replaces them) and
	// what serializes swaps; see services.go.
	swap *swapState

	webhooks *webhooks.Service
	async    asyncState
	payments *payments.Service // without a payments block: notices only
	cache    *cache.Cache      // nil: the store keeps no cache
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
	// CallbackBase, if set, is the public base URL at which this source's
	// upstream reaches the gateway: its runs are started with the
	// upstream's callback parameters (callbacks.go) and waited for by
	// callback, polled only after CallbackFallback without one.
	CallbackBase string `json:"callback_base,omitempty"`
	// CallbackSecret keys the callbacks' URL tokens (at least 32 bytes,
	// the same on every node); like Token, best a runtime placeholder.
	CallbackSecret string `json:"callback_secret,omitempty"`
	// CallbackFallback is how long a batch waits for its callback before
	// polling. Default: 2m.
	CallbackFallback caddy.Duration `json:"callback_fallback,omitempty"`
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
	// hub wakes the batches waiting for an upstream's callback
	// (callbacks.go); it outlives reloads, as the waiting batches do.
	hub *callbacks.Hub
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
		a.MaxConcurrentRuns = limits.ConcurrentRunsDefault
	}
	if a.Storage == nil {
		a.Storage = &backend.Config{Type: backend.Badger}
	}
	if a.Storage.Type == backend.Badger && a.Storage.Dir == "" {
		a.Storage.Dir = filepath.Join(caddy.AppDataDir(), "social_router", "badger")
	}

	v, _, _ := stores.LoadOrNew(sharedKey, func() (caddy.Destructor, error) {
		return &shared{breakers: router.NewBreakers(), inflight: api.NewInFlight(), hub: callbacks.NewHub()}, nil
	})
	a.shared = v.(*shared)

	c, err := a.compile(ctx)
	if err != nil {
		return err
	}
	a.reg, a.router, a.tools = c.reg, c.router, c.tools
	a.swap = &swapState{}
	a.swap.live.Store(c)
	metrics.Offers(a.offerSources())

	if err := a.openStore(); err != nil {
		return err
	}
	a.provisionCache()
	a.provisionWebhooks()
	if err := a.provisionPayments(); err != nil {
		return err
	}
	a.provisionAsync()
	// After every default is set: the running config's fingerprint was
	// taken with them.
	a.noteServicesOnly()
	return a.provisionMCP()
}

func (a *App) openStore() error {
	key, err := a.Storage.Key()
	if err != nil {
		return err
	}
	if err := a.refuseStorageSwitch(key); err != nil {
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
	if a.RunRetention < 0 {
		return fmt.Errorf("run_retention must not be negative")
	}
	if a.SoftTimeout > a.AttemptTimeout {
		return fmt.Errorf("soft_timeout (%s) must not exceed attempt_timeout (%s)", time.Duration(a.SoftTimeout), time.Duration(a.AttemptTimeout))
	}
	return a.HSTS.validate()
}

// Start gives this config's tools to the MCP endpoint and makes this
// config generation the one the metrics' breaker and source states are read
// from; the handler and the admin routes find the app through their
// caddy.Context.
func (a *App) Start() error {
	a.startAsync()
	a.startMCP()
	metrics.PublishStatus(a)
	a.markRunningStore()
	running.note(a, a.current().digest)
	a.startWatch()
	a.webhooks.Start()
	return a.startRetention()
}

// startRetention starts this generation's run_retention passes, if set.
// Two generations briefly overlap across a reload; their passes then
// share the work (a run is expired once, whichever takes it).
func (a *App) startRetention() error {
	if a.RunRetention <= 0 {
		return nil
	}
	a.retain = &retention.Runner{Store: a.store, Window: time.Duration(a.RunRetention), Logger: a.logger.Named("retention")}
	a.retain.Start()
	return nil
}

// Stop tells the MCP endpoint this config stopped and withdraws this
// generation from the metrics' state collector if a newer one has not
// already replaced it; Cleanup releases what Provision took.
func (a *App) Stop() error {
	a.stopWatch()
	if a.retain != nil {
		a.retain.Stop()
	}
	a.stopMCP()
	metrics.WithdrawStatus(a)
	a.webhooks.Stop()
	a.unmarkRunningStore()
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
func (a *App) Registry() *registry.Registry { return a.current().reg }

// sourceStatus is the live status of a source: the admin override, the
// declared coming_soon, or what the breakers compute.
func (a *App) sourceStatus(id string) string {
	reg := a.current().reg
	src, ok := reg.Source(id)
	if !ok {
		return ""
	}
	var offers []*registry.Offer
	for _, s := range reg.Services {
		for _, o := range s.LiveOffers() {
			if o.Source == src {
				offers = append(offers, o)
			}
		}
	}
	return a.shared.breakers.SourceStatus(id, offers, src.Status)
}

// API builds the /v1 API of this config generation over the services
// serving now.
func (a *App) API(logger *zap.Logger) *api.API { return a.apiFor(a.current(), logger) }

// apiFor builds the /v1 API over the services c: a call served by it keeps
// c's registry and router to its end, whatever swap happens meanwhile.
func (a *App) apiFor(c *compiled, logger *zap.Logger) *api.API {
	return api.New(api.Config{
		Registry:           c.reg,
		Store:              a.apiStore(),
		Router:             c.router,
		KeyPrefix:          a.KeyPrefix,
		MaxConcurrentRuns:  a.MaxConcurrentRuns,
		InFlight:           a.shared.inflight,
		SourceStatus:       a.sourceStatus,
		Logger:             logger,
		Async:              a.async.worker,
		AsyncRouter:        c.asyncRouter,
		TestRouter:         c.testRouter,
		TestAsyncRouter:    c.testAsyncRouter,
		AsyncDeadline:      cmp.Or(time.Duration(a.AsyncDeadline), api.DefaultAsyncDeadline),
		AsyncMaxPerAccount: a.AsyncMaxPerAccount,
		Cache:              a.cache,
		CallbackWait:       a.callbackWait,
	})
}

// admin builds the /sdr admin routes of this config generation.
func (a *App) admin() *admin.Handler {
	return admin.New(admin.Config{
		Store:             a.store,
		Registry:          a.current().reg,
		KeyPrefix:         a.KeyPrefix,
		SetSourceOverride: a.shared.breakers.SetOverride,
		SourceStatus:      a.sourceStatus,
		Webhooks:          a.webhooks,
		Cache:             a.cache,
	})
}

// Interface guards
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.Validator    = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
)
