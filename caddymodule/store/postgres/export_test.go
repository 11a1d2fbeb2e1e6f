package postgres

// SetCommitFault makes the settle commits of s report f's error after
// they committed: the ambiguous commit of a connection that broke.
func SetCommitFault(s *Store, f func() error) { s.commitFault = f }

// WithMigrationsUpTo makes Open apply the migrations up to version v only:
// a database as an earlier release left it.
func WithMigrationsUpTo(v int) Option { return func(c *config) { c.upTo = v } }
