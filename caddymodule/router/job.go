package router

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/sources"
)

// One upstream job: a batch's call started (and retried on the same
// offer while no paid work began), or the work an earlier process started
// resumed, and work nobody will wait for aborted.

// job sends batch i's call: it waits for the upstream work an
// earlier process started for this batch (Request.resumed) or, when none
// was recorded, starts it (do). A held call waits in here, so the resumed
// case is a function of its own (resumeJob) and this frame stays small.
func (r *Router) job(ctx context.Context, client sources.Client, c sources.Call, req *Request,
	o *registry.Offer, inputs []string, i int) (*sources.Result, error) {
	if req.resumed == nil {
		return r.do(ctx, client, c)
	}
	return r.resumeJob(ctx, client, c, req.resumed, o, inputs, i)
}

// resumeJob waits for the upstream work recorded for batch i in from,
// or starts it again when that work cannot be resumed.
func (r *Router) resumeJob(ctx context.Context, client sources.Client, c sources.Call, from *Resumed,
	o *registry.Offer, inputs []string, i int) (*sources.Result, error) {
	s, ok := from.work(o.ID, i)
	if !ok {
		return r.do(ctx, client, c)
	}
	h, err := sources.ParseHandle(s.Handle)
	rs, can := client.(sources.Resumer)
	switch {
	case err != nil || !can:
		r.logger.Error("resuming upstream work: not resumable, started again",
			zap.String("offer", o.ID), zap.String("handle", s.Handle), zap.Bool("resumer", can), zap.Error(err))
		return r.do(ctx, client, c)
	case !slices.Equal(s.Inputs, inputs):
		// The money now covers fewer records, so the batch is not the one
		// that started the work: that work ends and this batch's starts.
		r.logger.Warn("resuming upstream work: the batch changed; its work is aborted and started again",
			zap.String("offer", o.ID), zap.String("handle", s.Handle))
		r.abandon(ctx, rs, h)
		return r.do(ctx, client, c)
	}
	return rs.Resume(ctx, c, h)
}

// Retries of one upstream call on the same offer, before the walk fails
// over (DESIGN section 4): the upstreams' own clients retry a 429, a 5xx
// or a reset with backoff, and an offer is not down for one of them.
const (
	// maxRetries is how many times a call is sent again.
	maxRetries = 2
	// retryBase is the first backoff; each retry doubles it, jittered by
	// ±50 %.
	retryBase = 250 * time.Millisecond
	// maxRetryAfter is the longest Retry-After waited for: an upstream
	// that asks for more is failed over instead.
	maxRetryAfter = 5 * time.Second
)

// do sends a call, retrying it on the same offer when it failed in a way
// a second try may fix and that started no paid work (the failure carries
// no upstream handle: a run or snapshot that exists is waited for or
// aborted by the client, never started twice). A retry waits its backoff,
// or the upstream's Retry-After up to maxRetryAfter, and only when the
// wait ends inside the attempt's deadline.
func (r *Router) do(ctx context.Context, client sources.Client, c sources.Call) (*sources.Result, error) {
	for try := 0; ; try++ {
		res, err := client.Do(ctx, c)
		if err == nil || try == maxRetries {
			return res, err
		}
		wait, ok := retryWait(ctx, err, try)
		if !ok {
			return res, err
		}
		c.Waiting(wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return res, err
		case <-t.C:
		}
	}
}

// retryWait is the wait before retry number try+1 of a call that failed
// with err, and whether to retry at all.
func retryWait(ctx context.Context, err error, try int) (time.Duration, bool) {
	var e *sources.Error
	if !errors.As(err, &e) || len(e.Handles) > 0 || ctx.Err() != nil {
		return 0, false
	}
	switch e.Outcome {
	case sources.OutcomeRateLimited, sources.OutcomeUpstream5xx, sources.OutcomeNetwork:
	default:
		return 0, false
	}
	wait := retryBase << try
	wait = wait/2 + rand.N(wait) // jitter: 0.5× to 1.5×
	if e.RetryAfter > 0 {
		if e.RetryAfter > maxRetryAfter {
			return 0, false
		}
		wait = e.RetryAfter
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
		return 0, false
	}
	return wait, true
}

// Abort stops the upstream work from recorded, each from a context that
// outlives ctx: work that cannot be resumed, or a cancelled call's whose
// waiter is gone.
func (r *Router) Abort(ctx context.Context, svc *registry.Service, from Resumed) {
	o, ok := svc.Offer(from.Offer)
	if !ok {
		if len(from.Started) > 0 {
			r.logger.Error("cannot abort upstream work: its offer is gone from the registry",
				zap.String("offer", from.Offer), zap.Int("calls", len(from.Started)))
		}
		return
	}
	rs, _ := r.clients[o.Source.ID].(sources.Resumer)
	for _, s := range from.Started {
		h, err := sources.ParseHandle(s.Handle)
		if err != nil || rs == nil {
			r.logger.Error("cannot abort upstream work", zap.String("offer", o.ID), zap.String("handle", s.Handle), zap.Error(err))
			continue
		}
		r.abandon(ctx, rs, h)
	}
}

// Check reports whether every upstream work from recorded has ended,
// with one status call each that does not wait (sources.Checker): a
// parked call is resumed once reading it will not wait. A record it
// cannot check (its offer gone, a client that cannot tell) counts as
// ended: Resume then decides, as after a restart.
func (r *Router) Check(ctx context.Context, svc *registry.Service, from Resumed) (bool, error) {
	o, ok := svc.Offer(from.Offer)
	if !ok {
		return true, nil
	}
	ck, _ := r.clients[o.Source.ID].(sources.Checker)
	if ck == nil {
		return true, nil
	}
	for _, s := range from.Started {
		h, err := sources.ParseHandle(s.Handle)
		if err != nil {
			return true, nil
		}
		ended, err := ck.Check(ctx, h)
		if err != nil || !ended {
			return false, err
		}
	}
	return true, nil
}

// abandon stops work h that nobody will wait for: detached from ctx
// first, so it is stopped whatever ended the call (even a hand-over to
// another worker, which waits for the work recorded, not this one). It
// is not inlined: resumeJob's frame stays on a resumed call's stack for
// the whole wait, and this cold path's locals would grow it.
//
//go:noinline
func (r *Router) abandon(ctx context.Context, rs sources.Resumer, h sources.Handle) {
	sources.AbortDetached(context.WithoutCancel(ctx), h, rs.Abort, r.logger)
}
