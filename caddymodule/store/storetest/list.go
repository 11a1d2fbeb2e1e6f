package storetest

import (
	"testing"

	"socialrouter/caddymodule/store"
)

// testListAccounts: ListAccounts (store.Exporter, which `caddy sdr export`
// needs) returns every account with its current balance, ordered by id
// byte by byte whatever the insertion order or the database's collation.
func testListAccounts(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	var ex store.Exporter = s
	if got, err := ex.ListAccounts(ctx(t)); err != nil || len(got) != 0 {
		t.Fatalf("ListAccounts of an empty store = %v, %v; want none", got, err)
	}

	// Inserted out of order; byte order differs from most locales' order
	// (upper case first, '-' < '_' < letters).
	for _, id := range []string{"ab", "a_b", "Z", "a-b", "B", "a"} {
		mustAccount(t, s, id, cr(1))
	}
	mustAccount(t, s, "zero", 0)
	if _, err := s.AddCredits(ctx(t), "B", cr(2)); err != nil {
		t.Fatal(err)
	}
	mustKey(t, s, "key_1", "a")
	res := mustSettle(t, s, settlement(newRun("a", "key_1", 3), price, base))

	want := []store.Account{
		{ID: "B", Balance: cr(3)},
		{ID: "Z", Balance: cr(1)},
		{ID: "a", Balance: res.Balance},
		{ID: "a-b", Balance: cr(1)},
		{ID: "a_b", Balance: cr(1)},
		{ID: "ab", Balance: cr(1)},
		{ID: "zero", Balance: 0},
	}
	got, err := ex.ListAccounts(ctx(t))
	if err != nil {
		t.Fatalf("ListAccounts: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("ListAccounts = %+v, want %d accounts", got, len(want))
	}
	for i, a := range got {
		if a.ID != want[i].ID || a.Balance != want[i].Balance {
			t.Errorf("ListAccounts[%d] = %s with %s, want %s with %s", i, a.ID, a.Balance, want[i].ID, want[i].Balance)
		}
		checkTime(t, "ListAccounts "+a.ID+" CreatedAt", a.CreatedAt, base)
	}
}
