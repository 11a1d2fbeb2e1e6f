package storetest

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"socialrouter/caddymodule/store"
)

// cacheSuites are the cases of store.Cache, the freshness cache's entries.
var cacheSuites = []suite{
	{"cache_get_put_expire", testCacheGetPut},
	{"cache_evicts_least_recently_used", testCacheEvict},
	{"cache_purge_stats", testCachePurgeStats},
	{"cache_claims", testCacheClaims},
	{"cache_entries_settled_with_the_run", testCacheWithSettle},
}

// testCacheWithSettle: a settle's entries (store.Settlement.Cache) are
// stored with its run, and none when the settle is refused.
func testCacheWithSettle(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	c := cacheOf(t, s)
	mustAccount(t, s, "acme", cr(10))
	now := time.Now().UTC()
	st := settlement(newRun("acme", "", 1), price, base)
	st.Cache = []store.CacheEntry{cacheEntry("w1", "svc", 10, now), cacheEntry("w2", "svc", 10, now)}
	if res, err := s.Settle(ctx(t), st); err != nil || res.CacheErr != nil {
		t.Fatalf("settle: %v, %v", err, res.CacheErr)
	}
	for _, k := range []string{"w1", "w2"} {
		if _, err := c.CacheGet(ctx(t), k, now); err != nil {
			t.Errorf("entry %s after the settle: %v", k, err)
		}
	}
	refused := settlement(newRun("nobody", "", 1), price, base)
	refused.Cache = []store.CacheEntry{cacheEntry("w3", "svc", 10, now)}
	if _, err := s.Settle(ctx(t), refused); err == nil {
		t.Fatal("a settle of an unknown account succeeded")
	}
	if _, err := c.CacheGet(ctx(t), "w3", now); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("entry of a refused settle: %v, want ErrNotFound", err)
	}
}

func cacheOf(t *testing.T, s store.Store) store.Cache { return implements[store.Cache](t, s) }

// implements returns s as the concern T a suite tests, or fails.
func implements[T any](t *testing.T, s store.Store) T {
	t.Helper()
	c, ok := s.(T)
	if !ok {
		var zero *T
		t.Fatalf("%T does not implement %T", s, zero)
	}
	return c
}

func cacheEntry(key, service string, size int, now time.Time) store.CacheEntry {
	return store.CacheEntry{Key: key, Service: service, Value: bytes.Repeat([]byte{'x'}, size),
		CreatedAt: now.Truncate(time.Millisecond), ExpiresAt: now.Add(time.Hour)}
}

// testCacheGetPut: an entry comes back as put, replaced by a later put,
// and not at all once expired or when absent.
func testCacheGetPut(t *testing.T, open func(t *testing.T) store.Store) {
	c := cacheOf(t, open(t))
	now := time.Now().UTC()
	if _, err := c.CacheGet(ctx(t), "absent", now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("absent entry: %v, want ErrNotFound", err)
	}
	e := cacheEntry("k1", "pro_net/profile.info", 10, now)
	e.Value = []byte(`{"a":1}`)
	if err := c.CachePut(ctx(t), e, 0); err != nil {
		t.Fatal(err)
	}
	got, err := c.CacheGet(ctx(t), "k1", now)
	if err != nil {
		t.Fatal(err)
	}
	if got.Key != "k1" || got.Service != e.Service || string(got.Value) != `{"a":1}` || !got.CreatedAt.Equal(e.CreatedAt) {
		t.Fatalf("got %+v, want %+v", got, e)
	}
	if got.ExpiresAt.Before(now.Add(59*time.Minute)) || got.ExpiresAt.After(now.Add(61*time.Minute)) {
		t.Fatalf("expires_at %v, want about %v", got.ExpiresAt, e.ExpiresAt)
	}
	e.Value = []byte(`{"a":2}`)
	if err := c.CachePut(ctx(t), e, 0); err != nil {
		t.Fatal(err)
	}
	if got, err = c.CacheGet(ctx(t), "k1", now); err != nil || string(got.Value) != `{"a":2}` {
		t.Fatalf("after a second put: %q, %v", got.Value, err)
	}
	if _, err := c.CacheGet(ctx(t), "k1", now.Add(2*time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired entry: %v, want ErrNotFound", err)
	}
}

// testCacheEvict: past maxBytes the least recently used entry goes, a
// read counting as a use.
func testCacheEvict(t *testing.T, open func(t *testing.T) store.Store) {
	c := cacheOf(t, open(t))
	now := time.Now().UTC()
	for _, k := range []string{"a", "b"} {
		if err := c.CachePut(ctx(t), cacheEntry(k, "svc", 100, now), 250); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := c.CacheGet(ctx(t), "a", time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if err := c.CachePut(ctx(t), cacheEntry("c", "svc", 100, now), 250); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]bool{"a": true, "b": false, "c": true} {
		_, err := c.CacheGet(ctx(t), k, now)
		if (err == nil) != want {
			t.Errorf("entry %s kept = %v (%v), want %v", k, err == nil, err, want)
		}
	}
	st, err := c.CacheStats(ctx(t), now)
	if err != nil || len(st) != 1 || st[0].Entries != 2 || st[0].Bytes != 200 {
		t.Fatalf("stats %+v, %v; want 2 entries of 200 bytes", st, err)
	}
}

// testCachePurgeStats: stats count live entries by service; a purge of
// one service leaves the others, a purge of "" empties the cache.
func testCachePurgeStats(t *testing.T, open func(t *testing.T) store.Store) {
	c := cacheOf(t, open(t))
	now := time.Now().UTC()
	for _, e := range []store.CacheEntry{cacheEntry("a1", "a", 10, now), cacheEntry("a2", "a", 20, now), cacheEntry("b1", "b", 5, now)} {
		if err := c.CachePut(ctx(t), e, 0); err != nil {
			t.Fatal(err)
		}
	}
	st, err := c.CacheStats(ctx(t), now)
	want := []store.CacheStat{{Service: "a", Entries: 2, Bytes: 30}, {Service: "b", Entries: 1, Bytes: 5}}
	if err != nil || len(st) != 2 || st[0] != want[0] || st[1] != want[1] {
		t.Fatalf("stats %+v, %v; want %+v", st, err, want)
	}
	if n, err := c.CachePurge(ctx(t), "a", now); err != nil || n != 2 {
		t.Fatalf("purge a: %d, %v; want 2", n, err)
	}
	if _, err := c.CacheGet(ctx(t), "b1", now); err != nil {
		t.Fatalf("b1 after purging a: %v", err)
	}
	if n, err := c.CachePurge(ctx(t), "", now); err != nil || n != 1 {
		t.Fatalf("purge all: %d, %v; want 1", n, err)
	}
	if st, err := c.CacheStats(ctx(t), now); err != nil || len(st) != 0 {
		t.Fatalf("stats after purge: %+v, %v", st, err)
	}
}

// testCacheClaims: a claim is granted when free, again once dropped, and
// over an expired one.
func testCacheClaims(t *testing.T, open func(t *testing.T) store.Store) {
	c := cacheOf(t, open(t))
	now := time.Now().UTC()
	if ok, err := c.CacheClaim(ctx(t), "w", now.Add(-time.Second), now.Add(-time.Minute)); err != nil || !ok {
		t.Fatalf("first claim: %v, %v", ok, err)
	}
	if ok, err := c.CacheClaim(ctx(t), "w", now.Add(time.Minute), now); err != nil || !ok {
		t.Fatalf("claim over an expired one: %v, %v", ok, err)
	}
	if err := c.CacheUnclaim(ctx(t), "w"); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.CacheClaim(ctx(t), "w", now.Add(time.Minute), now); err != nil || !ok {
		t.Fatalf("claim after unclaim: %v, %v", ok, err)
	}
}
