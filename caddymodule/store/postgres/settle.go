package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// Settle, in ONE transaction: debits min(len(Run.Data), balance/Price,
// hold/Price) records × Price from the run's account (never below zero;
// with Lines each record at its own price, see store.Store),
// deletes the run's hold (the capture), truncates
// Run.Data to match, writes the run, adds to the daily usage rollup of
// (account, day, offer, platform) and to the key's spend in the current
// bucket of each period. A failed run (Price 0, no data) is written and
// counted as a request with no charge.
//
// Concurrent settles on this node are grouped into shared transactions
// (see group.go): the account row lock is held through the commit's WAL
// flush, so one hot account would otherwise run one settle per flush.
func (s *Store) Settle(ctx context.Context, st store.Settlement) (store.SettleResult, error) {
	p, err := settle.Prepare(st)
	if err != nil {
		return store.SettleResult{}, err
	}
	// Compressed here, in parallel with the other callers, not by the
	// group's leader inside its transaction.
	if err := s.injected(); err != nil {
		s.noteWrite(err)
		return store.SettleResult{}, fmt.Errorf("settling run %s: %w", st.Run.ID, err)
	}
	w := &waiter{ctx: ctx, p: p, pk: settle.Pack(p)}
	s.settles.do(w, s.settleGroup)
	s.noteWrite(w.err)
	if w.err == nil {
		p.Release()
		w.res.CacheErr = s.putEntries(ctx, st.Cache, st.CacheMaxBytes)
	}
	return w.res, w.err
}

// putEntries stores a settled run's cache entries (store.Settlement.Cache)
// after its commit, in one round trip: on PostgreSQL a settle's cost is its
// round trips, not a sync of its own, and the group's transaction stays as
// it is.
func (s *Store) putEntries(ctx context.Context, entries []store.CacheEntry, maxBytes int64) error {
	if len(entries) == 0 {
		return nil
	}
	return s.cachePut(ctx, entries, maxBytes)
}

// The statements a settle runs after locking its account, shared by the
// one-run and the grouped transactions.
const (
	insertRunSQL = `
INSERT INTO runs (id, account_id, key_id, status, credits_used, created_at, doc,
	kind, platform, service, served_by, returned)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`
	addUsageSQL = `
INSERT INTO usage_daily (account_id, day, offer, platform, requests, records, credits)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (account_id, day, offer, platform) DO UPDATE SET
	requests = usage_daily.requests + EXCLUDED.requests,
	records = usage_daily.records + EXCLUDED.records,
	credits = usage_daily.credits + EXCLUDED.credits`
	addKeySpendSQL = `
INSERT INTO key_spend (key_id, period, bucket, credits)
VALUES ($1, $2, $3, $4)
ON CONFLICT (key_id, period, bucket) DO UPDATE SET credits = key_spend.credits + EXCLUDED.credits`
)

// queueInsertRun queues the insert of a settled run: its document doc of
// records records, in rundoc's form (pk's when packed), and the fields
// the run list reads as columns.
func queueInsertRun(b *pgx.Batch, run *runs.Run, keyID *string, charged credits.Micros, records int, doc []byte, pk settle.Packed) {
	b.Queue(insertRunSQL, run.ID, run.AccountID, keyID, string(run.Status), int64(charged), run.CreatedAt, pk.Value(records, doc),
		run.Kind, run.Platform, run.Service, run.ServedBy, records)
}

// settleOne settles one prepared run in its own transaction.
func (s *Store) settleOne(ctx context.Context, p *settle.Prepared, pk settle.Packed) (store.SettleResult, error) {
	st := p.S
	run := st.Run
	var res store.SettleResult
	ambiguous, err := s.settleTx(ctx, func(tx pgx.Tx) error {
		// The row lock serializes settles of one account across every
		// node; the balance read under it is the one the debit applies to.
		var balance int64
		err := tx.QueryRow(ctx, `SELECT balance FROM accounts WHERE id = $1 FOR UPDATE`, run.AccountID).Scan(&balance)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("account %s: %w", run.AccountID, store.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("locking account %s: %v", run.AccountID, err)
		}
		held, err := takeHolds(ctx, tx, []string{run.ID})
		if err != nil {
			return err
		}
		h, hasHold := held[run.ID]
		records, charged := p.Plan(settle.Payable(credits.Micros(balance), h, hasHold))
		doc, err := p.Doc(records, charged)
		if err != nil {
			return err
		}

		b := &pgx.Batch{}
		if charged > 0 {
			b.Queue(`
UPDATE accounts SET balance = balance - $2
WHERE id = $1 AND balance >= $2
RETURNING balance`, run.AccountID, int64(charged)).QueryRow(func(row pgx.Row) error {
				err := row.Scan(&balance)
				if errors.Is(err, pgx.ErrNoRows) {
					return fmt.Errorf("debiting %s would overdraw account %s", charged, run.AccountID)
				}
				return err
			})
		}
		var keyID *string
		if run.KeyID != "" {
			keyID = &run.KeyID
		}
		queueInsertRun(b, run, keyID, charged, records, doc, pk)
		for _, u := range p.Usage(records, charged) {
			b.Queue(addUsageSQL, run.AccountID, store.PeriodStart(store.PeriodDay, p.Now), u.Offer, st.Platform,
				u.Requests, u.Records, int64(u.Credits))
		}
		if run.KeyID != "" && charged > 0 {
			// Rows in a fixed order (and under the account's lock, which
			// every settle of the key takes first): no deadlock.
			for _, per := range store.Periods {
				b.Queue(addKeySpendSQL, run.KeyID, per, store.PeriodStart(per, p.Now), int64(charged))
			}
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			if pgCode(err) == codeUniqueViolation {
				return store.ErrExists // the run id is taken
			}
			return err
		}
		res = store.SettleResult{Records: records, Charged: charged, Balance: credits.Micros(balance)}
		return nil
	})
	if ambiguous {
		if got, ok, cerr := s.committed(context.WithoutCancel(ctx), p); cerr == nil && ok {
			return got, nil
		}
	}
	if err != nil {
		return store.SettleResult{}, fmt.Errorf("settling run %s: %w", run.ID, err)
	}
	p.Apply(res.Records, res.Charged)
	return res, nil
}

// Usage returns the account's rollup rows with Day >= since.
func (s *Store) Usage(ctx context.Context, accountID string, since time.Time) ([]store.UsageRow, error) {
	from := store.PeriodStart(store.PeriodDay, since)
	if from.Before(since) {
		from = from.AddDate(0, 0, 1)
	}
	rows, err := s.pool.Query(ctx, `
SELECT day, offer, platform, requests, records, credits FROM usage_daily
WHERE account_id = $1 AND day >= $2
ORDER BY day, offer, platform`, accountID, from)
	if err != nil {
		return nil, fmt.Errorf("reading usage of account %s: %v", accountID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.UsageRow, error) {
		var (
			u      store.UsageRow
			amount int64
		)
		err := r.Scan(&u.Day, &u.Offer, &u.Platform, &u.Requests, &u.Records, &amount)
		u.Day = time.Date(u.Day.Year(), u.Day.Month(), u.Day.Day(), 0, 0, 0, 0, time.UTC)
		u.Credits = credits.Micros(amount)
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading usage of account %s: %v", accountID, err)
	}
	if out == nil {
		out = []store.UsageRow{}
	}
	return out, nil
}
