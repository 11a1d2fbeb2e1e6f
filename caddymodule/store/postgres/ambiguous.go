package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// settleTx runs a settle's transaction like inTx, and reports whether a
// failure was ambiguous: the COMMIT itself failed without an answer from
// the server (the connection broke), so the server may have committed.
// A settle must then look before it settles again, or it answers 503 (the
// run id is taken, by itself) for a run that is stored and charged.
func (s *Store) settleTx(ctx context.Context, fn func(tx pgx.Tx) error) (ambiguous bool, err error) {
	for attempt := 0; ; attempt++ {
		tx, err := s.pool.Begin(ctx)
		if err != nil {
			return false, err
		}
		if err = fn(tx); err != nil {
			_ = tx.Rollback(ctx)
			if retryable(err) && attempt < maxRetries {
				continue
			}
			return false, err
		}
		err = tx.Commit(ctx)
		if err == nil && s.commitFault != nil {
			err = s.commitFault()
		}
		if err == nil {
			return false, nil
		}
		if retryable(err) && attempt < maxRetries {
			continue
		}
		var pe interface{ SQLState() string }
		return !errors.As(err, &pe), err
	}
}

// committed returns the result of a settle whose run is already stored:
// after an ambiguous commit, the run found under its id is this settle's
// own commit. ok is false when the run is not stored (the commit did not
// happen).
func (s *Store) committed(ctx context.Context, p *settle.Prepared) (res store.SettleResult, ok bool, err error) {
	run := p.S.Run
	stored, err := s.GetRun(ctx, run.AccountID, run.ID)
	if errors.Is(err, store.ErrNotFound) {
		return res, false, nil
	}
	if err != nil {
		return res, false, fmt.Errorf("looking for run %s after an ambiguous commit: %w", run.ID, err)
	}
	var balance int64
	if err := s.pool.QueryRow(ctx, `SELECT balance FROM accounts WHERE id = $1`, run.AccountID).Scan(&balance); err != nil {
		return res, false, fmt.Errorf("reading account %s after an ambiguous commit: %v", run.AccountID, err)
	}
	res = store.SettleResult{Records: len(stored.Data), Charged: stored.CreditsUsed, Balance: credits.Micros(balance)}
	p.Apply(res.Records, res.Charged)
	return res, true, nil
}
