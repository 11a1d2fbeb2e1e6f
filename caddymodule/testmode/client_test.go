package testmode_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/errkind"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/servicecheck"
	"socialrouter/caddymodule/testmode"
)

const servicesDir = "../../services"

var (
	loadOnce sync.Once
	loaded   *registry.Registry
	loadErr  error
)

// testRouter is the test-mode router over the declared services, built as
// the app builds it: router.New over testmode.Clients.
func testRouter(t *testing.T) (*registry.Registry, *router.Router) {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = servicecheck.Load(context.Background(), servicesDir) })
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	clients, err := testmode.Clients(loaded, os.DirFS(servicesDir))
	if err != nil {
		t.Fatal(err)
	}
	return loaded, router.New(testmode.RouterConfig(router.Config{}), clients, nil, nil)
}

func request(s *registry.Service, limit int, inputs ...string) router.Request {
	opts, _ := s.ValidateOptions(nil)
	return router.Request{Service: s, Inputs: inputs, Options: opts, Limit: limit}
}

// Every callable service answers its accepted formats' examples with
// records that pass its record check, the same for the same request.
func TestEveryServiceAnswersFromItsExamples(t *testing.T) {
	reg, rt := testRouter(t)
	n := 0
	for _, s := range reg.Services {
		if !s.Callable() {
			continue
		}
		for _, a := range s.Accepts {
			in, ok := s.MatchInput(a.Example)
			if !ok {
				t.Errorf("%s: its own example %q does not match", s.Key, a.Example)
				continue
			}
			t.Run(s.Key+"/"+a.Format, func(t *testing.T) {
				res, err := rt.Run(context.Background(), request(s, 3, in))
				if err != nil {
					t.Fatalf("run: %v", err)
				}
				if len(res.Records) == 0 || len(res.Records) > 3 {
					t.Fatalf("%d records, want 1 to 3", len(res.Records))
				}
				if res.Offer != s.LiveOffers()[0] {
					t.Errorf("served by %s, want the head of the failover order %s", res.Offer.ID, s.LiveOffers()[0].ID)
				}
				for i, r := range res.Records {
					if v := s.CheckRecord(r); v != nil {
						t.Errorf("record %d fails its check: %v", i, v)
					}
				}
				again, err := rt.Run(context.Background(), request(s, 3, in))
				if err != nil || len(again.Records) != len(res.Records) {
					t.Fatalf("second run: %v, %d records, want %d", err, len(again.Records), len(res.Records))
				}
			})
			n++
		}
	}
	if n == 0 {
		t.Fatal("no callable service")
	}
}

// The records are repeated to the inputs and trimmed to the limit.
func TestRecordsFollowInputsAndLimit(t *testing.T) {
	reg, rt := testRouter(t)
	for _, s := range reg.Services {
		if !s.Callable() || s.PerInput != 1 || s.LimitScope != registry.ScopePerCall || s.LiveOffers()[0].MaxInputs < 3 {
			continue
		}
		var ins []string
		for _, w := range []string{"alpha", "beta", "gamma"} {
			in, ok := testmode.InputWith(s, w)
			if !ok {
				t.Skipf("%s: no input of %q", s.Key, w)
			}
			ins = append(ins, in)
		}
		for _, tc := range []struct{ limit, want int }{{10, 3}, {2, 2}} {
			res, err := rt.Run(context.Background(), request(s, tc.limit, ins...))
			if err != nil {
				t.Fatalf("%s: %v", s.Key, err)
			}
			if len(res.Records) != tc.want {
				t.Errorf("%s: 3 inputs, limit %d: %d records, want %d", s.Key, tc.limit, len(res.Records), tc.want)
			}
		}
		return
	}
	t.Fatal("no one-record-per-input service with room for 3 inputs")
}

// Every magic input is accepted by every service and gives its outcome.
func TestMagicInputsOnEveryService(t *testing.T) {
	reg, rt := testRouter(t)
	for _, s := range reg.Services {
		if !s.Callable() {
			continue
		}
		for _, m := range testmode.Magics {
			in, ok := testmode.MagicInput(s, m.Word)
			if !ok {
				t.Errorf("%s: no accepted input carries %s", s.Key, m.Word)
				continue
			}
			if m.Word == testmode.Slow && s.Key != "pro_net/profile.info" {
				continue // one slow call is enough
			}
			t.Run(s.Key+"/"+m.Word, func(t *testing.T) {
				t.Parallel()
				res, err := rt.Run(context.Background(), request(s, 5, in))
				live := s.LiveOffers()
				wantFail := m.Fails || (m.Word == testmode.Failover && len(live) == 1)
				if wantFail {
					var f *router.Failure
					if !errors.As(err, &f) {
						t.Fatalf("got %d records, %v; want a failure", len(res.Records), err)
					}
					kind := m.Kind
					if m.Word == testmode.Failover {
						kind = errkind.ProviderError
					}
					if f.Kind != kind {
						t.Errorf("kind %v, want %v (%s)", f.Kind, kind, f.Message)
					}
					if len(f.Attempts) != len(live) {
						t.Errorf("%d attempts, want one per offer (%d)", len(f.Attempts), len(live))
					}
					if m.Word == testmode.RateLimited && f.RetryAfter != testmode.RetryAfterSeconds*time.Second {
						t.Errorf("Retry-After %s", f.RetryAfter)
					}
					return
				}
				if err != nil {
					t.Fatalf("run: %v", err)
				}
				switch m.Word {
				case testmode.Empty:
					if len(res.Records) != 0 {
						t.Errorf("%d records, want none", len(res.Records))
					}
				case testmode.Failover:
					if res.Offer != live[1] || len(res.Attempts) != 2 || len(res.Records) == 0 {
						t.Errorf("served by %s after %d attempts with %d records; want %s after 2", res.Offer.ID, len(res.Attempts), len(res.Records), live[1].ID)
					}
				default:
					if len(res.Records) == 0 {
						t.Error("no records")
					}
				}
			})
		}
	}
}

// A pin to the first offer disables failover: sdr-test-failover fails.
func TestFailoverPinnedFails(t *testing.T) {
	reg, rt := testRouter(t)
	for _, s := range reg.Services {
		if !s.Callable() || len(s.LiveOffers()) < 2 {
			continue
		}
		in, _ := testmode.MagicInput(s, testmode.Failover)
		req := request(s, 5, in)
		req.Pin = s.LiveOffers()[0]
		if _, err := rt.Run(context.Background(), req); err == nil {
			t.Errorf("%s: pinned to the failing offer, the run succeeded", s.Key)
		}
		req.Pin = s.LiveOffers()[1]
		if res, err := rt.Run(context.Background(), req); err != nil || res.Offer != req.Pin {
			t.Errorf("%s: pinned to the second offer: %v", s.Key, err)
		}
		return
	}
	t.Fatal("no service with two offers")
}
