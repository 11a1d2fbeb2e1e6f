package caddymodule

import (
	"net/http"
	"path"
	"strings"
)

// foldsOntoV1 reports whether Caddy's path matchers, which compare paths
// cleaned and case-insensitively, take p for a path under /v1 while it is
// not one (//v1/…, /./v1/…, /V1/…). Such a request passes both the
// handler (which reads the raw path) and a site's `not path /v1/*` catch-all,
// and would end as an empty 200; it gets the JSON 404 instead.
func foldsOntoV1(p string) bool {
	c := path.Clean("/" + strings.ToLower(p))
	return c == "/v1" || strings.HasPrefix(c, "/v1/")
}

// notUnderV1 is the 404 of a path that only looks like one under /v1.
func notUnderV1(w http.ResponseWriter) {
	newError(http.StatusNotFound, "not_found", typeNotFound,
		"no endpoint here: the API is under /v1 exactly (lowercase, no empty or dot segments), described by GET /v1/openapi.json").write(w)
}
