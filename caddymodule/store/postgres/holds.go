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

// DefaultHoldTimeout is how long a hold counts when its call neither
// settles nor releases it: the call's node died. It must be longer than
// the longest call, or a live call's hold could lapse and let the key's
// limit be crossed: an attempt is bounded at 120 s and a service has at
// most a handful of offers, so 15 minutes leaves a wide margin. An expired
// hold still caps its own capture if the call does settle.
const DefaultHoldTimeout = 15 * time.Minute

// reapEvery is how often the reaper deletes expired holds; expired holds
// already count for nothing, so this only bounds the table.
const reapEvery = time.Minute

// Reserve sets the hold of call h.ID: see store.Store. The account row
// lock serializes it with every settle and reserve of the account on every
// node; a key belongs to one account, so that lock covers the key's spend
// and holds too. It takes two round trips (pipelineTx): the lock and the
// reads, then the hold and the COMMIT.
func (s *Store) Reserve(ctx context.Context, h store.Hold) (store.HoldResult, error) {
	if !settle.ValidID(h.ID) || !settle.ValidID(h.AccountID) || h.Price < 0 {
		return store.HoldResult{}, fmt.Errorf("reserving for %q: invalid hold", h.ID)
	}
	now := h.Now
	if now.IsZero() {
		now = time.Now()
	}
	buckets := make([]time.Time, len(store.Periods))
	for i, per := range store.Periods {
		buckets[i] = store.PeriodStart(per, now)
	}
	var (
		balance, held int64
		limit         *store.CreditLimit
		room          int64
		res           store.HoldResult
	)
	reads := func(b *pgx.Batch) {
		balance, held, limit, room = 0, 0, nil, 0
		b.Queue(`SELECT balance FROM accounts WHERE id = $1 FOR UPDATE`, h.AccountID).QueryRow(func(row pgx.Row) error {
			err := row.Scan(&balance)
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("account %s: %w", h.AccountID, store.ErrNotFound)
			}
			if err != nil {
				return fmt.Errorf("locking account %s: %v", h.AccountID, err)
			}
			return nil
		})
		b.Queue(`
WITH gone AS (DELETE FROM holds WHERE id = $1 OR (account_id = $2 AND expires_at <= now()))
SELECT COALESCE(sum(amount), 0) FROM holds WHERE account_id = $2 AND id <> $1 AND expires_at > now()`,
			h.ID, h.AccountID).QueryRow(func(row pgx.Row) error {
			if err := row.Scan(&held); err != nil {
				return fmt.Errorf("reading holds of account %s: %v", h.AccountID, err)
			}
			return nil
		})
		if h.KeyID == "" {
			return
		}
		// The key's limit, its spend in the limit period's current bucket
		// and its other live holds, in one statement.
		b.Queue(`
SELECT k.limit_period, k.limit_credits,
	COALESCE((SELECT credits FROM key_spend WHERE key_id = k.id AND period = k.limit_period
		AND bucket = ($2::timestamptz[])[array_position($3::text[], k.limit_period)]), 0),
	COALESCE((SELECT sum(amount) FROM holds WHERE key_id = k.id AND id <> $4 AND expires_at > now()), 0)
FROM api_keys k WHERE k.id = $1`, h.KeyID, buckets, store.Periods, h.ID).QueryRow(func(row pgx.Row) error {
			var period *string
			var amount *int64
			var spent, keyHeld int64
			err := row.Scan(&period, &amount, &spent, &keyHeld)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("reading limit and spend of key %s: %v", h.KeyID, err)
			}
			if period != nil && amount != nil {
				limit = &store.CreditLimit{Period: *period, Credits: credits.Micros(*amount)}
				room = *amount - spent - keyHeld
			}
			return nil
		})
	}
	writes := func(b *pgx.Batch) error {
		res = store.HoldRoom(credits.Micros(balance-held), limit, credits.Micros(room), h.Price, h.Records)
		if res.Amount == 0 {
			return nil // the COMMIT keeps the old hold's removal
		}
		var keyID *string
		if h.KeyID != "" {
			keyID = &h.KeyID
		}
		b.Queue(`INSERT INTO holds (id, account_id, key_id, amount, expires_at) VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))`,
			h.ID, h.AccountID, keyID, int64(res.Amount), s.holdTimeout.Seconds())
		return nil
	}
	if _, err := s.pipelineTx(ctx, reads, writes); err != nil {
		// An ambiguous commit is an error too: the call fails and its
		// Release drops the hold if it was written.
		return store.HoldResult{}, fmt.Errorf("reserving for %s: %w", h.ID, err)
	}
	return res, nil
}

// Release drops the hold of a call, if it has one.
func (s *Store) Release(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM holds WHERE id = $1`, id); err != nil {
		return fmt.Errorf("releasing hold %s: %v", id, err)
	}
	return nil
}

// takeHoldsSQL deletes, in a settle's transaction, the holds of the runs
// $1 and returns their amounts: the capture of each is bounded by its hold.
const takeHoldsSQL = `DELETE FROM holds WHERE id = ANY($1) RETURNING id, amount`

// takeHolds captures the holds of the runs ids (takeHoldsSQL).
func takeHolds(ctx context.Context, tx pgx.Tx, ids []string) (map[string]credits.Micros, error) {
	rows, err := tx.Query(ctx, takeHoldsSQL, ids)
	if err != nil {
		return nil, fmt.Errorf("capturing holds: %v", err)
	}
	out := map[string]credits.Micros{}
	if err := scanHolds(rows, out); err != nil {
		return nil, err
	}
	return out, nil
}

// scanHolds reads the rows of takeHoldsSQL into out and closes them.
func scanHolds(rows pgx.Rows, out map[string]credits.Micros) error {
	defer rows.Close()
	for rows.Next() {
		var id string
		var amount int64
		if err := rows.Scan(&id, &amount); err != nil {
			return fmt.Errorf("capturing holds: %v", err)
		}
		out[id] = credits.Micros(amount)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("capturing holds: %v", err)
	}
	return nil
}

// reap deletes expired holds until ctx ends: a hold of a dead node counts
// for nothing once expired, this keeps the table small.
func (s *Store) reap(ctx context.Context) {
	t := time.NewTicker(reapEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.pool.Exec(ctx, `DELETE FROM holds WHERE expires_at <= now()`) // retried at the next tick
		}
	}
}
