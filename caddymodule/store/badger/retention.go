package badger

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/rundoc"
	"socialrouter/caddymodule/store/internal/settle"
)

// Run retention (store.Expirer). Every run that still holds its records
// has an entry in a time index, written by the settle that stored it:
//
//	e <created_at, 8 bytes sortable Unix µs> <account> NUL <runID> → ""
//
// so a retention pass reads the index from its start up to the cutoff and
// never scans runs it already expired or that are too young. Expiring a run
// rewrites its document without records (settle.ExpireDoc) and deletes its
// index entry, in one transaction per batch. Runs stored before the index
// existed are indexed once by a backfill (the marker key says it is done).
const (
	pExpiry = 'e' // e created_at account NUL runID → "" (runs holding records)
	pMarker = 'z' // z name → store-level markers (below)
)

// indexedMarker says every run holding records has its expiry index entry.
var indexedMarker = []byte{pMarker, 'e'}

// metaExpired marks a run entry whose records expired (badger's user
// meta byte), so the backfill skips it without reading it.
const metaExpired byte = 1

func expiryKey(created time.Time, account, runID string) []byte {
	b := make([]byte, 0, 1+8+len(account)+1+len(runID))
	b = append(b, pExpiry)
	b = binary.BigEndian.AppendUint64(b, sortable(settle.Time(created).UnixMicro()))
	b = append(b, account...)
	b = append(b, 0)
	return append(b, runID...)
}

// parseExpiryKey splits an index key into its parts.
func parseExpiryKey(k []byte) (created time.Time, account, runID string, ok bool) {
	if len(k) < 1+8+2 || k[0] != pExpiry {
		return time.Time{}, "", "", false
	}
	created = time.UnixMicro(unsortable(binary.BigEndian.Uint64(k[1:9]))).UTC()
	rest := k[9:]
	sep := bytes.IndexByte(rest, 0)
	if sep < 1 || sep == len(rest)-1 {
		return time.Time{}, "", "", false
	}
	return created, string(rest[:sep]), string(rest[sep+1:]), true
}

// runCreated is the created_at a run is indexed under: its own, or the
// settle time for a run without one.
func runCreated(p *settle.Prepared) time.Time {
	if c := p.S.Run.CreatedAt; !c.IsZero() {
		return c
	}
	return p.Now
}

// ExpireRuns expires at most limit runs created before cutoff: each one's
// document is rewritten without its records (data [], records_expired,
// expired_at now) and its index entry deleted, all in one transaction.
func (s *Store) ExpireRuns(ctx context.Context, cutoff, now time.Time, limit int) (store.ExpireResult, error) {
	var res store.ExpireResult
	if limit <= 0 {
		return res, nil
	}
	if err := s.backfillExpiry(ctx, limit); err != nil {
		return res, err
	}
	more := !s.expiryIndexed.Load()
	end := expiryKey(cutoff, "", "")[:9]
	// The runs this pass rewrites leave the run cache before it commits
	// and again after (runcache.go).
	var rewritten []runRef
	s.runs.beginWrite()
	defer func() { s.runs.endWrite(rewritten) }()
	err := s.update(ctx, func(txn *bdb.Txn) error {
		res = store.ExpireResult{}
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: []byte{pExpiry}})
		var keys [][]byte
		for it.Rewind(); it.Valid() && len(keys) < limit; it.Next() {
			k := it.Item().KeyCopy(nil)
			if bytes.Compare(k[:9], end) >= 0 {
				break
			}
			keys = append(keys, k)
		}
		it.Close()
		for _, k := range keys {
			if err := ctx.Err(); err != nil {
				return err
			}
			if _, account, runID, ok := parseExpiryKey(k); ok {
				ref := runRef{account, runID}
				rewritten = append(rewritten, ref)
				s.runs.drop(ref)
			}
			n, expired, err := expireOne(txn, k, now)
			if err != nil {
				return err
			}
			if expired {
				res.Runs++
				res.Bytes += n
			}
		}
		return nil
	})
	if err != nil {
		return store.ExpireResult{}, fmt.Errorf("expiring runs: %w", err)
	}
	s.trim.note(int(res.Bytes))
	s.expiredSinceCompact.Add(res.Bytes)
	res.More = more
	return res, nil
}

// expireOne expires the run of index key k and deletes k; it returns the
// bytes the run's stored value shrank by (0 if it grew: a run without
// records gains the expiry members), and whether there was a run to expire
// (not gone, not already expired).
func expireOne(txn *bdb.Txn, k []byte, now time.Time) (int64, bool, error) {
	if err := txn.Delete(k); err != nil {
		return 0, false, err
	}
	_, account, runID, ok := parseExpiryKey(k)
	if !ok {
		return 0, false, nil // not ours: dropped
	}
	rk := runKey(account, runID)
	item, err := txn.Get(rk)
	if errors.Is(err, bdb.ErrKeyNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if item.UserMeta()&metaExpired != 0 {
		return 0, false, nil
	}
	var old int64
	var doc []byte
	if err := item.Value(func(v []byte) (err error) {
		old = int64(len(v))
		doc, err = rundoc.Append(nil, v)
		return err
	}); err != nil {
		return 0, false, fmt.Errorf("reading run %s: %v", runID, err)
	}
	exp, already, err := settle.ExpireDoc(doc, now)
	if err != nil {
		return 0, false, fmt.Errorf("run %s: %v", runID, err)
	}
	if already {
		return 0, false, nil
	}
	v := rundoc.Encode(exp)
	if err := txn.SetEntry(bdb.NewEntry(rk, v).WithMeta(metaExpired)); err != nil {
		return 0, false, err
	}
	return max(old-int64(len(v)), 0), true, nil
}

// backfillExpiry indexes, once per store, the runs stored before the index
// existed, at most limit×8 runs per call; the marker records that it is
// done, and settles index every run they store meanwhile.
func (s *Store) backfillExpiry(ctx context.Context, limit int) error {
	if s.expiryIndexed.Load() {
		return nil
	}
	s.backfillMu.Lock()
	defer s.backfillMu.Unlock()
	if s.expiryIndexed.Load() {
		return nil
	}
	err := s.db.View(func(txn *bdb.Txn) error {
		_, err := txn.Get(indexedMarker)
		if err == nil {
			s.expiryIndexed.Store(true)
			return nil
		}
		if !errors.Is(err, bdb.ErrKeyNotFound) {
			return err
		}
		return nil
	})
	if err != nil || s.expiryIndexed.Load() {
		return err
	}
	var found [][]byte
	from := s.backfillFrom
	done := false
	err = s.db.View(func(txn *bdb.Txn) error {
		prefix := []byte{pRun}
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: prefix})
		defer it.Close()
		seek := prefix
		if from != nil {
			seek = from
		}
		n := 0
		for it.Seek(seek); ; it.Next() {
			if !it.ValidForPrefix(prefix) {
				done = true
				return nil
			}
			item := it.Item()
			if from != nil && bytes.Equal(item.Key(), from) {
				continue
			}
			if n == limit*8 {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			n++
			from = item.KeyCopy(nil)
			if item.UserMeta()&metaExpired != 0 {
				continue
			}
			var head struct {
				ID             string    `json:"id"`
				CreatedAt      time.Time `json:"created_at"`
				AccountID      string    `json:"account_id"`
				RecordsExpired bool      `json:"records_expired"`
			}
			if err := item.Value(func(v []byte) error {
				doc, err := rundoc.Append(nil, v)
				if err != nil {
					return err
				}
				return json.Unmarshal(doc, &head)
			}); err != nil {
				return fmt.Errorf("reading run %q: %v", item.Key(), err)
			}
			if !head.RecordsExpired && head.AccountID != "" {
				found = append(found, expiryKey(head.CreatedAt, head.AccountID, head.ID))
			}
		}
	})
	if err != nil {
		return fmt.Errorf("indexing runs for retention: %v", err)
	}
	err = s.update(ctx, func(txn *bdb.Txn) error {
		for _, k := range found {
			if err := txn.Set(k, nil); err != nil {
				return err
			}
		}
		if done {
			return txn.Set(indexedMarker, []byte{1})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("indexing runs for retention: %v", err)
	}
	s.backfillFrom = from
	if done {
		s.expiryIndexed.Store(true)
	}
	return nil
}

// Value-log GC. Expired records leave garbage in the value log, which
// badger rewrites away file by file (RunValueLogGC) once its compactions
// have counted a file's garbage. Compactions of the small LSM tree come
// with the traffic, so after every compactEvery bytes of expired records
// Reclaim also flushes the memtables and compacts the tree itself (a
// short stall of writes, once per value log file's worth of expired
// records), then collects.
const (
	gcDiscardRatio = 0.5
	gcMaxRounds    = 64
)

// Reclaim collects value log files whose records expired and returns the
// bytes the store's directory shrank by.
func (s *Store) Reclaim(ctx context.Context) (int64, error) {
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	before, err := s.StoredBytes(ctx)
	if err != nil {
		return 0, err
	}
	if s.expiredSinceCompact.Load() >= s.compactEvery {
		if err := s.compact(); err != nil {
			return 0, err
		}
		s.expiredSinceCompact.Store(0)
	}
	for range gcMaxRounds {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		// The trimmer advises value log mappings; GC unmaps and deletes
		// files, so the two never run at once.
		err := s.trim.exclusive(func() error { return s.db.RunValueLogGC(gcDiscardRatio) })
		if errors.Is(err, bdb.ErrNoRewrite) || errors.Is(err, bdb.ErrRejected) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("value log gc: %v", err)
		}
	}
	after, err := s.StoredBytes(ctx)
	if err != nil {
		return 0, err
	}
	return max(before-after, 0), nil
}

// compact flushes the memtables (DropPrefix of a marker key written for
// the purpose flushes them all) and compacts the LSM tree to one level, so
// that every overwritten run document is counted as value log garbage.
func (s *Store) compact() error {
	flush := []byte{pMarker, 'f'}
	if err := s.db.Update(func(txn *bdb.Txn) error { return txn.Set(flush, []byte{1}) }); err != nil {
		return fmt.Errorf("compacting: %v", err)
	}
	s.dropMu.Lock()
	err := s.db.DropPrefix(flush)
	s.dropMu.Unlock()
	if err != nil {
		return fmt.Errorf("flushing memtables: %v", err)
	}
	if err := s.db.Flatten(1); err != nil {
		return fmt.Errorf("compacting: %v", err)
	}
	return nil
}

// StoredBytes is the disk space the store's files take (allocated blocks,
// so the value log's preallocated tail counts only once written).
func (s *Store) StoredBytes(context.Context) (int64, error) {
	var total int64
	dirs := []string{s.dir}
	if s.valueDir != s.dir {
		dirs = append(dirs, s.valueDir)
	}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil // deleted while walking (GC, compaction)
				}
				return err
			}
			if d.IsDir() {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			total += allocated(info)
			return nil
		})
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, fmt.Errorf("sizing %s: %v", dir, err)
		}
	}
	return total, nil
}

// Interface guards
var _ store.Expirer = (*Store)(nil)
