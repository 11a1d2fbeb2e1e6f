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
	// The run's life on this worker: claimed or submitted to it.
	life := runs.At(runs.Leased)
	if errors.Is(context.Cause(ctx), async.ErrCancelled) {
		_ = life.Move(runs.CancelRequested, runs.Worker)
	}
	// Settled already: a worker died between the settle and the delete.
	if stored, err := a.Store.GetRun(bg, r.AccountID, r.ID); err == nil {
		if lerr := life.Found(stored.Status); lerr != nil {
			a.Logger.Error("a claimed async run is stored unsettled", zap.String("run_id", r.ID), zap.Error(lerr))
			return async.Outcome{}
		}
		return a.storedOutcome(bg, r.AccountID, r.ID, stored.Status)
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
		return a.settleAsync(bg, bill, life, run, nil, apiErr, "")
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
	if life.State() == runs.CancelRequested {
		a.abortRecorded(bg, r)
		return a.settleCancelled(bg, bill, life, run, nil, c.platform)
	}
	prog := &runProgress{run: run, life: life, progress: p, runCtx: ctx, quietFor: a.callbackQuiet, cancelled: func(ctx context.Context) bool {
		cur, err := a.Store.GetAsyncRun(ctx, r.AccountID, r.ID)
		return err == nil && cur.Cancelled
	}}
	req := c.req
	req.Now, req.Budget, req.RunID = r.CreatedAt, bill, r.ID
	// A run routed through the freshness cache does not park: its resume
	// runs the router over all its inputs, not the cache's remainder.
	prog.mayPark = a.cacheCall(c, &req) == nil || a.TestRouter != nil && a.asyncRouterFor(r.AccountID) == a.TestAsyncRouter
	if from != nil && prog.mayPark && r.DueAt.IsZero() && parkable(*from) {
		// Claimed from a node that died with its work recorded: park it
		// for this node's poller instead of waiting here.
		prog.resumeFrom(*from)
		_ = life.Move(runs.Parked, runs.Runner)
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
		res, note, rerr = a.routeCached(rctx, rtr, c, &req)
		defer note.finish(bg, a.Logger)
	}
	if rerr != nil {
		cause := context.Cause(ctx)
		if errors.Is(cause, async.ErrCancelled) || prog.cancelledInStore() {
			_ = life.Move(runs.CancelRequested, runs.Worker)
		}
		switch {
		case errors.Is(cause, async.ErrParked):
			_ = life.Move(runs.Parked, runs.Runner)
		case leftRunning(cause):
			_ = life.Move(runs.Left, runs.Worker)
		}
		switch life.State() {
		case runs.CancelRequested:
			return a.settleCancelled(bg, bill, life, run, failureAttempts(rerr), c.platform)
		case runs.Left, runs.Parked:
			// Another worker runs it, the next one will, or this node's
			// poller once its work ended (parked): its hold and its
			// upstream work stay.
			return async.Outcome{}
		}
	}
	if apiErr := a.refusedForMoney(bg, bill, run, res, rerr); apiErr != nil {
		return a.settleAsync(bg, bill, life, run, nil, apiErr, c.platform)
	}
	if c.finish != nil {
		c.finish(run, res, rerr)
	}
	if res != nil {
		note.apply(run, len(res.Records))
	}
	_, _ = a.settleAnswer(bg, bill, life, run, res, rerr, c.platform, nil, note)
	return a.settledOutcome(bg, bill, run)
}

// settleAsync stores a run that failed with apiErr before or without
// routing, uncharged.
func (a *API) settleAsync(ctx context.Context, bill *billing.Call, life *runs.Life, run *runs.Run, attempts []runs.Attempt, apiErr *Error, platform string) async.Outcome {
	if err := life.Settle(run, runs.Failed); err != nil {
		a.Logger.Error("settling a failed async run", zap.String("run_id", run.ID), zap.Error(err))
		return async.Outcome{}
	}
	run.CompletedAt = time.Now().UTC()
	run.Error = &runs.RunError{Code: apiErr.Code, Type: apiErr.Type, Message: apiErr.Message}
	run.Attempts = attempts
	if _, err := a.Store.Settle(ctx, store.Settlement{Run: run, Platform: platform, Now: run.CompletedAt}); err != nil && !errors.Is(err, store.ErrExists) {
		a.Logger.Error("storing a failed async run", zap.String("run_id", run.ID), zap.Error(err))
		return async.Outcome{}
	}
	bill.Settled()
	return a.settledOutcome(ctx, bill, run)
}

// settleCancelled stores a cancelled run: nothing delivered, nothing
// charged, its hold released by the settle.
func (a *API) settleCancelled(ctx context.Context, bill *billing.Call, life *runs.Life, run *runs.Run, attempts []runs.Attempt, platform string) async.Outcome {
	if err := life.Settle(run, runs.Cancelled); err != nil {
		a.Logger.Error("settling a cancelled async run", zap.String("run_id", run.ID), zap.Error(err))
		return async.Outcome{}
	}
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
	return a.settledOutcome(ctx, bill, run)
}

// settledOutcome is the outcome of a run settled here: its status as its
// life set it when this settle committed; when it did not (another
// worker settled it first, or the store failed), the status stored, or
// none (the next claim runs it again).
func (a *API) settledOutcome(ctx context.Context, bill *billing.Call, run *runs.Run) async.Outcome {
	status := run.Status
	if !bill.Committed() {
		stored, err := a.Store.GetRun(ctx, run.AccountID, run.ID)
		if err != nil {
			a.Logger.Error("reading a settled async run", zap.String("run_id", run.ID), zap.Error(err))
			return async.Outcome{}
		}
		status = stored.Status
	}
	return a.storedOutcome(ctx, run.AccountID, run.ID, status)
}

// storedOutcome is the outcome of a stored run settled with status: its
// document, for the notifier.
func (a *API) storedOutcome(ctx context.Context, accountID, id string, status runs.Status) async.Outcome {
	doc, err := a.Store.GetRunJSON(ctx, nil, accountID, id)
	if err != nil {
		a.Logger.Error("reading a settled async run", zap.String("run_id", id), zap.Error(err))
		return async.Outcome{}
	}
	return async.Outcome{Status: status, Doc: doc}
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
