package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/billing"
	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/limits"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/testmode"
)

// DefaultAsyncDeadline ends an async run that has not finished (failed,
// like an attempt past its deadline) when no deadline is configured.
const DefaultAsyncDeadline = time.Hour

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
func (a *API) serveCall(w http.ResponseWriter, r *http.Request, key store.Key, c *prepared, body map[string]json.RawMessage, async bool) {
	idem, apiErr := idempotencyKey(r.Header)
	if apiErr != nil {
		apiErr.write(w)
		return
	}
	id := newRunID(time.Now().UTC())
	if idem != "" {
		fp := fingerprint(c, body)
		for {
			rec, created, apiErr := a.claimKey(r, key, idem, fp, id, async)
			if apiErr != nil {
				apiErr.write(w)
				return
			}
			if created {
				break
			}
			if err := a.replay(w, r, key, rec, fp, async); !errors.Is(err, errKeyFree) {
				return
			}
		}
	}
	if async {
		a.submitAsync(w, r, key, c, body, id, idem)
		return
	}
	run, apiErr := a.execute(r.Context(), key, c, id)
	if apiErr != nil {
		_, stored := apiErr.Extra["run_id"]
		a.endKey(r, key, idem, id, stored, apiErr.Status)
		apiErr.write(w)
		return
	}
	a.endKey(r, key, idem, id, true, http.StatusOK)
	setAge(w, run.CachedSince)
	writeRun(w, run)
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

// submitAsync answers 202 with the run once everything that refuses a
// sync call has passed (submit), recording the outcome on the call's
// Idempotency-Key.
func (a *API) submitAsync(w http.ResponseWriter, r *http.Request, key store.Key, c *prepared, body map[string]json.RawMessage, id, idem string) {
	doc, apiErr := a.submit(r.Context(), key, c, body, id)
	if apiErr != nil {
		a.endKey(r, key, idem, id, false, 0)
		apiErr.write(w)
		return
	}
	a.endKey(r, key, idem, id, true, http.StatusAccepted)
	w.Header().Set("Preference-Applied", "respond-async")
	writeAccepted(w, id, doc)
}

// submit starts the async run id of a validated call and returns its
// running document: the account's cap of runs in flight is checked first
// (429 too_many_async_runs), then the money for the run's first payable offer is held
// first (402/429 as a sync call otherwise, nothing stored or started),
// then the run is stored; this node's worker starts it at once when it
// has room, else any node's claims it.
func (a *API) submit(ctx context.Context, key store.Key, c *prepared, body map[string]json.RawMessage, id string) ([]byte, *Error) {
	now := time.Now().UTC()
	run := &runs.Run{ID: id, CreatedAt: now, AccountID: key.AccountID, KeyID: key.ID, Livemode: !testmode.IsTest(key.AccountID)}
	if c.kind == KindSearch {
		run.Kind = runs.KindSearch
	}
	c.fill(run)
	noteRun(ctx, run)
	if apiErr := a.asyncRoom(ctx, key.AccountID); apiErr != nil {
		return nil, apiErr
	}
	bill := billing.New(a.Store, id, key, now)
	hold, apiErr := a.reserveAhead(ctx, bill, c, key, now)
	if apiErr != nil {
		return nil, apiErr
	}
	req, _ := json.Marshal(asyncRequest{Kind: c.kind, Platform: c.svc.Platform, Service: c.svc.Name, Body: body, CacheControl: c.cc.raw})
	deadline := a.AsyncDeadline
	if deadline <= 0 {
		deadline = DefaultAsyncDeadline
	}
	ar := store.AsyncRun{
		ID: id, AccountID: key.AccountID, KeyID: key.ID, Request: req, Doc: runningDoc(run, nil),
		HoldPrice: hold.Price, HoldRecords: hold.Records, CreatedAt: now, Deadline: now.Add(deadline),
	}
	local := a.Async.Room()
	if local {
		ar.Owner, ar.LeaseUntil = a.Async.Owner(), now.Add(a.Async.Lease())
	}
	if err := a.Store.CreateAsyncRun(context.WithoutCancel(ctx), ar, a.asyncMax()); err != nil {
		limited := errors.Is(err, store.ErrAsyncLimit)
		if !limited {
			a.Logger.Error("storing an async run", zap.String("run_id", id), zap.Error(err))
		}
		if rerr := bill.Release(context.WithoutCancel(ctx)); rerr != nil {
			a.Logger.Error("releasing an async run's hold", zap.String("run_id", id), zap.Error(rerr))
		}
		if limited {
			return nil, tooManyAsyncRuns(a.asyncMax())
		}
		return nil, storeUnavailable()
	}
	if local {
		a.Async.Submit(ar)
	}
	return ar.Doc, nil
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

// SubmitExtract is an extract call run asynchronously, without the HTTP
// around it: validated with the async limit, its money held, stored and
// started with the caller's freshness ask (TakeMaxAge); it returns the
// running run's document.
func (a *API) SubmitExtract(ctx context.Context, key store.Key, svc *registry.Service, body map[string]json.RawMessage, cc CacheControl) ([]byte, *Error) {
	c, apiErr := a.prepareExtract(svc, body, limits.AsyncLimitMax)
	if apiErr != nil {
		return nil, apiErr
	}
	c.cc = cc
	return a.submit(ctx, key, c, body, newRunID(time.Now().UTC()))
}

// SubmitSearch is SubmitExtract for a search body.
func (a *API) SubmitSearch(ctx context.Context, key store.Key, body map[string]json.RawMessage, cc CacheControl) ([]byte, *Error) {
	c, apiErr := a.prepareSearch(body, limits.AsyncLimitMax)
	if apiErr != nil {
		return nil, apiErr
	}
	c.cc = cc
	return a.submit(ctx, key, c, body, newRunID(time.Now().UTC()))
}

// writeAccepted answers 202 with an async run's document and where to
// follow it.
func writeAccepted(w http.ResponseWriter, id string, doc []byte) {
	w.Header().Set("Location", "/v1/extractions/"+id)
	writeRaw(w, http.StatusAccepted, doc)
}

// reserveAhead holds, before the 202, what the run's first attempt will
// hold: the first offer of the call's chain (router.Request's Chain, the
// offers the run will try) of which the money pays at least one record,
// for as many records as the call may ask (router.Request's MaxRecords).
// Every candidate unpayable is the sync call's 402/429.
func (a *API) reserveAhead(ctx context.Context, bill *billing.Call, c *prepared, key store.Key, now time.Time) (store.Hold, *Error) {
	offers := c.req.Chain()
	if len(offers) == 0 {
		return store.Hold{}, kindError(errkind.ServiceNotAvailable,
			c.svc.Key+" has no live offer yet; see the catalogue for callable services.")
	}
	want, least := c.req.MaxRecords(), c.req.LeastRecords()
	for _, o := range offers {
		covered, _, err := bill.Reserve(ctx, o, want, least)
		if err != nil {
			a.Logger.Error("reserving for an async run", zap.Error(err))
			return store.Hold{}, storeUnavailable()
		}
		if covered > 0 {
			return store.Hold{ID: bill.ID(), AccountID: key.AccountID, KeyID: key.ID, Price: o.Price, Records: covered, Now: now}, nil
		}
	}
	ans, err := bill.Refused(ctx, bill.Refusal())
	if err != nil || ans == nil {
		a.Logger.Error("answering a refused async call", zap.Error(err))
		return store.Hold{}, storeUnavailable()
	}
	return store.Hold{}, failureError(ans)
}
