package router

import (
	"context"
	"slices"
	"sync"
	"testing"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/sources"
)

// resumer is a fake sources.Resumer: Do as fake, Resume answers the
// recorded work with resume, and both Resume and Abort are recorded.
type resumer struct {
	*fake
	resume func(h sources.Handle) (*sources.Result, error)

	mu      sync.Mutex
	resumed []string
	aborted []string
}

func (r *resumer) Resume(_ context.Context, _ sources.Call, h sources.Handle) (*sources.Result, error) {
	r.mu.Lock()
	r.resumed = append(r.resumed, h.String())
	r.mu.Unlock()
	res, err := r.resume(h)
	if res != nil { // as the protocols do, the result names the work
		res.Handles = sources.MergeHandles([]string{h.String()}, res.Handles...)
	}
	return res, err
}

func (r *resumer) Abort(_ context.Context, h sources.Handle) error {
	r.mu.Lock()
	r.aborted = append(r.aborted, h.String())
	r.mu.Unlock()
	return nil
}

// TestResume: a resumed attempt waits for the upstream work recorded for
// its batches instead of starting it again, starts only the batches with
// none, and fails over as Run does when the resumed work failed.
func TestResume(t *testing.T) {
	const h0 = "run:r0/dataset:d0"
	served := func(sources.Handle) (*sources.Result, error) {
		// The work of batch 0 (in1, in2): two items each.
		return echo(2)(context.Background(), sources.Call{Target: "act1", Body: map[string]any{"urls": []any{in1, in2}}})
	}
	failed := func(sources.Handle) (*sources.Result, error) {
		return nil, &sources.Error{Outcome: sources.OutcomeRunFailed, Retryable: true, Handles: []string{h0}, Message: "run r0 ended ABORTED upstream"}
	}
	before := []runs.Attempt{{Offer: "source_x/gone", Outcome: "failed_over"}}
	for _, tc := range []struct {
		name    string
		inputs  []string
		started []Started
		resume  func(sources.Handle) (*sources.Result, error)
		doA     func(context.Context, sources.Call) (*sources.Result, error) // nil: echo
		// Calls started anew on each source, the work resumed, the
		// outcomes of the walk and the records served.
		startedA, startedB [][]string
		resumed            []string
		outcomes           []string
		records            int
	}{{
		name:   "recorded batch waited for, the other started",
		inputs: []string{in1, in2, in3}, resume: served,
		started:  []Started{{Offer: headID, Batch: 0, Inputs: []string{in1, in2}, Limit: 10, Handle: h0}},
		startedA: [][]string{{in3}}, resumed: []string{h0},
		outcomes: []string{"source_x/gone:failed_over", headID + ":ok"}, records: 5,
	}, {
		name:   "every batch recorded: nothing started",
		inputs: []string{in1, in2}, resume: served,
		started:  []Started{{Offer: headID, Batch: 0, Inputs: []string{in1, in2}, Limit: 10, Handle: h0}},
		resumed:  []string{h0},
		outcomes: []string{"source_x/gone:failed_over", headID + ":ok"}, records: 4,
	}, {
		name:   "resumed work failed: the walk fails over",
		inputs: []string{in1, in2}, resume: failed,
		started:  []Started{{Offer: headID, Batch: 0, Inputs: []string{in1, in2}, Limit: 10, Handle: h0}},
		startedB: [][]string{{in1, in2}}, resumed: []string{h0},
		outcomes: []string{"source_x/gone:failed_over", headID + ":" + sources.OutcomeRunFailed, secondID + ":ok"}, records: 2,
	}, {
		// The resumed attempt served its recorded batch; the other failed:
		// the batch served stays kept, only the failed batch's input
		// fails over (Chunks, walk.go), in the same walk.
		name:   "resumed batch kept, the failed batch's input fails over",
		inputs: []string{in1, in2, in3}, resume: served,
		doA:      failBatchOf(in3, &sources.Error{Outcome: sources.OutcomeUpstream4xx, Status: 404, Retryable: true}),
		started:  []Started{{Offer: headID, Batch: 0, Inputs: []string{in1, in2}, Limit: 10, Handle: h0}},
		startedA: [][]string{{in3}}, startedB: [][]string{{in3}}, resumed: []string{h0},
		outcomes: []string{"source_x/gone:failed_over", headID + ":" + OutcomePartial, secondID + ":ok"}, records: 5,
	}, {
		name:   "no work recorded: the attempt starts as a fresh one",
		inputs: []string{in1, in2, in3}, resume: served,
		startedA: [][]string{{in1, in2}, {in3}},
		outcomes: []string{"source_x/gone:failed_over", headID + ":ok"}, records: 3,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			svc := service(t, testRegistry(t), "pro_net/profile.info")
			a := &resumer{fake: &fake{do: tc.doA}, resume: tc.resume}
			b := &fake{}
			r := New(Config{}, map[string]sources.Client{"source_a": a, "source_b": b}, NewBreakers(), nil)
			var told []Started
			var mu sync.Mutex
			res, err := r.Resume(context.Background(), Request{Service: svc, Inputs: tc.inputs, Limit: 10,
				OnHandle: func(_ *registry.Offer, s Started) { mu.Lock(); told = append(told, s); mu.Unlock() }},
				Resumed{Offer: headID, Records: 10, Before: before, Started: tc.started})
			if err != nil {
				t.Fatalf("Resume: %v", err)
			}
			if got := callInputs(a.Calls()); !slices.EqualFunc(got, tc.startedA, slices.Equal) {
				t.Errorf("source_a started %v, want %v", got, tc.startedA)
			}
			if got := callInputs(b.Calls()); !slices.EqualFunc(got, tc.startedB, slices.Equal) {
				t.Errorf("source_b started %v, want %v", got, tc.startedB)
			}
			if !slices.Equal(a.resumed, tc.resumed) || len(a.aborted) != 0 {
				t.Errorf("resumed %v, aborted %v; want %v resumed, none aborted", a.resumed, a.aborted, tc.resumed)
			}
			if got := outcomes(res.Attempts); !slices.Equal(got, tc.outcomes) {
				t.Errorf("attempts %v, want %v", got, tc.outcomes)
			}
			if len(res.Records) != tc.records {
				t.Errorf("%d records, want %d: %s", len(res.Records), tc.records, res.Records)
			}
			if len(tc.started) > 0 && !slices.Contains(res.Attempts[1].Handles, h0) {
				t.Errorf("resumed attempt %+v does not name the work it waited for", res.Attempts[1])
			}
		})
	}
}

// TestResumeUnpayable: a resumed attempt the money no longer pays for
// aborts its recorded work (nobody would wait for it) and fails over.
func TestResumeUnpayable(t *testing.T) {
	const h0 = "run:r0/dataset:d0"
	svc := service(t, testRegistry(t), "pro_net/profile.info")
	a := &resumer{fake: &fake{}, resume: func(sources.Handle) (*sources.Result, error) { t.Error("unpaid work resumed"); return nil, nil }}
	b := &fake{}
	r := New(Config{}, map[string]sources.Client{"source_a": a, "source_b": b}, NewBreakers(), nil)
	res, err := r.Resume(context.Background(), Request{Service: svc, Inputs: []string{in1}, Limit: 10,
		Budget: &tableBudget{covers: map[string]int{headID: 0}}},
		Resumed{Offer: headID, Records: 10, Started: []Started{{Offer: headID, Inputs: []string{in1}, Limit: 10, Handle: h0}}})
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if !slices.Equal(a.aborted, []string{h0}) || len(a.Calls()) != 0 {
		t.Errorf("aborted %v, started %d calls; want the recorded work aborted, nothing started", a.aborted, len(a.Calls()))
	}
	if got := outcomes(res.Attempts); !slices.Equal(got, []string{headID + ":" + OutcomeUnpayable, secondID + ":ok"}) {
		t.Errorf("attempts %v", got)
	}
}

// callInputs returns the inputs of each call, sorted by first input.
func callInputs(calls []sources.Call) [][]string {
	var out [][]string
	for _, c := range calls {
		out = append(out, bodyInputs(c.Body))
	}
	slices.SortFunc(out, func(x, y []string) int { return slices.Compare(x, y) })
	return out
}
