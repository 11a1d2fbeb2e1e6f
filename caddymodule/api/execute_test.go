package api

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"socialrouter/caddymodule/billing"
	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// settleStore counts the releases that reach the store and, when
// failSettle is set, refuses every settle.
type settleStore struct {
	store.Store
	failSettle bool
	releases   int
}

func (s *settleStore) Settle(ctx context.Context, st store.Settlement) (store.SettleResult, error) {
	if s.failSettle {
		return store.SettleResult{}, errors.New("store down")
	}
	return s.Store.Settle(ctx, st)
}

func (s *settleStore) Release(ctx context.Context, id string) error {
	s.releases++
	return s.Store.Release(ctx, id)
}

// TestSettleTellsBill: a call whose settle committed (served or failed
// run) skips the store on its deferred Release, since the settle dropped
// the hold; a call whose settle failed still releases it. Either way no
// hold is left: a second call can hold the whole balance.
func TestSettleTellsBill(t *testing.T) {
	const balance = 10 * 1725
	for _, tc := range []struct {
		name       string
		served     bool
		failSettle bool
		releases   int
	}{
		{"served", true, false, 0},
		{"failed run stored", false, false, 0},
		{"settle failed", true, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAPI(t, balance)
			ss := &settleStore{Store: a.store, failSettle: tc.failSettle}
			a.Store = ss
			svc, _ := a.Registry.Service("pro_net", "profile.info")
			offer := svc.LiveOffers()[0]
			ctx := t.Context()
			now := time.Now().UTC()
			run := &runs.Run{ID: newRunID(now), Platform: "pro_net", Service: "profile.info", URL: "u", CreatedAt: now,
				AccountID: a.key.AccountID, KeyID: a.key.ID, Data: []json.RawMessage{}}
			bill := billing.New(ss, run.ID, a.key, now)
			if n, _, err := bill.Reserve(ctx, offer, 1, 1); n != 1 || err != nil {
				t.Fatalf("Reserve = %d, %v; want 1", n, err)
			}
			var res *router.Result
			var err error = &router.Failure{Kind: errkind.ProviderError, Offer: offer}
			if tc.served {
				res, err = &router.Result{Offer: offer, Records: []json.RawMessage{json.RawMessage(`{"a":1}`)}, Total: 1}, nil
			}
			a.settle(ctx, bill, runs.At(runs.Running), run, res, err, "pro_net")
			if err := bill.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if ss.releases != tc.releases {
				t.Errorf("store Release calls = %d, want %d", ss.releases, tc.releases)
			}
			acct, err := a.store.GetAccount(ctx, a.key.AccountID)
			if err != nil {
				t.Fatal(err)
			}
			want := int(acct.Balance / offer.Price)
			other := billing.New(a.store, newRunID(now), a.key, now)
			if n, _, err := other.Reserve(ctx, offer, want, 1); n != want || err != nil {
				t.Errorf("a second call holds %d of the %d records the balance pays, %v: a hold was left", n, want, err)
			}
		})
	}
}
