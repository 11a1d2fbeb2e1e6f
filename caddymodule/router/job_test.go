package router

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/sources"
)

// failTimes fails the first n calls with err, then answers.
func failTimes(n int32, err *sources.Error) func(context.Context, sources.Call) (*sources.Result, error) {
	var calls atomic.Int32
	return func(ctx context.Context, c sources.Call) (*sources.Result, error) {
		if calls.Add(1) <= n {
			return nil, err
		}
		return echo(1)(ctx, c)
	}
}

// TestRetryBeforeFailover: a 429, 5xx or reset is retried on the same
// offer (at most twice, Retry-After up to 5 s honoured) before the walk
// moves on; a failure that started paid work, or asks for a longer wait,
// is not.
func TestRetryBeforeFailover(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	limited := &sources.Error{Outcome: sources.OutcomeRateLimited, Status: 429, Retryable: true, RetryAfter: time.Second}
	busy := &sources.Error{Outcome: sources.OutcomeUpstream5xx, Status: 503, Retryable: true}
	tests := []struct {
		name      string
		head      func(context.Context, sources.Call) (*sources.Result, error)
		calls     int
		servedBy  string
		minWait   time.Duration
		outcomes0 string
	}{
		{name: "429 with Retry-After: 1 retried on the offer", head: failTimes(1, limited), calls: 2, servedBy: headID, minWait: time.Second},
		{name: "two 503s retried", head: failTimes(2, busy), calls: 3, servedBy: headID},
		{name: "a reset retried", head: failTimes(1, &sources.Error{Outcome: sources.OutcomeNetwork, Retryable: true}), calls: 2, servedBy: headID},
		{name: "three 503s fail over", head: failTimes(3, busy), calls: 3, servedBy: secondID},
		{name: "Retry-After beyond 5 s fails over at once", head: failTimes(1, &sources.Error{Outcome: sources.OutcomeRateLimited, Status: 429, Retryable: true, RetryAfter: 10 * time.Second}),
			calls: 1, servedBy: secondID},
		{name: "a failure after paid work started is not retried", head: failTimes(1, &sources.Error{Outcome: sources.OutcomeUpstream5xx, Status: 502, Retryable: true, Handles: []string{"run:r/dataset:d"}}),
			calls: 1, servedBy: secondID},
		{name: "a 404 is not retried", head: failTimes(1, &sources.Error{Outcome: sources.OutcomeUpstream4xx, Status: 404, Retryable: true}), calls: 1, servedBy: secondID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &fake{do: tc.head}
			r := setup(t, Config{}, a, &fake{})
			start := time.Now()
			res, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}})
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Calls()) != tc.calls || res.Offer.ID != tc.servedBy {
				t.Errorf("%d calls to the head offer, served by %s; want %d, %s", len(a.Calls()), res.Offer.ID, tc.calls, tc.servedBy)
			}
			if d := time.Since(start); d < tc.minWait {
				t.Errorf("answered after %v, want the Retry-After of %v honoured", d, tc.minWait)
			}
		})
	}
}

// TestRetryInsideDeadline: no retry waits past the attempt deadline.
func TestRetryInsideDeadline(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	a := &fake{do: failTimes(5, &sources.Error{Outcome: sources.OutcomeRateLimited, Status: 429, Retryable: true, RetryAfter: 2 * time.Second})}
	r := setup(t, Config{AttemptTimeout: time.Second}, a, &fake{})
	start := time.Now()
	res, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}})
	if err != nil || res.Offer.ID != secondID || len(a.Calls()) != 1 || time.Since(start) > 900*time.Millisecond {
		t.Fatalf("got %v %v after %d calls, %v; want a failover without waiting past the deadline", res, err, len(a.Calls()), time.Since(start))
	}
}

// TestDeadPagesAreAnAnswer: an attempt whose rows all say dead_page is
// served without records (nothing to charge) and counts as a success for
// the breaker.
func TestDeadPagesAreAnAnswer(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	dead := func(context.Context, sources.Call) (*sources.Result, error) {
		item := rawf(`{"error": "gone", "error_code": "dead_page", "input": {"url": %q}}`, in1)
		return &sources.Result{Status: 200, ErrorItems: 1, DeadItems: 1, Items: []jsonRaw{item}}, nil
	}
	a := &fake{do: dead}
	r := setup(t, Config{BreakerFailures: 2}, a, &fake{})
	for range 3 {
		res, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Offer.ID != headID || len(res.Records) != 0 || res.Attempts[0].Outcome != OutcomeOK {
			t.Fatalf("served by %s with %d records, attempts %+v; want the head offer, no record", res.Offer.ID, len(res.Records), res.Attempts)
		}
	}
	if r.Breakers().Open(headID) {
		t.Error("dead pages opened the breaker")
	}
}

// TestSilenceDuringDocumentedWait: silence within a wait the client
// announces (Call.Waiting) is not a stall; the same silence unannounced
// is a soft timeout.
func TestSilenceDuringDocumentedWait(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	for _, announce := range []bool{true, false} {
		a := &fake{do: func(ctx context.Context, c sources.Call) (*sources.Result, error) {
			if announce {
				c.Waiting(time.Second)
			}
			select {
			case <-time.After(400 * time.Millisecond):
			case <-ctx.Done():
				return nil, &sources.Error{Outcome: sources.OutcomeTimeout, Retryable: true}
			}
			return echo(1)(ctx, c)
		}}
		r := setup(t, Config{SoftTimeout: 150 * time.Millisecond}, a, &fake{})
		res, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}})
		if err != nil {
			t.Fatal(err)
		}
		served := res.Offer.ID == headID
		if served != announce {
			t.Errorf("announced wait %v: served by %s, attempts %+v", announce, res.Offer.ID, res.Attempts)
		}
	}
}

// TestHandleRecordedWhenKnown: the upstream handle a client reports is in
// the attempt even when the call then fails without naming it.
func TestHandleRecordedWhenKnown(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	a := &fake{do: func(ctx context.Context, c sources.Call) (*sources.Result, error) {
		c.OnHandle(sources.Handle{Protocol: sources.ProtocolActorRun, RunID: "r1", DatasetID: "d1"})
		return nil, &sources.Error{Outcome: sources.OutcomeRunFailed, Retryable: true}
	}}
	r := setup(t, Config{}, a, &fake{})
	var told []string
	res, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1},
		OnHandle: func(o *registry.Offer, s Started) { told = append(told, o.ID+" "+s.Handle) }})
	if err != nil {
		t.Fatal(err)
	}
	if h := res.Attempts[0].Handles; !slices.Equal(h, []string{"run:r1/dataset:d1"}) || res.Attempts[0].Outcome != sources.OutcomeRunFailed {
		t.Errorf("attempt %+v, want the run's handle recorded", res.Attempts[0])
	}
	if !slices.Equal(told, []string{headID + " run:r1/dataset:d1"}) {
		t.Errorf("Request.OnHandle told %v, want the head offer's run as soon as it started", told)
	}
}
