package postgres_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/postgres"
)

// settlement is a completed run of n records on account, at price.
func settlement(id, account string, n int, price credits.Micros, now time.Time) store.Settlement {
	data := make([]json.RawMessage, n)
	for i := range data {
		data[i] = json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
	}
	run := &runs.Run{ID: id, Status: "completed", AccountID: account, CreatedAt: now, CompletedAt: now, Data: data}
	return store.Settlement{Run: run, Price: price, Offer: "o", Platform: "p", Now: now}
}

// TestSettleFullChecksInServer: a group settled in full in one round
// trip reports what consecutive settles would, and when its premise fails
// (a balance short, a hold short, an account unknown) the server refuses
// the whole transaction: no balance, run nor hold changes, so the group
// can be settled again the long way.
func TestSettleFullChecksInServer(t *testing.T) {
	const price = credits.Micros(1725)
	s := hotAndCold(t, price) // hot pays for 15 records, cold for 100
	ctx := t.Context()
	now := time.Now().UTC()
	balance := func(id string) credits.Micros {
		t.Helper()
		a, err := s.GetAccount(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return a.Balance
	}
	stored := func(id, account string) bool {
		_, err := s.GetRun(ctx, account, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}

	res, err := postgres.SettleFull(s, ctx, []store.Settlement{
		settlement("ext_full_1", "cold", 2, price, now),
		settlement("ext_full_2", "hot", 3, price, now),
		settlement("ext_full_3", "cold", 1, price, now),
	})
	if err != nil {
		t.Fatalf("a group paid in full: %v", err)
	}
	want := []store.SettleResult{
		{Records: 2, Charged: 2 * price, Balance: 98 * price},
		{Records: 3, Charged: 3 * price, Balance: 12 * price},
		{Records: 1, Charged: price, Balance: 97 * price},
	}
	for i := range want {
		if res[i] != want[i] {
			t.Errorf("settle %d = %+v; want %+v", i+1, res[i], want[i])
		}
	}
	if balance("hot") != 12*price || balance("cold") != 97*price {
		t.Errorf("balances hot %s, cold %s; want %s and %s", balance("hot"), balance("cold"), 12*price, 97*price)
	}
	if rows, err := s.Usage(ctx, "cold", store.PeriodStart(store.PeriodDay, now)); err != nil || len(rows) != 1 ||
		rows[0].Requests != 2 || rows[0].Records != 3 || rows[0].Credits != 3*price {
		t.Errorf("cold's usage = %+v, %v; want 2 requests, 3 records", rows, err)
	}

	// A hold of one record on cold for a run of two.
	if h, err := s.Reserve(ctx, store.Hold{ID: "ext_held", AccountID: "cold", Price: price, Records: 1, Now: now}); err != nil || h.Records != 1 {
		t.Fatalf("Reserve = %+v, %v", h, err)
	}
	for name, group := range map[string][]store.Settlement{
		"balance short":   {settlement("ext_short_1", "cold", 1, price, now), settlement("ext_short_2", "hot", 13, price, now)},
		"hold short":      {settlement("ext_short_3", "hot", 1, price, now), settlement("ext_held", "cold", 2, price, now)},
		"account unknown": {settlement("ext_short_4", "cold", 1, price, now), settlement("ext_short_5", "ghost", 1, price, now)},
	} {
		if _, err := postgres.SettleFull(s, ctx, group); err == nil {
			t.Errorf("%s: settled in full", name)
		}
		for _, st := range group {
			if stored(st.Run.ID, st.Run.AccountID) {
				t.Errorf("%s: run %s stored by a refused transaction", name, st.Run.ID)
			}
		}
		if balance("hot") != 12*price || balance("cold") != 97*price {
			t.Errorf("%s: balances hot %s, cold %s after a refused transaction; want %s and %s", name, balance("hot"), balance("cold"), 12*price, 97*price)
		}
	}

	// The same group the long way: the hold, left in place by the refused
	// transaction, still bounds its run's capture.
	res, errs, _ := postgres.SettleGroup(s, ctx, []store.Settlement{settlement("ext_held", "cold", 2, price, now)})
	if errs[0] != nil || res[0].Records != 1 || res[0].Charged != price {
		t.Errorf("the held run settled = %+v, %v; want 1 record, as its hold", res[0], errs[0])
	}
}

// TestSettleGroupRefusalsAlone: in one group of the settle line, a settle
// refused (its run id taken) fails alone with its own error, a settle
// whose balance is short is charged what the balance pays for, and the
// others settle in full.
func TestSettleGroupRefusalsAlone(t *testing.T) {
	const price = credits.Micros(1725)
	s := hotAndCold(t, price)
	ctx := t.Context()
	now := time.Now().UTC()
	if _, errs, _ := postgres.SettleGroup(s, ctx, []store.Settlement{settlement("ext_taken", "cold", 1, price, now)}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	group := []store.Settlement{
		settlement("ext_a", "cold", 2, price, now),
		settlement("ext_taken", "cold", 1, price, now),
		settlement("ext_b", "hot", 20, price, now),
		settlement("ext_c", "cold", 3, price, now),
	}
	res, errs, _ := postgres.SettleGroup(s, ctx, group)
	if !errors.Is(errs[1], store.ErrExists) {
		t.Errorf("the taken run id: %v; want ErrExists", errs[1])
	}
	for i, want := range map[int]int{0: 2, 2: 15, 3: 3} {
		if errs[i] != nil || res[i].Records != want {
			t.Errorf("settle %d = %+v, %v; want %d records", i, res[i], errs[i], want)
		}
	}
	a, err := s.GetAccount(ctx, "cold")
	if err != nil || a.Balance != 94*price {
		t.Errorf("cold = %+v, %v; want %s left after 6 records", a, err, 94*price)
	}
}
