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

func scanAccount(row pgx.Row) (store.Account, error) {
	var (
		a       store.Account
		balance int64
	)
	if err := row.Scan(&a.ID, &balance, &a.CreatedAt); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return store.Account{}, store.ErrNotFound
		}
		return store.Account{}, err
	}
	a.Balance = credits.Micros(balance)
	a.CreatedAt = a.CreatedAt.UTC()
	return a, nil
}

// CreateAccount creates an account; ErrExists if the id is taken.
func (s *Store) CreateAccount(ctx context.Context, id string, balance credits.Micros, now time.Time) (store.Account, error) {
	if !settle.ValidID(id) {
		return store.Account{}, fmt.Errorf("creating account: invalid id %q", id)
	}
	if balance < 0 {
		return store.Account{}, fmt.Errorf("creating account %s: negative balance %s", id, balance)
	}
	var a store.Account
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
		a, err = scanAccount(tx.QueryRow(ctx, `
INSERT INTO accounts (id, balance, created_at) VALUES ($1, $2, $3)
ON CONFLICT (id) DO NOTHING
RETURNING id, balance, created_at`, id, int64(balance), settle.Time(now)))
		if errors.Is(err, store.ErrNotFound) {
			return store.ErrExists // nothing inserted: the id is taken
		}
		if err != nil || balance == 0 || s.noLedger {
			return err
		}
		e, err := store.LedgerEntry{AccountID: id, Kind: store.LedgerOpening, Amount: balance, CreatedAt: a.CreatedAt}.Prepared(a.CreatedAt)
		if err == nil {
			_, err = tx.Exec(ctx, openingRowSQL, e.ID, id, int64(balance), e.CreatedAt)
		}
		return err
	})
	if err != nil {
		return store.Account{}, fmt.Errorf("creating account %s: %w", id, err)
	}
	return a, nil
}

// GetAccount returns an account; ErrNotFound if absent.
func (s *Store) GetAccount(ctx context.Context, id string) (store.Account, error) {
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT id, balance, created_at FROM accounts WHERE id = $1`, id))
	if err != nil {
		return store.Account{}, fmt.Errorf("getting account %s: %w", id, err)
	}
	return a, nil
}

// AddCredits adds amount (which may be negative, never below zero
// balance: ErrInsufficient) and returns the account.
func (s *Store) AddCredits(ctx context.Context, id string, amount credits.Micros) (store.Account, error) {
	if s.noLedger {
		return scanAccount(s.pool.QueryRow(ctx, `UPDATE accounts SET balance = balance + $2 WHERE id = $1 RETURNING id, balance, created_at`, id, int64(amount)))
	}
	// A Move: the balance and its adjustment row in one transaction, under
	// the account's row lock, which orders it with any concurrent Settle.
	if _, err := s.Move(ctx, store.LedgerEntry{AccountID: id, Kind: store.LedgerAdjustment, Amount: amount}); err != nil {
		if pgCode(err) == codeNumericOutOfRange {
			err = store.ErrOverflow
		}
		return store.Account{}, fmt.Errorf("adding %s credits to account %s: %w", amount, id, err)
	}
	return s.GetAccount(ctx, id)
}
