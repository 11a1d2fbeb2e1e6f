package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"socialrouter/caddymodule/registry"
	"socialrouter/internal/mcptest"
	"socialrouter/internal/testservices"
)

// TestOperatorAdditionsKeepTheSuiteGreen adds services as an operator would
// (testservices.Operator: open_net.cue, pin_net.cue, shortvideo_net.cue,
// the files named after their platforms, with pin_net/pin.info failing
// over from source_b to source_a and a search type no SPEC names) to a copy
// of services/, where what the operator already has is kept, and runs what
// follows the declarations over it: `caddy sdr check`, the gateway's
// catalogue, OpenAPI document, providers, MCP tools, a billed call with
// failover and a search on the new type, and the unit tests that read
// services/ (registry, normalize, servicecheck, MCP tools, the simulator,
// the registry swaps and reloads) pointed at the copy. They add their own
// test-only services beside the operator's: any valid addition must keep
// them green with no Go change.
func TestOperatorAdditionsKeepTheSuiteGreen(t *testing.T) {
	dir := copyServices(t)
	skipped, err := testservices.Add(dir, testservices.Operator)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) > 0 {
		t.Logf("kept as the operator declared: %s", strings.Join(skipped, "; "))
	}
	reg, err := registry.Load(dir)
	if err != nil {
		t.Fatalf("the copy does not load: %v", err)
	}
	has := func(key string) bool {
		p, n, _ := strings.Cut(key, "/")
		_, ok := reg.Service(p, n)
		return ok
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

	t.Run("catalogue, OpenAPI and providers", func(t *testing.T) {
		r := g.do("GET", "/v1/openapi.json", "", nil)
		var doc struct {
			Paths map[string]any `json:"paths"`
		}
		if err := json.Unmarshal(r.Body, &doc); err != nil {
			t.Fatalf("GET /v1/openapi.json: %d %v", r.Status, err)
		}
		for _, svc := range reg.Services {
			if !svc.Callable() || !svc.Extract {
				continue
			}
			if r := g.do("GET", "/v1/services/"+svc.Key, "", nil); r.Status != 200 {
				t.Errorf("GET /v1/services/%s: %d %s", svc.Key, r.Status, r.Body)
			}
			if _, ok := doc.Paths["/v1/"+svc.Key]; !ok { // the operation path; /v1/extract/… is its x-canonical-path
				t.Errorf("the OpenAPI document has no /v1/%s", svc.Key)
			}
		}
		for _, svc := range reg.SearchTypes() {
			for _, o := range svc.LiveOffers() {
				r := g.do("GET", "/v1/providers/"+o.Source.ID, "", nil)
				if !slices.Contains(sortedStrings(r.JSON["supported_search_types"]), svc.Key) {
					t.Errorf("GET /v1/providers/%s: supported_search_types lacks %s: %s", o.Source.ID, svc.Key, r.Body)
				}
			}
		}
		if has("pin_net/pin.info") {
			r := g.do("GET", "/v1/services/pin_net/pin.info", "", nil)
			offers, _ := r.JSON["offers"].([]any)
			if len(offers) < 2 {
				t.Errorf("pin_net/pin.info offers: %s", r.Body)
			}
		}
	})

	t.Run("MCP tools", func(t *testing.T) {
		cs := mcptest.Connect(t, g.URL+"/mcp", "", nil)
		names := mcptest.ToolNames(t, cs)
		slices.Sort(names)
		if want := wantTools(t, g); !slices.Equal(names, want) {
			t.Errorf("tools/list:\n got %v\nwant %v", names, want)
		}
	})

	added := !slices.ContainsFunc(skipped, func(s string) bool { return strings.HasPrefix(s, "pin_net.cue ") })
	t.Run("a billed call fails over", func(t *testing.T) {
		if !added {
			t.Log("the operator's pin_net.cue is kept: no failover call of the trial's") // what they declared is held by the tests below
			return
		}
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

	searchAdded := !slices.ContainsFunc(skipped, func(s string) bool { return strings.HasPrefix(s, "shortvideo_net.cue ") })
	t.Run("a search on the new type", func(t *testing.T) {
		if !searchAdded {
			t.Log("the operator's shortvideo_net.cue is kept: no search of the trial's")
			return
		}
		key := g.account("searcher", 10)
		before := g.balance(key)
		r := g.do("POST", "/v1/search", key, map[string]any{"queries": []string{"rocket launch"}, "provider": "source_a/shortvideo_net/video.search", "limit": 5})
		data, _ := r.JSON["data"].([]any)
		if r.Status != 200 || len(data) != 1 || asMap(data[0])["video_id"] != "7301234567890123456" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if !near(before-g.balance(key), 0.003) {
			t.Errorf("charged %v for one record at 0.003", before-g.balance(key))
		}
	})

	t.Run("unit tests that read services/", func(t *testing.T) {
		for _, args := range [][]string{
			{"./caddymodule/registry/", "./caddymodule/normalize/", "./caddymodule/servicecheck/", "./caddymodule/mcp/"},
			{"-run", "^(TestSwapServices|TestWatchServices|TestRegistryReloadRoute)$", "./caddymodule/"},
			{"-run", "^TestDeclaredRoutesCoverEveryOffer$", "./cmd/upstream-sim/sim/"},
		} {
			cmd := exec.Command("go", append([]string{"test", "-count=1"}, args...)...)
			cmd.Dir = repoRoot
			cmd.Env = append(os.Environ(), testservices.DirEnv+"="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go test %s with %s=%s: %v\n%s", strings.Join(args, " "), testservices.DirEnv, filepath.Base(dir), err, out)
			}
		}
	})
}
