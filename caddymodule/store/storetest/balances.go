package storetest

import (
	"testing"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

// BalancesMatchRuns checks, for each account of s, that its balance is
// start minus the charges of the runs s holds for it: what a consistent
// copy of a store (a restored backup) must keep. It returns the number of
// runs.
func BalancesMatchRuns(t testing.TB, s store.Store, start credits.Micros, accounts ...string) int {
	t.Helper()
	total := 0
	for _, id := range accounts {
		a, err := s.GetAccount(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		list, err := s.ListRuns(t.Context(), id, store.RunFilter{Limit: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		var charged credits.Micros
		for _, r := range list {
			charged += r.CreditsUsed
		}
		if a.Balance != start-charged {
			t.Errorf("account %s: balance %s, want %s − %s charged by its %d runs = %s", id, a.Balance, start, charged, len(list), start-charged)
		}
		total += len(list)
	}
	return total
}
