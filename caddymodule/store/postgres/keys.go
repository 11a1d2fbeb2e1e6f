package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

const keyColumns = `id, account_id, name, kind, hash, display, created_at, revoked_at, limit_period, limit_credits`

func scanKey(row pgx.Row) (store.Key, error) {
	var (
		k       store.Key
		hash    []byte
		revoked *time.Time
		period  *string
		limit   *int64
	)
	if err := row.Scan(&k.ID, &k.AccountID, &k.Name, &k.Kind, &hash, &k.Display, &k.CreatedAt, &revoked, &period, &limit); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return store.Key{}, store.ErrNotFound
		}
		return store.Key{}, err
	}
	copy(k.Hash[:], hash)
	k.CreatedAt = k.CreatedAt.UTC()
	if revoked != nil {
		t := revoked.UTC()
		k.RevokedAt = &t
	}
	if period != nil && limit != nil {
		k.CreditLimit = &store.CreditLimit{Period: *period, Credits: credits.Micros(*limit)}
	}
	return k, nil
}

// limitColumns splits a credit limit into its two nullable columns.
func limitColumns(l *store.CreditLimit) (period *string, amount *int64) {
	if l == nil {
		return nil, nil
	}
	p, c := l.Period, int64(l.Credits)
	return &p, &c
}

// CreateKey stores a new key (ErrNotFound if its account is absent,
// ErrExists if the id or the hash is taken).
func (s *Store) CreateKey(ctx context.Context, k store.Key) error {
	if !settle.ValidID(k.ID) {
		return fmt.Errorf("creating key: invalid id %q", k.ID)
	}
	if err := k.CreditLimit.Validate(); err != nil {
		return fmt.Errorf("creating key %s: %v", k.ID, err)
	}
	var revoked *time.Time
	if k.RevokedAt != nil {
		t := settle.Time(*k.RevokedAt)
		revoked = &t
	}
	period, limit := limitColumns(k.CreditLimit)
	_, err := s.pool.Exec(ctx, `
INSERT INTO api_keys (id, account_id, name, hash, display, created_at, revoked_at, limit_period, limit_credits, kind)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		k.ID, k.AccountID, k.Name, k.Hash[:], k.Display, settle.Time(k.CreatedAt), revoked, period, limit, k.Kind)
	switch pgCode(err) {
	case codeForeignKeyViolation:
		err = fmt.Errorf("account %s: %w", k.AccountID, store.ErrNotFound)
	case codeUniqueViolation:
		err = store.ErrExists
	}
	if err != nil {
		return fmt.Errorf("creating key %s: %w", k.ID, err)
	}
	return nil
}

// KeyByHash finds a key, revoked or not, by the digest of its secret.
func (s *Store) KeyByHash(ctx context.Context, hash [32]byte) (store.Key, error) {
	k, err := scanKey(s.pool.QueryRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE hash = $1`, hash[:]))
	if err != nil {
		return store.Key{}, fmt.Errorf("finding key by hash: %w", err)
	}
	return k, nil
}

// GetKey returns a key by id.
func (s *Store) GetKey(ctx context.Context, id string) (store.Key, error) {
	k, err := scanKey(s.pool.QueryRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = $1`, id))
	if err != nil {
		return store.Key{}, fmt.Errorf("getting key %s: %w", id, err)
	}
	return k, nil
}

// ListKeys returns an account's keys in creation order.
func (s *Store) ListKeys(ctx context.Context, accountID string) ([]store.Key, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE account_id = $1 ORDER BY seq`, accountID)
	if err != nil {
		return nil, fmt.Errorf("listing keys of account %s: %v", accountID, err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Key, error) { return scanKey(r) })
	if err != nil {
		return nil, fmt.Errorf("listing keys of account %s: %v", accountID, err)
	}
	return keys, nil
}

// SetKeyLimit sets (or with nil clears) a key's credit limit.
func (s *Store) SetKeyLimit(ctx context.Context, id string, limit *store.CreditLimit) (store.Key, error) {
	if err := limit.Validate(); err != nil {
		return store.Key{}, fmt.Errorf("setting limit of key %s: %v", id, err)
	}
	period, amount := limitColumns(limit)
	k, err := scanKey(s.pool.QueryRow(ctx, `
UPDATE api_keys SET limit_period = $2, limit_credits = $3 WHERE id = $1
RETURNING `+keyColumns, id, period, amount))
	if err != nil {
		return store.Key{}, fmt.Errorf("setting limit of key %s: %w", id, err)
	}
	return k, nil
}

// RevokeKey revokes a key at the given time; revoking twice keeps the
// first time.
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) (store.Key, error) {
	k, err := scanKey(s.pool.QueryRow(ctx, `
UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1
RETURNING `+keyColumns, id, settle.Time(at)))
	if err != nil {
		return store.Key{}, fmt.Errorf("revoking key %s: %w", id, err)
	}
	return k, nil
}

// KeySpend returns what a key spent in the period bucket containing at.
func (s *Store) KeySpend(ctx context.Context, keyID, period string, at time.Time) (credits.Micros, error) {
	if !store.ValidPeriod(period) {
		return 0, fmt.Errorf("reading spend of key %s: invalid period %q", keyID, period)
	}
	var spent int64
	err := s.pool.QueryRow(ctx, `SELECT credits FROM key_spend WHERE key_id = $1 AND period = $2 AND bucket = $3`,
		keyID, period, store.PeriodStart(period, at)).Scan(&spent)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("reading spend of key %s: %v", keyID, err)
	}
	return credits.Micros(spent), nil
}
