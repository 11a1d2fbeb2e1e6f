package badger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/store"
)

// Backup writes badger's backup stream of every entry written at or after
// version since, read at one snapshot (a read timestamp), so the accounts,
// runs, usage rollups and key spend it holds are those of one instant: a
// settle is in it whole or not at all. It returns the version after the
// last entry written, for the next incremental backup. It runs beside the
// traffic; a client that goes away ends it with a write error.
func (s *Store) Backup(ctx context.Context, w io.Writer, since uint64) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	stream := s.db.NewStream()
	stream.LogPrefix = "sdr backup"
	// One snapshot: outside managed mode each of the stream's producer
	// goroutines opens its own read transaction, at its own timestamp, so
	// with several the accounts could be read before a settle and its run
	// after it (a balance that does not match the runs restored, seen
	// under load). One producer reads every range in one transaction.
	stream.NumGo = 1
	// The freshness cache is rebuildable: not backed up.
	stream.ChooseKey = func(item *bdb.Item) bool { return item.Key()[0] != pCache }
	// The stream's SinceTs is exclusive (its iterator reads versions above
	// it) while Backup's since is inclusive: DB.Backup passes since as
	// SinceTs and so drops, from every incremental backup, the entries of
	// the commit at exactly since, the one right after the previous backup.
	if since > 0 {
		stream.SinceTs = since - 1
	}
	last, err := stream.Backup(w, since)
	if err != nil {
		return 0, fmt.Errorf("backing up the badger store: %v", err)
	}
	return max(last+1, since), nil
}

// ErrNotEmpty is returned by Restore for a directory that already holds
// files: a restore never merges into, or overwrites, a store.
var ErrNotEmpty = errors.New("the directory is not empty")

// Restore loads backups (a full one, then the incremental ones taken
// after it, in order) into a new store in dir, which must be missing or
// empty. It runs offline: no gateway may have dir open.
func Restore(dir string, backups ...io.Reader) error {
	entries, err := os.ReadDir(dir)
	switch {
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("restoring into %s: %v", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("restoring into %s: %w (restore only into a new store)", dir, ErrNotEmpty)
	}
	s, err := Open(dir, Options{MinFreeBytes: -1})
	if err != nil {
		return fmt.Errorf("restoring into %s: %v", dir, err)
	}
	for i, r := range backups {
		if err := s.db.Load(r, 256); err != nil {
			s.Close()
			return fmt.Errorf("restoring backup %d of %d into %s: %v", i+1, len(backups), dir, err)
		}
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("restoring into %s: %v", dir, err)
	}
	return nil
}

// Interface guards
var _ store.Backuper = (*Store)(nil)

// Capabilities lists the badger store's optional parts: its online backup.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{Backup: s}
}
