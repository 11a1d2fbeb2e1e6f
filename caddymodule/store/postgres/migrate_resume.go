package postgres

// resumeMigration keeps, beside an async run in flight, the API's record
// of the paid upstream work it started (handles and what rebuilds each
// call), so a node that takes the run over resumes that work instead of
// starting it again. Opaque here; NULL until the run starts upstream work
// (a new run has none: CreateAsyncRun leaves it NULL).
var resumeMigration = migration{15, "async runs: the upstream work they started, to resume it", `
ALTER TABLE async_runs ADD COLUMN resume BYTEA;
`}

func init() { migrations = append(migrations, resumeMigration) }
