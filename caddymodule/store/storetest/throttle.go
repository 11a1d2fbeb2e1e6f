package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/store"
)

// throttleSuites are the cases of store.Throttle and FindInvite, the
// dashboard's guards before a password hash.
var throttleSuites = []suite{
	{"throttle_steps", testThrottleSteps},
	{"throttle_all_or_none", testThrottleAllOrNone},
	{"throttle_concurrent", testThrottleConcurrent},
	{"throttle_release", testThrottleRelease},
	{"find_invite", testFindInvite},
}

var throttleRule = store.ThrottleRule{Free: 3, Base: 2 * time.Second, Max: 10 * time.Second, Window: time.Minute}

func attempt(t *testing.T, s store.Store, at time.Time, keys ...store.ThrottleKey) store.ThrottleResult {
	t.Helper()
	r, err := s.ThrottleAttempt(ctx(t), at, keys...)
	if err != nil {
		t.Fatalf("ThrottleAttempt: %v", err)
	}
	return r
}

// testThrottleSteps: Free attempts pass, then the delay doubles up to
// Max; a refused attempt is not counted; Reset and an idle Window forget.
func testThrottleSteps(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	k := store.ThrottleKey{Key: "e:alice", Rule: throttleRule}
	at := base
	for i := 1; i <= 3; i++ {
		if r := attempt(t, s, at, k); r.Wait != 0 || r.Count != i {
			t.Fatalf("free attempt %d: %+v", i, r)
		}
	}
	if r := attempt(t, s, at.Add(time.Second), k); r.Wait != time.Second {
		t.Fatalf("attempt within the first delay: %+v, want a wait of 1s", r)
	}
	for _, c := range []struct {
		after time.Duration
		count int
		next  time.Duration
	}{{2 * time.Second, 4, 4 * time.Second}, {4 * time.Second, 5, 8 * time.Second}, {8 * time.Second, 6, 10 * time.Second}, {10 * time.Second, 7, 10 * time.Second}} {
		at = at.Add(c.after)
		if r := attempt(t, s, at, k); r.Wait != 0 || r.Count != c.count {
			t.Fatalf("attempt after %v: %+v, want count %d", c.after, r, c.count)
		}
		if r := attempt(t, s, at, k); r.Wait != c.next {
			t.Fatalf("attempt right after count %d: wait %v, want %v", c.count, r.Wait, c.next)
		}
	}
	if err := s.ThrottleReset(ctx(t), "e:alice", "e:never-seen"); err != nil {
		t.Fatalf("ThrottleReset: %v", err)
	}
	if r := attempt(t, s, at, k); r.Wait != 0 || r.Count != 1 {
		t.Errorf("after reset: %+v, want a first attempt", r)
	}
	for range 3 {
		attempt(t, s, at, k)
	}
	if r := attempt(t, s, at.Add(time.Minute+10*time.Second), k); r.Wait != 0 || r.Count != 1 {
		t.Errorf("after an idle window: %+v, want a first attempt", r)
	}
}

// testThrottleAllOrNone: an attempt one key refuses counts on no key.
func testThrottleAllOrNone(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	ip := store.ThrottleKey{Key: "i:192.0.2.1", Rule: store.ThrottleRule{Free: 10, Base: time.Second, Max: time.Minute, Window: time.Hour}}
	email := func(e string) store.ThrottleKey { return store.ThrottleKey{Key: "e:" + e, Rule: throttleRule} }
	for range 3 {
		attempt(t, s, base, email("a"), ip)
	}
	if r := attempt(t, s, base, email("a"), ip); r.Wait == 0 {
		t.Fatalf("fourth attempt on a: %+v, want a wait", r)
	}
	if r := attempt(t, s, base, ip, email("b")); r.Wait != 0 || r.Count != 4 {
		t.Errorf("attempt on b: %+v, want the address's fourth attempt (the refused one not counted)", r)
	}
}

// testThrottleConcurrent: of many parallel attempts on one key, exactly
// Free pass: each is counted before the next is decided.
func testThrottleConcurrent(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	k := store.ThrottleKey{Key: "e:race", Rule: store.ThrottleRule{Free: 5, Base: time.Minute, Max: time.Hour, Window: time.Hour}}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		passed int
		errs   []error
	)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ip := store.ThrottleKey{Key: fmt.Sprint("i:", i%4), Rule: k.Rule}
			r, err := s.ThrottleAttempt(ctx(t), base, k, ip)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else if r.Wait == 0 {
				passed++
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if passed != 5 {
		t.Errorf("%d of 32 parallel attempts passed, want 5", passed)
	}
}

func testFindInvite(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(1))
	inv := invite("acme", "Find@Example.com", base.Add(time.Hour))
	if err := s.CreateInvite(ctx(t), inv); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindInvite(ctx(t), inv.TokenHash, base)
	if err != nil || got.AccountID != "acme" || got.Email != "find@example.com" || got.TokenHash != inv.TokenHash {
		t.Fatalf("FindInvite = %+v, %v", got, err)
	}
	checkTime(t, "invite expires_at", got.ExpiresAt, base.Add(time.Hour))
	if _, err := s.FindInvite(ctx(t), inv.TokenHash, base.Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired invite: %v, want ErrNotFound", err)
	}
	if _, err := s.FindInvite(ctx(t), hashOf("other"), base); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown invite: %v, want ErrNotFound", err)
	}
	if _, err := s.AcceptInvite(ctx(t), inv.TokenHash, store.Member{ID: "mem_f", PasswordHash: "h"}, base); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindInvite(ctx(t), inv.TokenHash, base); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("used invite: %v, want ErrNotFound", err)
	}
}

// testThrottleRelease: a released attempt no longer counts, and below
// the free attempts no delay is left; releasing an unknown key is no
// error.
func testThrottleRelease(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	k := store.ThrottleKey{Key: "address:office", Rule: throttleRule}
	for range 3 {
		attempt(t, s, base, k)
	}
	if r := attempt(t, s, base, k); r.Wait == 0 {
		t.Fatalf("fourth attempt: %+v, want a wait", r)
	}
	if err := s.ThrottleRelease(ctx(t), base, k, store.ThrottleKey{Key: "address:unknown", Rule: throttleRule}); err != nil {
		t.Fatalf("ThrottleRelease: %v", err)
	}
	if r := attempt(t, s, base, k); r.Wait != 0 || r.Count != 3 {
		t.Errorf("after a release: %+v, want the third attempt again, free", r)
	}
	for range 3 {
		if err := s.ThrottleRelease(ctx(t), base, k); err != nil {
			t.Fatal(err)
		}
	}
	if r := attempt(t, s, base, k); r.Wait != 0 || r.Count != 1 {
		t.Errorf("after releasing all: %+v, want a first attempt", r)
	}
}
