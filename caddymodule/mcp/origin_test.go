package mcp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCheckOrigin: the MCP specification has servers validate Origin (a
// page on another site must not drive the endpoint through a browser, as
// in DNS rebinding). No Origin (a non-browser client) and the site's own
// origin pass, as do configured origins; any other is 403.
func TestCheckOrigin(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	h := CheckOrigin([]string{"http://localhost:6274", "https://Inspector.Example/"}, ok)
	for _, tc := range []struct {
		origin, host string
		status       int
	}{
		{"", "api.example", 200},
		{"https://api.example", "api.example", 200},
		{"http://api.example:8080", "api.example:8080", 200},
		{"HTTPS://API.EXAMPLE", "api.example", 200},
		{"http://localhost:6274", "api.example", 200},
		{"https://inspector.example", "api.example", 200},
		{"https://evil.example", "api.example", 403},
		{"https://api.example.evil.example", "api.example", 403},
		{"http://api.example:9999", "api.example:8080", 403},
		{"null", "api.example", 403},
		{"http://localhost:6275", "api.example", 403},
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Host = tc.host
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.status {
			t.Errorf("Origin %q to %s: %d, want %d", tc.origin, tc.host, w.Code, tc.status)
		}
		if w.Code == 403 && (!strings.Contains(w.Body.String(), `"code":"origin_not_allowed"`) || w.Header().Get("Content-Type") != "application/json") {
			t.Errorf("refusal %q %s, want the error envelope", w.Header().Get("Content-Type"), w.Body)
		}
	}
}
