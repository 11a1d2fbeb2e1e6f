package api

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/billing"
	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// The one orchestration of a call, shared by Extract and Search (and, for
// its settle, by async runs): prepared by prepareExtract or prepareSearch,
// routed with the money held before each attempt, settled.

// execute runs a prepared call synchronously as run id (a new id if
// empty): take an in-flight slot, route with the money held before each
// attempt, settle. With answer set, a settled run's API JSON comes back
// there too, the bytes the store wrote (store.Settlement.Answer).
//
// A held call waits in here: execute and routeRun keep small frames (the key
// by pointer, what runs before and after the wait in functions of their
// own: begin, conclude), so that the goroutine of a call held on a slow
// upstream keeps a 16 KiB stack (docs/perf-log.md, issue 38's in-flight
// round).
func (a *API) execute(ctx context.Context, key *store.Key, c *prepared, id string, answer *[]byte) (*runs.Run, *Error) {
	run, release, life, bill, apiErr := a.begin(key, c, id)
	if apiErr != nil {
		return nil, apiErr
	}
	defer release()
	defer bill.Release(context.WithoutCancel(ctx)) // a no-op once settled
	return a.routeRun(ctx, key.AccountID, c, run, life, bill, answer)
}

// begin takes an in-flight slot for a run of c (id, or a new id if empty)
// and its money.
//
//go:noinline
func (a *API) begin(key *store.Key, c *prepared, id string) (*runs.Run, func(), *runs.Life, *billing.Call, *Error) {
	run, release, apiErr := a.startRun(*key)
	if apiErr != nil {
		return nil, nil, nil, nil, apiErr
	}
	life, lerr := runs.Begin(runs.Running, runs.Submitter)
	if lerr != nil {
		release()
		return nil, nil, nil, nil, storeUnavailable() // the lifecycle table lost its first row: a bug
	}
	if id != "" {
		run.ID = id
	}
	if c.kind == KindSearch {
		run.Kind = runs.KindSearch
	}
	c.fill(run)
	return run, release, life, billing.New(a.Store, run.ID, *key, run.CreatedAt), nil
}

// routeRun routes run and settles it.
func (a *API) routeRun(ctx context.Context, account string, c *prepared, run *runs.Run, life *runs.Life, bill *billing.Call, answer *[]byte) (*runs.Run, *Error) {
	req := c.req
	req.Now, req.Budget, req.RunID = run.CreatedAt, bill, run.ID
	res, note, err := a.routeCached(ctx, a.routerFor(account), c, &req)
	defer note.finish(ctx, a.Logger) // after the settle, before the answer
	return a.conclude(ctx, c, run, life, bill, res, note, err, answer)
}

// conclude settles a routed run (execute).
//
//go:noinline
func (a *API) conclude(ctx context.Context, c *prepared, run *runs.Run, life *runs.Life, bill *billing.Call, res *router.Result, note *cacheNote, err error, answer *[]byte) (*runs.Run, *Error) {
	if apiErr := a.refusedForMoney(ctx, bill, run, res, err); apiErr != nil {
		return nil, apiErr
	}
	if c.finish != nil {
		c.finish(run, res, err)
	}
	if res != nil {
		note.apply(run, len(res.Records))
	}
	return a.settleAnswer(ctx, bill, life, run, res, err, c.platform, answer, note) // cached_records over the records kept (store.Line.Cached)
}

// settle stores a routed run (success or failure) and returns it, or the
// error to answer; life moves it to its settled state and sets its
// status (runs.Life.Settle). A settle that commits tells bill, whose
// deferred Release then skips the store.
func (a *API) settle(ctx context.Context, bill *billing.Call, life *runs.Life, run *runs.Run, res *router.Result, err error, platform string) (*runs.Run, *Error) {
	return a.settleAnswer(ctx, bill, life, run, res, err, platform, nil, nil)
}

// settleAnswer is settle, with the served run's API JSON set in answer
// when answer is not nil and the store hands it back, and the cache
// entries of note's live work stored with the run.
func (a *API) settleAnswer(ctx context.Context, bill *billing.Call, life *runs.Life, run *runs.Run, res *router.Result, err error, platform string, answer *[]byte, note *cacheNote) (*runs.Run, *Error) {
	run.CompletedAt = time.Now().UTC()
	noteRun(ctx, run)
	ctx = context.WithoutCancel(ctx)
	if err != nil {
		var f *router.Failure
		if !errors.As(err, &f) {
			f = &router.Failure{Kind: errkind.ProviderError, Message: err.Error()}
		}
		e := failureError(f).with("run_id", run.ID).with("attempts", nonNilAttempts(f.Attempts))
		if lerr := life.Settle(run, runs.Failed); lerr != nil {
			a.Logger.Error("settling a failed run", zap.String("run_id", run.ID), zap.Error(lerr))
			return nil, e
		}
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
	if lerr := life.Settle(run, runs.Completed); lerr != nil {
		a.Logger.Error("settling a served run", zap.String("run_id", run.ID), zap.Error(lerr))
		return nil, kindError(errkind.StoreUnavailable,
			"the run could not be recorded, so nothing was charged; retry shortly").with("run_id", run.ID)
	}
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
	st := servedSettlement(run, res, platform)
	st.Answer = answer
	st.Cache, st.CacheMaxBytes = note.entries()
	sr, serr := a.Store.Settle(ctx, st)
	note.stored(ctx, a.Logger, serr == nil, sr.CacheErr)
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
			st.Lines[i] = store.Line{Offer: o.UsageID(), Price: o.Price, Cached: o.Cached}
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
