package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/store"
)

// ListAccounts returns every account, ordered by id byte by byte (the "C"
// collation, as the badger store orders them).
func (s *Store) ListAccounts(ctx context.Context) ([]store.Account, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, balance, created_at FROM accounts ORDER BY id COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("listing accounts: %v", err)
	}
	accounts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Account, error) { return scanAccount(r) })
	if err != nil {
		return nil, fmt.Errorf("listing accounts: %v", err)
	}
	return accounts, nil
}

var _ store.Exporter = (*Store)(nil)
