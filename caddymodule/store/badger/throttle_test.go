package badger_test

import (
	"testing"
	"time"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/badger"
)

// TestThrottleSurvivesReopen: the counters the store keeps in memory are
// written through, so a restarted gateway still refuses the attempt.
func TestThrottleSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UTC()
	k := store.ThrottleKey{Key: "address:x", Rule: store.ThrottleRule{Free: 2, Base: time.Minute, Max: time.Hour, Window: time.Hour}}
	s, err := badger.Open(dir, badger.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r, err := s.ThrottleAttempt(t.Context(), now, k); err != nil || r.Wait != 0 {
			t.Fatalf("free attempt: %+v %v", r, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = badger.Open(dir, badger.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r, err := s.ThrottleAttempt(t.Context(), now.Add(time.Second), k); err != nil || r.Wait != 59*time.Second {
		t.Errorf("after reopening: %+v %v, want a wait of 59s", r, err)
	}
}
