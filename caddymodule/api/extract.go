package api

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"go.uber.org/zap"

	"socialrouter/caddymodule/billing"
	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/limits"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// newRunID returns "ext_" + a time-sortable ULID.
func newRunID(now time.Time) string {
	return "ext_" + strings.ToLower(ulid.MustNew(ulid.Timestamp(now), rand.Reader).String())
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
	a.serveCall(w, r, key, c, body, async)
}

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

// Extract is one extraction call for an authenticated key with a decoded
// JSON object body: validate the body against the service, take an
// in-flight slot, route to the offers with the call's money held before
// each attempt (billing.Call), settle (capturing the hold), and return the
// settled run. A
// failed run is settled too (uncharged) and returned as the Error, which
// then carries its run_id and attempts. Settling outlives ctx: the
// upstream work is done and the run must not be lost.
func (a *API) Extract(ctx context.Context, key store.Key, svc *registry.Service, body map[string]json.RawMessage) (*runs.Run, *Error) {
	c, apiErr := a.prepareExtract(svc, body, limits.ExtractLimitMax)
	if apiErr != nil {
		return nil, apiErr
	}
	return a.execute(ctx, key, c, "")
}

// execute runs a prepared call synchronously as run id (a new id if
// empty): take an in-flight slot, route with the money held before each
// attempt, settle.
func (a *API) execute(ctx context.Context, key store.Key, c *prepared, id string) (*runs.Run, *Error) {
	run, release, apiErr := a.startRun(key)
	if apiErr != nil {
		return nil, apiErr
	}
	defer release()
	if id != "" {
		run.ID = id
	}

	now := run.CreatedAt
	if c.kind == KindSearch {
		run.Kind = runs.KindSearch
	}
	c.fill(run)
	bill := billing.New(a.Store, run.ID, key, now)
	defer bill.Release(context.WithoutCancel(ctx)) // a no-op once settled
	req := c.req
	req.Now, req.Budget = now, bill
	res, err := a.Router.Run(ctx, req)
	if apiErr := a.refusedForMoney(ctx, bill, run, res, err); apiErr != nil {
		return nil, apiErr
	}
	if c.finish != nil {
		c.finish(run, res, err)
	}
	return a.settle(ctx, bill, run, res, err, c.platform)
}

// settle stores a routed run (success or failure) and returns it, or the
// error to answer. A settle that commits tells bill, whose deferred
// Release then skips the store.
func (a *API) settle(ctx context.Context, bill *billing.Call, run *runs.Run, res *router.Result, err error, platform string) (*runs.Run, *Error) {
	run.CompletedAt = time.Now().UTC()
	noteRun(ctx, run)
	ctx = context.WithoutCancel(ctx)
	if err != nil {
		var f *router.Failure
		if !errors.As(err, &f) {
			f = &router.Failure{Kind: errkind.ProviderError, Message: err.Error()}
		}
		e := failureError(f).with("run_id", run.ID).with("attempts", nonNilAttempts(f.Attempts))
		run.Status = runs.StatusFailed
		run.Error = &runs.RunError{Code: e.Code, Type: e.Type, Message: e.Message}
		run.Attempts = f.Attempts
		offer := ""
		if f.Offer != nil {
			offer = f.Offer.ID
			run.ServedBy = f.Offer.ID
			if run.Kind == runs.KindSearch {
				run.Provider = f.Offer.Source.ID
			}
		}
		if _, serr := a.Store.Settle(ctx, store.Settlement{Run: run, Offer: offer, Platform: platform, Now: run.CompletedAt}); serr != nil {
			a.Logger.Error("storing failed run", zap.String("run_id", run.ID), zap.Error(serr))
		} else {
			bill.Settled()
		}
		return nil, e
	}
	run.Status = runs.StatusCompleted
	run.ServedBy = res.Offer.ID
	if run.Kind == runs.KindSearch {
		run.Provider = res.Offer.Source.ID
		run.ServedBy = ""
	}
	run.Attempts = res.Attempts
	run.Data = res.Records
	if run.Data == nil {
		run.Data = []json.RawMessage{}
	}
	run.Pagination.Total = res.Total
	sr, serr := a.Store.Settle(ctx, servedSettlement(run, res, platform))
	if serr != nil {
		a.Logger.Error("settling run", zap.String("run_id", run.ID), zap.Error(serr))
		return nil, kindError(errkind.StoreUnavailable,
			"the run could not be recorded, so nothing was charged; retry shortly").with("run_id", run.ID)
	}
	bill.Settled()
	a.Logger.Debug("run settled", zap.String("run_id", run.ID), zap.String("offer", res.Offer.ID),
		zap.Int("records", sr.Records), zap.Stringer("charged", sr.Charged))
	return run, nil
}

// servedSettlement is the settlement of a served run: every record at the
// price of the offer that served it (SPEC), so a run whose failed batches
// failed over to another offer carries the offer and price of each record.
func servedSettlement(run *runs.Run, res *router.Result, platform string) store.Settlement {
	st := store.Settlement{Run: run, Price: res.Offer.Price, Offer: res.Offer.ID, Platform: platform, Now: run.CompletedAt}
	if res.Served != nil {
		st.Lines = make([]store.Line, len(res.From))
		for i, k := range res.From {
			o := res.Served[k]
			st.Lines[i] = store.Line{Offer: o.ID, Price: o.Price}
		}
	}
	return st
}

func nonNilAttempts(a []runs.Attempt) []runs.Attempt {
	if a == nil {
		return []runs.Attempt{}
	}
	return a
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
