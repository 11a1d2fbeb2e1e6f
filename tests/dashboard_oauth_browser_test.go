package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestDashboardOAuthInBrowser has Chromium do the member's part of the MCP
// OAuth sign-in: the consent page of a registered client, Deny (the client
// is told access_denied and no grant appears), Allow with a daily limit
// (the client gets a code that buys tokens which /mcp accepts), the grant's
// row on the keys page and its Revoke, after which /mcp answers 401. The
// client's redirect URI is a closed loopback port: the browser's request
// to it is read from the network events, as a native client would read
// it. Screenshots: consent and keys-grant, at 1280 and 360 px.
func TestDashboardOAuthInBrowser(t *testing.T) {
	g, b := startDashboard(t)
	b.join(g, "acme", "alice@example.com", "a long enough password", "")

	callback := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
	const clientName = "Browser test assistant"
	reg := g.do("POST", "/oauth/register", "", map[string]any{
		"client_name": clientName, "redirect_uris": []string{callback},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"token_endpoint_auth_method": "none",
	})
	clientID, _ := reg.JSON["client_id"].(string)
	if reg.Status != 201 || !strings.HasPrefix(clientID, "client_") {
		t.Fatalf("POST /oauth/register: %d %s", reg.Status, reg.Body)
	}

	// Every request the browser sends to the client's redirect URI.
	sent := make(chan string, 8)
	if err := chromedp.Listen(b.ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && strings.HasPrefix(e.Request.URL, callback) {
			select {
			case sent <- e.Request.URL:
			default:
			}
		}
	}); err != nil {
		t.Fatalf("listening to the browser: %v", err)
	}
	// consent opens the authorize URL of a fresh PKCE pair and state,
	// checks the consent page, runs answer on it and returns the URL the
	// browser was sent back to, with the verifier and the state.
	consent := func(what string, answer func()) (*url.URL, string, string) {
		t.Helper()
		verifier, state := rand.Text()+rand.Text(), rand.Text()
		sum := sha256.Sum256([]byte(verifier))
		q := url.Values{
			"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {callback},
			"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
			"state": {state}, "resource": {g.URL + "/mcp"}, "scope": {"mcp"},
		}
		b.step(what+": consent page", chromedp.Navigate(g.URL+"/oauth/authorize?"+q.Encode()),
			chromedp.WaitVisible(chromedp.CSS("#credit_limit")),
			chromedp.WaitVisible(chromedp.CSS(`button[name=decision][value=allow]`)),
			chromedp.WaitVisible(chromedp.CSS(`button[name=decision][value=deny]`)))
		page := b.text("main")
		cb, _ := url.Parse(callback)
		for _, want := range []string{clientName, cb.Host, "alice@example.com"} {
			if !strings.Contains(page, want) {
				t.Errorf("%s: the consent page does not name %q:\n%s", what, want, page)
			}
		}
		answer()
		select {
		case u := <-sent:
			back, err := url.Parse(u)
			if err != nil {
				t.Fatalf("%s: redirect %q: %v", what, u, err)
			}
			return back, verifier, state
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the browser was not sent to %s", what, callback)
		}
		return nil, "", ""
	}

	// Deny: the client learns access_denied; no grant is made.
	back, _, state := consent("deny", func() {
		b.shoot("consent")
		b.step("deny", chromedp.Click(chromedp.CSS(`button[name=decision][value=deny]`)))
	})
	if q := back.Query(); q.Get("error") != "access_denied" || q.Get("state") != state || q.Get("iss") != g.URL || q.Has("code") {
		t.Errorf("after Deny the browser went to %s, want error=access_denied, state=%s, iss=%s and no code", back, state, g.URL)
	}
	b.step("keys page after deny", chromedp.Navigate(g.URL+"/dashboard/keys"), chromedp.WaitVisible(chromedp.CSS("#name")))
	if page := b.text("main"); strings.Contains(page, "Signed-in applications") || strings.Contains(page, clientName) {
		t.Errorf("the keys page lists a grant after Deny:\n%s", page)
	}

	// Allow with a limit of 2 credits a day: the client gets a code.
	back, verifier, state := consent("allow", func() {
		b.step("allow", chromedp.SendKeys(chromedp.CSS("#credit_limit"), "2"),
			chromedp.Click(chromedp.CSS(`button[name=decision][value=allow]`)))
	})
	q := back.Query()
	if back.Scheme+"://"+back.Host+back.Path != callback || q.Get("code") == "" || q.Get("state") != state || q.Get("iss") != g.URL || q.Has("error") {
		t.Fatalf("after Allow the browser went to %s, want %s with a code, state=%s and iss=%s", back, callback, state, g.URL)
	}

	// The client exchanges the code with its verifier for tokens.
	tok := postForm(t, g.URL+"/oauth/token", url.Values{
		"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "redirect_uri": {callback},
		"client_id": {clientID}, "code_verifier": {verifier}, "resource": {g.URL + "/mcp"},
	})
	access, _ := tok["access_token"].(string)
	if refresh, _ := tok["refresh_token"].(string); !strings.HasPrefix(access, "sdr_oat_") ||
		!strings.HasPrefix(refresh, "sdr_ort_") || tok["token_type"] != "Bearer" || tok["scope"] != "mcp" {
		t.Fatalf("POST /oauth/token answered %v", tok)
	}
	if st, _ := mcpInitialize(t, g, access); st != 200 {
		t.Fatalf("/mcp initialize with the access token: %d, want 200", st)
	}

	// The keys page lists the grant with its limit; Revoke ends it.
	grant := "tr[id^=grant-]"
	b.step("keys page with the grant", chromedp.Navigate(g.URL+"/dashboard/keys"), chromedp.WaitVisible(chromedp.CSS(grant)))
	row := b.text(grant)
	if !strings.Contains(row, clientName) || !strings.Contains(row, "2 per day") {
		t.Errorf("the grant's row lacks %q or its limit 2 per day: %q", clientName, row)
	}
	b.shoot("keys-grant")
	b.step("revoke the grant", chromedp.Click(chromedp.CSS(grant+" button.danger")),
		chromedp.WaitVisible(chromedp.CSS("tr.revoked[id^=grant-]")))
	if row := b.text(grant); !strings.Contains(row, "revoked") {
		t.Errorf("the grant's row after Revoke = %q, want it marked revoked", row)
	}
	if n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll("tr[id^=grant-] button.danger").length`)); err != nil || n != 0 {
		t.Errorf("revoked grant still has %d Revoke buttons (%v)", n, err)
	}
	st, h := mcpInitialize(t, g, access)
	if st != 401 || !strings.Contains(h.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("/mcp with the revoked grant's token: %d %q, want 401 invalid_token", st, h.Get("WWW-Authenticate"))
	}
}

// postForm posts a form and decodes the JSON answer, failing unless 200.
func postForm(t *testing.T, u string, form url.Values) map[string]any {
	t.Helper()
	r, err := client.PostForm(u, form)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer r.Body.Close()
	body, _ := io.ReadAll(r.Body)
	var v map[string]any
	if r.StatusCode != 200 || json.Unmarshal(body, &v) != nil {
		t.Fatalf("POST %s: %d %s", u, r.StatusCode, body)
	}
	return v
}

// mcpInitialize sends an MCP initialize request with a bearer token and
// returns the status and headers of the answer.
func mcpInitialize(t *testing.T, g *gateway, token string) (int, http.Header) {
	t.Helper()
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"browser-test","version":"1"}}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", g.URL+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	r, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST /mcp: %v", err)
	}
	defer r.Body.Close()
	_, _ = io.Copy(io.Discard, r.Body)
	return r.StatusCode, r.Header
}
