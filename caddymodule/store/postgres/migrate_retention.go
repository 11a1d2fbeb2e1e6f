package postgres

// retentionMigration is the column and index of run_retention: expired_at
// is when a run's records were deleted (its document rewritten without
// them, its billing columns untouched), and the partial index holds only
// runs that still have records, ordered by age, so a retention pass reads
// the oldest of them without scanning the runs it already expired. The
// index is built in the migration's transaction, which blocks settles
// while it is built: on a large runs table, run the migration in a quiet
// moment (docs/operations.md).
var retentionMigration = migration{11, "run retention: expired_at and the index of runs holding records", `
ALTER TABLE runs ADD COLUMN expired_at TIMESTAMPTZ;
CREATE INDEX runs_holding_records ON runs (created_at) WHERE expired_at IS NULL;
`}

func init() { migrations = append(migrations, retentionMigration) }
