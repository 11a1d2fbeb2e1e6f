package badger

import (
	"container/list"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/store"
)

// The freshness cache's entries (store.Cache): C key → created (8 bytes,
// Unix ms), service NUL, value; badger drops an entry at its expiry (TTL).
// One process holds a badger store, so which entries were used last, and
// how many bytes they hold, is kept in memory (cacheIndex), read from the stored
// entries once on first use; a restart forgets the order of use, not the
// entries. Backup leaves the prefix out: entries are rebuildable.
const pCache = 'C'

func cacheKey(k string) []byte { return join(pCache, k) }

// cacheIndex is the in-memory index of the stored entries, most recently used
// first.
type cacheIndex struct {
	mu     sync.Mutex
	loaded bool
	order  *list.List               // of *lruItem
	items  map[string]*list.Element // key → element
	bytes  int64
}

type lruItem struct {
	key, service string
	bytes        int64
	expires      time.Time
}

// load indexes the stored entries once; l.mu is held.
func (s *Store) lruLoad() error {
	l := &s.cacheLRU
	if l.loaded {
		return nil
	}
	l.order, l.items, l.bytes = list.New(), map[string]*list.Element{}, 0
	err := s.db.View(func(txn *bdb.Txn) error {
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: []byte{pCache}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			err := item.Value(func(v []byte) error {
				_, svc, val, err := decodeCacheValue(v)
				if err != nil {
					return err
				}
				key := string(item.Key()[1:])
				l.items[key] = l.order.PushBack(&lruItem{key: key, service: svc, bytes: int64(len(val)),
					expires: time.Unix(int64(item.ExpiresAt()), 0)})
				l.bytes += int64(len(val))
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	l.loaded = err == nil
	return err
}

func encodeCacheValue(e store.CacheEntry) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 9+len(e.Service)+len(e.Value)), uint64(e.CreatedAt.UnixMilli()))
	b = append(append(b, e.Service...), 0)
	return append(b, e.Value...)
}

func decodeCacheValue(v []byte) (created time.Time, service string, value []byte, err error) {
	if len(v) < 9 {
		return time.Time{}, "", nil, errors.New("short cache entry")
	}
	created = time.UnixMilli(int64(binary.BigEndian.Uint64(v))).UTC()
	rest := v[8:]
	for i, c := range rest {
		if c == 0 {
			return created, string(rest[:i]), rest[i+1:], nil
		}
	}
	return time.Time{}, "", nil, errors.New("cache entry without its service")
}

// CacheGet implements store.Cache.
func (s *Store) CacheGet(ctx context.Context, key string, now time.Time) (store.CacheEntry, error) {
	var e store.CacheEntry
	err := s.db.View(func(txn *bdb.Txn) error {
		item, err := txn.Get(cacheKey(key))
		if errors.Is(err, bdb.ErrKeyNotFound) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		e.ExpiresAt = time.Unix(int64(item.ExpiresAt()), 0).UTC()
		if !now.Before(e.ExpiresAt) {
			return store.ErrNotFound
		}
		return item.Value(func(v []byte) error {
			created, svc, val, err := decodeCacheValue(v)
			e.CreatedAt, e.Service, e.Value = created, svc, append([]byte(nil), val...)
			return err
		})
	})
	if err != nil {
		return store.CacheEntry{}, err
	}
	e.Key = key
	l := &s.cacheLRU
	l.mu.Lock()
	if el, ok := l.items[key]; ok {
		l.order.MoveToFront(el)
	}
	l.mu.Unlock()
	return e, nil
}

// CachePut implements store.Cache.
func (s *Store) CachePut(ctx context.Context, e store.CacheEntry, maxBytes int64) error {
	if !cacheKeeps(e) {
		return nil
	}
	if err := s.cacheReady(); err != nil {
		return err
	}
	// The commit runs outside the index's lock, so concurrent puts (and
	// settles) share badger's commits and their syncs instead of queueing
	// one sync each behind the lock.
	if err := s.update(ctx, func(txn *bdb.Txn) error { return setCacheEntry(txn, e) }); err != nil {
		return fmt.Errorf("storing a cache entry: %w", err)
	}
	return s.cacheStored(ctx, []store.CacheEntry{e}, maxBytes)
}

// cacheKeeps reports whether e is worth storing: at least a second left.
func cacheKeeps(e store.CacheEntry) bool { return time.Until(e.ExpiresAt) >= time.Second }

// cacheReady loads the entries' index from the store once, before the
// first write that must update it.
func (s *Store) cacheReady() error {
	l := &s.cacheLRU
	l.mu.Lock()
	err := s.lruLoad()
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("indexing the cache: %v", err)
	}
	return nil
}

// setCacheEntry writes e in txn, expiring with it.
func setCacheEntry(txn *bdb.Txn, e store.CacheEntry) error {
	return txn.SetEntry(bdb.NewEntry(cacheKey(e.Key), encodeCacheValue(e)).WithTTL(time.Until(e.ExpiresAt)))
}

// cacheStored indexes entries a commit stored, most recent first, then
// evicts the least recently used while the entries hold more than
// maxBytes (0: no bound).
func (s *Store) cacheStored(ctx context.Context, entries []store.CacheEntry, maxBytes int64) error {
	l := &s.cacheLRU
	l.mu.Lock()
	for _, e := range entries {
		if el, ok := l.items[e.Key]; ok {
			l.bytes -= el.Value.(*lruItem).bytes
			l.order.Remove(el)
		}
		l.items[e.Key] = l.order.PushFront(&lruItem{key: e.Key, service: e.Service, bytes: int64(len(e.Value)), expires: e.ExpiresAt})
		l.bytes += int64(len(e.Value))
	}
	var evict []string
	for maxBytes > 0 && l.bytes > maxBytes && l.order.Len() > 0 {
		it := l.order.Remove(l.order.Back()).(*lruItem)
		delete(l.items, it.key)
		l.bytes -= it.bytes
		evict = append(evict, it.key)
	}
	// Deleted under the lock (a put of an evicted key must not land
	// between): only when the bound is passed.
	defer l.mu.Unlock()
	return s.deleteCache(ctx, evict)
}

// deleteCache deletes the entries of keys.
func (s *Store) deleteCache(ctx context.Context, keys []string) error {
	for len(keys) > 0 {
		n := min(len(keys), 1000)
		err := s.update(ctx, func(txn *bdb.Txn) error {
			for _, k := range keys[:n] {
				if err := txn.Delete(cacheKey(k)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("evicting cache entries: %w", err)
		}
		keys = keys[n:]
	}
	return nil
}

// CachePurge implements store.Cache.
func (s *Store) CachePurge(ctx context.Context, service string, now time.Time) (int, error) {
	l := &s.cacheLRU
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := s.lruLoad(); err != nil {
		return 0, fmt.Errorf("indexing the cache: %v", err)
	}
	var keys []string
	for el := l.order.Front(); el != nil; {
		next := el.Next()
		it := el.Value.(*lruItem)
		if service == "" || it.service == service || !now.Before(it.expires) {
			keys = append(keys, it.key)
			l.order.Remove(el)
			delete(l.items, it.key)
			l.bytes -= it.bytes
		}
		el = next
	}
	return len(keys), s.deleteCache(ctx, keys)
}

// CacheStats implements store.Cache.
func (s *Store) CacheStats(ctx context.Context, now time.Time) ([]store.CacheStat, error) {
	l := &s.cacheLRU
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := s.lruLoad(); err != nil {
		return nil, fmt.Errorf("indexing the cache: %v", err)
	}
	by := map[string]*store.CacheStat{}
	for el := l.order.Front(); el != nil; el = el.Next() {
		it := el.Value.(*lruItem)
		if !now.Before(it.expires) {
			continue
		}
		st := by[it.service]
		if st == nil {
			st = &store.CacheStat{Service: it.service}
			by[it.service] = st
		}
		st.Entries++
		st.Bytes += it.bytes
	}
	out := make([]store.CacheStat, 0, len(by))
	for _, st := range by {
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Service < out[j].Service })
	return out, nil
}

// Interface guard
var _ store.Cache = (*Store)(nil)

// CacheClaim implements store.Cache: one process holds a badger store,
// and the cache joins its own work in memory.
func (s *Store) CacheClaim(ctx context.Context, key string, until, now time.Time) (bool, error) {
	return true, nil
}

// CacheUnclaim implements store.Cache.
func (s *Store) CacheUnclaim(ctx context.Context, key string) error { return nil }
