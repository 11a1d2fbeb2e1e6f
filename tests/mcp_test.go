package tests

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"socialrouter/internal/mcptest"
	"socialrouter/internal/testservices"
)

// mcpCall calls a tool: whether it answered an error, and its structured
// content.
func mcpCall(t *testing.T, cs *sdk.ClientSession, name string, args any) (bool, map[string]any) {
	t.Helper()
	res, m := mcptest.Call(t, cs, name, args)
	return res.IsError, m
}

// TestMCP drives /mcp of the real binary with the Go SDK's client:
// discovery without a key, a paid tool refused without one, an extract
// tool billed once and giving what REST gives, a refused input charging
// nothing, and a reload that adds a tool, of which the connected client is
// notified.
func TestMCP(t *testing.T) {
	s := startSim(t)
	svcDir := copyServices(t)
	c := defaultConfig(t, s)
	c.Services = svcDir
	g := startGateway(t, c)
	key := g.account("acme", 10)

	anon := mcptest.Connect(t, g.URL+"/mcp", "", nil)
	names := mcptest.ToolNames(t, anon)
	cat := catalogue(t, g)
	if len(names) != len(cat)+6 {
		t.Errorf("%d tools, want one per catalogue service (%d) and six: %v", len(names), len(cat), names)
	}
	for _, e := range cat {
		if name := e.Platform + "_" + strings.ReplaceAll(e.Service, ".", "_"); !slices.Contains(names, name) {
			t.Errorf("no tool %s for %s/%s", name, e.Platform, e.Service)
		}
	}
	isErr, list := mcpCall(t, anon, "list_services", nil)
	rest := g.do("GET", "/v1/services", "", nil)
	if isErr || !reflect.DeepEqual(list, rest.JSON) {
		t.Errorf("anonymous list_services differs from GET /v1/services: %v", list)
	}
	before := g.balance(key)
	args := map[string]any{"url": "https://www.linkedin.com/in/rbranson"}
	// Without a key a paid tool is refused at HTTP with the OAuth
	// challenge that starts a client's sign-in (OAUTH_CONTRACT rule 2).
	if _, err := anon.CallTool(t.Context(), &sdk.CallToolParams{Name: "pro_net_profile_info", Arguments: args}); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("anonymous extract: %v, want HTTP 401", err)
	}

	changed := make(chan struct{}, 10)
	cs := mcptest.Connect(t, g.URL+"/mcp", key, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	isErr, run := mcpCall(t, cs, "pro_net_profile_info", args)
	if isErr || run["status"] != "completed" {
		t.Fatalf("extract tool: %v", run)
	}
	runLikeREST(t, g, key, before, run, args)

	before = g.balance(key)
	calls := len(s.calls(t))
	if isErr, m := mcpCall(t, cs, "pro_net_company_info", map[string]any{"url": "kraft"}); !isErr || mcptest.ErrCode(m) != "invalid_input_format" {
		t.Errorf("bad input: isError=%v %v", isErr, m)
	}
	if after := g.balance(key); after != before || len(s.calls(t)) != calls {
		t.Errorf("a refused input charged %v or called upstream", before-after)
	}

	// A reload that adds a service adds its tool; the session outlives it.
	addProbe(t, svcDir)
	reload(t, g, filepath.Join(g.Dir, "Caddyfile"), true)
	forgetOpenAPI(g.URL)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed after the reload")
	}
	if names := mcptest.ToolNames(t, cs); !slices.Contains(names, testservices.ProbeTool) {
		t.Errorf("after the reload: %v", names)
	}
	if isErr, bal := mcpCall(t, cs, "get_balance", nil); isErr || num(bal["balance"]) != g.balance(key) {
		t.Errorf("get_balance after the reload: %v", bal)
	}
}

// runLikeREST checks the run of a pro_net_profile_info tool call with args
// against REST: billed once (balance before the call), the same run as GET
// /v1/extractions/{id} with a key of the account, and a REST call of the
// same input gives the same records for the same credits. It returns the
// credits the call used.
func runLikeREST(t *testing.T, g *gateway, key string, before float64, run, args map[string]any) float64 {
	t.Helper()
	used := num(run["credits_used"])
	if after := g.balance(key); used <= 0 || !near(before-after, used) {
		t.Errorf("balance moved by %v, want credits_used %v (billed once)", before-after, used)
	}
	got := g.do("GET", fmt.Sprintf("/v1/extractions/%v", run["id"]), key, nil)
	if got.Status != 200 || !reflect.DeepEqual(got.JSON, run) {
		t.Errorf("GET /v1/extractions/%v: %d %s", run["id"], got.Status, got.Body)
	}
	before = g.balance(key)
	r := g.do("POST", "/v1/extract/pro_net/profile.info", key, args)
	if r.Status != 200 || num(r.JSON["credits_used"]) != used || !near(before-g.balance(key), used) {
		t.Errorf("REST charged %v, the tool %v: %s", r.JSON["credits_used"], used, r.Body)
	}
	if !reflect.DeepEqual(mcptest.Records(r.JSON), mcptest.Records(run)) {
		t.Errorf("records differ:\nREST %v\ntool %v", r.JSON["data"], run["data"])
	}
	return used
}
