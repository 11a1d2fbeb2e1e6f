package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migration is one versioned, forward-only schema change. Versions are
// applied in order, each in its own transaction, and never edited once
// released: a change is a new migration.
type migration struct {
	version int
	name    string
	sql     string
}

var migrations = []migration{
	{1, "accounts, keys, runs, usage rollups and key spend", `
CREATE TABLE accounts (
	id         TEXT PRIMARY KEY,
	balance    BIGINT NOT NULL CHECK (balance >= 0), -- micro-credits
	created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE api_keys (
	seq           BIGINT GENERATED ALWAYS AS IDENTITY, -- creation order
	id            TEXT PRIMARY KEY,
	account_id    TEXT NOT NULL REFERENCES accounts (id),
	name          TEXT NOT NULL DEFAULT '',
	hash          BYTEA NOT NULL UNIQUE CHECK (length(hash) = 32), -- SHA-256 of the secret
	display       TEXT NOT NULL,
	created_at    TIMESTAMPTZ NOT NULL,
	revoked_at    TIMESTAMPTZ,
	limit_period  TEXT CHECK (limit_period IN ('hour', 'day', 'week', 'month')),
	limit_credits BIGINT CHECK (limit_credits >= 0),
	CHECK ((limit_period IS NULL) = (limit_credits IS NULL))
);
CREATE INDEX api_keys_account_seq ON api_keys (account_id, seq);

-- doc is JSON, not JSONB: records are served back byte for byte, in their
-- key order.
CREATE TABLE runs (
	id           TEXT PRIMARY KEY,
	account_id   TEXT NOT NULL REFERENCES accounts (id),
	key_id       TEXT,
	status       TEXT NOT NULL,
	credits_used BIGINT NOT NULL,
	created_at   TIMESTAMPTZ NOT NULL,
	doc          JSON NOT NULL
);

-- One row per (account, UTC day, offer, platform): a year of usage is at
-- most 365 × offers rows, read by one range scan of the primary key.
CREATE TABLE usage_daily (
	account_id TEXT NOT NULL,
	day        DATE NOT NULL,
	offer      TEXT COLLATE "C" NOT NULL,
	platform   TEXT COLLATE "C" NOT NULL,
	requests   BIGINT NOT NULL,
	records    BIGINT NOT NULL,
	credits    BIGINT NOT NULL,
	PRIMARY KEY (account_id, day, offer, platform)
);

-- A key's spend per credit-limit period bucket (bucket = period start, UTC).
CREATE TABLE key_spend (
	key_id  TEXT NOT NULL,
	period  TEXT NOT NULL,
	bucket  TIMESTAMPTZ NOT NULL,
	credits BIGINT NOT NULL,
	PRIMARY KEY (key_id, period, bucket)
);
`},
	{2, "run documents compressed with lz4 where the server has it", `
-- Run documents are 3-30 KB of JSON and TOASTed: pglz compression was the
-- largest cost of a settle in the database (about 3x lz4's on 9 KB
-- documents here). EXECUTE defers the statement to run time, so a server
-- before PostgreSQL 14, or built without lz4, keeps pglz instead of
-- failing the migration.
DO $$
BEGIN
	EXECUTE 'ALTER TABLE runs ALTER COLUMN doc SET COMPRESSION lz4';
EXCEPTION WHEN OTHERS THEN
	RAISE NOTICE 'runs.doc keeps the default compression: %', SQLERRM;
END
$$;
`},
	{3, "holds: money reserved for calls in flight", `
-- A hold is money set aside for one call before its upstream is called
-- (Reserve), captured and deleted by the call's Settle. A node that dies
-- mid-call leaves its holds behind: they stop counting at expires_at
-- (the database's clock, the same for every node) and the reaper deletes
-- them.
CREATE TABLE holds (
	id         TEXT PRIMARY KEY, -- the call's run id
	account_id TEXT NOT NULL,
	key_id     TEXT,
	amount     BIGINT NOT NULL CHECK (amount > 0),
	expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX holds_account ON holds (account_id);
CREATE INDEX holds_key ON holds (key_id) WHERE key_id IS NOT NULL;
CREATE INDEX holds_expires ON holds (expires_at);
`},
}

// migrate creates the schema if asked and applies pending migrations (up
// to version upTo if it is not 0, for the tests of a migration). It
// holds a session advisory lock meanwhile, keyed by the schema, so nodes
// starting at once wait for the first one instead of racing it.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, upTo int) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("acquiring connection: %v", err)
	}
	defer conn.Release()

	var where string
	if err := conn.QueryRow(ctx, "SELECT current_setting('search_path')").Scan(&where); err != nil {
		return fmt.Errorf("reading search_path: %v", err)
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "socialrouter store migrations %s %s", schema, where)
	lock := int64(h.Sum64())
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lock); err != nil {
		return fmt.Errorf("taking migration lock: %v", err)
	}
	defer func() {
		// Unlock even if ctx is done; a broken connection drops the lock anyway.
		if _, err := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", lock); err != nil {
			conn.Conn().Close(context.Background())
		}
	}()

	if schema != "" {
		if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return fmt.Errorf("creating schema %s: %v", schema, err)
		}
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)`); err != nil {
		return fmt.Errorf("creating schema_migrations: %v", err)
	}
	var current int
	if err := conn.QueryRow(ctx, "SELECT COALESCE(max(version), 0) FROM schema_migrations").Scan(&current); err != nil {
		return fmt.Errorf("reading schema version: %v", err)
	}
	// The migrations of other files join the list in their init, in file
	// name order; apply them in version order whatever that was.
	ordered := slices.SortedFunc(slices.Values(migrations), func(a, b migration) int { return a.version - b.version })
	for _, m := range ordered {
		if m.version <= current || upTo > 0 && m.version > upTo {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("applying migration %d (%s): %v", m.version, m.name, err)
		}
	}
	return nil
}
