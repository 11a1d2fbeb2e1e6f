package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/badger"
)

var (
	now   = time.Date(2026, 3, 4, 10, 30, 0, 0, time.UTC)
	cheap = &registry.Offer{ID: "source_b/pro_net", Price: 1725}
	dear  = &registry.Offer{ID: "source_a/actor", Price: 2000}
)

// openStore is a real badger store in a temporary directory, with an
// account holding balance and a key, limited when limit is set.
func openStore(t *testing.T, balance credits.Micros, limit *store.CreditLimit) (store.Store, store.Key) {
	t.Helper()
	st, err := badger.Open(t.TempDir(), badger.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := t.Context()
	if _, err := st.CreateAccount(ctx, "acme", balance, now); err != nil {
		t.Fatal(err)
	}
	k := store.Key{ID: "key_1", AccountID: "acme", Hash: [32]byte{1}, Display: "sdr_…0001", CreatedAt: now, CreditLimit: limit}
	if err := st.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	return st, k
}

func TestReserveCapsAndResizes(t *testing.T) {
	st, k := openStore(t, 5*2000, nil)
	c := New(st, "ext_1", k, now)
	ctx := t.Context()
	if n, note, err := c.Reserve(ctx, cheap, 3, 1); n != 3 || note != "" || err != nil {
		t.Fatalf("Reserve(3 at cheap) = %d, %q, %v; want 3", n, note, err)
	}
	if got := c.CappedBy(cheap); got != "" {
		t.Errorf("CappedBy = %q for an uncapped hold", got)
	}
	// Failover to the dear offer re-sizes the same hold: 5 records fit,
	// not 5 minus the 3 of the first hold.
	if n, _, err := c.Reserve(ctx, dear, 10, 1); n != 5 || err != nil {
		t.Fatalf("Reserve(10 at dear) = %d, %v; want 5", n, err)
	}
	if got := c.CappedBy(dear); got != store.CappedBalance {
		t.Errorf("CappedBy(dear) = %q, want balance", got)
	}
	// Another call sees the whole balance held.
	other := New(st, "ext_2", k, now)
	if n, note, _ := other.Reserve(ctx, cheap, 1, 1); n != 0 || !strings.Contains(note, "balance") {
		t.Errorf("second call Reserve = %d, %q; want 0 and a note on the balance", n, note)
	}
	if err := c.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := other.Reserve(ctx, cheap, 1, 1); n != 1 {
		t.Errorf("after Release the second call got %d records, want 1", n)
	}
}

// TestReserveLeast: a later search page whose upstream must produce the
// earlier pages again is not held (nor called) unless the money covers
// least records; what was held for it is dropped at once.
func TestReserveLeast(t *testing.T) {
	st, k := openStore(t, 5*2000, nil)
	ctx := t.Context()
	c := New(st, "ext_1", k, now)
	n, note, err := c.Reserve(ctx, dear, 10, 6)
	if n != 0 || err != nil || !strings.Contains(note, "the 6 records this page needs") {
		t.Fatalf("Reserve(10 at dear, least 6) = %d, %q, %v; want 0 and a note naming the page's 6 records", n, note, err)
	}
	if got := c.CappedBy(dear); got != store.CappedBalance {
		t.Errorf("CappedBy(dear) = %q, want balance", got)
	}
	other := New(st, "ext_2", k, now)
	if n, _, _ := other.Reserve(ctx, dear, 10, 1); n != 5 {
		t.Errorf("after a refused page another call holds %d records, want the whole balance's 5", n)
	}
	if n, _, _ := New(st, "ext_3", k, now).Reserve(ctx, cheap, 1, 1); n != 0 {
		t.Errorf("the balance is held by the second call, yet a third held %d", n)
	}
}

func TestRefused(t *testing.T) {
	day := &store.CreditLimit{Period: store.PeriodDay, Credits: 1000}
	tests := []struct {
		name      string
		balance   credits.Micros
		limit     *store.CreditLimit
		hold      bool // another call holds the balance
		wantKind  errkind.Kind
		wantMsg   string
		wantExtra []string
		wantRetry time.Duration
	}{
		{"empty balance", 100, nil, false, errkind.InsufficientCredits,
			"balance 0.0001 credits does not pay for one record at 0.001725 credits", []string{"balance", "price_per_record"}, 0},
		{"balance held by calls in flight", 1725, nil, true, errkind.InsufficientCredits,
			"once the calls in flight are paid", []string{"balance", "price_per_record"}, 0},
		{"key limit below one record", 100 * credits.PerCredit, day, false, errkind.CreditLimitExceeded,
			"credit limit exceeded: this key spent 0 of its 0.001 credits per day", []string{"period", "limit", "spent", "resets_at"}, 13*time.Hour + 30*time.Minute},
		{"grant limit below one record", 100 * credits.PerCredit, day, false, errkind.CreditLimitExceeded,
			"credit limit exceeded: this application's sign-in spent 0 of its 0.001 credits per day", []string{"period", "limit", "spent", "resets_at"}, 13*time.Hour + 30*time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, k := openStore(t, tt.balance, tt.limit)
			if strings.HasPrefix(tt.name, "grant") {
				k.Kind = store.KindOAuth
			}
			ctx := t.Context()
			if tt.hold {
				if n, _, _ := New(st, "ext_0", k, now).Reserve(ctx, cheap, 1, 1); n != 1 {
					t.Fatalf("the other call got %d records", n)
				}
			}
			c := New(st, "ext_1", k, now)
			for _, o := range []*registry.Offer{cheap, dear} {
				if n, note, err := c.Reserve(ctx, o, 10, 1); n != 0 || note == "" || err != nil {
					t.Fatalf("Reserve(%s) = %d, %q, %v; want 0 with a note", o.ID, n, note, err)
				}
			}
			a, err := c.Refused(ctx, c.Refusal())
			if err != nil || a == nil {
				t.Fatalf("Refused = %+v, %v", a, err)
			}
			if a.Kind != tt.wantKind || !strings.Contains(a.Message, tt.wantMsg) || a.RetryAfter != tt.wantRetry {
				t.Errorf("answer %+v; want %v %q Retry-After %s", a, tt.wantKind, tt.wantMsg, tt.wantRetry)
			}
			for _, f := range tt.wantExtra {
				if _, ok := a.Extra[f]; !ok {
					t.Errorf("answer lacks field %s: %v", f, a.Extra)
				}
			}
		})
	}
}

func TestRefusedOnlyItsOwnRefusal(t *testing.T) {
	st, k := openStore(t, 0, nil)
	c := New(st, "ext_1", k, now)
	other := New(st, "ext_2", k, now)
	for _, err := range []error{nil, errors.New("boom"), &router.Failure{Kind: errkind.ProviderError}, other.Refusal(), context.Canceled} {
		if a, rerr := c.Refused(t.Context(), err); a != nil || rerr != nil {
			t.Errorf("Refused(%v) = %+v, %v; want nothing", err, a, rerr)
		}
	}
}

// countReleases counts the Release calls that reach the store.
type countReleases struct {
	store.Store
	n int
}

func (c *countReleases) Release(ctx context.Context, id string) error {
	c.n++
	return c.Store.Release(ctx, id)
}

// TestReleaseAfterSettled: a call whose settle committed (which captured
// its hold) does not ask the store to release; any other call does.
func TestReleaseAfterSettled(t *testing.T) {
	for _, tc := range []struct {
		name    string
		settled bool
		want    int
	}{
		{"settled", true, 0},
		{"failed before settling", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, k := openStore(t, 5*2000, nil)
			cs := &countReleases{Store: st}
			c := New(cs, "ext_1", k, now)
			if n, _, err := c.Reserve(t.Context(), cheap, 1, 1); n != 1 || err != nil {
				t.Fatalf("Reserve = %d, %v; want 1", n, err)
			}
			if tc.settled {
				c.Settled()
			}
			if err := c.Release(t.Context()); err != nil {
				t.Fatal(err)
			}
			if cs.n != tc.want {
				t.Errorf("store Release calls = %d, want %d", cs.n, tc.want)
			}
		})
	}
}

// TestReserveKeptRecords: once a call keeps 3 records of the dear offer
// (its failed batch's inputs fail over to the cheap one), the cheap
// offer's hold pays for them too: one hold, the run's, covers the kept
// records at the dear price and the new ones at the cheap price, so its
// Settle, each record at its own price, is captured in full; a balance
// that cannot add one new record keeps the hold of the kept ones.
func TestReserveKeptRecords(t *testing.T) {
	kept := 3 * dear.Price
	tests := []struct {
		name    string
		balance credits.Micros
		covered int            // of the 2 records asked of the cheap offer
		other   int            // cheap records another call can still hold
		lines   string         // the records settled: 'd' dear, 'c' cheap
		charged credits.Micros // exact: each record at its offer's price
	}{
		// 6 cheap records held (2 + ⌈6000 ÷ 1725⌉ = 4): 10,350.
		{name: "room for all", balance: 20000, covered: 2, other: 5, lines: "ddccd", charged: kept + 2*cheap.Price},
		// 7,000 holds 4 cheap records (6,900): the kept ones, no new one.
		{name: "room for the kept records only", balance: 7000, covered: 0, other: 0, lines: "ddd", charged: kept},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, k := openStore(t, tc.balance, nil)
			ctx := t.Context()
			c := New(st, "ext_1", k, now)
			if n, _, err := c.Reserve(ctx, dear, 3, 1); n != 3 || err != nil {
				t.Fatalf("Reserve(3 at dear) = %d, %v", n, err)
			}
			c.Keep(dear, 3)
			n, note, err := c.Reserve(ctx, cheap, 2, 1)
			if err != nil || n != tc.covered || (n == 0) != (note != "") {
				t.Fatalf("Reserve(2 at cheap) after keeping 3 dear = %d, %q, %v; want %d", n, note, err, tc.covered)
			}
			if got, _, _ := New(st, "ext_2", k, now).Reserve(ctx, cheap, 100, 1); got != tc.other {
				t.Errorf("another call holds %d cheap records, want %d", got, tc.other)
			}
			st.Release(ctx, "ext_2")
			run := &runs.Run{ID: "ext_1", AccountID: "acme", KeyID: k.ID, Status: runs.StatusCompleted, CreatedAt: now}
			var lines []store.Line
			for i, l := range tc.lines {
				run.Data = append(run.Data, json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)))
				o := dear
				if l == 'c' {
					o = cheap
				}
				lines = append(lines, store.Line{Offer: o.ID, Price: o.Price})
			}
			res, err := st.Settle(ctx, store.Settlement{Run: run, Price: cheap.Price, Offer: cheap.ID, Platform: "pro_net", Now: now, Lines: lines})
			if err != nil {
				t.Fatal(err)
			}
			c.Settled()
			if res.Records != len(tc.lines) || res.Charged != tc.charged || res.Balance != tc.balance-tc.charged {
				t.Errorf("Settle = %+v, want %d records, %s charged", res, len(tc.lines), tc.charged)
			}
		})
	}
}
