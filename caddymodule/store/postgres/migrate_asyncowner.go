package postgres

// asyncOwnerMigration indexes the async runs in flight by owner in
// creation order, for the claim of a dead node's runs (ClaimAsyncRuns),
// and the runs queued (no lease) in creation order, in place of the
// creation index. The claim took the oldest claimable runs by the
// creation index, testing every row until it found them, and each batch
// of a takeover skipped the runs the batches before had taken: a node
// restarted after holding 100,000 runs needed 35 s to take them back, and
// every claim of an idle node read all 100,000 rows (0.45 s every 2 s)
// where PostgreSQL has no statistics yet (autovacuum off, as on the test
// server). The claim now reads each dead node's oldest runs by the first
// index, and the oldest runs queued by the second (a few normally; many
// when submits come faster than the nodes take them). Nothing else read
// the creation index (the lists read the account's), and while it was
// there the planner, its statistics saying the dead node held every run,
// read the dead node's runs by it instead, filtering out again the runs
// the batches before had taken; and every write of a run that PostgreSQL
// could not make in place (HOT) wrote an entry into it too.
var asyncOwnerMigration = migration{21, "async runs by owner and queued runs, in creation order, for claims, in place of the creation index", `
CREATE INDEX async_runs_owner_created ON async_runs (owner, created_at);
CREATE INDEX async_runs_queued ON async_runs (created_at) WHERE lease_until IS NULL;
DROP INDEX async_runs_created;
`}

func init() { migrations = append(migrations, asyncOwnerMigration) }
