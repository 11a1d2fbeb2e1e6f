package postgres

// asyncMigration is the schema of asynchronous runs in flight and of
// idempotency keys. A worker claims a run by taking its lease (owner,
// lease_until); the claim's FOR UPDATE SKIP LOCKED lets every node claim
// at once without two taking one run. request and doc are the API's JSON,
// opaque here. An idempotency key is scoped by its account.
var asyncMigration = migration{12, "async runs in flight and idempotency keys", `
CREATE TABLE async_runs (
	id           TEXT PRIMARY KEY, -- the run id
	account_id   TEXT NOT NULL,
	key_id       TEXT NOT NULL DEFAULT '',
	request      BYTEA NOT NULL,
	doc          BYTEA NOT NULL,
	hold_price   BIGINT NOT NULL,
	hold_records INTEGER NOT NULL,
	created_at   TIMESTAMPTZ NOT NULL,
	deadline     TIMESTAMPTZ NOT NULL,
	owner        TEXT NOT NULL DEFAULT '',
	lease_until  TIMESTAMPTZ, -- NULL: no worker took it yet
	cancelled    BOOLEAN NOT NULL DEFAULT false
);
CREATE INDEX async_runs_created ON async_runs (created_at);

CREATE TABLE idempotency_keys (
	account_id   TEXT NOT NULL,
	key          TEXT NOT NULL,
	fingerprint  BYTEA NOT NULL CHECK (length(fingerprint) = 32),
	run_id       TEXT NOT NULL,
	async        BOOLEAN NOT NULL,
	status       INTEGER NOT NULL DEFAULT 0, -- the HTTP status answered; 0 while running
	created_at   TIMESTAMPTZ NOT NULL,
	expires_at   TIMESTAMPTZ NOT NULL,
	locked_until TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);
`}

func init() { migrations = append(migrations, asyncMigration) }
