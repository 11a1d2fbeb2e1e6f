package api

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/store"
)

// precheck runs the billing checks before any upstream call: the balance
// pays for at least one record at the cheapest candidate offer, the key's
// credit limit is not reached, and the account is under its concurrency
// cap. It returns the release of the in-flight slot.
func (a *API) precheck(ctx context.Context, key store.Key, offers []*registry.Offer) (func(), *Error) {
	acct, err := a.Store.GetAccount(ctx, key.AccountID)
	if err != nil {
		a.Logger.Error("reading account", zap.Error(err))
		return nil, storeUnavailable()
	}
	cheapest := credits.Micros(0)
	for i, o := range offers {
		if i == 0 || o.Price < cheapest {
			cheapest = o.Price
		}
	}
	if acct.Balance < cheapest {
		return nil, newError(http.StatusPaymentRequired, "insufficient_credits", typeBilling,
			fmt.Sprintf("balance %s credits does not pay for one record at %s credits; add credits to the account", acct.Balance, cheapest)).
			with("balance", acct.Balance).with("price_per_record", cheapest)
	}
	if lim := key.CreditLimit; lim != nil {
		now := time.Now().UTC()
		spent, err := a.Store.KeySpend(ctx, key.ID, lim.Period, now)
		if err != nil {
			a.Logger.Error("reading key spend", zap.Error(err))
			return nil, storeUnavailable()
		}
		if spent >= lim.Credits {
			end := store.PeriodEnd(lim.Period, now)
			e := newError(http.StatusTooManyRequests, "credit_limit_exceeded", typeRateLimit,
				fmt.Sprintf("credit limit exceeded: this key spent %s of its %s credits per %s; the limit resets at %s",
					spent, lim.Credits, lim.Period, end.Format(time.RFC3339))).
				with("period", lim.Period).with("limit", lim.Credits).with("spent", spent).with("resets_at", end.Format(time.RFC3339))
			e.RetryAfter = end.Sub(now)
			return nil, e
		}
	}
	release, ok := a.InFlight.Acquire(key.AccountID, a.MaxConcurrentRuns)
	if !ok {
		e := newError(http.StatusTooManyRequests, "too_many_concurrent_runs", typeRateLimit,
			fmt.Sprintf("this account already has %d runs in flight; wait for one to finish", a.MaxConcurrentRuns))
		e.RetryAfter = time.Second
		return nil, e
	}
	return release, nil
}

// InFlight counts the runs in flight per account. It outlives a config
// generation (the app keeps it in a usage pool entry), so a reload does not
// reset the cap while runs are under way. An account's entry goes when its
// last run ends: the map holds only accounts with runs in flight.
type InFlight struct {
	mu sync.Mutex
	n  map[string]int
}

// NewInFlight returns empty counts.
func NewInFlight() *InFlight { return &InFlight{n: map[string]int{}} }

// Acquire counts a run in flight for the account; false when the account
// already has max in flight. release must be called once.
func (f *InFlight) Acquire(account string, max int) (release func(), ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[account] >= max {
		return nil, false
	}
	f.n[account]++
	var once sync.Once
	return func() { once.Do(func() { f.release(account) }) }, true
}

func (f *InFlight) release(account string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[account]--; f.n[account] <= 0 {
		delete(f.n, account)
	}
}
