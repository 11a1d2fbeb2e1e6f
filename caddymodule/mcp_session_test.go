package caddymodule

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/admin"
)

// TestMCPSessionBoundToItsCredential: a session opened with an API key
// answers only requests carrying that key; another account's key, with the
// session's id, is refused (403) before any tool runs, and so is an
// anonymous request (a tool needing sign-in is refused earlier, 401). A session opened anonymously stays open to a key, as a
// client signing in mid-session needs.
func TestMCPSessionBoundToItsCredential(t *testing.T) {
	f := newMCPFixture(t)
	now := time.Now().UTC()
	if _, err := f.app.store.CreateAccount(t.Context(), "other", 0, now); err != nil {
		t.Fatal(err)
	}
	other, k, err := admin.NewKey("sdr", "other", "other", nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.app.store.CreateKey(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	post := func(key, session, body string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", f.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
	}
	open := func(key string) string {
		t.Helper()
		status, id, body := post(key, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		if status != 200 || id == "" {
			t.Fatalf("initialize: %d %q %s", status, id, body)
		}
		if status, _, body := post(key, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != 202 {
			t.Fatalf("initialized: %d %s", status, body)
		}
		return id
	}
	const balance = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_balance","arguments":{}}}`
	const catalogue = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_services","arguments":{}}}`
	tests := []struct {
		name, opener, caller, call string
		status                     int
	}{
		{"the opening key", f.key, f.key, balance, 200},
		{"another account's key", f.key, other, balance, 403},
		{"no key, a tool that needs one", f.key, "", balance, 401},
		{"no key, an anonymous tool", f.key, "", catalogue, 403},
		{"opened anonymously, then a key", "", f.key, balance, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := open(tt.opener)
			status, _, body := post(tt.caller, id, tt.call)
			if status != tt.status {
				t.Fatalf("tools/call on the session: %d %s, want %d", status, body, tt.status)
			}
			if status == 200 && tt.call == balance && !strings.Contains(body, `\"balance\":10`) {
				t.Errorf("the balance of the caller's own account (10) is not in %s", body)
			}
		})
	}
}
