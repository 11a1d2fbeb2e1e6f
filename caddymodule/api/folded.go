package api

import (
	"path"
	"strings"
)

// Serves reports whether the API answers path: a path under /v1, or one
// Caddy's path matchers fold onto /v1. A front-end passes any other path
// on.
//
// Caddy's matchers compare paths cleaned and case-insensitively, so they
// take //v1/…, /./v1/… and /V1/… for paths under /v1 while the API, which
// reads the path as sent, does not. Such a request would pass both the
// handler and a site's `not path /v1/*` catch-all and end as an empty 200;
// served here, it gets the API's JSON 404 (ServeHTTP answers it for any
// path outside /v1 proper).
func Serves(p string) bool {
	if p == "/v1" || strings.HasPrefix(p, "/v1/") {
		return true
	}
	c := path.Clean("/" + strings.ToLower(p))
	return c == "/v1" || strings.HasPrefix(c, "/v1/")
}
