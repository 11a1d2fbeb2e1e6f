package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"socialrouter/internal/mcptest"
	"socialrouter/internal/testservices"
)

// TestAdditionKeepsTheSuiteGreen adds the two services of an operator's
// trial (pin_net/pin.info on both sources with failover,
// shortvideo_net/profile.info on source_a; internal/testservices) to a copy
// of services/ and runs what follows the declarations over it: `caddy sdr
// check`, the gateway's catalogue, OpenAPI document, MCP tools and a billed
// call with failover, and the declaration-driven unit tests (registry,
// normalize, servicecheck, MCP tools) pointed at the copy. Any valid
// addition must keep them green with no Go change.
func TestAdditionKeepsTheSuiteGreen(t *testing.T) {
	dir := copyServices(t)
	skipped, err := testservices.Add(dir, testservices.Addition)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) > 0 {
		t.Logf("services/ already declares %s: kept as declared", strings.Join(skipped, ", "))
	}

	t.Run("sdr check", func(t *testing.T) {
		out, err := exec.Command(caddyBin, "sdr", "check", dir).CombinedOutput()
		if err != nil {
			t.Fatalf("sdr check refuses the addition: %v\n%s", err, out)
		}
	})

	s := startSim(t, "-services", dir)
	c := defaultConfig(t, s)
	c.Services = dir
	g := startGateway(t, c)

	t.Run("catalogue and OpenAPI", func(t *testing.T) {
		for _, key := range testservices.Keys(testservices.Addition) {
			if r := g.do("GET", "/v1/services/"+key, "", nil); r.Status != 200 {
				t.Errorf("GET /v1/services/%s: %d %s", key, r.Status, r.Body)
			}
			r := g.do("GET", "/v1/openapi.json", "", nil)
			var doc struct {
				Paths map[string]any `json:"paths"`
			}
			if err := json.Unmarshal(r.Body, &doc); err != nil {
				t.Fatalf("GET /v1/openapi.json: %d %v", r.Status, err)
			}
			if _, ok := doc.Paths["/v1/"+key]; !ok { // the operation path; /v1/extract/… is its x-canonical-path
				t.Errorf("the OpenAPI document has no /v1/%s", key)
			}
		}
		r := g.do("GET", "/v1/services/pin_net/pin.info", "", nil)
		offers, _ := r.JSON["offers"].([]any)
		if len(offers) != 2 || asMap(offers[0])["offer"] != "source_b/pin_net" || asMap(offers[1])["offer"] != "source_a/actor_8" {
			t.Errorf("pin_net/pin.info offers, in failover order: %s", r.Body)
		}
	})

	t.Run("MCP tools", func(t *testing.T) {
		cs := mcptest.Connect(t, g.URL+"/mcp", "", nil)
		names := mcptest.ToolNames(t, cs)
		slices.Sort(names)
		if want := wantTools(t, g); !slices.Equal(names, want) {
			t.Errorf("tools/list:\n got %v\nwant %v", names, want)
		}
		for _, tool := range []string{"pin_net_pin_info", "shortvideo_net_profile_info"} {
			if !slices.Contains(names, tool) {
				t.Errorf("no tool %s: %v", tool, names)
			}
		}
	})

	t.Run("a billed call fails over", func(t *testing.T) {
		key := g.account("trial", 10)
		s.fault(t, map[string]any{"target": "gd_trial_pin", "status": 503})
		before := g.balance(key)
		r := g.do("POST", "/v1/extract/pin_net/pin.info", key, map[string]any{"url": "https://www.pinterest.com/pin/99360735500167749/"})
		if r.Status != 200 || r.JSON["served_by"] != "source_a/actor_8" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if data, _ := r.JSON["data"].([]any); len(data) != 1 || !near(before-g.balance(key), 0.004) {
			t.Errorf("%d records, charged %v: %s", len(data), before-g.balance(key), r.Body)
		}
	})

	t.Run("declaration-driven unit tests", func(t *testing.T) {
		cmd := exec.Command("go", "test", "-count=1",
			"./caddymodule/registry/", "./caddymodule/normalize/", "./caddymodule/servicecheck/", "./caddymodule/mcp/")
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), testservices.DirEnv+"="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("with %s=%s: %v\n%s", testservices.DirEnv, filepath.Base(dir), err, out)
		}
	})
}
