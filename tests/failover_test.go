package tests

import (
	"encoding/json"
	"strings"
	"testing"
)

const (
	profileURL    = "https://www.linkedin.com/in/rbranson"
	companyURL    = "https://www.linkedin.com/company/kraft-heinz-company"
	proB          = "gd_l1viktl72bvl7bjuj0"               // source_b/pro_net profile.info
	proA          = "dev_fusion~linkedin-profile-scraper" // source_a/actor_1 profile.info
	companyB      = "gd_l1vikfnt1wgvvqz95w"
	eventB        = "gd_m14sd0to1jz48ppm51"
	priceB        = 0.001725
	priceActor1PI = 0.0069
)

func attempts(r *response) []map[string]any {
	var out []map[string]any
	raw, _ := r.JSON["attempts"].([]any)
	if raw == nil {
		raw, _ = r.errField("attempts").([]any)
	}
	for _, a := range raw {
		out = append(out, a.(map[string]any))
	}
	return out
}

// TestFailoverAndFailures drives the router through the simulator's
// faults against the real binary.
func TestFailoverAndFailures(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("acme", 50)

	t.Run("failover from a failing head", func(t *testing.T) {
		s.reset(t)
		s.fault(t, map[string]any{"target": proB, "status": 503})
		r := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": profileURL})
		if r.Status != 200 || r.JSON["served_by"] != "source_a/actor_1" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		n := len(r.JSON["data"].([]any))
		if !near(num(r.JSON["credits_used"]), float64(n)*priceActor1PI) {
			t.Errorf("credits_used %v for %d records at the second offer's price", r.JSON["credits_used"], n)
		}
		at := attempts(r)
		if len(at) != 2 || at[0]["offer"] != "source_b/pro_net" || at[0]["outcome"] != "upstream_5xx" || at[1]["outcome"] != "ok" {
			t.Errorf("attempts %v", at)
		}
		u := g.do("GET", "/v1/account/usage?days=1", key, nil)
		if _, ok := u.JSON["by_provider"].(map[string]any)["source_a/actor_1"]; !ok {
			t.Errorf("usage by_provider not keyed by the serving offer: %s", u.Body)
		}
	})

	t.Run("pinned offer fails without failover", func(t *testing.T) {
		s.reset(t)
		s.fault(t, map[string]any{"target": proB, "status": 503})
		before := g.balance(key)
		r := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": profileURL, "provider": "source_b/pro_net"})
		if r.Status != 502 || r.errCode() != "provider_error" || r.errField("type") != "provider" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if len(attempts(r)) != 1 {
			t.Errorf("attempts %v", attempts(r))
		}
		for _, c := range s.calls(t) {
			if c.Target == proA {
				t.Error("pinned call failed over")
			}
		}
		id, _ := r.errField("run_id").(string)
		run := g.do("GET", "/v1/extractions/"+id, key, nil)
		if run.Status != 200 || run.JSON["status"] != "failed" || num(run.JSON["credits_used"]) != 0 || len(run.JSON["data"].([]any)) != 0 {
			t.Errorf("stored failed run: %d %s", run.Status, run.Body)
		}
		if g.balance(key) != before {
			t.Error("a failed run was charged")
		}
	})

	t.Run("every offer fails", func(t *testing.T) {
		s.reset(t)
		s.fault(t, map[string]any{"target": proB, "status": 500})
		s.fault(t, map[string]any{"target": proA, "status": 502})
		r := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": profileURL})
		if r.Status != 502 || r.errCode() != "provider_error" || len(attempts(r)) != 2 || r.errField("run_id") == nil {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})

	t.Run("every offer rate limited", func(t *testing.T) {
		s.reset(t)
		s.fault(t, map[string]any{"target": proB, "status": 429, "retry_after": 7})
		s.fault(t, map[string]any{"target": proA, "status": 429, "retry_after": 3})
		r := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": profileURL})
		if r.Status != 429 || r.errCode() != "upstream_rate_limited" || r.Header.Get("Retry-After") != "7" {
			t.Fatalf("%d %v %s", r.Status, r.Header.Get("Retry-After"), r.Body)
		}
	})

	t.Run("stalled upstream hits the soft timeout", func(t *testing.T) {
		s.reset(t)
		s.fault(t, map[string]any{"target": companyB, "stall_ms": 6000, "times": 1})
		r := g.do("POST", "/v1/extract/pro_net/company.info", key, map[string]any{"url": companyURL})
		if r.Status != 504 || r.errCode() != "request_soft_timeout" || r.errField("type") != "timeout" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})

	t.Run("202 then poll", func(t *testing.T) {
		s.reset(t)
		s.fault(t, map[string]any{"target": companyB, "async": true, "polls": 2})
		r := g.do("POST", "/v1/extract/pro_net/company.info", key, map[string]any{"url": companyURL})
		if r.Status != 200 || len(r.JSON["data"].([]any)) == 0 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if h, _ := attempts(r)[0]["handles"].([]any); len(h) == 0 {
			t.Errorf("snapshot id not traced: %v", attempts(r))
		}
	})

	t.Run("error records are dropped and not charged", func(t *testing.T) {
		s.reset(t)
		s.fault(t, map[string]any{"target": eventB, "error_records": true})
		r := g.do("POST", "/v1/extract/social_net/event.info", key, map[string]any{"urls": []string{
			"https://www.facebook.com/events/1", "https://www.facebook.com/events/2"}})
		if r.Status != 200 || len(r.JSON["data"].([]any)) != 1 || !near(num(r.JSON["credits_used"]), priceB) {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})

	t.Run("every item a dead page", func(t *testing.T) {
		// The fixture's error row says dead_page: the page is gone, an
		// answer without records (no charge, no failover), not a failure.
		s.reset(t)
		s.fault(t, map[string]any{"target": eventB, "all_errors": true})
		r := g.do("POST", "/v1/extract/social_net/event.info", key, map[string]any{"url": "https://www.facebook.com/events/1"})
		if r.Status != 200 || attempts(r)[0]["outcome"] != "ok" || len(r.JSON["data"].([]any)) != 0 || num(r.JSON["credits_used"]) != 0 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
}

// TestBilling: 402 when one record is not affordable; data truncated,
// never an overdraw.
func TestBilling(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	poor := g.account("poor", 0.001)
	r := g.do("POST", "/v1/extract/pro_net/company.info", poor, map[string]any{"url": companyURL})
	if r.Status != 402 || r.errCode() != "insufficient_credits" || r.errField("type") != "billing" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if len(s.calls(t)) != 0 {
		t.Error("upstream called without credits")
	}
	// Exactly two records' worth: of three inputs the upstream is asked
	// for two (what the hold covers), both served and charged.
	two := g.account("two", 2*priceB)
	s.fault(t, map[string]any{"target": companyB, "items": 1})
	r = g.do("POST", "/v1/extract/pro_net/company.info", two, map[string]any{"urls": []string{
		companyURL, "https://www.linkedin.com/company/a", "https://www.linkedin.com/company/b"}})
	if r.Status != 200 || len(r.JSON["data"].([]any)) != 2 || !near(num(r.JSON["credits_used"]), 2*priceB) {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if b := g.balance(two); b != 0 {
		t.Errorf("balance %v after truncation, want 0", b)
	}
	p := r.JSON["pagination"].(map[string]any)
	if num(p["total"]) != 2 || num(p["returned"]) != 2 || r.JSON["capped_by"] != "balance" {
		t.Errorf("pagination %v, capped_by %v", p, r.JSON["capped_by"])
	}
	asked := 0
	for _, c := range s.calls(t) {
		var body struct{ Input []json.RawMessage }
		_ = json.Unmarshal(c.Body, &body)
		asked += len(body.Input)
	}
	if asked != 2 {
		t.Errorf("upstream asked for %d inputs, 2 were paid for", asked)
	}
}

// TestSourceStatusOverride: an operator marks a source down; the
// providers view shows it and routing skips its offers.
func TestSourceStatusOverride(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("acme", 10)
	if st, b := g.admin("PUT", "/sdr/sources/source_b/status", map[string]any{"status": "down"}); st != 200 {
		t.Fatalf("override: %d %s", st, b)
	}
	if r := g.do("GET", "/v1/providers/source_b", "", nil); r.JSON["status"] != "down" {
		t.Errorf("status after override: %s", r.Body)
	}
	r := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": profileURL})
	if r.Status != 200 || r.JSON["served_by"] != "source_a/actor_1" {
		t.Errorf("routing with source_b down: %d %s", r.Status, r.Body)
	}
	if st, _ := g.admin("PUT", "/sdr/sources/source_b/status", map[string]any{"status": nil}); st != 200 {
		t.Fatal("clearing the override")
	}
	if r := g.do("GET", "/v1/providers", "", nil); !strings.Contains(string(r.Body), `"status":"active"`) {
		t.Errorf("after clearing: %s", r.Body)
	}
	if st, _ := g.admin("PUT", "/sdr/sources/source_z/status", map[string]any{"status": "down"}); st != 404 {
		t.Errorf("unknown source: %d", st)
	}
	if st, _ := g.admin("PUT", "/sdr/sources/source_b/status", map[string]any{"status": "sleepy"}); st != 400 {
		t.Errorf("bad status: %d", st)
	}
}
