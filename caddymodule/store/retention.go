package store

import (
	"context"
	"time"
)

// Expirer is a store that can delete old runs' records (the app's
// run_retention) while keeping what billing needs: the run's id, status,
// service, served_by, credits_used, pagination counts, timestamps and
// attempts stay, and usage rollups and balances are never touched, so
// usage and invoices read the same after a run expired.
type Expirer interface {
	// ExpireRuns expires at most limit runs created before cutoff that
	// still hold their records, in one short write: each run's data becomes
	// [] with records_expired true and expired_at now. Runs is how many
	// it expired (fewer than limit: none are left before cutoff), Bytes how
	// many bytes of stored documents that removed.
	ExpireRuns(ctx context.Context, cutoff, now time.Time, limit int) (ExpireResult, error)
	// Reclaim gives the space of expired records back where the store
	// must do it itself (badger: value-log garbage collection) and returns
	// the bytes the store's files shrank by; stores whose database reuses
	// the space on its own (PostgreSQL's autovacuum) return 0.
	Reclaim(ctx context.Context) (int64, error)
	// StoredBytes is the size of the store's files (badger: the LSM tree
	// and value log; PostgreSQL: the runs table with its indexes and
	// TOAST), for the metrics and the benchmark.
	StoredBytes(ctx context.Context) (int64, error)
}

// ExpireResult is what one ExpireRuns call did.
type ExpireResult struct {
	Runs  int
	Bytes int64
	// More is set when the store has more work before the cutoff than the
	// runs it expired say (badger: indexing the runs an older gateway
	// stored): call again without waiting for the next pass.
	More bool
}
