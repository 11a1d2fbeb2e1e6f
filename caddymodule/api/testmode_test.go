package api

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/testmode"
	"socialrouter/services"
)

// TestTestKeys: a test key is refused where no test router is configured;
// with one, its call is served by the test router (the live router, which
// has no client at all, would fail it), charged to the test balance, and
// its run is invisible to the live key, as the live run is to it.
func TestTestKeys(t *testing.T) {
	a := newTestAPI(t, 10*credits.PerCredit)
	now := time.Now().UTC()
	twin, err := testmode.Ensure(t.Context(), a.store, "acme", now)
	if err != nil {
		t.Fatal(err)
	}
	secret := "sdr_test_" + strings.Repeat("b", 40)
	if err := a.store.CreateKey(t.Context(), store.Key{ID: "key_t", AccountID: twin.ID, Hash: sha256.Sum256([]byte(secret)),
		Display: "sdr_test_…bbbb", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	call := func(method, target, body, key string) (int, map[string]any) {
		r := httptest.NewRequest(method, target, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, r)
		var m map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		return rec.Code, m
	}
	const body = `{"url": "https://www.linkedin.com/company/kraft-heinz-company"}`

	if st, m := call("POST", "/v1/extract/pro_net/company.info", body, secret); st != http.StatusUnauthorized || m["error"].(map[string]any)["code"] != "test_mode_off" {
		t.Fatalf("test key without a test router: %d %v", st, m)
	}

	clients, err := testmode.Clients(a.Registry, services.FS)
	if err != nil {
		t.Fatal(err)
	}
	a.TestRouter = router.New(testmode.RouterConfig(router.Config{}), clients, nil, nil)
	st, run := call("POST", "/v1/extract/pro_net/company.info", body, secret)
	if st != http.StatusOK || run["livemode"] != false || run["served_by"] != "source_b/pro_net" {
		t.Fatalf("test call: %d %v", st, run)
	}
	if st, live := call("POST", "/v1/extract/pro_net/company.info", body, a.secret); st == http.StatusOK {
		t.Fatalf("the live call was served with no upstream client: %v", live)
	}
	_, bal := call("GET", "/v1/account/balance", "", secret)
	if got := bal["balance"].(float64); got != testmode.StartBalance.Credits()-run["credits_used"].(float64) {
		t.Errorf("test balance %v after a run of %v", got, run["credits_used"])
	}
	if _, bal := call("GET", "/v1/account/balance", "", a.secret); bal["balance"] != 10.0 {
		t.Errorf("live balance %v, want 10", bal["balance"])
	}
	id, _ := run["id"].(string)
	if st, _ := call("GET", "/v1/extractions/"+id, "", a.secret); st != http.StatusNotFound {
		t.Errorf("the live key reads the test run: %d", st)
	}
	if st, got := call("GET", "/v1/extractions/"+id, "", secret); st != http.StatusOK || got["livemode"] != false {
		t.Errorf("the test key reads its run: %d %v", st, got)
	}
}
