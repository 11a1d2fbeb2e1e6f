package postgres_test

import (
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/postgres"
)

// TestReserveLeanMigration opens a database as release 8 left it, with a
// call's hold taken by the old reserve_hold, migrates it, and checks that
// the new functions count that hold: a lone reserve and a group find only
// the rest of the balance, and the call's own re-size replaces it.
func TestReserveLeanMigration(t *testing.T) {
	const price = credits.Micros(1725)
	ctx := t.Context()
	url := testURL(t)
	schema := testSchema(t, url)
	now := time.Now().UTC()
	old, err := postgres.Open(ctx, url, postgres.WithSchema(schema), postgres.WithMigrationsUpTo(8))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.CreateAccount(ctx, "acme", 10*price, now); err != nil {
		t.Fatal(err)
	}
	hold := func(id string, n int) store.Hold {
		return store.Hold{ID: id, AccountID: "acme", Price: price, Records: n, Now: now}
	}
	if res, err := old.Reserve(ctx, hold("ext_before", 6)); err != nil || res.Records != 6 {
		t.Fatalf("reserve before the migration: %+v, %v", res, err)
	}
	old.Close()

	s, err := postgres.Open(ctx, url, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if res, err := s.Reserve(ctx, hold("ext_lone", 3)); err != nil || res.Records != 3 {
		t.Fatalf("lone reserve after the migration: %+v, %v; want 3 records", res, err)
	}
	res, errs, together := postgres.ReserveInOrder(s, ctx, []store.Hold{hold("ext_g1", 1), hold("ext_g2", 1), hold("ext_before", 2), hold("ext_g3", 9)}, true)
	if !together {
		t.Fatal("the group was reserved one by one")
	}
	for i, want := range []int{1, 0, 2, 4} {
		if errs[i] != nil || res[i].Records != want {
			t.Errorf("grouped hold %d after the migration: %+v, %v; want %d records", i, res[i], errs[i], want)
		}
	}
}
