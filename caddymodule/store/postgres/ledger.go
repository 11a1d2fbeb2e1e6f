package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

// Move changes the balance and writes its ledger row in one transaction.
// The account's row lock orders it with every settle of the account on any
// node; the event's primary key makes a duplicate delivered to another
// node wait for this commit, then change nothing.
func (s *Store) Move(ctx context.Context, e store.LedgerEntry) (store.LedgerEntry, error) {
	e, err := e.Prepared(time.Now())
	if err != nil {
		return e, err
	}
	var moved bool
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		moved = false
		var balance int64
		if err := tx.QueryRow(ctx, `SELECT balance FROM accounts WHERE id = $1 FOR UPDATE`, e.AccountID).Scan(&balance); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		if e.EventID != "" {
			tag, err := tx.Exec(ctx, `INSERT INTO payment_events (event_id, account_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, e.EventID, e.AccountID)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return store.ErrDuplicateEvent
			}
		}
		var sofar int64
		if e.Cumulative {
			if err := tx.QueryRow(ctx, `SELECT COALESCE(SUM(amount), 0) FROM ledger WHERE reference = $1 AND account_id = $2 AND kind = $3`,
				e.Reference, e.AccountID, e.Kind).Scan(&sofar); err != nil {
				return err
			}
		}
		amount, ok, err := e.Delta(credits.Micros(balance), credits.Micros(sofar))
		if err != nil || !ok {
			return err // !ok: the event is recorded, nothing left to move
		}
		if err := tx.QueryRow(ctx, `UPDATE accounts SET balance = balance + $2 WHERE id = $1 RETURNING balance`, e.AccountID, int64(amount)).Scan(&balance); err != nil {
			return err
		}
		e.Amount, e.Balance = amount, credits.Micros(balance)
		_, err = tx.Exec(ctx, `
INSERT INTO ledger (id, account_id, kind, amount, balance, reason, event_id, reference, receipt_url, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, e.ID, e.AccountID, e.Kind, int64(e.Amount), int64(e.Balance), e.Reason, e.EventID, e.Reference, e.ReceiptURL, e.CreatedAt)
		moved = err == nil
		return err
	})
	if err == nil && !moved {
		err = store.ErrDuplicateEvent
	}
	if err != nil {
		return store.LedgerEntry{}, fmt.Errorf("moving %s credits on account %s: %w", e.Amount, e.AccountID, err)
	}
	return e, nil
}

// openingRow is the INSERT of an opening row, for CreateAccount.
const openingRowSQL = `
INSERT INTO ledger (id, account_id, kind, amount, balance, created_at)
VALUES ($1, $2, 'opening', $3, $3, $4)`

// farFuture stands for "from the newest" in a cursor comparison.
var farFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// Transactions reads the stored rows and the run charges per day from
// usage_daily, merged in one ordered query.
func (s *Store) Transactions(ctx context.Context, accountID string, after store.LedgerCursor, limit int) ([]store.LedgerEntry, error) {
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM accounts WHERE id = $1)`, accountID).Scan(&exists); err != nil {
		return nil, fmt.Errorf("listing the ledger of %s: %w", accountID, err)
	}
	if !exists {
		return nil, fmt.Errorf("listing the ledger of %s: %w", accountID, store.ErrNotFound)
	}
	at, id := after.At, after.ID
	if at.IsZero() {
		at, id = farFuture, ""
	}
	rows, err := s.pool.Query(ctx, `
SELECT id, kind, amount, balance, reason, event_id, reference, receipt_url, created_at FROM (
	SELECT id COLLATE "C" AS id, kind, amount, balance, reason, event_id, reference, receipt_url, created_at
	FROM ledger WHERE account_id = $1
	UNION ALL
	SELECT ('day_' || to_char(day, 'YYYY-MM-DD')) COLLATE "C", 'run_charges', -SUM(credits), 0, '', '', '', '', day::timestamp AT TIME ZONE 'UTC'
	FROM usage_daily WHERE account_id = $1 GROUP BY day HAVING SUM(credits) > 0
) t
WHERE (created_at, id) < ($2, $3::text COLLATE "C")
ORDER BY created_at DESC, id DESC
LIMIT $4`, accountID, at, id, limit)
	if err != nil {
		return nil, fmt.Errorf("listing the ledger of %s: %w", accountID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.LedgerEntry, error) {
		e := store.LedgerEntry{AccountID: accountID}
		var amount, balance int64
		err := row.Scan(&e.ID, &e.Kind, &amount, &balance, &e.Reason, &e.EventID, &e.Reference, &e.ReceiptURL, &e.CreatedAt)
		e.Amount, e.Balance, e.CreatedAt = credits.Micros(amount), credits.Micros(balance), e.CreatedAt.UTC()
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing the ledger of %s: %w", accountID, err)
	}
	return out, nil
}

// ReferenceAccount returns the first account with rows of reference.
func (s *Store) ReferenceAccount(ctx context.Context, reference string) (string, error) {
	var account string
	err := s.pool.QueryRow(ctx, `SELECT account_id FROM ledger WHERE reference = $1 AND reference <> '' LIMIT 1`, reference).Scan(&account)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", store.ErrNotFound
	}
	return account, err
}

// RecordOrphan stores a payment no account took, once per event.
func (s *Store) RecordOrphan(ctx context.Context, o store.OrphanPayment) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO payment_events (event_id, account_id) VALUES ($1, '') ON CONFLICT DO NOTHING`, o.EventID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrDuplicateEvent
		}
		_, err = tx.Exec(ctx, `INSERT INTO orphan_payments (event_id, account_id, reference, amount, reason, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			o.EventID, o.AccountID, o.Reference, int64(o.Amount), o.Reason, o.CreatedAt.UTC())
		return err
	})
}

// Orphans lists the orphan payments, newest first.
func (s *Store) Orphans(ctx context.Context, limit int) ([]store.OrphanPayment, error) {
	rows, err := s.pool.Query(ctx, `SELECT event_id, account_id, reference, amount, reason, created_at FROM orphan_payments ORDER BY created_at DESC, event_id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.OrphanPayment, error) {
		var o store.OrphanPayment
		var amount int64
		err := row.Scan(&o.EventID, &o.AccountID, &o.Reference, &amount, &o.Reason, &o.CreatedAt)
		o.Amount, o.CreatedAt = credits.Micros(amount), o.CreatedAt.UTC()
		return o, err
	})
}

// BillingSettings returns an account's settings.
func (s *Store) BillingSettings(ctx context.Context, accountID string) (store.BillingSettings, error) {
	var bs store.BillingSettings
	var doc []byte
	err := s.pool.QueryRow(ctx, `
SELECT b.doc FROM accounts a LEFT JOIN billing_settings b ON b.account_id = a.id WHERE a.id = $1`, accountID).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return bs, store.ErrNotFound
	}
	if err != nil || doc == nil {
		return bs, err
	}
	return bs, json.Unmarshal(doc, &bs)
}

// UpdateBillingSettings locks the settings row (creating it) and applies
// fn under the lock, so nodes take turns.
func (s *Store) UpdateBillingSettings(ctx context.Context, accountID string, fn func(*store.BillingSettings) error) (store.BillingSettings, error) {
	var out store.BillingSettings
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO billing_settings (account_id, doc) VALUES ($1, '{}') ON CONFLICT DO NOTHING`, accountID)
		if pgCode(err) == codeForeignKeyViolation {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		var doc []byte
		if err := tx.QueryRow(ctx, `SELECT doc FROM billing_settings WHERE account_id = $1 FOR UPDATE`, accountID).Scan(&doc); err != nil {
			return err
		}
		bs := store.BillingSettings{}
		if err := json.Unmarshal(doc, &bs); err != nil {
			return err
		}
		if err := fn(&bs); err != nil {
			return err
		}
		if doc, err = json.Marshal(bs); err != nil {
			return err
		}
		out = bs
		_, err = tx.Exec(ctx, `UPDATE billing_settings SET doc = $2 WHERE account_id = $1`, accountID, doc)
		return err
	})
	return out, err
}
