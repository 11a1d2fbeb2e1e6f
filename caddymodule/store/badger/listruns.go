package badger

import (
	"context"
	"encoding/json"
	"fmt"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/rundoc"
	"socialrouter/caddymodule/store/internal/settle"
)

// runHead is what a listing decodes of a stored run: the records are
// scanned past, not kept; their number is pagination.returned.
type runHead struct {
	store.RunSummary
	Pagination runs.Pagination `json:"pagination"`
}

// ListRuns returns an account's runs matching f, newest first. Run ids
// are time-ordered ULIDs, so a reverse scan of the account's runs meets
// them newest first and stops at the limit (or, with Since, at the first
// older run).
func (s *Store) ListRuns(ctx context.Context, accountID string, f store.RunFilter) ([]store.RunSummary, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = store.DefaultRunLimit
	}
	if !settle.ValidID(accountID) {
		return nil, nil
	}
	f.Since, f.Until = settle.Time(f.Since), settle.Time(f.Until) // as stored
	var out []store.RunSummary
	var buf []byte
	err := s.db.View(func(txn *bdb.Txn) error {
		prefix := append(join(pRun, accountID), 0)
		it := txn.NewIterator(bdb.IteratorOptions{Prefix: prefix, Reverse: true})
		defer it.Close()
		for it.Seek(append(append([]byte{}, prefix...), 0xFF)); it.ValidForPrefix(prefix) && len(out) < limit; it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			var h runHead
			if err := it.Item().Value(func(v []byte) error {
				doc, err := rundoc.Append(buf[:0], v) // documents are stored compressed (rundoc.go)
				if err != nil {
					return err
				}
				buf = doc
				return json.Unmarshal(doc, &h)
			}); err != nil {
				return fmt.Errorf("decoding run: %v", err)
			}
			r := h.RunSummary
			r.CreatedAt = settle.Time(r.CreatedAt)
			if !f.Since.IsZero() && r.CreatedAt.Before(f.Since) {
				break
			}
			if !keep(r, f) {
				continue
			}
			r.Records = h.Pagination.Returned
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing runs of account %s: %w", accountID, err)
	}
	return out, nil
}

// keep applies a filter's platform, service, status and until.
func keep(r store.RunSummary, f store.RunFilter) bool {
	return (f.Platform == "" || r.Platform == f.Platform) &&
		(f.Service == "" || r.Service == f.Service) &&
		(f.Status == "" || r.Status == f.Status) &&
		(f.Until.IsZero() || r.CreatedAt.Before(f.Until))
}
