package postgres

import "socialrouter/caddymodule/store"

// Capabilities lists the PostgreSQL store's optional parts: none (it is
// backed up with pg_dump, not through the gateway).
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{}
}
