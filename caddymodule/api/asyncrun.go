package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/async"
	"socialrouter/caddymodule/billing"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/testmode"
)

// AsyncRunner is the async.Runner and async.Resumer of this API: it runs
// a stored async run as the sync path runs a call (same router walk, same
// billing, same settle), on the async router and until the run's deadline.
func (a *API) AsyncRunner() *AsyncRunner { return &AsyncRunner{a: a} }

// AsyncRunner runs async runs; see API.AsyncRunner.
type AsyncRunner struct{ a *API }

// Resume runs a run a previous worker left: when that worker recorded
// upstream work started (store.AsyncRun.Resume), the router resumes its
// attempt and waits for that work instead of starting it again; a run
// with none recorded (cut before any upstream work started) runs as new.
func (ar *AsyncRunner) Resume(ctx context.Context, r store.AsyncRun, p async.Progress) async.Outcome {
	from, ok := resumePoint(r)
	if !ok {
		return ar.run(ctx, r, p, nil)
	}
	return ar.run(ctx, r, p, &from)
}

// Run runs r to its end and settles it; see async.Runner.
func (ar *AsyncRunner) Run(ctx context.Context, r store.AsyncRun, p async.Progress) async.Outcome {
	return ar.run(ctx, r, p, nil)
}

// run runs r, resuming the attempt from when it is set.
func (ar *AsyncRunner) run(ctx context.Context, r store.AsyncRun, p async.Progress, from *router.Resumed) async.Outcome {
	a := ar.a
	bg := context.WithoutCancel(ctx)
	// Settled already: a worker died between the settle and the delete.
	if doc, err := a.Store.GetRunJSON(bg, nil, r.AccountID, r.ID); err == nil {
		return async.Outcome{Status: statusOf(doc), Doc: doc}
	}
	key, err := a.Store.GetKey(bg, r.KeyID)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			a.Logger.Error("reading an async run's key", zap.String("run_id", r.ID), zap.Error(err))
			return async.Outcome{}
		}
		key = store.Key{ID: r.KeyID, AccountID: r.AccountID}
	}
	run := &runs.Run{ID: r.ID, CreatedAt: r.CreatedAt, AccountID: r.AccountID, KeyID: r.KeyID, Data: []json.RawMessage{},
		Livemode: !testmode.IsTest(r.AccountID)}
	bill := billing.New(a.Store, r.ID, key, r.CreatedAt)

	c, apiErr := a.prepareStored(r.Request)
	if c != nil {
		if c.kind == KindSearch {
			run.Kind = runs.KindSearch
		}
		c.fill(run)
	}
	if apiErr != nil {
		// The registry changed since the submit: the call is no longer valid.
		return a.settleAsync(bg, bill, run, nil, apiErr, "")
	}
	if r.HoldRecords > 0 {
		// Holds do not outlive a crash: take the run's hold again before
		// anything else can spend its money.
		if _, err := a.Store.Reserve(bg, store.Hold{ID: r.ID, AccountID: r.AccountID, KeyID: r.KeyID,
			Price: r.HoldPrice, Records: r.HoldRecords, Now: r.CreatedAt}); err != nil {
			a.Logger.Error("holding an async run's money again", zap.String("run_id", r.ID), zap.Error(err))
			return async.Outcome{}
		}
	}
	if errors.Is(context.Cause(ctx), async.ErrCancelled) {
		a.abortRecorded(bg, r)
		return a.settleCancelled(bg, bill, run, nil, c.platform)
	}
	prog := &runProgress{run: run, progress: p, runCtx: ctx, cancelled: func(ctx context.Context) bool {
		cur, err := a.Store.GetAsyncRun(ctx, r.AccountID, r.ID)
		return err == nil && cur.Cancelled
	}}
	req := c.req
	req.Now, req.Budget = r.CreatedAt, bill
	// A run routed through the freshness cache does not park: its resume
	// runs the router over all its inputs, not the cache's remainder.
	prog.mayPark = a.cacheCall(c, req) == nil || a.TestRouter != nil && a.asyncRouterFor(r.AccountID) == a.TestAsyncRouter
	if from != nil && prog.mayPark && r.DueAt.IsZero() && parkable(*from) {
		// Claimed from a node that died with its work recorded: park it
		// for this node's poller instead of waiting here.
		prog.resumeFrom(*from)
		if err := prog.park(ctx); err != nil {
			a.Logger.Error("parking a resumed async run", zap.String("run_id", r.ID), zap.Error(err))
		}
		return async.Outcome{}
	}
	req.Proceed, req.OnAttempt, req.OnHandle = prog.proceed, prog.began, prog.started
	rtr := a.asyncRouterFor(r.AccountID)
	rctx, stop := handOver(ctx)
	defer stop()
	var res *router.Result
	var rerr error
	var note *cacheNote
	if from != nil {
		prog.resumeFrom(*from)
		res, rerr = rtr.Resume(rctx, req, *from)
	} else {
		res, note, rerr = a.routeCached(rctx, rtr, c, req)
	}
	if rerr != nil {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, async.ErrCancelled), prog.cancelledInStore():
			return a.settleCancelled(bg, bill, run, failureAttempts(rerr), c.platform)
		case leftRunning(cause):
			// Another worker runs it, the next one will, or this node's
			// poller once its work ended (parked): its hold and its
			// upstream work stay.
			return async.Outcome{}
		}
	}
	if apiErr := a.refusedForMoney(bg, bill, run, res, rerr); apiErr != nil {
		return a.settleAsync(bg, bill, run, nil, apiErr, c.platform)
	}
	if c.finish != nil {
		c.finish(run, res, rerr)
	}
	if res != nil {
		note.apply(run, len(res.Records))
	}
	_, _ = a.settle(bg, bill, run, res, rerr, c.platform)
	return a.settledOutcome(bg, run)
}

// settleAsync stores a run that failed with apiErr before or without
// routing, uncharged.
func (a *API) settleAsync(ctx context.Context, bill *billing.Call, run *runs.Run, attempts []runs.Attempt, apiErr *Error, platform string) async.Outcome {
	run.Status = runs.StatusFailed
	run.CompletedAt = time.Now().UTC()
	run.Error = &runs.RunError{Code: apiErr.Code, Type: apiErr.Type, Message: apiErr.Message}
	run.Attempts = attempts
	if _, err := a.Store.Settle(ctx, store.Settlement{Run: run, Platform: platform, Now: run.CompletedAt}); err != nil && !errors.Is(err, store.ErrExists) {
		a.Logger.Error("storing a failed async run", zap.String("run_id", run.ID), zap.Error(err))
		return async.Outcome{}
	}
	bill.Settled()
	return a.settledOutcome(ctx, run)
}

// settleCancelled stores a cancelled run: nothing delivered, nothing
// charged, its hold released by the settle.
func (a *API) settleCancelled(ctx context.Context, bill *billing.Call, run *runs.Run, attempts []runs.Attempt, platform string) async.Outcome {
	run.Status = runs.StatusCancelled
	run.CompletedAt = time.Now().UTC()
	run.Attempts = attempts
	run.Data = []json.RawMessage{}
	offer := ""
	if n := len(attempts); n > 0 {
		offer = attempts[n-1].Offer // the usage row of the offer it was cancelled on
	}
	if _, err := a.Store.Settle(ctx, store.Settlement{Run: run, Offer: offer, Platform: platform, Now: run.CompletedAt}); err != nil && !errors.Is(err, store.ErrExists) {
		a.Logger.Error("storing a cancelled async run", zap.String("run_id", run.ID), zap.Error(err))
		return async.Outcome{}
	}
	bill.Settled()
	return a.settledOutcome(ctx, run)
}

// settledOutcome reads the run as stored: the outcome of a settled run,
// or none when the settle did not commit (the next claim runs it again).
func (a *API) settledOutcome(ctx context.Context, run *runs.Run) async.Outcome {
	doc, err := a.Store.GetRunJSON(ctx, nil, run.AccountID, run.ID)
	if err != nil {
		a.Logger.Error("reading a settled async run", zap.String("run_id", run.ID), zap.Error(err))
		return async.Outcome{}
	}
	return async.Outcome{Status: statusOf(doc), Doc: doc}
}

// statusOf reads the status of a run document.
func statusOf(doc []byte) string {
	var v struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(doc, &v)
	return v.Status
}

func failureAttempts(err error) []runs.Attempt {
	var f *router.Failure
	if errors.As(err, &f) {
		return f.Attempts
	}
	return nil
}

// asyncNotFound is the 404 of a run id the account does not have.
func asyncNotFound(id string) *Error {
	return newError(http.StatusNotFound, "not_found", typeNotFound, fmt.Sprintf("no run %q in this account", id))
}
