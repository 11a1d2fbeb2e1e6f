// The validated call: prepared, an extract or search call checked against
// the registry and ready to route, and its building — from a request body
// (prepareExtract here; prepareSearch beside the search handler) and from
// an async run's stored request (asyncRequest, prepareStored).

package api

import (
	"encoding/json"
	"net/http"

	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/limits"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/runs"
)

// prepared is a validated extract or search call, ready to route: what
// the sync path runs at once and the async worker runs later.
type prepared struct {
	svc *registry.Service
	// req lacks Now and Budget, set when it runs.
	req router.Request
	// kind is KindExtract or KindSearch, platform the usage key.
	kind     string
	platform string
	// fill sets on the run what the call ran.
	fill func(run *runs.Run)
	// finish, if set, completes a routed run before its settle (the
	// search's next cursor).
	finish func(run *runs.Run, res *router.Result, err error)
	// cc is the caller's Cache-Control (cachecontrol.go).
	cc cacheControl
}

// Kinds of prepared calls, as stored in an async run's request.
const (
	KindExtract = "extract"
	KindSearch  = runs.KindSearch
)

// prepareExtract validates an extract body with limit up to maxLimit.
func (a *API) prepareExtract(svc *registry.Service, body map[string]json.RawMessage, maxLimit int) (*prepared, *Error) {
	in, apiErr := parseExtractLimit(svc, body, maxLimit)
	if apiErr != nil {
		return nil, apiErr
	}
	return &prepared{
		svc:      svc,
		req:      router.Request{Service: svc, Inputs: in.Inputs, Options: in.Options, Limit: in.Limit, Pin: in.Pin},
		kind:     KindExtract,
		platform: svc.Platform,
		fill: func(run *runs.Run) {
			run.Platform, run.Service, run.URL = svc.Platform, svc.Name, in.Inputs[0]
			if svc.InputKind == registry.KindQuery {
				run.Queries = in.Raw
				run.URL = in.Raw[0]
			}
		},
	}, nil
}

// asyncRequest is an async run's call as stored: enough to prepare it
// again on any node, with the registry of that node's config.
type asyncRequest struct {
	Kind     string                     `json:"kind"`
	Platform string                     `json:"platform,omitempty"`
	Service  string                     `json:"service,omitempty"`
	Body     map[string]json.RawMessage `json:"body"`
	// CacheControl is the call's Cache-Control header (cachecontrol.go).
	CacheControl string `json:"cache_control,omitempty"`
}

// prepareStored prepares a stored async request with this node's
// registry, as the submit did.
func (a *API) prepareStored(b []byte) (*prepared, *Error) {
	var req asyncRequest
	if err := json.Unmarshal(b, &req); err != nil {
		return nil, kindError(errkind.Internal, "the stored async request is unreadable: "+err.Error())
	}
	c, apiErr := a.prepareStoredCall(req)
	if c != nil {
		c.cc = parseCacheControl(http.Header{"Cache-Control": {req.CacheControl}})
	}
	return c, apiErr
}

// prepareStoredCall prepares the call of a stored async request.
func (a *API) prepareStoredCall(req asyncRequest) (*prepared, *Error) {
	if req.Kind == KindSearch {
		return a.prepareSearch(req.Body, limits.AsyncLimitMax)
	}
	svc, apiErr := a.Service(req.Platform, req.Service)
	if apiErr != nil {
		return nil, apiErr
	}
	return a.prepareExtract(svc, req.Body, limits.AsyncLimitMax)
}
