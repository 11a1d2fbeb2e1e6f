// Async submission: an async run of a validated call started — the
// account's cap of runs in flight checked, the money for its first
// payable offer held ahead (reserveAhead), the run stored and handed to a
// worker — answered 202 (submitAsync) or, without HTTP, SubmitExtract and
// SubmitSearch.

package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
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
	local := a.Async.Room()
	to := runs.Queued // for any node's worker
	if local {
		to = runs.Leased // to this node's, which has room
	}
	life, err := runs.Begin(to, runs.Submitter)
	if err != nil {
		a.Logger.Error("submitting an async run", zap.String("run_id", id), zap.Error(err))
		return nil, storeUnavailable()
	}
	ar := store.AsyncRun{
		ID: id, AccountID: key.AccountID, KeyID: key.ID, Request: req, Doc: runningDoc(run, life.State(), nil),
		HoldPrice: hold.Price, HoldRecords: hold.Records, CreatedAt: now, Deadline: now.Add(deadline),
	}
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
