// Package badger is the embedded store.Store: one process, one directory,
// built on badger v4. Every commit is fsynced by default because a commit is
// money. Settles are serialized inside the process, so badger's optimistic
// transactions never storm on a hot account, and group-committed, so one
// fsync covers every settle that waited for it.
//
// A badger directory may be opened by one process once; the caddymodule
// package shares the handle across config reloads. Because every write goes
// through the one Store, it keeps keys and balances in bounded caches that
// each write updates (cache.go), so authenticating a request and checking
// its balance do not wait for the commit in flight. Run documents live in
// badger's value log, whose pages the store drops from the resident set as
// it goes (vlogtrim.go), and GetRunJSON serves them as stored (runjson.go),
// those it served lately from memory (runcache.go).
package badger

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bdb "github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"

	"socialrouter/caddymodule/store"
)

// Options tunes the store; the zero value is the production default.
type Options struct {
	// NoSync skips the fsync of each commit: faster, but a machine crash can
	// lose the last settled runs and their charges. Default false: a Settle
	// that returned is on disk.
	NoSync bool
	// Logger receives badger's errors and warnings (its info lines at debug
	// level). Default nil: badger logs nothing.
	Logger *zap.Logger
	// KeyCacheSize and AccountCacheSize bound the keys and accounts kept
	// in memory for authentication and balance checks, in entries.
	// Default 0: DefaultKeyCacheSize, DefaultAccountCacheSize; negative:
	// no cache.
	KeyCacheSize     int
	AccountCacheSize int
	// RunCacheBytes bounds the run documents GetRunJSON keeps in memory
	// (runcache.go), in bytes. Default 0: DefaultRunCacheBytes; negative:
	// no cache.
	RunCacheBytes int
	// ValueLogFileSize is the size of one value log file, the unit in
	// which value-log GC gives the space of expired records back. Default
	// 0: badger's, 1 GiB; the tests and the benchmark set smaller ones.
	ValueLogFileSize int64
	// MinFreeBytes is the free space the store keeps in reserve on its
	// filesystem: below it Writable refuses, so calls fail before their
	// upstream work instead of their settle failing after it (writeguard.go).
	// Default 0: DefaultMinFreeBytes (256 MiB); negative: no reserve.
	MinFreeBytes int64
}

// Store is the badger implementation of store.Store.
type Store struct {
	db            *bdb.DB
	keySeq        *bdb.Sequence
	settles       committer
	holds         holds         // open reservations, in memory: a restart releases them
	keys          *keyCache     // nil: no cache
	accounts      *accountCache // nil: no cache
	runs          *runCache     // settled runs as GetRunJSON serves them; nil: no cache
	trim          *trimmer      // nil: value log pages left to the kernel
	throttle      sync.Mutex    // serializes ThrottleAttempt (throttle.go)
	throttleCache throttleCache // the counters in memory; under throttle
	cacheLRU      cacheIndex    // the freshness cache's entries by use (freshness.go)

	dir, valueDir string // where the LSM tree and the value log live

	guard      *writeGuard           // whether writes can succeed (writeguard.go)
	writeFault atomic.Pointer[error] // tests: every commit fails with it

	// Retention (retention.go): whether every run holding records is in
	// the expiry index, the backfill's position until it is, and the
	// expired bytes since the last compaction.
	expiryIndexed atomic.Bool
	backfillMu    sync.Mutex
	backfillFrom  []byte
	gcMu          sync.Mutex
	// dropMu keeps commits and DropPrefix apart (read: a commit; write:
	// compact's DropPrefix). Badger's DropPrefix blocks writes and drains
	// its write queue, but a commit that passed the blocked check just
	// before queues its request after the drain: no writer takes it, its
	// commit never ends, and DropPrefix's own read waits for that commit's
	// timestamp forever (TestSettlesDuringCompaction hung CI under -race).
	dropMu              sync.RWMutex
	expiredSinceCompact atomic.Int64
	compactEvery        int64
	async               asyncState // the async runs' claims (async.go)

	closeOnce sync.Once
	closeErr  error
}

// maxRetries bounds the retries of a transaction that hit an optimistic
// conflict (only concurrent admin writes can cause one).
const maxRetries = 50

// Open opens (creating it if needed) the store in dir.
func Open(dir string, opts Options) (*Store, error) {
	return open(dir, opts, badgerOptions(dir, opts))
}

// Memory-frugal badger options. Badger's defaults (five 64 MiB memtables,
// a 256 MiB block cache, values up to 1 MiB kept in the LSM tree) made the
// gateway peak near 1 GiB under load: every 30 KiB run document was copied
// into memtable arenas and rewritten at each flush and compaction. Here a
// value above 1 KiB (a run document) goes to the value log once and the LSM
// tree holds a pointer to it, while accounts, keys, usage and spend
// counters (all small) stay in the tree; two 8 MiB memtables (each holds the
// entries of thousands of settles) and a 32 MiB block cache bound the rest.
// With 32 callers settle throughput is not lower (see BenchmarkSettleDocs);
// a lone caller pays a second fsync per commit, the value log's.
const (
	valueThreshold = 1 << 10
	memTableSize   = 8 << 20
	numMemtables   = 2
	blockCacheSize = 32 << 20
)

// badgerOptions are the options the store opens badger with.
func badgerOptions(dir string, opts Options) bdb.Options {
	bo := bdb.DefaultOptions(dir).
		WithSyncWrites(!opts.NoSync).
		WithValueThreshold(valueThreshold).
		WithMemTableSize(memTableSize).
		WithNumMemtables(numMemtables).
		WithBlockCacheSize(blockCacheSize).
		WithLogger(nil).
		WithMetricsEnabled(false)
	if opts.ValueLogFileSize > 0 {
		bo = bo.WithValueLogFileSize(opts.ValueLogFileSize)
	}
	if opts.Logger != nil {
		bo = bo.WithLogger(zapLogger{opts.Logger.Sugar()})
	}
	return bo
}

// open opens the store on badger opened with bo (tests and benchmarks
// compare option sets through it).
func open(dir string, opts Options, bo bdb.Options) (*Store, error) {
	db, err := bdb.Open(bo)
	if err != nil {
		return nil, fmt.Errorf("opening badger in %s: %v", dir, err)
	}
	seq, err := db.GetSequence([]byte{pSeq, 'k'}, 64)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening key sequence: %v", err)
	}
	s := &Store{
		db: db, keySeq: seq, holds: newHolds(),
		keys:     newKeyCache(cacheSize(opts.KeyCacheSize, DefaultKeyCacheSize)),
		accounts: newAccountCache(cacheSize(opts.AccountCacheSize, DefaultAccountCacheSize)),
		runs:     newRunCache(cacheSize(opts.RunCacheBytes, DefaultRunCacheBytes)),
		dir:      bo.Dir, valueDir: bo.ValueDir, compactEvery: bo.ValueLogFileSize,
		guard: newWriteGuard(bo.ValueDir, opts.MinFreeBytes),
	}
	if !bo.InMemory {
		s.trim = newTrimmer(bo.ValueDir, bo.ValueLogFileSize)
	}
	if err := s.restoreAsyncHolds(); err != nil {
		s.Close()
		return nil, fmt.Errorf("holding the money of async runs in flight: %v", err)
	}
	if err := s.backfillLedger(); err != nil {
		s.Close()
		return nil, fmt.Errorf("opening the ledger of accounts created before it: %v", err)
	}
	if err := s.releaseDeliveryLeases(); err != nil {
		s.Close()
		return nil, fmt.Errorf("releasing the webhook delivery leases of a previous process: %v", err)
	}
	return s, nil
}

// cacheSize applies an Options cache size: 0 is the default, negative none.
func cacheSize(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

// Close releases the key sequence and closes the database; calling it again
// returns the first result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.trim.stop()
		s.runs.close()
		err := s.keySeq.Release()
		if cerr := s.db.Close(); cerr != nil {
			err = cerr
		}
		if err != nil {
			s.closeErr = fmt.Errorf("closing badger: %v", err)
		}
	})
	return s.closeErr
}

// Key layout. Ids never contain NUL, so NUL ends a variable part and
// prefix scans cannot run into a longer id.
const (
	pAccount = 'a' // a id → account
	pKey     = 'k' // k keyID → key
	pHash    = 'h' // h digest → keyID
	pKeyList = 'l' // l account NUL seq → keyID (creation order)
	pRun     = 'r' // r account NUL runID → run document (rundoc.go: JSON, or S2-compressed JSON)
	pUsage   = 'u' // u account NUL day offer NUL platform → counters
	pSpend   = 's' // s keyID NUL period NUL bucket → micro-credits
	pSeq     = 'q' // q k → key sequence lease
	pAsync   = 'j' // j runID → async run in flight (async.go)
	pIdem    = 'i' // i account NUL key → idempotency key (async.go)
)

func join(prefix byte, parts ...string) []byte {
	n := 1
	for _, p := range parts {
		n += len(p) + 1
	}
	b := make([]byte, 0, n+8)
	b = append(b, prefix)
	for i, p := range parts {
		if i > 0 {
			b = append(b, 0)
		}
		b = append(b, p...)
	}
	return b
}

func accountKey(id string) []byte { return join(pAccount, id) }
func keyKey(id string) []byte     { return join(pKey, id) }
func hashKey(h [32]byte) []byte   { return append([]byte{pHash}, h[:]...) }
func runKey(account, id string) []byte {
	return join(pRun, account, id)
}
func keyListPrefix(account string) []byte { return append(join(pKeyList, account), 0) }
func usagePrefix(account string) []byte   { return append(join(pUsage, account), 0) }

// usageKey orders rows by account, then day, then offer and platform, so
// Usage(since) is one prefix scan that starts at since's day.
func usageKey(account string, dayUnix int64, offer, platform string) []byte {
	b := binary.BigEndian.AppendUint64(usagePrefix(account), sortable(dayUnix))
	b = append(b, offer...)
	b = append(b, 0)
	return append(b, platform...)
}

func spendKey(keyID, period string, bucketUnix int64) []byte {
	b := append(join(pSpend, keyID, period), 0)
	return binary.BigEndian.AppendUint64(b, sortable(bucketUnix))
}

// sortable maps a signed Unix time to an unsigned one in the same order.
func sortable(v int64) uint64 { return uint64(v) ^ 1<<63 }

func unsortable(v uint64) int64 { return int64(v ^ 1<<63) }

// update runs fn in a read-write transaction, retrying optimistic
// conflicts, and writes blocked for a moment (blockedWrites).
func (s *Store) update(ctx context.Context, fn func(txn *bdb.Txn) error) error {
	var blocked time.Time
	for attempt := 0; ; attempt++ {
		s.dropMu.RLock()
		err := s.db.Update(fn)
		s.dropMu.RUnlock()
		if blockedWrites(err, &blocked) {
			continue
		}
		if !errors.Is(err, bdb.ErrConflict) || attempt == maxRetries {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// Badger blocks writes for a moment while it flushes its memtables for
// DropPrefix, which retention's compaction uses (retention.go): a commit
// then fails with ErrBlockedWrites. A settle must not fail for that (its
// upstream work is done), so commits wait for writes to open again,
// up to blockedWait.
const (
	blockedWait  = 10 * time.Second
	blockedPause = 5 * time.Millisecond
)

// blockedWrites reports whether err is badger's blocked writes and the
// write should be tried again after a pause: first records when writes
// were first found blocked, and the wait ends after blockedWait.
func blockedWrites(err error, first *time.Time) bool {
	if !errors.Is(err, bdb.ErrBlockedWrites) {
		return false
	}
	if first.IsZero() {
		*first = time.Now()
	} else if time.Since(*first) > blockedWait {
		return false
	}
	time.Sleep(blockedPause)
	return true
}

// get returns a copy of the value under key, store.ErrNotFound if absent.
func get(txn *bdb.Txn, key []byte) ([]byte, error) {
	item, err := txn.Get(key)
	if errors.Is(err, bdb.ErrKeyNotFound) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return item.ValueCopy(nil)
}

// viewByID reads the record id with read, in a read-only transaction.
func viewByID[T any](db *bdb.DB, id string, read func(*bdb.Txn, string) (T, error)) (T, error) {
	var v T
	err := db.View(func(txn *bdb.Txn) (err error) {
		v, err = read(txn, id)
		return err
	})
	return v, err
}

// viewByIndex reads with read, in a read-only transaction, the record
// whose id the index entry at key holds; store.ErrNotFound without one.
func viewByIndex[T any](db *bdb.DB, key []byte, read func(*bdb.Txn, string) (T, error)) (T, error) {
	var v T
	err := db.View(func(txn *bdb.Txn) error {
		id, err := get(txn, key)
		if err != nil {
			return err
		}
		v, err = read(txn, string(id))
		return err
	})
	return v, err
}

// exists reports whether key is present.
func exists(txn *bdb.Txn, key []byte) (bool, error) {
	_, err := txn.Get(key)
	if errors.Is(err, bdb.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// zapLogger routes badger's log lines to zap, one level quieter for info.
type zapLogger struct{ l *zap.SugaredLogger }

func (z zapLogger) Errorf(f string, a ...any)   { z.l.Error(line(f, a)) }
func (z zapLogger) Warningf(f string, a ...any) { z.l.Warn(line(f, a)) }
func (z zapLogger) Infof(f string, a ...any)    { z.l.Debug(line(f, a)) }
func (z zapLogger) Debugf(f string, a ...any)   { z.l.Debug(line(f, a)) }

func line(f string, a []any) string {
	return strings.TrimRight(fmt.Sprintf(f, a...), "\n")
}

// Interface guards
var (
	_ store.Store = (*Store)(nil)
	_ bdb.Logger  = zapLogger{}
)
