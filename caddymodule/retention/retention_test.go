package retention

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/badger"
)

// settled stores one run of the account created at created.
func settled(t *testing.T, s store.Store, id string, created time.Time) {
	t.Helper()
	r := &runs.Run{ID: id, Status: runs.StatusCompleted, AccountID: "acme", CreatedAt: created, CompletedAt: created,
		Data: []json.RawMessage{json.RawMessage(`{"a":1}`)}}
	if _, err := s.Settle(t.Context(), store.Settlement{Run: r, Price: 10, Offer: "o", Platform: "p", Now: created}); err != nil {
		t.Fatal(err)
	}
}

func expired(t *testing.T, s store.Store, id string) bool {
	t.Helper()
	r, err := s.GetRun(t.Context(), "acme", id)
	if err != nil {
		t.Fatal(err)
	}
	return r.RecordsExpired
}

// TestPass: a pass expires, batch after batch, every run older than the
// window and no younger one.
func TestPass(t *testing.T) {
	s, err := badger.Open(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	if _, err := s.CreateAccount(t.Context(), "acme", 1_000_000, now.AddDate(0, -3, 0)); err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		settled(t, s, fmt.Sprintf("ext_old%d", i), now.AddDate(0, 0, -31).Add(time.Duration(i)*time.Minute))
	}
	settled(t, s, "ext_young", now.AddDate(0, 0, -29))
	r := &Runner{Store: s, Window: 30 * 24 * time.Hour, Batch: 2, Pause: time.Millisecond, Now: func() time.Time { return now }}
	res, err := r.Pass(t.Context())
	if err != nil || res.Runs != 7 {
		t.Fatalf("pass: %+v, %v; want 7 runs expired", res, err)
	}
	for i := range 7 {
		if !expired(t, s, fmt.Sprintf("ext_old%d", i)) {
			t.Errorf("ext_old%d kept its records", i)
		}
	}
	if expired(t, s, "ext_young") {
		t.Error("a run younger than the window lost its records")
	}
	if res, err := r.Pass(t.Context()); err != nil || res.Runs != 0 {
		t.Errorf("second pass: %+v, %v; want nothing to do", res, err)
	}
}

// TestStartStop: the background runner expires a run once it passes the
// window, and Stop returns.
func TestStartStop(t *testing.T) {
	s, err := badger.Open(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	if _, err := s.CreateAccount(t.Context(), "acme", 1_000_000, start); err != nil {
		t.Fatal(err)
	}
	settled(t, s, "ext_1", start)
	r := &Runner{Store: s, Window: 500 * time.Millisecond, Interval: 100 * time.Millisecond}
	r.Start()
	deadline := time.Now().Add(10 * time.Second)
	for !expired(t, s, "ext_1") {
		if time.Now().After(deadline) {
			t.Fatal("run not expired 10 s after it passed a window of 500 ms")
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.Stop()
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Errorf("expired after %v, before the window", d)
	}
}

// fullBatches is an Expirer whose every batch is full until n batches
// were expired.
type fullBatches struct {
	store.Expirer
	n, done int
}

func (f *fullBatches) ExpireRuns(_ context.Context, _, _ time.Time, limit int) (store.ExpireResult, error) {
	if f.done == f.n {
		return store.ExpireResult{}, nil
	}
	f.done++
	return store.ExpireResult{Runs: limit, More: true}, nil
}

func (f *fullBatches) Reclaim(context.Context) (int64, error) { return 0, nil }

// TestPassCatchesUp: batches are Pause apart while a pass is within its
// Interval, and CatchUpPause apart once it has outlasted it.
func TestPassCatchesUp(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval time.Duration
		atLeast  time.Duration
		atMost   time.Duration
	}{
		{"within its interval", time.Hour, 4 * 30 * time.Millisecond, time.Hour},
		{"past its interval", time.Millisecond, 0, 3 * 30 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fullBatches{n: 5}
			r := &Runner{Store: f, Window: time.Hour, Batch: 2, Pause: 30 * time.Millisecond, Interval: tc.interval}
			start := time.Now()
			res, err := r.Pass(t.Context())
			took := time.Since(start)
			if err != nil || res.Runs != 10 {
				t.Fatalf("pass: %+v, %v; want 10 runs", res, err)
			}
			if took < tc.atLeast || took > tc.atMost {
				t.Errorf("the pass took %v, want %v..%v", took, tc.atLeast, tc.atMost)
			}
		})
	}
}
