package caddymodule

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/zap"

	"socialrouter/caddymodule/metrics"
	"socialrouter/caddymodule/registry"
	badgerstore "socialrouter/caddymodule/store/badger"
)

// testHandler is a handler over the repository's declarations and a fresh
// badger store, and that store (to close it).
func testHandler(t *testing.T) (*Handler, *badgerstore.Store) {
	t.Helper()
	reg, err := registry.Load("../services")
	if err != nil {
		t.Fatal(err)
	}
	bs, err := badgerstore.Open(t.TempDir(), badgerstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bs.Close() })
	app := &App{reg: reg, store: metrics.InstrumentStore(bs, "badger"), KeyPrefix: "sdr"}
	return &Handler{app: app, logger: zap.NewNop()}, bs
}

// TestCallService: run calls get a bounded service label, other requests
// none.
func TestCallService(t *testing.T) {
	h, _ := testHandler(t)
	tests := []struct {
		method string
		seg    []string
		want   string
		call   bool
	}{
		{"POST", []string{"extract", "pro_net", "profile.info"}, "pro_net/profile.info", true},
		{"POST", []string{"pro_net", "profile.info"}, "pro_net/profile.info", true},
		{"POST", []string{"search"}, "search", true},
		{"POST", []string{"extract", "nope", "whatever-the-caller-typed"}, "unknown", true},
		{"POST", []string{"pro_net", "no.such"}, "unknown", true},
		{"GET", []string{"extract", "pro_net", "profile.info"}, "", false},
		{"POST", []string{"health", "ready"}, "", false},
		{"POST", []string{"account", "balance"}, "", false},
		{"GET", []string{"extractions", "ext_1"}, "", false},
	}
	for _, tt := range tests {
		got, call := h.callService(tt.method, tt.seg)
		if got != tt.want || call != tt.call {
			t.Errorf("%s %v: %q %v, want %q %v", tt.method, tt.seg, got, call, tt.want, tt.call)
		}
	}
}

// TestReady: ready while the store answers, 503 not_ready once it is
// closed.
func TestReady(t *testing.T) {
	h, bs := testHandler(t)
	probe := func() (int, map[string]any) {
		w := httptest.NewRecorder()
		h.health(w, httptest.NewRequest(http.MethodGet, "/v1/health/ready", nil), "ready")
		var m map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &m)
		return w.Code, m
	}
	if code, m := probe(); code != 200 || m["status"] != "ready" {
		t.Fatalf("open store: %d %v", code, m)
	}
	_ = bs.Close()
	code, m := probe()
	e, _ := m["error"].(map[string]any)
	checks, _ := e["checks"].(map[string]any)
	if code != 503 || e["code"] != "not_ready" || checks["store"] != "unavailable" {
		t.Errorf("closed store: %d %v", code, m)
	}
}
