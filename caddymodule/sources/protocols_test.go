package sources

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"socialrouter/cmd/upstream-sim/sim"
	"socialrouter/internal/jsonscan"
)

// The protocol tests run against the upstream simulator, which answers as
// the upstreams document (its contract fixtures check that), in scaled time.
const (
	actorTarget   = "dev_fusion~linkedin-profile-scraper"
	postsTarget   = "apimaestro~linkedin-profile-posts"
	companyTarget = "gd_l1vikfnt1wgvvqz95w"
)

func startSim(t *testing.T, scale float64) (*sim.Sim, string) {
	t.Helper()
	s := sim.New(sim.Options{TimeScale: scale})
	srv := httptest.NewServer(s)
	t.Cleanup(func() { s.ClearLedger(); srv.Close() })
	return s, srv.URL
}

// recorder collects what a call reported: handles, documented waits.
type recorder struct {
	mu      sync.Mutex
	handles []Handle
	waits   []time.Duration
}

func (r *recorder) call(c Call) Call {
	c.OnHandle = func(h Handle) { r.mu.Lock(); r.handles = append(r.handles, h); r.mu.Unlock() }
	c.Waiting = func(d time.Duration) { r.mu.Lock(); r.waits = append(r.waits, d); r.mu.Unlock() }
	return c
}

func onlyEntry(t *testing.T, s *sim.Sim) sim.LedgerEntry {
	t.Helper()
	l := s.Ledger()
	if len(l) != 1 {
		t.Fatalf("ledger has %d jobs, want 1: %+v", len(l), l)
	}
	return l[0]
}

// TestActorRunLifecycle: a run is started with its caps, waited for with
// waitForFinish polls (each a documented wait), and its dataset read;
// the handle is reported before the items.
func TestActorRunLifecycle(t *testing.T) {
	tests := []struct {
		name      string
		fault     sim.Fault
		limit     int
		params    map[string]string
		wantItems int
		wantQuery map[string]string
	}{
		{name: "a 90 s run completes", fault: sim.Fault{DurationS: 90}, limit: 5, wantItems: 2,
			wantQuery: map[string]string{"maxItems": "5", "timeout": "120"}},
		{name: "an actor that ignores maxItems is read up to it", fault: sim.Fault{Items: 9, IgnoreMaxItems: true}, limit: 3, wantItems: 3},
		{name: "pages of a large dataset", fault: sim.Fault{Items: 2500}, wantItems: 2500},
		{name: "charge cap from the offer's per-item charge", params: map[string]string{ChargePerItemParam: "0.002"}, limit: 10, wantItems: 2,
			wantQuery: map[string]string{"maxTotalChargeUsd": "0.02", "maxItems": "10"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, url := startSim(t, 0.001)
			tc.fault.Target = postsTarget
			_ = s.SetFault(tc.fault)
			c, _ := NewActorRun(Config{BaseURL: url})
			var rec recorder
			res, err := c.Do(context.Background(), rec.call(Call{Target: postsTarget, Body: map[string]any{"username": "x"},
				Limit: tc.limit, Params: tc.params, Timeout: 120 * time.Second}))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Items) != tc.wantItems {
				t.Errorf("%d items, want %d", len(res.Items), tc.wantItems)
			}
			checkMembers(t, res)
			e := onlyEntry(t, s)
			if len(rec.handles) != 1 || rec.handles[0].RunID != e.ID || rec.handles[0].DatasetID != e.DatasetID ||
				!slices.Contains(res.Handles, rec.handles[0].String()) {
				t.Errorf("handles %v / %v, want the run %s", rec.handles, res.Handles, e.ID)
			}
			for k, v := range tc.wantQuery {
				if e.Params[k] != v {
					t.Errorf("run started with %s=%q, want %q (%v)", k, e.Params[k], v, e.Params)
				}
			}
			if _, ok := e.Params[ChargePerItemParam]; ok {
				t.Errorf("the per-item charge went upstream: %v", e.Params)
			}
			if len(rec.waits) == 0 || rec.waits[0] != MaxWaitForFinish {
				t.Errorf("waits %v, want waitForFinish polls of %v announced", rec.waits, MaxWaitForFinish)
			}
			if e.Running || e.Status != "succeeded" {
				t.Errorf("ledger %+v, want a finished run", e)
			}
		})
	}
}

// TestActorRunAbortedWhenTheCallStops: a caller that stops waiting (its
// context ends) leaves no run running: the abort is sent before Do returns.
func TestActorRunAbortedWhenTheCallStops(t *testing.T) {
	s, url := startSim(t, 0.01)
	_ = s.SetFault(sim.Fault{Target: actorTarget, KeepRunning: true})
	c, _ := NewActorRun(Config{BaseURL: url})
	ctx, cancel := context.WithCancel(context.Background())
	var rec recorder
	call := rec.call(Call{Target: actorTarget, Body: map[string]any{}})
	call.OnHandle = func(Handle) { time.AfterFunc(30*time.Millisecond, cancel) }
	_, err := c.Do(ctx, call)
	var e *Error
	if !errors.As(err, &e) || e.Outcome != OutcomeTimeout || len(e.Handles) != 1 {
		t.Fatalf("got %v, want a timeout carrying the run handle", err)
	}
	if en := onlyEntry(t, s); en.Running || !en.Aborted {
		t.Errorf("ledger %+v, want the run aborted", en)
	}
}

// TestActorRunFailedUpstream: a run that ends FAILED is run_failed,
// retryable, and not aborted again.
func TestActorRunFailedUpstream(t *testing.T) {
	s, url := startSim(t, 0.001)
	_ = s.SetFault(sim.Fault{Target: actorTarget, RunStatus: "FAILED", DurationS: 5})
	c, _ := NewActorRun(Config{BaseURL: url})
	_, err := c.Do(context.Background(), Call{Target: actorTarget, Body: map[string]any{}})
	var e *Error
	if !errors.As(err, &e) || e.Outcome != OutcomeRunFailed || !e.Retryable {
		t.Fatalf("got %v, want retryable run_failed", err)
	}
	if en := onlyEntry(t, s); en.Status != "failed" {
		t.Errorf("ledger %+v", en)
	}
}

// TestActorRunPollBlipsTolerated: a 503 on a run poll is retried: the run
// is paid for.
func TestActorRunPollBlipsTolerated(t *testing.T) {
	s, url := startSim(t, 0.001)
	_ = s.SetFault(sim.Fault{Target: actorTarget, PollStatus: 503, Times: 2})
	c, _ := NewActorRun(Config{BaseURL: url})
	if _, err := c.Do(context.Background(), Call{Target: actorTarget, Body: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
}

// TestDatasetScrapeEndpoints: URL inputs up to 20 go to /scrape (rows, or
// after its minute a 202 and the snapshot); discovery and larger batches
// to /trigger, with the caps; a not-ready download in either form is
// "still building".
func TestDatasetScrapeEndpoints(t *testing.T) {
	urls := func(n int) map[string]any {
		in := make([]any, n)
		for i := range in {
			in[i] = map[string]any{"url": "https://www.linkedin.com/company/c" + strings.Repeat("x", i)}
		}
		return map[string]any{"input": in}
	}
	tests := []struct {
		name      string
		fault     sim.Fault
		inputs    int
		params    map[string]string
		limit     int
		perInput  int
		wantPath  string
		wantItems int
		wantQuery map[string]string
		handle    bool
	}{
		{name: "scrape answers rows", inputs: 3, wantPath: "scrape", wantItems: 3},
		{name: "a 70 s scrape goes through the snapshot", fault: sim.Fault{DurationS: 70}, inputs: 2, wantPath: "scrape", wantItems: 2, handle: true},
		{name: "not ready as 200 then building after ready", fault: sim.Fault{DurationS: 70, NotReady: "200", BuildingDownloads: 2}, inputs: 2, wantItems: 2, handle: true},
		{name: "more than 20 inputs trigger", inputs: 21, wantItems: 21, handle: true, limit: 30,
			wantQuery: map[string]string{"limit_multiple_results": "30"}},
		{name: "discovery triggers with both caps", params: map[string]string{"type": "discover_new", "discover_by": "profile_url"},
			inputs: 3, limit: 10, perInput: 4, wantItems: 10, handle: true,
			wantQuery: map[string]string{"limit_per_input": "4", "limit_multiple_results": "10", "type": "discover_new"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, url := startSim(t, 0.001)
			tc.fault.Target = companyTarget
			_ = s.SetFault(tc.fault)
			c, _ := NewDatasetScrape(Config{BaseURL: url, PollInterval: 5 * time.Millisecond})
			var rec recorder
			res, err := c.Do(context.Background(), rec.call(Call{Target: companyTarget, Body: urls(tc.inputs),
				Params: tc.params, Limit: tc.limit, PerInput: tc.perInput}))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Items) != tc.wantItems {
				t.Errorf("%d items, want %d", len(res.Items), tc.wantItems)
			}
			e := onlyEntry(t, s)
			if tc.handle != (len(rec.handles) == 1) || tc.handle && rec.handles[0].SnapshotID != e.ID {
				t.Errorf("handles %v, want the snapshot %s reported: %v", rec.handles, e.ID, tc.handle)
			}
			for k, v := range tc.wantQuery {
				if e.Params[k] != v {
					t.Errorf("%s=%q, want %q (%v)", k, e.Params[k], v, e.Params)
				}
			}
			if e.Running {
				t.Errorf("ledger %+v, want the snapshot done", e)
			}
			calls := s.Calls()
			if tc.wantPath == "scrape" && (len(calls) != 1 || calls[0].Query["dataset_id"] != companyTarget || calls[0].Query["type"] != "") {
				t.Errorf("calls %+v", calls)
			}
		})
	}
}

// TestDatasetScrapeCancelledWhenTheCallStops: a snapshot the call stops
// waiting for is cancelled before Do returns.
func TestDatasetScrapeCancelledWhenTheCallStops(t *testing.T) {
	s, url := startSim(t, 0.01)
	_ = s.SetFault(sim.Fault{Target: companyTarget, KeepRunning: true})
	c, _ := NewDatasetScrape(Config{BaseURL: url, PollInterval: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	call := Call{Target: companyTarget, Params: map[string]string{"type": "discover_new"}, Body: map[string]any{"input": []any{map[string]any{"url": "u"}}},
		OnHandle: func(Handle) { time.AfterFunc(30*time.Millisecond, cancel) }}
	_, err := c.Do(ctx, call)
	var e *Error
	if !errors.As(err, &e) || e.Outcome != OutcomeTimeout || len(e.Handles) != 1 || !strings.HasPrefix(e.Handles[0], "snapshot:s_") {
		t.Fatalf("got %v, want a timeout carrying the snapshot handle", err)
	}
	if en := onlyEntry(t, s); en.Running || !en.Aborted {
		t.Errorf("ledger %+v, want the snapshot cancelled", en)
	}
}

// TestDatasetScrapeValidationErrorsFinal: the 400 {"validation_errors"} is
// invalid_input, not retryable, its messages kept.
func TestDatasetScrapeValidationErrorsFinal(t *testing.T) {
	s, url := startSim(t, 0.001)
	_ = s.SetFault(sim.Fault{Target: companyTarget, ValidationErrors: []string{"url: not a company page"}})
	c, _ := NewDatasetScrape(Config{BaseURL: url})
	_, err := c.Do(context.Background(), Call{Target: companyTarget, Body: map[string]any{"input": []any{map[string]any{"url": "u"}}}})
	var e *Error
	if !errors.As(err, &e) || e.Outcome != OutcomeInvalidInput || e.Retryable || !strings.Contains(e.Message, "not a company page") {
		t.Fatalf("got %#v, want a final invalid_input with the message", err)
	}
	if len(s.Ledger()) != 0 {
		t.Errorf("a refused request started work: %+v", s.Ledger())
	}
}

// TestDeadPagesCounted: dead_page rows (error or warning) are counted apart.
func TestDeadPagesCounted(t *testing.T) {
	_, url := startSim(t, 0.001)
	c, _ := NewDatasetScrape(Config{BaseURL: url})
	res, err := c.Do(context.Background(), Call{Target: companyTarget, Body: map[string]any{"input": []any{
		map[string]any{"url": "https://www.linkedin.com/company/does-not-exist"}, map[string]any{"url": "https://www.linkedin.com/company/acme"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ErrorItems != 1 || res.DeadItems != 1 || len(res.Items) != 2 {
		t.Errorf("%d items, %d errors, %d dead; want 2, 1, 1", len(res.Items), res.ErrorItems, res.DeadItems)
	}
	_, _, dead, _, _ := splitItems([]byte(`[{"error_code":"dead_page"},{"warning_code":"dead_page","warning":"w"},{"error_code":"blocked"},{"a":1}]`))
	if dead != 2 {
		t.Errorf("%d dead rows, want 2", dead)
	}
}

// TestHandleRoundTrip: the recorded form of a handle reads back.
func TestHandleRoundTrip(t *testing.T) {
	for _, h := range []Handle{{Protocol: ProtocolActorRun, RunID: "r1", DatasetID: "d1"}, {Protocol: ProtocolDatasetScrape, SnapshotID: "s_1"}} {
		got, err := ParseHandle(h.String())
		if err != nil || got != h {
			t.Errorf("ParseHandle(%q) = %+v, %v", h.String(), got, err)
		}
	}
	for _, bad := range []string{"", "run:x", "snapshot:", "s_1"} {
		if _, err := ParseHandle(bad); err == nil {
			t.Errorf("ParseHandle(%q) accepted", bad)
		}
	}
}

// TestActorRunTimedOutEmpty: a run that times out upstream with nothing
// collected is a timeout, not an empty success.
func TestActorRunTimedOutEmpty(t *testing.T) {
	s, url := startSim(t, 0.001)
	_ = s.SetFault(sim.Fault{Target: actorTarget, DurationS: 3000})
	c, _ := NewActorRun(Config{BaseURL: url})
	_, err := c.Do(context.Background(), Call{Target: actorTarget, Body: map[string]any{}, Timeout: time.Second})
	var e *Error
	if !errors.As(err, &e) || e.Outcome != OutcomeTimeout || !e.Retryable {
		t.Fatalf("got %v, want a retryable timeout", err)
	}
	if en := onlyEntry(t, s); en.Status != "timed_out" {
		t.Errorf("ledger %+v", en)
	}
}

// TestNotReadyShape: only an object with a string status is a not-ready
// download; an array of items (even one whose items carry a status) is
// not, and is told apart by its first byte, before any validation.
func TestNotReadyShape(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"status":"building","message":"Snapshot is not ready yet, try again in 30s"}`, true},
		{" \n\t{\"status\": \"running\"}", true},
		{`{"status": 3}`, false},
		{`[{"status":"building","url":"https://example.com"}]`, false},
		{`{"status":"building"`, false},
		{``, false},
	} {
		if got := notReady([]byte(tc.body)); got != tc.want {
			t.Errorf("notReady(%q) = %v, want %v", tc.body, got, tc.want)
		}
		if got, want := isObject([]byte(tc.body)), strings.HasPrefix(strings.TrimSpace(tc.body), "{"); got != want {
			t.Errorf("isObject(%q) = %v, want %v", tc.body, got, want)
		}
	}
}

// checkMembers holds a result's members' index to its items, page after
// page: each item's members, where known, are its own keys and values,
// the last ending at the item's closing brace.
func checkMembers(t *testing.T, res *Result) {
	t.Helper()
	if res.Members == nil {
		t.Fatal("a checked body without its members' index")
	}
	if len(res.Members) != len(res.Items) {
		t.Fatalf("%d indexes for %d items", len(res.Members), len(res.Items))
	}
	for k, ms := range res.Members {
		item := res.Items[k]
		for _, m := range ms {
			key, val := item[m.KeyStart:m.KeyEnd], string(item[m.ValueStart:m.ValueEnd])
			if got, ok := jsonscan.Lookup(jsonscan.Bytes(item), string(key)); !ok || got != val {
				t.Fatalf("item %d: member %q = %.40s, the item has %.40s", k, key, val, got)
			}
		}
		if n := len(ms); n > 0 && jsonscan.SkipSpace(string(item), int(ms[n-1].ValueEnd)) != len(item)-1 {
			t.Fatalf("item %d: its last member ends at %d of %d", k, ms[n-1].ValueEnd, len(item))
		}
	}
}
