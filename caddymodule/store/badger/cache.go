package badger

import (
	"hash/maphash"
	"sync"

	"socialrouter/caddymodule/store"
)

// The store keeps the keys and the accounts it last read or wrote in
// memory, so that a request's authentication (KeyByHash) and balance
// pre-check (GetAccount) do not open badger transactions, which wait for
// every commit in flight (badger's commit watermark) and so for the settle
// batch being fsynced.
//
// This is sound because a badger directory is opened by one process once
// and every write goes through this Store: the caches are told of each
// write. A read served from memory never shows a state older than the last
// write that returned: a key write (CreateKey, SetKeyLimit, RevokeKey)
// drops the key from memory before it commits and again after, and no read
// started meanwhile may fill it back in, so a revocation is seen by the
// next request; account writes (CreateAccount, AddCredits, Settle) all go
// through the settle queue, whose leader is the only one to update the
// accounts in memory, in commit order: it lowers a balance before the
// commit that debits it and raises one after the commit that credits it,
// so a balance read from memory is never higher than the committed one.
// Reads that miss fill the caches only if no write that could concern
// them began or ended while they read. Both caches are bounded, least
// recently used entries evicted first.

// Default cache sizes, in entries: about 400 bytes per key and 150 per
// account, so a few MiB at most.
const (
	DefaultKeyCacheSize     = 16384
	DefaultAccountCacheSize = 16384
)

// lru is a bounded map that evicts its least recently used entry. It is
// not safe for concurrent use.
type lru[K comparable, V any] struct {
	max     int
	items   map[K]*lruEntry[K, V]
	ring    lruEntry[K, V] // ring.next is the most recently used
	onEvict func(K, V)
}

type lruEntry[K comparable, V any] struct {
	key        K
	val        V
	prev, next *lruEntry[K, V]
}

func newLRU[K comparable, V any](max int, onEvict func(K, V)) *lru[K, V] {
	l := &lru[K, V]{max: max, items: map[K]*lruEntry[K, V]{}, onEvict: onEvict}
	l.ring.prev, l.ring.next = &l.ring, &l.ring
	return l
}

func (l *lru[K, V]) unlink(e *lruEntry[K, V]) {
	e.prev.next, e.next.prev = e.next, e.prev
}

func (l *lru[K, V]) pushFront(e *lruEntry[K, V]) {
	e.prev, e.next = &l.ring, l.ring.next
	l.ring.next.prev = e
	l.ring.next = e
}

// get returns the value under k and marks it most recently used.
func (l *lru[K, V]) get(k K) (V, bool) {
	e, ok := l.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	l.unlink(e)
	l.pushFront(e)
	return e.val, true
}

// put sets the value under k, evicting the least recently used entry
// beyond max.
func (l *lru[K, V]) put(k K, v V) {
	if e, ok := l.items[k]; ok {
		e.val = v
		l.unlink(e)
		l.pushFront(e)
		return
	}
	e := &lruEntry[K, V]{key: k, val: v}
	l.items[k] = e
	l.pushFront(e)
	if len(l.items) > l.max {
		last := l.ring.prev
		l.unlink(last)
		delete(l.items, last.key)
		if l.onEvict != nil {
			l.onEvict(last.key, last.val)
		}
	}
}

// remove drops k and returns its value.
func (l *lru[K, V]) remove(k K) (V, bool) {
	e, ok := l.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	l.unlink(e)
	delete(l.items, k)
	return e.val, true
}

// oldest returns the least recently used entry, leaving it in place.
func (l *lru[K, V]) oldest() (K, V, bool) {
	if len(l.items) == 0 {
		var k K
		var v V
		return k, v, false
	}
	e := l.ring.prev
	return e.key, e.val, true
}

func (l *lru[K, V]) len() int { return len(l.items) }

// keyCache holds keys by digest, with an index by id. A nil *keyCache
// caches nothing.
type keyCache struct {
	mu     sync.Mutex
	byHash *lru[[32]byte, store.Key]
	byID   map[string][32]byte
	gate   writeGate // key writes
}

// writeGate tells a read that missed a cache whether it may fill it: seq
// changes when a write the cache could hold begins or ends, writing counts
// those in flight, and a read fills the cache only if neither moved while
// it read. Its methods run under the lock of the cache it guards.
type writeGate struct {
	seq     uint64
	writing int
}

func (g *writeGate) begin() { g.writing++; g.seq++ }
func (g *writeGate) end()   { g.writing--; g.seq++ }

// open reports whether a read that took tok (seq, when it began) may fill
// the cache.
func (g *writeGate) open(tok uint64) bool { return g.writing == 0 && g.seq == tok }

func newKeyCache(size int) *keyCache {
	if size <= 0 {
		return nil
	}
	c := &keyCache{byID: map[string][32]byte{}}
	c.byHash = newLRU(size, func(_ [32]byte, k store.Key) { delete(c.byID, k.ID) })
	return c
}

// cloneKey copies the fields a caller could change through a pointer, so
// that no caller shares memory with the cache.
func cloneKey(k store.Key) store.Key {
	if k.RevokedAt != nil {
		t := *k.RevokedAt
		k.RevokedAt = &t
	}
	if k.CreditLimit != nil {
		l := *k.CreditLimit
		k.CreditLimit = &l
	}
	return k
}

// byDigest returns the cached key with this digest.
func (c *keyCache) byDigest(h [32]byte) (store.Key, bool) {
	if c == nil {
		return store.Key{}, false
	}
	c.mu.Lock()
	k, ok := c.byHash.get(h)
	c.mu.Unlock()
	return cloneKey(k), ok
}

// byKeyID returns the cached key with this id.
func (c *keyCache) byKeyID(id string) (store.Key, bool) {
	if c == nil {
		return store.Key{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.byID[id]
	if !ok {
		return store.Key{}, false
	}
	k, ok := c.byHash.get(h)
	return cloneKey(k), ok
}

// token is taken before a read that may fill the cache.
func (c *keyCache) token() uint64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gate.seq
}

// fill caches k, read from badger since tok was taken, unless a key write
// began or ended since, or is in flight.
func (c *keyCache) fill(tok uint64, k store.Key) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.gate.open(tok) {
		return
	}
	c.byHash.put(k.Hash, cloneKey(k))
	c.byID[k.ID] = k.Hash
}

// drop removes the key with this id.
func (c *keyCache) drop(id string) {
	if h, ok := c.byID[id]; ok {
		c.byHash.remove(h)
		delete(c.byID, id)
	}
}

// beginWrite is called before a write of key id commits, endWrite once it
// has committed or failed: each drops the key, and no read in between
// fills the cache.
func (c *keyCache) beginWrite(id string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gate.begin()
	c.drop(id)
}

func (c *keyCache) endWrite(id string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gate.end()
	c.drop(id)
}

// accountCache holds accounts by id. Only the settle queue's leader writes
// accounts, one batch at a time; the accounts of the batch in flight are
// marked on their stripe (a stripe covers the accounts whose id hashes to
// it), and a read that missed fills the cache only if its stripe had no
// batch in flight and saw none begin or end while it read. A nil
// *accountCache caches nothing.
type accountCache struct {
	mu      sync.Mutex
	items   *lru[string, store.Account]
	seed    maphash.Seed
	stripes [64]struct {
		seq  uint64
		busy int
	}
}

// accountToken is taken before a read that may fill the cache.
type accountToken struct {
	stripe int
	seq    uint64
}

func newAccountCache(size int) *accountCache {
	if size <= 0 {
		return nil
	}
	return &accountCache{items: newLRU[string, store.Account](size, nil), seed: maphash.MakeSeed()}
}

func (c *accountCache) stripe(id string) int {
	return int(maphash.String(c.seed, id) % uint64(len(c.stripes)))
}

// get returns the cached account.
func (c *accountCache) get(id string) (store.Account, bool) {
	if c == nil {
		return store.Account{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.items.get(id)
}

func (c *accountCache) token(id string) accountToken {
	if c == nil {
		return accountToken{}
	}
	i := c.stripe(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	return accountToken{stripe: i, seq: c.stripes[i].seq}
}

// fill caches a, read from badger since tok was taken, unless a batch
// touching its stripe began or ended since or is in flight, or the leader
// already cached the account.
func (c *accountCache) fill(tok accountToken, a store.Account) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &c.stripes[tok.stripe]
	if st.busy > 0 || st.seq != tok.seq {
		return
	}
	if _, ok := c.items.items[a.ID]; !ok {
		c.items.put(a.ID, a)
	}
}

// begin marks the accounts of a batch about to be written; end unmarks
// them once the batch committed or failed and the cache was updated.
func (c *accountCache) begin(ids []string) { c.mark(ids, 1) }
func (c *accountCache) end(ids []string)   { c.mark(ids, -1) }

func (c *accountCache) mark(ids []string, d int) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		st := &c.stripes[c.stripe(id)]
		st.busy += d
		st.seq++
	}
}

// accountWrite is what a batch does to one account it reads: its
// committed state before the batch and its state after it; existed and
// exists tell whether the account was there before and is after (a batch
// may create it).
type accountWrite struct {
	before, after   store.Account
	existed, exists bool
}

// each calls fn with every write of a batch, under the cache's lock; a nil
// cache (caching off) does nothing.
func (c *accountCache) each(ws map[string]*accountWrite, fn func(id string, w *accountWrite)) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, w := range ws {
		fn(id, w)
	}
}

// lower caches, before the batch commits, the balances it lowers: until
// the commit lands, the cache is below the committed balance, never above.
func (c *accountCache) lower(ws map[string]*accountWrite) {
	c.each(ws, func(id string, w *accountWrite) {
		if w.existed && w.after.Balance < w.before.Balance {
			c.items.put(id, w.after)
		}
	})
}

// committed caches the accounts as the batch left them, once it has
// committed.
func (c *accountCache) committed(ws map[string]*accountWrite) {
	c.each(ws, func(id string, w *accountWrite) {
		if w.exists {
			c.items.put(id, w.after)
		}
	})
}

// failed drops the accounts of a batch that did not commit, which lower
// may have cached.
func (c *accountCache) failed(ws map[string]*accountWrite) {
	c.each(ws, func(id string, _ *accountWrite) { c.items.remove(id) })
}
