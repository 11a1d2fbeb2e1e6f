package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/tidwall/gjson"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/sources"
)

const (
	actorTarget   = "dev_fusion~linkedin-profile-scraper" // 1 data item
	postsTarget   = "apimaestro~linkedin-profile-posts"   // 2 data items
	datasetTarget = "gd_m14sd0to1jz48ppm51"               // 1 data item + 1 error record
	companyTarget = "gd_l1vikfnt1wgvvqz95w"               // 2 data items
)

func start(t *testing.T, opts Options) (*Sim, *httptest.Server) {
	t.Helper()
	s := New(opts)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func client(t *testing.T, protocol, url, token string) sources.Client {
	t.Helper()
	c, err := sources.New(protocol, sources.Config{BaseURL: url, Token: token, PollInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func scrapeBody(n int) map[string]any {
	in := make([]any, n)
	for i := range in {
		in[i] = map[string]any{"url": fmt.Sprintf("https://www.example.com/in/p%d", i), "tag": i}
	}
	return map[string]any{"input": in}
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestEveryDefaultRouteAnswers(t *testing.T) {
	s, srv := start(t, Options{})
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	// Which routes exist is TestDeclaredRoutesCoverEveryOffer's business:
	// one per live offer's target, from the declarations.
	actor := client(t, sources.ProtocolActorRun, srv.URL, "")
	scrape := client(t, sources.ProtocolDatasetScrape, srv.URL, "")
	for target, path := range s.Routes() {
		t.Run(target, func(t *testing.T) {
			fx, err := s.fixture(path)
			if err != nil {
				t.Fatal(err)
			}
			var res *sources.Result
			if strings.HasPrefix(path, "source_a/") {
				res, err = actor.Do(context.Background(), sources.Call{Target: target, Body: map[string]any{"q": 1}})
			} else {
				res, err = scrape.Do(context.Background(), sources.Call{Target: target, Body: scrapeBody(3)})
			}
			if err != nil {
				t.Fatal(err)
			}
			want := len(fx.data)
			if strings.HasPrefix(path, "source_b/") {
				want = 3
			}
			if len(res.Items) != want || res.ErrorItems != 0 {
				t.Errorf("%d items (%d errors), want %d data items", len(res.Items), res.ErrorItems, want)
			}
		})
	}
}

func TestActorRunItems(t *testing.T) {
	tests := []struct {
		name     string
		global   int
		fault    *Fault
		maxItems string
		want     int
	}{
		{name: "fixture as is", want: 2},
		{name: "maxItems caps", maxItems: "1", want: 1},
		{name: "global items repeat", global: 5, want: 5},
		{name: "fault items win", global: 5, fault: &Fault{Target: postsTarget, Items: 7}, want: 7},
		{name: "maxItems caps repeats", global: 50, maxItems: "10", want: 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, srv := start(t, Options{Items: tc.global})
			if tc.fault != nil {
				_ = s.SetFault(*tc.fault)
			}
			url := srv.URL + "/v2/acts/" + postsTarget + "/run-sync-get-dataset-items?timeout=10"
			if tc.maxItems != "" {
				url += "&maxItems=" + tc.maxItems
			}
			status, body := post(t, url, `{"username":"x"}`)
			if status != http.StatusCreated {
				t.Fatalf("status %d: %s", status, body)
			}
			items := gjson.Parse(body).Array()
			if len(items) != tc.want {
				t.Fatalf("%d items, want %d", len(items), tc.want)
			}
			// Repeats cycle through the fixture in order.
			for i, it := range items {
				if it.Get("urn").String() != items[i%2].Get("urn").String() {
					t.Errorf("item %d is not fixture item %d", i, i%2)
				}
			}
		})
	}
}

func TestScrapeRecordsEchoInputs(t *testing.T) {
	tests := []struct {
		name  string
		fault Fault
		items int
		// kinds per record: d = data, e = error record
		kinds string
	}{
		{name: "data only", kinds: "dddd"},
		{name: "error records on odd inputs", fault: Fault{ErrorRecords: true}, kinds: "dede"},
		{name: "all errors", fault: Fault{AllErrors: true}, kinds: "eeee"},
		{name: "records per input", items: 2, kinds: "dddddddd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, srv := start(t, Options{Items: tc.items})
			tc.fault.Target = companyTarget
			_ = s.SetFault(tc.fault)
			b, _ := json.Marshal(scrapeBody(4))
			status, body := post(t, srv.URL+"/datasets/v3/scrape?dataset_id="+companyTarget+"&format=json&include_errors=true", string(b))
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			recs := gjson.Parse(body).Array()
			if len(recs) != len(tc.kinds) {
				t.Fatalf("%d records, want %d", len(recs), len(tc.kinds))
			}
			per := len(tc.kinds) / 4
			names := map[string]bool{}
			for i, r := range recs {
				in := i / per
				if got := r.Get("input.tag").Int(); got != int64(in) {
					t.Errorf("record %d echoes input %d, want %d", i, got, in)
				}
				isErr := r.Get("error_code").Exists()
				if isErr != (tc.kinds[i] == 'e') {
					t.Errorf("record %d error=%v, want kind %c: %s", i, isErr, tc.kinds[i], r.Raw)
				}
				if !isErr {
					names[r.Get("name").String()] = true
				}
			}
			if !strings.Contains(tc.kinds, "e") && len(names) != 2 {
				t.Errorf("data records should cycle through both fixture items, got %v", names)
			}
		})
	}
}

func TestScrapeUsesFixtureErrorTemplate(t *testing.T) {
	s, srv := start(t, Options{})
	_ = s.SetFault(Fault{Target: datasetTarget, ErrorRecords: true})
	res, err := client(t, sources.ProtocolDatasetScrape, srv.URL, "").Do(context.Background(),
		sources.Call{Target: datasetTarget, Body: scrapeBody(2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 2 || res.ErrorItems != 1 {
		t.Fatalf("%d items, %d errors", len(res.Items), res.ErrorItems)
	}
	e := gjson.ParseBytes(res.Items[1])
	if e.Get("error").String() != "Event not found or not public" || e.Get("input.tag").Int() != 1 {
		t.Errorf("error record %s: want the fixture's record echoing input 1", res.Items[1])
	}
}

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

func TestLatencyAndActorTimeout(t *testing.T) {
	s, srv := start(t, Options{Latency: 20 * time.Millisecond})
	url := srv.URL + "/v2/acts/" + actorTarget + "/run-sync-get-dataset-items"
	t0 := time.Now()
	if st, _ := post(t, url+"?timeout=5", `{}`); st != 201 {
		t.Fatalf("status %d", st)
	}
	if d := time.Since(t0); d < 20*time.Millisecond {
		t.Errorf("answered in %v, want the 20ms latency", d)
	}
	_ = s.SetFault(Fault{Target: actorTarget, LatencyMS: 1500})
	t0 = time.Now()
	st, body := post(t, url+"?timeout=1", `{}`)
	if st != http.StatusRequestTimeout || gjson.Get(body, "error.type").String() != "run-timeout-exceeded" {
		t.Fatalf("got %d %s, want 408 run-timeout-exceeded", st, body)
	}
	if d := time.Since(t0); d < time.Second || d > 1400*time.Millisecond {
		t.Errorf("408 after %v, want after the 1s timeout", d)
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

func TestAsyncSnapshotEndToEnd(t *testing.T) {
	s, srv := start(t, Options{Token: "sim-token"})
	_ = s.SetFault(Fault{Target: companyTarget, Async: true, Polls: 3, ErrorRecords: true})
	var activity atomic.Int32
	res, err := client(t, sources.ProtocolDatasetScrape, srv.URL, "sim-token").Do(context.Background(),
		sources.Call{Target: companyTarget, Body: scrapeBody(45), Activity: func() { activity.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 45 || res.ErrorItems != 22 {
		t.Fatalf("%d items, %d errors; want 45 and 22 (odd inputs)", len(res.Items), res.ErrorItems)
	}
	for i, it := range res.Items {
		if gjson.GetBytes(it, "input.tag").Int() != int64(i) {
			t.Fatalf("item %d out of input order: %s", i, it)
		}
	}
	if len(res.Handles) != 3 || !strings.HasPrefix(res.Handles[0], "s_") {
		t.Errorf("handles %v, want 3 snapshot ids", res.Handles)
	}
	calls := s.Calls()
	if len(calls) != 3 {
		t.Fatalf("%d scrape calls logged, want 3 chunks", len(calls))
	}
	for _, c := range calls {
		if c.Status != http.StatusAccepted || c.Protocol != ProtocolDatasetScrape || c.Query["include_errors"] != "true" {
			t.Errorf("call %+v", c)
		}
	}
	if activity.Load() < 9 {
		t.Errorf("activity %d: want at least one per poll answer", activity.Load())
	}
}

func TestSnapshotEndpoints(t *testing.T) {
	s, srv := start(t, Options{})
	_ = s.SetFault(Fault{Target: datasetTarget, Async: true, Polls: 3})
	st, body := post(t, srv.URL+"/datasets/v3/scrape?dataset_id="+datasetTarget, string(must(json.Marshal(scrapeBody(1)))))
	id := gjson.Get(body, "snapshot_id").String()
	if st != 202 || !strings.HasPrefix(id, "s_") {
		t.Fatalf("got %d %s", st, body)
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	steps := []struct {
		path   string
		status int
		field  string
	}{
		{"/datasets/v3/progress/" + id, 200, "starting"},
		{"/datasets/v3/snapshot/" + id + "?format=json", 202, "running"},
		{"/datasets/v3/progress/" + id, 200, "ready"},
		{"/datasets/v3/snapshot/" + id + "?format=json", 200, ""},
		{"/datasets/v3/progress/s_unknown", 404, ""},
		{"/datasets/v3/snapshot/s_unknown", 404, ""},
	}
	for _, step := range steps {
		st, body := get(step.path)
		if st != step.status || (step.field != "" && gjson.Get(body, "status").String() != step.field) {
			t.Errorf("GET %s = %d %s, want %d %s", step.path, st, body, step.status, step.field)
		}
	}
}

func TestRequestErrors(t *testing.T) {
	_, srv := start(t, Options{Token: "tok"})
	tests := []struct {
		name, path, auth, body string
		status                 int
		errPath, errWant       string
	}{
		{"actor no token", "/v2/acts/" + actorTarget + "/run-sync-get-dataset-items", "", `{}`, 401, "error.type", "user-or-token-not-found"},
		{"actor wrong token", "/v2/acts/" + actorTarget + "/run-sync-get-dataset-items", "Bearer nope", `{}`, 401, "error.type", "user-or-token-not-found"},
		{"actor unknown", "/v2/acts/nobody~nothing/run-sync-get-dataset-items", "Bearer tok", `{}`, 404, "error.type", "record-not-found"},
		{"actor bad json", "/v2/acts/" + actorTarget + "/run-sync-get-dataset-items", "Bearer tok", `{`, 400, "error.type", "invalid-input"},
		{"scrape no token", "/datasets/v3/scrape?dataset_id=" + datasetTarget, "", `{"input":[{}]}`, 401, "code", "unauthorized"},
		{"scrape unknown", "/datasets/v3/scrape?dataset_id=gd_nope", "Bearer tok", `{"input":[{}]}`, 404, "code", "dataset_not_found"},
		{"scrape no dataset", "/datasets/v3/scrape", "Bearer tok", `{"input":[{}]}`, 400, "code", "validation_error"},
		{"scrape no input", "/datasets/v3/scrape?dataset_id=" + datasetTarget, "Bearer tok", `{"url":"u"}`, 400, "code", "validation_error"},
		{"scrape empty input", "/datasets/v3/scrape?dataset_id=" + datasetTarget, "Bearer tok", `{"input":[]}`, 400, "code", "validation_error"},
		{"scrape too many", "/datasets/v3/scrape?dataset_id=" + datasetTarget, "Bearer tok", string(must(json.Marshal(scrapeBody(21)))), 400, "code", "validation_error"},
		{"scrape bare array ok", "/datasets/v3/scrape?dataset_id=" + datasetTarget, "Bearer tok", `[{"url":"u"}]`, 200, "0.input.url", "u"},
		{"unknown path", "/v3/other", "Bearer tok", `{}`, 404, "error.type", "page-not-found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+tc.path, strings.NewReader(tc.body))
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || gjson.GetBytes(b, tc.errPath).String() != tc.errWant {
				t.Errorf("got %d %s, want %d with %s=%s", resp.StatusCode, b, tc.status, tc.errPath, tc.errWant)
			}
		})
	}
}

func TestControlEndpoints(t *testing.T) {
	s, srv := start(t, Options{MaxCalls: 3})
	do := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	steps := []struct {
		method, path, body string
		status             int
		check              func(body string) bool
	}{
		{"GET", "/_sim/health", "", 200, func(b string) bool { return gjson.Get(b, "status").String() == "ok" }},
		{"POST", "/_sim/faults", `{"target":"a~b","status":503,"retry_after":7,"times":2}`, 200, func(b string) bool { return gjson.Get(b, "#").Int() == 1 }},
		{"POST", "/_sim/faults", `[{"target":"c","stall_ms":40000},{"target":"*","latency_ms":5}]`, 200, func(b string) bool { return gjson.Get(b, "#").Int() == 3 }},
		{"POST", "/_sim/faults", `{"status":503}`, 400, nil},
		{"POST", "/_sim/faults", `{"target":"x","status":42}`, 400, nil},
		{"POST", "/_sim/faults", `{"target":"x","bogus":`, 400, nil},
		{"GET", "/_sim/faults", "", 200, func(b string) bool { return gjson.Get(b, `#(target=="a~b").retry_after`).Int() == 7 }},
		{"DELETE", "/_sim/faults?target=c", "", 200, func(b string) bool { return gjson.Get(b, "#").Int() == 2 }},
		{"DELETE", "/_sim/faults", "", 200, func(b string) bool { return gjson.Get(b, "#").Int() == 0 }},
		{"GET", "/_sim/faults", "", 200, func(b string) bool { return b == "[]" }},
	}
	for _, st := range steps {
		code, body := do(st.method, st.path, st.body)
		if code != st.status || (st.check != nil && !st.check(body)) {
			t.Errorf("%s %s %s = %d %s", st.method, st.path, st.body, code, body)
		}
	}

	for i := range 5 {
		post(t, srv.URL+"/v2/acts/"+actorTarget+fmt.Sprintf("/run-sync-get-dataset-items?maxItems=%d", i+1), fmt.Sprintf(`{"n":%d}`, i))
	}
	code, body := do("GET", "/_sim/calls", "")
	calls := gjson.Parse(body).Array()
	if code != 200 || len(calls) != 3 {
		t.Fatalf("calls %d %s: want the last 3 (MaxCalls)", code, body)
	}
	c := calls[2]
	if c.Get("protocol").String() != ProtocolActorRun || c.Get("target").String() != actorTarget ||
		c.Get("query.maxItems").String() != "5" || c.Get("body.n").Int() != 4 || c.Get("status").Int() != 201 || !c.Get("at").Exists() {
		t.Errorf("last call %s", c.Raw)
	}
	if code, _ := do("DELETE", "/_sim/calls", ""); code != http.StatusNoContent || len(s.Calls()) != 0 {
		t.Errorf("DELETE /_sim/calls = %d, %d calls left", code, len(s.Calls()))
	}
}

func TestCustomFixturesAndRoutes(t *testing.T) {
	fsys := fstest.MapFS{
		"routes.json":   {Data: []byte(`{"my~actor": "mine.json"}`)},
		"mine.json":     {Data: []byte(`[{"id": 1}, {"id": 2, "error": "x"}, {"id": 3}]`)},
		"bad.json":      {Data: []byte(`{"not": "an array"}`)},
		"errsonly.json": {Data: []byte(`[{"error": "x"}]`)},
	}
	s, srv := start(t, Options{Fixtures: fsys, Routes: map[string]string{"other~actor": "mine.json"}})
	for _, target := range []string{"my~actor", "other~actor"} {
		st, body := post(t, srv.URL+"/v2/acts/"+target+"/run-sync-get-dataset-items", `{}`)
		if st != 201 || body != `[{"id":1},{"id":3}]` {
			t.Errorf("%s: %d %s, want the data items only", target, st, body)
		}
	}
	// The directory adds to the examples: the declared routes still answer.
	if err := s.Check(); err != nil {
		t.Errorf("Check() = %v, want the declared examples still found", err)
	}
	if st, body := post(t, srv.URL+"/v2/acts/"+actorTarget+"/run-sync-get-dataset-items", `{}`); st != 201 || !strings.HasPrefix(body, "[{") {
		t.Errorf("declared route %s: %d %s", actorTarget, st, body)
	}
	for _, path := range []string{"bad.json", "errsonly.json", "missing.json"} {
		if _, err := s.fixture(path); err == nil {
			t.Errorf("fixture(%s) loaded", path)
		}
	}
}

func TestSetInput(t *testing.T) {
	tests := []struct{ item, input, want string }{
		{`{"a":1}`, `{"url":"u"}`, `{"input":{"url":"u"},"a":1}`},
		{`{}`, `{"url":"u"}`, `{"input":{"url":"u"}}`},
		{`{"a":1,"input":{"url":"old"},"b":2}`, `{"url":"u"}`, `{"a":1,"input":{"url":"u"},"b":2}`},
		{`{"input":"x"}`, `[1]`, `{"input":[1]}`},
	}
	for _, tc := range tests {
		got := string(setInput([]byte(tc.item), []byte(tc.input)))
		if got != tc.want || !json.Valid([]byte(got)) {
			t.Errorf("setInput(%s, %s) = %s, want %s", tc.item, tc.input, got, tc.want)
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestDeclaredRoutesCoverEveryOffer: every live offer of the embedded
// declarations has its target routed to an example of its source, and the
// routes are exactly those targets: no Go list to keep in step.
func TestDeclaredRoutesCoverEveryOffer(t *testing.T) {
	s := New(Options{})
	reg, err := registry.Load("../../../services")
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, svc := range reg.Services {
		for _, o := range svc.LiveOffers() {
			targets[o.Target] = true
			p, ok := s.Routes()[o.Target]
			if !ok {
				t.Errorf("%s offer %s: target %s has no route", svc.Key, o.ID, o.Target)
				continue
			}
			if !strings.HasPrefix(p, o.Source.ID+"/") {
				t.Errorf("%s offer %s: routed to %s, not an example of %s", svc.Key, o.ID, p, o.Source.ID)
			}
		}
	}
	for target := range s.Routes() {
		if !targets[target] {
			t.Errorf("route %s is no live offer's target", target)
		}
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
}
