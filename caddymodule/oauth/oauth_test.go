package oauth

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
	badgerstore "socialrouter/caddymodule/store/badger"
)

// fixture is the server over a real (badger) store with a clock the test
// moves, served over HTTP, with one account.
type fixture struct {
	s   *Server
	st  store.Store
	now time.Time
	url string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st, err := badgerstore.Open(t.TempDir(), badgerstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	f := &fixture{st: st, now: time.Now().UTC()}
	f.s = &Server{Store: st, KeyPrefix: "sdr", Now: func() time.Time { return f.now }}
	srv := httptest.NewServer(f.s)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	if _, err := st.CreateAccount(t.Context(), "acme", 10*credits.PerCredit, f.now); err != nil {
		t.Fatal(err)
	}
	return f
}

// post sends a form (or JSON when body is a string) and decodes the answer.
func (f *fixture) post(t *testing.T, path string, form url.Values, body string) (int, map[string]any) {
	t.Helper()
	var resp *http.Response
	var err error
	if form != nil {
		resp, err = http.PostForm(f.url+path, form)
	} else {
		resp, err = http.Post(f.url+path, "application/json", strings.NewReader(body))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

const redirect = "http://127.0.0.1:9/cb"

// register registers a client and returns its id.
func (f *fixture) register(t *testing.T) string {
	t.Helper()
	status, m := f.post(t, PathRegister, nil, `{"redirect_uris":["`+redirect+`"],"client_name":"Test client","token_endpoint_auth_method":"none"}`)
	if status != http.StatusCreated || m["client_id"] == nil {
		t.Fatalf("register: %d %v", status, m)
	}
	return m["client_id"].(string)
}

// request is an authorize request as a client sends it, to this server.
func (f *fixture) request(client string, v url.Values) *http.Request {
	q := url.Values{"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirect},
		"code_challenge": {pkceChallenge(verifier)}, "code_challenge_method": {"S256"}, "state": {"st"},
		"resource": {f.url + "/mcp"}, "scope": {"mcp"}}
	for k, vals := range v {
		q[k] = vals
	}
	return httptest.NewRequest("GET", f.url+PathAuthorize+"?"+q.Encode(), nil)
}

const verifier = "a-verifier-of-enough-length-0123456789-abcdefgh"

func pkceChallenge(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// code runs the authorize step for the member of acme, with a limit.
func (f *fixture) code(t *testing.T, client string, limit *store.CreditLimit) string {
	t.Helper()
	r := f.request(client, nil)
	a, err := f.s.ParseAuthorize(t.Context(), r, r.URL.Query())
	if err != nil {
		t.Fatalf("ParseAuthorize: %v", err)
	}
	to, err := f.s.Approve(t.Context(), a, "acme", limit)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(to)
	q := u.Query()
	if q.Get("state") != "st" || q.Get("iss") != f.url || !strings.HasPrefix(to, redirect+"?") {
		t.Fatalf("approve redirect %s", to)
	}
	return q.Get("code")
}

// exchange redeems a code with the verifier.
func (f *fixture) exchange(t *testing.T, client, code, verifier string) (int, map[string]any) {
	t.Helper()
	return f.post(t, PathToken, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {client},
		"redirect_uri": {redirect}, "code_verifier": {verifier}, "resource": {f.url + "/mcp"}}, "")
}

// tokens runs the flow to a token pair.
func (f *fixture) tokens(t *testing.T, client string) (access, refresh string) {
	t.Helper()
	status, m := f.exchange(t, client, f.code(t, client, nil), verifier)
	if status != http.StatusOK {
		t.Fatalf("exchange: %d %v", status, m)
	}
	return m["access_token"].(string), m["refresh_token"].(string)
}

// valid reports whether an access token authenticates on /mcp.
func (f *fixture) valid(t *testing.T, access string) bool {
	t.Helper()
	_, err := f.s.VerifyToken(t.Context(), access, f.url+"/mcp")
	if err != nil && !errors.Is(err, ErrInvalidToken) {
		t.Fatal(err)
	}
	return err == nil
}

func TestMetadata(t *testing.T) {
	f := newFixture(t)
	for _, path := range []string{PathResourceMeta, PathResourceMeta + "/mcp"} {
		resp, err := http.Get(f.url + path)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		want := map[string]any{"resource": f.url + "/mcp", "authorization_servers": []any{f.url}, "scopes_supported": []any{"mcp"},
			"bearer_methods_supported": []any{"header"}, "resource_name": "Social Data Router"}
		if resp.StatusCode != 200 || !jsonEqual(m, want) {
			t.Errorf("GET %s: %d %v", path, resp.StatusCode, m)
		}
	}
	resp, err := http.Get(f.url + PathServerMeta)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	want := map[string]any{"issuer": f.url, "authorization_endpoint": f.url + "/oauth/authorize", "token_endpoint": f.url + "/oauth/token",
		"registration_endpoint": f.url + "/oauth/register", "revocation_endpoint": f.url + "/oauth/revoke",
		"response_types_supported": []any{"code"}, "grant_types_supported": []any{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported": []any{"S256"}, "token_endpoint_auth_methods_supported": []any{"none"},
		"revocation_endpoint_auth_methods_supported": []any{"none"}, "scopes_supported": []any{"mcp"},
		"authorization_response_iss_parameter_supported": true}
	if resp.StatusCode != 200 || !jsonEqual(m, want) {
		t.Errorf("AS metadata: %d %v", resp.StatusCode, m)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestRegister(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"https", `{"redirect_uris":["https://app.example/cb"],"client_name":"A"}`, 201, ""},
		{"loopback ip", `{"redirect_uris":["http://127.0.0.1:33418/cb"],"token_endpoint_auth_method":"none"}`, 201, ""},
		{"localhost", `{"redirect_uris":["http://localhost:6274/oauth/callback"],"grant_types":["authorization_code","refresh_token"],"response_types":["code"]}`, 201, ""},
		{"ipv6 loopback", `{"redirect_uris":["http://[::1]:8080/cb"]}`, 201, ""},
		{"http elsewhere", `{"redirect_uris":["http://app.example/cb"]}`, 400, "invalid_redirect_uri"},
		{"custom scheme", `{"redirect_uris":["myapp://cb"]}`, 400, "invalid_redirect_uri"},
		{"fragment", `{"redirect_uris":["https://app.example/cb#x"]}`, 400, "invalid_redirect_uri"},
		{"relative", `{"redirect_uris":["/cb"]}`, 400, "invalid_redirect_uri"},
		{"none", `{"redirect_uris":[]}`, 400, "invalid_redirect_uri"},
		{"long redirect", `{"redirect_uris":["https://app.example/` + strings.Repeat("a", 2000) + `"]}`, 400, "invalid_redirect_uri"},
		{"eleven redirects", `{"redirect_uris":["https://app.example/cb"` + strings.Repeat(`,"https://app.example/cb"`, 10) + `]}`, 400, "invalid_redirect_uri"},
		{"long name", `{"redirect_uris":["https://app.example/cb"],"client_name":"` + strings.Repeat("n", 101) + `"}`, 400, "invalid_client_metadata"},
		{"too big", `{"redirect_uris":["https://app.example/cb"],"client_uri":"https://app.example/` + strings.Repeat("a", 16<<10) + `"}`, 400, "invalid_client_metadata"},
		{"confidential", `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`, 400, "invalid_client_metadata"},
		{"implicit", `{"redirect_uris":["https://app.example/cb"],"grant_types":["implicit"]}`, 400, "invalid_client_metadata"},
		{"token response", `{"redirect_uris":["https://app.example/cb"],"response_types":["token"]}`, 400, "invalid_client_metadata"},
		{"not json", `redirect_uris=x`, 400, "invalid_client_metadata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, m := f.post(t, PathRegister, nil, tc.body)
			if status != tc.status || (tc.code != "" && m["error"] != tc.code) {
				t.Fatalf("%d %v, want %d %s", status, m, tc.status, tc.code)
			}
			if tc.status == 201 && (m["token_endpoint_auth_method"] != "none" || !strings.HasPrefix(m["client_id"].(string), "client_") || m["client_id_issued_at"] == nil) {
				t.Errorf("registration answer %v", m)
			}
		})
	}
}

func TestAuthorizeRequest(t *testing.T) {
	f := newFixture(t)
	client := f.register(t)
	for _, tc := range []struct {
		name     string
		v        url.Values
		redirect bool
		code     string
	}{
		{"ok", nil, false, ""},
		{"unknown client", url.Values{"client_id": {"client_nope"}}, false, "invalid_client"},
		{"unregistered redirect", url.Values{"redirect_uri": {"https://evil.example/cb"}}, false, "invalid_request"},
		{"no PKCE", url.Values{"code_challenge": {""}, "code_challenge_method": {""}}, true, "invalid_request"},
		{"plain PKCE", url.Values{"code_challenge_method": {"plain"}}, true, "invalid_request"},
		{"short challenge", url.Values{"code_challenge": {"abc"}}, true, "invalid_request"},
		{"other resource", url.Values{"resource": {"https://other.example/mcp"}}, true, "invalid_target"},
		{"token response", url.Values{"response_type": {"token"}}, true, "unsupported_response_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.request(client, tc.v)
			a, err := f.s.ParseAuthorize(t.Context(), r, r.URL.Query())
			var ae *AuthError
			switch {
			case tc.code == "":
				if err != nil || a.Resource != f.url+"/mcp" || a.Client.Name != "Test client" || a.RedirectHost() != "127.0.0.1:9" {
					t.Fatalf("%+v, %v", a, err)
				}
			case !errors.As(err, &ae) || ae.Code != tc.code || ae.Redirect != tc.redirect:
				t.Fatalf("error %v, want %s (redirect %v)", err, tc.code, tc.redirect)
			case tc.redirect:
				u, _ := url.Parse(ErrorURL(a, ae))
				if q := u.Query(); q.Get("error") != tc.code || q.Get("state") != "st" || u.Host != "127.0.0.1:9" {
					t.Errorf("error redirect %s", u)
				}
			}
		})
	}
}

func TestCodeExchange(t *testing.T) {
	f := newFixture(t)
	client := f.register(t)
	other := f.register(t)
	limit := &store.CreditLimit{Period: store.PeriodDay, Credits: credits.PerCredit}

	code := f.code(t, client, limit)
	status, m := f.exchange(t, client, code, verifier)
	if status != 200 || m["token_type"] != "Bearer" || m["expires_in"] != float64(3600) || m["scope"] != "mcp" ||
		!strings.HasPrefix(m["access_token"].(string), "sdr_oat_") || !strings.HasPrefix(m["refresh_token"].(string), "sdr_ort_") {
		t.Fatalf("exchange: %d %v", status, m)
	}
	access := m["access_token"].(string)
	g, err := f.s.VerifyToken(t.Context(), access, f.url+"/mcp")
	if err != nil || g.Kind != store.KindOAuth || g.AccountID != "acme" || g.Name != "Test client" || g.CreditLimit == nil || *g.CreditLimit != *limit {
		t.Fatalf("grant %+v, %v", g, err)
	}
	if f.valid(t, access) && func() bool {
		_, err := f.s.VerifyToken(t.Context(), access, "https://other.example/mcp")
		return err == nil
	}() {
		t.Errorf("the token is accepted for another resource")
	}
	// A second use of a code is a replay: refused, and its grant revoked.
	if status, m := f.exchange(t, client, code, verifier); status != 400 || m["error"] != "invalid_grant" {
		t.Errorf("code reused: %d %v", status, m)
	}
	if f.valid(t, access) {
		t.Errorf("the access token of a replayed code still works")
	}

	for _, tc := range []struct {
		name   string
		client string
		verif  string
		form   url.Values
		wait   time.Duration
		status int
		code   string
	}{
		{"wrong verifier", client, verifier + "x", nil, 0, 400, "invalid_grant"},
		{"no verifier", client, "", nil, 0, 400, "invalid_request"},
		{"other client", other, verifier, nil, 0, 400, "invalid_grant"},
		{"other resource", client, verifier, url.Values{"resource": {"https://other.example/mcp"}}, 0, 400, "invalid_target"},
		{"other redirect", client, verifier, url.Values{"redirect_uri": {"http://127.0.0.1:9/other"}}, 0, 400, "invalid_grant"},
		{"redirect prefix", client, verifier, url.Values{"redirect_uri": {"http://127.0.0.1:9/cbx"}}, 0, 400, "invalid_grant"},
		{"redirect left out", client, verifier, url.Values{"redirect_uri": {""}}, 0, 400, "invalid_grant"},
		{"expired", client, verifier, nil, CodeTTL, 400, "invalid_grant"},
		{"unknown grant type", client, verifier, url.Values{"grant_type": {"password"}}, 0, 400, "unsupported_grant_type"},
		{"unregistered client", "client_nope", verifier, nil, 0, 401, "invalid_client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := f.code(t, client, nil)
			f.now = f.now.Add(tc.wait)
			form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {tc.client},
				"redirect_uri": {redirect}, "code_verifier": {tc.verif}}
			for k, v := range tc.form {
				form[k] = v
			}
			if status, m := f.post(t, PathToken, form, ""); status != tc.status || m["error"] != tc.code || m["error_description"] == "" {
				t.Errorf("%d %v, want %d %s", status, m, tc.status, tc.code)
			}
		})
	}
}

func TestRefreshRotation(t *testing.T) {
	f := newFixture(t)
	client := f.register(t)
	access, refresh := f.tokens(t, client)
	rotate := func(tok string) (int, map[string]any) {
		return f.post(t, PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok}, "client_id": {client}}, "")
	}
	status, m := rotate(refresh)
	if status != 200 || m["refresh_token"] == refresh || m["access_token"] == access {
		t.Fatalf("refresh: %d %v", status, m)
	}
	access2, refresh2 := m["access_token"].(string), m["refresh_token"].(string)
	if !f.valid(t, access) || !f.valid(t, access2) {
		t.Errorf("access tokens stop at a rotation; they should live out their hour")
	}
	// The rotated token presented again: someone else holds it, so the
	// whole grant goes, the newest tokens included.
	if status, m := rotate(refresh); status != 400 || m["error"] != "invalid_grant" {
		t.Errorf("reused refresh token: %d %v", status, m)
	}
	if f.valid(t, access2) {
		t.Errorf("the grant survives a refresh token replay")
	}
	if status, m := rotate(refresh2); status != 400 || m["error"] != "invalid_grant" {
		t.Errorf("refresh of a revoked grant: %d %v", status, m)
	}
	// A registration that lapsed: invalid_client, 401, so the client
	// registers again rather than retrying its client_id.
	if status, m := f.post(t, PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh2}, "client_id": {"client_nope"}}, ""); status != 401 || m["error"] != "invalid_client" {
		t.Errorf("refresh with an unknown client: %d %v", status, m)
	}
}

func TestExpiry(t *testing.T) {
	f := newFixture(t)
	client := f.register(t)
	access, refresh := f.tokens(t, client)
	f.now = f.now.Add(AccessTTL - time.Second)
	if !f.valid(t, access) {
		t.Fatalf("access token refused before its hour")
	}
	f.now = f.now.Add(time.Second)
	if f.valid(t, access) {
		t.Errorf("access token accepted after its hour")
	}
	f.now = f.now.Add(RefreshTTL)
	if status, m := f.post(t, PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {client}}, ""); status != 400 || m["error"] != "invalid_grant" {
		t.Errorf("expired refresh token: %d %v", status, m)
	}
}

func TestRevoke(t *testing.T) {
	f := newFixture(t)
	client := f.register(t)
	for _, which := range []string{"access", "refresh"} {
		t.Run(which, func(t *testing.T) {
			access, refresh := f.tokens(t, client)
			tok := map[string]string{"access": access, "refresh": refresh}[which]
			if status, _ := f.post(t, PathRevoke, url.Values{"token": {tok}, "client_id": {client}}, ""); status != 200 {
				t.Fatalf("revoke: %d", status)
			}
			if f.valid(t, access) {
				t.Errorf("access token works after revoking the %s token", which)
			}
		})
	}
	if status, _ := f.post(t, PathRevoke, url.Values{"token": {"sdr_oat_unknown"}}, ""); status != 200 {
		t.Errorf("revoking an unknown token: %d, want 200", status)
	}
	access, _ := f.tokens(t, client)
	if status, _ := f.post(t, PathRevoke, url.Values{"token": {access}, "client_id": {"client_other"}}, ""); status != 200 || !f.valid(t, access) {
		t.Errorf("another client revoked a token: %d", status)
	}
}

// TestTokenRequestForm holds the token and revocation endpoints to their
// one body format, and every token answer, refusals too, to no-store.
func TestTokenRequestForm(t *testing.T) {
	f := newFixture(t)
	client := f.register(t)
	for _, tc := range []struct {
		name, path, ctype, body string
		status                  int
		code                    string
	}{
		{"json body", PathToken, "application/json", `{"grant_type":"refresh_token","refresh_token":"x","client_id":"` + client + `"}`, 400, "invalid_request"},
		{"no content type", PathToken, "", "grant_type=refresh_token&refresh_token=x&client_id=" + client, 400, "invalid_request"},
		{"repeated parameter", PathToken, "application/x-www-form-urlencoded", "grant_type=refresh_token&refresh_token=x&refresh_token=y&client_id=" + client, 400, "invalid_request"},
		{"form with charset", PathToken, "application/x-www-form-urlencoded; charset=utf-8", "grant_type=refresh_token&refresh_token=x&client_id=" + client, 400, "invalid_grant"},
		{"revoke json", PathRevoke, "application/json", `{"token":"x"}`, 400, "invalid_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", f.url+tc.path, strings.NewReader(tc.body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var m map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&m)
			if resp.StatusCode != tc.status || m["error"] != tc.code {
				t.Errorf("%d %v, want %d %s", resp.StatusCode, m, tc.status, tc.code)
			}
			if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Pragma") != "no-cache" {
				t.Errorf("cache headers %v", resp.Header)
			}
		})
	}
}

// TestRedirectOmitted: a client with one registered redirect URI may leave
// it out of the authorization request, and then of the token request;
// naming another one there is still refused.
func TestRedirectOmitted(t *testing.T) {
	f := newFixture(t)
	client := f.register(t)
	for _, tc := range []struct {
		name, redirect string
		status         int
	}{{"left out", "", 200}, {"same", redirect, 200}, {"other", "http://127.0.0.1:9/other", 400}} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.request(client, url.Values{"redirect_uri": {""}})
			a, err := f.s.ParseAuthorize(t.Context(), r, r.URL.Query())
			if err != nil || a.RedirectURI != redirect {
				t.Fatalf("%+v %v", a, err)
			}
			for _, p := range a.Params() {
				if p[0] == "redirect_uri" && p[1] != "" {
					t.Errorf("the consent form names a redirect_uri the request did not: %q", p[1])
				}
			}
			to, err := f.s.Approve(t.Context(), a, "acme", nil)
			if err != nil {
				t.Fatal(err)
			}
			u, _ := url.Parse(to)
			status, m := f.post(t, PathToken, url.Values{"grant_type": {"authorization_code"}, "code": {u.Query().Get("code")},
				"client_id": {client}, "redirect_uri": {tc.redirect}, "code_verifier": {verifier}}, "")
			if status != tc.status {
				t.Errorf("%d %v, want %d", status, m, tc.status)
			}
		})
	}
}

// TestClientLifetime: a registration nobody signs in with lapses after
// ClientUnusedTTL; one with tokens lives ClientTTL past its latest ones.
func TestClientLifetime(t *testing.T) {
	f := newFixture(t)
	unused, used := f.register(t), f.register(t)
	_, refresh := f.tokens(t, used)
	f.now = f.now.Add(ClientUnusedTTL)
	if _, err := f.s.client(t.Context(), unused); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an unused registration outlives ClientUnusedTTL: %v", err)
	}
	f.now = f.now.Add(RefreshTTL - ClientUnusedTTL - time.Hour)
	status, m := f.post(t, PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {used}}, "")
	if status != 200 {
		t.Fatalf("refresh: %d %v", status, m)
	}
	f.now = f.now.Add(ClientTTL - time.Hour)
	if _, err := f.s.client(t.Context(), used); err != nil {
		t.Errorf("a registration in use lapses before ClientTTL past its latest tokens: %v", err)
	}
	f.now = f.now.Add(time.Hour)
	if _, err := f.s.client(t.Context(), used); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a registration outlives ClientTTL past its latest tokens: %v", err)
	}
}

// TestConcurrentCodeReplay: a code presented twice at once gives tokens
// to at most one party, and those stop working: the replay revokes the
// grant even when it lands before the first exchange created it.
func TestConcurrentCodeReplay(t *testing.T) {
	f := newFixture(t)
	client := f.register(t)
	for round := range 40 {
		code := f.code(t, client, nil)
		answers := make(chan map[string]any, 2)
		for range 2 {
			go func() {
				_, m := f.exchange(t, client, code, verifier)
				answers <- m
			}()
		}
		ms := []map[string]any{<-answers, <-answers}
		for _, m := range ms {
			if tok, ok := m["access_token"].(string); ok && f.valid(t, tok) {
				t.Fatalf("round %d: the code was presented twice, yet its access token works", round)
			}
		}
	}
}

// TestRegisterClientName: the name the consent page shows keeps no format
// character (a bidirectional override could disguise it) and no control
// character; the registration answer shows the name kept.
func TestRegisterClientName(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name, sent, kept string
	}{
		{"plain", `"Claude Desktop"`, "Claude Desktop"},
		{"other scripts", `"Клиент 客户端 é"`, "Клиент 客户端 é"},
		{"bidi override", `"Evil\u202eppa"`, "Evilppa"},
		{"bidi isolate", `"\u2066App\u2069"`, "App"},
		{"zero-width joiner", `"Cl\u200daude"`, "Claude"},
		{"newline", `"A\nB"`, "A B"},
		{"only format characters", `"\u202e\u200b"`, "Unnamed MCP client"},
		{"absent", `""`, "Unnamed MCP client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, m := f.post(t, PathRegister, nil, `{"redirect_uris":["https://app.example/cb"],"client_name":`+tc.sent+`}`)
			if status != 201 || m["client_name"] != tc.kept {
				t.Fatalf("%d client_name %q, want 201 %q (%v)", status, m["client_name"], tc.kept, m)
			}
		})
	}
}
