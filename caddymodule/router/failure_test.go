package router

import (
	"context"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/sources"
)

// TestFailureAdvice: a failure's message offers only what the caller can
// do: pin another offer or let the router fail over when the service has
// another offer, in the caller's own words (Request.Unpin), else just retry.
func TestFailureAdvice(t *testing.T) {
	reg := testRegistry(t)
	two := service(t, reg, "pro_net/profile.info")
	one := service(t, reg, "pro_net/post.list")
	e503 := &sources.Error{Outcome: sources.OutcomeUpstream5xx, Status: 503, Retryable: true}
	e504 := &sources.Error{Outcome: sources.OutcomeTimeout, Status: 504, Retryable: true}
	limited := &sources.Error{Outcome: sources.OutcomeRateLimited, Status: 429, Retryable: true, RetryAfter: 5 * time.Second}
	tests := []struct {
		name      string
		err       *sources.Error
		svc       string
		pin       bool
		unpin     string
		want, not string
	}{
		{"two offers, walked", e503, "two", false, "", "Retry later or pin another offer with provider.", "fail over"},
		{"two offers, timeout", e504, "two", false, "", "or a lower limit, or pin another offer with provider.", "fail over"},
		{"two offers, pinned", e503, "two", true, "", "Retry later, or drop provider to let the router fail over.", "pin another"},
		{"two offers, pinned by search", e503, "two", true, `send "fallback": true`, `Retry later, or send "fallback": true to let the router fail over.`, "drop provider"},
		{"two offers, pinned, rate-limited", limited, "two", true, `send "fallback": true`, `Retry after 5 s, or send "fallback": true to let`, "drop provider"},
		{"one offer, walked", e503, "one", false, "", "answered HTTP 503. Retry later.", "provider"},
		{"one offer, timeout", e504, "one", false, "", "fewer inputs or a lower limit.", "pin another"},
		{"one offer, pinned", e503, "one", true, "", "Retry later.", "fail over"},
		{"one offer, pinned, rate-limited", limited, "one", true, "", "Retry after 5 s.", "fail over"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := setup(t, Config{}, &fake{do: fail(tt.err)}, &fake{do: fail(tt.err)})
			svc := two
			if tt.svc == "one" {
				svc = one
			}
			req := Request{Service: svc, Inputs: []string{in1}, Unpin: tt.unpin}
			if tt.pin {
				req.Pin = svc.LiveOffers()[0]
			}
			_, err := r.Run(context.Background(), req)
			f := asFailure(t, err)
			if !strings.Contains(f.Message, tt.want) || strings.Contains(f.Message, tt.not) {
				t.Errorf("message %q: want %q, without %q", f.Message, tt.want, tt.not)
			}
		})
	}
}
