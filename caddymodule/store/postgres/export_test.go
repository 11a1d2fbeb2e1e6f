package postgres

// SetCommitFault makes the settle commits of s report f's error after
// they committed: the ambiguous commit of a connection that broke.
func SetCommitFault(s *Store, f func() error) { s.commitFault = f }
