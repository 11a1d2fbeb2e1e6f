package badger

import (
	"context"
	"fmt"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// GetRunJSON returns a run of the account in its API form (json.Marshal of
// what GetRun returns): the stored document with its scope members cut
// off, without decoding the records. ErrNotFound for an unknown id or
// another account's run.
func (s *Store) GetRunJSON(ctx context.Context, accountID, runID string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !settle.ValidID(accountID) || !settle.ValidID(runID) {
		return nil, fmt.Errorf("getting run %q: %w", runID, store.ErrNotFound)
	}
	var doc []byte
	err := s.db.View(func(txn *bdb.Txn) (err error) {
		doc, err = get(txn, runKey(accountID, runID))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("getting run %s: %w", runID, err)
	}
	s.trim.note(len(doc))
	return settle.RunAPIJSON(doc)
}
