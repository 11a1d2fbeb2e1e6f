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
			Request: doc, Doc: doc, CreatedAt: now, Deadline: now.Add(time.Hour)}); err != nil {
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
