// Package cache is the freshness cache of records bought once (issue 36):
// entries of normalized records by input (or by whole request) in the
// store (store.Cache), each served again to callers who accept its age,
// and the joining of identical live work in flight (flight.go), so two
// callers asking for the same input at once start one upstream job. It
// knows nothing of HTTP or billing: the API decides what to look up,
// routes what is missing and bills what it serves.
package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/store"
)

// Entry is what the cache keeps of one input (or one whole request): the
// records an offer produced, when, and how many were asked.
type Entry struct {
	// Offer served the records.
	Offer string `json:"offer"`
	// At is when the records were fetched.
	At time.Time `json:"at"`
	// Window is the records asked of the upstream for this input (0: no
	// limit); Complete, that the records are all there are (fewer than
	// asked, or the service's records_per_input).
	Window   int               `json:"window,omitempty"`
	Complete bool              `json:"complete,omitempty"`
	Records  []json.RawMessage `json:"records"`
}

// Serves reports whether e answers a call wanting need records of its
// input (0: all of them) from offer pin (nil: any offer).
func (e *Entry) Serves(need int, pin *registry.Offer) bool {
	if pin != nil && pin.ID != e.Offer {
		return false
	}
	return e.Complete || need > 0 && len(e.Records) >= need
}

// Counters are the cache's figures since start (metrics, stats).
type Counters struct {
	Hits, Misses, Joins, Stored atomic.Int64
	// AvoidedMicros is the upstream spend avoided: the live price of the
	// records served from cache or joined work, in micro-credits.
	AvoidedMicros atomic.Int64
}

// Cache is the freshness cache over a store. It is safe for concurrent
// use and outlives config reloads (the flights in progress must).
type Cache struct {
	st       store.Cache
	maxBytes int64
	// claimFor bounds a claim of live work in the shared store: a node
	// that dies while working frees its inputs after it.
	claimFor time.Duration

	mu      sync.Mutex
	flights map[string]*flight

	Counters
}

// New returns a cache over st keeping at most maxBytes (0: unbounded);
// claimFor bounds a claim of live work (the longest a call may take).
func New(st store.Cache, maxBytes int64, claimFor time.Duration) *Cache {
	if claimFor <= 0 {
		claimFor = 5 * time.Minute
	}
	return &Cache{st: st, maxBytes: maxBytes, claimFor: claimFor, flights: map[string]*flight{}}
}

// Store is the store the cache keeps its entries in.
func (c *Cache) Store() store.Cache { return c.st }

// SetMaxBytes changes the bound (a reload).
func (c *Cache) SetMaxBytes(n int64) { c.mu.Lock(); c.maxBytes = n; c.mu.Unlock() }

// InputKey is the key of one input's records of svc with options: the
// service's record shape and normalizers (CacheGen), so a reload that
// changes them never serves old-shape records, and the input in the form
// inputs are matched in.
func InputKey(svc *registry.Service, input string, options map[string]any) string {
	return key(svc, "i", matchForm(input), options, 0)
}

// RequestKey is the key of a whole request whose records cannot be told
// apart by input: its inputs in order, options and limit.
func RequestKey(svc *registry.Service, inputs []string, options map[string]any, limit int) string {
	forms := make([]string, len(inputs))
	for i, in := range inputs {
		forms[i] = matchForm(in)
	}
	return key(svc, "r", strings.Join(forms, "\x00"), options, limit)
}

func key(svc *registry.Service, kind, inputs string, options map[string]any, limit int) string {
	opts, _ := json.Marshal(options) // maps marshal with sorted keys
	h := sha256.New()
	for _, p := range []string{svc.CacheGen, svc.Key, kind, inputs, string(opts), strconv.Itoa(limit)} {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return svc.Key + ":" + hex.EncodeToString(h.Sum(nil)[:16])
}

// matchForm is the form an input is keyed and matched in: case and a
// trailing slash do not matter (as the router matches upstream items).
func matchForm(s string) string {
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(s), "/"))
}

// SameInput reports whether two inputs are the same for the cache.
func SameInput(a, b string) bool { return matchForm(a) == matchForm(b) }

// Get returns the entry of key if it was fetched at most maxAge before
// now; a store error is a miss (the call goes live).
func (c *Cache) Get(ctx context.Context, key string, now time.Time, maxAge time.Duration) (*Entry, bool) {
	se, err := c.st.CacheGet(ctx, key, now)
	if err != nil {
		return nil, false
	}
	var e Entry
	if !decodeEntry(se.Value, &e) || now.Sub(e.At) > maxAge {
		return nil, false
	}
	return &e, true
}

// Keep stores an entry Encode made on its own, within the bound (a live
// call's entries are stored with its run instead: store.Settlement.Cache).
func (c *Cache) Keep(ctx context.Context, se store.CacheEntry) error {
	return c.st.CachePut(ctx, se, c.MaxBytes())
}

// Encode is e as the store keeps it under key of service svc, for svc's
// keep time, counted as stored: what a settle stores with its run
// (store.Settlement.Cache), or Keep on its own. ok is false when there is
// nothing to store (svc not cacheable, no records) or err says why not.
func (c *Cache) Encode(key string, svc *registry.Service, e *Entry) (se store.CacheEntry, ok bool, err error) {
	if svc.Cache == nil || len(e.Records) == 0 {
		return se, false, nil
	}
	b := encodeEntry(e)
	if maxBytes := c.MaxBytes(); maxBytes > 0 && int64(len(b)) > maxBytes {
		return se, false, errors.New("the entry is larger than cache_max_bytes")
	}
	c.Stored.Add(1)
	return store.CacheEntry{Key: key, Service: svc.Key, Value: b,
		CreatedAt: e.At, ExpiresAt: e.At.Add(time.Duration(svc.Cache.Keep) * time.Second)}, true, nil
}

// MaxBytes is the bound on the entries' bytes (0: none).
func (c *Cache) MaxBytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxBytes
}

// Purge deletes the entries of service ("": all) and the expired ones.
func (c *Cache) Purge(ctx context.Context, service string) (int, error) {
	return c.st.CachePurge(ctx, service, time.Now().UTC())
}

// Stats is what the cache holds and has done.
type Stats struct {
	Services      []store.CacheStat `json:"services"`
	Entries       int64             `json:"entries"`
	Bytes         int64             `json:"bytes"`
	MaxBytes      int64             `json:"max_bytes"`
	Hits          int64             `json:"hits"`
	Misses        int64             `json:"misses"`
	Joins         int64             `json:"joins"`
	Stored        int64             `json:"stored"`
	AvoidedMicros int64             `json:"upstream_spend_avoided_micros"`
}

// Stats reads the store's entries and this process's counters.
func (c *Cache) Stats(ctx context.Context) (Stats, error) {
	svcs, err := c.st.CacheStats(ctx, time.Now().UTC())
	if err != nil {
		return Stats{}, err
	}
	c.mu.Lock()
	st := Stats{Services: svcs, MaxBytes: c.maxBytes}
	c.mu.Unlock()
	if st.Services == nil {
		st.Services = []store.CacheStat{}
	}
	for _, s := range svcs {
		st.Entries += s.Entries
		st.Bytes += s.Bytes
	}
	st.Hits, st.Misses, st.Joins = c.Hits.Load(), c.Misses.Load(), c.Joins.Load()
	st.Stored, st.AvoidedMicros = c.Stored.Load(), c.AvoidedMicros.Load()
	return st, nil
}
