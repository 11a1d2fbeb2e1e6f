package tests

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDefaultCaddyfile runs the repository's own Caddyfile (what make demo
// runs), its admin address and services path moved into the test: what it
// serves answers, and every other path, an OAuth-looking one included, is
// the JSON 404 (an MCP client probing a metadata path must not read an
// empty 200).
func TestDefaultCaddyfile(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot, "Caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	port, admin := freePort(t), freePort(t)
	cfg := string(src)
	for old, repl := range map[string]string{
		"admin localhost:2019": fmt.Sprintf("admin 127.0.0.1:%d", admin),
		"services ./services":  "services " + filepath.Join(repoRoot, "services"),
		"social_router {\n":    "skip_install_trust\n\tsocial_router {\n",
	} {
		if !strings.Contains(cfg, old) {
			t.Fatalf("the Caddyfile no longer holds %q", old)
		}
		cfg = strings.Replace(cfg, old, repl, 1)
	}
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, []string{"SDR_PORT=" + fmt.Sprint(port), "SDR_DATA_DIR=" + filepath.Join(dir, "data"),
		"SOURCE_A_URL=http://127.0.0.1:1", "SOURCE_B_URL=http://127.0.0.1:1",
		"XDG_DATA_HOME=" + filepath.Join(dir, "xdg-data"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "xdg-config")},
		caddyBin, "run", "--config", path, "--adapter", "caddyfile")
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitFor(t, "gateway on the default Caddyfile", p, func() bool {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	noRedirect := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tests := []struct {
		method, path string
		status       int
		jsonNotFound bool // the Caddyfile's JSON 404
	}{
		{"GET", "/v1/services", 200, false},
		{"GET", "/.well-known/oauth-protected-resource", 200, false},
		{"GET", "/.well-known/oauth-protected-resource/mcp", 200, false},
		{"GET", "/.well-known/oauth-authorization-server", 200, false},
		{"GET", "/oauth/token", 405, false},
		{"POST", "/oauth/register", 400, false},
		{"GET", "/dashboard/", 303, false},
		{"GET", "/", 404, true},
		{"GET", "/index.html", 404, true},
		{"GET", "/.well-known/oauth-authorization-server/mcp", 404, true},
		{"GET", "/.well-known/oauth-foo", 404, true},
		{"GET", "/oauth/", 404, true},
		{"POST", "/oauth/anything", 404, true},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(tt.method, base+tt.path, nil)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.method, tt.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("%s %s: %d %s, want %d", tt.method, tt.path, resp.StatusCode, body, tt.status)
		}
		if resp.Header.Get("RateLimit-Policy") != `"default";q=100;w=60` {
			t.Errorf("%s %s: RateLimit-Policy %q", tt.method, tt.path, resp.Header.Get("RateLimit-Policy"))
		}
		if tt.jsonNotFound && (resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(body), `"code":"not_found"`)) {
			t.Errorf("%s %s: %s %s, want the JSON 404", tt.method, tt.path, resp.Header.Get("Content-Type"), body)
		}
	}

	// The access log is on, and secrets sent in a URL stay out of it.
	for _, path := range []string{"/dashboard/invite/SECRET-INVITE", "/oauth/authorize?client_id=nope&state=SECRET-STATE&code=SECRET-CODE"} {
		resp, err := noRedirect.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.out.String(), "state=REDACTED") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	logged := p.out.String()
	for _, want := range []string{`"uri":"/dashboard/invite/REDACTED"`, `"Location":["/dashboard/invite#REDACTED"]`, "state=REDACTED&code=REDACTED"} {
		if !strings.Contains(logged, want) {
			t.Errorf("the access log lacks %s", want)
		}
	}
	if strings.Contains(logged, "SECRET-") {
		t.Errorf("a secret reached the access log:\n%s", tail(logged, 10))
	}
}
