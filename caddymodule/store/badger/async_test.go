package badger_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/badger"
)

// TestAsyncManyRuns: thousands of runs of one node are claimed in one
// call and renewed in one call, though badger refuses a transaction
// writing them all at once.
func TestAsyncManyRuns(t *testing.T) {
	s, err := badger.Open(t.TempDir(), badger.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	const n = 3000
	doc := []byte(`{"status":"running","pad":"` + strings.Repeat("x", 1500) + `"}`)
	for i := range n {
		if err := s.CreateAsyncRun(t.Context(), store.AsyncRun{ID: fmt.Sprintf("ext_%05d", i), AccountID: "acme",
			Request: doc, Doc: doc, CreatedAt: now, Deadline: now.Add(time.Hour)}, 0); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	for len(ids) < n {
		got, err := s.ClaimAsyncRuns(t.Context(), "node1", n, now, now.Add(time.Minute))
		if err != nil {
			t.Fatalf("claim after %d: %v", len(ids), err)
		}
		if len(got) == 0 {
			break
		}
		for _, r := range got {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) != n {
		t.Fatalf("claimed %d of %d", len(ids), n)
	}
	if again, err := s.ClaimAsyncRuns(t.Context(), "node2", n, now, now.Add(time.Minute)); err != nil || len(again) != 0 {
		t.Fatalf("a second claim took %d runs leased to node1, %v", len(again), err)
	}
	held, _, err := s.RenewAsyncRuns(t.Context(), "node1", ids, now.Add(2*time.Minute))
	if err != nil || len(held) != n {
		t.Fatalf("renew: %d held, %v", len(held), err)
	}
}

// TestAsyncHoldsOutliveRestart: the hold of an async run in flight is
// held again when the store opens, so a restart does not free its money.
func TestAsyncHoldsOutliveRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := badger.Open(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := s.CreateAccount(t.Context(), "acme", 100, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(t.Context(), store.Hold{ID: "ext_1", AccountID: "acme", Price: 7, Records: 10}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateAsyncRun(t.Context(), store.AsyncRun{ID: "ext_1", AccountID: "acme", Request: []byte(`{}`), Doc: []byte(`{}`),
		HoldPrice: 7, HoldRecords: 10, CreatedAt: now, Deadline: now.Add(time.Hour)}, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = badger.Open(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// 100 − 70 held: 30 left, 30 records at 1.
	got, err := s.Reserve(t.Context(), store.Hold{ID: "ext_2", AccountID: "acme", Price: 1, Records: 100})
	if err != nil || got.Records != 30 {
		t.Errorf("Reserve after the restart = %+v, %v; want 30 records (the async run's 70 still held)", got, err)
	}
	// The run's own Reserve replaces its restored hold.
	if got, err := s.Reserve(t.Context(), store.Hold{ID: "ext_1", AccountID: "acme", Price: 7, Records: 10}); err != nil || got.Records != 10 {
		t.Errorf("the run's Reserve again = %+v, %v", got, err)
	}
}
