package router

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/sources"
)

var e503 = &sources.Error{Outcome: sources.OutcomeUpstream5xx, Status: 503, Retryable: true, Message: "busy"}

func TestBreakerWalk(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	head := offer(t, svc, headID)
	other := offer(t, service(t, reg, "pro_net/post.list"), "source_a/actor_2")
	req := Request{Service: svc, Inputs: []string{in1}}
	clk := newClock()
	a, b := &fake{do: fail(e503)}, &fake{}
	r := setup(t, Config{BreakerFailures: 2, BreakerCooldown: 30 * time.Second, Now: clk.Now}, a, b)
	br := r.Breakers()
	status := func(offers ...*registry.Offer) string { return br.SourceStatus("source_a", offers, "active") }

	// One failure: still closed.
	if _, err := r.Run(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if br.Open(headID) || status(head) != "active" {
		t.Fatalf("open after one failure (status %s)", status(head))
	}
	// Second consecutive failure opens it.
	r.Run(context.Background(), req)
	if !br.Open(headID) {
		t.Fatal("breaker closed after BreakerFailures failures")
	}
	if got := status(head); got != "down" {
		t.Errorf("status with every offer open %s, want down", got)
	}
	if got := status(head, other, head); got != "degraded" {
		t.Errorf("status with some offers open %s, want degraded", got)
	}

	// An open breaker is skipped: the head is not called.
	calls := len(a.Calls())
	res, err := r.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Calls()) != calls || res.Offer.ID != secondID {
		t.Errorf("open breaker was called (served by %s)", res.Offer.ID)
	}
	want := []string{headID + ":circuit_open", secondID + ":ok"}
	if got := outcomes(res.Attempts); !reflect.DeepEqual(got, want) {
		t.Errorf("attempts %v, want %v", got, want)
	}

	// Overrides win, and clear.
	br.SetOverride("source_a", "active")
	if got := status(head); got != "active" {
		t.Errorf("override: %s", got)
	}
	if s, ok := br.Override("source_a"); !ok || s != "active" {
		t.Errorf("Override = %q, %v", s, ok)
	}
	br.SetOverride("source_a", "")
	if got := status(head); got != "down" {
		t.Errorf("cleared override: %s", got)
	}
	if got := br.SourceStatus("source_a", []*registry.Offer{head}, "coming_soon"); got != "coming_soon" {
		t.Errorf("declared coming_soon: %s", got)
	}

	// Half-open after the cooldown: one trial, which fails and re-opens.
	clk.Add(31 * time.Second)
	if br.Open(headID) {
		t.Fatal("still open after the cooldown")
	}
	calls = len(a.Calls())
	res, _ = r.Run(context.Background(), req)
	// One trial attempt: its call is retried on the same offer first.
	if len(a.Calls()) != calls+1+maxRetries || res.Offer.ID != secondID {
		t.Fatalf("half-open trial: %d calls, served by %s", len(a.Calls())-calls, res.Offer.ID)
	}
	if !br.Open(headID) {
		t.Fatal("a failed trial must re-open the breaker at once")
	}

	// Next cooldown: the trial succeeds and closes it.
	clk.Add(31 * time.Second)
	a.do = nil
	res, err = r.Run(context.Background(), req)
	if err != nil || res.Offer.ID != headID {
		t.Fatalf("trial run: %v", err)
	}
	if br.Open(headID) || status(head) == "down" {
		t.Errorf("a successful trial must close the breaker (status %s)", status(head))
	}

	// Both offers open: the head is tried anyway.
	a.do = fail(e503)
	b.do = fail(e503)
	for range 2 {
		r.Run(context.Background(), req)
	}
	if !br.Open(headID) || !br.Open(secondID) {
		t.Fatalf("open: head %v second %v", br.Open(headID), br.Open(secondID))
	}
	a.do = nil
	calls = len(a.Calls())
	res, err = r.Run(context.Background(), req)
	if err != nil || res.Offer.ID != headID || len(a.Calls()) != calls+1 {
		t.Fatalf("all open: %v", err)
	}
	if len(res.Attempts) != 1 || res.Attempts[0].Message == "" {
		t.Errorf("attempts %+v", res.Attempts)
	}
}

func TestBreakerHalfOpenSingleTrial(t *testing.T) {
	reg := testRegistry(t)
	head := offer(t, service(t, reg, "pro_net/profile.info"), headID)
	clk := newClock()
	b := NewBreakers()
	b.configure(1, time.Minute, clk.Now)
	b.report(head, failure, false)
	if ok, _ := b.acquire(head); ok {
		t.Fatal("open breaker let a call through")
	}
	clk.Add(time.Minute)
	ok, trial := b.acquire(head)
	if !ok || !trial {
		t.Fatalf("half-open: ok %v trial %v", ok, trial)
	}
	if ok, _ := b.acquire(head); ok || !b.Open(headID) {
		t.Error("a second call went through while the trial is in flight")
	}
	if b.force(head) {
		t.Error("force took a trial slot already taken")
	}
	b.report(head, neutral, true)
	if b.Open(headID) {
		t.Error("a neutral trial must free the slot")
	}
	ok, trial = b.acquire(head)
	b.report(head, success, trial)
	if !ok || b.Open(headID) {
		t.Error("a successful trial must close the breaker")
	}
}

func TestSourceStatus(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	head := offer(t, svc, headID)
	other := offer(t, service(t, reg, "pro_net/post.list"), "source_a/actor_2")
	tests := []struct {
		name     string
		reports  []verdict
		advance  time.Duration
		override string
		declared string
		want     string
	}{
		{"no traffic", nil, 0, "", "active", "active"},
		{"healthy", []verdict{success, success}, 0, "", "active", "active"},
		{"one blip", []verdict{failure, success, success}, 0, "", "active", "active"},
		{"recent failures", []verdict{failure, success, failure}, 0, "", "active", "degraded"},
		{"recent failures age out", []verdict{failure, success, failure}, 6 * time.Minute, "", "active", "active"},
		{"open breaker on one of two offers", []verdict{failure, failure, failure, failure}, 0, "", "active", "degraded"},
		{"override wins", []verdict{failure, failure, failure, failure}, 0, "active", "active", "active"},
		{"override down", nil, 0, "down", "active", "down"},
		{"declared coming_soon", nil, 0, "", "coming_soon", "coming_soon"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			b := NewBreakers()
			b.configure(4, time.Minute, clk.Now)
			for _, v := range tt.reports {
				b.report(head, v, false)
				clk.Add(time.Second)
			}
			clk.Add(tt.advance)
			b.SetOverride("source_a", tt.override)
			if got := b.SourceStatus("source_a", []*registry.Offer{head, other}, tt.declared); got != tt.want {
				t.Errorf("status %s, want %s", got, tt.want)
			}
		})
	}
}

func TestOverrideDownSkipsSource(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	a, b := &fake{}, &fake{}
	r := setup(t, Config{}, a, b)
	r.Breakers().SetOverride("source_a", "down")
	res, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Offer.ID != secondID || len(a.Calls()) != 0 {
		t.Errorf("served by %s; head called %d times", res.Offer.ID, len(a.Calls()))
	}
	if res.Attempts[0].Message != "skipped: source marked down by an operator" {
		t.Errorf("skip message %q", res.Attempts[0].Message)
	}
}

// TestOverrideDownIsNeverCalled: an offer on a source an operator marked
// down or coming_soon is skipped; when every offer is refused, the walk
// tries one anyway only if its breaker refused it, and with nothing else
// the call fails before any upstream call. degraded only labels.
func TestOverrideDownIsNeverCalled(t *testing.T) {
	reg := testRegistry(t)
	tests := []struct {
		name      string
		service   string
		down      []string // sources marked down (or "<source>:<status>")
		tripHead  bool     // open source_a/actor_1's breaker first
		servedBy  string   // "" when the call fails
		aCalls    int
		bCalls    int
		attempts  []string
		failIsFor string
	}{
		{"the only offer's source down", "pro_net/post.list", []string{"source_a"}, false, "", 0, 0,
			[]string{"source_a/actor_2:circuit_open"}, "every offer of pro_net/post.list is on a source an operator marked down"},
		{"both sources down", "pro_net/profile.info", []string{"source_a", "source_b"}, false, "", 0, 0,
			[]string{headID + ":circuit_open", secondID + ":circuit_open"}, "nothing was called or charged"},
		{"head tripped, second's source down: the head is tried anyway", "pro_net/profile.info", []string{"source_b"}, true, headID, 1, 0,
			[]string{headID + ":ok"}, ""},
		{"the only offer's source coming_soon", "pro_net/post.list", []string{"source_a:coming_soon"}, false, "", 0, 0,
			[]string{"source_a/actor_2:circuit_open"}, "marked down or coming_soon"},
		{"head's source coming_soon: the second serves", "pro_net/profile.info", []string{"source_a:coming_soon"}, false, secondID, 0, 1,
			[]string{headID + ":circuit_open", secondID + ":ok"}, ""},
		{"head's source degraded by an operator: still routed", "pro_net/profile.info", []string{"source_a:degraded"}, false, headID, 1, 0,
			[]string{headID + ":ok"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := service(t, reg, tt.service)
			a, b := &fake{}, &fake{}
			r := setup(t, Config{BreakerFailures: 1, BreakerCooldown: time.Hour}, a, b)
			if tt.tripHead {
				a.do = fail(e503)
				r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}, Pin: offer(t, svc, headID)})
				a.do = nil
				if !r.Breakers().Open(headID) {
					t.Fatal("the head's breaker did not open")
				}
			}
			aBefore := len(a.Calls())
			for _, d := range tt.down {
				src, status, ok := strings.Cut(d, ":")
				if !ok {
					status = "down"
				}
				r.Breakers().SetOverride(src, status)
			}
			res, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}})
			if got := [2]int{len(a.Calls()) - aBefore, len(b.Calls())}; got != [2]int{tt.aCalls, tt.bCalls} {
				t.Errorf("upstream calls (a, b) %v, want %v", got, [2]int{tt.aCalls, tt.bCalls})
			}
			if tt.servedBy != "" {
				if err != nil || res.Offer.ID != tt.servedBy {
					t.Fatalf("result %v, error %v; want served by %s", res, err, tt.servedBy)
				}
				if got := outcomes(res.Attempts); !reflect.DeepEqual(got, tt.attempts) {
					t.Errorf("attempts %v, want %v", got, tt.attempts)
				}
				return
			}
			f := asFailure(t, err)
			if f.Kind != errkind.ProviderError || !strings.Contains(f.Message, tt.failIsFor) {
				t.Errorf("failure %v %q", f.Kind, f.Message)
			}
			if got := outcomes(f.Attempts); !reflect.DeepEqual(got, tt.attempts) {
				t.Errorf("attempts %v, want %v", got, tt.attempts)
			}
		})
	}
}

func TestBreakersSharedAcrossRouters(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	shared := NewBreakers()
	clients := map[string]sources.Client{"source_a": &fake{do: fail(e503)}, "source_b": &fake{}}
	old := New(Config{BreakerFailures: 1}, clients, shared, nil)
	old.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}})
	reloaded := New(Config{BreakerFailures: 1}, clients, shared, nil)
	if !reloaded.Breakers().Open(headID) {
		t.Error("a reload lost the breaker state")
	}
}
