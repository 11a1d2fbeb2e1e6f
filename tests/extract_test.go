package tests

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

type catalogueEntry struct {
	Platform   string `json:"platform"`
	Service    string `json:"service"`
	InputField string `json:"input_field"`
	Accepts    []struct {
		Example string `json:"example"`
	} `json:"accepts"`
	Offers []struct {
		Offer          string  `json:"offer"`
		PricePerRecord float64 `json:"price_per_record"`
	} `json:"offers"`
}

func catalogue(t *testing.T, g *gateway) []catalogueEntry {
	t.Helper()
	r := g.do("GET", "/v1/services", "", nil)
	var c struct{ Data []catalogueEntry }
	if err := json.Unmarshal(r.Body, &c); err != nil {
		t.Fatal(err)
	}
	return c.Data
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func num(v any) float64 { f, _ := v.(float64); return f }

// TestExtractEveryService calls every callable service with its first
// example and checks the Run, the charge and the balance.
func TestExtractEveryService(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("acme", 100)
	for _, e := range catalogue(t, g) {
		t.Run(e.Platform+"/"+e.Service, func(t *testing.T) {
			before := g.balance(key)
			field := map[string]string{"urls": "url", "queries": "query"}[e.InputField]
			r := g.do("POST", "/v1/extract/"+e.Platform+"/"+e.Service, key, map[string]any{field: e.Accepts[0].Example})
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if r.JSON["status"] != "completed" || r.JSON["platform"] != e.Platform || r.JSON["service"] != e.Service {
				t.Errorf("run: %s", r.Body)
			}
			if r.JSON["served_by"] != e.Offers[0].Offer {
				t.Errorf("served_by %v, want %s", r.JSON["served_by"], e.Offers[0].Offer)
			}
			data, _ := r.JSON["data"].([]any)
			if len(data) == 0 {
				t.Fatalf("no records: %s", r.Body)
			}
			for _, d := range data {
				rec := d.(map[string]any)
				if rec["source"] != e.Platform || rec["extracted_at"] == nil {
					t.Errorf("record lacks source/extracted_at: %v", rec)
				}
			}
			want := float64(len(data)) * e.Offers[0].PricePerRecord
			if !near(num(r.JSON["credits_used"]), want) {
				t.Errorf("credits_used %v, want %v", r.JSON["credits_used"], want)
			}
			if after := g.balance(key); !near(before-after, want) {
				t.Errorf("balance moved by %v, want %v", before-after, want)
			}
			p := r.JSON["pagination"].(map[string]any)
			if int(num(p["returned"])) != len(data) || num(p["total"]) < num(p["returned"]) {
				t.Errorf("pagination %v", p)
			}
			id, _ := r.JSON["id"].(string)
			got := g.do("GET", "/v1/extractions/"+id, key, nil)
			if got.Status != 200 || got.JSON["id"] != id || len(got.JSON["data"].([]any)) != len(data) {
				t.Errorf("GET run: %d %s", got.Status, got.Body)
			}
		})
	}
}

// TestBadInputChargesNothing: every refused body makes no upstream call
// and leaves the balance as it was.
func TestBadInputChargesNothing(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("acme", 10)
	big := `{"urls": ["` + strings.Repeat("a", 1<<20) + `"]}`
	tests := []struct {
		name, path string
		body       any
		status     int
		code       string
	}{
		{"malformed url", "/v1/extract/pro_net/company.info", map[string]any{"urls": []string{"https://www.linkedin.com/in/someone"}}, 400, "invalid_input_format"},
		{"bare word", "/v1/extract/pro_net/company.info", map[string]any{"url": "kraft"}, 400, "invalid_input_format"},
		{"unknown option", "/v1/extract/pro_net/profile.info", map[string]any{"url": "https://www.linkedin.com/in/someone", "options": map[string]any{"nope": true}}, 400, "invalid_option"},
		{"wrong option type", "/v1/extract/pro_net/profile.info", map[string]any{"url": "https://www.linkedin.com/in/someone", "options": map[string]any{"includeEmail": "yes"}}, 400, "invalid_option"},
		{"option on a service with none", "/v1/extract/pro_net/company.info", map[string]any{"url": "https://www.linkedin.com/company/acme", "options": map[string]any{"x": 1}}, 400, "invalid_option"},
		{"out of enum", "/v1/extract/forum_net/subreddit.posts", map[string]any{"url": "https://www.reddit.com/r/golang", "options": map[string]any{"sort": "best"}}, 400, "invalid_option"},
		{"bad date", "/v1/extract/forum_net/subreddit.posts", map[string]any{"url": "https://www.reddit.com/r/golang", "options": map[string]any{"postedAfter": "21/11/2026"}}, 400, "invalid_option"},
		{"unknown field", "/v1/extract/pro_net/company.info", map[string]any{"url": "https://www.linkedin.com/company/acme", "type": "company"}, 400, "unknown_field"},
		{"wrong input field", "/v1/extract/pro_net/company.info", map[string]any{"queries": []string{"acme"}}, 400, "wrong_input_field"},
		{"url to query service", "/v1/extract/maps/place.search", map[string]any{"url": "https://www.google.com/maps/place/x"}, 400, "wrong_input_field"},
		{"limit 0", "/v1/extract/pro_net/company.info", map[string]any{"url": "https://www.linkedin.com/company/acme", "limit": 0}, 400, "invalid_limit"},
		{"limit 251", "/v1/extract/pro_net/company.info", map[string]any{"url": "https://www.linkedin.com/company/acme", "limit": 251}, 400, "invalid_limit"},
		{"limit not integer", "/v1/extract/pro_net/company.info", map[string]any{"url": "https://www.linkedin.com/company/acme", "limit": 1.5}, 400, "invalid_limit"},
		{"unknown offer", "/v1/extract/pro_net/company.info", map[string]any{"url": "https://www.linkedin.com/company/acme", "provider": "source_a/actor_1"}, 400, "unknown_offer"},
		{"empty urls", "/v1/extract/pro_net/company.info", map[string]any{"urls": []string{}}, 400, "missing_input"},
		{"no input", "/v1/extract/pro_net/company.info", map[string]any{}, 400, "missing_input"},
		{"not json", "/v1/extract/pro_net/company.info", "{nope", 400, "invalid_json"},
		{"array body", "/v1/extract/pro_net/company.info", `["x"]`, 400, "invalid_json"},
		{"too large", "/v1/extract/pro_net/company.info", big, 413, "request_too_large"},
		{"query too long", "/v1/extract/pro_net/post.search", map[string]any{"query": strings.Repeat("q", 86)}, 400, "invalid_input_format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.reset(t)
			before := g.balance(key)
			r := g.do("POST", tt.path, key, tt.body)
			if r.Status != tt.status || r.errCode() != tt.code {
				t.Fatalf("got %d %s, want %d %s", r.Status, tail(string(r.Body), 3), tt.status, tt.code)
			}
			if r.errField("type") != "validation" {
				t.Errorf("type %v", r.errField("type"))
			}
			if msg, _ := r.errField("message").(string); len(msg) < 20 {
				t.Errorf("message does not say how to fix it: %q", msg)
			}
			if n := len(s.calls(t)); n != 0 {
				t.Errorf("%d upstream calls for a refused request", n)
			}
			if after := g.balance(key); after != before {
				t.Errorf("balance changed %v → %v", before, after)
			}
		})
	}
	r := g.do("POST", "/v1/extract/pro_net/company.info", key, map[string]any{"url": "https://www.linkedin.com/company/acme", "provider": "source_a/actor_1"})
	if offers, _ := r.errField("available_offers").([]any); len(offers) != 1 || offers[0] != "source_b/pro_net" {
		t.Errorf("available_offers: %s", r.Body)
	}
	// A scheme-less URL is normalized, not refused.
	r = g.do("POST", "/v1/extract/pro_net/company.info", key, map[string]any{"url": "www.linkedin.com/company/kraft-heinz-company"})
	if r.Status != 200 || r.JSON["url"] != "https://www.linkedin.com/company/kraft-heinz-company" {
		t.Errorf("scheme-less: %d %s", r.Status, r.Body)
	}
}

func TestAuthentication(t *testing.T) {
	g := startGateway(t, defaultConfig(t, nil))
	key := g.account("acme", 1)
	tests := []struct {
		name, header, code string
	}{
		{"missing", "", "missing_api_key"},
		{"malformed", "Basic abc", "invalid_api_key"},
		{"wrong prefix", "Bearer xyz_live_abc", "invalid_api_key"},
		{"unknown", "Bearer sdr_live_0000000000000000000000000000000000000000", "invalid_api_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := doRaw(t, "GET", g.URL+"/v1/account/balance", tt.header)
			if r.Status != 401 || r.errCode() != tt.code || r.errField("type") != "authentication" ||
				!strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%d %s %v", r.Status, r.Body, r.Header)
			}
		})
	}
	if r := g.do("GET", "/v1/account/balance", key, nil); r.Status != 200 || r.JSON["currency"] != "USD" || num(r.JSON["balance"]) != 1 {
		t.Fatalf("balance: %d %s", r.Status, r.Body)
	}
	st, b := g.admin("GET", "/sdr/accounts/acme", nil)
	var acct struct {
		Keys []struct{ ID string } `json:"keys"`
	}
	_ = json.Unmarshal(b, &acct)
	if st != 200 || len(acct.Keys) != 1 || strings.Contains(string(b), key) {
		t.Fatalf("account view: %d %s", st, b)
	}
	if st, b := g.admin("DELETE", "/sdr/keys/"+acct.Keys[0].ID, nil); st != 204 {
		t.Fatalf("revoke: %d %s", st, b)
	}
	if r := g.do("GET", "/v1/account/balance", key, nil); r.Status != 401 || r.errCode() != "revoked_api_key" {
		t.Errorf("after revoke: %d %s", r.Status, r.Body)
	}
}

func doRaw(t *testing.T, method, url, auth string) *response {
	t.Helper()
	return doURLAuth(t, method, url, auth)
}

func TestUsageAndRunScope(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("acme", 10)
	other := g.account("other", 10)
	for _, d := range []string{"0", "366", "abc", "-1", "1.5"} {
		if r := g.do("GET", "/v1/account/usage?days="+d, key, nil); r.Status != 400 || r.errCode() != "invalid_days" {
			t.Errorf("days=%s: %d %s", d, r.Status, r.Body)
		}
	}
	r := g.do("POST", "/v1/extract/pro_net/company.info", key, map[string]any{"url": "https://www.linkedin.com/company/kraft-heinz-company"})
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	id := r.JSON["id"].(string)
	if r := g.do("GET", "/v1/extractions/"+id, other, nil); r.Status != 404 || r.errCode() != "not_found" || r.errField("type") != "not_found" {
		t.Errorf("other account's run: %d %s", r.Status, r.Body)
	}
	if r := g.do("GET", "/v1/extractions/ext_nope", key, nil); r.Status != 404 || r.errCode() != "not_found" {
		t.Errorf("unknown run: %d %s", r.Status, r.Body)
	}
	u := g.do("GET", "/v1/account/usage", key, nil)
	if u.Status != 200 || u.JSON["period"] != "30d" || num(u.JSON["total_requests"]) != 1 {
		t.Fatalf("usage: %s", u.Body)
	}
	bp := u.JSON["by_provider"].(map[string]any)["source_b/pro_net"].(map[string]any)
	if !near(num(bp["credits"]), num(r.JSON["credits_used"])) || num(bp["records"]) != float64(len(r.JSON["data"].([]any))) {
		t.Errorf("by_provider: %s", u.Body)
	}
	if _, ok := u.JSON["by_platform"].(map[string]any)["pro_net"]; !ok {
		t.Errorf("by_platform: %s", u.Body)
	}
	if u := g.do("GET", "/v1/account/usage?days=365", key, nil); u.JSON["period"] != "365d" {
		t.Errorf("period: %s", u.Body)
	}
	_ = fmt.Sprint
}
