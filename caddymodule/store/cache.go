package store

import (
	"context"
	"time"
)

// Cache is the store's part of the freshness cache (caddymodule/cache):
// opaque entries by key, each of one service, kept until ExpiresAt and
// bounded in bytes, the least recently used evicted first. Entries are
// rebuildable data: retention, export and backup leave them out. Both
// stores implement it; the cache reaches it by type assertion, so a
// store without it simply has no cache.
type Cache interface {
	// CacheGet returns the entry of key and marks it used at now;
	// ErrNotFound when absent or expired at now.
	CacheGet(ctx context.Context, key string, now time.Time) (CacheEntry, error)
	// CachePut stores e (replacing an entry of the same key), then, when
	// maxBytes > 0, evicts the least recently used entries until the
	// entries' values hold at most maxBytes.
	CachePut(ctx context.Context, e CacheEntry, maxBytes int64) error
	// CachePurge deletes the entries of service ("" every service) and
	// every expired one at now, and returns how many it deleted.
	CachePurge(ctx context.Context, service string, now time.Time) (int, error)
	// CacheStats counts the live entries at now and their bytes, by
	// service.
	CacheStats(ctx context.Context, now time.Time) ([]CacheStat, error)
	// CacheClaim claims the live work of key until until: true when no
	// other unexpired claim holds it, so the caller does the work and
	// others wait for its entry. A store one process holds may always
	// answer true (the cache joins that process's work in memory).
	CacheClaim(ctx context.Context, key string, until, now time.Time) (bool, error)
	// CacheUnclaim drops the claim of key.
	CacheUnclaim(ctx context.Context, key string) error
}

// CacheEntry is one cache entry as stored.
type CacheEntry struct {
	Key     string
	Service string
	Value   []byte
	// CreatedAt is when its records were fetched; ExpiresAt when it stops
	// being served.
	CreatedAt time.Time
	ExpiresAt time.Time
}

// CacheStat is what a service's live entries hold.
type CacheStat struct {
	Service string `json:"service"`
	Entries int64  `json:"entries"`
	Bytes   int64  `json:"bytes"`
}
