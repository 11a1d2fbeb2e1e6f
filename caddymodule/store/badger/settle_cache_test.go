package badger

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// A settle's cache entries (store.Settlement.Cache) are written in its own
// transaction, and indexed: found at once, bounded by CacheMaxBytes. An
// entry with under a second left is not stored.
func TestSettleStoresCacheEntries(t *testing.T) {
	s := acmeStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	entry := func(key string, n int, keep time.Duration) store.CacheEntry {
		return store.CacheEntry{Key: key, Service: "svc", Value: make([]byte, n), CreatedAt: now, ExpiresAt: now.Add(keep)}
	}
	for i, tc := range []struct {
		entries  []store.CacheEntry
		maxBytes int64
		want     map[string]bool
	}{
		{[]store.CacheEntry{entry("a", 100, time.Hour), entry("b", 100, time.Hour)}, 0, map[string]bool{"a": true, "b": true}},
		{[]store.CacheEntry{entry("c", 100, time.Hour)}, 250, map[string]bool{"a": false, "b": true, "c": true}},
		{[]store.CacheEntry{entry("d", 100, 500*time.Millisecond)}, 0, map[string]bool{"d": false}},
	} {
		run := &runs.Run{ID: "ext_" + string(rune('a'+i)), Status: "completed", AccountID: "acme", KeyID: "k",
			Data: []json.RawMessage{json.RawMessage(`{"a":1}`)}}
		t0, _ := s.Batches()
		res, err := s.Settle(ctx, store.Settlement{Run: run, Price: 1, Offer: "o", Platform: "p", Now: now,
			Cache: tc.entries, CacheMaxBytes: tc.maxBytes})
		if err != nil || res.CacheErr != nil {
			t.Fatalf("settle %d: %v, %v", i, err, res.CacheErr)
		}
		if t1, _ := s.Batches(); t1-t0 != 1 {
			t.Errorf("settle %d: %d transactions, want 1", i, t1-t0)
		}
		// Sorted: a CacheGet is a use, so the order of the checks is the
		// LRU order the next settle evicts by.
		for _, key := range slices.Sorted(maps.Keys(tc.want)) {
			want := tc.want[key]
			_, err := s.CacheGet(ctx, key, now)
			if got := err == nil; got != want {
				t.Errorf("settle %d: entry %s found %v, want %v (%v)", i, key, got, want, err)
			}
		}
	}
}
