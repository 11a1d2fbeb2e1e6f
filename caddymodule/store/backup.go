package store

import (
	"context"
	"errors"
	"io"
)

// ErrNoBackup is returned by a Backup of a store that cannot stream one
// (PostgreSQL: use pg_dump).
var ErrNoBackup = errors.New("this store has no online backup; back PostgreSQL up with pg_dump (docs/operations.md)")

// Backuper is a store that can stream a consistent backup of itself while
// it serves (the badger store: badger's own backup stream, read at one
// snapshot). PostgreSQL is backed up with its own tools (pg_dump; see
// docs/operations.md).
type Backuper interface {
	// Backup writes to w every entry written at or after version since
	// (0: a full backup), as of one consistent snapshot, and returns the
	// version to pass as since to the next, incremental, backup.
	Backup(ctx context.Context, w io.Writer, since uint64) (next uint64, err error)
}
