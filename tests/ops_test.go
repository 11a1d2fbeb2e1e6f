package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrape is one read of the admin endpoint's /metrics.
type scrape struct {
	// types maps each metric family name to its type.
	types map[string]string
	// samples are "name{label="v",...}" → value, labels as exposed.
	samples map[string]float64
}

func (g *gateway) scrape(t *testing.T) *scrape {
	t.Helper()
	r, err := http.Get("http://" + g.Admin + "/metrics")
	if err != nil {
		t.Fatalf("scraping /metrics: %v", err)
	}
	defer r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("scraping /metrics: %d", r.StatusCode)
	}
	s := &scrape{types: map[string]string{}, samples: map[string]float64{}}
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			s.types[f[2]] = f[3]
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad sample line %q", line)
		}
		s.samples[line[:i]] = v
	}
	return s
}

// value sums the samples of name whose labels include every given one
// ("k=v" pairs).
func (s *scrape) value(name string, labels ...string) float64 {
	sum := 0.0
	for k, v := range s.samples {
		n, ls, _ := strings.Cut(k, "{")
		if n != name {
			continue
		}
		ok := true
		for _, l := range labels {
			kv := strings.SplitN(l, "=", 2)
			ok = ok && strings.Contains("{"+ls, fmt.Sprintf("%s=%q", kv[0], kv[1]))
		}
		if ok {
			sum += v
		}
	}
	return sum
}

// documentedMetrics returns the metric names docs/operations.md lists in
// its tables (rows that start with a backquoted sdr_ name).
func documentedMetrics(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?m)^\\| `(sdr_[a-z_]+)`")
	var out []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return out
}

// TestMetricsScrape makes a few calls against the real binary and checks
// the module's metrics on the admin endpoint: the attempts of the serving
// offer equal the calls, the records and credits served equal what the
// answers returned (test calls' records are not an offer's), calls are
// counted by service, key mode, status and code, and the list of sdr_
// metrics equals the one docs/operations.md documents.
func TestMetricsScrape(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("acme", 50)

	const calls = 3
	records, credits := 0, 0.0
	for range calls {
		r := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": profileURL})
		if r.Status != 200 || r.JSON["served_by"] != "source_b/pro_net" {
			t.Fatalf("call: %d %s", r.Status, r.Body)
		}
		records += len(r.JSON["data"].([]any))
		credits += num(r.JSON["credits_used"])
	}
	if r := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": "kraft"}); r.Status != 400 {
		t.Fatalf("bad input: %d %s", r.Status, r.Body)
	}
	if r := g.do("POST", "/v1/extract/pro_net/profile.info", "", map[string]any{"url": profileURL}); r.Status != 401 {
		t.Fatalf("no key: %d %s", r.Status, r.Body)
	}
	// Test-mode calls: counted under mode=test, and no offer served or
	// earned their records.
	tk := g.testKey("acme")
	if r := g.do("POST", "/v1/extract/pro_net/profile.info", tk, map[string]any{"url": profileURL}); r.Status != 200 || len(r.JSON["data"].([]any)) == 0 {
		t.Fatalf("test call: %d %s", r.Status, r.Body)
	}
	if r := g.do("POST", "/v1/extract/pro_net/profile.info", tk, map[string]any{"url": "https://www.linkedin.com/in/sdr-test-provider-error"}); r.Status != 502 {
		t.Fatalf("test provider error: %d %s", r.Status, r.Body)
	}

	m := g.scrape(t)
	const offer = "offer=source_b/pro_net"
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sdr_offer_attempts_total", []string{offer, "outcome=ok"}, calls},
		{"sdr_offer_attempts_total", []string{"outcome=upstream_5xx"}, 0},
		{"sdr_offer_attempt_duration_seconds_count", []string{offer, "result=ok"}, calls},
		{"sdr_offer_records_served_total", []string{offer}, float64(records)},
		{"sdr_service_calls_total", []string{"service=pro_net/profile.info", "mode=live", "status=200", "code=none"}, calls},
		{"sdr_service_calls_total", []string{"service=pro_net/profile.info", "mode=live", "status=400", "code=invalid_input_format"}, 1},
		{"sdr_service_calls_total", []string{"service=pro_net/profile.info", "mode=live", "status=401", "code=missing_api_key"}, 1},
		{"sdr_service_calls_total", []string{"service=pro_net/profile.info", "mode=test", "status=200", "code=none"}, 1},
		{"sdr_service_calls_total", []string{"service=pro_net/profile.info", "mode=test", "status=502", "code=provider_error"}, 1},
		{"sdr_service_calls_total", []string{"mode=live", "status=502"}, 0},
		{"sdr_store_settle_duration_seconds_count", []string{"store=badger", "result=ok"}, calls + 2}, // the two test calls settle too
		{"sdr_registry_loads_total", []string{"result=ok"}, 1},
		{"sdr_offer_breaker_state", []string{offer}, 0},
		{"sdr_source_status", []string{"source=source_b", "status=active"}, 1},
		{"sdr_ip_rate_limit_refused_total", []string{"reason=limit"}, 0},
	}
	for _, c := range checks {
		if got := m.value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := m.value("sdr_offer_credits_charged_total", offer); !near(got, credits) {
		t.Errorf("credits charged %v, want %v (the answers' credits_used)", got, credits)
	}
	if got := m.value("sdr_upstream_bytes_read_total", "source=source_b"); got < 100 {
		t.Errorf("upstream bytes read from source_b %v, want the bodies of %d calls", got, calls)
	}
	for k := range m.samples {
		if strings.Contains(k, "acme") || strings.Contains(k, key) {
			t.Errorf("an account or key in a label: %s", k)
		}
	}

	var exposed []string
	for name := range m.types {
		if strings.HasPrefix(name, "sdr_") {
			exposed = append(exposed, name)
		}
	}
	sort.Strings(exposed)
	doc := documentedMetrics(t)
	if strings.Join(doc, " ") != strings.Join(exposed, " ") {
		t.Errorf("docs/operations.md lists\n%v\nthe binary exposes\n%v", doc, exposed)
	}

	// A reload registers the collectors on the new config's registry
	// (no duplicate-registration failure) and the counters carry over.
	p := start(t, nil, caddyBin, "reload", "--force", "--config", filepath.Join(g.Dir, "Caddyfile"),
		"--adapter", "caddyfile", "--address", g.Admin)
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("reload: %v\n%s", err, p.out.String())
	}
	after := g.scrape(t)
	if got := after.value("sdr_registry_loads_total", "result=ok"); got != 2 {
		t.Errorf("registry loads after a reload %v, want 2", got)
	}
	if got := after.value("sdr_offer_attempts_total", offer, "outcome=ok"); got != calls {
		t.Errorf("attempts after a reload %v, want the %d from before it", got, calls)
	}
	if got := after.value("sdr_source_status", "source=source_b", "status=active"); got != 1 {
		t.Errorf("source status after a reload %v, want 1 (the new app is published)", got)
	}

	// The Grafana dashboard queries documented metrics only.
	dash, err := os.ReadFile(filepath.Join(repoRoot, "docs", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(dash) {
		t.Fatal("docs/grafana-dashboard.json is not valid JSON")
	}
	documented := map[string]bool{}
	for _, n := range doc {
		documented[n] = true
	}
	used := regexp.MustCompile(`sdr_[a-z_]+`).FindAllString(string(dash), -1)
	for _, n := range used {
		base := strings.TrimSuffix(n, "_bucket")
		if !documented[base] {
			t.Errorf("the dashboard queries %s, which docs/operations.md does not list", n)
		}
	}
	if len(used) < len(doc) {
		t.Errorf("the dashboard queries %d metrics, fewer than the %d documented", len(used), len(doc))
	}
}

// callLines returns the decoded "call" log lines of a process's output.
func callLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(out, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "call" {
			lines = append(lines, m)
		}
	}
	return lines
}

// TestCallLogLine: every run call writes one JSON log line naming its run
// (the X-Run-Id of the answer), account, key, service, key mode, offer,
// outcome, records, credits and attempts; neither the secret key nor the upstream
// token ever appears in the logs.
func TestCallLogLine(t *testing.T) {
	const token = "upstream-token-7f3a9c"
	s := startSim(t, "-token", token)
	c := defaultConfig(t, s)
	c.Token = token
	c.Global = "log {\n\t\tformat json\n\t\tlevel DEBUG\n\t}"
	g := startGateway(t, c)
	key := g.account("acme", 50)

	ok := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": profileURL})
	if ok.Status != 200 {
		t.Fatalf("call: %d %s", ok.Status, ok.Body)
	}
	s.fault(t, map[string]any{"target": proB, "status": 503})
	s.fault(t, map[string]any{"target": proA, "status": 503})
	failed := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": profileURL})
	if failed.Status != 502 {
		t.Fatalf("failing call: %d %s", failed.Status, failed.Body)
	}
	refused := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": "kraft"})
	tk := g.testKey("acme")
	test := g.do("POST", "/v1/extract/pro_net/profile.info", tk, map[string]any{"url": profileURL})
	if test.Status != 200 {
		t.Fatalf("test call: %d %s", test.Status, test.Body)
	}

	for _, r := range []*response{ok, failed} {
		if r.Header.Get("X-Run-Id") == "" || (r.JSON["id"] != r.Header.Get("X-Run-Id") && r.errField("run_id") != r.Header.Get("X-Run-Id")) {
			t.Errorf("X-Run-Id %q does not name the run of %s", r.Header.Get("X-Run-Id"), r.Body)
		}
	}
	if refused.Header.Get("X-Run-Id") != "" {
		t.Errorf("X-Run-Id on a call refused before routing")
	}

	var lines []map[string]any
	deadline := time.Now().Add(5 * time.Second)
	for len(lines) < 4 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		lines = callLines(t, g.p.out.String())
	}
	if len(lines) != 4 {
		t.Fatalf("%d call log lines, want 4 (one per call):\n%s", len(lines), tail(g.p.out.String(), 30))
	}
	keyID := lines[0]["key_id"]
	want := []map[string]any{
		{"run_id": ok.Header.Get("X-Run-Id"), "account_id": "acme", "service": "pro_net/profile.info", "mode": "live",
			"offer": "source_b/pro_net", "outcome": "completed", "status": 200.0,
			"records": float64(len(ok.JSON["data"].([]any))), "credits": fmt.Sprint(ok.JSON["credits_used"]), "attempts": 1.0},
		{"run_id": failed.Header.Get("X-Run-Id"), "account_id": "acme", "key_id": keyID, "service": "pro_net/profile.info",
			"offer": "source_a/actor_1", "outcome": "failed", "status": 502.0, "code": "provider_error",
			"records": 0.0, "credits": "0", "attempts": 2.0},
		{"service": "pro_net/profile.info", "mode": "live", "status": 400.0, "code": "invalid_input_format"},
		{"run_id": test.Header.Get("X-Run-Id"), "account_id": "acme~test", "service": "pro_net/profile.info", "mode": "test",
			"outcome": "completed", "status": 200.0, "credits": fmt.Sprint(test.JSON["credits_used"])},
	}
	for i, w := range want {
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("line %d: %s = %v, want %v (%v)", i, k, lines[i][k], v, lines[i])
			}
		}
		if _, ok := lines[i]["duration"]; !ok {
			t.Errorf("line %d has no duration: %v", i, lines[i])
		}
	}
	if id, _ := keyID.(string); !strings.HasPrefix(id, "key_") {
		t.Errorf("key_id %v, want the key's id", keyID)
	}
	out := g.p.out.String()
	if strings.Contains(out, key) || strings.Contains(out, key[strings.LastIndexByte(key, '_')+1:]) {
		t.Error("the secret API key appears in the logs")
	}
	if strings.Contains(out, token) {
		t.Error("the upstream token appears in the logs")
	}
}

// TestHealth: live and ready on a healthy node, public (no key).
func TestHealth(t *testing.T) {
	g := startGateway(t, defaultConfig(t, nil))
	live := g.do("GET", "/v1/health/live", "", nil)
	if live.Status != 200 || live.JSON["status"] != "live" {
		t.Errorf("live: %d %s", live.Status, live.Body)
	}
	ready := g.do("GET", "/v1/health/ready", "", nil)
	if ready.Status != 200 || ready.JSON["status"] != "ready" {
		t.Errorf("ready: %d %s", ready.Status, ready.Body)
	}
	if r := g.do("POST", "/v1/health/ready", "", nil); r.Status != 405 || r.errCode() != "method_not_allowed" {
		t.Errorf("POST ready: %d %s", r.Status, r.Body)
	}
	if r := g.do("GET", "/v1/health/nope", "", nil); r.Status != 404 || r.errCode() != "not_found" {
		t.Errorf("unknown probe: %d %s", r.Status, r.Body)
	}
}

// TestSourceStatusFromOutcomes: a source whose offer keeps failing shows
// degraded in /v1/providers (and in the metrics) while calls fail over,
// and its breaker shows open once it trips.
func TestSourceStatusFromOutcomes(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("acme", 50)
	s.fault(t, map[string]any{"target": proB, "status": 503})
	status := func() string {
		r := g.do("GET", "/v1/providers/source_b", "", nil)
		st, _ := r.JSON["status"].(string)
		return st
	}
	if got := status(); got != "active" {
		t.Fatalf("status before any failure %q, want active", got)
	}
	for i := range 5 {
		r := g.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"url": profileURL})
		if r.Status != 200 || r.JSON["served_by"] != "source_a/actor_1" {
			t.Fatalf("call %d: %d %s", i, r.Status, r.Body)
		}
	}
	if got := status(); got != "degraded" {
		t.Errorf("status after repeated failures %q, want degraded", got)
	}
	list := g.do("GET", "/v1/providers", "", nil)
	for _, p := range list.JSON["data"].([]any) {
		if p := p.(map[string]any); p["id"] == "source_b" && p["status"] != "degraded" {
			t.Errorf("list shows source_b %v, want degraded", p["status"])
		}
	}
	m := g.scrape(t)
	if got := m.value("sdr_source_status", "source=source_b", "status=degraded"); got != 1 {
		t.Errorf("sdr_source_status degraded = %v, want 1", got)
	}
	if got := m.value("sdr_offer_breaker_state", "offer=source_b/pro_net"); got != 2 {
		t.Errorf("breaker state of the failing offer %v, want 2 (open)", got)
	}
	if got := m.value("sdr_offer_attempts_total", "offer=source_b/pro_net", "outcome=upstream_5xx"); got != 5 {
		t.Errorf("failed attempts %v, want 5", got)
	}
	// The operator's override wins over the computed status.
	if st, b := g.admin("PUT", "/sdr/sources/source_b/status", map[string]any{"status": "active"}); st != 200 {
		t.Fatalf("override: %d %s", st, b)
	}
	if got := status(); got != "active" {
		t.Errorf("status with an active override %q, want active", got)
	}
}
