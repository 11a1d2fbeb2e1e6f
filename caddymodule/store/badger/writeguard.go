package badger

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/store"
)

// A full disk must refuse calls before their upstream work, not fail
// their settle after it: that would be upstream spend nobody pays for.
// And badger writes its value log and memtables through memory maps of
// preallocated, sparse files, so a write into a filesystem with no space
// left can kill the process (SIGBUS) rather than return an error. So the
// store keeps a reserve: while its filesystem has less than MinFreeBytes
// free, Writable refuses, before anything is written. A commit that fails
// anyway (an I/O error) makes Writable refuse too, until a probe write
// succeeds; any commit that succeeds clears it. Both recover by
// themselves when space returns.
const (
	// DefaultMinFreeBytes is the reserve: above what the writes in flight
	// when it is crossed can add (memtable flushes of 8 MiB, compactions
	// of the small LSM tree, the run documents of the calls under way).
	DefaultMinFreeBytes = 256 << 20
	statEvery           = 250 * time.Millisecond // free space is read at most this often
	probeEvery          = time.Second            // a failed store probes at most this often
)

// writeGuard is the store's view of whether it can write.
type writeGuard struct {
	dir     string
	minFree uint64 // 0: no reserve check
	// freeSpace reads the free bytes of dir's filesystem (statfs); tests
	// replace it to fill the disk.
	freeSpace func(dir string) (uint64, error)
	failed    atomic.Pointer[error] // the last failed commit, until a write succeeds

	mu        sync.Mutex
	checked   time.Time
	free      uint64
	statErr   error
	lastProbe time.Time
	probing   bool
}

func newWriteGuard(dir string, minFree int64) *writeGuard {
	g := &writeGuard{dir: dir, freeSpace: freeSpace}
	switch {
	case minFree == 0:
		g.minFree = DefaultMinFreeBytes
	case minFree > 0:
		g.minFree = uint64(minFree)
	}
	return g
}

// committed records the outcome of a commit: a failure makes the store
// unwritable, a success writable again.
func (g *writeGuard) committed(err error) {
	if err == nil {
		if g.failed.Load() != nil {
			g.failed.Store(nil)
		}
		return
	}
	g.failed.Store(&err)
}

// Writable reports whether a write can succeed now: nil, or an
// *store.UnwritableError saying why not. A store unwritable because a
// commit failed probes in the background, at most every probeEvery.
func (s *Store) Writable() error {
	g := s.guard
	now := time.Now()
	g.mu.Lock()
	if g.minFree > 0 && now.Sub(g.checked) >= statEvery {
		g.free, g.statErr = g.freeSpace(g.dir)
		g.checked = now
	}
	free, statErr := g.free, g.statErr
	failed := g.failed.Load()
	lowSpace := g.minFree > 0 && statErr == nil && free < g.minFree
	probe := failed != nil && !lowSpace && statErr == nil && !g.probing && now.Sub(g.lastProbe) >= probeEvery
	if probe {
		g.probing, g.lastProbe = true, now
	}
	g.mu.Unlock()

	switch {
	case g.minFree > 0 && statErr != nil:
		return &store.UnwritableError{Reason: store.ReasonWriteFailed, Err: fmt.Errorf("reading the free space of %s: %v", g.dir, statErr)}
	case lowSpace:
		return &store.UnwritableError{Reason: store.ReasonDiskFull,
			Err: fmt.Errorf("%d bytes free on the filesystem of %s, below the reserve of %d", free, g.dir, g.minFree)}
	case failed != nil:
		if probe {
			go s.probeWrite()
		}
		return &store.UnwritableError{Reason: store.ReasonWriteFailed, Err: *failed}
	}
	return nil
}

// probeWrite writes and syncs one small marker key: the store is writable
// again when it commits.
func (s *Store) probeWrite() {
	s.dropMu.RLock()
	err := s.db.Update(func(txn *bdb.Txn) error {
		if err := s.injected(); err != nil {
			return err
		}
		return txn.Set([]byte{pMarker, 'p'}, []byte(time.Now().UTC().Format(time.RFC3339Nano)))
	})
	s.dropMu.RUnlock()
	s.guard.committed(err)
	s.guard.mu.Lock()
	s.guard.probing = false
	s.guard.mu.Unlock()
}

// injected is the write fault tests inject at the store's file layer:
// every commit and probe fails with it while it is set.
func (s *Store) injected() error {
	if f := s.writeFault.Load(); f != nil {
		return *f
	}
	return nil
}

// Interface guards
var _ store.WriteChecker = (*Store)(nil)
