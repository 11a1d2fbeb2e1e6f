// Package api is the /v1 HTTP API of Social Data Router as a plain
// http.Handler: routing, authentication, validation, the in-flight cap,
// reserving money before each offer attempt (billing), calling the router,
// settling and rendering the answers. It
// knows nothing of Caddy: the caller hands it the registry, store, router
// and shared in-flight counts of one config generation (Config). Extract
// and Search are the calls without the HTTP around them, for front-ends
// that authenticate and decode bodies their own way.
package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/async"
	"socialrouter/caddymodule/cache"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/router"
)

// Config is what the API works with; every field is required.
type Config struct {
	Registry *registry.Registry
	Store    Store
	Router   *router.Router
	// KeyPrefix is the prefix of API keys (<prefix>_live_…).
	KeyPrefix string
	// MaxConcurrentRuns caps the runs in flight per account, counted in
	// InFlight (which outlives the config generation).
	MaxConcurrentRuns int
	InFlight          *InFlight
	// SourceStatus is the live status of a source (admin override,
	// declared coming_soon or the breakers' view).
	SourceStatus func(sourceID string) string
	Logger       *zap.Logger

	// Async runs the runs submitted with Prefer: respond-async, on
	// AsyncRouter (the router whose attempt deadline is the async
	// deadline), each ending at AsyncDeadline after its submit. Nil: the
	// preference is not applied and calls stay synchronous.
	Async         *async.Worker
	AsyncRouter   *router.Router
	AsyncDeadline time.Duration
	// TestRouter and TestAsyncRouter serve the calls of test keys (their
	// accounts are test twins, testmode.IsTest) in place of Router and
	// AsyncRouter: built over testmode.Clients, with no upstream client.
	// Nil: test keys are refused (401 test_mode_off).
	TestRouter, TestAsyncRouter *router.Router
	// Cache, if set, is the freshness cache of records bought once
	// (cached.go); nil: every call is live work.
	Cache *cache.Cache
	// CallbackWait is how long source id's upstream work may go unchecked
	// because its upstream calls back when it ends (its callback_fallback),
	// 0 for a source without callbacks; nil: none has them. A parked run
	// is first checked after it.
	CallbackWait func(source string) time.Duration
	// AsyncMaxPerAccount bounds an account's async runs in flight (429
	// too_many_async_runs past it); 0: DefaultAsyncMaxPerAccount.
	AsyncMaxPerAccount int
}

// API serves /v1. Build it with New; it is safe for concurrent use.
type API struct {
	Config
	mux *http.ServeMux
	// storeDown is the last readiness verdict on the store (health.go).
	storeDown atomic.Bool
}

// New builds the API and its routes.
func New(c Config) *API {
	a := &API{Config: c, mux: http.NewServeMux()}
	a.route(http.MethodGet, "/v1/services", a.catalogue)
	a.route(http.MethodGet, "/v1/services/{platform}", a.platform)
	a.route(http.MethodGet, "/v1/services/{platform}/{service}", a.entry)
	a.route(http.MethodGet, "/v1/providers", a.providers)
	a.route(http.MethodGet, "/v1/providers/{id}", a.provider)
	a.route(http.MethodGet, "/v1/openapi.json", a.openapi)
	a.route(http.MethodPost, "/v1/extract/{platform}/{service}", a.observed(a.extractLabel, a.extract))
	a.route(http.MethodPost, "/v1/search", a.observed(searchLabel, a.search))
	a.route(http.MethodGet, "/v1/extractions/{id}", a.getRun)
	a.route(http.MethodGet, "/v1/extractions/{id}/records", a.getRecords)
	a.route(http.MethodPost, "/v1/extractions/{id}/cancel", a.cancelRun)
	a.route(http.MethodGet, "/v1/account/balance", a.balance)
	a.route(http.MethodGet, "/v1/account/usage", a.usage)
	a.route(http.MethodGet, "/v1/account/transactions", a.transactions)
	a.route(http.MethodGet, "/v1/health/{probe}", a.health)
	// The alias /v1/{platform}/{service} of the OpenAPI operations; every
	// route above is more specific, so it only takes what they leave.
	a.route(http.MethodPost, "/v1/{platform}/{service}", a.observed(a.extractLabel, a.extract))
	a.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		path, _ := r.Context().Value(pathKey{}).(string)
		if path == "" {
			path = r.URL.Path
		}
		notFound(w, r.Method, path)
	})
	return a
}

// route registers a path for one method (GET also answers HEAD). The
// pattern carries no method so that another method gets the API's JSON 405
// with Allow, not ServeMux's plain-text one.
func (a *API) route(method, pattern string, h http.HandlerFunc) {
	a.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
			w.Header().Set("Allow", method)
			newError(http.StatusMethodNotAllowed, "method_not_allowed", typeValidation,
				"this endpoint accepts "+method+" only").write(w)
			return
		}
		h(w, r)
	})
}

// pathKey holds the request path as sent when ServeHTTP routes a
// canonical form of it, for the 404 message.
type pathKey struct{}

// ServeHTTP answers a /v1 request; any other path is a JSON 404 (the Caddy
// handler passes those to the next handler before they get here).
//
// Segments are what the path holds between slashes, leading and trailing
// slashes ignored, as the API has always read them. ServeMux would answer
// a path it cleans with a redirect, so the mux sees the canonical form
// /v1/<seg>/…; a path with an empty, "." or ".." segment, which no route
// takes, is a 404 here.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if r.URL.RawPath == "" && canonical(path) {
		a.mux.ServeHTTP(w, r) // what the mux sees already: nothing to split
		return
	}
	seg, ok := segments(path)
	if !ok {
		notFound(w, r.Method, path)
		return
	}
	if canon := "/v1/" + strings.Join(seg, "/"); canon != path || r.URL.RawPath != "" {
		u := *r.URL
		u.Path, u.RawPath = canon, ""
		r = r.WithContext(context.WithValue(r.Context(), pathKey{}, path))
		r.URL = &u
	}
	a.mux.ServeHTTP(w, r)
}

// segments splits a /v1 path; ok is false outside /v1 and for a segment
// that is empty, "." or "..".
func segments(path string) (seg []string, ok bool) {
	if path != "/v1" && !strings.HasPrefix(path, "/v1/") {
		return nil, false
	}
	rest := strings.Trim(strings.TrimPrefix(path, "/v1"), "/")
	if rest == "" {
		return nil, true
	}
	seg = strings.Split(rest, "/")
	for _, s := range seg {
		if s == "" || s == "." || s == ".." {
			return nil, false
		}
	}
	return seg, true
}

// canonical reports whether path is /v1/<seg>/… as ServeHTTP would
// rewrite it, so that the usual request skips segments' allocations:
// no trailing slash, every segment non-empty and neither "." nor "..".
func canonical(path string) bool {
	rest, ok := strings.CutPrefix(path, "/v1/")
	if !ok || rest == "" {
		return false
	}
	for {
		seg, after, more := strings.Cut(rest, "/")
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		if !more {
			return true
		}
		rest = after
	}
}

func notFound(w http.ResponseWriter, method, path string) {
	newError(http.StatusNotFound, "not_found", typeNotFound,
		fmt.Sprintf("no endpoint %s %s; GET /v1/openapi.json describes the API", method, path)).write(w)
}
