package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
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
