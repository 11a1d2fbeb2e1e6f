package badger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// holds are the open reservations of this process. They live in memory
// only: the badger store is one process, so a restart (crash included)
// releases every hold, which is exactly what a crashed call must do.
//
// Reserve decides under mu, reading balances and key spend as committed.
// A batch that captures holds commits while holding mu and drops the
// holds before letting go: a Reserve sees either the holds or the charges
// that replaced them, never both and never neither, so what it computes
// as available is exact.
//
// byID is also guarded by idMu, which every writer of byID takes inside mu
// and only for the map operation: a call reading or releasing its own hold
// (amount, Release once Settle captured it) then never waits for the
// commit in flight, which holds mu through its fsyncs. A call's hold is
// changed only by that call, so what idMu shows it is current.
type holds struct {
	mu      sync.Mutex
	idMu    sync.Mutex
	byID    map[string]heldMoney
	account map[string]credits.Micros // sum of the account's holds
	key     map[string]credits.Micros // sum of the key's holds
}

// heldMoney is one open hold.
type heldMoney struct {
	account, key string
	amount       credits.Micros
}

func newHolds() holds {
	return holds{byID: map[string]heldMoney{}, account: map[string]credits.Micros{}, key: map[string]credits.Micros{}}
}

// drop removes hold id from the sums; mu must be held.
func (h *holds) drop(id string) {
	old, ok := h.byID[id]
	if !ok {
		return
	}
	h.idMu.Lock()
	delete(h.byID, id)
	h.idMu.Unlock()
	sub := func(m map[string]credits.Micros, k string) {
		if m[k] -= old.amount; m[k] <= 0 {
			delete(m, k)
		}
	}
	sub(h.account, old.account)
	if old.key != "" {
		sub(h.key, old.key)
	}
}

// capturing takes mu if a request of the batch captures a hold; the
// caller then commits and calls captured.
func (h *holds) capturing(reqs []*writeReq) bool {
	for _, r := range reqs {
		if r.hold != "" {
			h.mu.Lock()
			return true
		}
	}
	return false
}

// captured drops the holds of a committed batch (ok) and lets go of mu.
func (h *holds) captured(reqs []*writeReq, ok bool) {
	if ok {
		for _, r := range reqs {
			if r.hold != "" && r.err == nil {
				h.drop(r.hold)
			}
		}
	}
	h.mu.Unlock()
}

// amount returns the hold of id, if it has one; see idMu.
func (h *holds) amount(id string) (credits.Micros, bool) {
	h.idMu.Lock()
	m, ok := h.byID[id]
	h.idMu.Unlock()
	return m.amount, ok
}

// set records hold id; mu must be held.
func (h *holds) set(id string, m heldMoney) {
	h.idMu.Lock()
	h.byID[id] = m
	h.idMu.Unlock()
	h.account[m.account] += m.amount
	if m.key != "" {
		h.key[m.key] += m.amount
	}
}

// Reserve sets the hold of call h.ID: see store.Store.
func (s *Store) Reserve(ctx context.Context, h store.Hold) (store.HoldResult, error) {
	if !settle.ValidID(h.ID) || !settle.ValidID(h.AccountID) || h.Price < 0 {
		return store.HoldResult{}, fmt.Errorf("reserving for %q: invalid hold", h.ID)
	}
	s.holds.mu.Lock()
	defer s.holds.mu.Unlock()
	s.holds.drop(h.ID)
	a, err := s.GetAccount(ctx, h.AccountID)
	if err != nil {
		return store.HoldResult{}, fmt.Errorf("reserving for %s: %w", h.ID, err)
	}
	available := a.Balance - s.holds.account[h.AccountID]
	var limit *store.CreditLimit
	var room credits.Micros
	if h.KeyID != "" {
		k, err := s.GetKey(ctx, h.KeyID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return store.HoldResult{}, fmt.Errorf("reserving for %s: %w", h.ID, err)
		}
		if limit = k.CreditLimit; limit != nil {
			now := h.Now
			if now.IsZero() {
				now = time.Now()
			}
			spent, err := s.KeySpend(ctx, h.KeyID, limit.Period, now)
			if err != nil {
				return store.HoldResult{}, fmt.Errorf("reserving for %s: %w", h.ID, err)
			}
			room = limit.Credits - spent - s.holds.key[h.KeyID]
		}
	}
	res := store.HoldRoom(available, limit, room, h.Price, h.Records)
	if res.Amount > 0 {
		s.holds.set(h.ID, heldMoney{account: h.AccountID, key: h.KeyID, amount: res.Amount})
	}
	return res, nil
}

// Release drops the hold of a call, if it has one. A call without one (a
// settled call: its commit dropped it) returns at once instead of waiting
// for the commit in flight.
func (s *Store) Release(ctx context.Context, id string) error {
	if _, ok := s.holds.amount(id); !ok {
		return nil
	}
	s.holds.mu.Lock()
	s.holds.drop(id)
	s.holds.mu.Unlock()
	return nil
}
