package badger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/internal/settle"
)

// pThrottle keys the attempt counters: T key → store.ThrottleState,
// dropped by badger when the rule forgets it.
const pThrottle = 'T'

func throttleKey(k string) []byte { return join(pThrottle, k) }

// ThrottleAttempt counts an attempt against every key, or against none.
// Attempts are serialized on this store (one node holds a badger store),
// so a burst of them never ends in optimistic-conflict retries.
func (s *Store) ThrottleAttempt(ctx context.Context, now time.Time, keys ...store.ThrottleKey) (store.ThrottleResult, error) {
	now = settle.Time(now)
	s.throttle.Lock()
	defer s.throttle.Unlock()
	var res store.ThrottleResult
	err := s.update(ctx, func(txn *bdb.Txn) error {
		res = store.ThrottleResult{}
		next := make([]store.ThrottleState, len(keys))
		for i, k := range keys {
			var st store.ThrottleState
			v, err := get(txn, throttleKey(k.Key))
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				return err
			default:
				if err := json.Unmarshal(v, &st); err != nil {
					return fmt.Errorf("decoding throttle state: %v", err)
				}
			}
			var wait time.Duration
			next[i], wait = k.Rule.Step(st, now)
			res.Wait = max(res.Wait, wait)
			res.Count = max(res.Count, next[i].Count)
		}
		if res.Wait > 0 {
			return nil
		}
		for i, k := range keys {
			if err := setJSON(txn, throttleKey(k.Key), next[i], k.Rule.Expires(next[i]), now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return store.ThrottleResult{}, fmt.Errorf("counting an attempt: %w", err)
	}
	return res, nil
}

// ThrottleReset forgets keys' attempts.
func (s *Store) ThrottleReset(ctx context.Context, keys ...string) error {
	s.throttle.Lock()
	defer s.throttle.Unlock()
	err := s.update(ctx, func(txn *bdb.Txn) error {
		for _, k := range keys {
			if err := txn.Delete(throttleKey(k)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("resetting attempts: %w", err)
	}
	return nil
}
