package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// ThrottleAttempt counts an attempt against every key, or against none,
// in one transaction: the keys' rows are created if absent and locked in
// key order (so two attempts on overlapping keys cannot deadlock), the
// shared rule decides (store.ThrottleRule.Step), and the new counts are
// written only if no key must wait.
func (s *Store) ThrottleAttempt(ctx context.Context, now time.Time, keys ...store.ThrottleKey) (store.ThrottleResult, error) {
	now = settle.Time(now)
	keys = slices.Clone(keys)
	slices.SortFunc(keys, func(a, b store.ThrottleKey) int { return strings.Compare(a.Key, b.Key) })
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Key
	}
	var res store.ThrottleResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		res = store.ThrottleResult{}
		if _, err := tx.Exec(ctx, `
DELETE FROM throttle WHERE key IN (SELECT key FROM throttle WHERE expires_at <= $1 LIMIT 20 FOR UPDATE SKIP LOCKED)`, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
INSERT INTO throttle (key, count, expires_at) SELECT k, 0, $2 FROM unnest($1::text[]) AS k ORDER BY k
ON CONFLICT (key) DO NOTHING`, names, now); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT key, count, next_at, last_at FROM throttle WHERE key = ANY($1) ORDER BY key FOR UPDATE`, names)
		if err != nil {
			return err
		}
		states := map[string]store.ThrottleState{}
		for rows.Next() {
			var key string
			var st store.ThrottleState
			var next, last *time.Time
			if err := rows.Scan(&key, &st.Count, &next, &last); err != nil {
				rows.Close()
				return err
			}
			if next != nil {
				st.Next = next.UTC()
			}
			if last != nil {
				st.Last = last.UTC()
			}
			states[key] = st
		}
		if err := rows.Err(); err != nil {
			return err
		}
		next := make([]store.ThrottleState, len(keys))
		for i, k := range keys {
			var wait time.Duration
			next[i], wait = k.Rule.Step(states[k.Key], now)
			res.Wait = max(res.Wait, wait)
			res.Count = max(res.Count, next[i].Count)
		}
		if res.Wait > 0 {
			return nil
		}
		b := &pgx.Batch{}
		for i, k := range keys {
			st := next[i]
			b.Queue(`UPDATE throttle SET count = $2, next_at = $3, last_at = $4, expires_at = $5 WHERE key = $1`,
				k.Key, st.Count, nullTime(st.Next), nullTime(st.Last), k.Rule.Expires(st))
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return store.ThrottleResult{}, fmt.Errorf("counting an attempt: %w", err)
	}
	return res, nil
}

// ThrottleReset forgets keys' attempts.
func (s *Store) ThrottleReset(ctx context.Context, keys ...string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM throttle WHERE key = ANY($1)`, keys); err != nil {
		return fmt.Errorf("resetting attempts: %w", err)
	}
	return nil
}

// ThrottleRelease takes one attempt back from each key, in key order
// under the rows' locks (store.ThrottleRule.Release decides).
func (s *Store) ThrottleRelease(ctx context.Context, now time.Time, keys ...store.ThrottleKey) error {
	now = settle.Time(now)
	keys = slices.Clone(keys)
	slices.SortFunc(keys, func(a, b store.ThrottleKey) int { return strings.Compare(a.Key, b.Key) })
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		for _, k := range keys {
			var st store.ThrottleState
			var next, last *time.Time
			err := tx.QueryRow(ctx, `SELECT count, next_at, last_at FROM throttle WHERE key = $1 FOR UPDATE`, k.Key).Scan(&st.Count, &next, &last)
			if errors.Is(err, pgx.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			if next != nil {
				st.Next = next.UTC()
			}
			if last != nil {
				st.Last = last.UTC()
			}
			st = k.Rule.Release(st, now)
			if st.Count == 0 {
				_, err = tx.Exec(ctx, `DELETE FROM throttle WHERE key = $1`, k.Key)
			} else {
				_, err = tx.Exec(ctx, `UPDATE throttle SET count = $2, next_at = $3, last_at = $4, expires_at = $5 WHERE key = $1`,
					k.Key, st.Count, nullTime(st.Next), nullTime(st.Last), k.Rule.Expires(st))
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("releasing an attempt: %w", err)
	}
	return nil
}
