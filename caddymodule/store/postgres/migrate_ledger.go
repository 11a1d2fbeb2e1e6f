package postgres

// ledgerMigration is money in: the ledger rows (every stored movement of
// credits; run charges are read from usage_daily, so settles write nothing
// more), the provider events applied or recorded (unique across nodes, in
// the transaction of their movement), payments no account took, and
// billing settings. Accounts that existed before get an opening row of
// their balance plus what they have been charged, so balance = Σ ledger
// from the start.
var ledgerMigration = migration{16, "ledger, payment events, orphan payments, billing settings", `
CREATE TABLE ledger (
	id          TEXT PRIMARY KEY,
	account_id  TEXT NOT NULL REFERENCES accounts (id),
	kind        TEXT NOT NULL,
	amount      BIGINT NOT NULL,
	balance     BIGINT NOT NULL,
	reason      TEXT NOT NULL DEFAULT '',
	event_id    TEXT NOT NULL DEFAULT '',
	reference   TEXT NOT NULL DEFAULT '',
	receipt_url TEXT NOT NULL DEFAULT '',
	created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX ledger_account ON ledger (account_id, created_at DESC, id DESC);
CREATE INDEX ledger_reference ON ledger (reference, account_id, kind) WHERE reference <> '';

CREATE TABLE payment_events (
	event_id   TEXT PRIMARY KEY,
	account_id TEXT NOT NULL,
	created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE orphan_payments (
	event_id   TEXT PRIMARY KEY,
	account_id TEXT NOT NULL,
	reference  TEXT NOT NULL,
	amount     BIGINT NOT NULL,
	reason     TEXT NOT NULL,
	created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE billing_settings (
	account_id TEXT PRIMARY KEY REFERENCES accounts (id),
	doc        JSONB NOT NULL
);

INSERT INTO ledger (id, account_id, kind, amount, balance, created_at)
SELECT 'txn_opening_' || a.id, a.id, 'opening', a.balance + COALESCE(u.charged, 0), a.balance + COALESCE(u.charged, 0), a.created_at
FROM accounts a LEFT JOIN (SELECT account_id, SUM(credits) AS charged FROM usage_daily GROUP BY account_id) u ON u.account_id = a.id
WHERE a.balance + COALESCE(u.charged, 0) <> 0;
`}

func init() { migrations = append(migrations, ledgerMigration) }
