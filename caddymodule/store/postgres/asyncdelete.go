package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// DeleteAsyncRun removes a settled run and takes it off its account's
// count of runs in flight (asyncCountMigration), in one transaction.
// Deletes that arrive together on this node are grouped (line) into one
// transaction of one round trip: the count row of a hot account is locked
// through the commit's WAL flush, so lone deletes of one account would
// take turns at one per flush.
func (s *Store) DeleteAsyncRun(ctx context.Context, id string) error {
	w := &deleteWaiter{ctx: ctx, id: id}
	s.deletes.do(w, s.deleteGroup)
	if w.err != nil {
		return fmt.Errorf("deleting async run %s: %w", id, w.err)
	}
	return nil
}

// deleteWaiter is one DeleteAsyncRun call in the line.
type deleteWaiter struct {
	ctx context.Context
	id  string
	err error
}

// deleteGroup deletes the runs of group in one transaction; if it fails,
// one by one, so that each fails with its own error.
func (s *Store) deleteGroup(group []*deleteWaiter) (together bool) {
	if len(group) > 1 {
		ctx, cancel := groupContext()
		defer cancel()
		ids := make([]string, len(group))
		for i, w := range group {
			ids[i] = w.id
		}
		if s.deleteRuns(ctx, ids) == nil {
			return true
		}
	}
	for _, w := range group {
		w.err = s.deleteRuns(w.ctx, []string{w.id})
	}
	return false
}

// deleteRuns deletes the runs ids in ONE transaction of ONE round trip
// (batchTx): the count rows of their accounts locked first, in id order
// (the order of every create and delete, so none can deadlock), then the
// runs deleted and taken off the counts. Deleting an absent run is no
// error.
func (s *Store) deleteRuns(ctx context.Context, ids []string) error {
	_, err := s.batchTx(ctx, func(b *pgx.Batch) {
		b.Queue(lockCountsOfRunsSQL, ids)
		b.Queue(deleteRunsSQL, ids)
	})
	return err
}

const (
	// lockCountsOfRunsSQL locks the count rows of the accounts of the
	// runs $1, in id order.
	lockCountsOfRunsSQL = `
SELECT 1 FROM async_counts WHERE account_id IN (SELECT account_id FROM async_runs WHERE id = ANY($1::text[]))
ORDER BY account_id FOR UPDATE`
	// deleteRunsSQL deletes the runs $1 and takes each off its account's
	// count (one statement may not update a row twice: summed first).
	deleteRunsSQL = `
WITH deleted AS (DELETE FROM async_runs WHERE id = ANY($1::text[]) RETURNING account_id)
UPDATE async_counts c SET runs = c.runs - d.runs
FROM (SELECT account_id, count(*)::int AS runs FROM deleted GROUP BY account_id) d
WHERE c.account_id = d.account_id`
)
