package dashboard

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/oauth"
	"socialrouter/caddymodule/registry"
)

// TestGateShedsPastItsSlots: while the gate's slots are taken, a sign-in
// or invitation post waits up to the gate's wait and is then shed (503,
// Retry-After, the fixed page) without counting an attempt; once a slot
// frees, posts go through.
func TestGateShedsPastItsSlots(t *testing.T) {
	e := newEnv(t, false)
	r := testRegistry(t)
	h := New(Config{Store: e.store, Registry: func() *registry.Registry { return r }, KeyPrefix: "sdr", Now: e.clock.now,
		OAuth: &oauth.Server{Store: e.store, KeyPrefix: "sdr", Now: e.clock.now}})
	h.gate = newGate(1, 50*time.Millisecond)
	mux := http.NewServeMux()
	mux.Handle("/dashboard/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	post := func(path string, f url.Values) (*http.Response, string) {
		t.Helper()
		res, err := http.PostForm(srv.URL+path, f)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, res.Body)
		return res, b.String()
	}
	signin := url.Values{"email": {"nobody@example.com"}, "password": {"x"}}
	invite := url.Values{"token": {"guess"}, "password": {goodPassword}, "password_confirm": {goodPassword}}
	leave, err := h.gate.enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		form url.Values
	}{{"/dashboard/signin", signin}, {"/dashboard/invite", invite}} {
		res, body := post(c.path, c.form)
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "1" || strings.Contains(body, "<form") {
			t.Errorf("%s with the gate full: %d, Retry-After %q, form %v; want the shed 503", c.path, res.StatusCode, res.Header.Get("Retry-After"), strings.Contains(body, "<form"))
		}
	}
	leave()
	leave() // a second leave gives nothing back twice
	if res, _ := post("/dashboard/signin", signin); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("sign-in with the gate free: %d, want 401", res.StatusCode)
	}
	if res, _ := post("/dashboard/invite", invite); res.StatusCode != http.StatusNotFound {
		t.Errorf("invitation with the gate free: %d, want 404", res.StatusCode)
	}
	if n := len(h.gate.slots); n != 0 {
		t.Errorf("%d gate slots still taken after the posts", n)
	}
	// The shed posts counted no attempt: the address has all its room but
	// the two attempts above.
	for i := range DefaultLimits.Address.Free - 2 {
		if res, _ := post("/dashboard/invite", invite); res.StatusCode != http.StatusNotFound {
			t.Fatalf("attempt %d: %d, want 404", i, res.StatusCode)
		}
	}
	if res, _ := post("/dashboard/invite", invite); res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("attempt past the free ones: %d, want 429", res.StatusCode)
	}
}
