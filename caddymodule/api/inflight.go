package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/testmode"
)

// precheck refuses a call while the store cannot write (writable), takes
// the account's in-flight slot before any upstream call
// (429 too_many_concurrent_runs at the cap) and returns its release. The
// balance and the key's credit limit are not checked here: the call's
// billing.Call reserves before each offer attempt and refuses a call no
// offer of which can be paid one record (refusedForMoney).
func (a *API) precheck(key store.Key) (func(), *Error) {
	if apiErr := a.writable(); apiErr != nil {
		return nil, apiErr
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

// startRun takes the account's in-flight slot (precheck) and starts the
// run of key's call, created now with no data yet; the caller fills in
// what it ran and calls release when the run is settled.
func (a *API) startRun(key store.Key) (run *runs.Run, release func(), apiErr *Error) {
	release, apiErr = a.precheck(key)
	if apiErr != nil {
		return nil, nil, apiErr
	}
	now := time.Now().UTC()
	return &runs.Run{
		ID: newRunID(now), CreatedAt: now, AccountID: key.AccountID, KeyID: key.ID, Data: []json.RawMessage{},
		Livemode: !testmode.IsTest(key.AccountID),
	}, release, nil
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
