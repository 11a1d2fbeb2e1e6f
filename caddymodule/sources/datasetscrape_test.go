package sources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// fakeScrape is a scripted dataset_scrape upstream: the scrape answers echo
// one record per input (an error record for inputs whose url contains
// "dead"), synchronously or through a snapshot.
type fakeScrape struct {
	mu       sync.Mutex
	scrapes  []seen
	async    bool
	progress []string // statuses answered by successive progress polls
	snapshot []int    // statuses answered by successive snapshot downloads
	polls    int
	fail     map[int]int // scrape call index → status to answer
}

func (f *fakeScrape) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case r.URL.Path == "/datasets/v3/scrape":
		s := record(r)
		n := len(f.scrapes)
		f.scrapes = append(f.scrapes, s)
		if st, ok := f.fail[n]; ok {
			w.WriteHeader(st)
			_, _ = io.WriteString(w, `{"error":"scripted failure"}`)
			return
		}
		if f.async {
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"snapshot_id":"s_%d","message":"Your request is still in progress"}`, n)
			return
		}
		_, _ = io.WriteString(w, records(s.body))
	case strings.HasPrefix(r.URL.Path, "/datasets/v3/progress/"):
		st := "ready"
		if f.polls < len(f.progress) {
			st = f.progress[f.polls]
		}
		f.polls++
		if st == "500" {
			w.WriteHeader(500)
			return
		}
		fmt.Fprintf(w, `{"status":%q,"snapshot_id":%q}`, st, strings.TrimPrefix(r.URL.Path, "/datasets/v3/progress/"))
	case strings.HasPrefix(r.URL.Path, "/datasets/v3/snapshot/"):
		st := 200
		if len(f.snapshot) > 0 {
			st, f.snapshot = f.snapshot[0], f.snapshot[1:]
		}
		if r.URL.Query().Get("format") != "json" {
			st = 400
		}
		switch st {
		case 200:
			var n int
			_, _ = fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/datasets/v3/snapshot/"), "s_%d", &n)
			_, _ = io.WriteString(w, records(f.scrapes[n].body))
		case 202:
			w.WriteHeader(202)
			_, _ = io.WriteString(w, `{"status":"building","message":"Snapshot is not ready yet, try again in 10s"}`)
		default:
			w.WriteHeader(st)
			_, _ = io.WriteString(w, `{"error":"Snapshot expired"}`)
		}
	default:
		http.NotFound(w, r)
	}
}

// records answers one record per input, echoing it.
func records(body string) string {
	var out []string
	gjson.Get(body, "input").ForEach(func(_, in gjson.Result) bool {
		if strings.Contains(in.Get("url").String(), "dead") {
			out = append(out, `{"timestamp":"t","input":`+in.Raw+`,"error":"page does not exist","error_code":"dead_page"}`)
		} else {
			out = append(out, `{"name":"n","input":`+in.Raw+`}`)
		}
		return true
	})
	return "[" + strings.Join(out, ",") + "]"
}

func inputs(n int) map[string]any {
	in := make([]any, n)
	for i := range in {
		in[i] = map[string]any{"url": fmt.Sprintf("https://x/in/p%d", i)}
	}
	return map[string]any{"input": in, "custom_output_fields": "name"}
}

func TestDatasetScrapeRequest(t *testing.T) {
	f := &fakeScrape{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c, err := NewDatasetScrape(Config{BaseURL: srv.URL, Token: "tok_b"})
	if err != nil {
		t.Fatal(err)
	}
	body := inputs(2)
	body["input"] = append(body["input"].([]any), map[string]any{"url": "https://x/in/dead"})
	res, err := c.Do(context.Background(), Call{Target: "gd_l1viktl72bvl7bjuj0", Body: body,
		Params: map[string]string{"type": "discover_new", "discover_by": "name", "format": "csv"}})
	if err != nil {
		t.Fatal(err)
	}
	s := f.scrapes[0]
	want := map[string]string{"dataset_id": "gd_l1viktl72bvl7bjuj0", "format": "json", "include_errors": "true", "type": "discover_new", "discover_by": "name"}
	for k, v := range want {
		if s.query[k] != v {
			t.Errorf("query %s=%q, want %q", k, s.query[k], v)
		}
	}
	if s.method != http.MethodPost || s.auth != "Bearer tok_b" {
		t.Errorf("request %s auth %q", s.method, s.auth)
	}
	if gjson.Get(s.body, "custom_output_fields").String() != "name" || len(gjson.Get(s.body, "input").Array()) != 3 {
		t.Errorf("body %s: other keys must be kept", s.body)
	}
	if len(res.Items) != 3 || res.ErrorItems != 1 || res.Status != 200 || len(res.Handles) != 0 {
		t.Errorf("result %d items, %d errors, status %d, handles %v", len(res.Items), res.ErrorItems, res.Status, res.Handles)
	}
}

func TestDatasetScrapeBodies(t *testing.T) {
	tests := []struct {
		name    string
		body    any
		chunks  []int
		wantErr bool
	}{
		{"one", inputs(1), []int{1}, false},
		{"twenty", inputs(20), []int{20}, false},
		{"twenty-one", inputs(21), []int{20, 1}, false},
		{"forty-five", inputs(45), []int{20, 20, 5}, false},
		{"bare array", []any{map[string]any{"url": "u"}}, []int{1}, false},
		{"raw json", json.RawMessage(`{"input":[{"url":"u"},{"url":"v"}],"limit_per_input":3}`), []int{2}, false},
		{"no input", map[string]any{"urls": []string{"u"}}, nil, true},
		{"empty input", map[string]any{"input": []any{}}, nil, true},
		{"string", "u", nil, true},
		{"nil", nil, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := scrapeBodies(tc.body)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if len(got) != len(tc.chunks) {
				t.Fatalf("%d chunks, want %d", len(got), len(tc.chunks))
			}
			for i, b := range got {
				if n := len(gjson.GetBytes(b, "input").Array()); n != tc.chunks[i] {
					t.Errorf("chunk %d has %d inputs, want %d", i, n, tc.chunks[i])
				}
			}
		})
	}
}

func TestDatasetScrapeChunking(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			f := &fakeScrape{async: async}
			srv := httptest.NewServer(f)
			defer srv.Close()
			c, _ := NewDatasetScrape(Config{BaseURL: srv.URL, PollInterval: time.Millisecond})
			var activity atomic.Int32
			res, err := c.Do(context.Background(), Call{Target: "gd_x", Body: inputs(45), Activity: func() { activity.Add(1) }})
			if err != nil {
				t.Fatal(err)
			}
			if len(f.scrapes) != 3 {
				t.Fatalf("%d scrape calls, want 3", len(f.scrapes))
			}
			for _, s := range f.scrapes {
				if n := len(gjson.Get(s.body, "input").Array()); n > MaxScrapeInputs {
					t.Errorf("a scrape call carried %d inputs", n)
				}
				if gjson.Get(s.body, "custom_output_fields").String() != "name" {
					t.Errorf("chunk lost the other body keys: %s", s.body)
				}
			}
			if len(res.Items) != 45 {
				t.Fatalf("%d items, want 45", len(res.Items))
			}
			for i, it := range res.Items {
				if want := fmt.Sprintf("https://x/in/p%d", i); gjson.GetBytes(it, "input.url").String() != want {
					t.Fatalf("item %d is for %s, want %s: items must keep input order", i, gjson.GetBytes(it, "input.url"), want)
				}
			}
			if async && len(res.Handles) != 3 {
				t.Errorf("handles %v, want the 3 snapshot ids", res.Handles)
			}
			if activity.Load() == 0 {
				t.Error("activity never reported")
			}
		})
	}
}

func TestDatasetScrapeChunkFailure(t *testing.T) {
	f := &fakeScrape{async: true, fail: map[int]int{2: 503}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c, _ := NewDatasetScrape(Config{BaseURL: srv.URL, PollInterval: time.Millisecond})
	_, err := c.Do(context.Background(), Call{Target: "gd_x", Body: inputs(60)})
	var e *Error
	if !errors.As(err, &e) || e.Outcome != OutcomeUpstream5xx || e.Status != 503 {
		t.Fatalf("got %v, want the failed chunk's upstream_5xx", err)
	}
}

func TestDatasetScrapeSnapshot(t *testing.T) {
	tests := []struct {
		name      string
		progress  []string
		snapshot  []int
		outcome   string // "" = success
		minPolls  int
		wantItems int
	}{
		{name: "ready after running", progress: []string{"starting", "running", "ready"}, minPolls: 3, wantItems: 2},
		{name: "snapshot not ready yet", progress: []string{"ready"}, snapshot: []int{202, 202, 200}, minPolls: 1, wantItems: 2},
		{name: "transient progress error", progress: []string{"running", "500", "ready"}, minPolls: 3, wantItems: 2},
		{name: "too many progress errors", progress: []string{"500", "500", "500", "500"}, outcome: OutcomeUpstream5xx},
		{name: "progress failed", progress: []string{"running", "failed"}, outcome: OutcomeSnapshot},
		{name: "snapshot expired", progress: []string{"ready"}, snapshot: []int{400}, outcome: OutcomeSnapshot},
		{name: "snapshot unknown", progress: []string{"ready"}, snapshot: []int{404}, outcome: OutcomeSnapshot},
		{name: "snapshot 429 then ok", progress: []string{"ready"}, snapshot: []int{429, 200}, minPolls: 1, wantItems: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeScrape{async: true, progress: tc.progress, snapshot: tc.snapshot}
			srv := httptest.NewServer(f)
			defer srv.Close()
			c, _ := NewDatasetScrape(Config{BaseURL: srv.URL, PollInterval: time.Millisecond})
			var activity atomic.Int32
			res, err := c.Do(context.Background(), Call{Target: "gd_x", Body: inputs(2), Activity: func() { activity.Add(1) }})
			if tc.outcome != "" {
				var e *Error
				if !errors.As(err, &e) || e.Outcome != tc.outcome || !e.Retryable {
					t.Fatalf("got %v, want retryable %s", err, tc.outcome)
				}
				if len(e.Handles) != 1 || e.Handles[0] != "s_0" {
					t.Errorf("handles %v, want the snapshot id", e.Handles)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Items) != tc.wantItems || res.Status != 200 {
				t.Errorf("%d items, status %d", len(res.Items), res.Status)
			}
			if len(res.Handles) != 1 || res.Handles[0] != "s_0" {
				t.Errorf("handles %v, want the snapshot id", res.Handles)
			}
			if f.polls < tc.minPolls {
				t.Errorf("%d progress polls, want >= %d", f.polls, tc.minPolls)
			}
			if int(activity.Load()) < f.polls {
				t.Errorf("activity %d < polls %d: each poll answer must count", activity.Load(), f.polls)
			}
		})
	}
}

func TestDatasetScrapeSnapshotDeadline(t *testing.T) {
	f := &fakeScrape{async: true, progress: []string{"running", "running", "running", "running", "running", "running", "running", "running", "running", "running", "running", "running", "running", "running", "running", "running", "running"}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c, _ := NewDatasetScrape(Config{BaseURL: srv.URL, PollInterval: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 70*time.Millisecond)
	defer cancel()
	_, err := c.Do(ctx, Call{Target: "gd_x", Body: inputs(1)})
	var e *Error
	if !errors.As(err, &e) || e.Outcome != OutcomeTimeout || len(e.Handles) != 1 {
		t.Fatalf("got %#v, want a timeout carrying the snapshot id", err)
	}
}

func TestDatasetScrapeMissingSnapshotID(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(202)
		_, _ = io.WriteString(w, `{"message":"later"}`)
	}))
	defer srv.Close()
	c, _ := NewDatasetScrape(Config{BaseURL: srv.URL})
	_, err := c.Do(context.Background(), Call{Target: "gd_x", Body: inputs(1)})
	var e *Error
	if !errors.As(err, &e) || e.Outcome != OutcomeMalformed {
		t.Fatalf("got %v", err)
	}
}

func TestDatasetScrapeBadBodyIsFinal(t *testing.T) {
	c, _ := NewDatasetScrape(Config{BaseURL: "http://127.0.0.1:1"})
	_, err := c.Do(context.Background(), Call{Target: "gd_x", Body: map[string]any{"url": "u"}})
	var e *Error
	if !errors.As(err, &e) || e.Outcome != OutcomeInvalidInput || e.Retryable {
		t.Fatalf("got %v", err)
	}
}

// TestDatasetScrapeChunkPanic: a panic in a chunk's goroutine fails the
// call as internal_error instead of killing the process.
func TestDatasetScrapeChunkPanic(t *testing.T) {
	srv := httptest.NewServer(&fakeScrape{})
	defer srv.Close()
	c, _ := NewDatasetScrape(Config{BaseURL: srv.URL, PollInterval: time.Millisecond})
	_, err := c.Do(context.Background(), Call{Target: "gd_x", Body: inputs(45), Activity: func() { panic("activity bug") }})
	var e *Error
	if !errors.As(err, &e) || e.Outcome != OutcomeInternal || !e.Retryable {
		t.Fatalf("got %v, want a retryable internal_error", err)
	}
}
