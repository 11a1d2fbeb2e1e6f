// The sync/async fork: whether a call runs synchronously or is submitted
// as an async run (Prefer: respond-async, or a body a sync call does not
// serve), the limit each allows, and serveCall, which takes the call's
// Idempotency-Key and then either executes it or submits it.

package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"socialrouter/caddymodule/limits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// prefersAsync reports whether the request asks Prefer: respond-async
// (RFC 7240) and this API runs async calls.
func (a *API) prefersAsync(h http.Header) bool {
	if a.Async == nil {
		return false
	}
	for _, v := range h.Values("Prefer") {
		for _, p := range strings.Split(v, ",") {
			name, _, _ := strings.Cut(p, ";")
			name, _, _ = strings.Cut(name, "=")
			if strings.EqualFold(strings.TrimSpace(name), "respond-async") {
				return true
			}
		}
	}
	return false
}

// limitMax is the largest limit of a sync or an async call.
func limitMax(async bool) int {
	if async {
		return limits.AsyncLimitMax
	}
	return limits.ExtractLimitMax
}

// serveCall runs a validated call: with its Idempotency-Key, if any,
// claimed first (or the first call's answer replayed), then synchronously
// or, when the client prefers it, as an async run answered 202 at once.
//
// A held call waits in here: what runs before and after execute is in
// functions of their own (claimCall, answerSync), the key by pointer, so
// that the frame on the waiting stack is small (execute).
func (a *API) serveCall(w http.ResponseWriter, r *http.Request, key store.Key, c *prepared, body map[string]json.RawMessage, async bool) {
	id, idem, sync := a.claimCall(w, r, &key, c, body, async)
	if !sync {
		return
	}
	var answer []byte // the stored bytes, when the store hands them back
	run, apiErr := a.execute(r.Context(), &key, c, id, &answer)
	a.answerSync(w, r, &key, idem, id, run, apiErr, answer)
}

// claimCall gives the call its run id and claims its Idempotency-Key, if
// any, or answers: a bad or taken key, a replay, or an async run
// submitted. sync is whether the call is to run synchronously.
//
//go:noinline
func (a *API) claimCall(w http.ResponseWriter, r *http.Request, key *store.Key, c *prepared, body map[string]json.RawMessage, async bool) (id, idem string, sync bool) {
	idem, apiErr := idempotencyKey(r.Header)
	if apiErr != nil {
		apiErr.write(w)
		return "", "", false
	}
	id = newRunID(time.Now().UTC())
	if idem != "" {
		fp := fingerprint(c, body)
		for {
			rec, created, apiErr := a.claimKey(r, *key, idem, fp, id, async)
			if apiErr != nil {
				apiErr.write(w)
				return "", "", false
			}
			if created {
				break
			}
			if err := a.replay(w, r, *key, rec, fp, async); !errors.Is(err, errKeyFree) {
				return "", "", false
			}
		}
	}
	if async {
		a.submitAsync(w, r, *key, c, body, id, idem)
		return "", "", false
	}
	return id, idem, true
}

// answerSync ends the Idempotency-Key of a synchronous call and writes
// its answer.
//
//go:noinline
func (a *API) answerSync(w http.ResponseWriter, r *http.Request, key *store.Key, idem, id string, run *runs.Run, apiErr *Error, answer []byte) {
	if apiErr != nil {
		_, stored := apiErr.Extra["run_id"]
		a.endKey(r, *key, idem, id, stored, apiErr.Status)
		apiErr.write(w)
		return
	}
	a.endKey(r, *key, idem, id, true, http.StatusOK)
	setAge(w, run.CachedSince)
	writeSettled(w, run, answer)
}

// ExceedsSync reports whether a call body asks more than a synchronous
// call serves (a limit above limits.ExtractLimitMax for an extract, above
// the search cap for a search), so a front-end without Prefer (MCP) runs
// it asynchronously; false when this API runs no async calls.
func (a *API) ExceedsSync(search bool, body map[string]json.RawMessage) bool {
	if a.Async == nil {
		return false
	}
	f, ok := jsonNumber(body["limit"])
	if !ok {
		return false
	}
	if search {
		return f > limits.SearchLimitMax
	}
	return f > limits.ExtractLimitMax
}
