package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// TestDefaultCaddyfileLogFilters: the repository's Caddyfile adapts, its
// access log is the filter encoder, and the filters' regexps, applied as
// Caddy's multi_regexp filter applies them, leave no OAuth code or state
// and no invitation token in a logged URI or Location.
func TestDefaultCaddyfileLogFilters(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot, "Caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := caddyconfig.GetAdapter("caddyfile").Adapt(src, map[string]any{"filename": "Caddyfile"})
	if err != nil {
		t.Fatalf("the default Caddyfile does not adapt: %v", err)
	}
	var cfg struct {
		Logging struct {
			Logs map[string]struct {
				Include []string `json:"include"`
				Encoder struct {
					Format string `json:"format"`
					Fields map[string]struct {
						Filter     string `json:"filter"`
						Operations []struct {
							Regexp string `json:"regexp"`
							Value  string `json:"value"`
						} `json:"operations"`
					} `json:"fields"`
				} `json:"encoder"`
			} `json:"logs"`
		} `json:"logging"`
	}
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	access, ok := cfg.Logging.Logs["log0"]
	if !ok || len(access.Include) == 0 || !strings.HasPrefix(access.Include[0], "http.log.access") || access.Encoder.Format != "filter" {
		t.Fatalf("no filtered access log in the adapted config: %s", out)
	}
	filter := func(field, s string) string {
		f, ok := access.Encoder.Fields[field]
		if !ok || f.Filter != "multi_regexp" {
			t.Fatalf("field %s: no multi_regexp filter (%+v)", field, f)
		}
		for _, op := range f.Operations {
			s = regexp.MustCompile(op.Regexp).ReplaceAllString(s, op.Value)
		}
		return s
	}
	for _, c := range []struct{ field, in, want string }{
		{"request>uri", "/oauth/authorize?response_type=code&client_id=c1&state=SECRET1&code_challenge=x", "/oauth/authorize?response_type=code&client_id=c1&state=REDACTED&code_challenge=x"},
		{"request>uri", "/cb?code=SECRET2", "/cb?code=REDACTED"},
		{"request>uri", "/dashboard/invite/SECRET3", "/dashboard/invite/REDACTED"},
		{"request>uri", "/dashboard/invite", "/dashboard/invite"},
		{"request>uri", "/v1/extract/x/y?limit=5", "/v1/extract/x/y?limit=5"},
		{"resp_headers>Location", "https://client.example/cb?code=SECRET4&state=SECRET5&iss=https%3A%2F%2Fgw", "https://client.example/cb?code=REDACTED&state=REDACTED&iss=https%3A%2F%2Fgw"},
		{"resp_headers>Location", "/dashboard/invite#SECRET6", "/dashboard/invite#REDACTED"},
		{"resp_headers>Location", "/dashboard/runs?status=failed", "/dashboard/runs?status=failed"},
	} {
		if got := filter(c.field, c.in); got != c.want {
			t.Errorf("%s %q logged as %q, want %q", c.field, c.in, got, c.want)
		}
	}
	if f := access.Encoder.Fields["request>headers>Mcp-Session-Id"]; f.Filter != "delete" {
		t.Errorf("the MCP session id is logged (%+v)", f)
	}
}
