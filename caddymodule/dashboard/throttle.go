package dashboard

import (
	"sync"
	"time"
)

// Sign-in throttling: at most failuresPerEmail failed sign-ins per email
// and failuresPerIP per client address within throttleWindow. The email
// counts whether or not a member has it, so a throttled answer reveals
// nothing either.
const (
	throttleWindow   = 15 * time.Minute
	failuresPerEmail = 5
	failuresPerIP    = 20
	throttleMaxKeys  = 100_000 // bounds memory under a spray of addresses
)

type throttle struct {
	mu       sync.Mutex
	failures map[string][]time.Time
}

func newThrottle() *throttle { return &throttle{failures: map[string][]time.Time{}} }

// recent drops failures older than the window and returns the rest.
func (t *throttle) recent(key string, now time.Time) []time.Time {
	fs := t.failures[key]
	i := 0
	for i < len(fs) && now.Sub(fs[i]) >= throttleWindow {
		i++
	}
	fs = fs[i:]
	if len(fs) == 0 {
		delete(t.failures, key)
	} else {
		t.failures[key] = fs
	}
	return fs
}

// blocked reports whether the email or the address has used its failures,
// and until when.
func (t *throttle) blocked(email, ip string, now time.Time) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range []struct {
		key string
		max int
	}{{"e:" + email, failuresPerEmail}, {"i:" + ip, failuresPerIP}} {
		if fs := t.recent(c.key, now); len(fs) >= c.max {
			return fs[len(fs)-c.max].Add(throttleWindow), true
		}
	}
	return time.Time{}, false
}

// fail counts a failed sign-in of the email from the address.
func (t *throttle) fail(email, ip string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.failures) >= throttleMaxKeys {
		for k := range t.failures {
			t.recent(k, now)
		}
	}
	for _, k := range []string{"e:" + email, "i:" + ip} {
		t.failures[k] = append(t.failures[k], now)
	}
}

// succeed forgets the email's failures after a good sign-in.
func (t *throttle) succeed(email string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.failures, "e:"+email)
}
