package api

import (
	"cmp"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/metrics"
)

// callsCounted is sdr_service_calls_total{service,mode,status,code} as
// gathered from reg.
func callsCounted(t *testing.T, reg *prometheus.Registry, service, mode, status, code string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"service": service, "mode": mode, "status": status, "code": code}
	for _, mf := range mfs {
		if mf.GetName() != "sdr_service_calls_total" {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want[lp.GetName()] != lp.GetValue() {
					continue metric
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// TestCallObserved: every run call (extract, its alias, search) is counted
// under a bounded service label and logs one line; a routed run (here a
// failed one: the test router has no source clients) names its run in
// X-Run-Id and in the line, a refused one carries its error code and no run
// id; other routes log no call; the secret never reaches the log. Each
// call is counted and logged with its key's mode, a test-shaped key's
// refused before it is known included.
func TestCallObserved(t *testing.T) {
	a := newTestAPI(t, credits.PerCredit)
	core, logs := observer.New(zapcore.InfoLevel)
	a.Logger = zap.New(core)
	reg := prometheus.NewPedanticRegistry()
	if err := metrics.Register(reg); err != nil {
		t.Fatal(err)
	}

	const profile = `{"url": "https://www.linkedin.com/in/a"}`
	tests := []struct {
		name, method, path, body string
		service, code            string
		run                      bool
		keyed                    bool   // refused after authentication: account and key in the line
		secret                   string // the bearer key, a.secret when ""
		mode                     string
	}{
		{"routed run", "POST", "/v1/extract/pro_net/profile.info", profile, "pro_net/profile.info", "", true, true, "", "live"},
		{"alias, refused", "POST", "/v1/pro_net/profile.info", `{"url": "kraft"}`, "pro_net/profile.info", "invalid_input_format", false, true, "", "live"},
		{"unknown service", "POST", "/v1/extract/nope/whatever-the-caller-typed", `{}`, "unknown", "unknown_platform", false, false, "", "live"},
		{"search", "POST", "/v1/search", `{}`, "search", "missing_queries", false, true, "", "live"},
		{"unknown test key", "POST", "/v1/extract/pro_net/profile.info", profile, "pro_net/profile.info", "invalid_api_key", false, false, "sdr_test_" + strings.Repeat("b", 40), "test"},
		{"not a run call", "GET", "/v1/services", "", "", "", false, false, "", ""},
		{"wrong method", "GET", "/v1/search", "", "", "", false, false, "", ""},
	}
	live := a.secret
	for _, tt := range tests {
		logs.TakeAll()
		a.secret = cmp.Or(tt.secret, live)
		res, e := a.do(t, tt.method, tt.path, tt.body, true)
		a.secret = live
		lines := logs.FilterMessage("call").AllUntimed()
		if tt.service == "" {
			if len(lines) != 0 {
				t.Errorf("%s: %d call lines, want none", tt.name, len(lines))
			}
			continue
		}
		if len(lines) != 1 {
			t.Fatalf("%s: %d call lines, want 1", tt.name, len(lines))
		}
		f := lines[0].ContextMap()
		if f["service"] != tt.service || f["status"] != int64(res.StatusCode) || f["mode"] != tt.mode {
			t.Errorf("%s: line %v, want service %s mode %s status %d", tt.name, f, tt.service, tt.mode, res.StatusCode)
		}
		if _, ok := f["duration"]; !ok {
			t.Errorf("%s: no duration in %v", tt.name, f)
		}
		code := e.Code
		if tt.code != "" && code != tt.code {
			t.Errorf("%s: answered %s, want %s", tt.name, code, tt.code)
		}
		if code != "" && f["code"] != code {
			t.Errorf("%s: line code %v, want %s", tt.name, f["code"], code)
		}
		runID := res.Header.Get(runIDHeader)
		if tt.run {
			if runID == "" || f["run_id"] != runID || f["account_id"] != "acme" || f["key_id"] != a.key.ID ||
				f["outcome"] != "failed" || f["offer"] == "" || f["attempts"] == int64(0) || f["credits"] != "0" {
				t.Errorf("%s: X-Run-Id %q, line %v", tt.name, runID, f)
			}
		} else if runID != "" || f["run_id"] != nil {
			t.Errorf("%s: X-Run-Id %q and run_id %v on a call refused before routing", tt.name, runID, f["run_id"])
		}
		if keyed := f["account_id"] == "acme" && f["key_id"] == a.key.ID; keyed != tt.keyed {
			t.Errorf("%s: account_id %v key_id %v in the line, want them: %v", tt.name, f["account_id"], f["key_id"], tt.keyed)
		}
		label := code
		if label == "" {
			label = "none"
		}
		if got := callsCounted(t, reg, tt.service, tt.mode, strconv.Itoa(res.StatusCode), label); got < 1 {
			t.Errorf("%s: call not counted under %s %s %d %s", tt.name, tt.service, tt.mode, res.StatusCode, label)
		}
		for _, v := range f {
			if s, ok := v.(string); ok && strings.Contains(s, a.secret) {
				t.Errorf("%s: the secret key is in the call line", tt.name)
			}
		}
	}
}
