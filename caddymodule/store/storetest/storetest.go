// Package storetest is the conformance suite of store.Store. The badger and
// postgres stores run the same table-driven cases, so the gateway behaves
// the same on either and a new implementation knows exactly what to meet.
package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// suite is one named case of the suite; open returns a fresh store.
type suite struct {
	name string
	run  func(t *testing.T, open func(t *testing.T) store.Store)
}

// Run runs the whole suite. open must return a fresh, empty store for one
// sub-test; Run closes it when the sub-test ends, so open should register
// only the clean-up of what surrounds the store (a directory, a schema).
// Sub-tests run in parallel.
//
// Beyond the Store doc comments, the suite pins down what the gateway relies
// on: times come back in UTC at microsecond precision (PostgreSQL's); a new
// account cannot start below zero; Settle stores an empty (never null) data
// array when it keeps nothing, refuses a run id it already holds (ErrExists)
// without charging twice, and adds no key spend when it charges nothing;
// KeySpend is 0 for a key that spent nothing; Usage rows come ordered by day,
// offer, platform; GetRunJSON is the JSON of what GetRun returns.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	suites := []suite{
		{"accounts", testAccounts},
		{"add_credits", testAddCredits},
		{"keys", testKeys},
		{"key_limits", testKeyLimits},
		{"key_revoke", testKeyRevoke},
		{"key_unknown", testKeyUnknown},
		{"settle_charge", testSettleCharge},
		{"settle_failed_run", testSettleFailedRun},
		{"settle_errors", testSettleErrors},
		{"settle_mixed", testSettleMixed},
		{"run_scope", testRunScope},
		{"run_json", testRunJSON},
		{"usage_rollup", testUsageRollup},
		{"usage_since", testUsageSince},
		{"key_spend_periods", testKeySpendPeriods},
		{"concurrent_overdraw", testConcurrentOverdraw},
		{"concurrent_one_account", testConcurrentOneAccount},
		{"concurrent_mixed", testConcurrentMixed},
		{"concurrent_some_fail", testConcurrentSomeFail},
		{"list_accounts", testListAccounts},
		{"holds", testHolds},
		{"holds_key_limit", testHoldsKeyLimit},
		{"holds_concurrent_balance", testHoldsConcurrentBalance},
		{"holds_concurrent_key_limit", testHoldsConcurrentKeyLimit},
	}
	suites = append(suites, memberSuites...)
	suites = append(suites, oauthSuites...)
	suites = append(suites, throttleSuites...)
	suites = append(suites, retentionSuites...)
	suites = append(suites, webhookSuites...)
	suites = append(suites, asyncSuites...)
	suites = append(suites, ledgerSuites...)
	suites = append(suites, cacheSuites...)
	suites = append(suites, capabilitySuites...)
	for _, s := range suites {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			s.run(t, func(t *testing.T) store.Store {
				t.Helper()
				st := open(t)
				t.Cleanup(func() {
					if err := st.Close(); err != nil {
						t.Errorf("closing store: %v", err)
					}
				})
				return st
			})
		})
	}
}

// base is a Wednesday, mid-hour, with nanoseconds a store must truncate.
var base = time.Date(2025, time.March, 12, 10, 30, 15, 123456789, time.UTC)

// price is source_b's price per record, 0.001725 credits.
const price credits.Micros = 1725

// cr converts whole credits to micro-credits.
func cr(n int64) credits.Micros { return credits.Micros(n * credits.PerCredit) }

var runSeq atomic.Int64

// newRun builds a completed run of n records for an account and key.
func newRun(account, key string, n int) *runs.Run {
	id := "ext_" + strconv.FormatInt(runSeq.Add(1), 10)
	data := make([]json.RawMessage, n)
	for i := range data {
		data[i] = json.RawMessage(fmt.Sprintf(`{"name":"record %d","n":%d}`, i, i))
	}
	return &runs.Run{
		ID:          id,
		Status:      "completed",
		Platform:    "pro_net",
		Service:     "company.info",
		URL:         "https://example.com/company/" + id,
		ServedBy:    "source_b/pro_net",
		Provider:    "source_b",
		Data:        data,
		Pagination:  runs.Pagination{Total: n},
		CreatedAt:   base,
		CompletedAt: base.Add(1500 * time.Millisecond),
		Attempts:    []runs.Attempt{{Offer: "source_b/pro_net", Outcome: "ok", Status: 200, DurationMS: 1500, Handles: []string{"s_1"}, Records: n}},
		AccountID:   account,
		KeyID:       key,
	}
}

// settlement wraps a run with the suite's default offer and platform.
func settlement(r *runs.Run, p credits.Micros, now time.Time) store.Settlement {
	return store.Settlement{Run: r, Price: p, Offer: "source_b/pro_net", Platform: "pro_net", Now: now}
}

func mustAccount(t *testing.T, s store.Store, id string, balance credits.Micros) {
	t.Helper()
	if _, err := s.CreateAccount(t.Context(), id, balance, base); err != nil {
		t.Fatalf("CreateAccount(%q): %v", id, err)
	}
}

func mustKey(t *testing.T, s store.Store, id, account string) store.Key {
	t.Helper()
	k := store.Key{ID: id, AccountID: account, Name: "k " + id, Hash: hashOf(id), Display: "sdr_live_…" + id, CreatedAt: base}
	if err := s.CreateKey(t.Context(), k); err != nil {
		t.Fatalf("CreateKey(%q): %v", id, err)
	}
	k.CreatedAt = wantTime(base)
	return k
}

func mustSettle(t *testing.T, s store.Store, st store.Settlement) store.SettleResult {
	t.Helper()
	res, err := s.Settle(t.Context(), st)
	if err != nil {
		t.Fatalf("Settle(%s): %v", st.Run.ID, err)
	}
	return res
}

func balanceOf(t *testing.T, s store.Store, id string) credits.Micros {
	t.Helper()
	a, err := s.GetAccount(t.Context(), id)
	if err != nil {
		t.Fatalf("GetAccount(%q): %v", id, err)
	}
	return a.Balance
}

// hashOf derives a distinct digest from a name.
func hashOf(name string) [32]byte {
	var h [32]byte
	copy(h[:], name)
	h[31] = 0xAA
	return h
}

// wantTime is how a store returns t: UTC, microsecond precision.
func wantTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func checkTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(wantTime(want)) || got.Location() != time.UTC {
		t.Errorf("%s = %v, want %v (UTC, microseconds)", what, got, wantTime(want))
	}
}

// sameRun compares two runs through their API form plus the scope fields.
func sameRun(t *testing.T, got, want runs.Run) {
	t.Helper()
	gb, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	wb, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(gb) != string(wb) {
		t.Errorf("run differs:\n got %s\nwant %s", gb, wb)
	}
	if got.AccountID != want.AccountID || got.KeyID != want.KeyID {
		t.Errorf("run scope = (%q, %q), want (%q, %q)", got.AccountID, got.KeyID, want.AccountID, want.KeyID)
	}
	if got.Data == nil {
		t.Errorf("run %s: data is nil, want an array", got.ID)
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }
