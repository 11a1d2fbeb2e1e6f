package postgres

// throttleMigration holds the dashboard's attempt counters
// (store.Throttle), so every node counts the same sign-in attempts and a
// restart forgets none. A row is dead after expires_at; ThrottleAttempt
// deletes a few dead rows each time, so the table stays the size of the
// live counters.
var throttleMigration = migration{10, "sign-in attempt counters shared by nodes", `
CREATE TABLE throttle (
	key        TEXT COLLATE "C" PRIMARY KEY,
	count      INTEGER NOT NULL,
	next_at    TIMESTAMPTZ,
	last_at    TIMESTAMPTZ,
	expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX throttle_expires ON throttle (expires_at);
`}

func init() { migrations = append(migrations, throttleMigration) }
