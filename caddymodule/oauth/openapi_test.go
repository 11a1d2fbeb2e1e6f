package oauth

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/registry/openapitest"
	"socialrouter/services"
)

// TestAnswersMatchOpenAPI checks real answers of the endpoints and of
// Guard against the gateway's OpenAPI document, which describes them by
// hand (caddymodule/registry/openapi_oauth.go, openapi_mcp.go): a status,
// field or header the code answers and the document does not list fails.
func TestAnswersMatchOpenAPI(t *testing.T) {
	reg, err := registry.LoadFS(services.FS)
	if err != nil {
		t.Fatalf("loading the service declarations: %v", err)
	}
	doc := reg.OpenAPIJSON()
	f := newFixture(t)
	client := f.register(t)
	_, refresh := f.tokens(t, client)
	guard := httptest.NewServer(f.s.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}), func(tool string) bool { return tool == "list_services" }))
	t.Cleanup(guard.Close)

	form := func(v url.Values) (string, string) { return "application/x-www-form-urlencoded", v.Encode() }
	type exchange struct {
		name, base, method, path, ctype, body, auth string
		status                                      int
	}
	reg201 := `{"redirect_uris":["https://client.example/cb"],"client_name":"Doc client"}`
	tokenCT, badGrant := form(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"sdr_ort_unknown"}, "client_id": {client}})
	_, unknownClient := form(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {"client_nope"}})
	_, refreshed := form(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {client}})
	_, unsupported := form(url.Values{"grant_type": {"password"}, "client_id": {client}})
	_, revoke := form(url.Values{"token": {"sdr_oat_unknown"}})
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_balance","arguments":{}}}`
	for _, c := range []exchange{
		{"resource metadata", f.url, "GET", PathResourceMeta + ResourcePath, "", "", "", 200},
		{"resource metadata root", f.url, "GET", PathResourceMeta, "", "", "", 200},
		{"server metadata", f.url, "GET", PathServerMeta, "", "", "", 200},
		{"register", f.url, "POST", PathRegister, "application/json", reg201, "", 201},
		{"register bad redirect", f.url, "POST", PathRegister, "application/json", `{"redirect_uris":["http://client.example/cb"]}`, "", 400},
		{"register bad metadata", f.url, "POST", PathRegister, "application/json", `[]`, "", 400},
		{"token refreshed", f.url, "POST", PathToken, tokenCT, refreshed, "", 200},
		{"token unknown refresh", f.url, "POST", PathToken, tokenCT, badGrant, "", 400},
		{"token grant type", f.url, "POST", PathToken, tokenCT, unsupported, "", 400},
		{"token JSON body", f.url, "POST", PathToken, "application/json", `{}`, "", 400},
		{"token unknown client", f.url, "POST", PathToken, tokenCT, unknownClient, "", 401},
		{"revoke unknown", f.url, "POST", PathRevoke, tokenCT, revoke, "", 200},
		{"revoke no token", f.url, "POST", PathRevoke, tokenCT, "", "", 400},
		{"mcp anonymous paid call", guard.URL, "POST", "/mcp", "application/json", call, "", 401},
		{"mcp unknown token", guard.URL, "POST", "/mcp", "application/json", call, "Bearer sdr_oat_unknown", 401},
		{"mcp other scheme", guard.URL, "POST", "/mcp", "application/json", call, "Basic eDp5", 401},
		{"mcp bearer without token", guard.URL, "POST", "/mcp", "application/json", call, "Bearer ", 400},
		{"mcp listen unknown token", guard.URL, "GET", "/mcp", "", "", "Bearer sdr_oat_unknown", 401},
		{"mcp end unknown token", guard.URL, "DELETE", "/mcp", "", "", "Bearer sdr_oat_unknown", 401},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, c.base+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if c.ctype != "" {
				req.Header.Set("Content-Type", c.ctype)
			}
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			if c.path == "/mcp" && c.method == "GET" {
				req.Header.Set("Accept", "text/event-stream")
			}
			if c.path == "/mcp" && c.method != "POST" {
				req.Header.Set("Mcp-Session-Id", "s1")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			openapitest.ValidateResponse(t, doc, req, resp, body)
		})
	}
}
