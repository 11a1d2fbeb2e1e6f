package webhooks

import (
	"math/rand/v2"
	"time"
)

// jitter spreads d by up to ±10%, so receivers that fail together are not
// retried together.
func jitter(d time.Duration) time.Duration {
	spread := int64(d) / 10
	if spread <= 0 {
		return d
	}
	return d - time.Duration(spread) + time.Duration(rand.Int64N(2*spread+1))
}

// retryAfter is the wait before the attempt after attempt n (1-based);
// ok false when the schedule is spent.
func (s *Service) retryAfter(n int) (time.Duration, bool) {
	if n < 1 || n > len(s.schedule) {
		return 0, false
	}
	return s.jitter(s.schedule[n-1]), true
}
