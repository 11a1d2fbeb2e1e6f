package registry_test

import (
	"socialrouter/caddymodule/limits"
	"strings"
	"testing"

	"socialrouter/caddymodule/registry"
)

// TestOpenAPIAsync: every run POST documents Prefer and Idempotency-Key
// with its 202, 409 and 422 answers; the records and cancel routes are
// there; every error code of the async side is documented; the limit's
// maximum is the async one.
func TestOpenAPIAsync(t *testing.T) {
	forEachRegistry(t, func(t *testing.T, r *registry.Registry) {
		doc := decodeDoc(t, r.OpenAPIJSON())
		paths := get(doc, "paths").(map[string]any)
		for p, item := range paths {
			op, ok := item.(map[string]any)["post"].(map[string]any)
			if !ok || !strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "/v1/extractions/") {
				continue
			}
			var names []string
			params, _ := op["parameters"].([]any)
			for _, prm := range params {
				names = append(names, get(prm, "name").(string))
			}
			if strings.Join(names, ",") != "Prefer,Idempotency-Key,Cache-Control" { // Cache-Control: openapi_cache.go
				t.Errorf("POST %s parameters %v", p, names)
			}
			for _, code := range []string{"202", "409", "422"} {
				if get(op, "responses", code) == nil {
					t.Errorf("POST %s has no %s answer", p, code)
				}
			}
			if lim := get(op, "requestBody", "content", "application/json", "schema", "properties", "limit", "maximum"); lim != nil && lim != float64(limits.AsyncLimitMax) {
				t.Errorf("POST %s limit maximum %v", p, lim)
			}
		}
		if get(doc, "paths", "/v1/extractions/{id}/records", "get") == nil || get(doc, "paths", "/v1/extractions/{id}/cancel", "post") == nil {
			t.Error("the records or cancel route is missing")
		}
		text := string(r.OpenAPIJSON())
		for _, code := range []string{"invalid_idempotency_key", "idempotency_key_reused", "idempotency_key_in_use", "run_not_finished", "run_finished"} {
			if !strings.Contains(text, "`"+code+"`") {
				t.Errorf("error code %s is not documented", code)
			}
		}
		if got := get(doc, "components", "schemas", "Run", "properties", "status", "enum"); len(got.([]any)) != 4 {
			t.Errorf("Run status enum %v", got)
		}
	})
}
