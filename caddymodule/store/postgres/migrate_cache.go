package postgres

// cacheMigration holds the freshness cache shared by the nodes
// (store.Cache): entries with their expiry and last use (the eviction
// order), and the claims of live work in progress, so a node joins
// another's upstream job instead of starting it again. Both are
// rebuildable: export and retention leave them alone.
var cacheMigration = migration{17, "freshness cache entries and claims of live work", `
CREATE TABLE cache_entries (
	key        TEXT COLLATE "C" PRIMARY KEY,
	service    TEXT NOT NULL,
	value      BYTEA NOT NULL,
	bytes      BIGINT NOT NULL,
	created_at TIMESTAMPTZ NOT NULL,
	expires_at TIMESTAMPTZ NOT NULL,
	used_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX cache_entries_used ON cache_entries (used_at);
CREATE INDEX cache_entries_service ON cache_entries (service);
CREATE TABLE cache_claims (
	key        TEXT COLLATE "C" PRIMARY KEY,
	expires_at TIMESTAMPTZ NOT NULL
);
`}

func init() { migrations = append(migrations, cacheMigration) }
