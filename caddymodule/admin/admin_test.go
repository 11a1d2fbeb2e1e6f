package admin

import (
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"socialrouter/caddymodule/registry"
	badgerstore "socialrouter/caddymodule/store/badger"
	"socialrouter/services"
)

func newTestHandler(t *testing.T) (*Handler, map[string]string) {
	t.Helper()
	s, err := badgerstore.Open(t.TempDir(), badgerstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	reg, err := registry.LoadFS(services.FS)
	if err != nil {
		t.Fatal(err)
	}
	overrides := map[string]string{}
	return New(Config{
		Store: s, Registry: reg, KeyPrefix: "sdr",
		SetSourceOverride: func(id, st string) { overrides[id] = st },
		SourceStatus:      func(id string) string { return overrides[id] },
	}), overrides
}

// serve answers one request: the status (from the returned Error when
// there is one), the body, and the Allow header.
func serve(t *testing.T, h *Handler, method, path, body string) (int, string, string) {
	t.Helper()
	var rd io.Reader = strings.NewReader(body)
	rec := httptest.NewRecorder()
	err := h.Serve(rec, httptest.NewRequest(method, path, rd))
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s %s: untyped error %v", method, path, err)
		}
		return e.Status, e.Error(), rec.Header().Get("Allow")
	}
	return rec.Code, rec.Body.String(), rec.Header().Get("Allow")
}

func TestAdminRoutes(t *testing.T) {
	h, overrides := newTestHandler(t)
	tests := []struct {
		method, path, body string
		status             int
		contains, allow    string
	}{
		{"POST", "/sdr/accounts", `{"id": "acme", "balance": 10}`, 201, `"balance":10`, ""},
		{"POST", "/sdr/accounts/", `{"id": "acme"}`, 409, "account acme already exists", ""},
		{"POST", "/sdr/accounts", `{"id": "a b"}`, 400, "id must be 1-64 characters", ""},
		{"POST", "/sdr/accounts", `{"id": "x", "extra": 1}`, 400, "invalid JSON body", ""},
		{"GET", "/sdr/accounts", "", 405, "method GET not allowed; use POST", "POST"},
		{"GET", "/sdr/accounts/acme", "", 200, `"keys":[]`, ""},
		{"GET", "/sdr/accounts/nope", "", 404, "account nope not found", ""},
		{"POST", "/sdr/accounts/acme/credits", `{"amount": 2.5}`, 200, `"balance":12.5`, ""},
		{"POST", "/sdr/accounts/acme/credits", `{"amount": -20}`, 409, "the balance cannot go below zero", ""},
		{"POST", "/sdr/accounts/acme/credits", `{"amount": 0}`, 400, "amount must be a non-zero number", ""},
		{"POST", "/sdr/accounts/acme/credits", `{"amount": 4611686018427}`, 200, `"balance":4611686018439.5`, ""},
		{"POST", "/sdr/accounts/acme/credits", `{"amount": 4611686018427}`, 409, "would exceed the largest the store holds; nothing was added", ""},
		{"POST", "/sdr/accounts/acme/credits", `{"amount": -4611686018427}`, 200, `"balance":12.5`, ""},
		{"POST", "/sdr/accounts/acme/keys", `{"name": "b", "credit_limit": {"period": "day", "credits": 0}}`, 400, "credit_limit.credits must be above 0", ""},
		{"POST", "/sdr/accounts/acme/keys", `{"name": "b", "credit_limit": {"period": "year", "credits": 1}}`, 400, "credit_limit.period must be hour, day, week or month", ""},
		{"POST", "/sdr/accounts/nope/keys", `{}`, 404, "account nope not found", ""},
		{"GET", "/sdr/keys/key_x", "", 405, "method GET not allowed; use PATCH or DELETE", "PATCH, DELETE"},
		{"PATCH", "/sdr/keys/key_x", `{}`, 400, `send {"credit_limit"`, ""},
		{"DELETE", "/sdr/keys/key_x", "", 404, "key key_x not found", ""},
		{"PUT", "/sdr/sources/nope/status", `{"status": "down"}`, 404, "source nope not found", ""},
		{"PUT", "/sdr/sources/source_a/status", `{"status": "broken"}`, 400, "status must be active", ""},
		{"PUT", "/sdr/sources/source_a/status", `{"status": "down"}`, 200, `"status":"down"`, ""},
		{"GET", "/sdr/nope", "", 404, "no admin route GET /sdr/nope", ""},
	}
	for _, tt := range tests {
		status, body, allow := serve(t, h, tt.method, tt.path, tt.body)
		if status != tt.status || !strings.Contains(body, tt.contains) || allow != tt.allow {
			t.Errorf("%s %s: %d %s (Allow %q), want %d containing %q (Allow %q)", tt.method, tt.path, status, body, allow, tt.status, tt.contains, tt.allow)
		}
	}
	if overrides["source_a"] != "down" {
		t.Errorf("override not set: %v", overrides)
	}
}

// TestKeyLifecycle: a key is shown once with its secret, limited, cleared
// and revoked.
func TestKeyLifecycle(t *testing.T) {
	h, _ := newTestHandler(t)
	serve(t, h, "POST", "/sdr/accounts", `{"id": "acme"}`)
	status, body, _ := serve(t, h, "POST", "/sdr/accounts/acme/keys", `{"name": "backend", "credit_limit": {"period": "day", "credits": 2}}`)
	var k struct {
		ID, Key, Display string
	}
	if err := json.Unmarshal([]byte(body), &k); err != nil || status != 201 || !strings.HasPrefix(k.Key, "sdr_live_") || len(k.Key) != len("sdr_live_")+40 {
		t.Fatalf("create: %d %s", status, body)
	}
	if k.Display != "sdr_live_…"+k.Key[len(k.Key)-4:] {
		t.Errorf("display %q", k.Display)
	}
	if status, body, _ := serve(t, h, "PATCH", "/sdr/keys/"+k.ID, `{"credit_limit": null}`); status != 200 || strings.Contains(body, "credit_limit") {
		t.Errorf("clear: %d %s", status, body)
	}
	if status, body, _ := serve(t, h, "DELETE", "/sdr/keys/"+k.ID, ""); status != 204 || body != "" {
		t.Errorf("revoke: %d %s", status, body)
	}
	if _, body, _ := serve(t, h, "GET", "/sdr/accounts/acme", ""); !strings.Contains(body, `"revoked_at"`) || strings.Contains(body, k.Key) {
		t.Errorf("account after revoke: %s", body)
	}
	if status, body, _ := serve(t, h, "PATCH", "/sdr/keys/"+k.ID, `{"credit_limit": {"period": "day", "credits": 1}}`); status != 409 || !strings.Contains(body, "was revoked on") {
		t.Errorf("limit on a revoked key: %d %s", status, body)
	}
	if status, _, _ := serve(t, h, "PATCH", "/sdr/keys/key_nope", `{"credit_limit": null}`); status != 404 {
		t.Errorf("limit on an unknown key: %d", status)
	}
}

// TestStrictBodies: an admin body is exactly one JSON object with known
// fields and no repeated key, at any depth, as on the /v1 API; the
// credit_limit of a PATCH is as strict as the one of a key creation.
func TestStrictBodies(t *testing.T) {
	h, _ := newTestHandler(t)
	serve(t, h, "POST", "/sdr/accounts", `{"id": "acme", "balance": 10}`)
	_, body, _ := serve(t, h, "POST", "/sdr/accounts/acme/keys", `{"name": "k"}`)
	var k struct{ ID string }
	if err := json.Unmarshal([]byte(body), &k); err != nil {
		t.Fatalf("create key: %s", body)
	}
	tests := []struct {
		name, method, path, body string
		status                   int
		contains                 string
	}{
		{"repeated id", "POST", "/sdr/accounts", `{"id": "a1", "id": "a2"}`, 400, `key "id" appears twice`},
		{"repeated amount", "POST", "/sdr/accounts/acme/credits", `{"amount": 1, "amount": 1000}`, 400, `key "amount" appears twice`},
		{"repeated nested key", "POST", "/sdr/accounts/acme/keys", `{"credit_limit": {"period": "day", "credits": 1, "credits": 9}}`, 400, `key "credits" appears twice`},
		{"data after the object", "POST", "/sdr/accounts", `{"id": "a3"} {"id": "a4"}`, 400, "data after the JSON value"},
		{"not an object", "POST", "/sdr/accounts/acme/credits", `[1]`, 400, "want one JSON object"},
		{"null body", "PATCH", "/sdr/keys/" + k.ID, `null`, 400, "want one JSON object"},
		{"too large", "POST", "/sdr/accounts", `{"id": "a5", "pad": "` + strings.Repeat("x", 1<<20) + `"}`, 413, "over 1048576 bytes"},
		{"PATCH nested unknown field", "PATCH", "/sdr/keys/" + k.ID, `{"credit_limit": {"period": "day", "credits": 1, "foo": 2}}`, 400, `unknown field "foo"`},
		{"PATCH nested repeated key", "PATCH", "/sdr/keys/" + k.ID, `{"credit_limit": {"period": "day", "period": "hour", "credits": 1}}`, 400, `key "period" appears twice`},
		{"PATCH still sets", "PATCH", "/sdr/keys/" + k.ID, `{"credit_limit": {"period": "day", "credits": 1}}`, 200, `"period":"day"`},
		{"PATCH still clears", "PATCH", "/sdr/keys/" + k.ID, ` {"credit_limit": null} ` + "\n", 200, `"id":"` + k.ID},
		{"account still created", "POST", "/sdr/accounts", `{"id": "a6", "balance": 1}`, 201, `"id":"a6"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, _ := serve(t, h, tt.method, tt.path, tt.body)
			if status != tt.status || !strings.Contains(body, tt.contains) {
				t.Errorf("%s %s %.80s: %d %s, want %d containing %q", tt.method, tt.path, tt.body, status, body, tt.status, tt.contains)
			}
		})
	}
	for _, id := range []string{"a1", "a2", "a3", "a4", "a5"} {
		if status, _, _ := serve(t, h, "GET", "/sdr/accounts/"+id, ""); status != 404 {
			t.Errorf("account %s was created by a refused body", id)
		}
	}
	if _, body, _ := serve(t, h, "GET", "/sdr/accounts/acme", ""); !strings.Contains(body, `"balance":10,`) {
		t.Errorf("balance changed by a refused body: %s", body)
	}
}

// TestSourceStatusBody: {"status": null} clears an override; a body
// without status is refused rather than read as a reset.
func TestSourceStatusBody(t *testing.T) {
	h, overrides := newTestHandler(t)
	tests := []struct {
		body     string
		status   int
		contains string
		override string
	}{
		{`{"status": "down"}`, 200, `"status":"down"`, "down"},
		{`{}`, 400, `{"status": null}`, "down"},
		{`{"status": 1}`, 400, "status must be a string or null", "down"},
		{`{"status": ""}`, 400, "status must be active", "down"},
		{`{"status": null}`, 200, `"id":"source_a"`, ""},
		{`{"status": "degraded"}`, 200, `"status":"degraded"`, "degraded"},
	}
	for _, tt := range tests {
		status, body, _ := serve(t, h, "PUT", "/sdr/sources/source_a/status", tt.body)
		if status != tt.status || !strings.Contains(body, tt.contains) || overrides["source_a"] != tt.override {
			t.Errorf("PUT %s: %d %s, override %q; want %d containing %q, override %q", tt.body, status, body, overrides["source_a"], tt.status, tt.contains, tt.override)
		}
	}
}
