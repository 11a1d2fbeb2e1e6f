package tests

import (
	"testing"
	"time"

	"socialrouter/caddymodule/registry"
	"socialrouter/internal/mcptest"
)

// TestCacheMCPMaxAge: the MCP search tool takes max_age as the extract
// tools do (a search type declared cacheable in a copy of services/ is
// served to a second account from the first one's records), and the
// extract tools' max_age holds for a call run asynchronously (a limit
// above what one synchronous call serves) too.
func TestCacheMCPMaxAge(t *testing.T) {
	dir := copyServices(t)
	editServicesFile(t, dir, "maps.cue", `record:      "#PlaceSearchResult"`, `record:      "#PlaceSearchResult"
	cache: keep: 86400`)
	reg, err := registry.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	svc, _ := reg.Service("maps", "place.search")
	target := svc.LiveOffers()[0].Target
	s := startSim(t, "-services", dir)
	c := defaultConfig(t, s)
	c.Services = dir
	g := startGateway(t, c)
	a := mcptest.Connect(t, g.URL+"/mcp", g.account("mcp_cache_a", 10), nil)
	b := mcptest.Connect(t, g.URL+"/mcp", g.account("mcp_cache_b", 10), nil)
	s.clearLedger(t)

	search := map[string]any{"provider": "source_a/maps/place.search", "queries": []string{"cafe for the mcp cache"}, "limit": 3, "max_age": 600}
	if isErr, run := mcpCall(t, a, "search", search); isErr || cachedRecordsOf(run) != 0 {
		t.Fatalf("first search: %v", run)
	}
	isErr, run := mcpCall(t, b, "search", search)
	if n := len(mcptest.Records(run)); isErr || n == 0 || cachedRecordsOf(run) != n || len(jobsOf(t, s, target)) != 1 {
		t.Errorf("second account's search with max_age: cached_records %d, %d jobs of %s; want all records cached, 1 job: %v",
			cachedRecordsOf(run), len(jobsOf(t, s, target)), target, run)
	}
	search["max_age"] = -1
	if _, run := mcpCall(t, b, "search", search); cachedRecordsOf(run) != 0 || len(jobsOf(t, s, target)) != 2 {
		t.Errorf("max_age -1: cached_records %d, %d jobs; want live work", cachedRecordsOf(run), len(jobsOf(t, s, target)))
	}
	search["max_age"] = -2
	if isErr, run := mcpCall(t, b, "search", search); !isErr {
		t.Errorf("max_age -2 accepted: %v", run)
	}

	url := "https://www.linkedin.com/in/mcp-cache-async"
	if isErr, run := mcpCall(t, a, "pro_net_profile_info", map[string]any{"url": url, "max_age": 600}); isErr || cachedRecordsOf(run) != 0 {
		t.Fatalf("first extract: %v", run)
	}
	isErr, run = mcpCall(t, b, "pro_net_profile_info", map[string]any{"url": url, "max_age": 600, "limit": 300})
	if isErr || run["status"] != "running" {
		t.Fatalf("an extract above the sync limit is not an async run: %v", run)
	}
	id, _ := run["id"].(string)
	deadline := time.Now().Add(10 * time.Second)
	for run["status"] == "running" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		_, run = mcpCall(t, b, "get_run", map[string]any{"id": id})
	}
	if run["status"] != "completed" || cachedRecordsOf(run) != 1 || len(jobsOf(t, s, proB)) != 1 {
		t.Errorf("async extract with max_age: %v, %d jobs of %s; want served from the cache", run, len(jobsOf(t, s, proB)), proB)
	}
}

// cachedRecordsOf is a run document's cached_records (0 when absent).
func cachedRecordsOf(run map[string]any) int {
	n, _ := run["cached_records"].(float64)
	return int(n)
}
