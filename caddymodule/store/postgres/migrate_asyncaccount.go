package postgres

// asyncAccountMigration indexes the async runs in flight by account: the
// cap of runs in flight per account counts them at every submit, and the
// dashboard lists them, newest first.
var asyncAccountMigration = migration{14, "async runs in flight by account", `
CREATE INDEX async_runs_account ON async_runs (account_id, created_at);
`}

func init() { migrations = append(migrations, asyncAccountMigration) }
