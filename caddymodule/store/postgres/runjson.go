package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// GetRunJSON appends to dst a run of the account in its API form (json.Marshal of
// what GetRun returns): the stored document (a JSON column, kept as written)
// with its scope members cut off, without decoding the records.
// ErrNotFound for an unknown id or another account's run.
func (s *Store) GetRunJSON(ctx context.Context, dst []byte, accountID, runID string) ([]byte, error) {
	var doc []byte
	err := s.pool.QueryRow(ctx, `SELECT doc FROM runs WHERE id = $1 AND account_id = $2`, runID, accountID).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return dst, fmt.Errorf("getting run %s: %w", runID, err)
	}
	api, err := settle.RunAPIJSON(doc)
	if err != nil {
		return dst, err
	}
	return append(dst, api...), nil
}
