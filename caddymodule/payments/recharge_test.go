package payments

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
	badgerstore "socialrouter/caddymodule/store/badger"
)

// TestRechargeAfterLeaseAndFailure: a recharge whose outcome never came
// blocks the next one only until its lease ends; the next one, unable to
// reach the provider, is a failure counted on the account, and the
// notifier hears of it.
func TestRechargeAfterLeaseAndFailure(t *testing.T) {
	st, err := badgerstore.Open(t.TempDir(), badgerstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := t.Context()
	if _, err := st.CreateAccount(ctx, "acme", credits.PerCredit, time.Now()); err != nil {
		t.Fatal(err)
	}
	// A port nothing listens on: the provider cannot be reached.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + l.Addr().String()
	l.Close()
	events := make(chan string, 4)
	s, err := New(Config{SecretKey: "sk_test_x", WebhookSecret: "whsec_x", Currency: "usd", PerUnit: credits.PerCredit, MinTopUp: 500, MaxTopUp: 50000,
		APIBase: closed, Store: st, Notify: func(_ context.Context, _, event string, data []byte) error {
			events <- event + " " + string(data)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	set := func(until time.Time) {
		if _, err := s.Update(ctx, "acme", func(bs *store.BillingSettings) error {
			*bs = store.BillingSettings{Customer: "cus_1", PaymentMethod: "pm_1", AutoRecharge: true, RechargeThreshold: 2 * credits.PerCredit,
				RechargeAmount: 10 * credits.PerCredit, RechargeID: "rch_old", RechargeUntil: until}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	set(time.Now().Add(time.Hour))
	s.Settled("acme", credits.PerCredit)
	time.Sleep(200 * time.Millisecond)
	if bs, _ := st.BillingSettings(ctx, "acme"); bs.RechargeID != "rch_old" || bs.Failures != 0 {
		t.Fatalf("a recharge in flight was replaced: %+v", bs)
	}
	set(time.Now().Add(-time.Second)) // its lease ran out
	s.Settled("acme", credits.PerCredit)
	select {
	case ev := <-events:
		if !strings.HasPrefix(ev, EventRechargeFailed) || !strings.Contains(ev, "could not be reached") || !strings.Contains(ev, `"failures_in_a_row":1`) {
			t.Errorf("event %s", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no recharge failure notified")
	}
	bs, _ := st.BillingSettings(ctx, "acme")
	if bs.RechargeID != "" || bs.Failures != 1 || !bs.AutoRecharge || bs.FailedAt.IsZero() {
		t.Errorf("settings after the failure: %+v", bs)
	}
}
