package postgres

// nodesMigration parks async runs and leases them by node: a parked run
// (due_at set) has every upstream work it started recorded and no
// goroutine waiting for it; its owner node's poller checks that work at
// due_at, and the run's lease is the node's heartbeat (async_nodes), not
// a per-run lease_until (set far ahead while parked). A node whose
// live_until passed loses its parked runs to the next claim. The indexes
// serve the poller's sweep (owner, due_at) and the claim (lease_until, and
// owner for a dead node's runs).
var nodesMigration = migration{18, "async runs parked by due time, leased by their node's heartbeat", `
CREATE TABLE async_nodes (
	node         TEXT PRIMARY KEY,
	heartbeat_at TIMESTAMPTZ NOT NULL,
	live_until   TIMESTAMPTZ NOT NULL
);
ALTER TABLE async_runs ADD COLUMN due_at TIMESTAMPTZ;
CREATE INDEX async_runs_owner_due ON async_runs (owner, due_at);
CREATE INDEX async_runs_lease ON async_runs (lease_until);
`}

func init() { migrations = append(migrations, nodesMigration) }
