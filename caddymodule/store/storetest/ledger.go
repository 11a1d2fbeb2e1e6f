package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

var ledgerSuites = []suite{
	{"ledger_sum_matches_balance", testLedgerSum},
	{"ledger_event_once", testLedgerEventOnce},
	{"ledger_event_concurrent", testLedgerEventConcurrent},
	{"ledger_refund_cumulative", testLedgerRefundCumulative},
	{"ledger_paging", testLedgerPaging},
	{"ledger_orphans", testLedgerOrphans},
	{"ledger_settings_atomic", testLedgerSettingsAtomic},
	{"ledger_concurrent_settles_and_moves", testLedgerConcurrent},
}

// testLedgerConcurrent settles runs and moves credits on one account at
// once: afterwards the balance is still Σ ledger.
func testLedgerConcurrent(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(1))
	mustKey(t, s, "k1", "acme")
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			if i%2 == 0 {
				if _, err := s.Settle(t.Context(), settlement(newRun("acme", "k1", 50), price, base)); err != nil {
					t.Error(err)
				}
				return
			}
			if _, err := s.Move(t.Context(), store.LedgerEntry{AccountID: "acme", Kind: store.LedgerTopUp, Amount: cr(1), EventID: fmt.Sprint("evt_", i)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	LedgerMatchesBalance(t, s, "acme")
}

// LedgerSum pages through an account's whole ledger and returns Σ of its
// rows and how many there are.
func LedgerSum(t testing.TB, s store.Store, account string) (credits.Micros, int) {
	t.Helper()
	var sum credits.Micros
	n := 0
	var cur store.LedgerCursor
	for {
		page, err := s.Transactions(t.Context(), account, cur, 3)
		if err != nil {
			t.Fatalf("Transactions(%s): %v", account, err)
		}
		for _, e := range page {
			sum += e.Amount
			n++
		}
		if len(page) < 3 {
			return sum, n
		}
		last := page[len(page)-1]
		cur = store.LedgerCursor{At: last.CreatedAt, ID: last.ID}
	}
}

// LedgerMatchesBalance fails t unless the account's balance is Σ of its
// ledger.
func LedgerMatchesBalance(t testing.TB, s store.Store, account string) {
	t.Helper()
	a, err := s.GetAccount(t.Context(), account)
	if err != nil {
		t.Fatal(err)
	}
	if sum, n := LedgerSum(t, s, account); sum != a.Balance {
		t.Errorf("account %s: balance %s, Σ of its %d ledger rows %s", account, a.Balance, n, sum)
	}
}

// testLedgerSum moves credits every way the store knows, settles runs on
// two days, and checks balance = Σ ledger after each step.
func testLedgerSum(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	mustAccount(t, s, "acme", cr(10))
	mustAccount(t, s, "zero", 0)
	mustKey(t, s, "k1", "acme")
	steps := []struct {
		name string
		do   func() error
	}{
		{"opening", func() error { return nil }},
		{"add credits", func() error { _, err := s.AddCredits(ctx, "acme", cr(5)); return err }},
		{"debit", func() error { _, err := s.AddCredits(ctx, "acme", -cr(2)); return err }},
		{"top-up", func() error {
			_, err := s.Move(ctx, store.LedgerEntry{AccountID: "acme", Kind: store.LedgerTopUp, Amount: cr(20), EventID: "evt_1", Reference: "pi_1"})
			return err
		}},
		{"settle day 1", func() error { _, err := s.Settle(ctx, settlement(newRun("acme", "k1", 40), price, base)); return err }},
		{"settle day 2", func() error {
			_, err := s.Settle(ctx, settlement(newRun("acme", "k1", 7), price, base.AddDate(0, 0, 1)))
			return err
		}},
		{"adjustment with reason", func() error {
			_, err := s.Move(ctx, store.LedgerEntry{AccountID: "acme", Kind: store.LedgerAdjustment, Amount: -cr(1), Reason: "goodwill reversed"})
			return err
		}},
		{"overdraw refused", func() error {
			_, err := s.Move(ctx, store.LedgerEntry{AccountID: "acme", Kind: store.LedgerAdjustment, Amount: -cr(1000)})
			if !errors.Is(err, store.ErrInsufficient) {
				return fmt.Errorf("overdraw: %v, want ErrInsufficient", err)
			}
			return nil
		}},
		{"unknown account", func() error {
			_, err := s.Move(ctx, store.LedgerEntry{AccountID: "nobody", Kind: store.LedgerTopUp, Amount: cr(1), EventID: "evt_x"})
			if !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("unknown account: %v, want ErrNotFound", err)
			}
			return nil
		}},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		LedgerMatchesBalance(t, s, "acme")
	}
	LedgerMatchesBalance(t, s, "zero")
	rows, err := s.Transactions(ctx, "acme", store.LedgerCursor{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range rows {
		kinds[r.Kind]++
		if r.Kind == store.LedgerAdjustment && r.Amount == -cr(1) && r.Reason != "goodwill reversed" {
			t.Errorf("adjustment reason = %q", r.Reason)
		}
	}
	want := map[string]int{store.LedgerOpening: 1, store.LedgerAdjustment: 3, store.LedgerTopUp: 1, store.LedgerRunCharges: 2}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("row kinds = %v, want %v", kinds, want)
	}
	if _, err := s.Transactions(ctx, "nobody", store.LedgerCursor{}, 10); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Transactions(unknown) = %v, want ErrNotFound", err)
	}
}

// testLedgerEventOnce replays an event: the second Move changes nothing.
func testLedgerEventOnce(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", 0)
	e := store.LedgerEntry{AccountID: "acme", Kind: store.LedgerTopUp, Amount: cr(7), EventID: "evt_once", Reference: "pi_once"}
	got, err := s.Move(t.Context(), e)
	if err != nil || got.Balance != cr(7) || got.ID == "" {
		t.Fatalf("Move = %+v, %v", got, err)
	}
	for range 3 {
		if _, err := s.Move(t.Context(), e); !errors.Is(err, store.ErrDuplicateEvent) {
			t.Fatalf("replay: %v, want ErrDuplicateEvent", err)
		}
	}
	if b := balanceOf(t, s, "acme"); b != cr(7) {
		t.Errorf("balance after replays = %s, want 7", b)
	}
	if acct, err := s.ReferenceAccount(t.Context(), "pi_once"); err != nil || acct != "acme" {
		t.Errorf("ReferenceAccount = %q, %v", acct, err)
	}
	if _, err := s.ReferenceAccount(t.Context(), "pi_none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ReferenceAccount(unknown) = %v", err)
	}
	LedgerMatchesBalance(t, s, "acme")
}

// testLedgerEventConcurrent delivers one event 16 times at once.
func testLedgerEventConcurrent(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(1))
	var applied, dup atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			_, err := s.Move(t.Context(), store.LedgerEntry{AccountID: "acme", Kind: store.LedgerTopUp, Amount: cr(3), EventID: "evt_c"})
			switch {
			case err == nil:
				applied.Add(1)
			case errors.Is(err, store.ErrDuplicateEvent):
				dup.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if applied.Load() != 1 || dup.Load() != 15 {
		t.Errorf("applied %d, duplicates %d; want 1 and 15", applied.Load(), dup.Load())
	}
	if b := balanceOf(t, s, "acme"); b != cr(4) {
		t.Errorf("balance = %s, want 4", b)
	}
	LedgerMatchesBalance(t, s, "acme")
}

// testLedgerRefundCumulative applies refunds whose events carry the total
// refunded so far, out of order, and one larger than the balance.
func testLedgerRefundCumulative(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", 0)
	ctx := t.Context()
	if _, err := s.Move(ctx, store.LedgerEntry{AccountID: "acme", Kind: store.LedgerTopUp, Amount: cr(10), EventID: "evt_pay", Reference: "pi_r"}); err != nil {
		t.Fatal(err)
	}
	refund := func(ev string, total credits.Micros) error {
		_, err := s.Move(ctx, store.LedgerEntry{AccountID: "acme", Kind: store.LedgerRefund, Amount: -total, EventID: ev, Reference: "pi_r", Cumulative: true, Clamp: true})
		return err
	}
	cases := []struct {
		event   string
		total   credits.Micros
		wantErr error
		balance credits.Micros
	}{
		{"evt_r2", cr(6), nil, cr(4)},                     // the later event first: 6 refunded
		{"evt_r1", cr(4), store.ErrDuplicateEvent, cr(4)}, // the earlier one: already covered
		{"evt_r2", cr(6), store.ErrDuplicateEvent, cr(4)}, // a replay
		{"evt_r3", cr(8), nil, cr(2)},                     // 2 more
	}
	for _, c := range cases {
		if err := refund(c.event, c.total); !errors.Is(err, c.wantErr) && (err != nil || c.wantErr != nil) {
			t.Errorf("refund %s: %v, want %v", c.event, err, c.wantErr)
		}
		if b := balanceOf(t, s, "acme"); b != c.balance {
			t.Errorf("after %s: balance %s, want %s", c.event, b, c.balance)
		}
	}
	// The customer spent what is left; a full refund debits it to zero.
	if _, err := s.AddCredits(ctx, "acme", -cr(2)); err != nil {
		t.Fatal(err)
	}
	if err := refund("evt_r4", cr(10)); err != nil {
		t.Fatalf("clamped refund: %v", err)
	}
	if b := balanceOf(t, s, "acme"); b != 0 {
		t.Errorf("balance after the full refund = %s, want 0", b)
	}
	LedgerMatchesBalance(t, s, "acme")
}

// testLedgerPaging checks the order and the cursor across stored and
// derived rows with equal times.
func testLedgerPaging(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	mustAccount(t, s, "acme", cr(100))
	mustKey(t, s, "k1", "acme")
	day := time.Date(2025, 3, 12, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		if _, err := s.Move(ctx, store.LedgerEntry{AccountID: "acme", Kind: store.LedgerAdjustment, Amount: cr(1), CreatedAt: day.Add(time.Duration(i%2) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	mustSettle(t, s, settlement(newRun("acme", "k1", 3), price, base))
	all, err := s.Transactions(ctx, "acme", store.LedgerCursor{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 7 {
		t.Fatalf("%d rows, want 7 (opening, 5 adjustments, one day of charges)", len(all))
	}
	var paged []store.LedgerEntry
	var cur store.LedgerCursor
	for {
		page, err := s.Transactions(ctx, "acme", cur, 2)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, page...)
		if len(page) < 2 {
			break
		}
		cur = store.LedgerCursor{At: page[1].CreatedAt, ID: page[1].ID}
	}
	if fmt.Sprint(rowIDs(paged)) != fmt.Sprint(rowIDs(all)) {
		t.Errorf("paged %v\nwhole %v", rowIDs(paged), rowIDs(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].CreatedAt.After(all[i-1].CreatedAt) {
			t.Errorf("row %d is newer than row %d", i, i-1)
		}
	}
	if all[len(all)-1].Kind != store.LedgerOpening && all[len(all)-1].CreatedAt.After(day) {
		t.Errorf("oldest row %+v", all[len(all)-1])
	}
}

func rowIDs(es []store.LedgerEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

// testLedgerOrphans records a payment for no account, once.
func testLedgerOrphans(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	o := store.OrphanPayment{EventID: "evt_o", AccountID: "ghost", Reference: "cs_1", Amount: cr(5), Reason: "unknown account", CreatedAt: base}
	if err := s.RecordOrphan(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordOrphan(t.Context(), o); !errors.Is(err, store.ErrDuplicateEvent) {
		t.Errorf("second RecordOrphan = %v, want ErrDuplicateEvent", err)
	}
	got, err := s.Orphans(t.Context(), 10)
	if err != nil || len(got) != 1 || got[0].AccountID != "ghost" || got[0].Amount != cr(5) {
		t.Errorf("Orphans = %+v, %v", got, err)
	}
}

// testLedgerSettingsAtomic increments a counter from 16 goroutines.
func testLedgerSettingsAtomic(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", 0)
	if bs, err := s.BillingSettings(t.Context(), "acme"); err != nil || bs != (store.BillingSettings{}) {
		t.Fatalf("BillingSettings = %+v, %v; want zero", bs, err)
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, err := s.UpdateBillingSettings(t.Context(), "acme", func(bs *store.BillingSettings) error {
				bs.Failures++
				return nil
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if bs, err := s.BillingSettings(t.Context(), "acme"); err != nil || bs.Failures != 16 {
		t.Errorf("Failures = %d, %v; want 16", bs.Failures, err)
	}
	if _, err := s.UpdateBillingSettings(t.Context(), "nobody", func(*store.BillingSettings) error { return nil }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UpdateBillingSettings(unknown) = %v, want ErrNotFound", err)
	}
}
