package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/store"
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
