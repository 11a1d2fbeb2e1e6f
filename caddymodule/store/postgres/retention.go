package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/rundoc"
	"socialrouter/caddymodule/store/internal/settle"
)

// ExpireRuns expires at most limit runs created before cutoff, oldest
// first, in one short transaction: it locks those rows only (SKIP LOCKED,
// so nodes running retention at once share the work instead of waiting on
// each other, and settles, which insert new rows, never wait), rewrites
// each document without its records and sets expired_at. The billing
// columns (status, credits_used, returned, …) are not written. Only
// finished runs (completed or failed) expire: a run still being written
// keeps its records until it ends.
func (s *Store) ExpireRuns(ctx context.Context, cutoff, now time.Time, limit int) (store.ExpireResult, error) {
	var res store.ExpireResult
	if limit <= 0 {
		return res, nil
	}
	now = settle.Time(now)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		res = store.ExpireResult{}
		rows, err := tx.Query(ctx, `
SELECT id, doc FROM runs
WHERE expired_at IS NULL AND created_at < $1 AND status IN ('completed', 'failed')
ORDER BY created_at
LIMIT $2
FOR UPDATE SKIP LOCKED`, cutoff, limit)
		if err != nil {
			return err
		}
		var ids []string
		var docs [][]byte
		for rows.Next() {
			var id string
			var v []byte
			if err := rows.Scan(&id, &v); err != nil {
				rows.Close()
				return err
			}
			doc, err := rundoc.Append(nil, v)
			if err != nil {
				rows.Close()
				return fmt.Errorf("run %s: %v", id, err)
			}
			exp, already, err := settle.ExpireDoc(doc, now)
			if err != nil {
				rows.Close()
				return fmt.Errorf("run %s: %v", id, err)
			}
			if already {
				// Expired before the column existed: only the column is set.
				exp = doc
			}
			nv := rundoc.Encode(exp)
			ids = append(ids, id)
			docs = append(docs, nv)
			res.Bytes += int64(max(len(v)-len(nv), 0))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `
UPDATE runs SET doc = u.doc, expired_at = $3
FROM unnest($1::text[], $2::bytea[]) AS u(id, doc)
WHERE runs.id = u.id`, ids, docs, now); err != nil {
			return err
		}
		res.Runs = len(ids)
		return nil
	})
	if err != nil {
		return store.ExpireResult{}, fmt.Errorf("expiring runs: %v", err)
	}
	s.expiredSinceVacuum.Add(int64(res.Runs))
	return res, nil
}

// Reclaim vacuums the runs table (and so its TOAST table, where the
// records were) once runs expired since the last time: the space of the
// deleted records is then reused by new runs instead of growing the
// files. Plain VACUUM takes no lock that blocks reads or writes; the
// files keep their size (VACUUM FULL would rewrite them under an exclusive
// lock, which the gateway never takes), so it returns 0.
func (s *Store) Reclaim(ctx context.Context) (int64, error) {
	if s.expiredSinceVacuum.Swap(0) == 0 {
		return 0, nil
	}
	if _, err := s.pool.Exec(ctx, `VACUUM runs`); err != nil {
		return 0, fmt.Errorf("vacuuming runs: %v", err)
	}
	return 0, nil
}

// StoredBytes is the disk space of the runs table: heap, TOAST and indexes.
func (s *Store) StoredBytes(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT pg_total_relation_size('runs')`).Scan(&n); err != nil {
		return 0, fmt.Errorf("sizing runs: %v", err)
	}
	return n, nil
}

// expiredCounter is the count of runs expired since the last vacuum.
type expiredCounter = atomic.Int64

// Interface guards
var _ store.Expirer = (*Store)(nil)
