package sdr_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// The end-to-end tests run on test keys (sdr_test_…, docs/testmode.md):
// records from the offers' example payloads, no upstream, the account's
// test balance; the magic inputs below force each failure a backend must
// handle. tests/sdk_test.go runs them, then checks that the simulator saw
// no call, then runs the live-key part (live_test.go, tests named Live).

// Magic inputs of pro_net/profile.info (docs/testmode.md, "Magic inputs").
const (
	magicProviderError = "https://www.linkedin.com/in/sdr-test-provider-error"
	magicSoftTimeout   = "https://www.linkedin.com/in/sdr-test-soft-timeout"
	magicRateLimited   = "https://www.linkedin.com/in/sdr-test-rate-limited"
	magicFailover      = "https://www.linkedin.com/in/sdr-test-failover"
	magicEmpty         = "https://www.linkedin.com/in/sdr-test-empty"
	magicSlow          = "https://www.linkedin.com/in/sdr-test-slow"
)

// env is where tests/sdk_test.go started the gateway and the dropping
// proxy, and what its test mode answers.
type env struct {
	base, admin, flaky string
	// testRetryAfter is the Retry-After of sdr-test-rate-limited.
	testRetryAfter time.Duration
}

// gateway is the environment of the end-to-end tests; without it (the
// suite run on its own, not from tests/sdk_test.go) they are skipped.
func gateway(t *testing.T) env {
	t.Helper()
	e := env{base: os.Getenv("SDR_BASE_URL"), admin: os.Getenv("SDR_ADMIN_URL"), flaky: os.Getenv("SDR_FLAKY_URL")}
	if e.base == "" || e.admin == "" {
		t.Skip("SDR_BASE_URL/SDR_ADMIN_URL not set: the end-to-end tests run from tests/sdk_test.go (make test)")
	}
	secs, err := strconv.Atoi(os.Getenv("SDR_TEST_RETRY_AFTER"))
	if err != nil {
		t.Fatalf("SDR_TEST_RETRY_AFTER: %v", err)
	}
	e.testRetryAfter = time.Duration(secs) * time.Second
	return e
}

var accounts atomic.Int64

// adminJSON calls the gateway's admin API and decodes its answer into out.
func (e env) adminJSON(t *testing.T, method, path string, body, out any) {
	t.Helper()
	e.call(t, method, e.admin+path, body, out)
}

func (e env) call(t *testing.T, method, url string, body, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, b)
		}
	}
}

// newAccount creates an account with a live balance and returns its id.
func (e env) newAccount(t *testing.T, balance float64) string {
	t.Helper()
	id := fmt.Sprintf("sdk-go-%d-%d", time.Now().UnixNano(), accounts.Add(1))
	e.adminJSON(t, "POST", "/sdr/accounts", map[string]any{"id": id, "balance": balance}, nil)
	return id
}

// key creates a key of account in mode ("test" or "live"; limit, when not
// nil, is its credit_limit) and returns it.
func (e env) key(t *testing.T, account, mode string, limit map[string]any) (id, key string) {
	t.Helper()
	body := map[string]any{"name": "sdk-go " + mode, "mode": mode}
	if limit != nil {
		body["credit_limit"] = limit
	}
	var k struct{ ID, Key string }
	e.adminJSON(t, "POST", "/sdr/accounts/"+account+"/keys", body, &k)
	return k.ID, k.Key
}

// account creates an account and a test key for it whose test balance is
// balance (limit, when not nil, is the key's credit_limit), and returns
// the account's test twin (the account that owns the key's runs, webhook
// endpoints and test balance) and the key.
func (e env) account(t *testing.T, balance float64, limit map[string]any) (string, string) {
	t.Helper()
	id := e.newAccount(t, 0)
	_, key := e.key(t, id, "test", limit)
	twin := id + "~test" // created with the first test key (docs/testmode.md, Isolation)
	var a struct {
		TestBalance float64 `json:"test_balance"`
	}
	e.adminJSON(t, "GET", "/sdr/accounts/"+id, nil, &a)
	if d := balance - a.TestBalance; d != 0 {
		e.adminJSON(t, "POST", "/sdr/accounts/"+twin+"/credits", map[string]any{"amount": d}, nil)
	}
	return twin, key
}
