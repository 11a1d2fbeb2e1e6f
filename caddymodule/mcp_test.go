package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.uber.org/zap"

	"socialrouter/caddymodule/admin"
	"socialrouter/caddymodule/api"
	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/dashboard"
	"socialrouter/caddymodule/mcp"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/sources"
	badgerstore "socialrouter/caddymodule/store/badger"
	"socialrouter/cmd/upstream-sim/sim"
	"socialrouter/internal/mcptest"
	"socialrouter/services"
)

// mcpFixture is a gateway in process: the repository's services, the
// upstream simulator, a badger store and the real handler serving /v1 and
// /mcp, with one account (10 credits) and its key.
type mcpFixture struct {
	URL string
	app *App
	sim *sim.Sim
	key string
	log *lockedBuffer // the endpoint's log, JSON lines
}

// lockedBuffer is a log sink safe for the endpoint's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newMCPFixture(t *testing.T) *mcpFixture {
	t.Helper()
	reg, err := registry.LoadFS(services.FS)
	if err != nil {
		t.Fatal(err)
	}
	up := sim.New(sim.Options{})
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	clients := map[string]sources.Client{}
	for _, src := range reg.Sources {
		c, err := sources.New(src.Protocol, sources.Config{BaseURL: upSrv.URL, PollInterval: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		clients[src.ID] = c
	}
	st, err := badgerstore.Open(t.TempDir(), badgerstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	sh := &shared{breakers: router.NewBreakers(), inflight: api.NewInFlight()}
	a := &App{
		reg: reg, store: st, shared: sh, KeyPrefix: "sdr", MaxConcurrentRuns: 16, logger: zap.NewNop(),
		MCPOrigins: []string{"http://localhost:6274"},
		router:     router.New(router.Config{AttemptTimeout: 10 * time.Second, SoftTimeout: 5 * time.Second}, clients, sh.breakers, zap.NewNop()),
	}
	if a.tools, err = mcp.NewToolset(reg); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	a.mcp = mcp.NewEndpoint("test", slog.New(slog.NewJSONHandler(logs, nil)))
	t.Cleanup(func() { _ = a.mcp.Close() })
	a.startMCP()
	// The site as the Caddyfile builds it: sdr_dashboard (with the OAuth
	// endpoints) before social_router (with /mcp behind oauth.Guard).
	as := a.oauthServer(zap.NewNop())
	h := &Handler{api: a.API(zap.NewNop()), mcp: a.mcpHandler(zap.NewNop())}
	d := &Dashboard{Path: "/dashboard/", oauth: as, h: dashboard.New(dashboard.Config{
		Store: st, Registry: func() *registry.Registry { return reg }, KeyPrefix: "sdr", Path: "/dashboard/", OAuth: as,
	})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = d.ServeHTTP(w, r, caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			return h.ServeHTTP(w, r, caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
				http.NotFound(w, r)
				return nil
			}))
		}))
	}))
	t.Cleanup(srv.Close)

	now := time.Now().UTC()
	if _, err := st.CreateAccount(t.Context(), "acme", 10*credits.PerCredit, now); err != nil {
		t.Fatal(err)
	}
	secret, k, err := admin.NewKey("sdr", "acme", "mcp", nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateKey(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	return &mcpFixture{URL: srv.URL, app: a, sim: up, key: secret, log: logs}
}

// connect opens an MCP session on /mcp; key "" connects anonymously.
func (f *mcpFixture) connect(t *testing.T, key string) *sdk.ClientSession {
	t.Helper()
	return mcptest.Connect(t, f.URL+"/mcp", key, nil)
}

// rest calls the REST API and decodes the answer.
func (f *mcpFixture) rest(t *testing.T, method, path, key string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, f.URL+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (f *mcpFixture) balance(t *testing.T) credits.Micros {
	t.Helper()
	a, err := f.app.store.GetAccount(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	return a.Balance
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// toolError checks a tool error: isError with the REST envelope's code.
func toolErrorCode(t *testing.T, name string, res *sdk.CallToolResult, m map[string]any, code string) map[string]any {
	t.Helper()
	e, _ := m["error"].(map[string]any)
	if !res.IsError || e["code"] != code || e["message"] == "" || e["type"] == nil {
		t.Fatalf("%s: want a tool error with code %s, got isError=%v %v", name, code, res.IsError, m)
	}
	return e
}

// TestMCPAnonymous: the tool list, discovery without sign-in, and a paid
// tool refused without a key, charging and calling nothing.
func TestMCPAnonymous(t *testing.T) {
	f := newMCPFixture(t)
	cs := f.connect(t, "")

	names := mcptest.ToolNames(t, cs)
	want := []string{"get_balance", "get_run", "get_service", "get_usage", "list_services", "search"}
	for _, s := range f.app.reg.Services {
		if s.Callable() {
			want = append(want, mcp.ToolName(s))
		}
	}
	sort.Strings(names)
	sort.Strings(want)
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("tools/list: %v\nwant one per callable service and the six: %v", names, want)
	}

	res, m := mcptest.Call(t, cs, "list_services", nil)
	_, rest := f.rest(t, "GET", "/v1/services", "", nil)
	if res.IsError || !jsonEqual(t, mustMarshal(m), rest) {
		t.Errorf("list_services differs from GET /v1/services: %v", m)
	}
	res, m = mcptest.Call(t, cs, "list_services", map[string]any{"platform": "maps"})
	_, rest = f.rest(t, "GET", "/v1/services/maps", "", nil)
	if res.IsError || !jsonEqual(t, mustMarshal(m), rest) {
		t.Errorf("list_services(maps) differs from GET /v1/services/maps: %v", m)
	}
	res, m = mcptest.Call(t, cs, "get_service", map[string]any{"platform": "pro_net", "service": "profile.info"})
	_, rest = f.rest(t, "GET", "/v1/services/pro_net/profile.info", "", nil)
	if res.IsError || !jsonEqual(t, mustMarshal(m), rest) {
		t.Errorf("get_service differs from GET /v1/services/pro_net/profile.info: %v", m)
	}
	res, m = mcptest.Call(t, cs, "get_service", map[string]any{"platform": "pro_net", "service": "profile.infox"})
	if e := toolErrorCode(t, "get_service", res, m, "unknown_service"); e["did_you_mean"] != "profile.info" {
		t.Errorf("unknown_service without did_you_mean: %v", e)
	}
	res, m = mcptest.Call(t, cs, "get_service", map[string]any{"platform": "pro_net"})
	toolErrorCode(t, "get_service", res, m, "invalid_field")

	before := f.balance(t)
	for _, tc := range []struct {
		tool string
		args any
	}{
		{"pro_net_profile_info", map[string]any{"url": "https://www.linkedin.com/in/rbranson"}},
		{"search", map[string]any{"queries": []string{"coffee"}, "provider": "source_a/maps/place.search"}},
		{"get_balance", nil},
		{"get_run", map[string]any{"id": "ext_x"}},
		{"get_usage", nil},
	} {
		// Refused at HTTP with the OAuth challenge (oauth.Guard), so a
		// client learns where to sign in.
		if _, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args}); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Errorf("anonymous %s: %v, want HTTP 401", tc.tool, err)
		}
	}
	if after := f.balance(t); after != before || len(f.sim.Calls()) != 0 {
		t.Errorf("anonymous calls charged %s or called upstream %d times", before-after, len(f.sim.Calls()))
	}
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestMCPExtractBilledLikeREST: an extract tool call is billed once, its
// run is the one REST serves, and it gives the same records and charge as
// the REST call with the same input.
func TestMCPExtractBilledLikeREST(t *testing.T) {
	f := newMCPFixture(t)
	cs := f.connect(t, f.key)
	args := map[string]any{"url": "https://www.linkedin.com/in/rbranson"}

	before := f.balance(t)
	res, run := mcptest.Call(t, cs, "pro_net_profile_info", args)
	if res.IsError || run["status"] != "completed" || run["platform"] != "pro_net" || run["service"] != "profile.info" {
		t.Fatalf("extract tool: isError=%v %v", res.IsError, run)
	}
	used, err := credits.FromFloat(run["credits_used"].(float64))
	if err != nil || used <= 0 {
		t.Fatalf("credits_used %v", run["credits_used"])
	}
	if after := f.balance(t); before-after != used {
		t.Errorf("balance moved by %s, want credits_used %s", before-after, used)
	}
	id, _ := run["id"].(string)
	st, stored := f.rest(t, "GET", "/v1/extractions/"+id, f.key, nil)
	if st != 200 || !jsonEqual(t, stored, mustMarshal(run)) {
		t.Errorf("GET /v1/extractions/%s: %d, differs from the tool's answer:\n%s\n%v", id, st, stored, run)
	}
	res, got := mcptest.Call(t, cs, "get_run", map[string]any{"id": id})
	if res.IsError || !jsonEqual(t, mustMarshal(got), stored) {
		t.Errorf("get_run differs from GET /v1/extractions/%s: %v", id, got)
	}
	validateOutput(t, cs, "pro_net_profile_info", run)
	if line := `"tool":"pro_net_profile_info"`; !strings.Contains(f.log.String(), line) || !strings.Contains(f.log.String(), `"run_id":"`+id+`"`) {
		t.Errorf("no log line of the call with its run id %s:\n%s", id, f.log.String())
	}

	// The same input over REST: the same records and the same charge.
	before = f.balance(t)
	st, body := f.rest(t, "POST", "/v1/extract/pro_net/profile.info", f.key, args)
	var restRun map[string]any
	if st != 200 || json.Unmarshal(body, &restRun) != nil {
		t.Fatalf("REST extract: %d %s", st, body)
	}
	if restRun["credits_used"] != run["credits_used"] || restRun["served_by"] != run["served_by"] {
		t.Errorf("REST charged %v by %v, the tool %v by %v", restRun["credits_used"], restRun["served_by"], run["credits_used"], run["served_by"])
	}
	if after := f.balance(t); before-after != used {
		t.Errorf("REST moved the balance by %s, the tool by %s", before-after, used)
	}
	if !reflect.DeepEqual(mcptest.Records(restRun), mcptest.Records(run)) {
		t.Errorf("records differ:\nREST %v\ntool %v", restRun["data"], run["data"])
	}

	// The account tools answer what REST answers.
	for _, tc := range []struct {
		tool string
		args any
		path string
	}{
		{"get_balance", nil, "/v1/account/balance"},
		{"get_usage", map[string]any{"days": 7}, "/v1/account/usage?days=7"},
		{"get_usage", nil, "/v1/account/usage"},
	} {
		res, got := mcptest.Call(t, cs, tc.tool, tc.args)
		_, want := f.rest(t, "GET", tc.path, f.key, nil)
		if res.IsError || !jsonEqual(t, mustMarshal(got), want) {
			t.Errorf("%s %v: %v, REST %s", tc.tool, tc.args, got, want)
		}
		validateOutput(t, cs, tc.tool, got)
	}
	if u, _ := mcptest.Call(t, cs, "get_usage", nil); u.IsError {
		t.Fatal("get_usage failed")
	}
	_, usage := mcptest.Call(t, cs, "get_usage", nil)
	if usage["total_requests"] != float64(2) {
		t.Errorf("usage counts %v requests, want 2 (one tool call, one REST call)", usage["total_requests"])
	}
}

// TestMCPErrors: refused calls are tool errors with the REST code, charge
// nothing and call no upstream.
func TestMCPErrors(t *testing.T) {
	f := newMCPFixture(t)
	cs := f.connect(t, f.key)
	before := f.balance(t)
	for _, tc := range []struct {
		tool string
		args any
		code string
	}{
		{"pro_net_company_info", map[string]any{"url": "kraft"}, "invalid_input_format"},
		{"pro_net_company_info", map[string]any{"urls": []string{"https://www.linkedin.com/in/someone"}}, "invalid_input_format"},
		{"pro_net_company_info", map[string]any{"url": "https://www.linkedin.com/company/acme", "type": "company"}, "unknown_field"},
		{"pro_net_company_info", nil, "missing_input"},
		{"pro_net_profile_info", map[string]any{"url": "https://www.linkedin.com/in/x", "options": map[string]any{"includeEmail": "yes"}}, "invalid_option"},
		{"pro_net_profile_info", map[string]any{"url": "https://www.linkedin.com/in/x", "limit": 0}, "invalid_limit"},
		{"search", map[string]any{"queries": []string{"coffee"}}, "missing_provider"},
		{"get_run", map[string]any{"id": "ext_nope"}, "not_found"},
		{"get_usage", map[string]any{"days": 0}, "invalid_days"},
		{"get_usage", map[string]any{"days": "7"}, "invalid_days"},
	} {
		res, m := mcptest.Call(t, cs, tc.tool, tc.args)
		toolErrorCode(t, tc.tool, res, m, tc.code)
	}
	if after := f.balance(t); after != before || len(f.sim.Calls()) != 0 {
		t.Errorf("refused calls charged %s or called upstream %d times", before-after, len(f.sim.Calls()))
	}

	// An unknown key is refused when the client connects, with the
	// challenge an unknown access token gets (so the client signs in
	// again), not at its first tool call.
	req, _ := http.NewRequest(http.MethodPost, f.URL+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer sdr_live_nope")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("initialize with an unknown key: %d %q, want 401 with an invalid_token challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

// TestMCPSearch: the search tool runs a search as POST /v1/search does.
func TestMCPSearch(t *testing.T) {
	f := newMCPFixture(t)
	cs := f.connect(t, f.key)
	slugs := f.app.reg.SearchSlugs()
	if len(slugs) == 0 {
		t.Fatal("the services declare no search slug")
	}
	before := f.balance(t)
	res, run := mcptest.Call(t, cs, "search", map[string]any{"queries": []string{"coffee in Lisbon"}, "provider": slugs[0], "limit": 2})
	if res.IsError || run["kind"] != "search" || run["status"] != "completed" {
		t.Fatalf("search: %v", run)
	}
	used, _ := credits.FromFloat(run["credits_used"].(float64))
	if after := f.balance(t); before-after != used {
		t.Errorf("search moved the balance by %s, want %s", before-after, used)
	}
	validateOutput(t, cs, "search", run)
}

// validateOutput checks a structured result against the outputSchema the
// client was given for the tool (JSON Schema 2020-12).
func validateOutput(t *testing.T, cs *sdk.ClientSession, name string, got map[string]any) {
	t.Helper()
	var schema any
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == name {
			schema = tool.OutputSchema
		}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(mustMarshal(schema)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mem://"+name+".json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem://" + name + ".json")
	if err != nil {
		t.Fatalf("%s: output schema: %v", name, err)
	}
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(mustMarshal(got)))
	if err := s.Validate(inst); err != nil {
		t.Errorf("%s: the result does not match its output schema: %v", name, err)
	}
}

// TestMCPOrigin: /mcp as the site serves it refuses a browser page of a
// foreign web origin (403) and serves its own origin, a configured one
// (mcp_origins) and a client that sends no Origin.
func TestMCPOrigin(t *testing.T) {
	f := newMCPFixture(t)
	for _, tc := range []struct {
		origin string
		status int
	}{{"", 200}, {f.URL, 200}, {"http://localhost:6274", 200}, {"https://evil.example", 403}} {
		req, _ := http.NewRequest(http.MethodPost, f.URL+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("initialize from Origin %q: %d, want %d", tc.origin, resp.StatusCode, tc.status)
		}
	}
}
