package router

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/sources"
)

// One attempt: an offer over all the call's inputs, split into batches of
// its max_inputs (batch.go) run concurrently under the attempt deadline
// and the soft-timeout watchdog (watchdog.go), then assembled into
// records with the limit applied, or a failure, or a partial outcome
// whose failed batches' inputs fail over.

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
	// unmatched counts items of its batches placed under their first
	// input for naming none (batchOut.unmatched).
	unmatched int
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
	bs := &batchSet{actx: actx, cancel: cancel, outs: make([]batchOut, len(batches)), failed: make([]*batchFailure, len(batches))}

	wd := newWatchdog(r.cfg.SoftTimeout, len(batches), cancel)
	defer wd.stop()

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
		defer r.recoverBatch(bs, o, i)
		r.batch(bs, &wd.pulses[i], client, o, req, in, limits[i], opts, nowISO, i)
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

	r.conclude(ctx, a, bs, req, batches)
	return a
}

// recoverBatch, deferred by each batch, turns a panic in it (a client, a
// program) into the attempt's failure instead of the process's end.
func (r *Router) recoverBatch(bs *batchSet, o *registry.Offer, i int) {
	if e := sources.Recovered(recover()); e != nil {
		r.logger.Error("panic in an upstream batch", zap.String("offer", o.ID), zap.String("panic", e.Message), zap.Stack("stack"))
		bs.fail(i, &batchFailure{outcome: e.Outcome, retryable: true, verdict: failure, message: e.Message}, nil)
	}
}

// split cuts inputs into batches of at most size (one empty batch when
// there are no inputs, so the upstream is still called once).
func split(inputs []string, size int) [][]string {
	if size <= 0 {
		size = len(inputs)
	}
	if len(inputs) == 0 {
		return [][]string{nil}
	}
	var out [][]string
	for len(inputs) > size {
		out = append(out, inputs[:size:size])
		inputs = inputs[size:]
	}
	return append(out, inputs)
}

// batchLimits is the limit each batch asks its upstream for. Per input it
// is the window of every input; per call the call's window is shared out
// in proportion to the batches' inputs (each at least one record when
// there are no more inputs than records), so that the batches together
// never ask for more than the call may return.
func batchLimits(batches [][]string, window int, scope string) []int {
	out := make([]int, len(batches))
	if window <= 0 || scope == registry.ScopePerInput || len(batches) == 1 {
		for i := range out {
			out[i] = window
		}
		return out
	}
	total := 0
	for _, b := range batches {
		total += len(b)
	}
	given := 0
	for i, b := range batches {
		out[i] = window * len(b) / max(1, total)
		given += out[i]
	}
	for i := 0; given < window; i = (i + 1) % len(out) {
		out[i]++
		given++
	}
	return out
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

// noClient fails an attempt whose source has no client on this gateway.
func noClient(a *attempt, o *registry.Offer) {
	a.rec.Outcome, a.retryable, a.verdict = OutcomeNoClient, true, failure
	a.rec.Message = fmt.Sprintf("source %s has no client configured on this gateway", o.Source.ID)
}

// conclude closes the attempt's run once its batches are done or
// abandoned, and sets its outcome. It is apart from attempt so that the
// frame a held call keeps on its stack while it waits stays small (see
// attempt).
func (r *Router) conclude(ctx context.Context, a *attempt, bs *batchSet, req *Request, batches [][]string) {
	bs.mu.Lock()
	bs.closed = true
	failed, outs, lost := bs.failure, bs.outs, bs.failed
	a.rec.Handles = bs.handles
	bs.mu.Unlock()

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
		switch context.Cause(bs.actx) {
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

// assemble turns the batches' outputs into the attempt's records, or an
// error_records failure when every item was an error record. A batch that
// failed (not done) contributes no records: its inputs get none.
func (r *Router) assemble(a *attempt, outs []batchOut, req *Request, batches [][]string) {
	var items, errItems, dead, deadInputs, skipped, invalid, dropped, records int
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
		deadInputs += out.deadInputs
		skipped += out.skipped
		if skipErr == nil {
			skipErr = out.skipErr
		}
		invalid += out.invalid
		dropped += out.dropped
		a.unmatched += out.unmatched
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
		if deadInputs == 1 {
			notes = append(notes, "1 input names a page that is gone")
		} else {
			notes = append(notes, fmt.Sprintf("%d inputs name pages that are gone", deadInputs))
		}
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

// OutcomeNoValidRecords is an attempt whose items gave no record on the
// service's declared shape: every item failed its normalizer, or produced a
// record off the record schema, or was dropped by it, or was an error record. It is retryable:
// the walk moves on to the next offer.
const OutcomeNoValidRecords = "no_valid_records"

// noneSurvived is the message of an attempt none of whose items survived.
func noneSurvived(items, errItems, skipped, invalid, dropped int, skipErr error, invalidMsg string) string {
	msg := fmt.Sprintf("no record survived of %d items", items)
	if errItems > 0 {
		msg += fmt.Sprintf("; %d error records", errItems)
	}
	if skipped > 0 {
		msg += fmt.Sprintf("; %d failed normalize: %v", skipped, skipErr)
	}
	if invalid > 0 {
		msg += fmt.Sprintf("; %d off the record schema: %s", invalid, invalidMsg)
	}
	if dropped > 0 {
		msg += fmt.Sprintf("; %d dropped by the normalizer", dropped)
	}
	return msg
}

// applyLimit flattens per-input records in input order, drops the skip
// records of earlier pages and applies the limit by scope: per_call keeps
// records [skip, skip+limit) overall, per_input the same range of each
// input. total is the count before skip and limit; more reports that a
// window was full, so a next page may exist. It is generic so that the
// offer of each record of a call served by two offers (Chunks, walk.go) is cut
// exactly as the records are.
func applyLimit[T any](perInput [][]T, limit, skip int, scope string) (records []T, total int, more bool) {
	for _, recs := range perInput {
		total += len(recs)
	}
	window := func(recs []T) []T {
		if limit > 0 && len(recs) >= skip+limit {
			more = true
		}
		if skip >= len(recs) {
			return nil
		}
		recs = recs[skip:]
		if limit > 0 && len(recs) > limit {
			recs = recs[:limit]
		}
		return recs
	}
	records = make([]T, 0, total)
	if scope == registry.ScopePerInput {
		for _, recs := range perInput {
			records = append(records, window(recs)...)
		}
		return records, total, more
	}
	for _, recs := range perInput {
		records = append(records, recs...)
	}
	return window(records), total, more
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
