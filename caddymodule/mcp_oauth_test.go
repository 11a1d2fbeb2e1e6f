package caddymodule

import (
	"context"
	"crypto/sha256"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

// browser is a member's browser: a cookie jar, redirects not followed.
func browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// member makes a member of acme through an invitation, as an operator
// and the invited person would.
func (f *mcpFixture) member(t *testing.T, email, password string) {
	t.Helper()
	tok := "invite-" + email
	inv := store.Invite{TokenHash: sha256.Sum256([]byte(tok)), AccountID: "acme", Email: email,
		CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}
	if err := f.app.store.CreateInvite(t.Context(), inv); err != nil {
		t.Fatal(err)
	}
	resp, err := browser().PostForm(f.URL+"/dashboard/invite", url.Values{"token": {tok}, "password": {password}, "password_confirm": {password}})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("accepting the invitation: %v %v", resp, err)
	}
	resp.Body.Close()
}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// signInAndAllow is the member's part of the authorization: the browser
// opens the authorize URL, is sent to sign in, signs in, is sent back,
// and submits the consent form with decision (and a credit limit).
func signInAndAllow(t *testing.T, authURL, email, password, limit string) *url.URL {
	t.Helper()
	b := browser()
	resp, err := b.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := resp.Location()
	if resp.StatusCode != http.StatusSeeOther || loc == nil || loc.Path != "/dashboard/signin" {
		t.Fatalf("authorize without a session: %d %v, want 303 to /dashboard/signin", resp.StatusCode, loc)
	}
	next := loc.Query().Get("next")
	if u, _ := url.Parse(authURL); next != u.RequestURI() {
		t.Fatalf("next = %q, want the authorize request %q", next, u.RequestURI())
	}
	resp, err = b.PostForm(loc.Scheme+"://"+loc.Host+"/dashboard/signin", url.Values{"email": {email}, "password": {password}, "next": {next}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, _ := resp.Location()
	if resp.StatusCode != http.StatusSeeOther || back == nil || back.RequestURI() != next {
		t.Fatalf("sign-in: %d %v, want 303 back to %s", resp.StatusCode, back, next)
	}
	resp, err = b.Get(resp.Request.URL.ResolveReference(back).String())
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Count(string(page), `<form method="post"`) != 1 ||
		!strings.Contains(string(page), `action="/oauth/authorize"`) || !strings.Contains(string(page), "Go SDK test client") {
		t.Fatalf("consent page: %d\n%s", resp.StatusCode, page)
	}
	form := url.Values{"decision": {"allow"}, "credit_limit": {limit}}
	for _, m := range hiddenInput.FindAllStringSubmatch(string(page), -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	if form.Get("csrf") == "" {
		t.Fatalf("consent form without csrf: %s", page)
	}
	resp, err = b.PostForm(resp.Request.URL.Scheme+"://"+resp.Request.URL.Host+"/oauth/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	to, _ := resp.Location()
	if resp.StatusCode != http.StatusSeeOther || to == nil {
		t.Fatalf("consent: %d %v, want 303 to the redirect URI", resp.StatusCode, to)
	}
	return to
}

// TestMCPOAuth: the Go SDK's client, with no key, discovers the
// authorization server from /mcp's 401, registers, sends the member
// through sign-in and consent, exchanges the code and calls a paid tool
// with the access token: billed once to the account, on the grant, which
// the keys page lists; after the grant is revoked the token gets 401.
func TestMCPOAuth(t *testing.T) {
	f := newMCPFixture(t)
	const email, password = "ada@example.com", "correct horse battery"
	f.member(t, email, password)
	redirect := "http://127.0.0.1:9/callback"
	var first atomic.Value // the first access token, kept to present after the revoke
	signIns := 0

	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{redirect}, ClientName: "Go SDK test client", TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}},
		RedirectURL: redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			if signIns++; signIns > 1 {
				return nil, fmt.Errorf("the member does not sign in again")
			}
			to := signInAndAllow(t, args.URL, email, password, "0.5")
			if got := to.Scheme + "://" + to.Host + to.Path; got != redirect {
				return nil, fmt.Errorf("redirected to %s, want %s", to, redirect)
			}
			q := to.Query()
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "sdr-oauth-test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: f.URL + "/mcp", OAuthHandler: h}, nil)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })

	before := f.balance(t)
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "pro_net_profile_info", Arguments: map[string]any{"url": "https://www.linkedin.com/in/rbranson"}})
	if err != nil {
		t.Fatalf("paid tool with OAuth: %v", err)
	}
	if res.IsError {
		t.Fatalf("paid tool with OAuth: tool error %v", res.Content)
	}
	if signIns != 1 {
		t.Errorf("%d sign-ins, want 1: the paid call's 401 starts it", signIns)
	}
	ts, err := h.TokenSource(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ts.Token()
	if err != nil || !strings.HasPrefix(tok.AccessToken, "sdr_oat_") || !strings.HasPrefix(tok.RefreshToken, "sdr_ort_") {
		t.Fatalf("token = %+v, %v", tok, err)
	}
	first.Store(tok)

	run, _ := res.StructuredContent.(map[string]any)
	used, err := credits.FromFloat(run["credits_used"].(float64))
	if err != nil || used <= 0 {
		t.Fatalf("credits_used %v", run["credits_used"])
	}
	if after := f.balance(t); before-after != used {
		t.Errorf("balance moved by %s, want credits_used %s (billed once)", before-after, used)
	}

	keys, err := f.app.store.ListKeys(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	var grant store.Key
	for _, k := range keys {
		if k.Kind == store.KindOAuth {
			grant = k
		}
	}
	if grant.ID == "" || grant.Name != "Go SDK test client" || grant.CreditLimit == nil ||
		grant.CreditLimit.Credits != credits.PerCredit/2 || grant.CreditLimit.Period != store.PeriodDay {
		t.Fatalf("grant = %+v, want the client's, with 0.5 credits per day", grant)
	}
	if spent, _ := f.app.store.KeySpend(t.Context(), grant.ID, store.PeriodDay, time.Now()); spent != used {
		t.Errorf("grant spent %s, want %s: the call is billed on the grant", spent, used)
	}
	got, err := f.app.store.GetRun(t.Context(), "acme", run["id"].(string))
	if err != nil || got.KeyID != grant.ID {
		t.Errorf("run %v: key %q, %v; want the grant %s", run["id"], got.KeyID, err, grant.ID)
	}

	// The grant's limit holds like a key's: with the day's limit spent,
	// the next paid call is refused before any upstream call, for nothing.
	if _, err := f.app.store.SetKeyLimit(t.Context(), grant.ID, &store.CreditLimit{Period: store.PeriodDay, Credits: used}); err != nil {
		t.Fatal(err)
	}
	calls := len(f.sim.Calls())
	res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "pro_net_profile_info", Arguments: map[string]any{"url": "https://www.linkedin.com/in/rbranson"}})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := res.StructuredContent.(map[string]any)["error"].(map[string]any); !res.IsError || e["code"] != "credit_limit_exceeded" {
		t.Errorf("call past the grant's limit: %v, want credit_limit_exceeded", res.StructuredContent)
	}
	if after := f.balance(t); before-after != used || len(f.sim.Calls()) != calls {
		t.Errorf("a call past the grant's limit charged %s or called upstream", before-after-used)
	}

	// The member revokes the grant on the keys page; the next call is 401
	// (the client then tries to sign in again, which this test refuses).
	b := browser()
	resp, err := b.PostForm(f.URL+"/dashboard/signin", url.Values{"email": {email}, "password": {password}, "next": {"/dashboard/keys"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = b.Get(f.URL + "/dashboard/keys")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	action := `action="/dashboard/grants/` + grant.ID + `/revoke"`
	if !strings.Contains(string(page), action) || !strings.Contains(string(page), "Go SDK test client") {
		t.Fatalf("keys page without the grant's revoke form %s:\n%s", action, page)
	}
	csrf := hiddenInput.FindStringSubmatch(string(page)[strings.Index(string(page), action):])
	if resp, err = b.PostForm(f.URL+"/dashboard/grants/"+grant.ID+"/revoke", url.Values{"csrf": {"forged"}}); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("revoke with a wrong csrf: %v %v, want 403", resp, err)
	}
	if resp, err = b.PostForm(f.URL+"/dashboard/grants/"+grant.ID+"/revoke", url.Values{"csrf": {csrf[2]}}); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke: %v %v", resp, err)
	}
	if _, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "get_balance"}); err == nil || signIns != 2 {
		t.Errorf("a call after the revoke: %v after %d sign-ins, want refused and a new sign-in asked", err, signIns)
	}
	at := first.Load().(*oauth2.Token)
	req, _ := http.NewRequest("POST", f.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_balance"}}`))
	req.Header.Set("Authorization", "Bearer "+at.AccessToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := `Bearer resource_metadata="` + f.URL + `/.well-known/oauth-protected-resource/mcp", error="invalid_token"`
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != want {
		t.Errorf("revoked token: %d %q, want 401 %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
	}
	// A browser-based client reads that challenge across origins.
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "WWW-Authenticate") {
		t.Errorf("the 401 is not readable from another origin: %v", resp.Header)
	}
	if after := f.balance(t); before-after != used {
		t.Errorf("balance moved by %s after the revoke, want only the one call's %s", before-after, used)
	}
}
