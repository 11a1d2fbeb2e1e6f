package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"socialrouter/caddymodule/limits"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// cacheControl is what a call's Cache-Control header asks of the
// freshness cache (issue 36): records at most maxAge old, or (noCache)
// live work. Without the header (set false) the service's declared
// default max age applies.
type cacheControl struct {
	// raw is the header as sent, kept with an async run's request.
	raw     string
	set     bool
	noCache bool
	maxAge  time.Duration
}

// parseCacheControl reads the request directives the cache honours:
// no-cache (and no-store) force live work, max-age=<seconds> bounds the
// age accepted. Other directives, and a max-age that is not a
// non-negative integer, are ignored, as RFC 9111 says of invalid ones.
func parseCacheControl(h http.Header) cacheControl {
	cc := cacheControl{raw: strings.Join(h.Values("Cache-Control"), ", ")}
	for _, line := range h.Values("Cache-Control") {
		for _, d := range strings.Split(line, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-cache", "no-store":
				cc.set, cc.noCache = true, true
			case "max-age":
				n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(val), `"`), 10, 64)
				if err == nil && n >= 0 {
					cc.set, cc.maxAge = true, time.Duration(min(n, 1<<31))*time.Second
				}
			}
		}
	}
	return cc
}

// setAge sets the answer's Age: the seconds since the oldest record served
// was fetched, on runs the cache took part in.
func setAge(w http.ResponseWriter, since time.Time) {
	if since.IsZero() {
		return
	}
	w.Header().Set("Age", strconv.FormatInt(max(0, int64(time.Since(since)/time.Second)), 10))
}

// CacheControl is a call's freshness ask as front-ends without headers
// give it (an MCP tool's max_age argument).
type CacheControl = cacheControl

// TakeMaxAge takes an MCP tool's max_age argument out of args: seconds a
// record may be old, or -1 for live work; absent, the service's default.
func TakeMaxAge(args map[string]json.RawMessage) (CacheControl, *Error) {
	raw, ok := args["max_age"]
	if !ok {
		return CacheControl{}, nil
	}
	delete(args, "max_age")
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil || n < -1 {
		return CacheControl{}, newError(http.StatusBadRequest, "invalid_field", typeValidation,
			"max_age must be an integer number of seconds, or -1 for live work").with("field", "max_age")
	}
	if n < 0 {
		return CacheControl{raw: "no-cache", set: true, noCache: true}, nil
	}
	return CacheControl{raw: "max-age=" + strconv.FormatInt(n, 10), set: true, maxAge: time.Duration(min(n, 1<<31)) * time.Second}, nil
}

// ExtractWith is Extract with the caller's freshness ask.
func (a *API) ExtractWith(ctx context.Context, key store.Key, svc *registry.Service, body map[string]json.RawMessage, cc CacheControl) (*runs.Run, *Error) {
	c, apiErr := a.prepareExtract(svc, body, limits.ExtractLimitMax)
	if apiErr != nil {
		return nil, apiErr
	}
	c.cc = cc
	return a.execute(ctx, &key, c, "", nil)
}

// SearchWith is Search with the caller's freshness ask.
func (a *API) SearchWith(ctx context.Context, key store.Key, m map[string]json.RawMessage, cc CacheControl) (*runs.Run, *Error) {
	c, apiErr := a.prepareSearch(m, limits.ExtractLimitMax)
	if apiErr != nil {
		return nil, apiErr
	}
	c.cc = cc
	return a.execute(ctx, &key, c, "", nil)
}
