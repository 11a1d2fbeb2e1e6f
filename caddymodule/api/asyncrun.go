package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/async"
	"socialrouter/caddymodule/billing"
	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/limits"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// AsyncRunner is the async.Runner and async.Resumer of this API: it runs
// a stored async run as the sync path runs a call (same router walk, same
// billing, same settle), on the async router and until the run's deadline.
func (a *API) AsyncRunner() *AsyncRunner { return &AsyncRunner{a: a} }

// AsyncRunner runs async runs; see API.AsyncRunner.
type AsyncRunner struct{ a *API }

// Resume runs a run a previous worker left. It runs it again from the
// start: today's router cannot pick up an upstream job by its handle.
//
// Resumption by handle goes here: r.Doc holds the attempts so far with
// their upstream handles (runs.Attempt.Handles); a router that can resume
// an upstream job from its handle would be called with them instead of
// Run's fresh walk, and no paid upstream work would start twice.
func (ar *AsyncRunner) Resume(ctx context.Context, r store.AsyncRun, p async.Progress) async.Outcome {
	return ar.Run(ctx, r, p)
}

// Run runs r to its end and settles it; see async.Runner.
func (ar *AsyncRunner) Run(ctx context.Context, r store.AsyncRun, p async.Progress) async.Outcome {
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
	run := &runs.Run{ID: r.ID, CreatedAt: r.CreatedAt, AccountID: r.AccountID, KeyID: r.KeyID, Data: []json.RawMessage{}}
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
		return a.settleCancelled(bg, bill, run, nil, c.platform)
	}
	budget := &progressBudget{Call: bill, run: run, progress: p}
	req := c.req
	req.Now, req.Budget = r.CreatedAt, budget
	rtr := a.AsyncRouter
	if rtr == nil {
		rtr = a.Router
	}
	res, rerr := rtr.Run(ctx, req)
	if rerr != nil {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, async.ErrCancelled):
			return a.settleCancelled(bg, bill, run, failureAttempts(rerr), c.platform)
		case errors.Is(cause, async.ErrLeaseLost), errors.Is(cause, async.ErrStopping):
			// Another worker runs it, or the next one will: its hold stays.
			return async.Outcome{}
		}
	}
	if apiErr := a.refusedForMoney(bg, bill, run, res, rerr); apiErr != nil {
		return a.settleAsync(bg, bill, run, nil, apiErr, c.platform)
	}
	if c.finish != nil {
		c.finish(run, res, rerr)
	}
	_, _ = a.settle(bg, bill, run, res, rerr, c.platform)
	return a.settledOutcome(bg, run)
}

// prepareStored prepares a stored async request with this node's
// registry, as the submit did.
func (a *API) prepareStored(b []byte) (*prepared, *Error) {
	var req asyncRequest
	if err := json.Unmarshal(b, &req); err != nil {
		return nil, kindError(errkind.Internal, "the stored async request is unreadable: "+err.Error())
	}
	if req.Kind == KindSearch {
		return a.prepareSearch(req.Body, limits.AsyncLimitMax)
	}
	svc, apiErr := a.Service(req.Platform, req.Service)
	if apiErr != nil {
		return nil, apiErr
	}
	return a.prepareExtract(svc, req.Body, limits.AsyncLimitMax)
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

// Outcomes of the attempts of a running run that are not the router's:
// the one under way, and one that ended without serving (the router
// tells how only when the walk ends).
const (
	outcomeRunning    = "running"
	outcomeFailedOver = "failed_over"
)

// progressBudget is the run's billing.Call, which the router asks before
// each offer attempt: each ask is an attempt beginning, so it also writes
// the running document with the attempts so far, and the run's hold.
type progressBudget struct {
	*billing.Call
	run      *runs.Run
	progress async.Progress

	mu       sync.Mutex
	attempts []runs.Attempt
}

// Reserve holds the money as the Call does, then records the attempt.
func (b *progressBudget) Reserve(ctx context.Context, o *registry.Offer, records, least int) (int, string, error) {
	covered, note, err := b.Call.Reserve(ctx, o, records, least)
	if err != nil {
		return covered, note, err
	}
	b.mu.Lock()
	if n := len(b.attempts); n > 0 && b.attempts[n-1].Outcome == outcomeRunning {
		b.attempts[n-1].Outcome = outcomeFailedOver
	}
	if covered > 0 {
		b.attempts = append(b.attempts, runs.Attempt{Offer: o.ID, Outcome: outcomeRunning, Records: 0})
	} else {
		b.attempts = append(b.attempts, runs.Attempt{Offer: o.ID, Outcome: router.OutcomeUnpayable, Message: note})
	}
	doc := runningDoc(b.run, b.attempts)
	b.mu.Unlock()
	// An error here leaves GET showing older progress; a lost lease
	// stops the run through its context.
	_ = b.progress(ctx, doc, store.Hold{Price: o.Price, Records: covered})
	return covered, note, nil
}

var _ router.Budget = (*progressBudget)(nil)

// asyncNotFound is the 404 of a run id the account does not have.
func asyncNotFound(id string) *Error {
	return newError(http.StatusNotFound, "not_found", typeNotFound, fmt.Sprintf("no run %q in this account", id))
}
