package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	upsim "socialrouter/cmd/upstream-sim/sim"
)

// The upstream protocol tests run the real gateway against the simulator
// in scaled time (-time-scale 0.01: a 60 s job takes 0.6 s), with a soft
// timeout shorter than the jobs, so a job cut for its documented silence
// would show.

const (
	postsB       = "gd_lyy3tktm25m4avu764" // source_b/pro_net profile.posts (discovery)
	postsService = "/v1/extract/pro_net/profile.posts"
	deadProfile  = "https://www.linkedin.com/in/does-not-exist"
)

// ledgerJob is one entry of the simulator's cost ledger.
type ledgerJob = upsim.LedgerEntry

func (s *sim) ledger(t testing.TB) []ledgerJob {
	t.Helper()
	r, err := http.Get(s.A + "/_sim/ledger")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var out []ledgerJob
	if err := json.NewDecoder(r.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func (s *sim) clearLedger(t testing.TB) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, s.A+"/_sim/ledger", nil)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
}

// onlyJob returns the ledger's one job of target.
func onlyJob(t *testing.T, s *sim, target string) ledgerJob {
	t.Helper()
	var jobs []ledgerJob
	for _, j := range s.ledger(t) {
		if j.Target == target {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) != 1 {
		t.Fatalf("ledger has %d jobs of %s, want 1: %+v", len(jobs), target, s.ledger(t))
	}
	return jobs[0]
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func firstHandle(r *response) string {
	as := attempts(r)
	if len(as) == 0 {
		return ""
	}
	h, _ := as[len(as)-1]["handles"].([]any)
	if len(h) == 0 {
		return ""
	}
	s, _ := h[0].(string)
	return s
}

func TestUpstreamLongJobs(t *testing.T) {
	s := startSim(t, "-time-scale", "0.01")
	c := defaultConfig(t, s)
	c.SoftTimeout = "400ms"
	g := startGateway(t, c)
	key := g.account("acme", 100)

	t.Run("a 90 s actor run completes", func(t *testing.T) {
		s.reset(t)
		s.clearLedger(t)
		s.fault(t, map[string]any{"target": proA, "duration_s": 90})
		start := time.Now()
		r := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": profileURL, "provider": "source_a/actor_1"})
		if r.Status != 200 || len(r.JSON["data"].([]any)) == 0 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if d := time.Since(start); d < 800*time.Millisecond {
			t.Errorf("answered in %v: the 90 s (0.9 s scaled) run did not run", d)
		}
		j := onlyJob(t, s, proA)
		if j.Status != "succeeded" || j.Aborted || j.Params["maxItems"] == "" {
			t.Errorf("ledger %+v, want a succeeded run started with maxItems", j)
		}
		if h := firstHandle(r); !strings.HasPrefix(h, "run:"+j.ID+"/dataset:") {
			t.Errorf("attempt handle %q, want the run %s", h, j.ID)
		}
	})

	t.Run("a 70 s scrape goes through snapshot polling", func(t *testing.T) {
		s.reset(t)
		s.clearLedger(t)
		s.fault(t, map[string]any{"target": companyB, "duration_s": 70, "not_ready": "200", "building_downloads": 1})
		r := g.do("POST", "/v1/extract/pro_net/company.info", key, map[string]any{"url": companyURL})
		if r.Status != 200 || len(r.JSON["data"].([]any)) != 1 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		j := onlyJob(t, s, companyB)
		if j.Status != "succeeded" || firstHandle(r) != "snapshot:"+j.ID {
			t.Errorf("ledger %+v, handle %q; want the snapshot traced and done", j, firstHandle(r))
		}
	})

	for _, tc := range []struct{ name, path, target, provider string }{
		{"actor run", "/v1/extract/pro_net/profile.info", proA, "source_a/actor_1"},
		{"snapshot", "/v1/extract/pro_net/company.info", companyB, ""},
	} {
		t.Run("a client that disconnects leaves no "+tc.name+" running", func(t *testing.T) {
			s.reset(t)
			s.clearLedger(t)
			// /scrape turns into a snapshot after its minute (0.6 s); the
			// client goes away once the job runs upstream.
			s.fault(t, map[string]any{"target": tc.target, "keep_running": true})
			body := map[string]any{"url": companyURL}
			if tc.provider != "" {
				body = map[string]any{"url": profileURL, "provider": tc.provider}
			}
			b, _ := json.Marshal(body)
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+tc.path, bytes.NewReader(b))
			req.Header.Set("Authorization", "Bearer "+key)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
				t.Fatalf("the call answered %d before the client left", resp.StatusCode)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				j := onlyJob(t, s, tc.target)
				if !j.Running && j.Aborted {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("5 s after the client left, the upstream job is %+v", j)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}

	t.Run("source_b is asked for no more records than reserved, discovery included", func(t *testing.T) {
		s.reset(t)
		s.clearLedger(t)
		// limit 3 per input, 2 inputs: at most 3 per input and 6 in all.
		r := g.do("POST", postsService, key, map[string]any{"urls": []string{profileURL, "https://www.linkedin.com/in/someone"}, "limit": 3, "provider": "source_b/pro_net"})
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		j := onlyJob(t, s, postsB)
		if j.Params["type"] != "discover_new" || j.Params["limit_per_input"] != "3" || j.Params["limit_multiple_results"] != "6" || j.Items > 6 {
			t.Errorf("discovery %+v, want limit_per_input 3, limit_multiple_results 6, at most 6 items", j)
		}
		if calls := s.calls(t); len(calls) != 1 || calls[0].Query["type"] != "discover_new" {
			t.Errorf("calls %+v, want one /trigger", calls)
		}
		// A balance of 4 records caps the whole discovery at 4 (the router
		// may trim inputs to fit, then asks for their limit).
		s.clearLedger(t)
		poor := g.account("poor", 4*priceB+0.0001)
		r = g.do("POST", postsService, poor, map[string]any{"urls": []string{profileURL, "https://www.linkedin.com/in/someone"}, "limit": 3, "provider": "source_b/pro_net"})
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if j := onlyJob(t, s, postsB); atoi(j.Params["limit_multiple_results"]) < 1 || atoi(j.Params["limit_multiple_results"]) > 4 || j.Items > 4 {
			t.Errorf("discovery on a 4-record balance %+v, want limit_multiple_results at most 4", j)
		}
	})

	t.Run("Retry-After: 1 is retried on the same offer", func(t *testing.T) {
		s.reset(t)
		s.fault(t, map[string]any{"target": proB, "status": 429, "retry_after": 1, "times": 1})
		start := time.Now()
		r := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": profileURL})
		if r.Status != 200 || r.JSON["served_by"] != "source_b/pro_net" || len(attempts(r)) != 1 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if d := time.Since(start); d < time.Second {
			t.Errorf("retried after %v, want the upstream's Retry-After of 1 s", d)
		}
		if n := len(s.calls(t)); n != 2 {
			t.Errorf("%d upstream requests, want the 429 and its retry", n)
		}
	})

	t.Run("validation_errors is a 400 without failover", func(t *testing.T) {
		s.reset(t)
		s.fault(t, map[string]any{"target": proB, "validation_errors": []string{"url: not a profile page"}})
		before := g.balance(key)
		r := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": profileURL})
		if r.Status != 400 || r.errCode() != "upstream_rejected_input" || len(attempts(r)) != 1 || !strings.Contains(string(r.Body), "not a profile page") {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		for _, c := range s.calls(t) {
			if c.Target == proA {
				t.Errorf("failed over to source_a after a validation error")
			}
		}
		if g.balance(key) != before {
			t.Error("a rejected input was charged")
		}
	})

	t.Run("dead pages charge nothing and leave the breaker closed", func(t *testing.T) {
		s.reset(t)
		before := g.balance(key)
		for range 7 { // more than the breaker's 5 failures
			r := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": deadProfile})
			if r.Status != 200 || len(r.JSON["data"].([]any)) != 0 || num(r.JSON["credits_used"]) != 0 || r.JSON["served_by"] != "source_b/pro_net" {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		}
		if g.balance(key) != before {
			t.Errorf("balance %v, was %v: dead pages were charged", g.balance(key), before)
		}
		r := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": profileURL})
		if r.Status != 200 || r.JSON["served_by"] != "source_b/pro_net" || len(attempts(r)) != 1 {
			t.Errorf("after dead pages: %d %s, want source_b with its breaker closed", r.Status, r.Body)
		}
	})
}
