package store

// Capabilities is the one list of a store's optional parts: those one
// implementation has and another has not. A caller asks the store for
// them instead of asserting types, so a decorator (the metrics one) only
// has to forward this list, and nobody unwraps decorators by hand.
type Capabilities struct {
	// Backup streams an online backup (badger); nil for a store backed up
	// with its own tools (PostgreSQL: pg_dump, see ErrNoBackup).
	Backup Backuper
}

// Capable is a store that lists its optional parts.
type Capable interface {
	Capabilities() Capabilities
}
