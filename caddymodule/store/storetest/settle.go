package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

func testSettleCharge(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	cases := []struct {
		name        string
		balance     credits.Micros
		price       credits.Micros
		records     int
		wantRecords int
	}{
		{"pays for every record", cr(10), price, 5, 5},
		{"exact balance", 3 * price, price, 3, 3},
		{"truncates to what the balance pays", 2*price + price/2, price, 5, 2},
		{"balance pays exactly fewer records", 3 * price, price, 5, 3},
		{"balance below one record", price - 1, price, 5, 0},
		{"zero balance", 0, price, 3, 0},
		{"no records", cr(1), price, 0, 0},
		{"free records", cr(1), 0, 4, 4},
		{"one micro-credit price", 7, 1, 10, 7},
		{"250 records at 0.0069", cr(100), 6900, 250, 250},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			account := fmt.Sprintf("acct_%d", i)
			mustAccount(t, s, account, tc.balance)
			k := mustKey(t, s, fmt.Sprintf("key_%d", i), account)
			run := newRun(account, k.ID, tc.records)
			produced := append([]json.RawMessage(nil), run.Data...)

			st := settlement(run, tc.price, base)
			var answer []byte
			st.Answer = &answer
			res := mustSettle(t, s, st)
			charged := credits.Micros(tc.wantRecords) * tc.price
			want := store.SettleResult{Records: tc.wantRecords, Charged: charged, Balance: tc.balance - charged}
			if res != want {
				t.Errorf("Settle = %+v, want %+v", res, want)
			}
			if got := balanceOf(t, s, account); got != want.Balance {
				t.Errorf("balance = %s, want %s", got, want.Balance)
			}
			if len(run.Data) != tc.wantRecords || run.Data == nil {
				t.Errorf("run.Data has %d records (nil %v), want %d", len(run.Data), run.Data == nil, tc.wantRecords)
			}
			for j := range run.Data {
				if string(run.Data[j]) != string(produced[j]) {
					t.Errorf("run.Data[%d] = %s, want %s (the first records are kept)", j, run.Data[j], produced[j])
				}
			}
			if run.CreditsUsed != charged || run.Pagination.Returned != tc.wantRecords || run.Pagination.Total != tc.records {
				t.Errorf("run credits_used %s returned %d total %d, want %s %d %d",
					run.CreditsUsed, run.Pagination.Returned, run.Pagination.Total, charged, tc.wantRecords, tc.records)
			}
			got, err := s.GetRun(ctx(t), account, run.ID)
			if err != nil {
				t.Fatalf("GetRun: %v", err)
			}
			sameRun(t, got, *run)
			sameRunJSON(t, s, account, run.ID)
			sameAnswer(t, s, account, run.ID, answer)

			rows, err := s.Usage(ctx(t), account, base.AddDate(0, 0, -1))
			if err != nil {
				t.Fatalf("Usage: %v", err)
			}
			wantRows := []store.UsageRow{{Day: day(base), Offer: "source_b/pro_net", Platform: "pro_net", Requests: 1, Records: int64(tc.wantRecords), Credits: charged}}
			sameUsage(t, rows, wantRows)
			for _, p := range store.Periods {
				if got, err := s.KeySpend(ctx(t), k.ID, p, base); err != nil || got != charged {
					t.Errorf("KeySpend(%s) = %s, %v; want %s", p, got, err, charged)
				}
			}
		})
	}
}

func testSettleFailedRun(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	cases := []struct {
		name    string
		balance credits.Micros
		data    []json.RawMessage
	}{
		{"with balance", cr(3), nil},
		{"with zero balance", 0, nil},
		{"with an empty data array", cr(1), []json.RawMessage{}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			account := fmt.Sprintf("acct_%d", i)
			mustAccount(t, s, account, tc.balance)
			k := mustKey(t, s, fmt.Sprintf("key_%d", i), account)
			run := newRun(account, k.ID, 0)
			run.Status = "failed"
			run.Data = tc.data
			run.Error = &runs.RunError{Code: "provider_error", Type: "provider", Message: "every offer failed"}
			run.Attempts = []runs.Attempt{
				{Offer: "source_b/pro_net", Outcome: "upstream_5xx", Status: 503, DurationMS: 812, Handles: []string{"s_9"}},
				{Offer: "source_a/actor_5", Outcome: "timeout", DurationMS: 120000, Message: "no answer"},
			}
			res := mustSettle(t, s, store.Settlement{Run: run, Price: 0, Offer: "source_a/actor_5", Platform: "pro_net", Now: base})
			if want := (store.SettleResult{Balance: tc.balance}); res != want {
				t.Errorf("Settle = %+v, want %+v", res, want)
			}
			if run.Data == nil || len(run.Data) != 0 || run.CreditsUsed != 0 || run.Pagination.Returned != 0 {
				t.Errorf("failed run after Settle: data %v credits %s returned %d", run.Data, run.CreditsUsed, run.Pagination.Returned)
			}
			got, err := s.GetRun(ctx(t), account, run.ID)
			if err != nil {
				t.Fatalf("GetRun: %v", err)
			}
			sameRun(t, got, *run)
			sameRunJSON(t, s, account, run.ID)
			if b, _ := json.Marshal(got); !json.Valid(b) || !containsAll(string(b), `"data":[]`, `"credits_used":0`, `"status":"failed"`, `"code":"provider_error"`) {
				t.Errorf("failed run renders as %s", b)
			}
			if got := balanceOf(t, s, account); got != tc.balance {
				t.Errorf("balance = %s, want %s (no charge)", got, tc.balance)
			}
			rows, err := s.Usage(ctx(t), account, day(base))
			if err != nil {
				t.Fatal(err)
			}
			sameUsage(t, rows, []store.UsageRow{{Day: day(base), Offer: "source_a/actor_5", Platform: "pro_net", Requests: 1}})
			for _, p := range store.Periods {
				if got, err := s.KeySpend(ctx(t), k.ID, p, base); err != nil || got != 0 {
					t.Errorf("KeySpend(%s) = %s, %v; want 0", p, got, err)
				}
			}
		})
	}
}

func testSettleErrors(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(1))
	k := mustKey(t, s, "key_1", "acme")

	t.Run("unknown account", func(t *testing.T) {
		run := newRun("nobody", "", 2)
		if _, err := s.Settle(ctx(t), settlement(run, price, base)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Settle err = %v, want ErrNotFound", err)
		}
		if _, err := s.GetRun(ctx(t), "nobody", run.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetRun of a refused run: err = %v, want ErrNotFound", err)
		}
		if rows, err := s.Usage(ctx(t), "nobody", time.Time{}); err != nil || len(rows) != 0 {
			t.Errorf("Usage of an unknown account = %v, %v; want none", rows, err)
		}
	})

	t.Run("duplicate run id charges once", func(t *testing.T) {
		run := newRun("acme", k.ID, 2)
		first := mustSettle(t, s, settlement(run, price, base))
		again := newRun("acme", k.ID, 3)
		again.ID = run.ID
		if _, err := s.Settle(ctx(t), settlement(again, price, base)); !errors.Is(err, store.ErrExists) {
			t.Fatalf("second Settle err = %v, want ErrExists", err)
		}
		if got := balanceOf(t, s, "acme"); got != first.Balance {
			t.Errorf("balance = %s, want %s", got, first.Balance)
		}
		got, err := s.GetRun(ctx(t), "acme", run.ID)
		if err != nil {
			t.Fatal(err)
		}
		sameRun(t, got, *run)
		sameRunJSON(t, s, "acme", run.ID)
		rows, err := s.Usage(ctx(t), "acme", day(base))
		if err != nil {
			t.Fatal(err)
		}
		sameUsage(t, rows, []store.UsageRow{{Day: day(base), Offer: "source_b/pro_net", Platform: "pro_net", Requests: 1, Records: 2, Credits: 2 * price}})
		if got, _ := s.KeySpend(ctx(t), k.ID, store.PeriodDay, base); got != 2*price {
			t.Errorf("KeySpend = %s, want %s", got, 2*price)
		}
	})

	invalid := []struct {
		name string
		s    store.Settlement
	}{
		{"no run", store.Settlement{Price: price, Now: base}},
		{"no run id", func() store.Settlement {
			r := newRun("acme", "", 1)
			r.ID = ""
			return settlement(r, price, base)
		}()},
		{"no account", settlement(newRun("", "", 1), price, base)},
		{"negative price", settlement(newRun("acme", "", 1), -1, base)},
	}
	for _, tc := range invalid {
		t.Run(tc.name, func(t *testing.T) {
			before := balanceOf(t, s, "acme")
			if _, err := s.Settle(ctx(t), tc.s); err == nil {
				t.Fatal("Settle succeeded, want an error")
			}
			if got := balanceOf(t, s, "acme"); got != before {
				t.Errorf("balance moved from %s to %s", before, got)
			}
		})
	}
}

func testRunScope(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(1))
	mustAccount(t, s, "rival", cr(1))
	run := newRun("acme", "", 1)
	mustSettle(t, s, settlement(run, price, base))
	rivalRun := newRun("rival", "", 1)
	mustSettle(t, s, settlement(rivalRun, price, base))

	cases := []struct {
		name     string
		account  string
		id       string
		wantErr  error
		wantsRun *runs.Run
	}{
		{"own run", "acme", run.ID, nil, run},
		{"own run of the other account", "rival", rivalRun.ID, nil, rivalRun},
		{"another account's run", "rival", run.ID, store.ErrNotFound, nil},
		{"another account's run reversed", "acme", rivalRun.ID, store.ErrNotFound, nil},
		{"unknown account", "nobody", run.ID, store.ErrNotFound, nil},
		{"unknown run", "acme", "ext_missing", store.ErrNotFound, nil},
		{"empty id", "acme", "", store.ErrNotFound, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.GetRun(ctx(t), tc.account, tc.id)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("GetRun err = %v, want %v", err, tc.wantErr)
				}
				if b, err := s.GetRunJSON(ctx(t), nil, tc.account, tc.id); !errors.Is(err, tc.wantErr) {
					t.Fatalf("GetRunJSON = %s, %v; want %v", b, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("GetRun: %v", err)
			}
			sameRun(t, got, *tc.wantsRun)
			sameRunJSON(t, s, tc.account, tc.id)
		})
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
