package api

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"time"

	"github.com/oklog/ulid/v2"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// newRunID returns "ext_" + a time-sortable ULID in lower case, written
// in place: one allocation where String, ToLower and the concatenation
// made three on every call.
func newRunID(now time.Time) string {
	var b [len("ext_") + ulid.EncodedSize]byte
	copy(b[:], "ext_")
	_ = ulid.MustNew(ulid.Timestamp(now), rand.Reader).MarshalTextTo(b[len("ext_"):])
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b[:])
}

// extract serves POST /v1/extract/{platform}/{service} (and its alias), in
// the order of DESIGN.md section 4: route, authenticate, read the body,
// validate, then run it (serveCall: synchronously, or asynchronously with
// Prefer: respond-async, either with an Idempotency-Key).
func (a *API) extract(w http.ResponseWriter, r *http.Request) {
	svc, apiErr := a.Service(r.PathValue("platform"), r.PathValue("service"))
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	key, body, ok := a.authenticatedBody(w, r)
	if !ok {
		return
	}
	async := a.prefersAsync(r.Header)
	c, apiErr := a.prepareExtract(svc, body, limitMax(async))
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	c.cc = parseCacheControl(r.Header)
	a.serveCall(w, r, key, c, body, async)
}

// Extract is one extraction call for an authenticated key with a decoded
// JSON object body: validate the body against the service, take an
// in-flight slot, route to the offers with the call's money held before
// each attempt (billing.Call), settle (capturing the hold), and return the
// settled run. A
// failed run is settled too (uncharged) and returned as the Error, which
// then carries its run_id and attempts. Settling outlives ctx: the
// upstream work is done and the run must not be lost.
func (a *API) Extract(ctx context.Context, key store.Key, svc *registry.Service, body map[string]json.RawMessage) (*runs.Run, *Error) {
	return a.ExtractWith(ctx, key, svc, body, CacheControl{})
}

// authenticatedBody authenticates the caller and reads the JSON object
// body, answering the error itself when either fails.
func (a *API) authenticatedBody(w http.ResponseWriter, r *http.Request) (store.Key, map[string]json.RawMessage, bool) {
	key, apiErr := a.Authenticate(r)
	if apiErr == nil {
		noteKey(r.Context(), key)
		var m map[string]json.RawMessage
		if m, apiErr = readObject(w, r); apiErr == nil {
			return key, m, true
		}
	}
	apiErr.write(w)
	return store.Key{}, nil, false
}
