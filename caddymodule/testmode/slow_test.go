package testmode_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/sources"
	"socialrouter/caddymodule/testmode"
)

// TestSlowAgainstDeadlines: sdr-test-slow completes when the attempt
// deadline is above its duration and the soft timeout above its activity
// step; below, each offer of the failover order fails in turn as it would
// live (timeout, or soft_timeout), and the call answers 504, as
// docs/testmode.md says.
func TestSlowAgainstDeadlines(t *testing.T) {
	reg, _ := testRouter(t)
	clients, err := testmode.Clients(reg, os.DirFS(servicesDir))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := reg.Service("pro_net", "profile.info")
	in, _ := testmode.MagicInput(s, testmode.Slow)
	offers := len(s.LiveOffers())
	tests := []struct {
		name          string
		attempt, soft time.Duration
		kind          errkind.Kind // 0: completes
		outcome       string
	}{
		{"default deadlines", 120 * time.Second, 30 * time.Second, 0, ""},
		{"attempt deadline under 5 s", 1 * time.Second, 800 * time.Millisecond, errkind.RequestTimeout, sources.OutcomeTimeout},
		{"soft timeout under the activity step", 10 * time.Second, 200 * time.Millisecond, errkind.RequestSoftTimeout, sources.OutcomeSoftTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rt := router.New(testmode.RouterConfig(router.Config{AttemptTimeout: tt.attempt, SoftTimeout: tt.soft}), clients, nil, nil)
			start := time.Now()
			res, err := rt.Run(context.Background(), request(s, 5, in))
			took := time.Since(start)
			if tt.kind == 0 {
				if err != nil || len(res.Records) == 0 {
					t.Fatalf("%d records, %v; want records", len(res.Records), err)
				}
				if took < testmode.SlowSeconds*time.Second {
					t.Errorf("completed in %s, before its %d s", took, testmode.SlowSeconds)
				}
				return
			}
			var f *router.Failure
			if !errors.As(err, &f) {
				t.Fatalf("%v; want a failure", err)
			}
			if f.Kind != tt.kind || len(f.Attempts) != offers {
				t.Fatalf("kind %v after %d attempts (%s); want %v after %d", f.Kind, len(f.Attempts), f.Message, tt.kind, offers)
			}
			for _, a := range f.Attempts {
				if a.Outcome != tt.outcome {
					t.Errorf("attempt %s: outcome %s, want %s", a.Offer, a.Outcome, tt.outcome)
				}
			}
			if tt.kind == errkind.RequestTimeout && took < time.Duration(offers)*tt.attempt {
				t.Errorf("failed in %s, before %d attempt deadlines of %s", took, offers, tt.attempt)
			}
		})
	}
}
