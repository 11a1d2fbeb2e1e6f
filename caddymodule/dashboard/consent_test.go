package dashboard

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"socialrouter/caddymodule/store"
)

// client registers an OAuth client and returns its authorize path.
func (e *env) client(name, redirect string) string {
	e.t.Helper()
	res, err := e.srv.Client().Post(e.srv.URL+"/oauth/register", "application/json",
		strings.NewReader(`{"redirect_uris":["`+redirect+`"],"client_name":"`+name+`"}`))
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	id, _ := m["client_id"].(string)
	if res.StatusCode != http.StatusCreated || id == "" {
		e.t.Fatalf("register: %d %v", res.StatusCode, m)
	}
	sum := sha256.Sum256([]byte("verifier-verifier-verifier-verifier-verifier"))
	q := url.Values{"response_type": {"code"}, "client_id": {id}, "redirect_uri": {redirect}, "state": {"s1"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"resource": {e.srv.URL + "/mcp"}, "scope": {"mcp"}}
	return "/oauth/authorize?" + q.Encode()
}

var hidden = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// consentForm reads the consent page's hidden inputs.
func consentForm(p page) url.Values {
	f := url.Values{}
	for _, m := range hidden.FindAllStringSubmatch(p.body, -1) {
		f.Set(m[1], html.UnescapeString(m[2]))
	}
	return f
}

func TestConsent(t *testing.T) {
	e := newEnv(t, false)
	const redirect = "https://client.example/cb"
	authz := e.client("Claude <Desktop>", redirect)

	// Signed out: sent to sign in, and back here after.
	p := e.browser().get(authz)
	if p.status != http.StatusSeeOther || p.location != "/dashboard/signin?next="+url.QueryEscape(authz) {
		t.Fatalf("signed out: %d %q", p.status, p.location)
	}
	e.member("acme", "ada@example.com")
	b := e.browser()
	p = b.post("/dashboard/signin", url.Values{"email": {"ada@example.com"}, "password": {goodPassword}, "next": {authz}})
	if p.status != http.StatusSeeOther || p.location != authz {
		t.Fatalf("sign-in with next: %d %q", p.status, p.location)
	}

	p = b.get(authz)
	want(t, p, http.StatusOK, "Claude &lt;Desktop&gt;", "client.example", `name="credit_limit"`, `value="allow"`, `value="deny"`)
	if n := strings.Count(p.body, "<form"); n != 1 {
		t.Errorf("%d forms on the consent page, want 1", n)
	}
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' https://client.example") {
		t.Errorf("CSP %q does not let the form be redirected to the client", csp)
	}
	// Never framed (clickjacking the Allow button), never cached.
	for k, v := range map[string]string{"X-Frame-Options": "DENY", "Cache-Control": "no-store", "Pragma": "no-cache"} {
		if got := p.header.Get(k); got != v {
			t.Errorf("consent page %s: %q, want %q", k, got, v)
		}
	}
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q lets the consent page be framed", csp)
	}
	if got := p.header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("the consent page allows cross-origin reads: %q", got)
	}
	form := consentForm(p)

	for _, tc := range []struct {
		name   string
		change url.Values
		status int
		body   string
	}{
		{"forged csrf", url.Values{"csrf": {"x"}, "decision": {"allow"}}, http.StatusForbidden, "not issued to your session"},
		{"bad limit", url.Values{"decision": {"allow"}, "credit_limit": {"-1"}}, http.StatusBadRequest, "credit limit"},
		{"no decision", url.Values{}, http.StatusBadRequest, "Allow or Deny"},
		{"other redirect", url.Values{"decision": {"allow"}, "redirect_uri": {"https://evil.example/cb"}}, http.StatusBadRequest, "redirect_uri"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := url.Values{}
			for k, v := range form {
				f[k] = v
			}
			for k, v := range tc.change {
				f[k] = v
			}
			want(t, b.post("/oauth/authorize", f), tc.status, tc.body)
		})
	}
	if n, _ := e.store.ListKeys(t.Context(), "acme"); len(n) != 0 {
		t.Errorf("refused consents made grants: %v", n)
	}

	f := url.Values{"decision": {"deny"}}
	for k, v := range form {
		f[k] = v
	}
	p = b.post("/oauth/authorize", f)
	if u, _ := url.Parse(p.location); p.status != http.StatusSeeOther || u.Query().Get("error") != "access_denied" || u.Query().Get("state") != "s1" {
		t.Errorf("deny: %d %q", p.status, p.location)
	}
	f.Set("decision", "allow")
	f.Set("credit_limit", "2.5")
	p = b.post("/oauth/authorize", f)
	u, _ := url.Parse(p.location)
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, redirect+"?") || u.Query().Get("code") == "" ||
		u.Query().Get("iss") != e.srv.URL || u.Query().Get("state") != "s1" {
		t.Errorf("allow: %d %q", p.status, p.location)
	}
	acts, _ := e.store.ListActivity(t.Context(), "acme", 10)
	if len(acts) == 0 || acts[0].Action != "oauth_granted" || !strings.Contains(acts[0].Detail, "2.5 credits per day") {
		t.Errorf("activity %v", acts)
	}

	// Signed out, the POST is refused rather than redirected.
	want(t, e.browser().post("/oauth/authorize", f), http.StatusUnauthorized, "session ended")
}

func TestConsentRefusesBadRequests(t *testing.T) {
	e := newEnv(t, false)
	b := e.member("acme", "ada@example.com")
	authz := e.client("App", "https://client.example/cb")
	for _, tc := range []struct {
		name     string
		edit     func(q url.Values)
		status   int
		location string // the error sent to the client, or "" for a page
	}{
		{"unknown client", func(q url.Values) { q.Set("client_id", "client_nope") }, http.StatusBadRequest, ""},
		{"unregistered redirect", func(q url.Values) { q.Set("redirect_uri", "https://evil.example/cb") }, http.StatusBadRequest, ""},
		{"plain PKCE", func(q url.Values) { q.Set("code_challenge_method", "plain") }, http.StatusSeeOther, "invalid_request"},
		{"other resource", func(q url.Values) { q.Set("resource", "https://other.example/mcp") }, http.StatusSeeOther, "invalid_target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, _ := url.Parse(authz)
			q := u.Query()
			tc.edit(q)
			p := b.get("/oauth/authorize?" + q.Encode())
			if p.status != tc.status {
				t.Fatalf("%d, want %d: %s", p.status, tc.status, p.body)
			}
			if tc.location == "" {
				if p.location != "" {
					t.Errorf("redirected to %s", p.location)
				}
				return
			}
			to, _ := url.Parse(p.location)
			if to.Host != "client.example" || to.Query().Get("error") != tc.location {
				t.Errorf("redirect %s, want error=%s to the client", p.location, tc.location)
			}
		})
	}
}

func TestKeysPageListsGrants(t *testing.T) {
	e := newEnv(t, false)
	b := e.member("acme", "ada@example.com")
	g := store.Key{ID: "key_grant1", AccountID: "acme", Name: "Claude", Kind: store.KindOAuth, Hash: sha256.Sum256([]byte("g")),
		Display: "client_x", CreatedAt: e.clock.now()}
	if err := e.store.CreateKey(t.Context(), g); err != nil {
		t.Fatal(err)
	}
	p := b.get("/dashboard/keys")
	want(t, p, http.StatusOK, "Signed-in applications", "Claude", `action="/dashboard/grants/key_grant1/revoke"`, "No keys yet.")
	csrf := hidden.FindStringSubmatch(p.body)
	if csrf == nil || csrf[1] != "csrf" {
		t.Fatalf("no csrf input: %s", p.body)
	}
	// Another member's browser cannot use this session's token.
	other := e.member("other", "bob@example.com")
	want(t, other.post("/dashboard/grants/key_grant1/revoke", url.Values{"csrf": {csrf[2]}}), http.StatusNotFound)
	want(t, b.post("/dashboard/keys/key_grant1/revoke", url.Values{}), http.StatusNotFound) // a grant is not a key
	p = b.post("/dashboard/grants/key_grant1/revoke", url.Values{"csrf": {csrf[2]}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d %s", p.status, p.body)
	}
	if k, _ := e.store.GetKey(t.Context(), "key_grant1"); k.RevokedAt == nil {
		t.Errorf("grant not revoked")
	}
	want(t, b.get("/dashboard/keys"), http.StatusOK, "revoked")
}

// TestConsentShowsPunycode: a client registered with a look-alike Unicode
// host is shown, and let through the CSP, as its punycode.
func TestConsentShowsPunycode(t *testing.T) {
	e := newEnv(t, false)
	authz := e.client("Docs", "https://g\u043e\u043egle.com/cb")
	b := e.member("acme", "ada@example.com")
	p := b.get(authz)
	want(t, p, http.StatusOK, "<code>xn--ggle-55da.com</code>")
	if strings.Contains(p.body, "g\u043e\u043egle") {
		t.Error("the consent page shows the Unicode host")
	}
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' https://xn--ggle-55da.com") {
		t.Errorf("CSP %q, want the punycode host in form-action", csp)
	}
}
