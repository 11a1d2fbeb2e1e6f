package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/async"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/sources"
	"socialrouter/caddymodule/store"
	"socialrouter/internal/jsonscan"
)

// resumeRecord is an async run's record of its attempt under way
// (store.AsyncRun.Resume): the offer, the records its hold covers, the
// upstream work its batches started, and the attempts before it. It is
// the resume's own record: the running document (store.AsyncRun.Doc) is
// for display and is never read back.
type resumeRecord struct {
	Offer   string           `json:"offer"`
	Records int              `json:"records"`
	Started []router.Started `json:"started,omitempty"`
	// Before are the attempts before this one. Format 1 records (written
	// before 2026-11, issue 39) have none: Before is then nil and
	// legacyBefore reads them from the document, that once.
	Before *[]runs.Attempt `json:"before,omitempty"`
}

// resumePoint reads where a left run resumes: the attempt recorded with
// upstream work started, and the attempts before it. ok is false when no
// upstream work was recorded.
func resumePoint(r store.AsyncRun) (router.Resumed, bool) {
	var rec resumeRecord
	if len(r.Resume) == 0 || json.Unmarshal(r.Resume, &rec) != nil || rec.Offer == "" || len(rec.Started) == 0 {
		return router.Resumed{}, false
	}
	var before []runs.Attempt
	if rec.Before != nil {
		before = *rec.Before
	} else {
		before = legacyBefore(r.Doc, rec.Offer)
	}
	return router.Resumed{Offer: rec.Offer, Records: rec.Records, Before: before, Started: rec.Started}, true
}

// legacyBefore reads the attempts before the one under way from the
// running document of a format 1 resume record, which did not hold them.
func legacyBefore(doc []byte, offer string) []runs.Attempt {
	var d runningRun
	_ = json.Unmarshal(doc, &d)
	before := d.Attempts
	if n := len(before); n > 0 && before[n-1].Offer == offer && before[n-1].Outcome == outcomeRunning {
		before = before[:n-1]
	}
	return before
}

// handedOff reports whether a run's context ended because the run goes
// on elsewhere or ends: cancelled, its lease lost, its worker stopping.
func handedOff(cause error) bool {
	return errors.Is(cause, async.ErrCancelled) || leftRunning(cause)
}

// leftRunning reports a run's context that ended with its upstream work
// left running for a later waiter: its lease lost, its worker stopping,
// or the run parked.
func leftRunning(cause error) bool {
	return errors.Is(cause, async.ErrLeaseLost) || errors.Is(cause, async.ErrStopping) || errors.Is(cause, async.ErrParked)
}

// handOver is the context the router runs a run in: it ends when ctx
// does, but when the run is handed over (its lease lost, its worker
// stopping, the run parked) with sources.ErrLeftRunning as the cause, so the upstream
// work is left running for the worker that resumes it, not aborted.
func handOver(ctx context.Context) (context.Context, func()) {
	base := context.WithoutCancel(ctx)
	cancelDeadline := func() {}
	if dl, ok := ctx.Deadline(); ok {
		base, cancelDeadline = context.WithDeadline(base, dl)
	}
	rctx, cancel := context.WithCancelCause(base)
	stop := context.AfterFunc(ctx, func() {
		cause := context.Cause(ctx)
		if leftRunning(cause) {
			cause = fmt.Errorf("%w: %w", sources.ErrLeftRunning, cause)
		}
		cancel(cause)
	})
	return rctx, func() {
		stop()
		cancel(nil)
		cancelDeadline()
	}
}

// abortRecorded aborts the upstream work a run recorded (its resume
// record), for a cancel whose run no worker of this node runs: its node
// is gone, or the worker there learns of the cancel only at its next
// renewal.
func (a *API) abortRecorded(ctx context.Context, r store.AsyncRun) {
	from, ok := resumePoint(r)
	if !ok {
		return
	}
	c, apiErr := a.prepareStored(r.Request)
	if apiErr != nil || c == nil || c.req.Service == nil {
		a.Logger.Error("cannot abort a cancelled run's upstream work: its call no longer prepares", zap.String("run_id", r.ID))
		return
	}
	rtr := a.asyncRouterFor(r.AccountID)
	rtr.Abort(ctx, c.req.Service, from)
}

// Check reports whether the upstream work a parked run recorded has
// ended (async.Checker): one status call per work, none waiting. A run
// whose record or call cannot be read counts as ended: its resume then
// settles it as it would after a restart.
func (ar *AsyncRunner) Check(ctx context.Context, r store.AsyncRun) (bool, error) {
	from, ok := resumePoint(r)
	if !ok {
		return true, nil
	}
	c, apiErr := ar.a.prepareStored(r.Request)
	if apiErr != nil || c == nil || c.req.Service == nil {
		return true, nil
	}
	return ar.a.asyncRouterFor(r.AccountID).Check(ctx, c.req.Service, from)
}

// Quiet is async.Quieter: the callback fallback of the source whose work
// parked run r waits for, read off its resume record's offer alone (no
// decode of the record: the poller asks at every check).
func (ar *AsyncRunner) Quiet(r store.AsyncRun) time.Duration {
	return ar.a.callbackQuiet(jsonscan.Field(r.Resume, "offer"))
}

// callbackQuiet is how long work of offer (an id <source>/<name>) needs
// no check because its source calls back (API.CallbackWait), 0 without.
func (a *API) callbackQuiet(offer string) time.Duration {
	if a.CallbackWait == nil || offer == "" {
		return 0
	}
	src, _, _ := strings.Cut(offer, "/")
	return a.CallbackWait(src)
}

// parkable reports whether a resume record holds the work of every batch
// of its attempt, as recorded with the batch count (records written
// before it was kept never park, and resume in a goroutine as before).
func parkable(from router.Resumed) bool {
	n := 0
	seen := map[int]bool{}
	for _, s := range from.Started {
		if s.Offer != from.Offer {
			continue
		}
		n = max(n, s.Batches)
		seen[s.Batch] = true
	}
	return n > 0 && len(seen) == n
}
