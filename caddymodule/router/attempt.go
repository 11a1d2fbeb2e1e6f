package router

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/sources"
)

// abandonGrace is how long an attempt whose context ended still waits for
// its calls to return (they should return at once; this bounds a client
// that ignores its context, and lets cancelled calls report their handles).
// A lone batch of a sources.ReturnsOnCancel client runs on the caller's
// goroutine instead, and the attempt returns when it does.
const abandonGrace = time.Second

// attempt is the outcome of one offer attempt.
type attempt struct {
	offer *registry.Offer
	rec   runs.Attempt
	// ok: served; records (limit applied) and total are set.
	ok      bool
	records []json.RawMessage
	total   int
	more    bool
	// perInput holds the records of each input of the attempt before the
	// limit, nil for an input of a failed batch; failed lists those inputs
	// (indexes into the attempt's inputs) when the attempt served only
	// some batches (Chunks, walk.go): they fail over, the others are kept.
	perInput [][]json.RawMessage
	failed   []int
	// retryable: the walk may move on. A failure that is not retryable
	// stops the walk (the upstream rejected the input).
	retryable bool
	// retryAfter is the largest Retry-After an upstream sent.
	retryAfter time.Duration
	// upstreamMsg is the upstream's own message of the failure.
	upstreamMsg string
	// canceled is the caller's context error when the caller went away.
	canceled error
	verdict  verdict
}

// batchFailure is a failed upstream call of one batch.
type batchFailure struct {
	outcome    string
	status     int
	retryable  bool
	retryAfter time.Duration
	message    string
	verdict    verdict
}

// batchOut is what one successful batch produced.
type batchOut struct {
	done bool
	// perInput holds the records of each of the batch's inputs, in item order.
	perInput   [][]json.RawMessage
	items      int
	errorItems int
	// deadItems are the error items saying the input's page is gone.
	deadItems int
	status    int
	// skipped counts items the normalize program failed on; skipErr is the
	// first such error.
	skipped int
	skipErr error
	// invalid counts records off the record schema (recordcheck.go);
	// invalidMsg describes the first.
	invalid    int
	invalidMsg string
	// dropped counts data items (not error rows) the normalize program
	// made no record of.
	dropped int
}

// run is the shared state of one attempt's batches.
type run struct {
	actx   context.Context
	cancel context.CancelCauseFunc

	mu     sync.Mutex
	closed bool // the attempt has been assembled; late batches are ignored
	// failure is a final failure (the upstream rejected the input): it
	// ends the attempt and cancels the other batches.
	failure *batchFailure
	// failed holds, per batch, a failure the next offer may cure: the
	// other batches run on and are kept, only this batch's inputs fail
	// over.
	failed  []*batchFailure
	handles []string
	outs    []batchOut
}

// started records the handle of upstream work as soon as a client reports
// it (sources.Call.OnHandle), so a failed, cancelled or abandoned attempt
// still names the work it paid for.
func (rn *run) started(h sources.Handle) {
	rn.mu.Lock()
	rn.handles = sources.MergeHandles(rn.handles, h.String())
	rn.mu.Unlock()
}

// fail records the failure of batch i. A final failure (not retryable:
// another offer would fail the same way) is the attempt's and cancels the
// siblings; a retryable one is the batch's alone: the siblings run on and
// what they serve is kept while this batch's inputs fail over. A failure
// seen after the attempt's context ended is a consequence of that
// (deadline, soft timeout, final failure, caller gone) and the cause
// decides instead.
func (rn *run) fail(i int, f *batchFailure, handles []string) {
	rn.mu.Lock()
	final := !f.retryable
	if !rn.closed {
		rn.handles = sources.MergeHandles(rn.handles, handles...)
		switch {
		case rn.actx.Err() != nil:
		case final && rn.failure == nil:
			rn.failure = f
		case !final && rn.failed[i] == nil:
			rn.failed[i] = f
		}
	}
	rn.mu.Unlock()
	if final {
		rn.cancel(errBatchFailed)
	}
}

// succeed stores a batch's output.
func (rn *run) succeed(i int, out batchOut, handles []string) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if rn.closed {
		return
	}
	rn.handles = sources.MergeHandles(rn.handles, handles...)
	out.done = true
	rn.outs[i] = out
}

// attempt runs one offer over all the call's inputs.
func (r *Router) attempt(ctx context.Context, o *registry.Offer, req *Request, nowISO string) *attempt {
	start := time.Now()
	a := &attempt{offer: o, rec: runs.Attempt{Offer: o.ID}}
	defer func() { a.rec.DurationMS = time.Since(start).Milliseconds() }()

	client := r.clients[o.Source.ID]
	if client == nil {
		noClient(a, o)
		return a
	}

	opts := offerOptions(o, req.Options)
	batches := split(req.Inputs, o.MaxInputs)
	limits := batchLimits(batches, req.window(), req.scope())

	dctx, cancelDeadline := context.WithTimeoutCause(ctx, r.cfg.AttemptTimeout, errAttemptTimeout)
	defer cancelDeadline()
	actx, cancel := context.WithCancelCause(dctx)
	defer cancel(nil)
	rn := &run{actx: actx, cancel: cancel, outs: make([]batchOut, len(batches)), failed: make([]*batchFailure, len(batches))}

	wd := newWatchdog(r.cfg.SoftTimeout, len(batches))
	defer wd.watch(cancel)()

	sem := make(chan struct{}, r.cfg.MaxParallelBatches)
	// all closes when the last batch is done; the dispatch loop holds one
	// share until it has started every batch (no goroutine waits for it).
	all := make(chan struct{})
	var pending atomic.Int64
	pending.Store(1)
	done := func() {
		if pending.Add(-1) == 0 {
			close(all)
		}
	}
	runBatch := func(i int, in []string) {
		defer done()
		defer func() { <-sem }()
		defer r.recoverBatch(rn, o, i)
		r.batch(rn, wd, client, o, req, in, limits[i], opts, nowISO, i)
	}
	_, inline := client.(sources.ReturnsOnCancel)
	inline = inline && len(batches) == 1
dispatch:
	for i, in := range batches {
		if actx.Err() != nil {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-actx.Done():
			break dispatch
		}
		pending.Add(1)
		if inline {
			runBatch(i, in)
			continue
		}
		go runBatch(i, in)
	}
	done()
	select {
	case <-all:
	case <-ctx.Done():
	case <-actx.Done():
		grace := time.NewTimer(abandonGrace)
		select {
		case <-all:
		case <-ctx.Done():
		case <-grace.C:
		}
		grace.Stop()
	}

	r.conclude(ctx, a, rn, req, batches)
	return a
}

// conclude closes the attempt's run once its batches are done or
// abandoned, and sets its outcome. It is apart from attempt so that the
// frame a held call keeps on its stack while it waits stays small (see
// attempt).
func (r *Router) conclude(ctx context.Context, a *attempt, rn *run, req *Request, batches [][]string) {
	rn.mu.Lock()
	rn.closed = true
	failed, outs, lost := rn.failure, rn.outs, rn.failed
	a.rec.Handles = rn.handles
	rn.mu.Unlock()

	complete, served := true, 0
	for i, out := range outs {
		complete = complete && (out.done || lost[i] != nil)
		if out.done {
			served++
		}
	}
	if failed == nil && complete && served == 0 {
		failed = firstFailure(lost) // every batch failed: the attempt did
	}
	switch {
	case ctx.Err() != nil:
		a.canceled = ctx.Err()
		a.rec.Outcome, a.verdict = OutcomeCanceled, neutral
		a.rec.Message = "the caller went away: " + ctx.Err().Error()
	case failed != nil:
		a.rec.Outcome, a.rec.Status, a.rec.Message = failed.outcome, failed.status, failed.message
		a.retryable, a.retryAfter, a.upstreamMsg, a.verdict = failed.retryable, failed.retryAfter, failed.message, failed.verdict
	case !complete:
		a.retryable, a.verdict = true, failure
		switch context.Cause(rn.actx) {
		case errSoftTimeout:
			a.rec.Outcome = sources.OutcomeSoftTimeout
			a.rec.Message = fmt.Sprintf("no upstream activity for %s", r.cfg.SoftTimeout)
		default:
			a.rec.Outcome = sources.OutcomeTimeout
			a.rec.Message = fmt.Sprintf("the attempt did not finish within its %s deadline", r.cfg.AttemptTimeout)
		}
	default:
		r.assemble(a, outs, req, batches)
		if a.ok && served < len(outs) {
			partial(a, lost, batches)
		}
	}
}

// noClient fails an attempt whose source has no client on this gateway.
func noClient(a *attempt, o *registry.Offer) {
	a.rec.Outcome, a.retryable, a.verdict = OutcomeNoClient, true, failure
	a.rec.Message = fmt.Sprintf("source %s has no client configured on this gateway", o.Source.ID)
}

// recoverBatch, deferred by each batch, turns a panic in it (a client, a
// program) into the attempt's failure instead of the process's end.
func (r *Router) recoverBatch(rn *run, o *registry.Offer, i int) {
	if e := sources.Recovered(recover()); e != nil {
		r.logger.Error("panic in an upstream batch", zap.String("offer", o.ID), zap.String("panic", e.Message), zap.Stack("stack"))
		rn.fail(i, &batchFailure{outcome: e.Outcome, retryable: true, verdict: failure, message: e.Message}, nil)
	}
}

// offerOptions keeps the call's options that offer o implements.
func offerOptions(o *registry.Offer, options map[string]any) map[string]any {
	opts := make(map[string]any, len(options))
	for k, v := range options {
		if o.Implements[k] {
			opts[k] = v
		}
	}
	return opts
}

// assemble turns the batches' outputs into the attempt's records, or an
// error_records failure when every item was an error record. A batch that
// failed (not done) contributes no records: its inputs get none.
func (r *Router) assemble(a *attempt, outs []batchOut, req *Request, batches [][]string) {
	var items, errItems, dead, skipped, invalid, dropped, records int
	var skipErr error
	var invalidMsg string
	var perInput [][]json.RawMessage
	for i, out := range outs {
		if !out.done {
			perInput = append(perInput, make([][]json.RawMessage, max(1, len(batches[i])))...)
			continue
		}
		items += out.items
		errItems += out.errorItems
		dead += out.deadItems
		skipped += out.skipped
		if skipErr == nil {
			skipErr = out.skipErr
		}
		invalid += out.invalid
		dropped += out.dropped
		if invalidMsg == "" {
			invalidMsg = out.invalidMsg
		}
		for _, recs := range out.perInput {
			records += len(recs)
		}
		perInput = append(perInput, out.perInput...)
		if a.rec.Status == 0 {
			a.rec.Status = out.status
		}
	}
	if items > 0 && errItems >= items && dead < errItems {
		a.rec.Outcome, a.retryable, a.verdict = OutcomeErrorRecords, true, failure
		a.rec.Message = fmt.Sprintf("all %d items were error records", items)
		return
	}
	// Items came back but none is a record: not an empty answer to serve
	// (and settle) as a success, but a failure the next offer may cure.
	if records == 0 && skipped+invalid+dropped > 0 {
		a.rec.Outcome, a.retryable, a.verdict = OutcomeNoValidRecords, true, failure
		a.rec.Message = noneSurvived(items, errItems, skipped, invalid, dropped, skipErr, invalidMsg)
		return
	}
	a.ok, a.verdict = true, success
	a.rec.Outcome = OutcomeOK
	a.perInput = perInput
	a.records, a.total, a.more = applyLimit(perInput, req.Limit, req.Skip, req.scope())
	a.rec.Records = a.total
	var notes []string
	if dead > 0 {
		// A page that is gone is an answer, not a failure: no record for
		// that input, no charge, nothing against the breaker.
		notes = append(notes, fmt.Sprintf("%d inputs name pages that are gone (dead_page)", dead))
		errItems -= dead
	}
	if errItems > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d items were error records", errItems, items))
	}
	if skipped > 0 {
		notes = append(notes, fmt.Sprintf("%d items skipped: normalize: %v", skipped, skipErr))
	}
	if invalid > 0 {
		notes = append(notes, fmt.Sprintf("%d records off the record schema dropped: %s", invalid, invalidMsg))
	}
	a.rec.Message = strings.Join(notes, "; ")
}

// OutcomePartial is an attempt that served some of its batches: their
// records are kept, the failed batches' inputs move on.
const OutcomePartial = "partial"

// firstFailure is the failure of an attempt whose every batch failed: the
// first batch's, waiting for the longest Retry-After any of them asked.
func firstFailure(lost []*batchFailure) *batchFailure {
	var first *batchFailure
	for _, f := range lost {
		if f == nil {
			continue
		}
		if first == nil {
			c := *f
			first = &c
		}
		first.retryAfter = max(first.retryAfter, f.retryAfter)
	}
	return first
}

// partial turns a served attempt some of whose batches failed (lost) into
// a partial one: the inputs of those batches are its failed inputs, and
// its outcome, status and verdict are the first failure's.
func partial(a *attempt, lost []*batchFailure, batches [][]string) {
	f := firstFailure(lost)
	var inputs []string
	off, failedBatches := 0, 0
	for i, b := range batches {
		if lost[i] != nil {
			failedBatches++
			for j := range b {
				a.failed = append(a.failed, off+j)
			}
			inputs = append(inputs, b...)
		}
		off += len(b)
	}
	a.retryable, a.retryAfter, a.upstreamMsg, a.verdict = true, f.retryAfter, f.message, f.verdict
	a.rec.Outcome, a.rec.Status = OutcomePartial, f.status
	why := f.outcome
	if f.status != 0 {
		why += fmt.Sprintf(", HTTP %d", f.status)
	}
	if f.message != "" {
		why += ": " + f.message
	}
	a.rec.Message = joinMsg(fmt.Sprintf("%d of %d batches served and kept; %d failed (%s), so this offer did not serve their %d inputs: %s",
		len(batches)-failedBatches, len(batches), failedBatches, why, len(inputs), listInputs(inputs)), a.rec.Message)
}

// listInputs names inputs for a message, at most ten of them.
func listInputs(in []string) string {
	const most = 10
	if len(in) <= most {
		return strings.Join(in, ", ")
	}
	return strings.Join(in[:most], ", ") + fmt.Sprintf(" and %d more", len(in)-most)
}
