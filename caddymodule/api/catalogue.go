package api

import (
	"fmt"
	"net/http"
	"strings"

	"socialrouter/caddymodule/errkind"
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
	msg := fmt.Sprintf("unknown platform %q; valid platforms: %s", platform, strings.Join(reg.Platforms, ", "))
	if platform == "extract" {
		// POST /v1/extract/{platform} reaches the /v1/{platform}/{service}
		// alias with the namespace in the platform's place.
		msg += "; an extraction takes both segments: POST /v1/extract/{platform}/{service}"
	}
	return newError(http.StatusNotFound, "unknown_platform", typeNotFound, msg).
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
		// available_services are the callable ones, as GET
		// /v1/services/{platform} lists them; the suggestion may also name
		// a declared service no offer serves yet (its call says so).
		names := []string{}
		for _, n := range reg.ServiceNames(platform) {
			if s, _ := reg.Service(platform, n); s.Callable() {
				names = append(names, n)
			}
		}
		msg := fmt.Sprintf("unknown service %q for platform %s", name, platform)
		e := newError(http.StatusNotFound, "unknown_service", typeNotFound, "")
		if ok && svc.Search {
			msg = fmt.Sprintf("%s/%s is a search type, not an extraction service: call POST /v1/search with a provider slug such as %q",
				platform, name, searchSlug(reg, svc))
			e.with("endpoint", "/v1/search")
		} else if s := registry.Suggest(name, reg.ServiceNames(platform)); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
			e.with("did_you_mean", s)
		}
		if len(names) > 0 {
			msg += "; available services: " + strings.Join(names, ", ")
		} else {
			msg += "; this platform has no callable services yet"
		}
		e.Message = msg
		return nil, e.with("available_services", names)
	}
	if !svc.Callable() {
		return nil, kindError(errkind.ServiceNotAvailable,
			fmt.Sprintf("%s/%s is declared but no offer serves it yet; GET /v1/services lists the callable services", platform, name))
	}
	return svc, nil
}

// searchSlug is the provider slug of a search type's first live offer (its
// bare <source>/<platform>/<type> when it has none).
func searchSlug(reg *registry.Registry, svc *registry.Service) string {
	if offers := svc.LiveOffers(); len(offers) > 0 {
		return offers[0].Source.ID + "/" + svc.Platform + "/" + svc.Name
	}
	return "<source>/" + svc.Platform + "/" + svc.Name
}
