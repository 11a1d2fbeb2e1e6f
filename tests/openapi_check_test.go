package tests

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"socialrouter/caddymodule/registry/openapitest"
)

// docs caches the served OpenAPI document per gateway address.
var docs sync.Map // host → []byte

// forgetOpenAPI drops the cached document of a gateway (after a reload).
func forgetOpenAPI(host string) { docs.Delete(host) }

// validateAgainstOpenAPI checks every /v1 response of the suite against the
// schemas of the document the same gateway serves.
func validateAgainstOpenAPI(t testing.TB, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	p := req.URL.Path
	if !strings.HasPrefix(p, "/v1/") || p == "/v1/openapi.json" || len(body) == 0 {
		return
	}
	host := req.URL.Scheme + "://" + req.URL.Host
	doc, ok := docs.Load(host)
	if !ok {
		r, err := client.Get(host + "/v1/openapi.json")
		if err != nil {
			t.Fatalf("fetching the OpenAPI document: %v", err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 200 {
			t.Fatalf("fetching the OpenAPI document: %d", r.StatusCode)
		}
		docs.Store(host, b)
		doc = b
	}
	err := openapitest.CheckResponse(doc.([]byte), req, resp, body)
	// A request to a path the document does not declare (an unknown
	// platform or service: the 404 under test) has no schema to match.
	if err != nil && !strings.Contains(err.Error(), "not found: The "+req.Method+" request contains a path") {
		t.Errorf("%s %s → %d: response does not match the OpenAPI document:\n%v", req.Method, p, resp.StatusCode, err)
	}
}
