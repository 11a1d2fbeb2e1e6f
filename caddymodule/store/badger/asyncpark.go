package badger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// leaseIndex knows, in memory, who holds each async run in flight and
// until when, and when a parked run is due: a badger directory is opened
// by one process, so every write of a run passes here (after its
// transaction commits), and the index is rebuilt as the store opens. A
// claim and the poller's sweep read it instead of decoding every stored
// run: with 100,000 runs parked, a claim every two seconds that decoded
// them all cost more than the runs. The transactions check the stored
// record again; the index only finds candidates.
type leaseIndex struct {
	mu   sync.Mutex
	runs map[string]leaseMeta
	// nodes is each node's heartbeat: until when it lives. A node that
	// never beat in this process is dead (its process is gone).
	nodes map[string]time.Time
}

// leaseMeta is what a claim or a sweep needs of a run.
type leaseMeta struct {
	owner   string
	lease   time.Time
	created time.Time
	due     time.Time // zero: not parked
}

func metaOf(r asyncRecord) leaseMeta {
	return leaseMeta{owner: r.Owner, lease: r.LeaseUntil, created: r.CreatedAt, due: r.DueAt}
}

// set records run id as stored.
func (x *leaseIndex) set(id string, r asyncRecord) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.runs == nil {
		x.runs = map[string]leaseMeta{}
	}
	x.runs[id] = metaOf(r)
}

func (x *leaseIndex) remove(id string) {
	x.mu.Lock()
	delete(x.runs, id)
	x.mu.Unlock()
}

// beat records node's heartbeat.
func (x *leaseIndex) beat(node string, until time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.nodes == nil {
		x.nodes = map[string]time.Time{}
	}
	x.nodes[node] = until
}

// nodeLive reports whether node's heartbeat lives at now; x.mu is held.
func (x *leaseIndex) nodeLive(node string, now time.Time) bool {
	until, ok := x.nodes[node]
	return ok && now.Before(until)
}

// claimable lists the runs no live lease holds at now, oldest first, at
// most n.
func (x *leaseIndex) claimable(s *Store, now time.Time, n int) []string {
	return x.pick(n, func(m leaseMeta) (time.Time, bool) { return m.created, !s.liveLocked(m, now) })
}

// due lists owner's parked runs due at now, earliest first, at most n.
func (x *leaseIndex) due(owner string, now time.Time, n int) []string {
	return x.pick(n, func(m leaseMeta) (time.Time, bool) {
		return m.due, m.owner == owner && !m.due.IsZero() && !m.due.After(now)
	})
}

// pick lists at most n runs that match, by the time it gives, earliest
// first.
func (x *leaseIndex) pick(n int, match func(leaseMeta) (time.Time, bool)) []string {
	type cand struct {
		id string
		at time.Time
	}
	var cands []cand
	x.mu.Lock()
	for id, m := range x.runs {
		if at, ok := match(m); ok {
			cands = append(cands, cand{id, at})
		}
	}
	x.mu.Unlock()
	slices.SortFunc(cands, func(a, b cand) int { return a.at.Compare(b.at) })
	ids := make([]string, 0, min(n, len(cands)))
	for _, c := range cands[:min(n, len(cands))] {
		ids = append(ids, c.id)
	}
	return ids
}

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
	if !m.due.IsZero() {
		return s.async.leases.nodeLive(m.owner, now)
	}
	if _, ok := s.async.owners.Load(m.owner); !ok {
		return false
	}
	return now.Before(m.lease)
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
