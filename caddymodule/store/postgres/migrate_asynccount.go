package postgres

// asyncCountMigration keeps each account's count of async runs in flight
// in a row of its own. The cap of runs in flight was a count(*) of the
// account's runs at every submit, twice (the pre-check and the insert's
// check under the account's lock): linear in the runs held, so a node
// holding 100,000 runs of one account took its submits at 28–44/s on
// PostgreSQL. A create now locks the row, checks and adds to it in the
// statement that inserts the run (asynccreate.go), a delete takes its run
// off it (asyncdelete.go), both in the transaction that writes the run.
// The row lock replaces the advisory lock of the account: creates and
// deletes of one account on every node take turns on it.
var asyncCountMigration = migration{20, "async runs in flight counted per account", `
CREATE TABLE async_counts (
	account_id TEXT PRIMARY KEY,
	runs       INTEGER NOT NULL CHECK (runs >= 0)
);
LOCK TABLE async_runs IN SHARE MODE;
INSERT INTO async_counts (account_id, runs) SELECT account_id, count(*) FROM async_runs GROUP BY account_id;
`}

func init() { migrations = append(migrations, asyncCountMigration) }
