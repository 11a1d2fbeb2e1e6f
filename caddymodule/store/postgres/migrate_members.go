package postgres

// membersMigration is the dashboard's schema: members, invites, sessions,
// the activity trail and an index for listing an account's runs.
var membersMigration = migration{4, "dashboard members, invites, sessions, activity and run listing", `
CREATE TABLE members (
	id            TEXT PRIMARY KEY,
	account_id    TEXT NOT NULL REFERENCES accounts (id),
	email         TEXT NOT NULL UNIQUE, -- lower-cased
	password_hash TEXT NOT NULL,
	created_at    TIMESTAMPTZ NOT NULL
);

-- Only the SHA-256 of an invite's one-time token is stored.
CREATE TABLE invites (
	token_hash BYTEA PRIMARY KEY CHECK (length(token_hash) = 32),
	account_id TEXT NOT NULL REFERENCES accounts (id),
	email      TEXT NOT NULL,
	created_at TIMESTAMPTZ NOT NULL,
	expires_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE sessions (
	id         TEXT PRIMARY KEY, -- hex SHA-256 of the cookie token
	member_id  TEXT NOT NULL REFERENCES members (id) ON DELETE CASCADE,
	account_id TEXT NOT NULL,
	created_at TIMESTAMPTZ NOT NULL,
	last_seen  TIMESTAMPTZ NOT NULL,
	expires_at TIMESTAMPTZ NOT NULL,
	user_agent TEXT NOT NULL DEFAULT '',
	ip         TEXT NOT NULL DEFAULT ''
);
CREATE INDEX sessions_member ON sessions (member_id);

CREATE TABLE activity (
	seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	account_id TEXT NOT NULL,
	at         TIMESTAMPTZ NOT NULL,
	member     TEXT NOT NULL,
	action     TEXT NOT NULL,
	detail     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX activity_account ON activity (account_id, at DESC, seq DESC);

CREATE INDEX runs_account_created ON runs (account_id, created_at DESC, id DESC);
`}

func init() { migrations = append(migrations, membersMigration) }
