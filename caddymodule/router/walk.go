package router

import (
	"context"
	"encoding/json"
	"fmt"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/runs"
)

// The walk over a call's offers: each offer in failover order is skipped
// (its breaker open, its money short) or tried as one attempt
// (attempt.go), and the walk ends with the first that serves, a final
// failure, or the classified failure of all (failure.go).

// walk is the state of one Run or Resume.
type walk struct {
	r        *Router
	req      Request
	nowISO   string
	pinned   bool
	attempts []runs.Attempt
	tried    []*attempt
	skipped  int
	// unpayable counts offers skipped because the Budget covered nothing.
	unpayable int
	// keep holds the records of batches served while others failed over
	// (Chunks below); nil until an attempt serves only some of its batches.
	keep *kept
	// gone: the caller went away (or its deadline passed).
	gone bool
}

// prepare sets w to the beginning of req's walk, after the attempts before
// (a resumed call's). It fills the caller's walk in place: the walk stays
// in Run's (or Resume's) frame, neither on the heap nor copied there.
func (w *walk) prepare(r *Router, req *Request, before []runs.Attempt) {
	now := req.Now
	if now.IsZero() {
		now = r.cfg.Now()
	}
	*w = walk{r: r, req: *req, nowISO: now.UTC().Format(isoLayout), pinned: req.Pin != nil, attempts: before}
}

// over walks offers in failover order until one serves the call (or the
// walk ends otherwise). Run walks a call's whole chain; Resume goes on
// with the offers after a resumed attempt, in the same walk, so the
// batches that attempt served stay kept (Chunks below).
func (w *walk) over(ctx context.Context, offers []*registry.Offer) (*Result, error) {
	r := w.r
	allRefused := true
	for _, o := range offers {
		if !r.breakers.refuses(o) {
			allRefused = false
			break
		}
	}
	if !allRefused {
		for _, o := range offers {
			ok, trial := r.breakers.acquire(o)
			if !ok {
				w.skip(o)
				continue
			}
			if res, fail, done := w.try(ctx, o, trial, ""); done {
				return w.finish(res, fail, done)
			}
		}
		if len(w.tried) > 0 {
			return w.finish(nil, nil, false)
		}
		if w.unpayable > 0 {
			return nil, w.refusal()
		}
	}
	// Every offer is refused: failing without trying would keep the
	// service down until a cooldown ends, so try the first offer refused
	// by its breaker anyway. An offer whose source an operator marked down
	// is never called: that is what the override is for.
	for _, o := range offers {
		if r.breakers.operatorOff(o) {
			continue
		}
		trial := r.breakers.force(o)
		return w.finish(w.try(ctx, o, trial, "every offer's circuit breaker was open; tried this one anyway"))
	}
	return nil, w.sourcesDown(offers)
}

// try runs one attempt and reports it to the offer's breaker. done is true
// when the walk ends here: with res on success, or with fail when the
// client went away or the upstream rejected the input.
func (w *walk) try(ctx context.Context, o *registry.Offer, trial bool, note string) (res *Result, fail *Failure, done bool) {
	req, fail := w.begin(ctx, o, trial)
	if fail != nil || req == nil {
		return nil, fail, fail != nil
	}
	a := w.r.attempt(ctx, o, req, w.nowISO)
	return w.record(o, a, trial, note)
}

// begin readies offer o's attempt: the caller asked whether the call goes
// on (Request.Proceed), the money held (reserve) and the caller told
// (Request.OnAttempt). It returns the request the attempt runs, or nil
// and no failure when o is passed over as unpayable.
func (w *walk) begin(ctx context.Context, o *registry.Offer, trial bool) (*Request, *Failure) {
	if proceed := w.req.Proceed; proceed != nil {
		if err := proceed(ctx, o); err != nil {
			return nil, w.stopped(o, trial, err)
		}
	}
	req, covered, note, fail := w.reserve(ctx, o, trial)
	if fail != nil {
		return nil, fail
	}
	if on := w.req.OnAttempt; on != nil {
		if err := on(ctx, Begun{Offer: o, Records: covered, Unpayable: req == nil, Note: note, Partial: w.keep != nil}); err != nil {
			return nil, w.stopped(o, trial, err)
		}
	}
	return req, nil
}

// tryResumed runs the attempt of o that from recorded: with the request
// capped to the records its money covered then (so its batches are the
// ones that started the work), the money asked for again.
func (w *walk) tryResumed(ctx context.Context, o *registry.Offer, trial bool, from Resumed) (res *Result, fail *Failure, done bool) {
	req, fail := w.beginResumed(ctx, o, trial, &from)
	if fail != nil || req == nil {
		return nil, fail, fail != nil
	}
	a := w.r.attempt(ctx, o, req, w.nowISO)
	return w.record(o, a, trial, "resumed after a restart")
}

// beginResumed begins the resumed attempt as begin does, capped to
// from's records, or aborts from's work when it does not begin. It is
// apart from tryResumed so that the copy of the call's request it keeps
// is not in the frame a resumed call keeps while it waits.
func (w *walk) beginResumed(ctx context.Context, o *registry.Offer, trial bool, from *Resumed) (*Request, *Failure) {
	full := w.req
	w.req = full.capped(from.Records)
	req, fail := w.begin(ctx, o, trial)
	w.req = full
	if fail != nil || req == nil {
		// The money no longer pays for it (or is unreadable), or the
		// caller stopped it: nobody will wait for the recorded work, so
		// it stops.
		w.r.Abort(ctx, full.Service, *from)
		return nil, fail
	}
	req.resumed = from
	return req, nil
}

// record reports an attempt to the offer's breaker, the observer and the
// log, and decides whether the walk ends with it. It is apart from try so
// that the frame a held call keeps while it waits stays small.
func (w *walk) record(o *registry.Offer, a *attempt, trial bool, note string) (res *Result, fail *Failure, done bool) {
	if note != "" {
		a.rec.Message = joinMsg(note, a.rec.Message)
	}
	if w.r.breakers.report(o, a.verdict, trial) {
		w.r.logger.Info("circuit breaker opened", zap.String("offer", o.ID),
			zap.Int("failures", w.r.cfg.BreakerFailures), zap.Duration("cooldown", w.r.cfg.BreakerCooldown))
	}
	w.attempts = append(w.attempts, a.rec)
	w.tried = append(w.tried, a)
	w.r.observe(o, a.rec.Outcome, a.rec.DurationMS, false)
	switch {
	case a.ok && w.keep == nil && len(a.failed) == 0:
		w.logAttempt(zap.DebugLevel, "offer attempt served", o, a)
		return &Result{Offer: o, Records: a.records, Total: a.total, Attempts: w.attempts, More: a.more}, nil, true
	case a.ok:
		// Some batches served (now or before): keep them, go on with
		// the inputs of the failed ones.
		if w.absorb(o, a) {
			return w.keptResult(), nil, true
		}
		return nil, nil, false
	case a.canceled != nil:
		w.gone = true
		return nil, w.canceled(o, a.canceled), true
	case !a.retryable:
		w.logAttempt(zap.InfoLevel, "offer attempt rejected the input", o, a)
		return nil, w.rejected(o, a), true
	}
	w.logAttempt(zap.InfoLevel, "offer attempt failed", o, a)
	return nil, nil, false
}

// skip records an offer the walk passed over.
func (w *walk) skip(o *registry.Offer) {
	msg := "skipped: circuit breaker open after repeated failures"
	if s, _ := w.r.breakers.Override(o.Source.ID); offRoute(s) {
		msg = "skipped: source marked " + s + " by an operator"
	}
	w.skipped++
	w.attempts = append(w.attempts, runs.Attempt{Offer: o.ID, Outcome: OutcomeCircuitOpen, Message: msg})
	w.r.observe(o, OutcomeCircuitOpen, 0, true)
	w.r.logger.Debug("offer skipped", zap.String("service", w.req.Service.Key), zap.String("offer", o.ID))
}

// logAttempt logs an attempt at lvl; the fields are built only when that
// level is enabled (a served attempt logs at debug, off in production, and
// building its fields cost an allocation on every call).
func (w *walk) logAttempt(lvl zapcore.Level, msg string, o *registry.Offer, a *attempt) {
	ce := w.r.logger.Check(lvl, msg)
	if ce == nil {
		return
	}
	fields := []zap.Field{zap.String("service", w.req.Service.Key), zap.String("offer", o.ID),
		zap.String("outcome", a.rec.Outcome), zap.Int("status", a.rec.Status),
		zap.Int64("duration_ms", a.rec.DurationMS), zap.Int("inputs", len(w.req.Inputs))}
	if a.ok {
		fields = append(fields, zap.Int("records", a.total))
	}
	ce.Write(fields...)
}

// finish ends the walk after the last try: a result, the records kept of
// partly served attempts, a failure, or (the attempt failed retryably) the
// classified failure of all attempts.
func (w *walk) finish(res *Result, fail *Failure, done bool) (*Result, error) {
	switch {
	case res != nil:
		return res, nil
	case w.keep != nil && !w.gone:
		// Batches served before are paid upstream: serve them; the
		// attempts say which inputs no offer served.
		return w.keptResult(), nil
	case fail != nil:
		return nil, fail
	case len(w.tried) == 0:
		return nil, w.refusal()
	}
	return nil, w.classify()
}

// sourcesDown is the failure of a walk whose every offer is on a source an
// operator marked down (or coming_soon): nothing was called, nothing is
// charged.
func (w *walk) sourcesDown(offers []*registry.Offer) *Failure {
	for _, o := range offers {
		w.skip(o)
	}
	return &Failure{Kind: errkind.ProviderError, Offer: offers[len(offers)-1], Attempts: w.attempts,
		Message: fmt.Sprintf("every offer of %s is on a source an operator marked down or coming_soon; nothing was called or charged. Retry later.", w.req.Service.Key)}
}

// Chunks (issue 26): an attempt's batches run on their own. When some fail
// in a way the next offer may cure while others are served, the served
// batches are kept (their upstream work is paid for) and only the failed
// batches' inputs go to the next offer in failover order, which may split
// them into batches of its own. One call may so be served by two offers
// at two prices; each record is billed at its offer's price (Result.From).
// A walk that kept records ends served, with the inputs no offer served
// named in the attempts, unless the caller went away.

// kept is what a walk keeps of partly served attempts.
type kept struct {
	// offers are those that served inputs, in serving order.
	offers []*registry.Offer
	// perInput and from are indexed by the call's inputs: the records
	// kept for each, and the index in offers of the offer that served it
	// (-1: not served).
	perInput [][]json.RawMessage
	from     []int
	// pending are the call's inputs still to serve, in order.
	pending []int
	// records counts the records kept, before the limit.
	records int
}

// request is the request of the walk's next attempt: the inputs not yet
// served and, for a per-call limit, the part of the window the kept
// records leave.
func (w *walk) request() Request {
	req, k := w.req, w.keep
	if k == nil {
		return req
	}
	req.Inputs = make([]string, len(k.pending))
	for i, p := range k.pending {
		req.Inputs[i] = w.req.Inputs[p]
	}
	if req.Limit > 0 && req.scope() != registry.ScopePerInput {
		req.Limit, req.Skip = max(1, w.req.window()-k.records), 0
	}
	return req
}

// absorb keeps what attempt a of offer o served of the pending inputs
// (the request() it ran) and tells the Budget, so the next offer's hold
// covers it too. It reports whether the walk is done: nothing left to
// serve, or a per-call window already filled.
func (w *walk) absorb(o *registry.Offer, a *attempt) (done bool) {
	k := w.keep
	if k == nil {
		// The first partial attempt: it ran every input (an attempt
		// without inputs is one batch, never partial).
		n := len(w.req.Inputs)
		k = &kept{perInput: make([][]json.RawMessage, n), from: make([]int, n), pending: make([]int, n)}
		for i := range n {
			k.from[i], k.pending[i] = -1, i
		}
		w.keep = k
	}
	failed := make(map[int]bool, len(a.failed))
	for _, j := range a.failed {
		failed[j] = true
	}
	served, records := 0, 0
	var pending []int
	for j, orig := range k.pending {
		switch {
		case j >= len(a.perInput):
			// Cut from the attempt by its money cap: not served.
		case failed[j]:
			pending = append(pending, orig)
		default:
			k.perInput[orig] = a.perInput[j]
			k.from[orig] = len(k.offers)
			records += len(a.perInput[j])
			served++
		}
	}
	if served > 0 {
		k.offers = append(k.offers, o)
	}
	k.pending, k.records = pending, k.records+records
	full := w.req.Limit > 0 && w.req.scope() != registry.ScopePerInput && k.records >= w.req.window()
	if len(pending) == 0 || full {
		return true
	}
	if b := w.req.Budget; b != nil && records > 0 {
		b.Keep(o, records)
	}
	w.r.logger.Info("offer attempt served some batches; the others' inputs move on", zap.String("service", w.req.Service.Key),
		zap.String("offer", o.ID), zap.Int("inputs_kept", served), zap.Int("inputs_pending", len(pending)))
	return false
}

// keptResult is the result of a walk that kept records: every input an
// offer served, in input order, with the call's limit applied; Offer is
// the last offer that served (served_by), From the offer of each record.
func (w *walk) keptResult() *Result {
	k := w.keep
	tags := make([][]int, len(k.perInput))
	for i, recs := range k.perInput {
		tags[i] = make([]int, len(recs))
		for j := range tags[i] {
			tags[i][j] = k.from[i]
		}
	}
	records, total, more := applyLimit(k.perInput, w.req.Limit, w.req.Skip, w.req.scope())
	from, _, _ := applyLimit(tags, w.req.Limit, w.req.Skip, w.req.scope())
	res := &Result{Offer: k.offers[len(k.offers)-1], Records: records, Total: total, Attempts: w.attempts, More: more}
	if len(k.offers) > 1 {
		res.Served, res.From = k.offers, from
	}
	return res
}
