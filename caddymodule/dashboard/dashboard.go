// Package dashboard is the account dashboard: server-rendered pages where
// an account's members sign in, create and revoke API keys, set credit
// limits and see their spend and runs. It is a plain http.Handler over the
// store methods it declares (Store, store.go) and the current registry;
// Caddy's sdr_dashboard handler mounts it.
//
// Layout (after miniflux): routes.go lists every route, one small file per
// page or action, forms.go validates every form, middleware.go loads the
// session and csrf.go refuses cross-site writes; templates and static
// assets are embedded.
package dashboard

import (
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/oauth"
	"socialrouter/caddymodule/passhash"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/webhooks"
)

// Lifetimes of a session: it ends after IdleTimeout without a request, and
// AbsoluteTimeout after sign-in whatever the activity.
const (
	IdleTimeout     = 12 * time.Hour
	AbsoluteTimeout = 7 * 24 * time.Hour
	// touchEvery bounds the store writes that keep a session alive: one
	// per session per minute at most.
	touchEvery = time.Minute
)

// Config is what the dashboard works with.
type Config struct {
	Store Store
	// Registry returns the registry of the current config generation.
	Registry func() *registry.Registry
	// KeyPrefix is the prefix of API keys (<prefix>_live_…).
	KeyPrefix string
	// Path is where the dashboard is mounted, with a trailing slash
	// (default "/dashboard/").
	Path   string
	Logger *zap.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// OAuth is the authorization server whose authorize step (sign-in,
	// then consent) the dashboard serves; nil: no OAuth sign-in.
	OAuth *oauth.Server
	// Limits are the sign-in, invitation and password attempt limits
	// (zero rules: DefaultLimits).
	Limits Limits
	// Hashes is the pool every password hash runs in (default
	// passhash.Default()).
	Hashes *passhash.Pool
	// Webhooks is the account's webhook endpoints and delivery log (the
	// webhooks page); nil: no webhooks page.
	Webhooks *webhooks.Service
	// Billing is money in (payments.Service): top-ups by card when
	// Enabled, balance.low and the settings always; nil: no Billing page.
	Billing Billing
	// RefusalHold is how long a throttled sign-in or invitation post is
	// held before its 429 (at most its Retry-After; shed.go): zero is
	// DefaultRefusalHold, negative answers at once.
	RefusalHold time.Duration
}

// Handler serves the dashboard. Build it with New.
type Handler struct {
	Config
	handler   http.Handler
	authorize http.Handler  // /oauth/authorize
	held      chan struct{} // refusals being held (shed.go)
}

// New builds the dashboard and its routes.
func New(c Config) *Handler {
	if c.Path == "" {
		c.Path = "/dashboard/"
	}
	if !strings.HasSuffix(c.Path, "/") {
		c.Path += "/"
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Hashes == nil {
		c.Hashes = passhash.Default()
	}
	c.Limits = c.Limits.withDefaults()
	if c.RefusalHold == 0 {
		c.RefusalHold = DefaultRefusalHold
	}
	h := &Handler{Config: c, held: make(chan struct{}, maxHeldRefusals)}
	h.handler = h.routes()
	h.authorize = h.authorizeHandler()
	return h
}

// ServeHTTP serves a request under Path.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.handler.ServeHTTP(w, r)
}

func (h *Handler) now() time.Time { return h.Now().UTC() }

// link is a dashboard URL path for a path relative to the mount point.
func (h *Handler) link(rel string) string { return h.Path + strings.TrimPrefix(rel, "/") }
