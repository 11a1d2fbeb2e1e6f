package oauth

import (
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"socialrouter/caddymodule/store"
)

func TestGuard(t *testing.T) {
	f := newFixture(t)
	client := f.register(t)
	access, _ := f.tokens(t, client)
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b) // the SDK handler must still read the whole body
	})
	srv := httptest.NewServer(f.s.Guard(echo, func(tool string) bool { return tool == "list_services" }))
	t.Cleanup(srv.Close)
	live, revoked := f.apiKey(t, "live", false), f.apiKey(t, "revoked", true)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`
	// Requests name the fixture's host, the resource the tokens are for.
	host := strings.TrimPrefix(f.url, "http://")
	meta := `Bearer resource_metadata="` + f.url + `/.well-known/oauth-protected-resource/mcp"`
	call := func(tool string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
	}
	for _, tc := range []struct {
		name, auth, body string
		status           int
		challenge        string
		host             string
		code             string // the error envelope's code of a refusal
	}{
		{"initialize", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, 200, "", "", ""},
		{"tools/list", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, 200, "", "", ""},
		{"anonymous tool", "", call("list_services"), 200, "", "", ""},
		{"paid tool", "", call("get_balance"), 401, meta, "", "missing_token"},
		{"paid tool in a batch", "", "[" + call("list_services") + "," + call("get_balance") + "]", 401, meta, "", "missing_token"},
		{"not JSON-RPC", "", `nonsense`, 200, "", "", ""},
		{"API key", "Bearer " + live, call("get_balance"), 200, "", "", ""},
		{"API key at initialize", "Bearer " + live, initialize, 200, "", "", ""},
		// A bearer shaped like a key is looked up at once, as an access
		// token is: a client holding a revoked or unknown key is told to
		// sign in again when it connects, not when its first tool fails.
		{"unknown API key", "Bearer sdr_live_xxxxxxxx", initialize, 401, meta + `, error="invalid_token"`, "", "invalid_token"},
		{"revoked API key", "Bearer " + revoked, initialize, 401, meta + `, error="invalid_token"`, "", "invalid_token"},
		{"access token", "Bearer " + access, call("get_balance"), 200, "", "", ""},
		{"unknown token", "Bearer sdr_oat_nope", call("list_services"), 401, meta + `, error="invalid_token"`, "", "invalid_token"},
		{"other scheme", "Basic eDp5", call("list_services"), 401, meta, "", "missing_token"},
		{"bearer without a token", "Bearer ", call("list_services"), 400, meta + `, error="invalid_request"`, "", "invalid_request"},
		{"token of another resource", "Bearer " + access, call("list_services"), 401,
			`Bearer resource_metadata="http://other.example/.well-known/oauth-protected-resource/mcp", error="invalid_token"`, "other.example", "invalid_token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(tc.body))
			req.Host = host
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || resp.Header.Get("WWW-Authenticate") != tc.challenge {
				t.Fatalf("%d %q, want %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tc.status, tc.challenge)
			}
			if tc.status == 200 && string(b) != tc.body {
				t.Errorf("the handler read %q, want the whole body", b)
			}
			if tc.status != 200 && (resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(b), `"code":"`+tc.code+`"`)) {
				t.Errorf("refusal body %s, want the error envelope with code %s", b, tc.code)
			}
		})
	}
	// The streamable HTTP transport's GET (the SSE stream) and DELETE (end
	// of session) are held to the token as POST is: an expired token gets
	// the 401 on which a client refreshes.
	for _, expired := range []bool{false, true} {
		if expired {
			f.now = f.now.Add(AccessTTL)
		}
		for _, method := range []string{"GET", "DELETE"} {
			req, _ := http.NewRequest(method, srv.URL+"/mcp", nil)
			req.Host = host
			req.Header.Set("Authorization", "Bearer "+access)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want, challenge := 200, ""
			if expired {
				want, challenge = 401, meta+`, error="invalid_token"`
			}
			if resp.StatusCode != want || resp.Header.Get("WWW-Authenticate") != challenge {
				t.Errorf("%s, expired %v: %d %q, want %d %q", method, expired, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want, challenge)
			}
		}
	}
}

// TestGuardStoreDown: a token that cannot be checked because the store is
// unreachable is 503 store_unavailable, neither passed on nor called
// invalid (which would make the client drop a good token).
func TestGuardStoreDown(t *testing.T) {
	f := newFixture(t)
	access, _ := f.tokens(t, f.register(t))
	passed := false
	srv := httptest.NewServer(f.s.Guard(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { passed = true }), func(string) bool { return false }))
	t.Cleanup(srv.Close)
	if err := f.st.Close(); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Host = strings.TrimPrefix(f.url, "http://")
	req.Header.Set("Authorization", "Bearer "+access)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), `"code":"store_unavailable"`) || passed {
		t.Errorf("store down: %d %s (passed on: %v), want 503 store_unavailable", resp.StatusCode, b, passed)
	}
}

// TestGuardHandsOnGrant: the grant of a verified access token reaches the
// handler as the SDK's TokenInfo (so a tool call need not look the token
// up again); an API key or no token carries none.
func TestGuardHandsOnGrant(t *testing.T) {
	f := newFixture(t)
	access, _ := f.tokens(t, f.register(t))
	var got store.Key
	var ok bool
	srv := httptest.NewServer(f.s.Guard(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got, ok = Grant(auth.TokenInfoFromContext(r.Context()))
	}), func(string) bool { return true }))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name, auth string
		want       bool
	}{
		{"access token", "Bearer " + access, true},
		{"API key", "Bearer " + f.apiKey(t, "k", false), false},
		{"anonymous", "", false},
	} {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Host = strings.TrimPrefix(f.url, "http://")
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		got, ok = store.Key{}, false
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || ok != tc.want || (tc.want && (got.Kind != store.KindOAuth || got.AccountID != "acme")) {
			t.Errorf("%s: %d, grant %+v (%v), want a grant: %v", tc.name, resp.StatusCode, got, ok, tc.want)
		}
	}
}

// apiKey stores an API key of acme (revoked if asked) and returns its
// secret.
func (f *fixture) apiKey(t *testing.T, name string, revoked bool) string {
	t.Helper()
	secret := "sdr_live_" + name + "0123456789abcdefghij"
	k := store.Key{ID: "key_" + name, AccountID: "acme", Name: name, Hash: sha256.Sum256([]byte(secret)), Display: "sdr_live_…" + name, CreatedAt: f.now}
	if err := f.st.CreateKey(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	if revoked {
		if _, err := f.st.RevokeKey(t.Context(), k.ID, f.now); err != nil {
			t.Fatal(err)
		}
	}
	return secret
}
