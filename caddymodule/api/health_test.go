package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"socialrouter/caddymodule/metrics"
	"socialrouter/caddymodule/registry"
)

// TestHealth: live always; ready while the registry is loaded and the store
// answers, 503 not_ready naming the failed check otherwise; public (no
// key); an unknown probe is a 404.
func TestHealth(t *testing.T) {
	a := newTestAPI(t, 0)
	a.Store = metrics.InstrumentStore(a.store, "badger")
	probe := func(path string) (int, map[string]any) {
		t.Helper()
		w := httptest.NewRecorder()
		a.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		var m map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
			t.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
		}
		return w.Code, m
	}
	checksOf := func(m map[string]any) map[string]any {
		e, _ := m["error"].(map[string]any)
		c, _ := e["checks"].(map[string]any)
		return c
	}

	if code, m := probe("/v1/health/live"); code != 200 || m["status"] != "live" {
		t.Errorf("live: %d %v", code, m)
	}
	if code, m := probe("/v1/health/ready"); code != 200 || m["status"] != "ready" {
		t.Fatalf("ready, store open: %d %v", code, m)
	}
	if code, m := probe("/v1/health/nope"); code != 404 {
		t.Errorf("unknown probe: %d %v", code, m)
	}

	loaded := a.Registry
	a.Registry = &registry.Registry{}
	code, m := probe("/v1/health/ready")
	if c := checksOf(m); code != 503 || c["registry"] != "not_loaded" || c["store"] != "ok" {
		t.Errorf("empty registry: %d %v", code, m)
	}
	a.Registry = loaded

	_ = a.store.Close()
	code, m = probe("/v1/health/ready")
	e, _ := m["error"].(map[string]any)
	if c := checksOf(m); code != 503 || e["code"] != "not_ready" || c["store"] != "unavailable" || c["registry"] != "ok" {
		t.Errorf("closed store: %d %v", code, m)
	}
	if code, _ := probe("/v1/health/live"); code != 200 {
		t.Errorf("live with the store closed: %d", code)
	}
}
