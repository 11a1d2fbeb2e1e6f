package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"socialrouter/internal/testservices"
)

// TestDiscovery checks the public endpoints and their documented 404s.
func TestDiscovery(t *testing.T) {
	g := startGateway(t, defaultConfig(t, nil))

	r := g.do("GET", "/v1/services", "", nil)
	if r.Status != 200 {
		t.Fatalf("GET /v1/services: %d %s", r.Status, r.Body)
	}
	var cat struct {
		Data []struct {
			Platform   string `json:"platform"`
			Service    string `json:"service"`
			InputField string `json:"input_field"`
			Offers     []struct {
				Offer          string  `json:"offer"`
				PricePerRecord float64 `json:"price_per_record"`
				MaxInputs      int     `json:"max_inputs"`
			} `json:"offers"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.Body, &cat); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range cat.Data {
		if e.Platform == "pro_net" && e.Service == "profile.info" {
			found = true
			if len(e.Offers) != 2 || e.Offers[0].Offer != "source_b/pro_net" || e.Offers[1].Offer != "source_a/actor_1" ||
				e.Offers[0].PricePerRecord != 0.001725 || e.Offers[1].PricePerRecord != 0.0069 || e.Offers[1].MaxInputs != 1 {
				t.Errorf("pro_net/profile.info offers: %+v", e.Offers)
			}
		}
		if len(e.Offers) == 0 {
			t.Errorf("service without offer listed: %s/%s", e.Platform, e.Service)
		}
	}
	if !found {
		t.Error("pro_net/profile.info missing from the catalogue")
	}

	tests := []struct {
		path   string
		status int
		code   string
	}{
		{"/v1/services/pro_net", 200, ""},
		{"/v1/services/micro_net", 200, ""},
		{"/v1/services/nope_net", 404, "unknown_platform"},
		{"/v1/services/pro_net/company.info", 200, ""},
		{"/v1/services/pro_net/profile.inf", 404, "unknown_service"},
		{"/v1/services/micro_net/post.info", 404, "service_not_available"},
		{"/v1/providers", 200, ""},
		{"/v1/providers/source_a", 200, ""},
		{"/v1/providers/source_z", 404, "not_found"},
		{"/v1/openapi.json", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := g.do("GET", tt.path, "", nil)
			if r.Status != tt.status || r.errCode() != tt.code {
				t.Fatalf("%s: %d %s, want %d %s", tt.path, r.Status, r.Body, tt.status, tt.code)
			}
		})
	}
	r = g.do("GET", "/v1/services/nope_net", "", nil)
	for _, p := range []string{"pro_net", "photo_net", "micro_net", "forum_net", "social_net", "shortvideo_net", "video_net", "pin_net", "open_net", "ephemeral_net", "maps"} {
		if msg, _ := r.errField("message").(string); !strings.Contains(msg, p) {
			t.Errorf("unknown_platform message lacks %s: %s", p, msg)
		}
	}
	r = g.do("GET", "/v1/services/pro_net/profile.inf", "", nil)
	if r.errField("did_you_mean") != "profile.info" {
		t.Errorf("did_you_mean: %s", r.Body)
	}
	if a, _ := r.errField("available_services").([]any); len(a) == 0 {
		t.Errorf("available_services: %s", r.Body)
	}
	r = g.do("POST", "/v1/extract/pro_net/profile.inf", "", map[string]any{"url": "x"})
	if r.Status != 404 || r.errCode() != "unknown_service" {
		t.Errorf("extract unknown service: %d %s", r.Status, r.Body)
	}
	r = g.do("GET", "/v1/providers/source_b", "", nil)
	if _, ok := r.JSON["supported_search_types"]; ok {
		t.Errorf("source_b has no search coverage but lists supported_search_types: %s", r.Body)
	}
	r = g.do("GET", "/v1/providers/source_a", "", nil)
	if _, ok := r.JSON["supported_search_types"]; !ok {
		t.Errorf("source_a lacks supported_search_types: %s", r.Body)
	}
}

// addProbe adds the test-only probe service (testservices.Probe) to the
// services directory dir: a service name no operator declares, so reload
// tests hold whatever services/ declares.
func addProbe(t *testing.T, dir string) {
	t.Helper()
	if _, err := testservices.Add(dir, testservices.Probe); err != nil {
		t.Fatal(err)
	}
}

// probePath is the probe's declaration file in dir.
func probePath(dir string) string { return filepath.Join(dir, "sdr_test_probe.cue") }

// editFile replaces old by new in the file at path (exactly once).
func editFile(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(b), old) != 1 {
		t.Fatalf("%s: %q is not there exactly once", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReload adds a service file and reloads: it appears without a
// restart; a broken file, or one whose example fails the checks of `sdr
// check`, is refused with its file:line:column and the old catalogue
// keeps serving.
func TestReload(t *testing.T) {
	svcDir := copyServices(t)
	c := defaultConfig(t, nil)
	c.Services = svcDir
	g := startGateway(t, c)
	cfgPath := filepath.Join(g.Dir, "Caddyfile")
	probe := "/v1/services/" + testservices.ProbeKey

	if r := g.do("GET", probe, "", nil); r.Status != 404 {
		t.Fatalf("the probe service is declared before the test adds it: %d %s", r.Status, r.Body)
	}
	addProbe(t, svcDir)
	reload(t, g, cfgPath, true)
	forgetOpenAPI(g.URL)
	waitUntil(t, func() bool {
		r := g.do("GET", probe, "", nil)
		return r.Status == 200
	})

	// The reload is refused while the CLI adapts the Caddyfile, before the
	// config reaches the instance: only the adapter's two short prefixes
	// stand before the operator's file:line:column, on the error's first
	// line (not the ~330 characters of module path of a refused /load).
	caddyPrefix := `(?m)"msg":"adapting config using caddyfile: parsing caddyfile tokens for 'social_router': `
	refused := []struct {
		name, old, new string
		leads          string // after Caddy's prefix
	}{
		{"a bad pattern", `pattern: "https://probe\\.example/[0-9]+/?"`, `pattern: "https://probe\\.example/[0-9+/?"`,
			regexp.QuoteMeta(probePath(svcDir)) + `:15:12: service ` + testservices.ProbeKey + `: bad accept pattern`},
		{"an undeclared record field", `source: \"ephemeral_net\", extracted_at`, `source: \"ephemeral_net\", headline: (.title | str), extracted_at`,
			regexp.QuoteMeta(probePath(svcDir)) + `:23:\d+: ` + regexp.QuoteMeta(filepath.Join(svcDir, "examples")) + `/source_b/ephemeral_net__sdr_test_probe.info.json: offer ` + testservices.ProbeKey + ` source_b/sdr_test_probe: item 0: record off #SdrTestProbe: headline: undeclared field`},
		{"a wrong type after a type mutation", `name: (.title | str)`, `name: .title`,
			regexp.QuoteMeta(probePath(svcDir)) + `:23:\d+: .*robustness: item 0 with .title = 7.5: record off #SdrTestProbe: name: want string`},
	}
	good, err := os.ReadFile(probePath(svcDir))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			editFile(t, probePath(svcDir), tc.old, tc.new)
			defer os.WriteFile(probePath(svcDir), good, 0o644)
			out := reload(t, g, cfgPath, false)
			if !regexp.MustCompile(caddyPrefix + tc.leads).MatchString(out) {
				t.Errorf("reload error does not lead with the file:line:column:\n%s", out)
			}
			if r := g.do("GET", probe, "", nil); r.Status != 200 {
				t.Errorf("old catalogue stopped serving after a refused reload: %d %s", r.Status, r.Body)
			}
		})
	}
}

// copyServices copies services/ (declarations and examples) into a
// temporary directory a test may change.
func copyServices(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := testservices.CopyServices(filepath.Join(repoRoot, "services"), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func reload(t *testing.T, g *gateway, cfgPath string, wantOK bool) string {
	t.Helper()
	p := start(t, nil, caddyBin, "reload", "--config", cfgPath, "--adapter", "caddyfile", "--address", g.Admin)
	err := p.cmd.Wait()
	out := p.out.String()
	if wantOK && err != nil {
		t.Fatalf("reload failed: %v\n%s", err, out)
	}
	if !wantOK && err == nil {
		t.Fatalf("reload of a broken config succeeded:\n%s", out)
	}
	return out
}

func waitUntil(t *testing.T, ok func() bool) {
	t.Helper()
	for i := 0; i < 100; i++ {
		if ok() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("condition not reached in 5s")
}
