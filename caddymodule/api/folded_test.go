package api

import "testing"

// TestServes: the API takes /v1 and what Caddy's matchers fold onto it,
// and leaves every other path to the next handler.
func TestServes(t *testing.T) {
	for p, want := range map[string]bool{
		"/v1":               true,
		"/v1/services":      true,
		"//v1/services":     true,
		"/./v1/services":    true,
		"/V1/services":      true,
		"/x/../v1/services": true,
		"/V1":               true,
		"/v2/services":      false,
		"/v10":              false,
		"/":                 false,
		"/healthz":          false,
	} {
		if got := Serves(p); got != want {
			t.Errorf("Serves(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestFoldedPathsAreJSON404: a folded path reaches ServeHTTP and gets the
// JSON 404, not an empty answer.
func TestFoldedPathsAreJSON404(t *testing.T) {
	a := newTestAPI(t, 0)
	for _, p := range []string{"//v1/services", "/./v1/services", "/V1/services", "/V1"} {
		res, e := a.do(t, "GET", p, "", false)
		if res.StatusCode != 404 || e.Code != "not_found" || e.Type != typeNotFound {
			t.Errorf("GET %s: %d %+v, want the JSON 404", p, res.StatusCode, e)
		}
	}
}
