package postgres

// asyncOwnerMigration indexes the async runs in flight by owner in
// creation order, for the claim of a dead node's runs (ClaimAsyncRuns):
// the claim took the oldest claimable runs by the creation index,
// testing every row until it found them, and each batch of a takeover
// skipped the runs the batches before had taken: a node restarted after
// holding 100,000 runs needed 35 s to take them back, and every claim of
// an idle node read all 100,000 rows (0.45 s every 2 s) where PostgreSQL
// has no statistics yet (autovacuum off, as on the test server). The
// claim now reads each dead node's oldest runs by this index.
var asyncOwnerMigration = migration{21, "async runs by owner in creation order, for claims", `
CREATE INDEX async_runs_owner_created ON async_runs (owner, created_at);
`}

func init() { migrations = append(migrations, asyncOwnerMigration) }
