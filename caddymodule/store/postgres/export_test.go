package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// BatchTx is s.batchTx: what queue queues, as one transaction in one
// round trip.
func BatchTx(s *Store, ctx context.Context, queue func(b *pgx.Batch)) (ambiguous bool, err error) {
	return s.batchTx(ctx, queue)
}

// SetCommitFault makes the settle and grouped reserve commits of s report f's error after
// they committed: the ambiguous commit of a connection that broke.
func SetCommitFault(s *Store, f func() error) { s.commitFault = f }

// WithMigrationsUpTo makes Open apply the migrations up to version v only:
// a database as an earlier release left it.
func WithMigrationsUpTo(v int) Option { return func(c *config) { c.upTo = v } }

// ReserveInOrder reserves holds in their order: in one group
// (reserveGroup, as the line makes one) if grouped, else one by one
// (reserveOne, a lone Reserve each). together reports whether the group
// was reserved in one statement rather than one by one after it failed.
func ReserveInOrder(s *Store, ctx context.Context, holds []store.Hold, grouped bool) (res []store.HoldResult, errs []error, together bool) {
	group := make([]*reserveWaiter, len(holds))
	for i, h := range holds {
		w := &reserveWaiter{ctx: ctx, h: h, buckets: make([]time.Time, len(store.Periods))}
		for j, per := range store.Periods {
			w.buckets[j] = store.PeriodStart(per, h.Now)
		}
		group[i] = w
	}
	if grouped {
		together = s.reserveGroup(group)
	} else {
		for _, w := range group {
			s.reserveOne(w)
		}
	}
	res, errs = make([]store.HoldResult, len(holds)), make([]error, len(holds))
	for i, w := range group {
		res[i], errs[i] = w.res, w.err
	}
	return res, errs, together
}

// SetWriteFault makes every reservation, settle and probe write of s fail
// with err (nil: succeed again): what the database answers when its disk
// is full.
func SetWriteFault(s *Store, err error) {
	if err == nil {
		s.ws.fault.Store(nil)
		return
	}
	s.ws.fault.Store(&err)
}

// settleWaiters prepares settlements as the settle line queues them.
func settleWaiters(ctx context.Context, sts []store.Settlement) ([]*waiter, error) {
	group := make([]*waiter, len(sts))
	for i, st := range sts {
		p, err := settle.Prepare(st)
		if err != nil {
			return nil, err
		}
		group[i] = &waiter{ctx: ctx, p: p, pk: settle.Pack(p)}
	}
	return group, nil
}

// SettleFull is s.settleFull: the settlements as one group paid in full,
// in one round trip, or an error and nothing written.
func SettleFull(s *Store, ctx context.Context, sts []store.Settlement) ([]store.SettleResult, error) {
	group, err := settleWaiters(ctx, sts)
	if err != nil {
		return nil, err
	}
	res, _, err := s.settleFull(group)
	return res, err
}

// SettleGroup is s.settleGroup: the settlements as one group of the
// settle line, each with its own outcome. together reports whether they
// committed in one transaction.
func SettleGroup(s *Store, ctx context.Context, sts []store.Settlement) (res []store.SettleResult, errs []error, together bool) {
	group, err := settleWaiters(ctx, sts)
	if err != nil {
		return nil, []error{err}, false
	}
	together = s.settleGroup(group)
	res, errs = make([]store.SettleResult, len(group)), make([]error, len(group))
	for i, g := range group {
		res[i], errs[i] = g.res, g.err
	}
	return res, errs, together
}

// KillNodeLock closes the socket of node's lock connection as a killed
// process's kernel would: no goodbye to the server, no heartbeat ended.
// The store still thinks it holds the lock until its next beat.
func KillNodeLock(s *Store, node string) {
	s.locks.mu.Lock()
	l := s.locks.m[node]
	s.locks.mu.Unlock()
	if l != nil {
		_ = l.conn.PgConn().Conn().Close()
	}
}

// CreateInOneGroup creates runs as one group of the line would
// (createGroup), all under the cap max, and returns each one's error.
func CreateInOneGroup(s *Store, ctx context.Context, runs []store.AsyncRun, max int) []error {
	group := make([]*createWaiter, len(runs))
	for i, r := range runs {
		group[i] = &createWaiter{ctx: ctx, r: r, max: max}
	}
	s.createGroup(group)
	errs := make([]error, len(runs))
	for i, w := range group {
		errs[i] = w.err
	}
	return errs
}

// ClaimSQL is the statement of ClaimAsyncRuns, for its plan.
const ClaimSQL = claimSQL
