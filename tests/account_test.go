package tests

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func cli(t *testing.T, g *gateway, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(caddyBin, append(append([]string{"sdr"}, args...), "--address", g.Admin)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestCLI: create an account and a key with the CLI, use the key, revoke
// it with the CLI and see 401 revoked_api_key. The secret never reaches the
// access log.
func TestCLI(t *testing.T) {
	c := defaultConfig(t, nil)
	c.SiteExtra = "log"
	g := startGateway(t, c)
	if out, err := cli(t, g, "account", "create", "acme", "--balance", "2.5"); err != nil || !strings.Contains(out, `"balance": 2.5`) {
		t.Fatalf("account create: %v\n%s", err, out)
	}
	out, err := cli(t, g, "key", "create", "acme", "--name", "backend", "--limit-period", "day", "--limit-credits", "1")
	if err != nil {
		t.Fatalf("key create: %v\n%s", err, out)
	}
	var k struct {
		ID, Key string
	}
	_ = json.Unmarshal([]byte(out), &k)
	if !regexp.MustCompile(`^sdr_live_[0-9A-Za-z]{32,}$`).MatchString(k.Key) {
		t.Fatalf("key %q", k.Key)
	}
	if r := g.do("GET", "/v1/account/balance", k.Key, nil); r.Status != 200 || num(r.JSON["balance"]) != 2.5 {
		t.Fatalf("balance: %d %s", r.Status, r.Body)
	}
	if r := g.do("GET", "/v1/account/usage?days=7", k.Key, nil); r.Status != 200 || r.JSON["period"] != "7d" {
		t.Fatalf("usage: %d %s", r.Status, r.Body)
	}
	if out, err := cli(t, g, "account", "credit", "acme", "1.5"); err != nil || !strings.Contains(out, `"balance": 4`) {
		t.Fatalf("credit: %v\n%s", err, out)
	}
	if out, err := cli(t, g, "account", "show", "acme"); err != nil || strings.Contains(out, k.Key) || !strings.Contains(out, k.ID) {
		t.Fatalf("show: %v\n%s", err, out)
	}
	if out, err := cli(t, g, "key", "limit", k.ID, "--clear"); err != nil || strings.Contains(out, "credit_limit") {
		t.Fatalf("limit clear: %v\n%s", err, out)
	}
	if out, err := cli(t, g, "key", "revoke", k.ID); err != nil {
		t.Fatalf("revoke: %v\n%s", err, out)
	}
	if r := g.do("GET", "/v1/account/balance", k.Key, nil); r.Status != 401 || r.errCode() != "revoked_api_key" {
		t.Fatalf("after revoke: %d %s", r.Status, r.Body)
	}
	if _, err := cli(t, g, "account", "show", "nobody"); err == nil {
		t.Error("show of an unknown account exited 0")
	}
	time.Sleep(200 * time.Millisecond) // let the access log flush
	logs := g.p.out.String()
	if !strings.Contains(logs, "/v1/account/balance") {
		t.Fatal("access log not written; the redaction check would prove nothing")
	}
	if strings.Contains(logs, k.Key) || strings.Contains(logs, k.Key[9:]) {
		t.Error("the API key appears in the logs")
	}
}

// TestSigkillDuringSettle kills the gateway with SIGKILL in the middle of
// a settle load and restarts it on the same data: the balance still equals
// the start minus the credits of the stored runs, and every run answered
// before the kill is there with its charge.
func TestSigkillDuringSettle(t *testing.T) {
	s := startSim(t)
	c := defaultConfig(t, s)
	g := startGateway(t, c)
	const start = 5.0
	key := g.account("acme", start)

	var mu sync.Mutex
	answered := map[string]float64{}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				r, ok := tryExtract(g.URL, key)
				if !ok {
					return
				}
				if id, _ := r.JSON["id"].(string); r.Status == 200 && id != "" {
					mu.Lock()
					answered[id] = num(r.JSON["credits_used"])
					mu.Unlock()
				}
			}
		}()
	}
	waitUntil(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(answered) >= 20 })
	if err := g.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	stop.Store(true)
	wg.Wait()
	_, _ = g.p.cmd.Process.Wait()

	g2 := startGateway(t, c)
	bal := g2.balance(key)
	u := g2.do("GET", "/v1/account/usage?days=1", key, nil)
	spent := num(u.JSON["total_credits"])
	if !near(bal, start-spent) {
		t.Errorf("balance %v != start %v − usage %v", bal, start, spent)
	}
	sum := 0.0
	for id, cr := range answered {
		r := g2.do("GET", "/v1/extractions/"+id, key, nil)
		if r.Status != 200 || !near(num(r.JSON["credits_used"]), cr) {
			t.Fatalf("run %s answered before the kill: %d %s", id, r.Status, r.Body)
		}
		sum += cr
	}
	if spent < sum-1e-9 {
		t.Errorf("usage %v is less than the answered runs' %v", spent, sum)
	}
	if int(num(u.JSON["total_requests"])) < len(answered) {
		t.Errorf("%v requests recorded, %d answered", u.JSON["total_requests"], len(answered))
	}
	// No hold survived the kill: leave the account exactly three records
	// at source_b and a call of ten URLs is served three, not refused.
	if st, b := g2.admin("POST", "/sdr/accounts/acme/credits", map[string]any{"amount": json.Number(strconv.FormatFloat(3*priceB+0.0001-bal, 'f', 6, 64))}); st != 200 {
		t.Fatalf("debiting to three records: %d %s", st, b)
	}
	r := g2.do("POST", "/v1/extract/pro_net/profile.info", key, map[string]any{"urls": profileURLs(10), "limit": 10})
	if data, _ := r.JSON["data"].([]any); r.Status != 200 || len(data) != 3 || r.JSON["capped_by"] != "balance" {
		t.Errorf("after the restart a call of 10 on a 3-record balance: %d %s", r.Status, r.Body)
	}
	t.Logf("%d runs answered before SIGKILL; balance %v, usage %v", len(answered), bal, spent)
}

// tryExtract sends one extract call, reporting false once the gateway is
// gone (the kill under test).
func tryExtract(base, key string) (*response, bool) {
	req, _ := newJSONRequest("POST", base+"/v1/extract/pro_net/company.info", key,
		`{"url": "https://www.linkedin.com/company/kraft-heinz-company"}`)
	r, err := client.Do(req)
	if err != nil {
		return nil, false
	}
	defer r.Body.Close()
	resp := &response{Status: r.StatusCode}
	if err := json.NewDecoder(r.Body).Decode(&resp.JSON); err != nil {
		// The kill can land after the status line but before the body is
		// out; a cut-off response is not an answer.
		return nil, false
	}
	return resp, true
}
