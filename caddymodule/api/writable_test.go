package api

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/metrics"
	"socialrouter/caddymodule/store"
	badgerstore "socialrouter/caddymodule/store/badger"
)

// TestUnwritableStoreRefusesCalls: on a store whose filesystem has less
// free space than its reserve (here a reserve no disk has), an extract
// call is 503 store_unavailable with the reason and a Retry-After before
// anything is reserved or routed, no run is stored, and readiness says
// disk_full; reads still answer.
func TestUnwritableStoreRefusesCalls(t *testing.T) {
	a := newTestAPIOn(t, credits.PerCredit, badgerstore.Options{MinFreeBytes: math.MaxInt64})
	a.Store = metrics.InstrumentStore(a.store, "badger")
	body := `{"url": "https://www.linkedin.com/in/rbranson"}`
	r := httptest.NewRequest("POST", "/v1/extract/pro_net/profile.info", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+a.secret)
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, r)
	var e struct {
		Error map[string]any `json:"error"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &e)
	if rec.Code != http.StatusServiceUnavailable || e.Error["code"] != "store_unavailable" || e.Error["reason"] != "disk_full" ||
		rec.Header().Get("Retry-After") != "30" || e.Error["run_id"] != nil {
		t.Fatalf("extract on a full disk: %d %s (Retry-After %q)", rec.Code, rec.Body, rec.Header().Get("Retry-After"))
	}
	if runs, err := a.store.ListRuns(t.Context(), "acme", store.RunFilter{}); err != nil || len(runs) != 0 {
		t.Errorf("runs after a refused call: %v, %v", runs, err)
	}
	if bal, _ := a.store.GetAccount(t.Context(), "acme"); bal.Balance != credits.PerCredit {
		t.Errorf("balance %d, want %d", bal.Balance, credits.PerCredit)
	}
	rec = httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/health/ready", nil))
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), `"store":"disk_full"`) || !strings.Contains(rec.Body.String(), `"not_ready"`) {
		t.Errorf("readiness on a full disk: %d %s", rec.Code, rec.Body)
	}
	if res, _ := a.do(t, "GET", "/v1/account/balance", "", true); res.StatusCode != 200 {
		t.Errorf("balance on a full disk: %d, want 200 (reads still work)", res.StatusCode)
	}
}
