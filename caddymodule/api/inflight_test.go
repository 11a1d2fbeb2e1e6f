package api

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// TestInFlight: the cap holds under concurrency, a release frees a slot
// (once, however often it is called), and an account with nothing in
// flight leaves no entry behind.
func TestInFlight(t *testing.T) {
	f := NewInFlight()
	const max = 3
	var mu sync.Mutex
	var releases []func()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if rel, ok := f.Acquire("acme", max); ok {
				mu.Lock()
				releases = append(releases, rel)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(releases) != max {
		t.Fatalf("%d acquired, want the cap %d", len(releases), max)
	}
	if _, ok := f.Acquire("acme", max); ok {
		t.Fatal("acquired past the cap")
	}
	other, ok := f.Acquire("beta", max)
	if !ok {
		t.Fatal("another account is capped by acme's runs")
	}
	releases[0]()
	releases[0]() // a second call must not free another slot
	if _, ok := f.Acquire("acme", max); !ok {
		t.Fatal("a released slot is not free again")
	}
	if _, ok := f.Acquire("acme", max); ok {
		t.Fatal("a double release freed two slots")
	}
	other()
	f.mu.Lock()
	_, left := f.n["beta"]
	f.mu.Unlock()
	if left {
		t.Error("an account with nothing in flight keeps its entry")
	}
}

// TestPrecheck: the balance must pay one record at the cheapest offer, and
// a key at its credit limit is refused before any upstream call; both are
// decided by the call's reservation (refusedForMoney), not a read before
// it.
func TestPrecheck(t *testing.T) {
	a := newTestAPI(t, 0)
	svc, _ := a.Registry.Service("pro_net", "profile.info")
	body := `{"url": "https://www.linkedin.com/in/rbranson"}`
	res, e := a.do(t, "POST", "/v1/extract/pro_net/profile.info", body, true)
	if res.StatusCode != 402 || e.Code != "insufficient_credits" || e.Type != typeBilling {
		t.Errorf("empty balance: %d %+v", res.StatusCode, e)
	}

	if _, err := a.store.AddCredits(t.Context(), "acme", credits.PerCredit); err != nil {
		t.Fatal(err)
	}
	// The limit is the stored key's: Reserve reads it in its atomic step.
	limited, err := a.store.SetKeyLimit(t.Context(), a.key.ID, &store.CreditLimit{Period: store.PeriodDay, Credits: credits.PerCredit / 100})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := parseObject([]byte(body))
	// Under the limit the call goes on to the router, which has no source
	// clients here: a routed failure, settled, carrying its run id.
	run, apiErr := a.Extract(t.Context(), limited, svc, m)
	if run != nil || apiErr == nil || apiErr.Code == "credit_limit_exceeded" || apiErr.Extra["run_id"] == nil {
		t.Fatalf("under the limit: %+v, %+v", run, apiErr)
	}
	// A run of one record at the limit's amount spends all of it.
	now := time.Now().UTC()
	spent := &runs.Run{ID: "ext_spent", Status: runs.StatusCompleted, AccountID: "acme", KeyID: limited.ID,
		Data: []json.RawMessage{json.RawMessage(`{}`)}, CreatedAt: now, CompletedAt: now}
	if _, err := a.store.Settle(t.Context(), store.Settlement{Run: spent, Price: credits.PerCredit / 100, Offer: "o", Platform: "pro_net", Now: now}); err != nil {
		t.Fatal(err)
	}
	_, apiErr = a.Extract(t.Context(), limited, svc, m)
	if apiErr == nil || apiErr.Code != "credit_limit_exceeded" || apiErr.Status != 429 || apiErr.RetryAfter <= 0 {
		t.Errorf("at the limit: %+v", apiErr)
	}
}
