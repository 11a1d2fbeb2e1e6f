package mcp

import "net/http"

// CORS lets a browser-based MCP client (a web app, the MCP Inspector in
// direct mode) reach the endpoint from the origins CheckOrigin lets
// through: it reads the session id and, on a 401, the WWW-Authenticate
// challenge that starts its OAuth sign-in. The endpoint authenticates by
// an Authorization header only, never a cookie, so a page gets nothing its
// script could not get with its own token. A preflight is answered here.
func CORS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID")
			h.Set("Access-Control-Max-Age", "86400")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}
