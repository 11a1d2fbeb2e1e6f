package sdr_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// keyKind is the kind of key the end-to-end tests create (SDR_KEY_KIND,
// set in tests/sdk_test.go): live keys with credits granted through the
// admin API until test mode (sdr_test_ keys that charge nothing and reach
// no upstream) lands; then "test", sent as the key's "mode".
var keyKind = envOr("SDR_KEY_KIND", "live")

// env is where tests/sdk_test.go started the gateway, the simulator and
// the dropping proxy.
type env struct {
	base, admin, flaky, sim string
	faults                  []map[string]any
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// gateway is the environment of the end-to-end tests; without it (the
// suite run on its own, not from tests/sdk_test.go) they are skipped.
func gateway(t *testing.T) env {
	t.Helper()
	e := env{base: os.Getenv("SDR_BASE_URL"), admin: os.Getenv("SDR_ADMIN_URL"), flaky: os.Getenv("SDR_FLAKY_URL"), sim: os.Getenv("SDR_SIM_URL")}
	if e.base == "" || e.admin == "" {
		t.Skip("SDR_BASE_URL/SDR_ADMIN_URL not set: the end-to-end tests run from tests/sdk_test.go (make test)")
	}
	if f := os.Getenv("SDR_SIM_FAULTS"); f != "" {
		if err := json.Unmarshal([]byte(f), &e.faults); err != nil {
			t.Fatalf("SDR_SIM_FAULTS: %v", err)
		}
	}
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

// account creates an account with balance credits and a key for it
// (keyKind; limit, when not nil, is the key's credit_limit), and returns
// the account id and the key.
func (e env) account(t *testing.T, balance float64, limit map[string]any) (string, string) {
	t.Helper()
	id := fmt.Sprintf("sdk-go-%d-%d", time.Now().UnixNano(), accounts.Add(1))
	e.adminJSON(t, "POST", "/sdr/accounts", map[string]any{"id": id, "balance": balance}, nil)
	body := map[string]any{"name": "sdk-go " + keyKind}
	if keyKind != "live" {
		body["mode"] = keyKind // issue 35's POST /sdr/accounts/{id}/keys {"mode": "test"}
	}
	if limit != nil {
		body["credit_limit"] = limit
	}
	var k struct{ Key string }
	e.adminJSON(t, "POST", "/sdr/accounts/"+id+"/keys", body, &k)
	return id, k.Key
}
