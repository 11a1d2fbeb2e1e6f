package badger

import (
	"path/filepath"
	"sync"
	"sync/atomic"
)

// Badger writes and reads its value log through shared memory maps of the
// log files, so every run document written or read stays in the process's
// resident set (as file-backed pages) until the kernel needs the memory:
// with run documents in the value log, the resident set would grow by
// every byte settled. The trimmer drops those pages from the process's
// mappings (madvise MADV_DONTNEED) once trimEvery bytes of documents have
// been written or read since the last trim. On a shared file mapping this
// loses nothing: the pages stay in the page cache, dirty ones included, and
// the next access maps them again; msync still writes them out.
//
// It only ever advises the first ValueLogFileSize bytes of a mapping of one
// of this store's value log files, which badger never moves or shrinks
// while the database is open: a file is mapped at twice that size,
// shrunk only when it is sealed, past ValueLogFileSize (or at Close, which
// stops the trimmer first), and grown only by a single write larger than
// ValueLogFileSize; value log GC (run retention), which rewrites, unmaps
// and deletes files, runs only under the trimmer's lock (exclusive).
const trimEvery = 8 << 20

// trimmer trims the value log mappings in the background.
type trimmer struct {
	dir     string // the value log directory, symlinks resolved
	limit   uint64 // badger's ValueLogFileSize
	pending atomic.Int64
	kick    chan struct{}

	mu      sync.Mutex // held while trimming; stop sets closed under it
	closed  bool
	stopped chan struct{}
	trimmed atomic.Int64 // bytes of mappings advised, for tests
}

// newTrimmer starts a trimmer of dir's value log, nil where trimming is
// not supported.
func newTrimmer(dir string, limit int64) *trimmer {
	if !trimSupported {
		return nil
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	t := &trimmer{dir: dir, limit: uint64(limit), kick: make(chan struct{}, 1), stopped: make(chan struct{})}
	go t.loop()
	return t
}

// note counts n bytes of documents written or read, and wakes the trimmer
// every trimEvery bytes.
func (t *trimmer) note(n int) {
	if t == nil {
		return
	}
	if t.pending.Add(int64(n)) >= trimEvery {
		select {
		case t.kick <- struct{}{}:
		default:
		}
	}
}

func (t *trimmer) loop() {
	defer close(t.stopped)
	for range t.kick {
		t.pending.Store(0)
		if !t.trim() {
			return
		}
	}
}

// trim advises the mappings now, unless stopped; it reports whether the
// trimmer still runs.
func (t *trimmer) trim() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	n, _ := trimVlog(t.dir, t.limit) // best effort: an error only leaves pages resident
	t.trimmed.Add(int64(n))
	return true
}

// exclusive runs fn while no trim is under way (value log GC, which
// unmaps and deletes files); on a nil or stopped trimmer it just runs fn.
func (t *trimmer) exclusive(fn func() error) error {
	if t == nil {
		return fn()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return fn()
}

// stop waits for a trim in progress and stops the trimmer; it must return
// before badger closes its files.
func (t *trimmer) stop() {
	if t == nil {
		return
	}
	t.mu.Lock()
	already := t.closed
	t.closed = true
	t.mu.Unlock()
	if !already {
		close(t.kick)
		<-t.stopped
	}
}
