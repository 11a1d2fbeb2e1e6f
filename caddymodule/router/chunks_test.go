package router

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/sources"
)

// failBatchOf answers like echo(1), except that every call whose batch
// holds input bad fails with err (each retry too).
func failBatchOf(bad string, err *sources.Error) func(context.Context, sources.Call) (*sources.Result, error) {
	return func(ctx context.Context, c sources.Call) (*sources.Result, error) {
		for _, in := range bodyInputs(c.Body) {
			if in == bad {
				return nil, err
			}
		}
		return echo(1)(ctx, c)
	}
}

// TestChunksFailOver: a 3-batch call (max_inputs 2, 5 inputs) whose second
// batch still fails with a 5xx after its retries keeps batches 1 and 3 and
// sends only batch 2's inputs to the next offer; the result carries the
// records of both offers in input order, each tagged with the offer that
// served it, and the Budget is told what was kept before the next hold.
// Pinned, or with no offer left that serves them, the kept records are
// served and the attempt names the inputs not served.
func TestChunksFailOver(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	in := urls(5)
	busy := &sources.Error{Outcome: sources.OutcomeUpstream5xx, Status: 503, Retryable: true, Message: "busy"}
	tests := []struct {
		name string
		pin  string
		b    func(context.Context, sources.Call) (*sources.Result, error)
		// srcs is the source tag of each record, in input order.
		srcs     []string
		servedBy string
		from     []int // nil: one offer served
		bInputs  []string
		outcomes []string
		asked    []string
	}{
		{name: "failed batch's inputs fail over", b: echo(1),
			srcs: []string{"a", "a", "b", "b", "a"}, servedBy: secondID, from: []int{0, 0, 1, 1, 0}, bInputs: in[2:4],
			outcomes: []string{headID + ":partial", secondID + ":ok"},
			asked:    []string{headID + ":10/1", "keep " + headID + ":3", secondID + ":7/1"}},
		{name: "next offer fails too: kept records served", b: fail(&sources.Error{Outcome: sources.OutcomeUpstream4xx, Status: 404, Retryable: true}),
			srcs: []string{"a", "a", "a"}, servedBy: headID, bInputs: in[2:4],
			outcomes: []string{headID + ":partial", secondID + ":upstream_4xx"},
			asked:    []string{headID + ":10/1", "keep " + headID + ":3", secondID + ":7/1"}},
		{name: "pinned: kept records served, no failover", pin: headID, b: echo(1),
			srcs: []string{"a", "a", "a"}, servedBy: headID,
			outcomes: []string{headID + ":partial"},
			asked:    []string{headID + ":10/1", "keep " + headID + ":3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := &fake{do: failBatchOf(in[2], busy)}, &fake{do: tc.b}
			r := setup(t, Config{}, a, b)
			bud := &tableBudget{}
			req := Request{Service: svc, Inputs: in, Limit: 10, Budget: bud}
			if tc.pin != "" {
				req.Pin = offer(t, svc, tc.pin)
			}
			res, err := r.Run(context.Background(), req)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			var srcs []string
			for _, rec := range res.Records {
				srcs = append(srcs, field(t, rec, "source"))
			}
			if !reflect.DeepEqual(srcs, tc.srcs) {
				t.Errorf("records from %v, want %v", srcs, tc.srcs)
			}
			if res.Offer.ID != tc.servedBy || !reflect.DeepEqual(res.From, tc.from) {
				t.Errorf("served by %s, from %v; want %s, %v", res.Offer.ID, res.From, tc.servedBy, tc.from)
			}
			// Batches 1 and 3 once, batch 2 three times (two retries):
			// no kept batch is run again anywhere.
			if n := len(a.Calls()); n != 5 {
				t.Errorf("%d calls to the head offer, want 5", n)
			}
			var bIn []string
			for _, c := range b.Calls() {
				bIn = append(bIn, bodyInputs(c.Body)...)
			}
			if len(b.Calls()) > 0 && !reflect.DeepEqual(bIn, tc.bInputs) || len(b.Calls()) == 0 && tc.bInputs != nil {
				t.Errorf("next offer ran %v, want %v", bIn, tc.bInputs)
			}
			if got := outcomes(res.Attempts); !reflect.DeepEqual(got, tc.outcomes) {
				t.Errorf("attempts %v, want %v", got, tc.outcomes)
			}
			if p := res.Attempts[0]; p.Status != 503 || p.Records != 3 || !strings.Contains(p.Message, in[2]+", "+in[3]) {
				t.Errorf("partial attempt %+v: want status 503, 3 records and the inputs not served", p)
			}
			if !reflect.DeepEqual(bud.asked, tc.asked) {
				t.Errorf("budget asked %v, want %v", bud.asked, tc.asked)
			}
		})
	}
}

// TestChunksFinalFailure: a batch whose failure is final (the upstream
// rejected the input) still ends the attempt at once, cancelling its
// siblings, and the call: no failover, nothing kept.
func TestChunksFinalFailure(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	in := urls(5)
	// A sibling either started and was cancelled, or was never started
	// (the dispatch saw the attempt end first); none may run to its end.
	var mu sync.Mutex
	completed := 0
	a := &fake{do: func(ctx context.Context, c sources.Call) (*sources.Result, error) {
		if bodyInputs(c.Body)[0] == in[2] {
			return nil, &sources.Error{Outcome: sources.OutcomeInvalidInput, Status: 400, Message: "validation_errors"}
		}
		select {
		case <-ctx.Done():
			return nil, &sources.Error{Outcome: sources.OutcomeTimeout, Retryable: true}
		case <-time.After(300 * time.Millisecond):
			mu.Lock()
			completed++
			mu.Unlock()
			return echo(1)(ctx, c)
		}
	}}
	b := &fake{}
	r := setup(t, Config{}, a, b)
	start := time.Now()
	_, err := r.Run(context.Background(), Request{Service: svc, Inputs: in})
	f := asFailure(t, err)
	if f.Kind != errkind.UpstreamRejectedInput || len(b.Calls()) != 0 {
		t.Errorf("failure %s, next offer called %d times", f.Kind, len(b.Calls()))
	}
	took := time.Since(start)
	time.Sleep(500 * time.Millisecond) // past a sibling's end, had it not been cancelled
	mu.Lock()
	defer mu.Unlock()
	if completed != 0 {
		t.Errorf("siblings not cancelled: %d ran to their end (the call took %v)", completed, took)
	}
}

// TestChunksCallerGone: a caller that goes away while the failed inputs
// run on the next offer gets nothing (and is charged nothing), even
// though earlier batches were kept.
func TestChunksCallerGone(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	in := urls(5)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := &fake{do: failBatchOf(in[2], &sources.Error{Outcome: sources.OutcomeUpstream4xx, Status: 404, Retryable: true})}
	b := &fake{do: func(ctx context.Context, c sources.Call) (*sources.Result, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	r := setup(t, Config{}, a, b)
	_, err := r.Run(ctx, Request{Service: svc, Inputs: in})
	if f := asFailure(t, err); f.Kind != errkind.ClientClosed || !errors.Is(err, context.Canceled) {
		t.Errorf("failure %s, want %s", f.Kind, errkind.ClientClosed)
	}
}
