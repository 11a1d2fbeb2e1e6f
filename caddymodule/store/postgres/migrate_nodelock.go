package postgres

// nodeLockMigration lets a node's death be known at once: lock_key, set,
// is the session-level advisory lock the node holds on a connection of
// its own for its whole life (nodelock.go). PostgreSQL releases it when
// that session ends, a killed process's with it, so the claim takes the
// parked runs of a node whose lock nobody holds without waiting for its
// heartbeat (live_until) to lapse. NULL: a node that holds no lock (an
// older release, or one that could not take it), known dead only by its
// heartbeat, as before.
var nodeLockMigration = migration{19, "async nodes: the advisory lock that tells a dead node at once", `
ALTER TABLE async_nodes ADD COLUMN lock_key BIGINT;
`}

func init() { migrations = append(migrations, nodeLockMigration) }
