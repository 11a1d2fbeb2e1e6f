package router

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"
)

// recorder is an Observer that keeps what it was told.
type recorder struct {
	mu      sync.Mutex
	seen    []string
	refused map[string]int
}

func (r *recorder) RecordRefused(offer string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refused == nil {
		r.refused = map[string]int{}
	}
	r.refused[offer]++
}

func (r *recorder) AttemptEnded(offer, source, outcome string, d time.Duration, skipped bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := source + "|" + offer + ":" + outcome
	if skipped {
		s += " (skipped)"
	}
	if d < 0 {
		s += " negative duration"
	}
	r.seen = append(r.seen, s)
}

// TestObserverSeesEveryAttempt: the observer hears each attempt's end and
// each skipped offer, in walk order, with the router's outcome names.
func TestObserverSeesEveryAttempt(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	req := Request{Service: svc, Inputs: []string{in1}}
	obs := &recorder{}
	clk := newClock()
	a, b := &fake{do: fail(e503)}, &fake{}
	r := setup(t, Config{BreakerFailures: 1, BreakerCooldown: time.Minute, Now: clk.Now, Observer: obs}, a, b)

	for range 2 {
		if _, err := r.Run(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"source_a|" + headID + ":upstream_5xx", "source_b|" + secondID + ":ok",
		"source_a|" + headID + ":circuit_open (skipped)", "source_b|" + secondID + ":ok",
	}
	if !reflect.DeepEqual(obs.seen, want) {
		t.Errorf("observed %q\nwant %q", obs.seen, want)
	}
}

// TestBreakerState: closed, open during the cooldown, half-open after it,
// closed again after a successful trial.
func TestBreakerState(t *testing.T) {
	reg := testRegistry(t)
	svc := service(t, reg, "pro_net/profile.info")
	req := Request{Service: svc, Inputs: []string{in1}, Pin: offer(t, svc, headID)}
	clk := newClock()
	a := &fake{do: fail(e503)}
	r := setup(t, Config{BreakerFailures: 1, BreakerCooldown: time.Minute, Now: clk.Now}, a, &fake{})
	br := r.Breakers()
	if got := br.State(headID); got != BreakerClosed {
		t.Fatalf("never called: %v, want closed", got)
	}
	r.Run(context.Background(), req)
	if got := br.State(headID); got != BreakerOpen {
		t.Fatalf("after a failure: %v, want open", got)
	}
	clk.Add(2 * time.Minute)
	if got := br.State(headID); got != BreakerHalfOpen {
		t.Fatalf("after the cooldown: %v, want half-open", got)
	}
	a.do = echo(1)
	if _, err := r.Run(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := br.State(headID); got != BreakerClosed {
		t.Errorf("after a successful trial: %v, want closed", got)
	}
}
