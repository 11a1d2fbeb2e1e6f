package tests

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/sources"
)

// The upstreams call back (docs/upstreams.md, "Callbacks"): a gateway whose
// sources set callback_base starts its runs with the actor platform's
// ad-hoc webhooks and the dataset provider's notify, and waits for the
// callback instead of polling; a lost callback still completes by polling
// after callback_fallback.

const callbackSecret = "e2e-callback-secret-0123456789abcdef"

// callbackGateway is a gateway reachable by the simulator's callbacks at
// its own address, polling after fallback without one.
func callbackGateway(t *testing.T, s *sim, fallback string) *gateway {
	c := defaultConfig(t, s)
	c.SourceExtra = "callback_base http://127.0.0.1:" + itoa(c.Port) + "\n\t\t\tcallback_secret " + callbackSecret +
		"\n\t\t\tcallback_fallback " + fallback
	return startGateway(t, c)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// callbackJob waits until target's one ledger job has its callback
// delivered (or dropped), and returns it.
func callbackJob(t *testing.T, s *sim, target string) ledgerJob {
	t.Helper()
	end := time.Now().Add(5 * time.Second)
	for {
		j := onlyJob(t, s, target)
		if len(j.Callbacks) > 0 && (j.Callbacks[0].Dropped || j.Callbacks[0].Status != 0 || j.Callbacks[0].Error != "") {
			return j
		}
		if time.Now().After(end) {
			t.Fatalf("no callback of %s delivered: %+v", target, j)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCallbacksWakeRuns(t *testing.T) {
	s := startSim(t, "-time-scale", "0.01")
	// The fallback (30 s) is far beyond the runs (under 1 s): a call that
	// answers in time was woken by its callback, not by a poll.
	g := callbackGateway(t, s, "30s")
	key := g.account("acme", 100)

	var runURL string // the actor run's callback URL, for the replay below
	var runJob ledgerJob
	t.Run("an actor run completes by its webhook, no poll after its start", func(t *testing.T) {
		s.reset(t)
		s.clearLedger(t)
		s.fault(t, map[string]any{"target": proA, "duration_s": 90})
		start := time.Now()
		r := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": profileURL, "provider": "source_a/actor_1"})
		if r.Status != 200 || len(r.JSON["data"].([]any)) == 0 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if d := time.Since(start); d < 800*time.Millisecond || d > 5*time.Second {
			t.Errorf("answered in %v, want the 0.9 s run's end", d)
		}
		j := callbackJob(t, s, proA)
		if j.Params["webhooks"] == "" || j.Polls != 0 || j.Callbacks[0].Status != 200 || j.Callbacks[0].Event != "ACTOR.RUN.SUCCEEDED" {
			t.Fatalf("ledger %+v: want a run started with webhooks, called back 200, never polled", j)
		}
		if !strings.HasPrefix(j.Callbacks[0].URL, g.URL+sources.CallbackPrefix+"source_a/") {
			t.Errorf("callback URL %s is not the gateway's callback route", j.Callbacks[0].URL)
		}
		runURL, runJob = j.Callbacks[0].URL, j
	})

	t.Run("a discovery completes by its notify, no poll after its trigger", func(t *testing.T) {
		s.reset(t)
		s.clearLedger(t)
		s.fault(t, map[string]any{"target": postsB, "duration_s": 90})
		r := g.do("POST", postsService, key, map[string]any{"urls": []string{profileURL}, "limit": 3, "provider": "source_b/pro_net"})
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		j := callbackJob(t, s, postsB)
		if j.Params["notify"] == "" || j.Params["auth_header"] == "" || j.Polls != 0 || j.Callbacks[0].Status != 200 || j.Callbacks[0].Event != "ready" {
			t.Fatalf("ledger %+v: want a trigger with notify and auth_header, notified 200, never polled", j)
		}
	})

	t.Run("a forged and a replayed callback change nothing and are logged", func(t *testing.T) {
		if runURL == "" {
			t.Skip("no callback URL from the first subtest")
		}
		before := g.balance(key)
		payload := `{"userId":"u","createdAt":"2026-01-01T00:00:00Z","eventType":"ACTOR.RUN.FAILED","eventData":{"actorId":"` + proA +
			`","actorRunId":"` + runJob.ID + `"},"resource":{"id":"` + runJob.ID + `","status":"FAILED","defaultDatasetId":"` + runJob.DatasetID + `"}}`
		cut := strings.LastIndex(runURL, "/") + 1
		token := runURL[cut:]
		flip := "A"
		if token[0] == 'A' {
			flip = "B"
		}
		if r := send(t, "POST", runURL[:cut]+flip+token[1:], "", strings.NewReader(payload)); r.Status != http.StatusNotFound {
			t.Errorf("forged token: %d %s, want 404", r.Status, r.Body)
		}
		if r := send(t, "POST", runURL, "", strings.NewReader(payload)); r.Status != http.StatusOK {
			t.Errorf("replayed callback: %d %s, want 200 (the upstream must not retry)", r.Status, r.Body)
		}
		// A notify needs its auth_header besides the token.
		notify := g.URL + sources.CallbackPrefix + "source_b/run_x/0/" + sources.CallbackToken([]byte(callbackSecret), "source_b", "run_x", 0)
		if r := send(t, "POST", notify, "Bearer wrong", strings.NewReader(`{"snapshot_id":"s_x","status":"ready"}`)); r.Status != http.StatusUnauthorized {
			t.Errorf("notify with a wrong auth_header: %d %s, want 401", r.Status, r.Body)
		}
		if after := g.balance(key); after != before {
			t.Errorf("balance %v → %v after forged and replayed callbacks", before, after)
		}
		waitFor(t, "the refusals and the replay in the log", g.p, func() bool {
			out := g.p.out.String()
			return strings.Count(out, "callback refused; nothing changes") >= 2 && strings.Contains(out, "callback changes nothing") &&
				strings.Contains(out, "replayed callback changes nothing")
		})
		if strings.Contains(g.p.out.String(), token) {
			t.Error("a callback token was logged")
		}
	})

	t.Run("an async run completes by its webhook", func(t *testing.T) {
		s.reset(t)
		s.clearLedger(t)
		s.fault(t, map[string]any{"target": proA, "duration_s": 90})
		r := asyncDo(t, g, "POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": profileURL, "provider": "source_a/actor_1"}, preferAsync)
		if r.Status != 202 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		done := follow(t, g, key, r.JSON["id"].(string), 10*time.Second)
		if done.JSON["status"] != "completed" {
			t.Fatalf("async run: %s", done.Body)
		}
		if j := callbackJob(t, s, proA); j.Polls != 0 || j.Callbacks[0].Status != 200 {
			t.Fatalf("ledger %+v: want the async run woken by its webhook, never polled", j)
		}
	})

	t.Run("a parked async run is woken by its webhook, long before its first check", func(t *testing.T) {
		s.reset(t)
		s.clearLedger(t)
		// A 3 s job (scaled) on a service the cache does not serve: the
		// run parks once its actor run is recorded, its first check due
		// only after the 30 s fallback. Completing in under 10 s is the
		// webhook's wake (the store's due time, then the poller).
		s.fault(t, map[string]any{"target": postsTarget, "duration_s": 300})
		start := time.Now()
		r := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(3), preferAsync)
		if r.Status != 202 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		done := follow(t, g, key, r.JSON["id"].(string), 10*time.Second)
		if done.JSON["status"] != "completed" {
			t.Fatalf("async run: %s", done.Body)
		}
		j := callbackJob(t, s, postsTarget)
		if j.Callbacks[0].Status != 200 || j.Status != "succeeded" {
			t.Fatalf("ledger %+v: want the job's webhook answered 200", j)
		}
		// Woken, the poller checks the run once and its resume reads the
		// ended run once: two status reads at most, none while it ran.
		if j.Polls > 2 {
			t.Errorf("ledger %+v: %d polls, want at most 2 (the check and the resume after the wake)", j, j.Polls)
		}
		t.Logf("parked run completed %v after its submit, %d polls", time.Since(start).Round(time.Millisecond), j.Polls)
	})
}

func TestCallbacksLostStillComplete(t *testing.T) {
	s := startSim(t, "-time-scale", "0.01")
	g := callbackGateway(t, s, "1500ms")
	key := g.account("acme", 100)
	for _, tc := range []struct{ name, path, target string }{
		{"actor run", "/v1/extract/pro_net/profile.info", proA},
		{"discovery", postsService, postsB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.reset(t)
			s.clearLedger(t)
			s.fault(t, map[string]any{"target": tc.target, "duration_s": 30, "drop_callbacks": true})
			body := map[string]any{"url": profileURL, "provider": "source_a/actor_1"}
			if tc.target == postsB {
				body = map[string]any{"urls": []string{profileURL}, "limit": 3, "provider": "source_b/pro_net"}
			}
			start := time.Now()
			r := g.do("POST", tc.path, key, body)
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if d := time.Since(start); d < 1400*time.Millisecond {
				t.Errorf("answered in %v, before the fallback wait: not by polling", d)
			}
			j := callbackJob(t, s, tc.target)
			if !j.Callbacks[0].Dropped || j.Polls == 0 || j.Status != "succeeded" {
				t.Fatalf("ledger %+v: want the callback dropped and the job polled to its end", j)
			}
		})
	}
}
