package api

import (
	"fmt"
	"net/http"
	"strings"

	"socialrouter/caddymodule/registry"
)

// catalogue serves GET /v1/services.
func (a *API) catalogue(w http.ResponseWriter, r *http.Request) { a.serveCatalogue(w, "", "") }

// platform serves GET /v1/services/{platform}.
func (a *API) platform(w http.ResponseWriter, r *http.Request) {
	a.serveCatalogue(w, r.PathValue("platform"), "")
}

// entry serves GET /v1/services/{platform}/{service}.
func (a *API) entry(w http.ResponseWriter, r *http.Request) {
	a.serveCatalogue(w, r.PathValue("platform"), r.PathValue("service"))
}

func (a *API) serveCatalogue(w http.ResponseWriter, platform, service string) {
	b, apiErr := a.Catalogue(platform, service)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	writeRaw(w, http.StatusOK, b)
}

// providers serves GET /v1/providers.
func (a *API) providers(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"data": a.Registry.Providers(a.SourceStatus)})
}

// provider serves GET /v1/providers/{id}.
func (a *API) provider(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	src, ok := a.Registry.Source(id)
	if !ok {
		newError(http.StatusNotFound, "not_found", typeNotFound,
			fmt.Sprintf("no source %q; GET /v1/providers lists the sources", id)).write(w)
		return
	}
	writeJSON(w, http.StatusOK, a.Registry.Provider(src, a.SourceStatus))
}

// openapi serves GET /v1/openapi.json.
func (a *API) openapi(w http.ResponseWriter, r *http.Request) {
	writeRaw(w, http.StatusOK, a.Registry.OpenAPIJSON())
}

func unknownPlatform(reg *registry.Registry, platform string) *Error {
	return newError(http.StatusNotFound, "unknown_platform", typeNotFound,
		fmt.Sprintf("unknown platform %q; valid platforms: %s", platform, strings.Join(reg.Platforms, ", "))).
		with("available_platforms", reg.Platforms)
}

// Service resolves a platform and service name to a callable extraction
// service, or to the documented 404s: unknown_platform, unknown_service
// (with a suggestion) and service_not_available.
func (a *API) Service(platform, name string) (*registry.Service, *Error) {
	reg := a.Registry
	if _, ok := reg.PlatformServices(platform); !ok {
		return nil, unknownPlatform(reg, platform)
	}
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
		e.Message = msg
		return nil, e.with("available_services", names)
	}
	if !svc.Callable() {
		return nil, newError(http.StatusNotFound, "service_not_available", typeNotFound,
			fmt.Sprintf("%s/%s is declared but no offer serves it yet; GET /v1/services lists the callable services", platform, name))
	}
	return svc, nil
}
