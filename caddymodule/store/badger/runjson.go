package badger

import (
	"context"
	"errors"
	"fmt"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/rundoc"
	"socialrouter/caddymodule/store/internal/settle"
)

// GetRunJSON appends to dst a run of the account in its API form: the
// stored document, decoded once from badger into dst, with its scope
// members cut off, without decoding the records; or that form as a
// previous call left it in memory (runcache.go). ErrNotFound for an
// unknown id or another account's run.
func (s *Store) GetRunJSON(ctx context.Context, dst []byte, accountID, runID string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	if !settle.ValidID(accountID) || !settle.ValidID(runID) {
		return dst, fmt.Errorf("getting run %q: %w", runID, store.ErrNotFound)
	}
	ref := runRef{accountID, runID}
	if out, ok := s.runs.appendTo(dst, ref); ok {
		return out, nil
	}
	tok := s.runs.token()
	out, err := s.readRunJSON(dst, accountID, runID)
	if err == nil {
		s.runs.fill(tok, ref, out[len(dst):])
	}
	return out, err
}

// readRunJSON is GetRunJSON's read from badger.
func (s *Store) readRunJSON(dst []byte, accountID, runID string) ([]byte, error) {
	out := dst
	err := s.db.View(func(txn *bdb.Txn) error {
		item, err := txn.Get(runKey(accountID, runID))
		if errors.Is(err, bdb.ErrKeyNotFound) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) (err error) {
			out, err = rundoc.Append(dst, v)
			return err
		})
	})
	if err != nil {
		return dst, fmt.Errorf("getting run %s: %w", runID, err)
	}
	doc := out[len(dst):len(out):len(out)]
	s.trim.note(len(doc))
	api, err := settle.RunAPIJSON(doc)
	if err != nil {
		return dst, err
	}
	if len(api) > 0 && len(doc) > 0 && &api[0] == &doc[0] {
		return out[:len(dst)+len(api)], nil // cut in place
	}
	return append(dst, api...), nil
}
