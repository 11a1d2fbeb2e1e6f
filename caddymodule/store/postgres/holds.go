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

// Reserve sets the hold of call h.ID: see store.Store. It is one call of
// reserve_hold (reserveLeanMigration), whose account row lock serializes
// it with every settle and reserve of the account on every node; a key
// belongs to one account, so that lock covers the key's spend and holds
// too. Reserves that arrive together are grouped (line) into one call of
// reserve_holds: their accounts locked in id order, then each hold in
// turn, each seeing the holds of the ones before, and one commit, in one
// statement. A lone reserve is reserve_hold's statement in autocommit.
func (s *Store) Reserve(ctx context.Context, h store.Hold) (store.HoldResult, error) {
	if !settle.ValidID(h.ID) || !settle.ValidID(h.AccountID) || h.Price < 0 {
		return store.HoldResult{}, fmt.Errorf("reserving for %q: invalid hold", h.ID)
	}
	now := h.Now
	if now.IsZero() {
		now = time.Now()
	}
	w := &reserveWaiter{ctx: ctx, h: h, buckets: make([]time.Time, len(store.Periods))}
	for i, per := range store.Periods {
		w.buckets[i] = store.PeriodStart(per, now)
	}
	if err := s.injected(); err != nil {
		s.noteWrite(err)
		return store.HoldResult{}, fmt.Errorf("reserving for %s: %w", h.ID, err)
	}
	s.reserves.do(w, s.reserveGroup)
	s.noteWrite(w.err)
	return w.res, w.err
}

// reserveWaiter is one Reserve call in the line.
type reserveWaiter struct {
	ctx     context.Context
	h       store.Hold
	buckets []time.Time // the start of each period's current bucket
	res     store.HoldResult
	err     error
}

const reserveSQL = `SELECT * FROM reserve_hold($1, $2, $3, $4, $5, $6, $7, $8)`

// args are reserveSQL's arguments for w.
func (s *Store) reserveArgs(w *reserveWaiter) []any {
	var keyID *string
	if w.h.KeyID != "" {
		keyID = &w.h.KeyID
	}
	return []any{w.h.ID, w.h.AccountID, keyID, w.buckets, store.Periods, int64(w.h.Price), w.h.Records, s.holdTimeout.Seconds()}
}

// scanHold sets w's outcome from reserveSQL's row. It returns only an
// error of reading the row; what the row says (no account, a disagreement
// with store.HoldRoom) is w's error.
func scanHold(w *reserveWaiter, row pgx.Row) error {
	var v holdRow
	err := row.Scan(&v.balance, &v.held, &v.period, &v.limit, &v.room, &v.amount)
	if errors.Is(err, pgx.ErrNoRows) {
		w.res, w.err = store.HoldResult{}, noAccount(w)
		return nil
	}
	if err != nil {
		return err
	}
	v.decide(w)
	return nil
}

// holdRow is what reserve_hold and reserve_holds read and decided for one
// hold.
type holdRow struct {
	balance, held, amount int64
	period                *string
	limit, room           *int64
}

// decide sets w's outcome from v: the hold store.HoldRoom gives on what
// the database read, which must be the amount the database held.
func (v holdRow) decide(w *reserveWaiter) {
	var limit *store.CreditLimit
	var keyRoom int64
	if v.period != nil && v.limit != nil && v.room != nil {
		limit, keyRoom = &store.CreditLimit{Period: *v.period, Credits: credits.Micros(*v.limit)}, *v.room
	}
	res := store.HoldRoom(credits.Micros(v.balance-v.held), limit, credits.Micros(keyRoom), w.h.Price, w.h.Records)
	if int64(res.Amount) != v.amount {
		// The database and store.HoldRoom disagree: a bug; the call fails
		// and its Release drops what was held.
		w.res, w.err = store.HoldResult{}, fmt.Errorf("reserving for %s: the database held %d, store.HoldRoom %d", w.h.ID, v.amount, res.Amount)
		return
	}
	w.res, w.err = res, nil
}

// noAccount is the error of a hold on an account that does not exist.
func noAccount(w *reserveWaiter) error {
	return fmt.Errorf("reserving for %s: account %s: %w", w.h.ID, w.h.AccountID, store.ErrNotFound)
}

// reserveHoldsSQL reserves a group in one statement: see
// reserveLeanMigration.
const reserveHoldsSQL = `SELECT * FROM reserve_holds($1, $2, $3, $4, $5, $6, $7, $8)`

// reserveGroup sets the hold of every waiter of group in one statement
// (reserve_holds), so one round trip and one commit. A group whose
// statement fails reserves one by one, so each fails with its own error;
// one that may have committed fails every call (an ambiguous commit is an
// error: the call fails and its Release drops the hold if it was written).
func (s *Store) reserveGroup(group []*reserveWaiter) (together bool) {
	if len(group) == 1 {
		s.reserveOne(group[0])
		return false
	}
	// The group must not depend on one caller's context: it has its own
	// bound.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		ids, accounts, keys = make([]string, len(group)), make([]string, len(group)), make([]*string, len(group))
		buckets             = make([]time.Time, 0, len(group)*len(store.Periods))
		prices              = make([]int64, len(group))
		wants               = make([]int, len(group))
	)
	for i, w := range group {
		ids[i], accounts[i], prices[i], wants[i] = w.h.ID, w.h.AccountID, int64(w.h.Price), w.h.Records
		if w.h.KeyID != "" {
			keys[i] = &w.h.KeyID
		}
		buckets = append(buckets, w.buckets...)
	}
	// Every decision is reserve_holds', in the server; the rows only say
	// what it decided (and a hold that disagrees with store.HoldRoom fails
	// its call without stopping the commit, which a lone reserve's
	// autocommit would not stop either).
	queue := func(b *pgx.Batch) {
		for _, w := range group {
			w.res, w.err = store.HoldResult{}, noAccount(w) // an account without a row
		}
		b.Queue(reserveHoldsSQL, ids, accounts, keys, buckets, store.Periods, prices, wants, s.holdTimeout.Seconds()).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var i int
				var v holdRow
				if err := rows.Scan(&i, &v.balance, &v.held, &v.period, &v.limit, &v.room, &v.amount); err != nil {
					return err
				}
				if i < 1 || i > len(group) {
					return fmt.Errorf("reserve_holds answered for hold %d of %d", i, len(group))
				}
				v.decide(group[i-1])
			}
			return rows.Err()
		})
	}
	ambiguous, err := s.batchTx(ctx, queue)
	switch {
	case err == nil:
		return true
	case ambiguous:
		for _, w := range group {
			w.res, w.err = store.HoldResult{}, fmt.Errorf("reserving for %s: %w", w.h.ID, err)
		}
	default:
		for _, w := range group {
			s.reserveOne(w)
		}
	}
	return false
}

// reserveOne sets w's hold in one statement in autocommit.
func (s *Store) reserveOne(w *reserveWaiter) {
	var err error
	for attempt := 0; ; attempt++ {
		err = scanHold(w, s.pool.QueryRow(w.ctx, reserveSQL, s.reserveArgs(w)...))
		if err == nil || !retryable(err) || attempt == maxRetries {
			break
		}
	}
	if err != nil {
		w.res, w.err = store.HoldResult{}, fmt.Errorf("reserving for %s: %w", w.h.ID, err)
	}
}

// Release drops the hold of a call, if it has one, in one statement whose
// commit does not wait for the WAL flush: see releaseMigration for why a
// crash that loses it breaks no money rule.
func (s *Store) Release(ctx context.Context, id string) error {
	if _, err := s.pool.Exec(ctx, `SELECT release_hold($1)`, id); err != nil {
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
