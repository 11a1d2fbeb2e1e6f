package store

import (
	"context"
	"time"
)

// Throttle keeps the attempt counters of the dashboard's sign-in, invite
// and password forms in the store, so every node of a cluster counts the
// same attempts and a restart or a reload forgets none. Every Store
// implements it.
type Throttle interface {
	// ThrottleAttempt counts one attempt against every key at once, in one
	// atomic step, before the caller does the costly check (a password
	// hash): if any key must still wait, nothing is counted and the result
	// says how long (the longest wait of the keys). Concurrent attempts
	// are each counted, so the free attempts cannot all be spent at once
	// in parallel.
	ThrottleAttempt(ctx context.Context, now time.Time, keys ...ThrottleKey) (ThrottleResult, error)
	// ThrottleReset forgets keys' attempts (after a success); an unknown
	// key is no error.
	ThrottleReset(ctx context.Context, keys ...string) error
	// ThrottleRelease takes one counted attempt back from each key (the
	// attempt succeeded), so that good attempts from one place, such as
	// the members behind one office's address, do not use up its limit.
	ThrottleRelease(ctx context.Context, now time.Time, keys ...ThrottleKey) error
}

// ThrottleRule says how often one key may try: Free attempts without
// delay, then a delay of Base before the next, doubling with each further
// attempt up to Max. A key with no attempt for Window is forgotten. The
// growing delay (rather than a lock) keeps a member whose email is
// attacked able to sign in within Max.
type ThrottleRule struct {
	Free   int           `json:"free"`
	Base   time.Duration `json:"base"`
	Max    time.Duration `json:"max"`
	Window time.Duration `json:"window"`
}

// ThrottleKey is a counter's key (at most 200 bytes) and its rule.
type ThrottleKey struct {
	Key  string
	Rule ThrottleRule
}

// ThrottleResult is the outcome of ThrottleAttempt.
type ThrottleResult struct {
	// Wait is above 0 when the attempt was refused: try again after it.
	Wait time.Duration
	// Count is the highest count of the keys after this attempt.
	Count int
}

// ThrottleState is one key's counter as the stores keep it.
type ThrottleState struct {
	Count int       `json:"count"`
	Next  time.Time `json:"next"` // no attempt before this
	Last  time.Time `json:"last"` // the last counted attempt
}

// Expires is when the state may be dropped: it has no effect after.
func (r ThrottleRule) Expires(s ThrottleState) time.Time {
	e := s.Last.Add(r.Window)
	if s.Next.After(e) {
		return s.Next
	}
	return e
}

// Step decides one attempt on a key's state at now: the state to store
// and, if the attempt must wait, how long (then the state is unchanged).
// Both stores call it inside their transaction, so they agree.
func (r ThrottleRule) Step(s ThrottleState, now time.Time) (ThrottleState, time.Duration) {
	if !now.Before(r.Expires(s)) {
		s = ThrottleState{}
	}
	if now.Before(s.Next) {
		return s, s.Next.Sub(now)
	}
	s.Count++
	s.Last = now
	if s.Count >= r.Free {
		d := r.Base
		for i := r.Free; i < s.Count && d < r.Max; i++ {
			d *= 2
		}
		s.Next = now.Add(min(d, r.Max))
	}
	return s, 0
}

// Release takes one attempt back from a key's state at now; below Free
// attempts, no delay is left. A dead state stays dead.
func (r ThrottleRule) Release(s ThrottleState, now time.Time) ThrottleState {
	if !now.Before(r.Expires(s)) || s.Count == 0 {
		return ThrottleState{}
	}
	s.Count--
	if s.Count < r.Free {
		s.Next = time.Time{}
	}
	return s
}
