package caddymodule

import (
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"socialrouter/caddymodule/api"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Handler serves every /v1/… route of Social Data Router and the MCP
// endpoint /mcp (and passes any other path to the next handler). It holds
// no state of its own: the API it serves is built from the social_router
// app of its config, and the MCP endpoint is the one the app shares.
type Handler struct {
	api *api.API
	mcp http.Handler
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
	h.api = app.API(ctx.Logger())
	h.mcp = app.mcpHandler(ctx.Logger())
	return nil
}

// ServeHTTP serves /mcp and a /v1 path and hands anything else to the next
// handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	if r.URL.Path == "/mcp" {
		h.mcp.ServeHTTP(w, r)
		return nil
	}
	if !api.Serves(r.URL.Path) {
		return next.ServeHTTP(w, r)
	}
	h.api.ServeHTTP(w, r)
	return nil
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
