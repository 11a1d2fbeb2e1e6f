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

// throttleCacheMax bounds the counters kept in memory; past it, the dead
// ones are dropped, and if that is not enough, all (they are reread).
const throttleCacheMax = 100_000

// throttleCache is the counters in memory, in front of their stored copy:
// one process holds a badger store, so memory is authoritative once a key
// was read. A refused attempt then costs no transaction at all: a badger
// transaction waits for the commits in flight (each settle's fsync), so a
// flood of refused sign-ins read through badger queued behind the paid
// API's settles, and slowed them in turn.
type throttleCache struct {
	states map[string]cachedThrottle
}

type cachedThrottle struct {
	state   store.ThrottleState
	expires time.Time
}

// ThrottleAttempt counts an attempt against every key, or against none.
// Attempts are serialized on this store; the keys already in memory are
// decided first, so an attempt refused by one of them (a throttled
// address) reads and writes nothing.
func (s *Store) ThrottleAttempt(ctx context.Context, now time.Time, keys ...store.ThrottleKey) (store.ThrottleResult, error) {
	now = settle.Time(now)
	s.throttle.Lock()
	defer s.throttle.Unlock()
	if s.throttleCache.states == nil {
		s.throttleCache.states = map[string]cachedThrottle{}
	}
	var res store.ThrottleResult
	for _, k := range keys {
		if c, ok := s.throttleCache.states[k.Key]; ok {
			if _, wait := k.Rule.Step(c.state, now); wait > 0 {
				res.Wait = max(res.Wait, wait)
			}
		}
	}
	if res.Wait > 0 {
		return res, nil
	}
	next := make([]store.ThrottleState, len(keys))
	for i, k := range keys {
		st, err := s.throttleState(k.Key)
		if err != nil {
			return store.ThrottleResult{}, fmt.Errorf("counting an attempt: %w", err)
		}
		var wait time.Duration
		next[i], wait = k.Rule.Step(st, now)
		res.Wait = max(res.Wait, wait)
		res.Count = max(res.Count, next[i].Count)
	}
	if res.Wait > 0 {
		return store.ThrottleResult{Wait: res.Wait}, nil
	}
	err := s.update(ctx, func(txn *bdb.Txn) error {
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
	s.cacheThrottle(keys, next, now)
	return res, nil
}

// throttleState is a key's counter: from memory, else as stored (zero if
// absent), then kept in memory. s.throttle is held.
func (s *Store) throttleState(key string) (store.ThrottleState, error) {
	if c, ok := s.throttleCache.states[key]; ok {
		return c.state, nil
	}
	var st store.ThrottleState
	err := s.db.View(func(txn *bdb.Txn) error {
		v, err := get(txn, throttleKey(key))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := json.Unmarshal(v, &st); err != nil {
			return fmt.Errorf("decoding throttle state: %v", err)
		}
		return nil
	})
	return st, err
}

// cacheThrottle keeps the written counters in memory; s.throttle is held.
func (s *Store) cacheThrottle(keys []store.ThrottleKey, states []store.ThrottleState, now time.Time) {
	c := &s.throttleCache
	if len(c.states)+len(keys) > throttleCacheMax {
		for k, v := range c.states {
			if !now.Before(v.expires) {
				delete(c.states, k)
			}
		}
		if len(c.states)+len(keys) > throttleCacheMax {
			clear(c.states)
		}
	}
	for i, k := range keys {
		c.states[k.Key] = cachedThrottle{state: states[i], expires: k.Rule.Expires(states[i])}
	}
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
	for _, k := range keys {
		delete(s.throttleCache.states, k)
	}
	return nil
}

// ThrottleRelease takes one attempt back from each key.
func (s *Store) ThrottleRelease(ctx context.Context, now time.Time, keys ...store.ThrottleKey) error {
	now = settle.Time(now)
	s.throttle.Lock()
	defer s.throttle.Unlock()
	next := make([]store.ThrottleState, len(keys))
	for i, k := range keys {
		st, err := s.throttleState(k.Key)
		if err != nil {
			return fmt.Errorf("releasing an attempt: %w", err)
		}
		next[i] = k.Rule.Release(st, now)
	}
	err := s.update(ctx, func(txn *bdb.Txn) error {
		for i, k := range keys {
			if next[i].Count == 0 {
				if err := txn.Delete(throttleKey(k.Key)); err != nil {
					return err
				}
				continue
			}
			if err := setJSON(txn, throttleKey(k.Key), next[i], k.Rule.Expires(next[i]), now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("releasing an attempt: %w", err)
	}
	s.cacheThrottle(keys, next, now)
	return nil
}
