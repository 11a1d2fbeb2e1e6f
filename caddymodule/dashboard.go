package caddymodule

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"socialrouter/caddymodule/dashboard"
	"socialrouter/caddymodule/oauth"
	"socialrouter/caddymodule/registry"
)

func init() {
	caddy.RegisterModule(Dashboard{})
	httpcaddyfile.RegisterHandlerDirective("sdr_dashboard", parseDashboard)
	httpcaddyfile.RegisterDirectiveOrder("sdr_dashboard", httpcaddyfile.Before, "reverse_proxy")
}

// Dashboard is the http.handlers.sdr_dashboard module: the account
// dashboard (package dashboard) under Path, over the social_router app of
// its config, and the OAuth sign-in of MCP clients (package oauth): its
// well-known metadata and /oauth/* endpoints, whose authorize step is the
// dashboard's sign-in and a consent page. Other paths go to the next
// handler.
type Dashboard struct {
	// Path is where the dashboard is served. Default: "/dashboard/".
	Path string `json:"path,omitempty"`

	h     *dashboard.Handler
	oauth *oauth.Server
}

// CaddyModule returns the Caddy module information.
func (Dashboard) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.sdr_dashboard",
		New: func() caddy.Module { return new(Dashboard) },
	}
}

// Provision builds the dashboard over the app's store and registry.
func (d *Dashboard) Provision(ctx caddy.Context) error {
	if d.Path == "" {
		d.Path = "/dashboard/"
	}
	if !strings.HasPrefix(d.Path, "/") {
		return fmt.Errorf("sdr_dashboard path %q must start with /", d.Path)
	}
	if !strings.HasSuffix(d.Path, "/") {
		d.Path += "/"
	}
	v, err := ctx.App("social_router")
	if err != nil {
		// Caddy's error already says "loading social_router app module:";
		// wrapping it again would bury the operator's file:line further.
		return err
	}
	app := v.(*App)
	d.oauth = app.oauthServer(ctx.Logger().Named("oauth"))
	d.h = dashboard.New(dashboard.Config{
		OAuth:     d.oauth,
		Store:     app.store,
		Registry:  func() *registry.Registry { return app.reg },
		KeyPrefix: app.KeyPrefix,
		Path:      d.Path,
		Logger:    ctx.Logger(),
		Webhooks:  app.webhooks,
	})
	return nil
}

// ServeHTTP serves the dashboard's paths (the bare path redirects to the
// one with a slash) and the OAuth endpoints, and hands anything else to
// the next handler.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	switch p := r.URL.Path; {
	case p == strings.TrimSuffix(d.Path, "/"):
		http.Redirect(w, r, d.Path, http.StatusMovedPermanently)
	case strings.HasPrefix(p, d.Path):
		d.h.ServeHTTP(w, r)
	case p == oauth.PathAuthorize:
		d.h.ServeAuthorize(w, r)
	case oauth.Serves(p):
		d.oauth.ServeHTTP(w, r)
	default:
		return next.ServeHTTP(w, r)
	}
	return nil
}

func parseDashboard(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	d := new(Dashboard)
	err := d.UnmarshalCaddyfile(h.Dispenser)
	return d, err
}

// UnmarshalCaddyfile sets up the dashboard:
//
//	sdr_dashboard {
//		path /dashboard/
//	}
//
// The path is a subdirective, not an argument: Caddy reads a first argument
// that starts with "/" as a request matcher, so `sdr_dashboard /console/`
// would only match that one path.
func (d *Dashboard) UnmarshalCaddyfile(disp *caddyfile.Dispenser) error {
	disp.Next() // directive name
	if disp.NextArg() {
		return disp.Errf("sdr_dashboard takes no argument; set the path in a block: sdr_dashboard { path %s }", disp.Val())
	}
	for nesting := disp.Nesting(); disp.NextBlock(nesting); {
		switch disp.Val() {
		case "path":
			if !disp.NextArg() {
				return disp.ArgErr()
			}
			d.Path = disp.Val()
			if disp.NextArg() {
				return disp.ArgErr()
			}
		default:
			return disp.Errf("unknown sdr_dashboard subdirective %q (valid: path)", disp.Val())
		}
	}
	return nil
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Dashboard)(nil)
	_ caddyhttp.MiddlewareHandler = (*Dashboard)(nil)
	_ caddyfile.Unmarshaler       = (*Dashboard)(nil)
)
