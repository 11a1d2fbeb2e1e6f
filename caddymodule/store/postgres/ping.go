package postgres

import "context"

// Ping checks that the database answers (a pooled connection round trip);
// it is the store half of the gateway's readiness check, so the caller
// bounds it with a short timeout.
func (s *Store) Ping(ctx context.Context) error {
	return s.pool.Ping(ctx)
}
