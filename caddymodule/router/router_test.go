package router

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/sources"
)

const (
	headID   = "source_a/actor_1"
	secondID = "source_b/pro_net"
)

var (
	in1 = "https://example.com/in/alice"
	in2 = "https://example.com/in/bob"
	in3 = "https://example.com/in/carol"
)

// setup builds a router over two fakes (source_a, source_b).
func setup(t *testing.T, cfg Config, a, b *fake) *Router {
	t.Helper()
	return New(cfg, map[string]sources.Client{"source_a": a, "source_b": b}, NewBreakers(), nil)
}

func TestRunFailover(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	errorRecords := func(context.Context, sources.Call) (*sources.Result, error) {
		item := rawf(`{"error": "dead page", "error_code": "dead_page", "input": {"url": %q}}`, in1)
		return &sources.Result{Status: 200, ErrorItems: 2, Items: []jsonRaw{item, item}}, nil
	}
	tests := []struct {
		name    string
		head    func(context.Context, sources.Call) (*sources.Result, error)
		outcome string
		status  int
	}{
		{"5xx", fail(&sources.Error{Outcome: sources.OutcomeUpstream5xx, Status: 503, Retryable: true, Message: "busy"}), "upstream_5xx", 503},
		{"network", fail(&sources.Error{Outcome: sources.OutcomeNetwork, Retryable: true, Message: "connection refused"}), "network_error", 0},
		{"malformed", fail(&sources.Error{Outcome: sources.OutcomeMalformed, Status: 200, Retryable: true, Message: "bad JSON"}), "malformed_response", 200},
		{"upstream 504", fail(&sources.Error{Outcome: sources.OutcomeTimeout, Status: 504, Retryable: true}), "timeout", 504},
		{"plain error", func(context.Context, sources.Call) (*sources.Result, error) { return nil, errors.New("boom") }, "network_error", 0},
		{"every item an error record", errorRecords, "error_records", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := &fake{do: tt.head}, &fake{}
			r := setup(t, Config{}, a, b)
			res, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}, Limit: 10})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Offer.ID != secondID {
				t.Errorf("served by %s, want %s", res.Offer.ID, secondID)
			}
			want := []string{headID + ":" + tt.outcome, secondID + ":ok"}
			if got := outcomes(res.Attempts); !reflect.DeepEqual(got, want) {
				t.Errorf("attempts %v, want %v", got, want)
			}
			if res.Attempts[0].Status != tt.status {
				t.Errorf("head status %d, want %d", res.Attempts[0].Status, tt.status)
			}
			if got := names(t, res.Records); !reflect.DeepEqual(got, []string{in1 + "#0"}) {
				t.Errorf("records %v", got)
			}
			if field(t, res.Records[0], "source") != "b" {
				t.Errorf("record %s not normalized by the second offer", res.Records[0])
			}
			if h := res.Attempts[1].Handles; !reflect.DeepEqual(h, []string{"run_ds1"}) {
				t.Errorf("handles %v", h)
			}
		})
	}
}

func TestRunPin(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	down := fail(&sources.Error{Outcome: sources.OutcomeUpstream5xx, Status: 503, Retryable: true, Message: "busy"})

	t.Run("failing pin does not fail over", func(t *testing.T) {
		a, b := &fake{do: down}, &fake{}
		r := setup(t, Config{}, a, b)
		_, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}, Pin: offer(t, svc, headID)})
		f := asFailure(t, err)
		if f.Kind != errkind.ProviderError {
			t.Errorf("failure %v", f.Kind)
		}
		if f.Offer.ID != headID || len(f.Attempts) != 1 || len(b.Calls()) != 0 {
			t.Errorf("offer %s, attempts %v, second called %d times", f.Offer.ID, outcomes(f.Attempts), len(b.Calls()))
		}
		if !strings.Contains(f.Message, "pinned offer "+headID) || !strings.Contains(f.Message, "HTTP 503") {
			t.Errorf("message %q", f.Message)
		}
	})
	t.Run("pin skips the head", func(t *testing.T) {
		a, b := &fake{}, &fake{}
		r := setup(t, Config{}, a, b)
		res, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}, Pin: offer(t, svc, secondID)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Offer.ID != secondID || len(a.Calls()) != 0 {
			t.Errorf("served by %s, head called %d times", res.Offer.ID, len(a.Calls()))
		}
	})
	t.Run("pin is tried with an open breaker", func(t *testing.T) {
		a, b := &fake{do: down}, &fake{}
		r := setup(t, Config{BreakerFailures: 1}, a, b)
		head := offer(t, svc, headID)
		r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}, Pin: head})
		if !r.Breakers().Open(headID) {
			t.Fatal("breaker should be open")
		}
		a.do = nil
		res, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}, Pin: head})
		if err != nil || res.Offer.ID != headID {
			t.Fatalf("pinned run: %v", err)
		}
		if r.Breakers().Open(headID) {
			t.Error("a success should close the breaker")
		}
	})
}

func TestRunInvalidInputStopsWalk(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	a := &fake{do: fail(&sources.Error{Outcome: sources.OutcomeInvalidInput, Status: 400, Retryable: false,
		Message: "invalid-input: profile URL is not public", Handles: []string{"run_x"}})}
	b := &fake{}
	r := setup(t, Config{BreakerFailures: 1}, a, b)
	_, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}})
	f := asFailure(t, err)
	if f.Kind != errkind.UpstreamRejectedInput {
		t.Errorf("failure %v", f.Kind)
	}
	if !strings.Contains(f.Message, `"invalid-input: profile URL is not public"`) {
		t.Errorf("message does not quote the upstream: %q", f.Message)
	}
	if len(b.Calls()) != 0 || len(f.Attempts) != 1 || f.Attempts[0].Outcome != "invalid_input" {
		t.Errorf("walk went on: attempts %v", outcomes(f.Attempts))
	}
	if !reflect.DeepEqual(f.Attempts[0].Handles, []string{"run_x"}) {
		t.Errorf("handles %v", f.Attempts[0].Handles)
	}
	if r.Breakers().Open(headID) {
		t.Error("a rejected input must not open the breaker")
	}
}

func TestRunFailureClassification(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	limited := func(ra time.Duration) *sources.Error {
		return &sources.Error{Outcome: sources.OutcomeRateLimited, Status: 429, Retryable: true, RetryAfter: ra}
	}
	e503 := &sources.Error{Outcome: sources.OutcomeUpstream5xx, Status: 503, Retryable: true}
	e504 := &sources.Error{Outcome: sources.OutcomeTimeout, Status: 504, Retryable: true}
	tests := []struct {
		name       string
		a, b       *sources.Error
		kind       errkind.Kind
		retryAfter time.Duration
		msg        string
	}{
		{"all rate limited: largest Retry-After", limited(10 * time.Second), limited(45 * time.Second), errkind.UpstreamRateLimited, 45 * time.Second, "Retry after 45 s"},
		{"all rate limited: no Retry-After", limited(0), limited(0), errkind.UpstreamRateLimited, 30 * time.Second, "Retry after 30 s"},
		{"rate limited then 503", limited(10 * time.Second), e503, errkind.ProviderError, 0,
			"all 2 offers of pro_net/profile.info failed; last: source_b/pro_net answered HTTP 503. Retry later or pin another offer with provider."},
		{"503 then upstream timeout", e503, e504, errkind.RequestTimeout, 0, "timed out upstream (HTTP 504)"},
		{"timeout then 503", e504, e503, errkind.ProviderError, 0, "answered HTTP 503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := setup(t, Config{}, &fake{do: fail(tt.a)}, &fake{do: fail(tt.b)})
			_, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}})
			f := asFailure(t, err)
			if f.Kind != tt.kind || f.RetryAfter != tt.retryAfter {
				t.Errorf("got %v retry %v, want %v retry %v", f.Kind, f.RetryAfter, tt.kind, tt.retryAfter)
			}
			if !strings.Contains(f.Message, tt.msg) {
				t.Errorf("message %q lacks %q", f.Message, tt.msg)
			}
			if f.Offer.ID != secondID || len(f.Attempts) != 2 {
				t.Errorf("last offer %v, attempts %v", f.Offer.ID, outcomes(f.Attempts))
			}
		})
	}
}

func TestRunTimeouts(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	head := offer(t, svc, headID)
	// stall blocks until the context ends, signalling activity every tick
	// (tick 0: never), and answers as a real client would.
	stall := func(tick time.Duration) func(context.Context, sources.Call) (*sources.Result, error) {
		return func(ctx context.Context, c sources.Call) (*sources.Result, error) {
			var tc <-chan time.Time
			if tick > 0 {
				tk := time.NewTicker(tick)
				defer tk.Stop()
				tc = tk.C
			}
			for {
				select {
				case <-ctx.Done():
					return nil, &sources.Error{Outcome: sources.OutcomeTimeout, Retryable: true, Message: ctx.Err().Error()}
				case <-tc:
					c.Activity()
				}
			}
		}
	}
	// slowButAlive signals activity every 10ms for d, then answers.
	slowButAlive := func(d time.Duration) func(context.Context, sources.Call) (*sources.Result, error) {
		return func(ctx context.Context, c sources.Call) (*sources.Result, error) {
			end := time.After(d)
			tk := time.NewTicker(10 * time.Millisecond)
			defer tk.Stop()
			for {
				select {
				case <-ctx.Done():
					return nil, &sources.Error{Outcome: sources.OutcomeTimeout, Retryable: true}
				case <-end:
					return echo(1)(ctx, c)
				case <-tk.C:
					c.Activity()
				}
			}
		}
	}
	tests := []struct {
		name    string
		cfg     Config
		do      func(context.Context, sources.Call) (*sources.Result, error)
		outcome string
		kind    errkind.Kind
	}{
		{"soft timeout when the upstream stalls", Config{SoftTimeout: 50 * time.Millisecond, AttemptTimeout: 5 * time.Second},
			stall(0), "soft_timeout", errkind.RequestSoftTimeout},
		{"attempt deadline while active", Config{SoftTimeout: 50 * time.Millisecond, AttemptTimeout: 150 * time.Millisecond},
			stall(10 * time.Millisecond), "timeout", errkind.RequestTimeout},
		{"activity keeps a slow call alive", Config{SoftTimeout: 50 * time.Millisecond, AttemptTimeout: 5 * time.Second},
			slowButAlive(200 * time.Millisecond), "ok", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := setup(t, tt.cfg, &fake{do: tt.do}, &fake{})
			start := time.Now()
			res, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}, Pin: head})
			if tt.outcome == "ok" {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if res.Attempts[0].Outcome != "ok" {
					t.Errorf("outcome %s", res.Attempts[0].Outcome)
				}
				return
			}
			f := asFailure(t, err)
			if f.Kind != tt.kind {
				t.Errorf("failure %v, want %v", f.Kind, tt.kind)
			}
			if got := f.Attempts[0].Outcome; got != tt.outcome {
				t.Errorf("outcome %s, want %s", got, tt.outcome)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}

	t.Run("soft timeout fails over", func(t *testing.T) {
		r := setup(t, Config{SoftTimeout: 50 * time.Millisecond}, &fake{do: stall(0)}, &fake{})
		res, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{headID + ":soft_timeout", secondID + ":ok"}
		if got := outcomes(res.Attempts); !reflect.DeepEqual(got, want) {
			t.Errorf("attempts %v", got)
		}
	})
}

func TestRunClientCancel(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	release := make(chan struct{})
	defer close(release)
	// The fake ignores its context: Run must still return promptly.
	a := &fake{do: func(context.Context, sources.Call) (*sources.Result, error) {
		<-release
		return nil, &sources.Error{Outcome: sources.OutcomeNetwork, Retryable: true}
	}}
	b := &fake{}
	r := setup(t, Config{BreakerFailures: 1}, a, b)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	start := time.Now()
	_, err := r.Run(ctx, Request{Service: svc, Inputs: []string{in1}})
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("Run took %v after the caller went away", d)
	}
	f := asFailure(t, err)
	if !errors.Is(err, context.Canceled) || f.Kind != errkind.ClientClosed || f.Attempts[0].Outcome != "canceled" {
		t.Errorf("failure %v, attempts %v", f.Kind, outcomes(f.Attempts))
	}
	if len(b.Calls()) != 0 {
		t.Error("the walk went on after the caller left")
	}
	if r.Breakers().Open(headID) {
		t.Error("a cancelled call must not count against the offer")
	}
}

func TestRunBatching(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	inputs := []string{
		"https://example.com/in/u0", "https://example.com/in/u1", "https://example.com/in/u2",
		"https://example.com/in/u3", "https://example.com/in/u4", "https://example.com/in/u5",
		"https://example.com/in/u6",
	}
	tests := []struct {
		name        string
		parallel    int
		wantCalls   int
		maxInflight int
	}{
		{"bounded by MaxParallelBatches", 2, 4, 2},
		{"bounded by the batch count", 8, 4, 4},
		{"sequential", 1, 4, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Later batches answer first: records must still come back in
			// input order.
			a := &fake{do: func(ctx context.Context, c sources.Call) (*sources.Result, error) {
				ins := bodyInputs(c.Body)
				delay := 60 * time.Millisecond
				if len(ins) > 0 && ins[0] >= inputs[4] {
					delay = 30 * time.Millisecond
				}
				time.Sleep(delay)
				return echo(1)(ctx, c)
			}}
			r := setup(t, Config{MaxParallelBatches: tt.parallel}, a, &fake{})
			res, err := r.Run(context.Background(), Request{Service: svc, Inputs: inputs, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			calls := a.Calls()
			if len(calls) != tt.wantCalls {
				t.Fatalf("%d calls, want %d", len(calls), tt.wantCalls)
			}
			for _, c := range calls {
				if n := len(bodyInputs(c.Body)); n == 0 || n > 2 {
					t.Errorf("batch of %d inputs, max_inputs is 2", n)
				}
			}
			if a.maxInflight != tt.maxInflight {
				t.Errorf("max in flight %d, want %d", a.maxInflight, tt.maxInflight)
			}
			var want []string
			for _, in := range inputs {
				want = append(want, in+"#0")
			}
			if got := names(t, res.Records); !reflect.DeepEqual(got, want) {
				t.Errorf("records %v, want %v", got, want)
			}
			if h := res.Attempts[0].Handles; !reflect.DeepEqual(h, []string{"run_act1"}) {
				t.Errorf("handles %v", h)
			}
		})
	}

}

func TestRunLimit(t *testing.T) {
	reg := testRegistry(t)
	tests := []struct {
		name      string
		svc       string
		limit     int
		records   []string
		total     int
		callLimit int
	}{
		{"per_call keeps the first records overall", "pro_net/profile.info", 2,
			[]string{in1 + "#0", in1 + "#1"}, 6, 2},
		{"per_input keeps the first records of each input", "pro_net/post.list", 2,
			[]string{in1 + "#0", in1 + "#1", in2 + "#0", in2 + "#1"}, 6, 4},
		{"no limit", "pro_net/post.list", 0,
			[]string{in1 + "#0", in1 + "#1", in1 + "#2", in2 + "#0", in2 + "#1", in2 + "#2"}, 6, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &fake{do: echo(3)}
			r := setup(t, Config{}, a, &fake{})
			res, err := r.Run(context.Background(), Request{Service: service(t, reg, tt.svc), Inputs: []string{in1, in2}, Limit: tt.limit})
			if err != nil {
				t.Fatal(err)
			}
			if got := names(t, res.Records); !reflect.DeepEqual(got, tt.records) {
				t.Errorf("records %v, want %v", got, tt.records)
			}
			if res.Total != tt.total || res.Attempts[0].Records != tt.total {
				t.Errorf("total %d (attempt %d), want %d", res.Total, res.Attempts[0].Records, tt.total)
			}
			if c := a.Calls()[0]; c.Limit != tt.callLimit {
				t.Errorf("call limit %d, want %d", c.Limit, tt.callLimit)
			}
		})
	}
}

func TestRunRequestBody(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	opts := map[string]any{"deep": true, "lang": "en"}
	tests := []struct {
		name string
		pin  string
		want map[string]any
	}{
		{"head implements deep only", headID,
			map[string]any{"urls": []any{in1}, "opts": map[string]any{"deep": true}, "max": 7}},
		{"second implements deep and lang", secondID,
			map[string]any{"input": []any{map[string]any{"url": in1}}, "opts": map[string]any{"deep": true, "lang": "en"}, "max": 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := &fake{}, &fake{}
			r := setup(t, Config{}, a, b)
			_, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}, Options: opts, Limit: 7, Pin: offer(t, svc, tt.pin)})
			if err != nil {
				t.Fatal(err)
			}
			calls := append(a.Calls(), b.Calls()...)
			if len(calls) != 1 {
				t.Fatalf("%d calls", len(calls))
			}
			if !reflect.DeepEqual(calls[0].Body, tt.want) {
				t.Errorf("body %#v, want %#v", calls[0].Body, tt.want)
			}
			if calls[0].Timeout <= 0 || calls[0].Timeout > defaultAttemptTimeout || calls[0].Activity == nil {
				t.Errorf("timeout %v, activity set %v", calls[0].Timeout, calls[0].Activity != nil)
			}
		})
	}

	t.Run("no request program: default body", func(t *testing.T) {
		post := service(t, reg, "photo_net/post.info")
		b := &fake{do: func(context.Context, sources.Call) (*sources.Result, error) {
			return &sources.Result{Status: 200, Items: []jsonRaw{rawf(`{"raw": true}`)}}, nil
		}}
		r := setup(t, Config{}, &fake{}, b)
		res, err := r.Run(context.Background(), Request{Service: post, Inputs: []string{in1, in2}, Options: opts})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"inputs": []any{in1, in2}}
		if got := b.Calls()[0].Body; !reflect.DeepEqual(got, want) {
			t.Errorf("body %#v, want %#v", got, want)
		}
		if len(res.Records) != 1 || string(res.Records[0]) != `{"name":"true"}` {
			t.Errorf("records %s", res.Records)
		}
	})
}

func TestRunNormalize(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	now := time.Date(2025, 5, 6, 7, 8, 9, 0, time.UTC)
	a := &fake{do: func(context.Context, sources.Call) (*sources.Result, error) {
		return &sources.Result{Status: 200, ErrorItems: 1, Items: []jsonRaw{
			rawf(`{"name": "x", "bad": true}`),
			rawf(`{"error": "gone", "error_code": "dead_page"}`),
			rawf(`{"name": "kept"}`),
		}}, nil
	}}
	r := setup(t, Config{}, a, &fake{})
	res, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(t, res.Records); !reflect.DeepEqual(got, []string{"kept"}) {
		t.Fatalf("records %v", got)
	}
	rec := res.Records[0]
	if field(t, rec, "input") != in1 || field(t, rec, "extracted_at") != "2025-05-06T07:08:09.000Z" {
		t.Errorf("record %s", rec)
	}
	msg := res.Attempts[0].Message
	if !strings.Contains(msg, "1 items skipped: normalize") || !strings.Contains(msg, "1 of 3 items were error records") {
		t.Errorf("attempt message %q", msg)
	}
}

func TestInputMatching(t *testing.T) {
	batch := []string{in1, in2, in3}
	tests := []struct {
		name string
		item string
		want int
	}{
		{"top-level field, trailing slash and case ignored", `{"profileUrl": "HTTPS://example.com/in/Bob/", "n": 1}`, 1},
		{"input object", `{"name": "x", "input": {"url": "https://example.com/in/carol"}}`, 2},
		{"input object wins over top-level fields", `{"related": "https://example.com/in/bob", "input": {"url": "https://example.com/in/carol"}}`, 2},
		{"no match: first input", `{"url": "https://example.com/in/dave"}`, 0},
		{"not an object", `[1, 2]`, 0},
		{"non-string fields ignored", `{"url": 5, "input": {"n": 2}}`, 0},
	}
	m := newInputMatcher(batch)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := m.match(jsonRaw(tt.item)); got != tt.want {
				t.Errorf("match = %d, want %d", got, tt.want)
			}
		})
	}
	if got := newInputMatcher([]string{in1}).match(jsonRaw(`{"url": "https://example.com/in/bob"}`)); got != 0 {
		t.Errorf("single-input batch matched %d", got)
	}

	// What the request sent for an input names it too: an id sent as the
	// URL naming it is echoed as that URL; a constant sent with every
	// input names none.
	sent := []string{"id-a", "id-b", in3}
	ms := newInputMatcher(sent)
	ms.sent(map[string]any{"input": []any{
		map[string]any{"url": "https://example.com/?q=id:id-a", "country": "US"},
		map[string]any{"url": "https://example.com/?q=id:id-b", "country": "US"},
		map[string]any{"url": in3, "country": "US"},
	}, "fields": []any{"x"}})
	for _, tt := range []struct {
		item string
		want int
	}{
		{`{"input": {"url": "https://example.com/?q=id:id-b", "country": "US"}}`, 1},
		{`{"input": {"country": "US", "url": "https://example.com/?q=id:ID-A"}}`, 0},
		{`{"input": {"url": "https://example.com/in/carol"}}`, 2},
		{`{"place": "id-b"}`, 1},
	} {
		if got := ms.match(jsonRaw(tt.item)); got != tt.want {
			t.Errorf("with the request sent, %s matched %d, want %d", tt.item, got, tt.want)
		}
	}

	t.Run("records in input order with the right $input", func(t *testing.T) {
		reg := testRegistry(t)
		svc := service(t, reg, "pro_net/profile.info")
		b := &fake{do: func(context.Context, sources.Call) (*sources.Result, error) {
			return &sources.Result{Status: 200, Items: []jsonRaw{
				rawf(`{"name": "c", "input": {"url": %q}}`, in3),
				rawf(`{"name": "b", "url": %q}`, strings.ToUpper(in2)+"/"),
				rawf(`{"name": "a", "url": %q}`, in1),
				rawf(`{"name": "unmatched"}`),
			}}, nil
		}}
		r := setup(t, Config{}, &fake{}, b)
		res, err := r.Run(context.Background(), Request{Service: svc, Inputs: batch, Pin: offer(t, svc, secondID)})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, rec := range res.Records {
			got = append(got, field(t, rec, "name")+"="+field(t, rec, "input"))
		}
		want := []string{"a=" + in1, "unmatched=" + in1, "b=" + in2, "c=" + in3}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("records %v, want %v", got, want)
		}
	})
}

func TestRunNoLiveOfferOrClient(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	b := &fake{}
	r := New(Config{}, map[string]sources.Client{"source_b": b}, nil, nil)
	res, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{headID + ":no_client", secondID + ":ok"}
	if got := outcomes(res.Attempts); !reflect.DeepEqual(got, want) {
		t.Errorf("attempts %v", got)
	}
	if _, err := r.Run(context.Background(), Request{}); asFailure(t, err).Kind != errkind.Internal {
		t.Errorf("no service: %v", err)
	}
}

func TestRunConcurrent(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	var n int
	var mu sync.Mutex
	a := &fake{do: func(ctx context.Context, c sources.Call) (*sources.Result, error) {
		mu.Lock()
		n++
		odd := n%2 == 1
		mu.Unlock()
		if odd {
			return nil, &sources.Error{Outcome: sources.OutcomeUpstream5xx, Status: 500, Retryable: true}
		}
		return echo(2)(ctx, c)
	}}
	r := setup(t, Config{BreakerFailures: 3, MaxParallelBatches: 3}, a, &fake{do: echo(1)})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			res, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1, in2, in3}, Limit: 4})
			if err != nil {
				t.Error(err)
				return
			}
			if len(res.Records) == 0 {
				t.Error("no records")
			}
		})
	}
	wg.Wait()
}

// TestChain: the offers a call tries are the pinned one alone, else the
// caller's Offers, else the service's live offers; Run, Resume and the
// api's hold ahead all read it.
func TestChain(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	live := svc.LiveOffers()
	if len(live) < 2 {
		t.Fatalf("test registry: %s has %d live offers, want 2 or more", svc.Key, len(live))
	}
	second := live[1]
	tests := []struct {
		name string
		req  Request
		want []*registry.Offer
	}{
		{"live offers", Request{Service: svc}, live},
		{"pinned", Request{Service: svc, Pin: second}, []*registry.Offer{second}},
		{"caller's chain", Request{Service: svc, Offers: []*registry.Offer{second, live[0]}}, []*registry.Offer{second, live[0]}},
		{"pin wins over a chain", Request{Service: svc, Pin: live[0], Offers: []*registry.Offer{second}}, []*registry.Offer{live[0]}},
	}
	for _, tt := range tests {
		if got := tt.req.Chain(); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Chain() = %v, want %v", tt.name, ids(got), ids(tt.want))
		}
	}
}

func ids(os []*registry.Offer) []string {
	out := make([]string, len(os))
	for i, o := range os {
		out[i] = o.ID
	}
	return out
}
