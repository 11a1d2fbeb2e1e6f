package mcp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCORS(t *testing.T) {
	// The wrapped handler answers as the OAuth guard does a paid call
	// without a token.
	guard := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://x/.well-known/oauth-protected-resource/mcp"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
	h := CORS(guard)
	for _, tc := range []struct {
		name, method, requestMethod string
		status                      int
		header                      string // a header the answer must carry
		contains                    string
	}{
		{"preflight", "OPTIONS", "POST", http.StatusNoContent, "Access-Control-Allow-Headers", "Authorization"},
		{"preflight session header", "OPTIONS", "DELETE", http.StatusNoContent, "Access-Control-Allow-Headers", "Mcp-Session-Id"},
		{"preflight methods", "OPTIONS", "GET", http.StatusNoContent, "Access-Control-Allow-Methods", "DELETE"},
		{"401 challenge readable", "POST", "", http.StatusUnauthorized, "Access-Control-Expose-Headers", "WWW-Authenticate"},
		{"session id readable", "POST", "", http.StatusUnauthorized, "Access-Control-Expose-Headers", "Mcp-Session-Id"},
		{"plain OPTIONS passed on", "OPTIONS", "", http.StatusUnauthorized, "Access-Control-Allow-Origin", "*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, "/mcp", nil)
			r.Header.Set("Origin", "https://app.example")
			if tc.requestMethod != "" {
				r.Header.Set("Access-Control-Request-Method", tc.requestMethod)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status || w.Header().Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(w.Header().Get(tc.header), tc.contains) {
				t.Errorf("%d %v, want %d and %s with %s", w.Code, w.Header(), tc.status, tc.header, tc.contains)
			}
		})
	}
}
