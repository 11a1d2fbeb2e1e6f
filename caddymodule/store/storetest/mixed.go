package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

// The offers of a run whose failed batch failed over (store.Line): the
// kept records are offer A's, the failed-over ones offer B's.
const (
	mixedA                = "source_a/actor_5"
	mixedB                = "source_b/pro_net"
	priceA credits.Micros = 2000
)

// mixedLines gives the records of a run, in order, to offer A ('a') or B.
func mixedLines(pattern string) []store.Line {
	out := make([]store.Line, len(pattern))
	for i, c := range pattern {
		out[i] = store.Line{Offer: mixedB, Price: price}
		if c == 'a' {
			out[i] = store.Line{Offer: mixedA, Price: priceA}
		}
	}
	return out
}

// testSettleMixed: a run served by two offers at two prices is charged
// each record at its own offer's price, exactly; a balance or hold short
// of the whole keeps the first records it pays for; usage counts each
// offer's records and credits, and the request under served_by; key spend
// is the whole charge.
func testSettleMixed(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	const pattern = "aabba" // batches 1 and 3 kept from A, batch 2 from B
	full := 3*priceA + 2*price
	tests := []struct {
		name    string
		balance credits.Micros
		// hold, if set, is reserved first as the router's Budget does
		// once records are kept: B's price × (B's records + ⌈kept ÷ B's price⌉).
		hold    int
		records int
		charged credits.Micros
	}{
		{name: "every record at its offer's price", balance: cr(1), records: 5, charged: full},
		{name: "a short balance keeps the records it pays for", balance: full - 1, records: 4, charged: full - priceA},
		{name: "the hold of the failover covers the whole run", balance: cr(1), hold: 2 + int((3*priceA+price-1)/price), records: 5, charged: full},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			acct := "mixed_" + string(rune('a'+i))
			mustAccount(t, s, acct, tc.balance)
			k := mustKey(t, s, "key_"+acct, acct)
			run := newRun(acct, k.ID, len(pattern))
			if tc.hold > 0 {
				h := mustReserve(t, s, hold(run.ID, acct, k.ID, price, tc.hold))
				if h.Amount < full {
					t.Fatalf("hold %s does not cover the run's %s", h.Amount, full)
				}
			}
			st := settlement(run, price, base)
			st.Lines = mixedLines(pattern)
			// A's records came from the freshness cache.
			run.CachedRecords = 0
			for i := range st.Lines {
				if st.Lines[i].Offer == mixedA {
					st.Lines[i].Cached = true
					run.CachedRecords++
				}
			}
			res := mustSettle(t, s, st)
			if res.Records != tc.records || res.Charged != tc.charged || res.Balance != tc.balance-tc.charged {
				t.Errorf("Settle = %+v, want %d records, %s charged, balance %s", res, tc.records, tc.charged, tc.balance-tc.charged)
			}
			got, err := s.GetRun(ctx(t), acct, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.CreditsUsed != tc.charged || len(got.Data) != tc.records || got.Pagination.Returned != tc.records {
				t.Errorf("stored run: credits_used %s, %d records, returned %d", got.CreditsUsed, len(got.Data), got.Pagination.Returned)
			}
			cached := strings.Count(pattern[:tc.records], "a")
			if got.CachedRecords != cached || run.CachedRecords != cached {
				t.Errorf("cached_records: stored %d, on the settled run %d; want %d, the cached records kept", got.CachedRecords, run.CachedRecords, cached)
			}
			if doc, err := s.GetRunJSON(ctx(t), nil, acct, run.ID); err != nil || cached > 0 && !strings.Contains(string(doc), fmt.Sprintf(`"cached_records":%d`, cached)) {
				t.Errorf("the stored document (%v) lacks cached_records %d: %.300s", err, cached, doc)
			}
			if spent, err := s.KeySpend(ctx(t), k.ID, store.PeriodDay, base); err != nil || spent != tc.charged {
				t.Errorf("key spend %s, %v; want %s", spent, err, tc.charged)
			}
			var wantA, wantB store.UsageRow
			for _, l := range st.Lines[:tc.records] {
				row := &wantB
				if l.Offer == mixedA {
					row = &wantA
				}
				row.Records++
				row.Credits += l.Price
			}
			want := []store.UsageRow{
				{Day: day(base), Offer: mixedA, Platform: "pro_net", Records: wantA.Records, Credits: wantA.Credits},
				{Day: day(base), Offer: mixedB, Platform: "pro_net", Requests: 1, Records: wantB.Records, Credits: wantB.Credits},
			}
			rows, err := s.Usage(ctx(t), acct, day(base))
			if err != nil {
				t.Fatal(err)
			}
			sameUsage(t, rows, want)
			// Nothing stays held: the rest of the balance is available.
			if left := mustReserve(t, s, hold("after_"+run.ID, acct, "", 1, 1<<30)); credits.Micros(left.Records) != tc.balance-tc.charged {
				t.Errorf("after the settle %d micro-credits are available, want %s", left.Records, tc.balance-tc.charged)
			}
		})
	}
	t.Run("concurrent settles, grouped by the store, charge each exactly", func(t *testing.T) {
		const n = 8
		mustAccount(t, s, "mixed_many", cr(1))
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := settlement(newRun("mixed_many", "", len(pattern)), price, base)
				st.Lines = mixedLines(pattern)
				var res store.SettleResult
				res, errs[i] = s.Settle(ctx(t), st)
				if errs[i] == nil && res.Charged != full {
					t.Errorf("a settle charged %s, want %s", res.Charged, full)
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		a, err := s.GetAccount(ctx(t), "mixed_many")
		if err != nil || a.Balance != cr(1)-n*full {
			t.Errorf("balance %s, %v; want %s", a.Balance, err, cr(1)-n*full)
		}
		rows, err := s.Usage(ctx(t), "mixed_many", day(base))
		if err != nil {
			t.Fatal(err)
		}
		sameUsage(t, rows, []store.UsageRow{
			{Day: day(base), Offer: mixedA, Platform: "pro_net", Records: 3 * n, Credits: 3 * n * priceA},
			{Day: day(base), Offer: mixedB, Platform: "pro_net", Requests: n, Records: 2 * n, Credits: 2 * n * price},
		})
	})
	t.Run("lines that do not match the records are refused", func(t *testing.T) {
		mustAccount(t, s, "mixed_bad", cr(1))
		run := newRun("mixed_bad", "", 3)
		st := settlement(run, price, base)
		st.Lines = mixedLines("ab")
		if _, err := s.Settle(ctx(t), st); err == nil {
			t.Fatal("Settle with 2 lines for 3 records succeeded")
		}
		if a, err := s.GetAccount(ctx(t), "mixed_bad"); err != nil || a.Balance != cr(1) {
			t.Errorf("balance %s, %v after a refused settle; want it untouched", a.Balance, err)
		}
	})
}
