package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/store"
)

// CacheGet implements store.Cache: the entry, marked used in the same
// statement.
func (s *Store) CacheGet(ctx context.Context, key string, now time.Time) (store.CacheEntry, error) {
	e := store.CacheEntry{Key: key}
	err := s.pool.QueryRow(ctx, `
UPDATE cache_entries SET used_at = $2 WHERE key = $1 AND expires_at > $2
RETURNING service, value, created_at, expires_at`, key, now).Scan(&e.Service, &e.Value, &e.CreatedAt, &e.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.CacheEntry{}, store.ErrNotFound
	}
	if err != nil {
		return store.CacheEntry{}, fmt.Errorf("reading a cache entry: %w", err)
	}
	e.CreatedAt, e.ExpiresAt = e.CreatedAt.UTC(), e.ExpiresAt.UTC()
	return e, nil
}

// CachePut implements store.Cache.
func (s *Store) CachePut(ctx context.Context, e store.CacheEntry, maxBytes int64) error {
	return s.cachePut(ctx, []store.CacheEntry{e}, maxBytes)
}

// cachePut upserts entries in one round trip, then, when due, deletes
// the least recently used entries past maxBytes in one statement (a
// running sum over the entries, most recent first).
func (s *Store) cachePut(ctx context.Context, entries []store.CacheEntry, maxBytes int64) error {
	now := time.Now().UTC()
	var b pgx.Batch
	var n int64
	for _, e := range entries {
		b.Queue(`
INSERT INTO cache_entries (key, service, value, bytes, created_at, expires_at, used_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (key) DO UPDATE SET service = EXCLUDED.service, value = EXCLUDED.value, bytes = EXCLUDED.bytes,
	created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at, used_at = EXCLUDED.used_at`,
			e.Key, e.Service, e.Value, len(e.Value), e.CreatedAt, e.ExpiresAt, now)
		n += int64(len(e.Value))
	}
	if err := s.pool.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("storing cache entries: %w", err)
	}
	if maxBytes <= 0 || !s.cacheEvictDue(n, maxBytes, now) {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `
DELETE FROM cache_entries WHERE key IN (
	SELECT key FROM (SELECT key, sum(bytes) OVER (ORDER BY used_at DESC, key) AS held FROM cache_entries) x
	WHERE held > $1)`, maxBytes); err != nil {
		return fmt.Errorf("evicting cache entries: %w", err)
	}
	return nil
}

// The eviction statement sums the whole table, so a node runs it once
// what it put since its last one reaches a sixteenth of the bound (the
// bound is passed by at most that much per node), or a second later.
const cacheEvictEvery = time.Second

// cacheEvictDue counts n bytes put at now and reports whether this node's
// eviction is due, taking its turn if so.
func (s *Store) cacheEvictDue(n, maxBytes int64, now time.Time) bool {
	since := s.cacheSince.Add(n)
	last := s.cacheEvicted.Load()
	if since < maxBytes/16 && now.UnixNano()-last < int64(cacheEvictEvery) {
		return false
	}
	if !s.cacheEvicted.CompareAndSwap(last, now.UnixNano()) {
		return false
	}
	s.cacheSince.Add(-since)
	return true
}

// CachePurge implements store.Cache.
func (s *Store) CachePurge(ctx context.Context, service string, now time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM cache_entries WHERE $1 = '' OR service = $1 OR expires_at <= $2`, service, now)
	if err != nil {
		return 0, fmt.Errorf("purging the cache: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// CacheStats implements store.Cache.
func (s *Store) CacheStats(ctx context.Context, now time.Time) ([]store.CacheStat, error) {
	rows, err := s.pool.Query(ctx, `
SELECT service, count(*), COALESCE(sum(bytes), 0) FROM cache_entries WHERE expires_at > $1 GROUP BY service ORDER BY service`, now)
	if err != nil {
		return nil, fmt.Errorf("counting the cache: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.CacheStat, error) {
		var st store.CacheStat
		err := r.Scan(&st.Service, &st.Entries, &st.Bytes)
		return st, err
	})
}

// CacheClaim implements store.Cache: a claim row, taken over once expired.
func (s *Store) CacheClaim(ctx context.Context, key string, until, now time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
INSERT INTO cache_claims (key, expires_at) VALUES ($1, $2)
ON CONFLICT (key) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE cache_claims.expires_at <= $3`, key, until, now)
	if err != nil {
		return false, fmt.Errorf("claiming live work: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// CacheUnclaim implements store.Cache.
func (s *Store) CacheUnclaim(ctx context.Context, key string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM cache_claims WHERE key = $1`, key); err != nil {
		return fmt.Errorf("dropping a claim of live work: %w", err)
	}
	return nil
}

// Interface guard
var _ store.Cache = (*Store)(nil)
