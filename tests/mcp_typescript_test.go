package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"socialrouter/internal/testservices"
)

// tsClient is tests/mcpclient/flow.mjs running under Node: the official
// MCP TypeScript SDK's client against the gateway. It prints one JSON
// object per step; the test answers "await_reload" on its stdin.
type tsClient struct {
	t     *testing.T
	stdin io.WriteCloser
	steps chan map[string]any
	out   *syncBuffer // stderr, and stdout lines that are not steps
}

// mcpClientDir is the Node project of the client; `make mcpclient` (a
// dependency of `make test-e2e`) installs its locked packages.
func mcpClientDir(t *testing.T) (node, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found: the TypeScript client test needs Node 20 and npm: %v", err)
	}
	dir = filepath.Join(repoRoot, "tests", "mcpclient")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("the MCP TypeScript SDK is not installed in %s: run `make mcpclient` (%v)", dir, err)
	}
	return node, dir
}

func startTSClient(t *testing.T, env ...string) *tsClient {
	t.Helper()
	node, dir := mcpClientDir(t)
	cmd := exec.Command(node, filepath.Join(dir, "flow.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	c := &tsClient{t: t, steps: make(chan map[string]any, 32), out: &syncBuffer{}}
	cmd.Stderr = c.out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting node: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var step map[string]any
			if json.Unmarshal(sc.Bytes(), &step) != nil || step["step"] == nil {
				fmt.Fprintln(c.out, sc.Text())
				continue
			}
			c.steps <- step
		}
		close(c.steps)
	}()
	t.Cleanup(func() {
		_ = c.stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("node's stderr:\n%s", tail(c.out.String(), 40))
		}
	})
	return c
}

// next returns the client's next step, which must be want.
func (c *tsClient) next(want string) map[string]any {
	c.t.Helper()
	select {
	case step, ok := <-c.steps:
		if !ok {
			c.t.Fatalf("the client ended before step %q", want)
		}
		if step["step"] == "error" {
			c.t.Fatalf("the client failed before step %q: %v\nlast requests: %v", want, step["message"], step["requests"])
		}
		if step["step"] != want {
			c.t.Fatalf("step %v, want %q: %v", step["step"], want, step)
		}
		return step
	case <-time.After(2 * time.Minute):
		c.t.Fatalf("no step %q from the client in 2 minutes", want)
	}
	return nil
}

// wantTools is every tool the gateway should list: one per extract
// service of its catalogue, and the six fixed ones.
func wantTools(t *testing.T, g *gateway, extra ...string) []string {
	names := []string{"search", "list_services", "get_service", "get_run", "get_balance", "get_usage"}
	for _, e := range catalogue(t, g) {
		names = append(names, e.Platform+"_"+strings.ReplaceAll(e.Service, ".", "_"))
	}
	names = append(names, extra...)
	slices.Sort(names)
	return names
}

func sortedStrings(v any) []string {
	var out []string
	for _, s := range asList(v) {
		out = append(out, fmt.Sprint(s))
	}
	slices.Sort(out)
	return out
}

func asList(v any) []any         { l, _ := v.([]any); return l }
func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

// checkAnonymous: without credentials the client lists every tool and
// list_services answers what GET /v1/services does.
func checkAnonymous(t *testing.T, g *gateway, step map[string]any) {
	t.Helper()
	if got, want := sortedStrings(step["tools"]), wantTools(t, g); !reflect.DeepEqual(got, want) {
		t.Errorf("anonymous tools/list:\n got %v\nwant %v", got, want)
	}
	ls := asMap(step["list_services"])
	rest := g.do("GET", "/v1/services", "", nil)
	if ls["isError"] != false || ls["text_is_structured"] != true || !reflect.DeepEqual(ls["structured"], rest.JSON) {
		t.Errorf("anonymous list_services differs from GET /v1/services: %v", ls)
	}
}

// checkBilledCall: the extract tool answered a completed run with records
// (its text the same JSON) that is the REST run (runLikeREST). It returns
// the credits the call used.
func checkBilledCall(t *testing.T, g *gateway, key string, before float64, step map[string]any, args map[string]any) float64 {
	t.Helper()
	run := asMap(step["structured"])
	if step["isError"] != false || step["text_is_structured"] != true || run["status"] != "completed" || len(asList(run["data"])) == 0 {
		t.Fatalf("extract tool call: %v", step)
	}
	return runLikeREST(t, g, key, before, run, args)
}

var profileArgs = map[string]any{"url": "https://www.linkedin.com/in/rbranson"}

func toolEnv(g *gateway) []string {
	a, _ := json.Marshal(profileArgs)
	return []string{"SDR_MCP_URL=" + g.URL + "/mcp", "SDR_TOOL=pro_net_profile_info", "SDR_TOOL_ARGS=" + string(a)}
}

// TestMCPTypeScriptBearer runs the TypeScript SDK's client with an
// sdr_live_ key as bearer token: anonymous discovery, then tools/list and
// an extract call billed exactly like REST.
func TestMCPTypeScriptBearer(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("acme", 10)
	before := g.balance(key)

	c := startTSClient(t, append(toolEnv(g), "SDR_MCP_KEY="+key)...)
	checkAnonymous(t, g, c.next("anonymous"))
	if got, want := sortedStrings(c.next("tools")["tools"]), wantTools(t, g); !reflect.DeepEqual(got, want) {
		t.Errorf("tools/list with a key:\n got %v\nwant %v", got, want)
	}
	checkBilledCall(t, g, key, before, c.next("call"), profileArgs)
	c.next("done")
}

// wire is one request the client logged: who made it (the SDK or the
// browser), method, path and status.
type wire struct {
	By, Method, Path string
	Status           int
}

func wires(t *testing.T, v any) []wire {
	t.Helper()
	b, _ := json.Marshal(v)
	var out []wire
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("requests %s: %v", b, err)
	}
	return out
}

// inOrder reports whether want happened in this order in got (other
// requests may come between).
func inOrder(got, want []wire) bool {
	i := 0
	for _, w := range got {
		if i < len(want) && w == want[i] {
			i++
		}
	}
	return i == len(want)
}

// joinMember invites email to account and accepts the invitation with
// password, as the member's browser would.
func joinMember(t *testing.T, g *gateway, account, email, password string) {
	t.Helper()
	st, b := g.admin("POST", "/sdr/accounts/"+account+"/members", map[string]any{"email": email})
	if st != 201 {
		t.Fatalf("inviting: %d %s", st, b)
	}
	var inv struct{ Token string }
	_ = json.Unmarshal(b, &inv)
	// The link is /dashboard/invite#<token>: its page posts the token
	// from the fragment in the form.
	r, err := http.PostForm(g.URL+"/dashboard/invite", url.Values{"token": {inv.Token}, "password": {password}, "password_confirm": {password}})
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("accepting the invitation: %d", r.StatusCode)
	}
}

// TestMCPTypeScriptOAuth runs the TypeScript SDK's client through the
// whole OAuth sign-in (OAUTH_CONTRACT.md): a paid call without sign-in is
// a 401 that starts discovery, registration, the dashboard's sign-in and
// consent (played by fetch in the client's provider) and the token
// exchange; signed in, an extract call is billed like REST; a reload adds
// a tool and notifies the client; refresh rotates the tokens; revoking the
// grant on the dashboard makes the next call a 401.
func TestMCPTypeScriptOAuth(t *testing.T) {
	s := startSim(t)
	svcDir := copyServices(t)
	c := defaultConfig(t, s)
	c.Services = svcDir
	c.SiteExtra = "sdr_dashboard"
	g := startGateway(t, c)
	key := g.account("acme", 10)
	const email, password = "alice@example.com", "a long enough password"
	joinMember(t, g, "acme", email, password)

	prm := g.do("GET", "/.well-known/oauth-protected-resource/mcp", "", nil)
	if prm.Status != 200 || prm.JSON["resource"] != g.URL+"/mcp" {
		t.Fatalf("GET /.well-known/oauth-protected-resource/mcp answered %d %q, not the protected resource metadata of %s/mcp: "+
			"the gateway does not implement the OAuth sign-in for /mcp (issue 14, part 3)", prm.Status, prm.Body, g.URL)
	}
	before := g.balance(key)
	tc := startTSClient(t, append(toolEnv(g), "SDR_EMAIL="+email, "SDR_PASSWORD="+password, "SDR_CREDIT_LIMIT=5")...)
	checkAnonymous(t, g, tc.next("anonymous"))

	// The refused paid call, discovery, registration, sign-in, consent.
	step := tc.next("authorize")
	if !inOrder(wires(t, step["requests"]), []wire{
		{"sdk", "POST", "/mcp", 401},
		{"sdk", "GET", "/.well-known/oauth-protected-resource/mcp", 200},
		{"sdk", "GET", "/.well-known/oauth-authorization-server", 200},
		{"sdk", "POST", "/oauth/register", 201},
		{"browser", "GET", "/oauth/authorize", 303},
		{"browser", "GET", "/dashboard/signin", 200},
		{"browser", "POST", "/dashboard/signin", 303},
		{"browser", "GET", "/oauth/authorize", 200},
		{"browser", "POST", "/oauth/authorize", 303},
	}) {
		t.Errorf("the authorization went otherwise: %v", step["requests"])
	}
	if id := asMap(step["client"])["client_id"]; id == nil || id == "" {
		t.Errorf("registration gave no client_id: %v", step["client"])
	}
	visit := asMap(step["visit"])
	params := asMap(visit["params"])
	consent := asMap(visit["consent"])
	for what, ok := range map[string]bool{
		"PKCE S256":                         params["code_challenge_method"] == "S256" && params["code_challenge"] != nil,
		"resource " + g.URL + "/mcp":        params["resource"] == g.URL+"/mcp",
		"signed in on the dashboard":        visit["signed_in"] == true && visit["signin"] == "/dashboard/signin",
		"consent: one post form":            consent["post_forms"] == 1.0 && consent["action"] == "/oauth/authorize",
		"consent names the client":          consent["names_client"] == true,
		"consent allow and deny":            reflect.DeepEqual(sortedStrings(consent["decisions"]), []string{"allow", "deny"}),
		"consent credit_limit input":        consent["credit_limit_input"] == true,
		"state and iss on the redirect":     visit["state_ok"] == true && visit["iss"] == g.URL,
		"code sent to the registered redir": visit["has_code"] == true && visit["redirect"] == "http://127.0.0.1:33418/callback",
	} {
		if !ok {
			t.Errorf("authorization: not %s: %v", what, visit)
		}
	}
	step = tc.next("token")
	if !inOrder(wires(t, step["requests"]), []wire{{"sdk", "POST", "/oauth/token", 200}}) ||
		!strings.EqualFold(fmt.Sprint(step["token_type"]), "bearer") || step["access_prefix"] != "sdr_oat_" ||
		step["refresh_prefix"] != "sdr_ort_" || step["scope"] != "mcp" || num(step["expires_in"]) <= 0 {
		t.Errorf("token: %v", step)
	}

	// Signed in: every tool, and an extract billed once, as REST bills it.
	if got, want := sortedStrings(tc.next("tools")["tools"]), wantTools(t, g); !reflect.DeepEqual(got, want) {
		t.Errorf("tools/list signed in:\n got %v\nwant %v", got, want)
	}
	used := checkBilledCall(t, g, key, before, tc.next("call"), profileArgs)

	// A reload with one more service: the client is told and lists it.
	tc.next("await_reload")
	addProbe(t, svcDir)
	reload(t, g, filepath.Join(g.Dir, "Caddyfile"), true)
	forgetOpenAPI(g.URL)
	if _, err := io.WriteString(tc.stdin, "reloaded\n"); err != nil {
		t.Fatal(err)
	}
	if got, want := sortedStrings(tc.next("list_changed")["tools"]), wantTools(t, g); !reflect.DeepEqual(got, want) || !slices.Contains(got, testservices.ProbeTool) {
		t.Errorf("tools/list after the reload:\n got %v\nwant %v (with the probe tool)", got, want)
	}

	// Refresh through the SDK: new tokens that work.
	step = tc.next("refresh")
	bal := asMap(step["balance"])
	if step["result"] != "AUTHORIZED" || step["new_access"] != true || step["new_refresh"] != true ||
		!inOrder(wires(t, step["requests"]), []wire{{"sdk", "POST", "/oauth/token", 200}}) ||
		bal["isError"] != false || num(asMap(bal["structured"])["balance"]) != g.balance(key) {
		t.Errorf("refresh: %v", step)
	}

	// Revoked on the dashboard: the next call is an HTTP 401.
	step = tc.next("revoked")
	listed, raw := asMap(step["listed"]), asMap(step["raw"])
	// Its row names the client, its spend (the one call) and the limit
	// set on the consent page.
	spent := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.6f", used), "0"), ".")
	if row := fmt.Sprint(listed["row"]); listed["forms"] != 1.0 || !strings.Contains(row, "sdr-ts-e2e") ||
		!strings.Contains(row, spent) || !regexp.MustCompile(`\b5 per day\b`).MatchString(row) {
		t.Errorf("the keys page lists the grant otherwise (want sdr-ts-e2e, %s spent, 5 per day): %v", spent, listed)
	}
	if st := num(step["revoke_status"]); st < 200 || st >= 400 {
		t.Errorf("posting the revoke form: %v", st)
	}
	wantAuth := `resource_metadata="` + g.URL + `/.well-known/oauth-protected-resource/mcp"`
	if raw["status"] != 401.0 || !strings.Contains(fmt.Sprint(raw["www_authenticate"]), wantAuth) ||
		!strings.Contains(fmt.Sprint(raw["www_authenticate"]), `error="invalid_token"`) {
		t.Errorf("a call with the revoked grant's token: %v, want 401 with %s and error=\"invalid_token\"", raw, wantAuth)
	}
	if step["sdk_error"] == nil || !inOrder(wires(t, step["requests"]), []wire{{"sdk", "POST", "/mcp", 401}}) {
		t.Errorf("the SDK's next call after the revoke: %v %v", step["sdk_error"], step["requests"])
	}

	// A second grant (consent only: still signed in); refresh rotates,
	// the old refresh token is refused and its reuse ends the grant.
	step = tc.next("rotation")
	visit = asMap(step["visit"])
	refused, after := asMap(step["old_refresh_refused"]), asMap(step["after_reuse"])
	for what, ok := range map[string]bool{
		"redirect then token":       reflect.DeepEqual(step["results"], []any{"REDIRECT", "AUTHORIZED"}),
		"consent without sign-in":   visit["signed_in"] == false && visit["has_code"] == true,
		"the new grant works":       asMap(step["balance"])["isError"] == false,
		"new tokens on refresh":     step["new_access"] == true && step["new_refresh"] == true,
		"old refresh invalid_grant": refused["code"] == "invalid_grant",
		"reuse revokes the grant":   after["status"] == 401.0,
	} {
		if !ok {
			t.Errorf("rotation: not %s: %v", what, step)
		}
	}
	tc.next("done")
}
