package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// settled is one concurrent Settle's outcome.
type settled struct {
	run *runs.Run
	n   int // records produced
	res store.SettleResult
	err error
}

// settleAll runs the settlements concurrently, released together.
func settleAll(t *testing.T, s store.Store, rs []*runs.Run, p credits.Micros) []settled {
	t.Helper()
	out := make([]settled, len(rs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, r := range rs {
		out[i] = settled{run: r, n: len(r.Data)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i].res, out[i].err = s.Settle(t.Context(), settlement(r, p, base))
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// checkSettled verifies each outcome and the stored runs, and returns the
// sums of records and credits charged, the credits summed from the runs as
// read back with GetRun.
func checkSettled(t *testing.T, s store.Store, out []settled, p credits.Micros) (records int, charged, stored credits.Micros) {
	t.Helper()
	for _, o := range out {
		if o.err != nil {
			t.Errorf("Settle(%s): %v", o.run.ID, o.err)
			continue
		}
		if o.res.Records > o.n || o.res.Records < 0 || o.res.Charged != credits.Micros(o.res.Records)*p || o.res.Balance < 0 {
			t.Errorf("Settle(%s) of %d records = %+v", o.run.ID, o.n, o.res)
		}
		records += o.res.Records
		charged += o.res.Charged
		got, err := s.GetRun(t.Context(), o.run.AccountID, o.run.ID)
		if err != nil {
			t.Errorf("GetRun(%s): %v", o.run.ID, err)
			continue
		}
		if got.CreditsUsed != credits.Micros(len(got.Data))*p || len(got.Data) != o.res.Records || got.Pagination.Returned != o.res.Records {
			t.Errorf("stored run %s: %d records, credits_used %s, returned %d; settled %+v",
				got.ID, len(got.Data), got.CreditsUsed, got.Pagination.Returned, o.res)
		}
		stored += got.CreditsUsed
	}
	return records, charged, stored
}

// acmeBatch adds key_1 to the account acme and returns it with n runs of
// that key asking 1 to sizes records in turn, and their records in all.
func acmeBatch(t *testing.T, s store.Store, n, sizes int) (store.Key, []*runs.Run, int) {
	k := mustKey(t, s, "key_1", "acme")
	batch := make([]*runs.Run, n)
	demand := 0
	for i := range batch {
		batch[i] = newRun("acme", k.ID, 1+i%sizes)
		demand += 1 + i%sizes
	}
	return k, batch, demand
}

func testConcurrentOverdraw(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	start := 100*price + price/2 // pays for exactly 100 records
	mustAccount(t, s, "acme", start)
	k, batch, demand := acmeBatch(t, s, 64, 7)
	out := settleAll(t, s, batch, price)
	records, charged, stored := checkSettled(t, s, out, price)

	final := balanceOf(t, s, "acme")
	if final < 0 {
		t.Fatalf("overdrawn: balance %s", final)
	}
	if final != start-charged || final != start-stored {
		t.Errorf("final balance %s, want start %s − charged %s = %s (runs sum to %s)", final, start, charged, start-charged, stored)
	}
	// Demand exceeds supply, so the balance is spent down to less than one record.
	if records != 100 || final != price/2 {
		t.Errorf("charged %d of %d records, final %s; want 100 records and %s left", records, demand, final, price/2)
	}
	rows, err := s.Usage(ctx(t), "acme", day(base))
	if err != nil {
		t.Fatal(err)
	}
	sameUsage(t, rows, []store.UsageRow{{Day: day(base), Offer: "source_b/pro_net", Platform: "pro_net", Requests: 64, Records: 100, Credits: 100 * price}})
	for _, p := range store.Periods {
		if got, err := s.KeySpend(ctx(t), k.ID, p, base); err != nil || got != charged {
			t.Errorf("KeySpend(%s) = %s, %v; want %s", p, got, err, charged)
		}
	}
}

func testConcurrentOneAccount(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	start := cr(50)
	mustAccount(t, s, "acme", start)
	k, batch, demand := acmeBatch(t, s, 32, 5)
	out := settleAll(t, s, batch, price)
	records, charged, stored := checkSettled(t, s, out, price)
	if records != demand || charged != credits.Micros(demand)*price {
		t.Errorf("charged %d records (%s), want all %d", records, charged, demand)
	}
	if final := balanceOf(t, s, "acme"); final != start-charged || final != start-stored {
		t.Errorf("final balance %s, want %s", final, start-charged)
	}
	balances := map[credits.Micros]bool{}
	for _, o := range out {
		if balances[o.res.Balance] {
			t.Errorf("two settles report balance %s: they did not see each other", o.res.Balance)
		}
		balances[o.res.Balance] = true
	}
	rows, err := s.Usage(ctx(t), "acme", day(base))
	if err != nil {
		t.Fatal(err)
	}
	sameUsage(t, rows, []store.UsageRow{{Day: day(base), Offer: "source_b/pro_net", Platform: "pro_net", Requests: 32, Records: int64(demand), Credits: charged}})
	if got, _ := s.KeySpend(ctx(t), k.ID, store.PeriodHour, base); got != charged {
		t.Errorf("KeySpend = %s, want %s", got, charged)
	}
}

// testConcurrentMixed settles on several accounts while credits are added
// and removed concurrently: every account ends at start + adds − charges.
func testConcurrentMixed(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	const accounts = 4
	start := 20 * price
	for a := range accounts {
		mustAccount(t, s, fmt.Sprintf("acct_%d", a), start)
	}
	var (
		mu    sync.Mutex
		adds  = map[string]credits.Micros{}
		wg    sync.WaitGroup
		ready = make(chan struct{})
		out   = make([]settled, 48)
	)
	for i := range 48 {
		r := newRun(fmt.Sprintf("acct_%d", i%accounts), "", 1+i%6)
		out[i] = settled{run: r, n: len(r.Data)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ready
			out[i].res, out[i].err = s.Settle(t.Context(), settlement(r, price, base))
		}()
	}
	for i := range 16 {
		account := fmt.Sprintf("acct_%d", i%accounts)
		amount := 5 * price
		if i%2 == 1 {
			amount = -4 * price
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ready
			_, err := s.AddCredits(t.Context(), account, amount)
			switch {
			case err == nil:
				mu.Lock()
				adds[account] += amount
				mu.Unlock()
			case !errors.Is(err, store.ErrInsufficient):
				t.Errorf("AddCredits(%s, %s): %v", account, amount, err)
			}
		}()
	}
	close(ready)
	wg.Wait()
	_, _, _ = checkSettled(t, s, out, price)
	charged := map[string]credits.Micros{}
	for _, o := range out {
		charged[o.run.AccountID] += o.res.Charged
	}
	for a := range accounts {
		id := fmt.Sprintf("acct_%d", a)
		got := balanceOf(t, s, id)
		if want := start + adds[id] - charged[id]; got != want || got < 0 {
			t.Errorf("%s balance = %s, want %s + %s − %s = %s", id, got, start, adds[id], charged[id], want)
		}
	}
}

// testConcurrentSomeFail mixes settles that must fail (unknown account, a
// run id already stored) with good ones: a failure never takes a
// concurrent settle down with it, and charges nothing.
func testConcurrentSomeFail(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	start := cr(10)
	mustAccount(t, s, "acme", start)
	taken := newRun("acme", "", 1)
	first := mustSettle(t, s, settlement(taken, price, base))

	batch := make([]*runs.Run, 32)
	want := make([]error, 32)
	for i := range batch {
		switch i % 4 {
		case 0:
			batch[i] = newRun("nobody", "", 2)
			want[i] = store.ErrNotFound
		case 1:
			batch[i] = newRun("acme", "", 2)
			batch[i].ID = taken.ID
			want[i] = store.ErrExists
		default:
			batch[i] = newRun("acme", "", 2)
		}
	}
	out := settleAll(t, s, batch, price)
	var charged credits.Micros
	for i, o := range out {
		if !errors.Is(o.err, want[i]) || (want[i] == nil) != (o.err == nil) {
			t.Errorf("Settle %d: err = %v, want %v", i, o.err, want[i])
			continue
		}
		if o.err == nil {
			if o.res.Records != 2 {
				t.Errorf("Settle %d kept %d records, want 2", i, o.res.Records)
			}
			charged += o.res.Charged
		}
	}
	if got := balanceOf(t, s, "acme"); got != first.Balance-charged || charged != 16*2*price {
		t.Errorf("balance = %s after charging %s, want %s − %s", got, charged, first.Balance, 16*2*price)
	}
	rows, err := s.Usage(ctx(t), "acme", day(base))
	if err != nil {
		t.Fatal(err)
	}
	sameUsage(t, rows, []store.UsageRow{{Day: day(base), Offer: "source_b/pro_net", Platform: "pro_net", Requests: 17, Records: 33, Credits: 33 * price}})
}
