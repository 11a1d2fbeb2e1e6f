package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// UpdateAsyncRun writes the run's document, hold and resume record, and
// parks the run when r.DueAt is set (its lease then the node's);
// ErrLeaseLost unless owner holds the run. Updates that arrive together
// on this node are grouped (line) into one statement and one commit: each
// run writes its progress two or three times as it starts (its attempt,
// its upstream work, its park), so a node taking submits ran as many
// commits again as the submits themselves, each holding a pooled
// connection through its WAL flush, and the submits waited for those
// connections (the pool has 4 by default).
func (s *Store) UpdateAsyncRun(ctx context.Context, owner string, r store.AsyncRun) error {
	w := &updateWaiter{ctx: ctx, owner: owner, r: r}
	s.updates.do(w, s.updateGroup)
	if w.err != nil {
		return fmt.Errorf("updating async run %s: %w", r.ID, w.err)
	}
	return nil
}

// updateWaiter is one UpdateAsyncRun call in the line.
type updateWaiter struct {
	ctx   context.Context
	owner string
	r     store.AsyncRun
	err   error
}

// updateGroup writes the updates of group in one statement, each run
// once: a second update of a run in the group is written after, alone, so
// the later write stays the last. If the statement fails, the updates are
// written one by one, so that each fails with its own error.
func (s *Store) updateGroup(group []*updateWaiter) (together bool) {
	var first, again []*updateWaiter
	seen := make(map[string]bool, len(group))
	for _, w := range group {
		if seen[w.r.ID] {
			again = append(again, w)
			continue
		}
		seen[w.r.ID] = true
		first = append(first, w)
	}
	together = len(group) > 1 && len(again) == 0
	if len(first) > 1 {
		ctx, cancel := groupContext()
		defer cancel()
		if err := s.updateRuns(ctx, first); err != nil {
			together = false
			again = append(first, again...)
		}
	} else {
		again = append(first, again...)
	}
	for _, w := range again {
		if err := s.updateRuns(w.ctx, []*updateWaiter{w}); err != nil {
			w.err = err
		}
	}
	return together
}

// updateRuns writes the updates ws, of distinct runs, in one statement
// (updateRunsSQL), setting each waiter's outcome: ErrLeaseLost for a run
// its owner does not hold (or that is gone). An error is the statement's,
// and no waiter's outcome is set.
func (s *Store) updateRuns(ctx context.Context, ws []*updateWaiter) error {
	n := len(ws)
	ids, owners := make([]string, n), make([]string, n)
	docs, resumes := make([][]byte, n), make([][]byte, n)
	prices, records := make([]int64, n), make([]int, n)
	due := make([]*time.Time, n)
	for i, w := range ws {
		r := w.r
		ids[i], owners[i], docs[i], resumes[i] = r.ID, w.owner, r.Doc, r.Resume
		prices[i], records[i] = int64(r.HoldPrice), r.HoldRecords
		if !r.DueAt.IsZero() {
			t := settle.Time(r.DueAt)
			due[i] = &t
		}
	}
	written := make(map[string]bool, n)
	rows, err := s.pool.Query(ctx, updateRunsSQL, ids, owners, docs, prices, records, resumes, due, store.NodeLease)
	if err == nil {
		var id string
		_, err = pgx.ForEachRow(rows, []any{&id}, func() error {
			written[id] = true
			return nil
		})
	}
	if err != nil {
		return err
	}
	for _, w := range ws {
		w.err = nil
		if !written[w.r.ID] {
			w.err = store.ErrLeaseLost
		}
	}
	return nil
}

// updateRunsSQL writes each run $1[i] that its owner $2[i] holds, and
// returns the ids written. A run parked ($7[i] set) takes the node's lease
// ($8, store.NodeLease); one not parked keeps its lease.
const updateRunsSQL = `
UPDATE async_runs a SET doc = u.doc, hold_price = u.hold_price, hold_records = u.hold_records, resume = u.resume,
	due_at = u.due_at, lease_until = CASE WHEN u.due_at IS NULL THEN a.lease_until ELSE $8::timestamptz END
FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bigint[], $5::int[], $6::bytea[], $7::timestamptz[])
	AS u(id, owner, doc, hold_price, hold_records, resume, due_at)
WHERE a.id = u.id AND a.owner = u.owner
RETURNING a.id`
