package caddymodule

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"socialrouter/internal/testservices"
)

// TestAdaptRefusesBrokenServices: adapting a Caddyfile whose services
// directory `caddy sdr check` would refuse fails at adapt time, and the
// error leads with the operator's file:line:column, so a refused `caddy
// reload` prints it behind the adapter's short prefixes only. A directory
// this process cannot see is left to Provision.
func TestAdaptRefusesBrokenServices(t *testing.T) {
	withProbe := func() string {
		dir := t.TempDir()
		if err := testservices.CopyServices(testservices.ServicesDir(filepath.Join("..", "services")), dir); err != nil {
			t.Fatal(err)
		}
		if _, err := testservices.Add(dir, testservices.Probe); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	good, broken := withProbe(), withProbe()
	f := filepath.Join(broken, "sdr_test_probe.cue")
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(string(b), "price_per_record:")
	if at < 0 {
		t.Fatal("the probe declares no price_per_record")
	}
	line := 1 + strings.Count(string(b[:at]), "\n")
	b = append(b[:at:at], []byte(`price_per_record: "cheap" // `+string(b[at+len("price_per_record:"):]))...)
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir string
		leads     string // "" when the adapt succeeds
	}{
		{"valid services", good, ""},
		{"a directory not on this machine", filepath.Join(t.TempDir(), "absent"), ""},
		{"a wrong type", broken, `^` + regexp.QuoteMeta(f) + `:` + strconv.Itoa(line) + `:\d+: field services\."ephemeral_net/`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := caddyfile.NewTestDispenser("social_router {\n services " + tc.dir + "\n}")
			_, err := parseGlobalOption(d, nil)
			switch {
			case tc.leads == "" && err != nil:
				t.Fatalf("adapt refused: %v", err)
			case tc.leads != "" && err == nil:
				t.Fatal("adapt accepted services that sdr check refuses")
			case tc.leads != "" && !regexp.MustCompile(tc.leads).MatchString(err.Error()):
				t.Errorf("the error does not lead with the file:line:column %s:%d:\n%v", f, line, err)
			}
		})
	}
}
