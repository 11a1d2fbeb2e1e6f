package postgres_test

import (
	"testing"
	"time"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/postgres"
)

// TestRenewKeepsAsyncHolds: an async run lasts longer than the hold
// timeout, so renewing its lease keeps its hold from expiring; the hold
// of a run no worker renews expires as any dead call's does.
func TestRenewKeepsAsyncHolds(t *testing.T) {
	s := openHolding(t, time.Second)
	now := time.Now()
	for _, id := range []string{"ext_live", "ext_dead"} {
		if got, err := s.Reserve(t.Context(), store.Hold{ID: id, AccountID: "acme", Price: 1, Records: 10}); err != nil || got.Records != 10 {
			t.Fatalf("Reserve %s = %+v, %v", id, got, err)
		}
		if err := s.CreateAsyncRun(t.Context(), store.AsyncRun{ID: id, AccountID: "acme", Request: []byte(`{}`), Doc: []byte(`{}`),
			HoldPrice: 1, HoldRecords: 10, CreatedAt: now, Deadline: now.Add(time.Hour)}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ClaimAsyncRuns(t.Context(), "node1", 10, now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for range 4 { // 2 s: twice the hold timeout
		time.Sleep(500 * time.Millisecond)
		if _, _, err := s.RenewAsyncRuns(t.Context(), "node1", []string{"ext_live"}, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	// ext_dead's hold lapsed, ext_live's holds 10 of the 20.
	got, err := s.Reserve(t.Context(), store.Hold{ID: "ext_next", AccountID: "acme", Price: 1, Records: 20})
	if err != nil || got.Records != 10 {
		t.Errorf("Reserve after 2 s = %+v, %v; want 10 records (the renewed hold still counts)", got, err)
	}
}

// TestHeartbeatKeepsParkedHolds: the heartbeat renews the holds of its
// node's parked runs only at one beat per quarter hold timeout, yet no
// hold lapses while the node beats; a node that stops beating lets them
// lapse.
func TestHeartbeatKeepsParkedHolds(t *testing.T) {
	s := openHolding(t, 2*time.Second)
	now := time.Now()
	for _, id := range []string{"ext_live", "ext_dead"} {
		if got, err := s.Reserve(t.Context(), store.Hold{ID: id, AccountID: "acme", Price: 1, Records: 10}); err != nil || got.Records != 10 {
			t.Fatalf("Reserve %s = %+v, %v", id, got, err)
		}
		r := store.AsyncRun{ID: id, AccountID: "acme", Request: []byte(`{}`), Doc: []byte(`{}`),
			HoldPrice: 1, HoldRecords: 10, CreatedAt: now, Deadline: now.Add(time.Hour)}
		if err := s.CreateAsyncRun(t.Context(), r, 0); err != nil {
			t.Fatal(err)
		}
		node := "node-" + id
		if _, err := s.ClaimAsyncRuns(t.Context(), node, 10, now, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		r.DueAt = now.Add(time.Hour)
		if err := s.UpdateAsyncRun(t.Context(), node, r); err != nil {
			t.Fatal(err)
		}
		if id == "ext_live" {
			if err := s.HeartbeatNode(t.Context(), node, time.Now(), time.Now().Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for end := time.Now().Add(4500 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := s.HeartbeatNode(t.Context(), "node-ext_live", time.Now(), time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	// ext_dead's hold lapsed, ext_live's holds 10 of the 20.
	got, err := s.Reserve(t.Context(), store.Hold{ID: "ext_next", AccountID: "acme", Price: 1, Records: 20})
	if err != nil || got.Records != 10 {
		t.Errorf("Reserve after 4.5 s = %+v, %v; want 10 records (the parked run's hold renewed by the heartbeat)", got, err)
	}
}

// openHolding opens a store on a scratch schema with hold timeout
// timeout, and an account acme of 20 credits.
func openHolding(t *testing.T, timeout time.Duration) *postgres.Store {
	t.Helper()
	url := testURL(t)
	s, err := postgres.Open(t.Context(), url, postgres.WithSchema(testSchema(t, url)), postgres.WithHoldTimeout(timeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.CreateAccount(t.Context(), "acme", 20, time.Now()); err != nil {
		t.Fatal(err)
	}
	return s
}
