package api

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"socialrouter/caddymodule/cache"
	"socialrouter/caddymodule/store"
)

// settleSpy counts the cache entries settles carry.
type settleSpy struct {
	Store
	entries atomic.Int64
}

func (s *settleSpy) Settle(ctx context.Context, st store.Settlement) (store.SettleResult, error) {
	s.entries.Add(int64(len(st.Cache)))
	return s.Store.Settle(ctx, st)
}

// putSpy counts the cache's puts of their own.
type putSpy struct {
	store.Cache
	puts atomic.Int64
}

func (p *putSpy) CachePut(ctx context.Context, e store.CacheEntry, maxBytes int64) error {
	p.puts.Add(1)
	return p.Cache.CachePut(ctx, e, maxBytes)
}

// A live call's cache entry is stored with its run, in the settle's
// commit: one durable write a call, not two (each commit's syncs were
// most of an N = 1 call's CPU). The next call is served from it.
func TestLiveEntryStoredWithTheRun(t *testing.T) {
	a := heldAPI(t)
	spy := &settleSpy{Store: a.API.Store}
	a.API.Store = spy
	puts := &putSpy{Cache: a.store.(store.Cache)}
	a.Cache = cache.New(puts, 0, time.Minute)
	for i, want := range []int{0, 1} {
		rec := a.cachedCall()
		var run struct {
			CachedRecords int `json:"cached_records"`
		}
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &run) != nil || run.CachedRecords != want {
			t.Fatalf("call %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	if got := spy.entries.Load(); got != 1 {
		t.Errorf("settles carried %d cache entries, want 1 (the live call's)", got)
	}
	if got := puts.puts.Load(); got != 0 {
		t.Errorf("%d cache puts of their own, want 0: the entry goes with the run", got)
	}
}
