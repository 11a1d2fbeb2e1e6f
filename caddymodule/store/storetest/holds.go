package storetest

import (
	"sync"
	"testing"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// hold builds a Hold of the suite's default call.
func hold(id, account, key string, p credits.Micros, records int) store.Hold {
	return store.Hold{ID: id, AccountID: account, KeyID: key, Price: p, Records: records, Now: base}
}

func mustReserve(t *testing.T, s store.Store, h store.Hold) store.HoldResult {
	t.Helper()
	res, err := s.Reserve(ctx(t), h)
	if err != nil {
		t.Fatalf("Reserve(%+v): %v", h, err)
	}
	return res
}

// testHolds walks one account through reserve, re-size, release and
// capture; every step checked against what the next Reserve can get.
func testHolds(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", 10*price)
	steps := []struct {
		name string
		h    store.Hold
		want store.HoldResult
	}{
		{"first call holds 4", hold("run_a", "acme", "", price, 4), store.HoldResult{Records: 4, Amount: 4 * price}},
		{"second call gets what is left", hold("run_b", "acme", "", price, 9), store.HoldResult{Records: 6, Amount: 6 * price, CappedBy: store.CappedBalance}},
		{"third call gets nothing", hold("run_c", "acme", "", price, 1), store.HoldResult{CappedBy: store.CappedBalance}},
		{"failover re-sizes run_a to a dearer offer", hold("run_a", "acme", "", 2*price, 4), store.HoldResult{Records: 2, Amount: 4 * price, CappedBy: store.CappedBalance}},
		{"re-size down frees room", hold("run_a", "acme", "", price, 1), store.HoldResult{Records: 1, Amount: price}},
		{"third call now gets the freed room", hold("run_c", "acme", "", price, 5), store.HoldResult{Records: 3, Amount: 3 * price, CappedBy: store.CappedBalance}},
		{"free offer holds nothing", hold("run_d", "acme", "", 0, 7), store.HoldResult{Records: 7}},
	}
	for _, st := range steps {
		if got := mustReserve(t, s, st.h); got != st.want {
			t.Errorf("%s: Reserve = %+v, want %+v", st.name, got, st.want)
		}
	}
	if err := s.Release(ctx(t), "run_c"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := s.Release(ctx(t), "run_never"); err != nil {
		t.Errorf("Release of a call without a hold: %v", err)
	}
	// run_b holds 6 and serves 8: the capture is the hold, never more.
	r := newRun("acme", "", 8)
	r.ID = "run_b"
	res := mustSettle(t, s, settlement(r, price, base))
	if res.Records != 6 || res.Charged != 6*price || res.Balance != 4*price {
		t.Errorf("capture of a 6-record hold serving 8 = %+v, want 6 records, %s, balance %s", res, 6*price, 4*price)
	}
	// run_a holds 1 and its call fails: Settle of the failed run releases it.
	failed := newRun("acme", "", 0)
	failed.ID, failed.Status = "run_a", "failed"
	failed.Error = &runs.RunError{Code: "provider_error", Type: "provider", Message: "upstream failed"}
	if res := mustSettle(t, s, settlement(failed, 0, base)); res.Charged != 0 {
		t.Errorf("failed run charged %s", res.Charged)
	}
	// Nothing is held any more: the whole balance is available.
	if got := mustReserve(t, s, hold("run_e", "acme", "", price, 100)); got.Records != 4 || got.CappedBy != store.CappedBalance {
		t.Errorf("after capture and releases Reserve = %+v, want the 4 records the balance pays for", got)
	}
	if _, err := s.Reserve(ctx(t), hold("run_f", "nobody", "", price, 1)); err == nil {
		t.Errorf("Reserve on an unknown account succeeded")
	}
}

// testHoldsKeyLimit: a key's room is its limit − spent − held, in the
// window of its period; the account's balance caps too.
func testHoldsKeyLimit(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(100))
	k := mustKey(t, s, "key_1", "acme")
	if _, err := s.SetKeyLimit(ctx(t), k.ID, &store.CreditLimit{Period: store.PeriodDay, Credits: 5*price + 7}); err != nil {
		t.Fatal(err)
	}
	mustSettle(t, s, settlement(newRun("acme", k.ID, 2), price, base)) // spent 2
	got := mustReserve(t, s, hold("run_a", "acme", k.ID, price, 10))
	want := store.HoldResult{Records: 3, Amount: 3 * price, CappedBy: store.CappedCreditLimit, Period: store.PeriodDay}
	if got != want {
		t.Errorf("Reserve under the key's limit = %+v, want %+v", got, want)
	}
	if got := mustReserve(t, s, hold("run_b", "acme", k.ID, price, 1)); got.Records != 0 || got.CappedBy != store.CappedCreditLimit {
		t.Errorf("Reserve past the key's limit = %+v, want 0 records capped by credit_limit", got)
	}
	// Another key of the account is not bound by this key's limit.
	k2 := mustKey(t, s, "key_2", "acme")
	if got := mustReserve(t, s, hold("run_c", "acme", k2.ID, price, 10)); got.Records != 10 || got.CappedBy != "" {
		t.Errorf("Reserve on an unlimited key = %+v, want 10 records", got)
	}
	// The next day's window has the whole limit.
	next := hold("run_d", "acme", k.ID, price, 10)
	next.Now = base.AddDate(0, 0, 1)
	if got := mustReserve(t, s, next); got.Records != 2 {
		// 5 fit the new window, less the 3 run_a still holds.
		t.Errorf("Reserve in the next window = %+v, want 2 records", got)
	}
}

// ReserveCapture runs callers concurrent calls on one account: each
// reserves up to want records on the store it is given (stores[i %
// len(stores)], one per node), serves every record its hold covers and
// settles. It checks what the issue of money leaks asks: no settle keeps
// fewer records than its hold covered (no completed empty run because of
// money), the balance is never overdrawn and drops by exactly the sum
// charged, and the key's spend in its window never passes its limit.
// limit 0 means no key limit. It returns the records served.
func ReserveCapture(t *testing.T, stores []store.Store, start, limit credits.Micros, callers, want int) int {
	t.Helper()
	s := stores[0]
	mustAccount(t, s, "acme", start)
	k := mustKey(t, s, "key_1", "acme")
	if limit > 0 {
		if _, err := s.SetKeyLimit(ctx(t), k.ID, &store.CreditLimit{Period: store.PeriodDay, Credits: limit}); err != nil {
			t.Fatal(err)
		}
	}
	type outcome struct {
		held store.HoldResult
		res  store.SettleResult
	}
	out := make([]outcome, callers)
	var wg sync.WaitGroup
	begin := make(chan struct{})
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node := stores[i%len(stores)]
			<-begin
			r := newRun("acme", k.ID, 0)
			h, err := node.Reserve(t.Context(), hold(r.ID, "acme", k.ID, price, want))
			if err != nil {
				t.Errorf("Reserve: %v", err)
				return
			}
			out[i].held = h
			r.Data = newRun("acme", k.ID, h.Records).Data // the upstream served what was reserved
			r.Pagination.Total = h.Records
			if h.Records == 0 {
				// No upstream call: the gateway answers 402/429, the run is not stored.
				return
			}
			res, err := node.Settle(t.Context(), settlement(r, price, base))
			if err != nil {
				t.Errorf("Settle(%s): %v", r.ID, err)
				return
			}
			out[i].res = res
		}()
	}
	close(begin)
	wg.Wait()
	var served int
	var charged credits.Micros
	for i, o := range out {
		if o.res.Records != o.held.Records {
			t.Errorf("caller %d: held %d records, settle kept %d: served and not paid", i, o.held.Records, o.res.Records)
		}
		served += o.res.Records
		charged += o.res.Charged
	}
	final := balanceOf(t, s, "acme")
	if final < 0 || final != start-charged {
		t.Errorf("final balance %s, want start %s − charged %s", final, start, charged)
	}
	spent, err := s.KeySpend(ctx(t), k.ID, store.PeriodDay, base)
	if err != nil {
		t.Fatal(err)
	}
	if spent != charged || (limit > 0 && spent > limit) {
		t.Errorf("key spent %s (charged %s), limit %s", spent, charged, limit)
	}
	return served
}

// testHoldsConcurrentBalance: 64 calls on an account paying for about
// half of them spend it down to less than one record, none served free.
func testHoldsConcurrentBalance(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	start := 32*5*price + price/2
	if served := ReserveCapture(t, []store.Store{s}, start, 0, 64, 5); served != 160 {
		t.Errorf("served %d records, want the 160 the balance pays for", served)
	}
}

// testHoldsConcurrentKeyLimit: a key limited to a little over 7 records
// under 64 concurrent calls spends at most its limit, to the micro-credit.
func testHoldsConcurrentKeyLimit(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	limit := 7*price + 3
	if served := ReserveCapture(t, []store.Store{s}, cr(100), limit, 64, 2); served != 7 {
		t.Errorf("served %d records, want the 7 the key's limit pays for", served)
	}
}
