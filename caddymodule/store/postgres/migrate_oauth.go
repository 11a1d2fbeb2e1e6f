package postgres

// oauthMigration is the OAuth server's schema: a grant is a key of kind
// 'oauth' (so it has a key's limit, spend and revocation), and its
// clients, codes and tokens are records keyed by the SHA-256 of the secret.
var oauthMigration = migration{5, "oauth grants as keys of a kind, and oauth records", `
ALTER TABLE api_keys ADD COLUMN kind TEXT NOT NULL DEFAULT '';

CREATE TABLE oauth_records (
	hash       BYTEA PRIMARY KEY CHECK (length(hash) = 32), -- SHA-256 of the secret
	kind       TEXT NOT NULL,
	grant_id   TEXT NOT NULL DEFAULT '',
	data       BYTEA NOT NULL,
	created_at TIMESTAMPTZ NOT NULL,
	expires_at TIMESTAMPTZ NOT NULL,
	used       BOOLEAN NOT NULL DEFAULT false
);
CREATE INDEX oauth_records_expires ON oauth_records (expires_at);
`}

func init() { migrations = append(migrations, oauthMigration) }
