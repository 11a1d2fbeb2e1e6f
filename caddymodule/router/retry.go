package router

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"socialrouter/caddymodule/sources"
)

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
