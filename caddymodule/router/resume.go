package router

import (
	"context"
	"errors"
	"slices"

	"go.uber.org/zap"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/runs"
)

// Started is paid upstream work one batch of an attempt started, as
// Request.OnHandle reports it: the offer, the batch (its index in the
// attempt, its inputs and limit) and the work's handle
// (sources.Handle.String). A durable caller stores it and gives it back
// to Resume after a restart.
type Started struct {
	Offer  string   `json:"offer"`
	Batch  int      `json:"batch"`
	Inputs []string `json:"inputs,omitempty"`
	Limit  int      `json:"limit,omitempty"`
	Handle string   `json:"handle"`
}

// Resumed is an attempt an earlier process began and did not finish
// (it died): its offer, the records its money covered when it began,
// the attempts made before it, and the upstream work its batches
// started.
type Resumed struct {
	Offer   string
	Records int
	Before  []runs.Attempt
	Started []Started
}

// batch returns the work batch i of offer started (the last one, should a
// batch have reported twice); nil-safe.
func (rs *Resumed) batch(offer string, i int) (Started, bool) {
	if rs == nil {
		return Started{}, false
	}
	for k := len(rs.Started) - 1; k >= 0; k-- {
		if s := rs.Started[k]; s.Offer == offer && s.Batch == i {
			return s, true
		}
	}
	return Started{}, false
}

// Resume finishes a call an earlier process began: the attempt of
// from.Offer runs again as it ran then (the same batches, capped to the
// same records, normalized, checked, limited and reported as any
// attempt), except that a batch whose upstream work was started waits
// for that work (sources.Resumer.Resume) instead of starting it again;
// batches with no recorded work start now. If the attempt fails, the walk
// fails over to the offers after from.Offer, as Run would have. An offer
// no longer in the call's chain cannot be resumed: its recorded work is
// aborted and the call runs afresh.
func (r *Router) Resume(ctx context.Context, req Request, from Resumed) (*Result, error) {
	if req.Service == nil {
		return r.Run(ctx, req)
	}
	offers := req.Offers
	switch {
	case req.Pin != nil:
		offers = []*registry.Offer{req.Pin}
	case offers == nil:
		offers = req.Service.LiveOffers()
	}
	at := slices.IndexFunc(offers, func(o *registry.Offer) bool { return o.ID == from.Offer })
	if at < 0 {
		r.logger.Warn("resuming a call: its offer is no longer in the chain; its upstream work is aborted and the call runs again",
			zap.String("service", req.Service.Key), zap.String("offer", from.Offer))
		r.Abort(ctx, req.Service, from)
		return withBefore(from.Before)(r.Run(ctx, req))
	}
	o := offers[at]
	now := req.Now
	if now.IsZero() {
		now = r.cfg.Now()
	}
	w := &walk{r: r, req: req, nowISO: now.UTC().Format(isoLayout), pinned: req.Pin != nil,
		attempts: slices.Clone(from.Before)}
	res, fail, done := w.resume(ctx, o, r.breakers.force(o), from)
	rest := offers[at+1:]
	if done || w.pinned || len(rest) == 0 {
		return w.finish(res, fail, done)
	}
	// The resumed attempt failed, or served only some of its batches: the
	// same walk goes on with the offers after it (those before it failed
	// in the earlier process), keeping what it served.
	return w.over(ctx, rest)
}

// resume runs the attempt of o that from recorded: with the request
// capped to the records its money covered then (so its batches are the
// ones that started the work), the money asked for again.
func (w *walk) resume(ctx context.Context, o *registry.Offer, trial bool, from Resumed) (res *Result, fail *Failure, done bool) {
	full := w.req
	w.req = full.capped(from.Records)
	req, fail := w.reserve(ctx, o, trial)
	w.req = full
	if fail != nil || req == nil {
		// The money no longer pays for it (or is unreadable): nobody will
		// wait for the recorded work, so it stops.
		w.r.Abort(ctx, full.Service, from)
		return nil, fail, fail != nil
	}
	req.resumed = &from
	a := w.r.attempt(ctx, o, req, w.nowISO)
	return w.record(o, a, trial, "resumed after a restart")
}

// withBefore puts the attempts before ahead of a walk's own.
func withBefore(before []runs.Attempt) func(*Result, error) (*Result, error) {
	return func(res *Result, err error) (*Result, error) {
		if len(before) == 0 {
			return res, err
		}
		var f *Failure
		switch {
		case res != nil:
			res.Attempts = append(slices.Clip(before), res.Attempts...)
		case errors.As(err, &f):
			f.Attempts = append(slices.Clip(before), f.Attempts...)
		}
		return res, err
	}
}
