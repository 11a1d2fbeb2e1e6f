package caddymodule

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/store"
)

func init() {
	caddy.RegisterModule(Handler{})
}

// Handler serves every /v1/… route of Social Data Router (and passes any
// other path to the next handler). It holds no state of its own: it asks
// the social_router app for the current registry and store.
type Handler struct {
	app    *App
	logger *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.social_router",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision finds the social_router app of this config.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()
	v, err := ctx.App("social_router")
	if err != nil {
		return fmt.Errorf("loading social_router app: %v", err)
	}
	h.app = v.(*App)
	return nil
}

// ServeHTTP routes a /v1 request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	path := r.URL.Path
	if path != "/v1" && !strings.HasPrefix(path, "/v1/") {
		if foldsOntoV1(path) {
			notUnderV1(w)
			return nil
		}
		return next.ServeHTTP(w, r)
	}
	seg := strings.Split(strings.Trim(strings.TrimPrefix(path, "/v1"), "/"), "/")
	if len(seg) == 1 && seg[0] == "" {
		seg = nil
	}
	h.route(w, r, seg)
	return nil
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	newError(http.StatusMethodNotAllowed, "method_not_allowed", typeValidation,
		"this endpoint accepts "+allow+" only").write(w)
}

func (h *Handler) route(w http.ResponseWriter, r *http.Request, seg []string) {
	only := func(m string) bool {
		if r.Method == m || (m == http.MethodGet && r.Method == http.MethodHead) {
			return true
		}
		methodNotAllowed(w, m)
		return false
	}
	reg := h.app.reg
	switch {
	case len(seg) >= 1 && seg[0] == "services" && len(seg) <= 3:
		if only(http.MethodGet) {
			h.services(w, reg, seg[1:])
		}
	case len(seg) == 1 && seg[0] == "providers":
		if only(http.MethodGet) {
			writeJSON(w, http.StatusOK, map[string]any{"data": reg.Providers(h.app.sourceStatus)})
		}
	case len(seg) == 2 && seg[0] == "providers":
		if only(http.MethodGet) {
			src, ok := reg.Source(seg[1])
			if !ok {
				newError(http.StatusNotFound, "not_found", typeNotFound,
					fmt.Sprintf("no source %q; GET /v1/providers lists the sources", seg[1])).write(w)
				return
			}
			writeJSON(w, http.StatusOK, reg.Provider(src, h.app.sourceStatus))
		}
	case len(seg) == 1 && seg[0] == "openapi.json":
		if only(http.MethodGet) {
			writeRaw(w, http.StatusOK, reg.OpenAPIJSON())
		}
	case len(seg) == 3 && seg[0] == "extract":
		if only(http.MethodPost) {
			h.extract(w, r, seg[1], seg[2])
		}
	case len(seg) == 1 && seg[0] == "search":
		if only(http.MethodPost) {
			h.search(w, r)
		}
	case len(seg) == 2 && seg[0] == "extractions":
		if only(http.MethodGet) {
			h.getRun(w, r, seg[1])
		}
	case len(seg) == 2 && seg[0] == "account" && seg[1] == "balance":
		if only(http.MethodGet) {
			h.balance(w, r)
		}
	case len(seg) == 2 && seg[0] == "account" && seg[1] == "usage":
		if only(http.MethodGet) {
			h.usage(w, r)
		}
	case len(seg) == 2:
		// The alias /v1/{platform}/{service} of the OpenAPI operations.
		if only(http.MethodPost) {
			h.extract(w, r, seg[0], seg[1])
		}
	default:
		newError(http.StatusNotFound, "not_found", typeNotFound,
			fmt.Sprintf("no endpoint %s %s; GET /v1/openapi.json describes the API", r.Method, r.URL.Path)).write(w)
	}
}

func (h *Handler) services(w http.ResponseWriter, reg *registry.Registry, seg []string) {
	if len(seg) == 0 {
		writeRaw(w, http.StatusOK, reg.CatalogueJSON())
		return
	}
	svc, err := lookupService(reg, seg[0], seg[1:])
	if err != nil {
		err.write(w)
		return
	}
	if svc == nil {
		b, _ := reg.PlatformJSON(seg[0])
		writeRaw(w, http.StatusOK, b)
		return
	}
	b, _ := reg.EntryJSON(svc)
	writeRaw(w, http.StatusOK, b)
}

// lookupService resolves a platform and optional service name to a
// callable service, or to the documented 404s. With no service name it
// returns nil, nil for a known platform.
func lookupService(reg *registry.Registry, platform string, rest []string) (*registry.Service, *apiError) {
	if _, ok := reg.PlatformServices(platform); !ok {
		return nil, newError(http.StatusNotFound, "unknown_platform", typeNotFound,
			fmt.Sprintf("unknown platform %q; valid platforms: %s", platform, strings.Join(reg.Platforms, ", "))).
			with("available_platforms", reg.Platforms)
	}
	if len(rest) == 0 {
		return nil, nil
	}
	name := rest[0]
	svc, ok := reg.Service(platform, name)
	if !ok || !svc.Extract {
		names := reg.ServiceNames(platform)
		if names == nil {
			names = []string{}
		}
		msg := fmt.Sprintf("unknown service %q for platform %s", name, platform)
		e := newError(http.StatusNotFound, "unknown_service", typeNotFound, "")
		if s := registry.Suggest(name, names); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
			e.with("did_you_mean", s)
		}
		if len(names) > 0 {
			msg += "; available services: " + strings.Join(names, ", ")
		} else {
			msg += "; this platform has no services yet"
		}
		e.message = msg
		return nil, e.with("available_services", names)
	}
	if !svc.Callable() {
		return nil, newError(http.StatusNotFound, "service_not_available", typeNotFound,
			fmt.Sprintf("%s/%s is declared but no offer serves it yet; GET /v1/services lists the callable services", platform, name))
	}
	return svc, nil
}

// caller is the authenticated key of a request.
type caller struct {
	key store.Key
}

// authenticate checks the bearer key: missing → missing_api_key, malformed
// or unknown → invalid_api_key, revoked → revoked_api_key (all 401).
func (h *Handler) authenticate(r *http.Request) (*caller, *apiError) {
	hdr := r.Header.Get("Authorization")
	if hdr == "" {
		return nil, newError(http.StatusUnauthorized, "missing_api_key", typeAuthentication,
			"no API key: send it as Authorization: Bearer "+h.app.KeyPrefix+"_live_…")
	}
	scheme, secret, ok := strings.Cut(hdr, " ")
	secret = strings.TrimSpace(secret)
	if !ok || !strings.EqualFold(scheme, "Bearer") || !strings.HasPrefix(secret, h.app.KeyPrefix+"_live_") {
		return nil, newError(http.StatusUnauthorized, "invalid_api_key", typeAuthentication,
			"malformed Authorization header: expected Authorization: Bearer "+h.app.KeyPrefix+"_live_…")
	}
	k, err := h.app.store.KeyByHash(r.Context(), sha256.Sum256([]byte(secret)))
	if errors.Is(err, store.ErrNotFound) {
		return nil, newError(http.StatusUnauthorized, "invalid_api_key", typeAuthentication,
			"unknown API key; check that it was copied whole, or create a new one")
	}
	if err != nil {
		h.logger.Error("looking up api key", zap.Error(err))
		return nil, newError(http.StatusServiceUnavailable, "store_unavailable", "internal",
			"the account store is unavailable; retry shortly")
	}
	if k.RevokedAt != nil {
		return nil, newError(http.StatusUnauthorized, "revoked_api_key", typeAuthentication,
			"this API key was revoked on "+k.RevokedAt.UTC().Format("2006-01-02T15:04:05Z")+"; create a new key")
	}
	return &caller{key: k}, nil
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
