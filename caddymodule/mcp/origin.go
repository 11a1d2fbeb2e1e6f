package mcp

import (
	"net/http"
	"net/url"
	"strings"

	"socialrouter/internal/httpjson"
)

// CheckOrigin refuses (403 origin_not_allowed) a request whose Origin
// header names neither this site (the request's own Host) nor one of
// allowed, as the MCP specification asks of servers (a page on another
// site must not drive the endpoint through its visitor's browser, as in
// DNS rebinding). A request without Origin, from a client that is not a
// browser, passes. allowed are origins such as "http://localhost:6274"
// (the MCP Inspector), compared without case or trailing slash.
func CheckOrigin(allowed []string, next http.Handler) http.Handler {
	ok := map[string]bool{}
	for _, o := range allowed {
		ok[normOrigin(o)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o := r.Header.Get("Origin")
		if o == "" || ok[normOrigin(o)] || sameSite(o, r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		httpjson.Write(w, http.StatusForbidden, map[string]any{"error": map[string]any{
			"code": "origin_not_allowed", "type": "authentication",
			"message": "requests from the web origin " + o + " are not allowed; the operator can allow it with the mcp_origins option",
		}})
	})
}

func normOrigin(o string) string {
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(o), "/"))
}

// sameSite reports whether origin names host (host[:port]), whatever its
// scheme: behind a proxy that ends TLS the request itself is plain HTTP.
func sameSite(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.User != nil {
		return false
	}
	return strings.EqualFold(u.Host, host)
}
