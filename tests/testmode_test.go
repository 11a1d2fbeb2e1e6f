package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"socialrouter/caddymodule/api/errwire"
	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/servicecheck"
	"socialrouter/caddymodule/testmode"
	"socialrouter/internal/mcptest"
	"socialrouter/internal/testservices"
)

// testKey creates a test key of account through the admin API.
func (g *gateway) testKey(account string) string {
	g.t.Helper()
	st, b := g.admin("POST", "/sdr/accounts/"+account+"/keys", map[string]any{"name": "ci", "mode": "test"})
	if st != 201 {
		g.t.Fatalf("creating a test key: %d %s", st, b)
	}
	var k struct{ Key, Mode string }
	_ = json.Unmarshal(b, &k)
	if !strings.HasPrefix(k.Key, "sdr_test_") || k.Mode != "test" {
		g.t.Fatalf("test key %q, mode %q", k.Key, k.Mode)
	}
	return k.Key
}

// loadServices compiles a services directory as the gateway does.
func loadServices(t *testing.T, dir string) *registry.Registry {
	t.Helper()
	reg, err := servicecheck.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// checkTestRun holds a completed test-mode answer to what a live one
// gives: records passing the service's record check, livemode false,
// credits_used at the serving offer's price.
func checkTestRun(t *testing.T, s *registry.Service, r *response) {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("%s: %d %s", s.Key, r.Status, r.Body)
	}
	var run struct {
		Livemode    *bool             `json:"livemode"`
		ServedBy    string            `json:"served_by"`
		Data        []json.RawMessage `json:"data"`
		CreditsUsed credits.Micros    `json:"credits_used"`
	}
	if err := json.Unmarshal(r.Body, &run); err != nil {
		t.Fatal(err)
	}
	if run.Livemode == nil || *run.Livemode {
		t.Errorf("%s: livemode %v, want false", s.Key, run.Livemode)
	}
	if len(run.Data) == 0 {
		t.Errorf("%s: no records", s.Key)
	}
	for i, rec := range run.Data {
		if v := s.CheckRecord(rec); v != nil {
			t.Errorf("%s: record %d fails the record check: %v", s.Key, i, v)
		}
	}
	o, ok := s.Offer(run.ServedBy)
	if !ok {
		t.Fatalf("%s: served_by %q", s.Key, run.ServedBy)
	}
	if want := o.Price * credits.Micros(len(run.Data)); run.CreditsUsed != want {
		t.Errorf("%s: credits_used %s for %d records at %s, want %s", s.Key, run.CreditsUsed, len(run.Data), o.Price, want)
	}
}

// webhookSink records the run events of one endpoint, verified.
type webhookSink struct {
	*httptest.Server
	mu     sync.Mutex
	secret string
	events []map[string]any
	bad    []error
}

func newWebhookSink(t *testing.T) *webhookSink {
	s := &webhookSink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		defer s.mu.Unlock()
		wh, err := standardwebhooks.NewWebhook(s.secret)
		if err == nil {
			err = wh.Verify(body, r.Header)
		}
		if err != nil {
			s.bad = append(s.bad, err)
		}
		var ev map[string]any
		_ = json.Unmarshal(body, &ev)
		s.events = append(s.events, ev)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *webhookSink) got() ([]map[string]any, []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.events...), append([]error(nil), s.bad...)
}

// register registers the sink for the run events of account's mode
// (live or test).
func (s *webhookSink) register(t *testing.T, g *gateway, account, mode string) {
	t.Helper()
	st, b := g.admin("POST", "/sdr/accounts/"+account+"/webhooks", map[string]any{"url": s.URL, "events": []string{"run.completed", "run.failed", "run.cancelled"}, "mode": mode})
	if st != 201 {
		t.Fatalf("registering a webhook for %s: %d %s", account, st, b)
	}
	var ep struct{ Secret string }
	_ = json.Unmarshal(b, &ep)
	s.mu.Lock()
	s.secret = ep.Secret
	s.mu.Unlock()
}

// TestTestModeReachesNoUpstream drives test keys through every service,
// every magic input, a 16-way concurrent burst and async runs with
// webhooks: the simulator sees no call and its ledger stays empty, the
// live balance does not move by one micro-credit, and live and test runs,
// usage and webhooks stay apart. A last live call shows the checks would
// see an upstream call.
func TestTestModeReachesNoUpstream(t *testing.T) {
	s := startSim(t)
	c := defaultConfig(t, s)
	c.AppExtra = "webhooks_allow_private\n\t\twebhooks_retry_schedule 1s 1s"
	g := startGateway(t, c)
	live := g.account("acme", 10)
	test := g.testKey("acme")
	out, err := cli(t, g, "key", "create", "acme", "--test", "--name", "cli")
	if err != nil || !strings.Contains(out, `"key": "sdr_test_`) {
		t.Fatalf("caddy sdr key create --test: %v\n%s", err, out)
	}
	liveHooks, testHooks := newWebhookSink(t), newWebhookSink(t)
	liveHooks.register(t, g, "acme", testmode.Live)
	testHooks.register(t, g, "acme", testmode.Test)
	s.reset(t)
	s.clearLedger(t)
	liveStart := balanceMicros(t, g, live)
	if got := balanceMicros(t, g, test); got != testmode.StartBalance {
		t.Errorf("test balance %s, want the starting %s", got, testmode.StartBalance)
	}
	reg := loadServices(t, filepath.Join(repoRoot, "services"))
	var testRun string

	t.Run("every service", func(t *testing.T) {
		n := 0
		for _, svc := range reg.Services {
			if !svc.Callable() {
				continue
			}
			n++
			body := map[string]any{svc.SingleInputField(): svc.Accepts[0].Example, "limit": 3}
			r := g.do("POST", "/v1/extract/"+svc.Key, test, body)
			checkTestRun(t, svc, r)
			if testRun == "" {
				testRun, _ = r.JSON["id"].(string)
			}
		}
		if n < 10 {
			t.Errorf("%d callable services, want every declared one", n)
		}
	})

	magicService, _ := reg.Service("pro_net", "profile.info")
	t.Run("magic inputs", func(t *testing.T) {
		offers := magicService.LiveOffers()
		for _, m := range testmode.Magics {
			in, ok := testmode.MagicInput(magicService, m.Word)
			if !ok {
				t.Fatalf("no magic input %s for %s", m.Word, magicService.Key)
			}
			r := g.do("POST", "/v1/extract/"+magicService.Key, test, map[string]any{"url": in})
			attempts, _ := r.JSON["attempts"].([]any)
			if m.Fails {
				w := errwire.Of(m.Kind)
				attempts, _ = r.errField("attempts").([]any)
				if r.Status != w.Status || r.errCode() != w.Code || len(attempts) != len(offers) {
					t.Errorf("%s: %d %s with %d attempts, want %d %s with %d", m.Word, r.Status, r.errCode(), len(attempts), w.Status, w.Code, len(offers))
				}
				if m.Word == testmode.RateLimited && r.Header.Get("Retry-After") != strconv.Itoa(testmode.RetryAfterSeconds) {
					t.Errorf("%s: Retry-After %q", m.Word, r.Header.Get("Retry-After"))
				}
				continue
			}
			if r.Status != 200 || r.JSON["livemode"] != false {
				t.Errorf("%s: %d %s", m.Word, r.Status, r.Body)
				continue
			}
			data, _ := r.JSON["data"].([]any)
			switch m.Word {
			case testmode.Empty:
				if len(data) != 0 || r.JSON["credits_used"] != 0.0 {
					t.Errorf("%s: %d records, credits_used %v", m.Word, len(data), r.JSON["credits_used"])
				}
			case testmode.Failover:
				if r.JSON["served_by"] != offers[1].ID || len(attempts) != 2 || len(data) == 0 {
					t.Errorf("%s: served_by %v after %d attempts", m.Word, r.JSON["served_by"], len(attempts))
				}
			default:
				if len(data) == 0 {
					t.Errorf("%s: no records", m.Word)
				}
			}
		}
	})

	t.Run("16-way burst", func(t *testing.T) {
		before := balanceMicros(t, g, test)
		var wg sync.WaitGroup
		charged := make([]credits.Micros, 16)
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := testmode.Magics[i%len(testmode.Magics)]
				in, _ := testmode.MagicInput(magicService, m.Word)
				if i%2 == 0 {
					in = magicService.Accepts[0].Example
				}
				r := g.do("POST", "/v1/extract/"+magicService.Key, test, map[string]any{"url": in})
				if r.Status == 200 {
					charged[i] = micros(t, r.Body, "credits_used")
				}
			}()
		}
		wg.Wait()
		var sum credits.Micros
		for _, c := range charged {
			sum += c
		}
		if after := balanceMicros(t, g, test); before-after != sum || sum == 0 {
			t.Errorf("test balance %s → %s, the burst's runs charged %s", before, after, sum)
		}
	})

	t.Run("async with webhooks", func(t *testing.T) {
		slow, _ := testmode.MagicInput(magicService, testmode.Slow)
		r := asyncDo(t, g, "POST", "/v1/extract/"+magicService.Key, test, map[string]any{"url": slow}, preferAsync)
		if r.Status != 202 || r.JSON["status"] != "running" || r.JSON["livemode"] != false {
			t.Fatalf("async submit: %d %s", r.Status, r.Body)
		}
		id, _ := r.JSON["id"].(string)
		time.Sleep(time.Second)
		if r := asyncDo(t, g, "GET", "/v1/extractions/"+id, test, nil, nil); r.JSON["status"] != "running" {
			t.Errorf("a slow run is %v after 1 s, want running", r.JSON["status"])
		}
		cancelled := asyncDo(t, g, "POST", "/v1/extract/"+magicService.Key, test, map[string]any{"url": slow}, preferAsync)
		cid, _ := cancelled.JSON["id"].(string)
		if r := asyncDo(t, g, "POST", "/v1/extractions/"+cid+"/cancel", test, nil, nil); r.Status != 200 || r.JSON["status"] != "cancelled" {
			t.Errorf("cancel: %d %s", r.Status, r.Body)
		}
		failed, _ := testmode.MagicInput(magicService, testmode.ProviderError)
		fr := asyncDo(t, g, "POST", "/v1/extract/"+magicService.Key, test, map[string]any{"url": failed}, preferAsync)
		fid, _ := fr.JSON["id"].(string)
		if done := follow(t, g, test, id, 20*time.Second); done.JSON["status"] != "completed" || done.JSON["livemode"] != false {
			t.Errorf("slow run: %s", done.Body)
		}
		if done := follow(t, g, test, fid, 20*time.Second); done.JSON["status"] != "failed" {
			t.Errorf("failing run: %s", done.Body)
		}
		want := map[string]string{id: "run.completed", cid: "run.cancelled", fid: "run.failed"}
		deadline := time.Now().Add(15 * time.Second)
		for {
			evs, bad := testHooks.got()
			seen := map[string]string{}
			for _, ev := range evs {
				data, _ := ev["data"].(map[string]any)
				runID, _ := data["id"].(string)
				seen[runID], _ = ev["type"].(string)
				if data["livemode"] != false {
					t.Errorf("event %v of %s: livemode %v", ev["type"], runID, data["livemode"])
				}
			}
			if len(bad) > 0 {
				t.Fatalf("unverified deliveries: %v", bad)
			}
			if fmt.Sprint(seen) == fmt.Sprint(want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("test endpoint got %v, want %v", seen, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if evs, _ := liveHooks.got(); len(evs) != 0 {
			t.Errorf("the live endpoint got %d events of test runs", len(evs))
		}
	})

	t.Run("MCP", func(t *testing.T) {
		cs := mcptest.Connect(t, g.URL+"/mcp", test, nil)
		isErr, run := mcpCall(t, cs, "pro_net_profile_info", map[string]any{"url": magicService.Accepts[0].Example})
		if isErr || run["status"] != "completed" || run["livemode"] != false {
			t.Errorf("extract tool with a test key: %v", run)
		}
		failing, _ := testmode.MagicInput(magicService, testmode.ProviderError)
		if isErr, m := mcpCall(t, cs, "pro_net_profile_info", map[string]any{"url": failing}); !isErr || mcptest.ErrCode(m) != "provider_error" {
			t.Errorf("extract tool with %s: %v", testmode.ProviderError, m)
		}
		if isErr, bal := mcpCall(t, cs, "get_balance", nil); isErr || num(bal["balance"]) != g.balance(test) {
			t.Errorf("get_balance with a test key: %v", bal)
		}
	})

	t.Run("no upstream, no live money", func(t *testing.T) {
		if calls := s.calls(t); len(calls) != 0 {
			t.Errorf("the simulator got %d calls from test keys, first %s %s", len(calls), calls[0].Protocol, calls[0].Target)
		}
		if jobs := s.ledger(t); len(jobs) != 0 {
			t.Errorf("the simulator's ledger has %d jobs from test keys", len(jobs))
		}
		if got := balanceMicros(t, g, live); got != liveStart {
			t.Errorf("live balance %s, want %s untouched", got, liveStart)
		}
		u := g.do("GET", "/v1/account/usage", live, nil)
		if u.Status != 200 || u.JSON["total_requests"] != 0.0 {
			t.Errorf("live usage after test calls only: %s", u.Body)
		}
		if u := g.do("GET", "/v1/account/usage", test, nil); u.Status != 200 || u.JSON["total_requests"] == 0.0 {
			t.Errorf("test usage: %s", u.Body)
		}
	})

	t.Run("modes do not see each other's runs", func(t *testing.T) {
		r := g.do("POST", "/v1/extract/pro_net/profile.info", live, map[string]any{"url": magicService.Accepts[0].Example})
		if r.Status != 200 || r.JSON["livemode"] != true {
			t.Fatalf("live call: %d %s", r.Status, r.Body)
		}
		liveRun, _ := r.JSON["id"].(string)
		if len(s.ledger(t))+len(s.calls(t)) == 0 {
			t.Error("a live call left no trace at the simulator: the checks above could not fail")
		}
		for _, c := range []struct{ key, run string }{{live, testRun}, {test, liveRun}} {
			if r := g.do("GET", "/v1/extractions/"+c.run, c.key, nil); r.Status != 404 || r.errCode() != "not_found" {
				t.Errorf("GET %s with the other mode's key: %d %s", c.run, r.Status, r.Body)
			}
		}
		if r := g.do("GET", "/v1/extractions/"+testRun, test, nil); r.Status != 200 || r.JSON["livemode"] != false {
			t.Errorf("GET the test run with the test key: %d %s", r.Status, r.Body)
		}
	})
}

// TestTestModeAddedService: a service added in CUE (the test-only
// addition set) answers a test key from its examples with no Go change,
// on a gateway whose upstreams do not exist; and a test key's credit limit
// refuses what a live key's would; the operator's reset refills the spent
// test balance and leaves the live one.
func TestTestModeAddedService(t *testing.T) {
	dir := copyServices(t)
	if _, err := testservices.Add(dir, testservices.Operator); err != nil {
		t.Fatal(err)
	}
	c := defaultConfig(t, nil) // no simulator: every upstream is 127.0.0.1:1
	c.Services = dir
	g := startGateway(t, c)
	live := g.account("acme", 1)
	liveStart := balanceMicros(t, g, live)
	test := g.testKey("acme")
	reg := loadServices(t, dir)
	for _, key := range testservices.Keys(testservices.Operator) {
		platform, name, _ := strings.Cut(key, "/")
		svc, ok := reg.Service(platform, name)
		if !ok {
			t.Fatalf("no %s", key)
		}
		if !svc.Callable() {
			continue // the set's search type: POST /v1/search, not an extract path
		}
		r := g.do("POST", "/v1/extract/"+key, test, map[string]any{svc.SingleInputField(): svc.Accepts[0].Example})
		checkTestRun(t, svc, r)
	}

	// The operator sees the test balance and the test keys beside the live ones.
	st, b := g.admin("GET", "/sdr/accounts/acme", nil)
	var acct struct {
		TestBalance credits.Micros `json:"test_balance"`
	}
	if err := json.Unmarshal(b, &acct); st != 200 || err != nil || acct.TestBalance <= 0 || acct.TestBalance >= testmode.StartBalance {
		t.Errorf("GET /sdr/accounts/acme after test calls: %d %s", st, b)
	}
	if !strings.Contains(string(b), `"display":"sdr_test_`) || !strings.Contains(string(b), `"display":"sdr_live_`) {
		t.Errorf("GET /sdr/accounts/acme lists not both modes' keys: %s", b)
	}

	// The operator resets the spent test balance; the live one stays.
	if st, b := g.admin("POST", "/sdr/accounts/acme/test-balance/reset", nil); st != 200 || !strings.Contains(string(b), `"test_balance":100`) {
		t.Errorf("resetting the test balance: %d %s", st, b)
	}
	if got := balanceMicros(t, g, test); got != testmode.StartBalance {
		t.Errorf("test balance after the reset %s, want %s", got, testmode.StartBalance)
	}
	if got := balanceMicros(t, g, live); got != liveStart {
		t.Errorf("live balance after the reset %s, want %s untouched", got, liveStart)
	}

	// A test key's credit limit holds as a live key's does, on test spend.
	st, b = g.admin("POST", "/sdr/accounts/acme/keys", map[string]any{"name": "capped", "mode": "test",
		"credit_limit": map[string]any{"period": "day", "credits": 0.002}})
	if st != 201 {
		t.Fatalf("creating a capped test key: %d %s", st, b)
	}
	var capped struct{ Key string }
	_ = json.Unmarshal(b, &capped)
	body := map[string]any{"url": "https://www.linkedin.com/company/kraft-heinz-company"} // one record at 0.001725
	if r := g.do("POST", "/v1/extract/pro_net/company.info", capped.Key, body); r.Status != 200 {
		t.Fatalf("first call under the limit: %d %s", r.Status, r.Body)
	}
	if r := g.do("POST", "/v1/extract/pro_net/company.info", capped.Key, body); r.Status != 429 || r.errCode() != "credit_limit_exceeded" {
		t.Errorf("second call past the limit: %d %s, want 429 credit_limit_exceeded", r.Status, r.Body)
	}
}
