package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

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
	return request(t, http.MethodPost, url, body)
}

// request sends a JSON body (which may be empty) and returns the status and
// the body of the answer.
func request(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
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
			// An actor answers the example's data items, then its error
			// rows; a scrape each input's rows of the example (rowsFor).
			want, wantErrs := len(fx.data)+len(fx.errs), len(fx.errs)
			if strings.HasPrefix(path, "source_b/") {
				want, wantErrs = 0, 0
				for i, in := range scrapeBody(3)["input"].([]any) {
					data, errs := fx.rowsFor(in.(map[string]any)["url"].(string), i)
					want, wantErrs = want+len(data)+len(errs), wantErrs+len(errs)
				}
			}
			if len(res.Items) != want || res.ErrorItems != wantErrs {
				t.Errorf("%d items (%d errors), want %d (%d errors)", len(res.Items), res.ErrorItems, want, wantErrs)
			}
		})
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
		{"scrape no dataset", "/datasets/v3/scrape", "Bearer tok", `{"input":[{}]}`, 400, "validation_errors.0", "dataset_id is required"},
		{"scrape no input", "/datasets/v3/scrape?dataset_id=" + datasetTarget, "Bearer tok", `{"url":"u"}`, 400, "validation_errors.#", "1"},
		{"scrape empty input", "/datasets/v3/scrape?dataset_id=" + datasetTarget, "Bearer tok", `{"input":[]}`, 400, "validation_errors.0", "input is empty"},
		{"scrape too many", "/datasets/v3/scrape?dataset_id=" + datasetTarget, "Bearer tok", string(must(json.Marshal(scrapeBody(21)))), 400, "validation_errors.#", "1"},
		{"scrape discovery", "/datasets/v3/scrape?type=discover_new&dataset_id=" + datasetTarget, "Bearer tok", `[{"url":"u"}]`, 400, "validation_errors.#", "1"},
		{"trigger discovery ok", "/datasets/v3/trigger?type=discover_new&dataset_id=" + datasetTarget, "Bearer tok", `[{"url":"u"}]`, 200, "snapshot_id", "*"},
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
			got := gjson.GetBytes(b, tc.errPath).String()
			if tc.errWant == "*" && got != "" {
				got = "*"
			}
			if resp.StatusCode != tc.status || got != tc.errWant {
				t.Errorf("got %d %s, want %d with %s=%s", resp.StatusCode, b, tc.status, tc.errPath, tc.errWant)
			}
		})
	}
}

func TestControlEndpoints(t *testing.T) {
	s, srv := start(t, Options{MaxCalls: 3})
	do := func(method, path, body string) (int, string) { return request(t, method, srv.URL+path, body) }
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

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
