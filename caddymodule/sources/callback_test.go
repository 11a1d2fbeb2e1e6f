package sources_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/callbacks"
	"socialrouter/caddymodule/sources"
	"socialrouter/cmd/upstream-sim/sim"
)

// TestCallbackLoop runs the whole loop in one process: the simulator calls
// back the callbacks handler, whose hub wakes the waiting client, which
// reads the items without polling; with the callbacks dropped it polls
// after the fallback wait.
func TestCallbackLoop(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	hub := callbacks.NewHub()
	gw := httptest.NewServer(&callbacks.Handler{Waker: hub, Log: zap.NewNop(), Sources: func(id string) (callbacks.Source, bool) {
		p := map[string]string{"a": sources.ProtocolActorRun, "b": sources.ProtocolDatasetScrape}[id]
		return callbacks.Source{Protocol: p, Secret: secret}, p != ""
	}})
	defer gw.Close()
	s := sim.New(sim.Options{TimeScale: 0.01})
	up := httptest.NewServer(s)
	defer func() { s.ClearLedger(); up.Close() }()
	client := func(id, protocol string) sources.Client {
		c, err := sources.New(protocol, sources.Config{BaseURL: up.URL, PollInterval: 20 * time.Millisecond,
			Callbacks: &sources.CallbackConfig{Source: id, Base: gw.URL, Secret: secret, Fallback: time.Second, Waits: hub}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, tc := range []struct {
		name, source, protocol, target string
		call                           sources.Call
	}{
		{"actor run", "a", sources.ProtocolActorRun, "dev_fusion~linkedin-profile-scraper",
			sources.Call{Target: "dev_fusion~linkedin-profile-scraper", Body: map[string]any{"profileUrls": []string{"https://www.linkedin.com/in/someone"}}}},
		{"triggered snapshot", "b", sources.ProtocolDatasetScrape, "gd_l1vikfnt1wgvvqz95w",
			sources.Call{Target: "gd_l1vikfnt1wgvvqz95w", Params: map[string]string{"type": "discover_new", "discover_by": "url"},
				Body: []map[string]string{{"url": "https://www.linkedin.com/company/acme"}}}},
	} {
		for _, drop := range []bool{false, true} {
			name := tc.name + " woken by its callback"
			if drop {
				name = tc.name + " with its callback lost"
			}
			t.Run(name, func(t *testing.T) {
				s.ClearLedger()
				if err := s.SetFault(sim.Fault{Target: tc.target, DurationS: 20, DropCallbacks: drop}); err != nil {
					t.Fatal(err)
				}
				c := tc.call
				c.RunID, c.Batch = "ext_"+tc.source+map[bool]string{false: "kept", true: "lost"}[drop], 0
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				start := time.Now()
				res, err := client(tc.source, tc.protocol).Do(ctx, c)
				if err != nil {
					t.Fatal(err)
				}
				took := time.Since(start)
				e := s.Ledger()[0]
				switch {
				case len(res.Items) == 0 || e.Status != "succeeded":
					t.Fatalf("%d items, job %+v", len(res.Items), e)
				case !drop && (e.Polls != 0 || took > 900*time.Millisecond):
					t.Fatalf("woken run polled %d times, took %v", e.Polls, took)
				case drop && (e.Polls == 0 || took < time.Second):
					t.Fatalf("lost callback: polled %d times after %v, want polls after the 1 s fallback", e.Polls, took)
				}
				if hub.Waiting() != 0 {
					t.Fatalf("%d waits left registered", hub.Waiting())
				}
			})
		}
	}
}
