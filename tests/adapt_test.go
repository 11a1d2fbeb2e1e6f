package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddytest"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "socialrouter/caddymodule"
	_ "socialrouter/caddymodule/ratelimit"
)

// TestCaddyfileAdapt runs every testdata/adapt/*.caddyfiletest: a
// Caddyfile, a line of dashes, then the expected JSON or, for a file whose
// second part is not JSON, an expected error substring. These need no
// server and never skip.
func TestCaddyfileAdapt(t *testing.T) {
	files, err := filepath.Glob("testdata/adapt/*.caddyfiletest")
	if err != nil || len(files) == 0 {
		t.Fatalf("no adapt tests: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			parts := strings.SplitN(string(data), "----------", 2)
			caddyfile, expected := strings.TrimSpace(parts[0])+"\n", strings.TrimSpace(parts[1])
			if !strings.HasPrefix(expected, "{") {
				_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), nil)
				if err == nil || !strings.Contains(err.Error(), expected) {
					t.Fatalf("adapt error %v, want one containing %q", err, expected)
				}
				return
			}
			if !caddytest.CompareAdapt(t, f, caddyfile, "caddyfile", expected) {
				t.Fatal("adapted JSON differs from the golden file")
			}
		})
	}
}
