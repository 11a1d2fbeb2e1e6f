package caddymodule

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"

	"socialrouter/caddymodule/admin"
)

func init() {
	caddy.RegisterModule(Admin{})
}

// Admin is the admin.api.social_router module: the account, key and source
// routes under /sdr/ on Caddy's admin endpoint. Caddy provisions it with
// the context of each config it loads (as the pki app's admin routes), so
// it serves the social_router app of the running config.
type Admin struct {
	h *admin.Handler
}

// CaddyModule returns the Caddy module information.
func (Admin) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.social_router",
		New: func() caddy.Module { return new(Admin) },
	}
}

// Provision finds the social_router app of the config, if it has one; the
// routes answer 503 otherwise. An app that fails to load fails the config
// itself, so its error is not repeated here.
func (a *Admin) Provision(ctx caddy.Context) error {
	if v, err := ctx.AppIfConfigured("social_router"); err == nil {
		a.h = v.(*App).admin()
	}
	return nil
}

// Routes returns the admin routes.
func (a *Admin) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: "/sdr/", Handler: caddy.AdminHandlerFunc(a.serve)}}
}

func (a *Admin) serve(w http.ResponseWriter, r *http.Request) error {
	if a.h == nil {
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: fmt.Errorf("the social_router app is not running")}
	}
	err := a.h.Serve(w, r)
	if e := (*admin.Error)(nil); errors.As(err, &e) {
		return caddy.APIError{HTTPStatus: e.Status, Err: e.Err}
	}
	return err
}

// Interface guards
var (
	_ caddy.AdminRouter = (*Admin)(nil)
	_ caddy.Provisioner = (*Admin)(nil)
)
