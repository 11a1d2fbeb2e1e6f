package router

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"socialrouter/caddymodule/registry"
)

// Chunks (issue 26): an attempt's batches run on their own. When some fail
// in a way the next offer may cure while others are served, the served
// batches are kept (their upstream work is paid for) and only the failed
// batches' inputs go to the next offer in failover order, which may split
// them into batches of its own. One call may so be served by two offers
// at two prices; each record is billed at its offer's price (Result.From).
// A walk that kept records ends served, with the inputs no offer served
// named in the attempts, unless the caller went away.

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
