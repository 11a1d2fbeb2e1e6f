package sim

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"socialrouter/caddymodule/sources"
)

func TestStatusFaults(t *testing.T) {
	tests := []struct {
		name      string
		protocol  string
		target    string
		fault     Fault
		outcome   string
		retryable bool
		retryIn   time.Duration
	}{
		{"actor 503", sources.ProtocolActorRun, actorTarget, Fault{Status: 503}, sources.OutcomeUpstream5xx, true, 0},
		{"actor 429 retry-after", sources.ProtocolActorRun, actorTarget, Fault{Status: 429, RetryAfter: 7}, sources.OutcomeRateLimited, true, 7 * time.Second},
		{"actor 400 invalid input", sources.ProtocolActorRun, actorTarget, Fault{Status: 400}, sources.OutcomeInvalidInput, false, 0},
		{"actor 400 run-failed", sources.ProtocolActorRun, actorTarget, Fault{Status: 400, ErrorType: "run-failed"}, sources.OutcomeUpstream4xx, true, 0},
		{"actor 402", sources.ProtocolActorRun, actorTarget, Fault{Status: 402}, sources.OutcomePayment, true, 0},
		{"actor 408", sources.ProtocolActorRun, actorTarget, Fault{Status: 408}, sources.OutcomeTimeout, true, 0},
		{"actor malformed", sources.ProtocolActorRun, actorTarget, Fault{Malformed: true}, sources.OutcomeMalformed, true, 0},
		{"scrape 502", sources.ProtocolDatasetScrape, datasetTarget, Fault{Status: 502}, sources.OutcomeUpstream5xx, true, 0},
		{"scrape 429", sources.ProtocolDatasetScrape, datasetTarget, Fault{Status: 429, RetryAfter: 3}, sources.OutcomeRateLimited, true, 3 * time.Second},
		{"scrape 400 validation", sources.ProtocolDatasetScrape, datasetTarget, Fault{Status: 400}, sources.OutcomeInvalidInput, false, 0},
		{"scrape 401", sources.ProtocolDatasetScrape, datasetTarget, Fault{Status: 401}, sources.OutcomeAuth, true, 0},
		{"scrape malformed", sources.ProtocolDatasetScrape, datasetTarget, Fault{Malformed: true}, sources.OutcomeMalformed, true, 0},
		{"scrape async malformed", sources.ProtocolDatasetScrape, datasetTarget, Fault{Async: true, Polls: 1, Malformed: true}, sources.OutcomeMalformed, true, 0},
		{"scrape snapshot failed", sources.ProtocolDatasetScrape, datasetTarget, Fault{Async: true, SnapshotFailed: true}, sources.OutcomeSnapshot, true, 0},
		{"wildcard", sources.ProtocolActorRun, actorTarget, Fault{Status: 500}, sources.OutcomeUpstream5xx, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, srv := start(t, Options{})
			tc.fault.Target = tc.target
			if tc.name == "wildcard" {
				tc.fault.Target = AnyTarget
			}
			if err := s.SetFault(tc.fault); err != nil {
				t.Fatal(err)
			}
			body := any(map[string]any{"q": 1})
			if tc.protocol == sources.ProtocolDatasetScrape {
				body = scrapeBody(1)
			}
			_, err := client(t, tc.protocol, srv.URL, "").Do(context.Background(), sources.Call{Target: tc.target, Body: body})
			var e *sources.Error
			if !errors.As(err, &e) {
				t.Fatalf("want *sources.Error, got %v", err)
			}
			if e.Outcome != tc.outcome || e.Retryable != tc.retryable || e.RetryAfter != tc.retryIn {
				t.Errorf("got %s retryable=%v retryAfter=%v, want %s %v %v (%v)", e.Outcome, e.Retryable, e.RetryAfter, tc.outcome, tc.retryable, tc.retryIn, e)
			}
		})
	}
}

func TestFaultTimes(t *testing.T) {
	s, srv := start(t, Options{})
	_ = s.SetFault(Fault{Target: actorTarget, Status: 503, Times: 2})
	url := srv.URL + "/v2/acts/" + actorTarget + "/run-sync-get-dataset-items"
	var got []int
	for range 3 {
		st, _ := post(t, url, `{}`)
		got = append(got, st)
	}
	if fmt.Sprint(got) != "[503 503 201]" {
		t.Errorf("statuses %v, want the fault on the next 2 calls only", got)
	}
	if len(s.Faults()) != 0 {
		t.Errorf("a used-up fault must be removed: %v", s.Faults())
	}
}

// TestFaultInputs: a fault limited to some inputs fails only the calls
// naming one of them (one batch of a call); the others are answered and
// use none of its times.
func TestFaultInputs(t *testing.T) {
	s, srv := start(t, Options{})
	_ = s.SetFault(Fault{Target: actorTarget, Status: 503, Times: 2, Inputs: []string{"/in/bob"}})
	url := srv.URL + "/v2/acts/" + actorTarget + "/run-sync-get-dataset-items"
	var got []int
	for _, body := range []string{
		`{"urls":["https://x.com/in/alice"]}`, `{"urls":["https://x.com/in/bob"]}`,
		`{"urls":["https://x.com/in/carol"]}`, `{"urls":["https://x.com/in/bob","https://x.com/in/dan"]}`,
		`{"urls":["https://x.com/in/bob"]}`,
	} {
		st, _ := post(t, url, body)
		got = append(got, st)
	}
	if fmt.Sprint(got) != "[201 503 201 503 201]" {
		t.Errorf("statuses %v, want the fault on the 2 calls naming bob only", got)
	}
}

func TestStallTripsSoftTimeout(t *testing.T) {
	for _, p := range []struct{ protocol, target string }{
		{sources.ProtocolActorRun, actorTarget}, {sources.ProtocolDatasetScrape, datasetTarget},
	} {
		t.Run(p.protocol, func(t *testing.T) {
			s, srv := start(t, Options{})
			_ = s.SetFault(Fault{Target: p.target, StallMS: 40000})
			var activity atomic.Int32
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
			defer cancel()
			body := any(map[string]any{})
			if p.protocol == sources.ProtocolDatasetScrape {
				body = scrapeBody(1)
			}
			t0 := time.Now()
			_, err := client(t, p.protocol, srv.URL, "").Do(ctx, sources.Call{Target: p.target, Body: body, Activity: func() { activity.Add(1) }})
			var e *sources.Error
			if !errors.As(err, &e) || e.Outcome != sources.OutcomeTimeout {
				t.Fatalf("got %v, want timeout", err)
			}
			if activity.Load() != 1 {
				t.Errorf("activity %d, want exactly 1 (the headers, then silence)", activity.Load())
			}
			if time.Since(t0) > 2*time.Second {
				t.Error("the stall did not end with the client")
			}
		})
	}
}
