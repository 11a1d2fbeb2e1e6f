package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

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
	h   *admin.Handler
	app *App
	// built is the admin handler over the services a registry swap last
	// installed (h is the one over the services Provision compiled).
	built *atomic.Pointer[builtAdmin]
}

type builtAdmin struct {
	svc *compiled
	h   *admin.Handler
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
		a.app, a.built = v.(*App), new(atomic.Pointer[builtAdmin])
		a.h = a.app.admin()
	}
	return nil
}

// Routes returns the admin routes.
func (a *Admin) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{
		{Pattern: "/sdr/", Handler: caddy.AdminHandlerFunc(a.serve)},
		{Pattern: "/sdr/registry/reload", Handler: caddy.AdminHandlerFunc(a.reloadRegistry)},
	}
}

func (a *Admin) serve(w http.ResponseWriter, r *http.Request) error {
	if a.h == nil {
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: fmt.Errorf("the social_router app is not running")}
	}
	err := a.current().Serve(w, r)
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

// current is the admin handler over the services serving now.
func (a *Admin) current() *admin.Handler {
	if a.app == nil {
		return a.h
	}
	svc := a.app.live()
	if svc == nil {
		return a.h
	}
	if b := a.built.Load(); b != nil && b.svc == svc {
		return b.h
	}
	b := &builtAdmin{svc: svc, h: a.app.admin()}
	a.built.Store(b)
	return b.h
}

// reloadRegistry serves POST /sdr/registry/reload: recompile the services
// directory and swap the registry in place (App.SwapServices). 200 with
// what changed; 400 with the compiler's message, its first line the
// file:line:column of the fault, when the directory does not compile (the
// running services keep serving).
func (a *Admin) reloadRegistry(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("POST only")}
	}
	if a.app == nil {
		return caddy.APIError{HTTPStatus: http.StatusServiceUnavailable, Err: fmt.Errorf("the social_router app is not running")}
	}
	res, err := a.app.SwapServices()
	if err != nil {
		return caddy.APIError{HTTPStatus: http.StatusBadRequest, Err: err}
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(res)
}
