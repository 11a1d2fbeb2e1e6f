package tests

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// profileURLs returns n distinct profile URLs.
func profileURLs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("https://www.linkedin.com/in/user-%d", i)
	}
	return out
}

// askedOf sums what the simulator's logged calls to target asked for:
// inputs of dataset scrapes, maxItems of actor runs (or their inputs).
func askedOf(t *testing.T, s *sim, target string) (calls, asked int) {
	t.Helper()
	for _, c := range s.calls(t) {
		if c.Target != target {
			continue
		}
		calls++
		if mi := c.Query["maxItems"]; mi != "" {
			var n int
			fmt.Sscan(mi, &n)
			asked += n
			continue
		}
		var body struct {
			Input []json.RawMessage `json:"input"`
		}
		_ = json.Unmarshal(c.Body, &body)
		asked += len(body.Input)
	}
	return calls, asked
}

// moneyGateway starts a gateway that lets 64 runs of one account fly at
// once, so money, not the concurrency cap, decides.
func moneyGateway(t *testing.T, s *sim) *gateway {
	c := defaultConfig(t, s)
	c.AppExtra = "max_concurrent_runs 64"
	return startGateway(t, c)
}

// concurrently sends n extract calls at once and returns the answers.
func concurrently(g *gateway, n int, key string, body any) []*response {
	return together(n, func(int) *response { return g.do("POST", "/v1/extract/pro_net/profile.info", key, body) })
}

// TestMoneyHalfBalance is the first case: 64 concurrent calls on
// an account paying for about half of them. Every 200 serves and charges
// its record (no completed empty run because of money), the others are
// 402 before any upstream call, and the balance drops by exactly the sum
// of credits_used.
func TestMoneyHalfBalance(t *testing.T) {
	s := startSim(t)
	g := moneyGateway(t, s)
	start := 32*priceB + 0.0005
	key := g.account("acme", start)
	s.fault(t, map[string]any{"target": proB, "latency_ms": 200})
	out := concurrently(g, 64, key, map[string]any{"url": profileURL})
	served, refused := 0, 0
	sum := 0.0
	for _, r := range out {
		switch r.Status {
		case 200:
			data, _ := r.JSON["data"].([]any)
			if r.JSON["status"] != "completed" || len(data) != 1 || !near(num(r.JSON["credits_used"]), priceB) {
				t.Errorf("a 200 that did not serve its record: %s", r.Body)
			}
			served++
			sum += num(r.JSON["credits_used"])
		case 402:
			if r.errCode() != "insufficient_credits" {
				t.Errorf("402 with code %s", r.errCode())
			}
			refused++
		default:
			t.Errorf("unexpected answer %d %s", r.Status, r.Body)
		}
	}
	end := g.balance(key)
	if end < 0 || math.Abs(start-end-sum) > 1e-9 {
		t.Errorf("balance %v → %v, Σ credits_used %v", start, end, sum)
	}
	if served != 32 || refused != 32 {
		t.Errorf("%d served, %d refused; want the 32 the balance pays for and 32 refused", served, refused)
	}
	if calls, asked := askedOf(t, s, proB); asked != served {
		t.Errorf("upstream asked for %d records in %d calls for %d served", asked, calls, served)
	}
	t.Logf("64 calls: %d served, %d refused 402; balance %.6f → %.6f", served, refused, start, end)
}

// TestMoneyCapReachesUpstream is the second case: 1,000 URLs on a balance
// of one record, and limit 1 with 1,000 URLs on a funded account: the
// upstream is asked for no more records than were reserved.
func TestMoneyCapReachesUpstream(t *testing.T) {
	s := startSim(t)
	g := moneyGateway(t, s)
	urls := profileURLs(1000)
	tests := []struct {
		name     string
		balance  float64
		limit    int
		want     int
		cappedBy any
	}{
		{"one record's balance", priceB, 0, 1, "balance"},
		{"limit 1 on a funded account", 50, 1, 1, nil},
		{"three records' balance, limit 10", 3*priceB + 0.0001, 10, 3, "balance"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.reset(t)
			key := g.account(fmt.Sprintf("acct%d", i), tt.balance)
			body := map[string]any{"urls": urls}
			if tt.limit > 0 {
				body["limit"] = tt.limit
			}
			r := g.do("POST", "/v1/extract/pro_net/profile.info", key, body)
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			data, _ := r.JSON["data"].([]any)
			if len(data) != tt.want || r.JSON["capped_by"] != tt.cappedBy {
				t.Errorf("%d records, capped_by %v; want %d, %v", len(data), r.JSON["capped_by"], tt.want, tt.cappedBy)
			}
			calls, asked := askedOf(t, s, proB)
			if asked > tt.want {
				t.Errorf("upstream asked for %d records in %d calls; %d were reserved", asked, calls, tt.want)
			}
			if !near(num(r.JSON["credits_used"]), float64(len(data))*priceB) {
				t.Errorf("credits_used %v for %d records", r.JSON["credits_used"], len(data))
			}
		})
	}
	t.Run("failover asks the next offer for its own cover only", func(t *testing.T) {
		s.reset(t)
		s.fault(t, map[string]any{"target": proB, "status": 503})
		// Pays 4 records at source_b, 1 at source_a (0.0069).
		key := g.account("failover", 4*priceB+0.0001)
		r := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"urls": urls[:10], "limit": 10})
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		// source_b's 503s are retried on the offer (no work was started):
		// each request asks for the same 4 records.
		callsB, askedB := askedOf(t, s, proB)
		callsA, askedA := askedOf(t, s, proA)
		if callsB == 0 || askedB > 4*callsB || askedA > 1 || callsA != 1 {
			t.Errorf("asked source_b for %d in %d calls (4 reserved), source_a for %d in %d calls (1 reserved)", askedB, callsB, askedA, callsA)
		}
		if data, _ := r.JSON["data"].([]any); len(data) != 1 || r.JSON["capped_by"] != "balance" {
			t.Errorf("served %d records, capped_by %v: %s", len(data), r.JSON["capped_by"], r.Body)
		}
	})
}

// TestMoneyKeyLimitConcurrent is the third case: a key limited to 0.01
// credits a day under 16 concurrent calls with 200 ms upstream latency
// spends at most its limit, exactly: 5 records at 0.001725, 11 refusals.
func TestMoneyKeyLimitConcurrent(t *testing.T) {
	s := startSim(t)
	g := moneyGateway(t, s)
	g.account("acme", 50)
	key := g.key("acme", map[string]any{"period": "day", "credits": 0.01})
	s.fault(t, map[string]any{"target": proB, "latency_ms": 200})
	out := concurrently(g, 16, key, map[string]any{"url": profileURL})
	served, limited := 0, 0
	spent := 0.0
	for _, r := range out {
		switch {
		case r.Status == 200:
			served++
			spent += num(r.JSON["credits_used"])
		case r.Status == 429 && r.errCode() == "credit_limit_exceeded":
			limited++
			if r.Header.Get("Retry-After") == "" || r.errField("resets_at") == nil {
				t.Errorf("429 without Retry-After or resets_at: %s", r.Body)
			}
		default:
			t.Errorf("unexpected answer %d %s", r.Status, r.Body)
		}
	}
	if spent > 0.01+1e-12 || served != 5 || limited != 11 {
		t.Errorf("spent %v of 0.01 in %d calls, %d limited; want 5 calls and 11 limited", spent, served, limited)
	}
	u := g.do("GET", "/v1/account/usage?days=1", key, nil)
	if total := num(u.JSON["total_credits"]); total > 0.01+1e-12 || !near(total, spent) {
		t.Errorf("usage total %v, answered %v, limit 0.01", total, spent)
	}
}

// TestFoldedPathsGetJSON404: paths Caddy's matchers fold onto /v1 get the
// JSON 404, never an empty 200.
func TestFoldedPathsGetJSON404(t *testing.T) {
	g := startGateway(t, defaultConfig(t, nil))
	for _, p := range []string{"//v1/services", "/./v1/services", "/V1/services", "/V1"} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		// Written by hand: an HTTP client would clean the path.
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", p)
		r, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("GET %s: %v", p, err)
		}
		var body struct {
			Error struct{ Code string } `json:"error"`
		}
		err = json.NewDecoder(r.Body).Decode(&body)
		r.Body.Close()
		conn.Close()
		if r.StatusCode != 404 || err != nil || body.Error.Code != "not_found" {
			t.Errorf("GET %s: %d, code %q (%v); want the JSON 404", p, r.StatusCode, body.Error.Code, err)
		}
	}
}

// TestSlowBodyIsCut: a body trickled one byte at a time is cut at the
// server's read_body timeout instead of holding the connection open.
func TestSlowBodyIsCut(t *testing.T) {
	c := defaultConfig(t, nil)
	c.Global = "servers {\n\t\ttimeouts {\n\t\t\tread_header 1s\n\t\t\tread_body 1s\n\t\t\tidle 5s\n\t\t}\n\t}"
	g := startGateway(t, c)
	conn, err := net.Dial("tcp", strings.TrimPrefix(g.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /v1/extract/pro_net/profile.info HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
	cut := false
	for i := 0; i < 40 && !cut; i++ {
		if _, err := conn.Write([]byte(" ")); err != nil {
			cut = true
			break
		}
		conn.SetReadDeadline(time.Now().Add(250 * time.Millisecond))
		buf := make([]byte, 512)
		if n, err := conn.Read(buf); n > 0 || (err != nil && !isTimeout(err)) {
			cut = true
		}
	}
	if !cut || time.Since(start) > 6*time.Second {
		t.Errorf("a trickled body was held %s (cut: %v), want it cut near the 1 s read_body timeout", time.Since(start), cut)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestTokenNotInConfig: a token written as a runtime placeholder is
// resolved at start, and GET /config/ shows the placeholder, never the
// secret.
func TestTokenNotInConfig(t *testing.T) {
	s := startSim(t)
	c := defaultConfig(t, s)
	c.AppExtra = fmt.Sprintf("source source_a {\n\t\t\tbase_url %s\n\t\t\ttoken {env.SDR_TEST_SOURCE_TOKEN}\n\t\t}", s.A)
	g := startGateway(t, c, "SDR_TEST_SOURCE_TOKEN=sekrit-3f9a")
	st, body := g.admin("GET", "/config/", nil)
	if st != 200 || strings.Contains(string(body), "sekrit-3f9a") || !strings.Contains(string(body), "{env.SDR_TEST_SOURCE_TOKEN}") {
		t.Errorf("GET /config/: %d, secret shown or placeholder missing: %s", st, body)
	}
	key := g.account("acme", 1)
	s.fault(t, map[string]any{"target": proB, "status": 503})
	if r := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": profileURL}); r.Status != 200 || r.JSON["served_by"] != "source_a/actor_1" {
		t.Errorf("a call through source_a with the resolved token: %d %s", r.Status, r.Body)
	}
}

// TestMoneySearchPages: no upstream takes an offset, so a later search
// page asks the upstream for the earlier pages again (the window). The
// hold covers the whole window before the upstream is called; only the
// page's records are charged. Money for the earlier pages alone is 402
// with no upstream call.
func TestMoneySearchPages(t *testing.T) {
	const provider, target, price = "source_a/maps/place.search", "compass~crawler-google-places", 0.00552
	s := startSim(t)
	g := moneyGateway(t, s)
	s.fault(t, map[string]any{"target": target, "items": 9})
	query := []string{"coffee in Lisbon"}
	first := g.do("POST", "/v1/search", g.account("funded", 50), map[string]any{"queries": query, "provider": provider, "limit": 3})
	cursor, _ := first.JSON["pagination"].(map[string]any)["next_cursor"].(string)
	if first.Status != 200 || cursor == "" {
		t.Fatalf("page 1: %d %s", first.Status, first.Body)
	}
	tests := []struct {
		name       string
		balance    float64
		wantStatus int
		wantData   int // records of page 2 served and charged
		wantAsked  int // at most, from the upstream (the window the hold covered)
		cappedBy   any
	}{
		{"funded: window of 6 held, 3 charged", 50, 200, 3, 6, nil},
		{"money for 5: window cut to 5, 2 served", 5*price + 0.0001, 200, 2, 5, "balance"},
		{"money for the earlier pages only", 3*price + 0.0001, 402, 0, 0, nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.reset(t)
			s.fault(t, map[string]any{"target": target, "items": 9})
			key := g.account(fmt.Sprintf("page2_%d", i), tt.balance)
			r := g.do("POST", "/v1/search", key, map[string]any{"queries": query, "provider": provider, "limit": 3, "cursor": cursor})
			if r.Status != tt.wantStatus {
				t.Fatalf("page 2: %d %s, want %d", r.Status, r.Body, tt.wantStatus)
			}
			calls, asked := askedOf(t, s, target)
			if asked > tt.wantAsked || (tt.wantAsked == 0 && calls != 0) {
				t.Errorf("upstream asked for %d records in %d calls; the hold covered %d", asked, calls, tt.wantAsked)
			}
			if tt.wantStatus != 200 {
				if r.errCode() != "insufficient_credits" || !near(g.balance(key), tt.balance) {
					t.Errorf("refused page: code %s, balance %v of %v", r.errCode(), g.balance(key), tt.balance)
				}
				return
			}
			data, _ := r.JSON["data"].([]any)
			if len(data) != tt.wantData || r.JSON["capped_by"] != tt.cappedBy ||
				!near(num(r.JSON["credits_used"]), float64(tt.wantData)*price) {
				t.Errorf("page 2: %d records, capped_by %v, credits_used %v; want %d, %v", len(data), r.JSON["capped_by"], r.JSON["credits_used"], tt.wantData, tt.cappedBy)
			}
			if !near(g.balance(key), tt.balance-num(r.JSON["credits_used"])) {
				t.Errorf("balance %v after page 2 charged %v from %v", g.balance(key), r.JSON["credits_used"], tt.balance)
			}
		})
	}
}
