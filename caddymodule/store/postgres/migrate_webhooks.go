package postgres

// webhooksMigration is the webhooks' schema: endpoints per account, and
// the delivery queue every node claims from (FOR UPDATE SKIP LOCKED, then
// a lease in leased_until, so a delivery in flight on one node is not
// claimed by another until its lease ends).
var webhooksMigration = migration{13, "webhook endpoints and deliveries", `
CREATE TABLE webhook_endpoints (
	id              TEXT PRIMARY KEY,
	account_id      TEXT NOT NULL REFERENCES accounts (id),
	url             TEXT NOT NULL,
	events          TEXT[] NOT NULL,
	secret          TEXT NOT NULL,            -- whsec_…: an HMAC needs the key itself
	previous_secret TEXT NOT NULL DEFAULT '', -- signed with too until previous_until
	previous_until  TIMESTAMPTZ,
	created_at      TIMESTAMPTZ NOT NULL,
	disabled_at     TIMESTAMPTZ,
	disabled_reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id, created_at, id);

-- payload is BYTEA: every attempt sends, and signs, the same bytes.
CREATE TABLE webhook_deliveries (
	id               TEXT PRIMARY KEY, -- the webhook-id of every attempt
	endpoint_id      TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
	account_id       TEXT NOT NULL,
	event            TEXT NOT NULL,
	payload          BYTEA NOT NULL,
	status           TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
	attempts         INTEGER NOT NULL DEFAULT 0,
	next_at          TIMESTAMPTZ NOT NULL,
	leased_until     TIMESTAMPTZ,
	last_attempt_at  TIMESTAMPTZ,
	last_status_code INTEGER NOT NULL DEFAULT 0,
	last_error       TEXT NOT NULL DEFAULT '',
	created_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_account ON webhook_deliveries (account_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id);
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (last_attempt_at) WHERE status <> 'pending';
`}

func init() { migrations = append(migrations, webhooksMigration) }
