package badger

import (
	"strings"
	"sync"
)

// The store keeps the API form of the settled runs GetRunJSON last served
// in memory, so that reading a run again (GET /v1/extractions/{id}, its
// /records pages, an idempotent replay) copies bytes instead of opening a
// badger transaction, looking the run up in the LSM tree and decompressing
// its document: under a stream of GETs of one run those were most of the
// handler's CPU besides writing the answer.
//
// A settled run's document is written twice at most, and only through this
// Store (a badger directory is opened by one process once): Settle stores
// it where no run is (ErrExists otherwise), so no cached run is ever
// overwritten by a settle, and retention rewrites it without its records
// (ExpireRuns). Restore and import write into a store no gateway has open.
// A retention pass therefore brackets its transaction with beginWrite and
// endWrite, and drops each run it expires before it commits and again
// after: no read started meanwhile fills the cache, so once the pass
// returned no read serves the records it removed.

// DefaultRunCacheBytes bounds the run documents kept in memory: a few
// hundred runs of ten records.
const DefaultRunCacheBytes = 8 << 20

// runRef names a stored run: its account and its id.
type runRef struct{ account, id string }

// runCache holds run documents in their API form by run, least recently
// used evicted first once their bytes pass max. Entries are never changed
// once stored, so a reader copies one outside the lock. A nil *runCache
// caches nothing.
type runCache struct {
	mu    sync.Mutex
	items *lru[runRef, []byte]
	bytes int // the bytes of items' values
	max   int
	gate  writeGate // retention's rewrites
}

func newRunCache(maxBytes int) *runCache {
	if maxBytes <= 0 {
		return nil
	}
	// Bounded in bytes, not entries: the lru's own bound never applies.
	return &runCache{items: newLRU[runRef, []byte](int(^uint(0)>>1), nil), max: maxBytes}
}

// appendTo appends the cached document of ref to dst.
func (c *runCache) appendTo(dst []byte, ref runRef) ([]byte, bool) {
	if c == nil {
		return dst, false
	}
	c.mu.Lock()
	doc, ok := c.items.get(ref)
	c.mu.Unlock()
	if !ok {
		return dst, false
	}
	return append(dst, doc...), true
}

// token is taken before a read that may fill the cache.
func (c *runCache) token() uint64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gate.seq
}

// fill caches a copy of doc, ref's document read from badger since tok was
// taken, unless a run write began or ended since, or is in flight. A
// document larger than an eighth of the bound is not kept: it would evict
// many runs for one.
func (c *runCache) fill(tok uint64, ref runRef, doc []byte) {
	if c == nil || len(doc) > c.max/8 {
		return
	}
	kept := append([]byte(nil), doc...)
	ref = runRef{strings.Clone(ref.account), strings.Clone(ref.id)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.gate.open(tok) {
		return
	}
	if old, ok := c.items.remove(ref); ok {
		c.bytes -= len(old)
	}
	c.items.put(ref, kept)
	c.bytes += len(kept)
	for c.bytes > c.max {
		k, v, ok := c.items.oldest()
		if !ok {
			break
		}
		c.items.remove(k)
		c.bytes -= len(v)
	}
}

// close empties the cache for good, when its store closes: a closed
// store serves no run from memory, and a read still in flight fills
// nothing (a write begun and never ended keeps the gate shut).
func (c *runCache) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gate.begin()
	c.items = newLRU[runRef, []byte](int(^uint(0)>>1), nil)
	c.bytes = 0
}

// beginWrite is called before a transaction that may rewrite runs
// commits, endWrite once it has committed or failed, with the runs it may
// have rewritten: no read in between fills the cache.
func (c *runCache) beginWrite() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gate.begin()
}

func (c *runCache) endWrite(refs []runRef) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gate.end()
	for _, ref := range refs {
		c.dropLocked(ref)
	}
}

// drop removes ref's document, inside a write bracketed by beginWrite and
// endWrite, before that write commits.
func (c *runCache) drop(ref runRef) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(ref)
}

func (c *runCache) dropLocked(ref runRef) {
	if v, ok := c.items.remove(ref); ok {
		c.bytes -= len(v)
	}
}
