package dashboard

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/oauth"
	"socialrouter/caddymodule/passhash"
	"socialrouter/caddymodule/registry"
)

// signinAs posts a sign-in of email with pw from a fresh browser.
func (e *env) signinAs(email, pw string) page {
	e.t.Helper()
	return e.browser().post("/dashboard/signin", url.Values{"email": {email}, "password": {pw}})
}

// TestSigninParallelGuessesAreCounted: an attempt is counted before its
// hash runs, so of 64 parallel guesses at one email only the free ones
// are checked; the rest are 429 with Retry-After, and so is the right
// password right after.
func TestSigninParallelGuessesAreCounted(t *testing.T) {
	e := newEnv(t, false)
	e.member("acme", "alice@example.com")
	statuses := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := e.signinAs("alice@example.com", fmt.Sprint("wrong guess ", i))
			mu.Lock()
			defer mu.Unlock()
			statuses[p.status]++
			if p.status == http.StatusTooManyRequests && p.header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
		}()
	}
	wg.Wait()
	// A guess let through is checked (401), or finds the hash pool busy
	// on a loaded machine (503): either way, at most the 5 free ones.
	through := statuses[http.StatusUnauthorized] + statuses[http.StatusServiceUnavailable]
	if through > 5 || through+statuses[http.StatusTooManyRequests] != 64 {
		t.Errorf("64 parallel guesses answered %v, want at most 5 × 401 (or 503) and the rest 429", statuses)
	}
	want(t, e.signinAs("alice@example.com", goodPassword), http.StatusTooManyRequests, "Too many attempts")
}

// TestSigninDelaysGrowInsteadOfLocking: after the free attempts a member
// waits seconds, not a quarter of an hour, and the wait doubles with each
// further attempt; a good sign-in forgets the email's attempts.
func TestSigninDelaysGrowInsteadOfLocking(t *testing.T) {
	e := newEnv(t, false)
	e.member("acme", "alice@example.com")
	for range 5 {
		want(t, e.signinAs("alice@example.com", "wrong password!"), http.StatusUnauthorized, "incorrect email or password")
	}
	p := e.signinAs("alice@example.com", goodPassword)
	want(t, p, http.StatusTooManyRequests, "try again in 2 seconds")
	if got := p.header.Get("Retry-After"); got != "2" {
		t.Errorf("Retry-After %q, want 2", got)
	}
	e.clock.add(2 * time.Second)
	want(t, e.signinAs("alice@example.com", "wrong password!"), http.StatusUnauthorized)
	want(t, e.signinAs("alice@example.com", goodPassword), http.StatusTooManyRequests, "try again in 4 seconds")
	e.clock.add(4 * time.Second)
	if p := e.signinAs("alice@example.com", goodPassword); p.status != http.StatusSeeOther {
		t.Fatalf("after the delay: %d, want a sign-in", p.status)
	}
	for range 5 {
		want(t, e.signinAs("alice@example.com", "wrong password!"), http.StatusUnauthorized)
	}
}

// TestSigninAddressLimitAndUnknownEmails: unknown emails count like known
// ones, and many emails from one address meet the address's limit.
func TestSigninAddressLimitAndUnknownEmails(t *testing.T) {
	e := newEnv(t, false)
	for range 5 {
		want(t, e.signinAs("nobody@example.com", "x"), http.StatusUnauthorized)
	}
	want(t, e.signinAs("nobody@example.com", "x"), http.StatusTooManyRequests)
	for i := range 25 {
		want(t, e.signinAs(fmt.Sprintf("spray%d@example.com", i), "x"), http.StatusUnauthorized)
	}
	want(t, e.signinAs("fresh@example.com", "x"), http.StatusTooManyRequests)
}

// TestThrottleSurvivesRestart: the counters live in the store, so a new
// dashboard over it (a restart, a reload, another node) sees them.
func TestThrottleSurvivesRestart(t *testing.T) {
	e := newEnv(t, false)
	e.member("acme", "alice@example.com")
	for range 5 {
		e.signinAs("alice@example.com", "wrong password!")
	}
	srv := e.another(nil)
	res, err := http.PostForm(srv+"/dashboard/signin", url.Values{"email": {"alice@example.com"}, "password": {goodPassword}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("sign-in on a new dashboard over the same store: %d, want 429", res.StatusCode)
	}
}

// TestInviteThrottledTokenFirst: invitation posts count against the
// address like sign-ins, and a wrong token is refused before the password
// is even read (so before any hash).
func TestInviteThrottledTokenFirst(t *testing.T) {
	e := newEnv(t, false)
	statuses := map[int]int{}
	for i := range 40 {
		p := e.browser().post("/dashboard/invite", url.Values{"token": {fmt.Sprint("guess-", i)}, "password": {"short"}, "password_confirm": {"short"}})
		statuses[p.status]++
	}
	if statuses[http.StatusNotFound] != 30 || statuses[http.StatusTooManyRequests] != 10 {
		t.Errorf("40 guessed tokens answered %v, want 30 × 404 then 10 × 429", statuses)
	}
}

// TestInviteTokenStaysOutOfTheURL: the form posts the token in its body
// to /invite, and an old link with the token in its path is sent to the
// fragment form.
func TestInviteTokenStaysOutOfTheURL(t *testing.T) {
	e := newEnv(t, false)
	token := e.invite("acme", "alice@example.com")
	want(t, e.browser().get("/dashboard/invite"), http.StatusOK, `action="/dashboard/invite"`, `name="token"`, "static/invite.js")
	p := e.browser().get("/dashboard/invite/" + token)
	if p.status != http.StatusSeeOther || p.location != "/dashboard/invite#"+token {
		t.Errorf("old link: %d %q, want a redirect to the fragment form", p.status, p.location)
	}
	want(t, e.browser().post("/dashboard/invite", url.Values{"token": {""}, "password": {goodPassword}, "password_confirm": {goodPassword}}),
		http.StatusBadRequest, "invitation code")
	p = e.browser().post("/dashboard/invite", url.Values{"token": {token}, "password": {goodPassword}, "password_confirm": {goodPassword}})
	if p.status != http.StatusSeeOther || p.location != "/dashboard/" {
		t.Errorf("accept: %d %q", p.status, p.location)
	}
}

// TestPasswordCheckThrottledEndsSession: the current-password check is
// counted per member before its hash; after the free checks it waits, and
// the fifth wrong one in a row signs the session out.
func TestPasswordCheckThrottledEndsSession(t *testing.T) {
	e := newEnv(t, false)
	b := e.member("acme", "alice@example.com")
	change := func(current string) page {
		return b.post("/dashboard/account/password", url.Values{"current_password": {current}, "password": {"another good one"}, "password_confirm": {"another good one"}})
	}
	for range 3 {
		want(t, change("wrong guess"), http.StatusBadRequest, "not correct")
	}
	want(t, change("wrong guess"), http.StatusTooManyRequests, "too many attempts")
	e.clock.add(2 * time.Second)
	want(t, change("wrong guess"), http.StatusBadRequest, "not correct")
	e.clock.add(4 * time.Second)
	p := change("wrong guess")
	want(t, p, http.StatusUnauthorized, "Signed out after too many wrong passwords")
	if p := b.get("/dashboard/account"); p.status != http.StatusSeeOther || !strings.Contains(p.location, "/signin") {
		t.Errorf("after the session ended: %d %q, want a redirect to sign-in", p.status, p.location)
	}
}

// another serves a second dashboard over e's store and clock, set up by
// mod, and returns its URL.
func (e *env) another(mod func(*Config)) string {
	r := testRegistry(e.t)
	c := Config{Store: e.store, Registry: func() *registry.Registry { return r }, KeyPrefix: "sdr", Now: e.clock.now,
		OAuth: &oauth.Server{Store: e.store, KeyPrefix: "sdr", Now: e.clock.now}}
	if mod != nil {
		mod(&c)
	}
	mux := http.NewServeMux()
	mux.Handle("/dashboard/", New(c))
	srv := httptest.NewServer(mux)
	e.t.Cleanup(srv.Close)
	return srv.URL
}

// TestBusyHashPoolIs503: when no hash slot frees within the pool's wait,
// a sign-in or an invitation answers 503 with Retry-After instead of
// queueing more argon2id work.
func TestBusyHashPoolIs503(t *testing.T) {
	e := newEnv(t, false)
	token := e.invite("acme", "alice@example.com")
	pool := passhash.New(1, 20*time.Millisecond)
	srv := e.another(func(c *Config) { c.Hashes = pool })
	release, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		form url.Values
	}{
		{"/dashboard/signin", url.Values{"email": {"alice@example.com"}, "password": {goodPassword}}},
		{"/dashboard/invite", url.Values{"token": {token}, "password": {goodPassword}, "password_confirm": {goodPassword}}},
	} {
		res, err := http.PostForm(srv+c.path, c.form)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "1" {
			t.Errorf("%s with every slot busy: %d, Retry-After %q; want 503 with Retry-After 1", c.path, res.StatusCode, res.Header.Get("Retry-After"))
		}
	}
	release()
	res, err := http.PostForm(srv+"/dashboard/invite", url.Values{"token": {token}, "password": {goodPassword}, "password_confirm": {goodPassword}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK { // followed to the overview
		t.Errorf("invitation with a slot free: %d", res.StatusCode)
	}
}

// TestAddressOf: an IPv6 client is counted per /64.
func TestAddressOf(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7":            "192.0.2.7",
		"::ffff:192.0.2.7":     "192.0.2.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::/64",
		"fe80::1%eth0":         "fe80::/64",
		"not an address":       "not an address",
	} {
		if got := addressOf(in); got != want {
			t.Errorf("addressOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSuccessReleasesTheAddress: a good sign-in (or invitation) gives its
// attempt back to the address, so the members behind one office's
// address do not use up its limit by signing in.
func TestSuccessReleasesTheAddress(t *testing.T) {
	e := newEnv(t, false)
	e.member("acme", "alice@example.com") // the invitation's attempt, given back
	for i := range 29 {
		want(t, e.signinAs(fmt.Sprintf("spray%d@example.com", i), "x"), http.StatusUnauthorized)
	}
	if p := e.signinAs("alice@example.com", goodPassword); p.status != http.StatusSeeOther {
		t.Fatalf("good sign-in: %d", p.status)
	}
	want(t, e.signinAs("last@example.com", "x"), http.StatusUnauthorized)
	want(t, e.signinAs("over@example.com", "x"), http.StatusTooManyRequests)
}

// TestRefusalsAreShed: a throttled sign-in or invitation post is answered
// with the small fixed page (no template, no form: a flood of them must
// cost the gateway little), its Retry-After and a link back to the form.
func TestRefusalsAreShed(t *testing.T) {
	e := newEnv(t, false)
	for i := range DefaultLimits.Email.Free {
		want(t, e.signinAs("alice@example.com", fmt.Sprintf("wrong %d", i)), http.StatusUnauthorized)
	}
	for range 2 { // the address has its room; the email must wait
		p := e.browser().post("/dashboard/signin", url.Values{"email": {"alice@example.com"}, "password": {"x"}, "next": {"/dashboard/runs"}})
		want(t, p, http.StatusTooManyRequests, "Too many attempts; try again in 2 seconds.", `href="/dashboard/signin?next=%2Fdashboard%2Fruns"`)
		if p.header.Get("Retry-After") != "2" || strings.Contains(p.body, "<form") || len(p.body) > 600 {
			t.Errorf("throttled sign-in: Retry-After %q, %d bytes, a form: %v", p.header.Get("Retry-After"), len(p.body), strings.Contains(p.body, "<form"))
		}
	}
	for range DefaultLimits.Address.Free {
		e.browser().post("/dashboard/invite", url.Values{"token": {"guess"}, "password": {goodPassword}, "password_confirm": {goodPassword}})
	}
	p := e.browser().post("/dashboard/invite", url.Values{"token": {"guess"}, "password": {goodPassword}, "password_confirm": {goodPassword}})
	want(t, p, http.StatusTooManyRequests, "Too many attempts", `href="/dashboard/invite"`)
	if strings.Contains(p.body, "<form") || p.header.Get("Retry-After") == "" {
		t.Errorf("throttled invitation: a form %v, Retry-After %q", strings.Contains(p.body, "<form"), p.header.Get("Retry-After"))
	}
}

// TestThrottledPostsAreHeld: a throttled post is answered after the hold
// (a client that guesses again as soon as it is answered is paced), at
// once when the bound of held refusals is reached; a post that is not
// throttled is never held.
func TestThrottledPostsAreHeld(t *testing.T) {
	const hold = 300 * time.Millisecond
	e := newEnv(t, false)
	e.h.RefusalHold = hold
	post := func() (page, time.Duration) {
		start := time.Now()
		p := e.browser().post("/dashboard/signin", url.Values{"email": {"alice@example.com"}, "password": {"x"}})
		return p, time.Since(start)
	}
	for range DefaultLimits.Email.Free {
		if p, _ := post(); p.status != http.StatusUnauthorized {
			t.Fatalf("a free attempt: %d", p.status)
		}
	}
	if p, took := post(); p.status != http.StatusTooManyRequests || took < hold {
		t.Errorf("a throttled post: %d in %v, want 429 after the %v hold", p.status, took, hold)
	}
	for range maxHeldRefusals {
		e.h.held <- struct{}{}
	}
	if p, took := post(); p.status != http.StatusTooManyRequests || took >= hold {
		t.Errorf("a throttled post with every hold taken: %d in %v, want 429 at once", p.status, took)
	}
}
