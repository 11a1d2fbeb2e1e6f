package ratelimit

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// TestInCaddy runs the handler inside a real Caddy HTTP server (in this
// process, admin endpoint off): the client IP comes from the server's
// trusted_proxies and client_ip_headers, a reload keeps the counters, and
// errors from later handlers still carry the policy header.
func TestInCaddy(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("XDG_DATA_HOME", dir)
	t.Setenv("XDG_CONFIG_HOME", dir)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	prefix := testPrefix(t)

	load := func(policy string) {
		t.Helper()
		cfg := fmt.Sprintf(`{
			"admin": {"disabled": true, "config": {"persist": false}},
			"logging": {"logs": {"default": {"level": "ERROR"}}},
			"apps": {"http": {"servers": {"sdr": {
				"listen": [%q],
				"automatic_https": {"disable": true},
				"trusted_proxies": {"source": "static", "ranges": ["127.0.0.1/32"]},
				"client_ip_headers": ["X-Forwarded-For"],
				"routes": [
					{"handle": [{"handler": "ip_rate_limit", "count": 2, "window": "1m",
					             "policy_name": %q, "store": {"prefix": %q}}]},
					{"match": [{"path": ["/boom"]}],
					 "handle": [{"handler": "error", "status_code": 500, "error": "boom"}]},
					{"handle": [{"handler": "static_response", "body": "ok"}]}
				]
			}}}}
		}`, addr, policy, prefix)
		if err := caddy.Load([]byte(cfg), true); err != nil {
			t.Fatalf("loading config: %v", err)
		}
	}
	load("default")
	t.Cleanup(func() {
		if err := caddy.Stop(); err != nil {
			t.Errorf("stopping caddy: %v", err)
		}
		stores.Range(func(key, _ any) bool {
			if key.(poolKey).prefix == prefix {
				t.Errorf("store %+v still pooled after caddy stopped", key)
			}
			return true
		})
	})

	client := &http.Client{Timeout: 5 * time.Second}
	get := func(path, forwardedFor string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if forwardedFor != "" {
			req.Header.Set("X-Forwarded-For", forwardedFor)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header, string(body)
	}

	// Every request comes from 127.0.0.1, a trusted proxy: the limit is per
	// forwarded client.
	steps := []struct {
		name, path, xff string
		want            int
		wantPolicy      string
	}{
		{"client 1, first", "/", "198.51.100.1", 200, `"default";q=2;w=60`},
		{"client 1, second", "/", "198.51.100.1", 200, `"default";q=2;w=60`},
		{"client 1, over", "/", "198.51.100.1", 429, `"default";q=2;w=60`},
		{"client 2 via the same proxy", "/", "198.51.100.2", 200, `"default";q=2;w=60`},
		{"downstream error", "/boom", "198.51.100.3", 500, `"default";q=2;w=60`},
	}
	for _, s := range steps {
		code, header, body := get(s.path, s.xff)
		if code != s.want {
			t.Errorf("%s: status %d, want %d", s.name, code, s.want)
		}
		if got := header.Get("RateLimit-Policy"); got != s.wantPolicy {
			t.Errorf("%s: RateLimit-Policy %q, want %q", s.name, got, s.wantPolicy)
		}
		if code == 429 {
			if body != "" || header.Get("Retry-After") == "" || header.Get("Content-Type") != "" {
				t.Errorf("%s: 429 body %q, Retry-After %q, Content-Type %q; want a bare 429 with Retry-After",
					s.name, body, header.Get("Retry-After"), header.Get("Content-Type"))
			}
		}
	}

	// A reload (here it renames the policy) keeps client 1 over its limit.
	load("renamed")
	code, header, _ := get("/", "198.51.100.1")
	if code != 429 {
		t.Errorf("after reload: client 1 status %d, want 429", code)
	}
	if got := header.Get("RateLimit-Policy"); got != `"renamed";q=2;w=60` {
		t.Errorf("after reload: RateLimit-Policy %q", got)
	}
	if code, _, _ := get("/", "198.51.100.4"); code != 200 {
		t.Errorf("after reload: new client status %d, want 200", code)
	}
}
