package sources

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"
)

// statusCase is one upstream failure and how it must be classified.
type statusCase struct {
	name       string
	status     int
	body       string
	header     map[string]string
	outcome    string
	retryable  bool
	retryAfter time.Duration
}

func statusCases() []statusCase {
	apiErr := func(typ string) string {
		return `{"error":{"type":"` + typ + `","message":"upstream says ` + typ + `"}}`
	}
	return []statusCase{
		{name: "400 invalid-input", status: 400, body: apiErr("invalid-input"), outcome: OutcomeInvalidInput, retryable: false},
		{name: "400 validation_error code", status: 400, body: `{"error":"bad url","code":"validation_error"}`, outcome: OutcomeInvalidInput, retryable: false},
		{name: "400 validation_errors", status: 400, body: `{"validation_errors":["url is not a profile","limit too large"]}`, outcome: OutcomeInvalidInput, retryable: false},
		{name: "400 run-failed", status: 400, body: apiErr("run-failed"), outcome: OutcomeUpstream4xx, retryable: true},
		{name: "400 no body", status: 400, body: ``, outcome: OutcomeUpstream4xx, retryable: true},
		{name: "401", status: 401, body: apiErr("user-or-token-not-found"), outcome: OutcomeAuth, retryable: true},
		{name: "403", status: 403, body: apiErr("insufficient-permissions"), outcome: OutcomeAuth, retryable: true},
		{name: "402", status: 402, body: apiErr("not-enough-usage-to-run-paid-actor"), outcome: OutcomePayment, retryable: true},
		{name: "404", status: 404, body: apiErr("record-not-found"), outcome: OutcomeUpstream4xx, retryable: true},
		{name: "408 run-timeout-exceeded", status: 408, body: apiErr("run-timeout-exceeded"), outcome: OutcomeTimeout, retryable: true},
		{name: "504", status: 504, body: `<html>gateway timeout</html>`, outcome: OutcomeTimeout, retryable: true},
		{name: "429 seconds", status: 429, body: apiErr("rate-limit-exceeded"), header: map[string]string{"Retry-After": "7"},
			outcome: OutcomeRateLimited, retryable: true, retryAfter: 7 * time.Second},
		{name: "429 no retry-after", status: 429, body: apiErr("rate-limit-exceeded"), outcome: OutcomeRateLimited, retryable: true},
		{name: "500", status: 500, body: apiErr("internal-server-error"), outcome: OutcomeUpstream5xx, retryable: true},
		{name: "502 text", status: 502, body: `bad gateway`, outcome: OutcomeUpstream5xx, retryable: true},
		{name: "503 retry-after", status: 503, body: ``, header: map[string]string{"Retry-After": "3"},
			outcome: OutcomeUpstream5xx, retryable: true, retryAfter: 3 * time.Second},
		{name: "200 not json", status: 200, body: `[{"a":1},`, outcome: OutcomeMalformed, retryable: true},
		{name: "200 object", status: 200, body: `{"a":1}`, outcome: OutcomeMalformed, retryable: true},
		{name: "200 empty", status: 200, body: ``, outcome: OutcomeMalformed, retryable: true},
		{name: "204", status: 204, body: ``, outcome: OutcomeMalformed, retryable: true},
	}
}

// protoCase builds a client of one protocol and the call to make with it.
type protoCase struct {
	name string
	new  func(Config) (Client, error)
	call Call
}

func protoCases() []protoCase {
	return []protoCase{
		{name: "actor_run", new: func(c Config) (Client, error) { return New(ProtocolActorRun, c) },
			call: Call{Target: "dev_fusion~linkedin-profile-scraper", Body: map[string]any{"profileUrls": []string{"https://x/in/a"}}, Limit: 5}},
		{name: "dataset_scrape", new: func(c Config) (Client, error) { return New(ProtocolDatasetScrape, c) },
			call: Call{Target: "gd_l1viktl72bvl7bjuj0", Body: map[string]any{"input": []any{map[string]any{"url": "https://x/in/a"}}}}},
	}
}

func TestStatusClassification(t *testing.T) {
	for _, p := range protoCases() {
		for _, tc := range statusCases() {
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					for k, v := range tc.header {
						w.Header().Set(k, v)
					}
					w.Header().Set("X-Apify-Run-Id", "run_123")
					w.WriteHeader(tc.status)
					_, _ = w.Write([]byte(tc.body))
				}))
				defer srv.Close()
				c, err := p.new(Config{BaseURL: srv.URL, Token: "tok"})
				if err != nil {
					t.Fatal(err)
				}
				res, err := c.Do(context.Background(), p.call)
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("want *Error, got res=%v err=%v", res, err)
				}
				if e.Outcome != tc.outcome || e.Retryable != tc.retryable || e.Status != tc.status || e.RetryAfter != tc.retryAfter {
					t.Errorf("got outcome=%s retryable=%v status=%d retryAfter=%v, want %s %v %d %v (%v)",
						e.Outcome, e.Retryable, e.Status, e.RetryAfter, tc.outcome, tc.retryable, tc.status, tc.retryAfter, e)
				}
				if len(e.Handles) != 1 || e.Handles[0] != "run_123" {
					t.Errorf("handles = %v, want the run id header", e.Handles)
				}
				if strings.Contains(e.Error(), "tok") && !strings.Contains(tc.body, "tok") {
					t.Errorf("error leaks the token: %v", e)
				}
			})
		}
	}
}

func TestNetworkErrorAndCancel(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	// Handlers read the body first: only then does the server notice the
	// client going away and cancel the request context.
	release := make(chan struct{})
	stallBeforeHeaders := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	stallInBody := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(200)
		_, _ = w.Write([]byte(`[{"a":`))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer func() {
		close(release)
		stallBeforeHeaders.Close()
		stallInBody.Close()
	}()

	for _, p := range protoCases() {
		tests := []struct {
			name    string
			url     string
			ctx     func() (context.Context, context.CancelFunc)
			outcome string
		}{
			{"connection refused", closedURL, func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, OutcomeNetwork},
			{"deadline before headers", stallBeforeHeaders.URL, func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 100*time.Millisecond)
			}, OutcomeTimeout},
			{"deadline in body", stallInBody.URL, func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 100*time.Millisecond)
			}, OutcomeTimeout},
			{"already cancelled", stallInBody.URL, func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			}, OutcomeTimeout},
		}
		for _, tc := range tests {
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				c, err := p.new(Config{BaseURL: tc.url})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := tc.ctx()
				defer cancel()
				_, err = c.Do(ctx, p.call)
				var e *Error
				if !errors.As(err, &e) || e.Outcome != tc.outcome || !e.Retryable {
					t.Fatalf("got %#v, want retryable %s", err, tc.outcome)
				}
			})
		}
	}
}

func TestSoftTimeoutCauseInMessage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	defer srv.Close()
	c, _ := NewActorRun(Config{BaseURL: srv.URL})
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(errors.New("no upstream activity for 30s")) })
	_, err := c.Do(ctx, Call{Target: "x"})
	var e *Error
	if !errors.As(err, &e) || e.Outcome != OutcomeTimeout || !strings.Contains(e.Message, "no upstream activity") {
		t.Fatalf("got %v", err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"7", 7 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"1.5", 1500 * time.Millisecond},
		{"0", 0},
		{"-3", 0},
		{"", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{now.Add(30 * time.Second).Format(time.RFC850), 30 * time.Second},
	}
	for _, tc := range tests {
		if got := parseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestRunIDHandles(t *testing.T) {
	h := http.Header{}
	h.Set("X-Apify-Run-Id", "r1")
	h.Set("X-Run-Id", "r2")
	h.Set("X-Request-Id", "not-a-run")
	h.Add("Upstream-Run-ID", "r1")
	got := runIDHandles(h)
	if len(got) != 2 {
		t.Fatalf("got %v, want r1 and r2 once each", got)
	}
}

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		protocol string
		base     string
		ok       bool
	}{
		{ProtocolActorRun, "http://127.0.0.1:9101", true},
		{ProtocolDatasetScrape, "https://api.example.com/", true},
		{ProtocolActorRun, "", false},
		{ProtocolDatasetScrape, "127.0.0.1:9102", false},
		{"carrier_pigeon", "http://x", false},
	}
	for _, tc := range tests {
		_, err := New(tc.protocol, Config{BaseURL: tc.base})
		if (err == nil) != tc.ok {
			t.Errorf("New(%q, %q) err = %v, want ok=%v", tc.protocol, tc.base, err, tc.ok)
		}
	}
	if got := strings.Join(Protocols(), ","); got != "actor_run,dataset_scrape" {
		t.Errorf("Protocols() = %s", got)
	}
}

func TestActivityOnEveryRead(t *testing.T) {
	for _, p := range protoCases() {
		t.Run(p.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case strings.HasSuffix(r.URL.Path, "/runs"):
					_, _ = w.Write([]byte(`{"data":{"id":"r1","defaultDatasetId":"d1","status":"RUNNING"}}`))
					return
				case strings.HasPrefix(r.URL.Path, "/v2/actor-runs/"):
					_, _ = w.Write([]byte(`{"data":{"id":"r1","status":"SUCCEEDED"}}`))
					return
				}
				w.WriteHeader(200)
				for i, part := range []string{`[{"a":1}`, `,{"a":2}`, `,{"a":3}]`} {
					if i > 0 {
						time.Sleep(10 * time.Millisecond)
					}
					_, _ = w.Write([]byte(part))
					w.(http.Flusher).Flush()
				}
			}))
			defer srv.Close()
			c, _ := p.new(Config{BaseURL: srv.URL})
			var n atomic.Int32
			call := p.call
			call.Activity = func() { n.Add(1) }
			res, err := c.Do(context.Background(), call)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Items) != 3 {
				t.Fatalf("items = %d", len(res.Items))
			}
			// Headers, then at least one call per flushed part.
			if n.Load() < 4 {
				t.Errorf("activity called %d times, want >= 4", n.Load())
			}
		})
	}
}

func TestEncodeBody(t *testing.T) {
	tests := []struct {
		in      any
		want    string
		wantErr bool
	}{
		{map[string]int{"a": 1}, `{"a":1}`, false},
		{json.RawMessage(`{"b":2}`), `{"b":2}`, false},
		{[]byte(`[1]`), `[1]`, false},
		{[]byte(`{`), ``, true},
		{func() {}, ``, true},
	}
	for _, tc := range tests {
		got, err := encodeBody(tc.in)
		if (err != nil) != tc.wantErr || (err == nil && string(got) != tc.want) {
			t.Errorf("encodeBody(%T) = %s, %v", tc.in, got, err)
		}
	}
}

// TestReadBody checks the one-buffer read against what io.ReadAll would
// give: the whole body when Content-Length is right or absent, an error
// when the body stops short, and more than announced passed on so the
// caller can judge it.
func TestReadBody(t *testing.T) {
	body := strings.Repeat("x", 1000)
	tests := []struct {
		name    string
		r       io.Reader
		length  int64
		want    string
		wantErr bool
	}{
		{"exact", strings.NewReader(body), 1000, body, false},
		{"no length", strings.NewReader(body), -1, body, false},
		{"empty", strings.NewReader(""), 0, "", false},
		{"longer than announced", strings.NewReader(body), 10, body, false},
		{"short, plain EOF", strings.NewReader(body[:400]), 1000, body[:400], true},
		{"short, transport error", io.MultiReader(strings.NewReader(body[:400]), iotest.ErrReader(io.ErrUnexpectedEOF)), 1000, body[:400], true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := readBody(tc.r, tc.length)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if string(got) != tc.want {
				t.Errorf("got %d bytes, want %d", len(got), len(tc.want))
			}
		})
	}
}

// TestResultRelease checks the body buffer's round trip: a released
// result's buffer serves the next body of a size it fits, and a result
// that is not released keeps its items intact while another body is read.
func TestResultRelease(t *testing.T) {
	body := `[{"a":1},{"b":2}]`
	read := func() (*Result, *[]byte) {
		b, buf, err := readBody(strings.NewReader(body), int64(len(body)))
		if err != nil || buf == nil {
			t.Fatalf("readBody: %v, pooled %v", err, buf != nil)
		}
		items, n, _, _, err := splitItems(b)
		if err != nil {
			t.Fatal(err)
		}
		return &Result{Items: items, ErrorItems: n, buf: buf}, buf
	}
	kept, keptBuf := read()
	other, otherBuf := read()
	if keptBuf == otherBuf {
		t.Fatal("two live results share one buffer")
	}
	other.Release()
	if other.Items != nil {
		t.Error("Items left set after Release")
	}
	other.Release() // a second Release does nothing
	// sync.Pool may drop what it holds (at a GC), so reuse is not promised;
	// what is promised is that a live result is never handed out again.
	for range 3 {
		r, buf := read()
		if buf == keptBuf {
			t.Fatal("the buffer of a result not released was reused")
		}
		r.Release()
	}
	if string(kept.Items[0]) != `{"a":1}` || string(kept.Items[1]) != `{"b":2}` {
		t.Errorf("kept items changed: %s %s", kept.Items[0], kept.Items[1])
	}
}

// TestTransportSmallBuffers: the upstream transport's small buffers
// (writeBufferSize, readBufferSize) carry a request body, a header and an
// answer each several times their size, whole, chunked or not.
func TestTransportSmallBuffers(t *testing.T) {
	longHeader := strings.Repeat("h", 3*readBufferSize)
	answer := strings.Repeat(`{"k":"v"},`, 10*readBufferSize)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Long", longHeader)
		w.Header().Set("X-Got", strconv.Itoa(len(body)))
		if r.URL.Query().Has("chunked") {
			w.(http.Flusher).Flush() // no Content-Length: chunked
		}
		io.WriteString(w, answer)
	}))
	defer srv.Close()
	b, err := newBase(ProtocolActorRun, Config{BaseURL: srv.URL, HTTPClient: &http.Client{Transport: NewTransport()}})
	if err != nil {
		t.Fatal(err)
	}
	sent := []byte(strings.Repeat("x", 5*writeBufferSize))
	for _, q := range []string{"", "?chunked"} {
		ans, err := b.exchange(t.Context(), http.MethodPost, srv.URL+"/"+q, sent, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := ans.header.Get("X-Got"); got != strconv.Itoa(len(sent)) {
			t.Errorf("%q: the upstream got %s bytes, want %d", q, got, len(sent))
		}
		if ans.header.Get("X-Long") != longHeader || string(ans.body) != answer {
			t.Errorf("%q: header of %d bytes, body of %d, want %d and %d", q, len(ans.header.Get("X-Long")), len(ans.body), len(longHeader), len(answer))
		}
		ans.release()
	}
}
