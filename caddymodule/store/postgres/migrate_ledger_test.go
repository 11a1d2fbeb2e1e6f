package postgres_test

import (
	"encoding/json"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/postgres"
	"socialrouter/caddymodule/store/storetest"
)

// TestLedgerMigration opens a database as release 15 left it (no ledger),
// with an account that was credited and charged, migrates it: the
// account gets an opening row of its balance plus its charges, so
// balance = Σ ledger; an account at zero gets none.
func TestLedgerMigration(t *testing.T) {
	ctx := t.Context()
	url := testURL(t)
	schema := testSchema(t, url)
	now := time.Now().UTC()
	old, err := postgres.Open(ctx, url, postgres.WithSchema(schema), postgres.WithMigrationsUpTo(15))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"acme", "zero"} {
		if _, err := old.CreateAccount(ctx, id, map[string]credits.Micros{"acme": 10 * credits.PerCredit}[id], now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := old.AddCredits(ctx, "acme", 2*credits.PerCredit); err != nil {
		t.Fatal(err)
	}
	run := &runs.Run{ID: "ext_m1", AccountID: "acme", Status: "completed", CreatedAt: now, CompletedAt: now,
		Data: []json.RawMessage{json.RawMessage(`{"a":1}`), json.RawMessage(`{"a":2}`)}}
	if _, err := old.Settle(ctx, store.Settlement{Run: run, Price: 1725, Offer: "o", Platform: "p", Now: now}); err != nil {
		t.Fatal(err)
	}
	old.Close()

	s, err := postgres.Open(ctx, url, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.LedgerMatchesBalance(t, s, "acme")
	storetest.LedgerMatchesBalance(t, s, "zero")
	rows, err := s.Transactions(ctx, "acme", store.LedgerCursor{}, 10)
	if err != nil || len(rows) != 2 || rows[0].Kind != store.LedgerOpening || rows[0].Amount != 12*credits.PerCredit {
		t.Errorf("rows after the migration: %+v, %v; want an opening row of 12 and the day's charges", rows, err)
	}
}
