package badger

import (
	"context"
	"errors"
	"fmt"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// live reports whether a lease holds the run at now: a parked run's by
// its owner node's heartbeat, another's by a worker that claimed in this
// process and whose lease has not lapsed.
func (s *Store) live(r asyncRecord, now time.Time) bool {
	s.async.leases.mu.Lock()
	defer s.async.leases.mu.Unlock()
	return s.liveLocked(metaOf(r), now)
}

// liveLocked is live with s.async.leases.mu held.
func (s *Store) liveLocked(m leaseMeta, now time.Time) bool {
	if m.owner == "" {
		return false
	}
	if m.due != 0 {
		return s.async.leases.nodeLive(m.owner, now)
	}
	if _, ok := s.async.owners.Load(m.owner); !ok {
		return false
	}
	return nanos(now) < m.lease
}

// changeAsync applies fn to owner's stored run id in one transaction (fn
// false: leave it) and indexes the result; ErrLeaseLost when the run is
// gone or another owner's.
func (s *Store) changeAsync(ctx context.Context, owner, id string, fn func(r *asyncRecord) bool) error {
	var out asyncRecord
	changed := false
	err := s.update(ctx, func(txn *bdb.Txn) error {
		r, err := readAsync(txn, id)
		if errors.Is(err, store.ErrNotFound) || err == nil && owner != "" && r.Owner != owner {
			return store.ErrLeaseLost
		}
		if err != nil {
			return err
		}
		if changed = fn(&r); !changed {
			return nil
		}
		out = r
		return writeAsync(txn, id, r)
	})
	if err == nil && changed {
		s.async.leases.set(id, out)
	}
	return err
}

// UnparkAsyncRun gives a parked run back to a goroutine of owner.
func (s *Store) UnparkAsyncRun(ctx context.Context, owner, id string, until time.Time) error {
	err := s.changeAsync(ctx, owner, id, func(r *asyncRecord) bool {
		r.DueAt, r.LeaseUntil = time.Time{}, settle.Time(until)
		return true
	})
	if err != nil {
		return fmt.Errorf("unparking async run %s: %w", id, err)
	}
	return nil
}

// DueAsyncRuns returns owner's parked runs due at now, from the index.
func (s *Store) DueAsyncRuns(ctx context.Context, owner string, now time.Time, n int) ([]store.AsyncRun, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ids := s.async.leases.due(owner, now, n)
	out := make([]store.AsyncRun, 0, len(ids))
	err := s.db.View(func(txn *bdb.Txn) error {
		for _, id := range ids {
			r, err := readAsync(txn, id)
			if errors.Is(err, store.ErrNotFound) {
				continue // settled since the index was read
			}
			if err != nil {
				return err
			}
			if r.Owner == owner && !r.DueAt.IsZero() {
				out = append(out, r.run(id))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading due async runs: %w", err)
	}
	return out, nil
}

// DelayAsyncRuns sets the due times of owner's parked runs, asyncBatch
// runs a transaction.
func (s *Store) DelayAsyncRuns(ctx context.Context, owner string, ids []string, due []time.Time) error {
	if len(ids) != len(due) {
		return fmt.Errorf("delaying async runs: %d ids, %d times", len(ids), len(due))
	}
	for start := 0; start < len(ids); start += asyncBatch {
		end := min(len(ids), start+asyncBatch)
		written := map[string]asyncRecord{}
		err := s.update(ctx, func(txn *bdb.Txn) error {
			clear(written)
			for i := start; i < end; i++ {
				r, err := readAsync(txn, ids[i])
				if errors.Is(err, store.ErrNotFound) || err == nil && (r.Owner != owner || r.DueAt.IsZero()) {
					continue
				}
				if err != nil {
					return err
				}
				r.DueAt = settle.Time(due[i])
				if err := writeAsync(txn, ids[i], r); err != nil {
					return err
				}
				written[ids[i]] = r
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("delaying async runs: %w", err)
		}
		for id, r := range written {
			s.async.leases.set(id, r)
		}
	}
	return nil
}

// WakeAsyncRun makes a parked run due at now.
func (s *Store) WakeAsyncRun(ctx context.Context, id string, now time.Time) (owner string, parked bool, err error) {
	err = s.changeAsync(ctx, "", id, func(r *asyncRecord) bool {
		owner, parked = r.Owner, !r.DueAt.IsZero()
		if !parked || !r.DueAt.After(now) {
			return false
		}
		r.DueAt = settle.Time(now)
		return true
	})
	if errors.Is(err, store.ErrLeaseLost) {
		err = store.ErrNotFound
	}
	if err != nil {
		return "", false, fmt.Errorf("waking async run %s: %w", id, err)
	}
	return owner, parked, nil
}

// HeartbeatNode records that node lives until until. Holds live in
// memory here and do not expire: nothing else to renew.
func (s *Store) HeartbeatNode(ctx context.Context, node string, now, until time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.async.leases.beat(node, until)
	return nil
}
