package badger

import (
	"context"

	bdb "github.com/dgraph-io/badger/v4"
)

// Ping opens and discards a read transaction: it fails once the database
// is closed. It is the store half of the gateway's readiness check.
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(func(*bdb.Txn) error { return nil })
}
