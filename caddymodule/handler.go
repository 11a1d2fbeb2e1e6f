package caddymodule

import (
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"socialrouter/caddymodule/api"
	"socialrouter/caddymodule/payments"
	"socialrouter/caddymodule/sources"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Handler serves every /v1/… route of Social Data Router and the MCP
// endpoint /mcp (and passes any other path to the next handler). It holds
// no state of its own: the API it serves is built from the social_router
// app of its config, and the MCP endpoint is the one the app shares.
type Handler struct {
	api  *api.API
	mcp  http.Handler
	hsts string

	// app and logger rebuild the API when a registry swap replaced the
	// app's services (built is the API over the services it last saw).
	app    *App
	logger *zap.Logger
	built  *atomic.Pointer[builtAPI]
}

// builtAPI is the API the handler built over one compile of the services.
type builtAPI struct {
	svc *compiled
	api *api.API
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.social_router",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision finds the social_router app of this config and builds the API.
func (h *Handler) Provision(ctx caddy.Context) error {
	v, err := ctx.App("social_router")
	if err != nil {
		// Caddy's error already says "loading social_router app module:";
		// wrapping it again would bury the operator's file:line further.
		return err
	}
	app := v.(*App)
	h.app, h.logger, h.built = app, ctx.Logger(), new(atomic.Pointer[builtAPI])
	h.api = app.API(ctx.Logger())
	h.mcp = app.mcpHandler(ctx.Logger())
	h.hsts = app.HSTS.value()
	return nil
}

// ServeHTTP serves /mcp, a /v1 path, the payment provider's webhook and
// the upstreams' callbacks (/_sdr/callbacks/…) and hands anything else to
// the next handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	setHSTS(w, r, h.hsts)
	if r.URL.Path == payments.WebhookPath && h.app != nil {
		h.app.servePaymentsWebhook(w, r)
		return nil
	}
	if strings.HasPrefix(r.URL.Path, sources.CallbackPrefix) && h.app != nil {
		h.app.serveCallback(w, r)
		return nil
	}
	if r.URL.Path == "/mcp" {
		h.mcp.ServeHTTP(w, r)
		return nil
	}
	if !api.Serves(r.URL.Path) {
		return next.ServeHTTP(w, r)
	}
	h.currentAPI().ServeHTTP(w, r)
	return nil
}

// currentAPI is the API over the services the app serves now: a request
// takes it once, so it runs to its end on the registry and router it
// started with, whatever swap happens meanwhile.
func (h *Handler) currentAPI() *api.API {
	if h.app == nil {
		return h.api
	}
	svc := h.app.live()
	if svc == nil {
		return h.api
	}
	if b := h.built.Load(); b != nil && b.svc == svc {
		return b.api
	}
	b := &builtAPI{svc: svc, api: h.app.apiFor(svc, h.logger)}
	h.built.Store(b)
	return b.api
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
