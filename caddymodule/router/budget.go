package router

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/runs"
)

// Budget is the money side of a call, asked before each offer attempt:
// authorize, then call. The router knows nothing of balances or stores;
// the caller's Budget holds the money (and re-sizes the hold on failover)
// and says how many records the attempt may ask the upstream for.
type Budget interface {
	// Reserve holds money for at most records records of offer o and
	// returns how many it covers (0..records). Fewer than least (the
	// fewest that make the attempt worth calling: 1, or one past the
	// records of earlier pages the upstream must produce again) must be
	// answered 0, holding nothing; 0 skips the offer, with note as the
	// attempt's message; an error ends the call.
	Reserve(ctx context.Context, o *registry.Offer, records, least int) (covered int, note string, err error)
	// Keep tells that the call keeps records records served by offer o
	// while the inputs of its failed batches move on (Chunks, walk.go): every
	// later Reserve must hold their price too, on top of its own offer's
	// records, so the call's hold still pays for everything it serves.
	Keep(o *registry.Offer, records int)
	// Refusal is the failure of a call whose every candidate offer was
	// skipped because not one record of it could be paid.
	Refusal() error
}

// OutcomeUnpayable is an offer the walk skipped because the call's money
// (the balance, or the key's credit limit) does not pay for one record of
// it; the attempt's message says which.
const OutcomeUnpayable = "unpayable"

// ErrNoBudget is the failure of a call every offer of which was unpayable
// when its Budget gives no Refusal.
var ErrNoBudget = errors.New("not one record of any offer can be paid")

// MaxRecords is the most records a call's attempt may ask the upstream
// for, what its Budget is asked to cover: an async submit reserves it
// before answering 202, so an unpayable run is refused as a sync call is.
func (req Request) MaxRecords() int { return req.records() }

// records is the most records the attempt may ask the upstream for, what
// a Budget is asked to cover: the window (a later search page's upstream
// produces the earlier pages again, since no upstream takes an offset),
// per input where the limit applies per input, and never more than the
// service's records_per_input allows for the inputs.
func (req Request) records() int {
	inputs := max(1, len(req.Inputs))
	perInput := req.Service.PerInput
	window := req.window()
	if req.scope() == registry.ScopePerInput {
		if perInput > 0 {
			return min(window, perInput) * inputs
		}
		return window * inputs
	}
	if perInput > 0 {
		return min(window, perInput*inputs)
	}
	return window
}

// LeastRecords is the fewest records worth a hold (see Budget.Reserve).
func (req Request) LeastRecords() int { return req.least() }

// least is the fewest records worth a hold: one past the records of the
// earlier pages, which the upstream produces again and the call drops.
func (req Request) least() int {
	return min(req.Skip+1, max(1, req.records()))
}

// capped returns the request cut to covered records (at least least()),
// so the upstream is never asked for more than the call's money covers:
// the window, Skip+Limit, fits in covered. Per call: the limit, and no
// more inputs than the window (an input yields at least one record, so
// more inputs is upstream work nobody pays for: 1,000 URLs with limit 1
// make one upstream input, not 1,000). Per input: a per-input window and
// as many inputs as it fills.
func (req Request) capped(covered int) Request {
	if req.Limit <= 0 || covered <= 0 {
		return req
	}
	if req.scope() == registry.ScopePerInput {
		if covered >= req.records() {
			return req
		}
		window := min(req.window(), covered)
		req.Limit = max(1, window-req.Skip)
		if n := covered / window; n < len(req.Inputs) {
			req.Inputs = req.Inputs[:n:n]
		}
		return req
	}
	window := min(req.window(), covered)
	req.Limit = max(1, window-req.Skip)
	if len(req.Inputs) > window {
		req.Inputs = req.Inputs[:window:window]
	}
	return req
}

// reserve asks the call's Budget for offer o before it is called and
// returns the request the attempt runs, cut to what the money covers, and
// the records covered; nil (and no failure) when the offer is skipped as
// unpayable, note saying why.
func (w *walk) reserve(ctx context.Context, o *registry.Offer, trial bool) (_ *Request, covered int, note string, _ *Failure) {
	req := w.request()
	covered = req.records()
	if b := req.Budget; b != nil {
		n, why, err := b.Reserve(ctx, o, covered, req.least())
		if err != nil || n < req.least() {
			w.r.breakers.report(o, neutral, trial) // the offer was not called
		}
		if err != nil {
			w.r.logger.Error("reserving credits", zap.String("offer", o.ID), zap.Error(err))
			return nil, 0, "", &Failure{Kind: errkind.StoreUnavailable,
				Message:  "the account store is unavailable, so no upstream was called and nothing was charged; retry shortly",
				Attempts: w.attempts, cause: err}
		}
		if n < req.least() {
			// A Budget that covered too few for this page.
			if why == "" {
				why = fmt.Sprintf("skipped: not one record at %s credits can be paid", o.Price)
			}
			w.unpayable++
			w.attempts = append(w.attempts, runs.Attempt{Offer: o.ID, Outcome: OutcomeUnpayable, Message: why})
			return nil, 0, why, nil
		}
		covered = min(covered, n)
	}
	req = req.capped(covered)
	return &req, covered, "", nil
}

// refusal is the failure of a walk that called no offer because none
// could be paid.
func (w *walk) refusal() *Failure {
	var err error
	if w.req.Budget != nil {
		err = w.req.Budget.Refusal()
	}
	var f *Failure
	if errors.As(err, &f) {
		f.Attempts = w.attempts
		return f
	}
	if err == nil {
		err = ErrNoBudget
	}
	return &Failure{Kind: errkind.InsufficientCredits,
		Message: err.Error(), Attempts: w.attempts, cause: err}
}
