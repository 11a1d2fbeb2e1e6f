package dashboard

import (
	"crypto/sha256"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/testmode"
)

var testSecretRE = regexp.MustCompile(`value="(sdr_test_[0-9A-Za-z]{40})"`)

// TestTestModeSwitch: the switch shows the test twin's balance and keys,
// marked on every page; a key created there is a test key; the balance
// resets to its start; switching back shows the live account untouched.
func TestTestModeSwitch(t *testing.T) {
	e := newEnv(t, false)
	b := e.member("acme", "ada@example.com")
	live := b.get("/dashboard/")
	want(t, live, http.StatusOK, "Test mode: off", `id="quick-start"`)
	if strings.Contains(live.body, "TEST MODE") {
		t.Fatal("the live overview is marked as test mode")
	}

	p := b.post("/dashboard/mode?next=/dashboard/keys", url.Values{"mode": {"test"}})
	if p.status != http.StatusSeeOther || p.location != "/dashboard/keys" {
		t.Fatalf("switching on: %d %q", p.status, p.location)
	}
	p = b.post("/dashboard/keys", url.Values{"name": {"ci"}})
	want(t, p, http.StatusCreated, "TEST MODE")
	m := testSecretRE.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no test key secret on the page:\n%s", p.body)
	}
	k, err := e.store.KeyByHash(t.Context(), sha256.Sum256([]byte(m[1])))
	if err != nil || k.AccountID != testmode.AccountID("acme") {
		t.Fatalf("stored key %+v, %v", k, err)
	}
	for _, path := range []string{"/dashboard/", "/dashboard/keys", "/dashboard/runs"} {
		want(t, b.get(path), http.StatusOK, "TEST MODE", "Test mode: on")
	}
	want(t, b.get("/dashboard/"), http.StatusOK, "Test balance", "100", k.Display)

	if _, err := e.store.AddCredits(t.Context(), testmode.AccountID("acme"), -30*credits.PerCredit); err != nil {
		t.Fatal(err)
	}
	if p = b.post("/dashboard/test-balance/reset", nil); p.status != http.StatusSeeOther {
		t.Fatalf("reset: %d %s", p.status, p.body)
	}
	if a, _ := e.store.GetAccount(t.Context(), testmode.AccountID("acme")); a.Balance != testmode.StartBalance {
		t.Errorf("test balance after reset %s, want %s", a.Balance, testmode.StartBalance)
	}

	if p = b.post("/dashboard/mode", url.Values{"mode": {"live"}}); p.status != http.StatusSeeOther {
		t.Fatalf("switching off: %d", p.status)
	}
	back := b.get("/dashboard/keys")
	want(t, back, http.StatusOK, "Test mode: off")
	if strings.Contains(back.body, k.Display) || strings.Contains(back.body, "TEST MODE") {
		t.Error("the live keys page shows the test key or the test mark")
	}
	if a, _ := e.store.GetAccount(t.Context(), "acme"); a.Balance != 10*credits.PerCredit {
		t.Errorf("live balance %s, want 10 untouched", a.Balance)
	}
	// The reset is in the account's (live) activity trail.
	want(t, b.get("/dashboard/activity"), http.StatusOK, "test balance reset")
}
