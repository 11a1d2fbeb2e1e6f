package tests

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSearch runs both search types, follows next_cursor, and checks the
// documented refusals.
func TestSearch(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("acme", 50)

	for _, tc := range []struct{ provider, target string }{
		{"source_a/maps/place.search", "compass~crawler-google-places"},
		{"source_a/video_net/video.search", "streamers~youtube-scraper"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			s.reset(t)
			s.fault(t, map[string]any{"target": tc.target, "items": 5})
			r := g.do("POST", "/v1/search", key, map[string]any{"queries": []string{"coffee in Lisbon"}, "provider": tc.provider, "limit": 3})
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			parts := strings.Split(tc.provider, "/")
			if r.JSON["kind"] != "search" || r.JSON["source"] != parts[1] || r.JSON["type"] != parts[2] ||
				r.JSON["url"] != "" || r.JSON["provider"] != "source_a" || r.JSON["status"] != "completed" {
				t.Errorf("search run: %s", r.Body)
			}
			page1 := r.JSON["data"].([]any)
			if len(page1) != 3 {
				t.Fatalf("page 1 has %d records", len(page1))
			}
			cursor, ok := r.JSON["pagination"].(map[string]any)["next_cursor"].(string)
			if !ok || cursor == "" {
				t.Fatalf("no next_cursor: %s", r.Body)
			}
			r2 := g.do("POST", "/v1/search", key, map[string]any{"queries": []string{"coffee in Lisbon"}, "provider": tc.provider, "limit": 3, "cursor": cursor})
			if r2.Status != 200 {
				t.Fatalf("page 2: %d %s", r2.Status, r2.Body)
			}
			page2 := r2.JSON["data"].([]any)
			if len(page2) != 2 {
				t.Errorf("page 2 has %d records, want the remaining 2", len(page2))
			}
			if nc := r2.JSON["pagination"].(map[string]any)["next_cursor"]; nc != nil {
				t.Errorf("last page has next_cursor %v", nc)
			}
			if !near(num(r2.JSON["credits_used"]), 2*0.00552) {
				t.Errorf("page 2 charged %v", r2.JSON["credits_used"])
			}
			got := g.do("GET", "/v1/extractions/"+r.JSON["id"].(string), key, nil)
			if got.Status != 200 || got.JSON["kind"] != "search" {
				t.Errorf("GET search run: %s", got.Body)
			}
		})
	}

	tests := []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"extraction type", map[string]any{"queries": []string{"x"}, "provider": "source_b/pro_net/profile.info"}, 400, "wrong_endpoint"},
		{"no queries", map[string]any{"provider": "source_a/maps/place.search"}, 400, "missing_queries"},
		{"empty queries", map[string]any{"queries": []string{}, "provider": "source_a/maps/place.search"}, 400, "missing_queries"},
		{"queries not strings", map[string]any{"queries": []int{1}, "provider": "source_a/maps/place.search"}, 400, "missing_queries"},
		{"unknown slug", map[string]any{"queries": []string{"x"}, "provider": "source_b/maps/place.search"}, 400, "unknown_provider"},
		{"foreign cursor", map[string]any{"queries": []string{"x"}, "provider": "source_a/maps/place.search", "cursor": "abc"}, 400, "invalid_cursor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := g.do("POST", "/v1/search", key, tt.body)
			if r.Status != tt.status || r.errCode() != tt.code {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		})
	}
	r := g.do("POST", "/v1/search", key, map[string]any{"queries": []string{"x"}, "provider": "source_b/pro_net/profile.info"})
	if msg, _ := r.errField("message").(string); !strings.Contains(msg, "/v1/extract/pro_net/profile.info") {
		t.Errorf("wrong_endpoint does not point at the extract path: %s", msg)
	}
	// Unknown option keys are dropped, not refused.
	r = g.do("POST", "/v1/search", key, map[string]any{"queries": []string{"x"}, "provider": "source_a/maps/place.search", "options": map[string]any{"whatever": 1}, "fallback": false})
	if r.Status != 200 {
		t.Errorf("unknown search option refused: %d %s", r.Status, r.Body)
	}
}

// TestIPRateLimit: the 101st request from one IP within the window is a
// bare 429 with Retry-After; every response carries RateLimit-Policy.
func TestIPRateLimit(t *testing.T) {
	c := defaultConfig(t, nil)
	c.RateCount = 100
	g := startGateway(t, c)
	var last *http.Response
	for i := 1; i <= 101; i++ {
		path := "/v1/services"
		if i%3 == 0 {
			path = "/v1/account/balance" // a 401: errors carry the header too
		}
		r, err := http.Get(g.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 1)
		n, _ := r.Body.Read(b)
		r.Body.Close()
		if got := r.Header.Get("RateLimit-Policy"); got != `"default";q=100;w=60` {
			t.Fatalf("request %d: RateLimit-Policy %q", i, got)
		}
		if i <= 100 && r.StatusCode == 429 {
			t.Fatalf("request %d refused", i)
		}
		if i == 101 {
			last = r
			if n != 0 {
				t.Error("the 429 has a body")
			}
		}
	}
	if last.StatusCode != 429 || last.Header.Get("Retry-After") == "" {
		t.Fatalf("101st: %d Retry-After %q", last.StatusCode, last.Header.Get("Retry-After"))
	}
}

// TestKeyCreditLimit: a key with a day limit of 0.01 credits is refused
// with 429 credit_limit_exceeded once spent.
func TestKeyCreditLimit(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	g.account("acme", 10)
	key := g.key("acme", map[string]any{"period": "day", "credits": 0.01})
	s.fault(t, map[string]any{"target": companyB, "items": 1})
	urls := []string{}
	for i := range 6 {
		urls = append(urls, fmt.Sprintf("https://www.linkedin.com/company/c%d", i))
	}
	// 6 records × 0.001725 = 0.01035 ≥ 0.01: the limit is reached.
	r := g.do("POST", "/v1/extract/pro_net/company.info", key, map[string]any{"urls": urls})
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	s.reset(t)
	r = g.do("POST", "/v1/extract/pro_net/company.info", key, map[string]any{"url": companyURL})
	if r.Status != 429 || r.errCode() != "credit_limit_exceeded" || r.errField("type") != "rate_limit" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if msg, _ := r.errField("message").(string); !strings.Contains(msg, "day") || !strings.Contains(msg, "credit limit exceeded") {
		t.Errorf("message: %s", msg)
	}
	ra := r.Header.Get("Retry-After")
	now := time.Now().UTC()
	end := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	var secs int
	fmt.Sscan(ra, &secs)
	if d := end.Sub(now).Seconds() - float64(secs); d < -5 || d > 5 {
		t.Errorf("Retry-After %q, want ≈ %v s to the end of the UTC day", ra, int(end.Sub(now).Seconds()))
	}
	if len(s.calls(t)) != 0 {
		t.Error("upstream called past the credit limit")
	}
	r = g.do("POST", "/v1/search", key, map[string]any{"queries": []string{"x"}, "provider": "source_a/maps/place.search"})
	if r.Status != 429 || r.errCode() != "credit_limit_exceeded" {
		t.Errorf("search past the limit: %d %s", r.Status, r.Body)
	}
}

// TestConcurrentRunsCap: more than 16 runs in flight for one account →
// 429 too_many_concurrent_runs.
func TestConcurrentRunsCap(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("acme", 10)
	s.fault(t, map[string]any{"target": companyB, "latency_ms": 1500})
	var wg sync.WaitGroup
	codes := make(chan int, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := doURL(t, "POST", g.URL+"/v1/extract/pro_net/company.info", key, map[string]any{"url": companyURL})
			if r.Status == 429 && r.errCode() != "too_many_concurrent_runs" {
				t.Errorf("429 with code %s", r.errCode())
			}
			codes <- r.Status
		}()
	}
	wg.Wait()
	close(codes)
	ok, refused := 0, 0
	for c := range codes {
		switch c {
		case 200:
			ok++
		case 429:
			refused++
		}
	}
	if ok != 16 || refused != 4 {
		t.Errorf("%d served, %d refused; want 16 and 4", ok, refused)
	}
}

// TestTLSInternal serves the API with `tls internal` and calls it over
// HTTPS trusting Caddy's local CA; the answer carries the default HSTS
// header.
func TestTLSInternal(t *testing.T) {
	cl, base := startTLSInternal(t, defaultConfig(t, nil))
	resp, err := cl.Get(base + "/v1/services")
	if err != nil {
		t.Fatalf("HTTPS request: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil || resp.Header.Get("RateLimit-Policy") == "" {
		t.Fatalf("HTTPS: %d tls=%v", resp.StatusCode, resp.TLS != nil)
	}
	if got := resp.Header.Get("Strict-Transport-Security"); got != "max-age=31536000" {
		t.Errorf("Strict-Transport-Security %q, want the default max-age=31536000", got)
	}
}

// startTLSInternal starts a gateway whose site is localhost on a fresh
// HTTPS port with `tls internal`, and returns a client that trusts only
// Caddy's local CA and the site's base URL, once the site answers.
func startTLSInternal(t *testing.T, c gwConfig) (*http.Client, string) {
	t.Helper()
	httpsPort := freePort(t)
	c.Site = fmt.Sprintf("localhost:%d", httpsPort)
	c.SiteExtra = "tls internal\n\t" + c.SiteExtra
	c.Global = fmt.Sprintf("http_port %d\n\thttps_port %d\n\t", freePort(t), httpsPort) + c.Global
	g := startGateway(t, c)
	root := filepath.Join(g.Dir, "xdg-data", "caddy", "pki", "authorities", "local", "root.crt")
	var pemBytes []byte
	waitUntil(t, func() bool {
		b, err := os.ReadFile(root)
		pemBytes = b
		return err == nil
	})
	pool := x509.NewCertPool()
	if blk, _ := pem.Decode(pemBytes); blk == nil || !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatal("reading Caddy's local root certificate")
	}
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	base := fmt.Sprintf("https://localhost:%d", httpsPort)
	var err error
	for range 100 {
		var resp *http.Response
		if resp, err = cl.Get(base + "/v1/health/live"); err == nil {
			resp.Body.Close()
			return cl, base
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("HTTPS request: %v", err)
	return nil, ""
}
