package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

func scanOAuth(row pgx.Row, h [32]byte) (store.OAuthRecord, error) {
	r := store.OAuthRecord{Hash: h}
	if err := row.Scan(&r.Kind, &r.GrantID, &r.Data, &r.CreatedAt, &r.ExpiresAt, &r.Used); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return store.OAuthRecord{}, store.ErrNotFound
		}
		return store.OAuthRecord{}, err
	}
	r.CreatedAt, r.ExpiresAt = r.CreatedAt.UTC(), r.ExpiresAt.UTC()
	return r, nil
}

// PutOAuth stores a record; ErrExists if its hash is taken. It also
// deletes records expired for a day (a day late, so a replayed refresh
// token shortly past its end still finds its grant): the table stays the
// size of the live tokens without a reaper.
func (s *Store) PutOAuth(ctx context.Context, rec store.OAuthRecord) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM oauth_records WHERE expires_at < $1`, settle.Time(rec.CreatedAt).Add(-24*time.Hour)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
INSERT INTO oauth_records (hash, kind, grant_id, data, created_at, expires_at, used)
VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			rec.Hash[:], rec.Kind, rec.GrantID, rec.Data, settle.Time(rec.CreatedAt), settle.Time(rec.ExpiresAt), rec.Used)
		if pgCode(err) == codeUniqueViolation {
			err = store.ErrExists
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("storing oauth %s: %w", rec.Kind, err)
	}
	return nil
}

// GetOAuth returns a live record.
func (s *Store) GetOAuth(ctx context.Context, hash [32]byte, now time.Time) (store.OAuthRecord, error) {
	r, err := scanOAuth(s.pool.QueryRow(ctx, `
SELECT kind, grant_id, data, created_at, expires_at, used FROM oauth_records
WHERE hash = $1 AND expires_at > $2`, hash[:], now), hash)
	if err != nil {
		return store.OAuthRecord{}, fmt.Errorf("reading oauth record: %w", err)
	}
	return r, nil
}

// ExtendOAuth moves a live record's expiry to until when that is later.
func (s *Store) ExtendOAuth(ctx context.Context, hash [32]byte, now, until time.Time) error {
	var live bool
	err := s.pool.QueryRow(ctx, `
WITH r AS (SELECT hash FROM oauth_records WHERE hash = $1 AND expires_at > $2),
     u AS (UPDATE oauth_records o SET expires_at = $3 FROM r WHERE o.hash = r.hash AND o.expires_at < $3)
SELECT EXISTS (SELECT 1 FROM r)`, hash[:], now, settle.Time(until)).Scan(&live)
	if err != nil {
		return fmt.Errorf("extending oauth record: %w", err)
	}
	if !live {
		return store.ErrNotFound
	}
	return nil
}

// UseOAuth marks a live record used and returns it as it was: the row
// lock of the sub-select makes a concurrent second call wait, then read
// used = true.
func (s *Store) UseOAuth(ctx context.Context, hash [32]byte, now time.Time) (store.OAuthRecord, error) {
	r, err := scanOAuth(s.pool.QueryRow(ctx, `
UPDATE oauth_records o SET used = true
FROM (SELECT hash, used FROM oauth_records WHERE hash = $1 AND expires_at > $2 FOR UPDATE) p
WHERE o.hash = p.hash
RETURNING o.kind, o.grant_id, o.data, o.created_at, o.expires_at, p.used`, hash[:], now), hash)
	if err != nil {
		return store.OAuthRecord{}, fmt.Errorf("using oauth record: %w", err)
	}
	return r, nil
}
