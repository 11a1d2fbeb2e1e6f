package dashboard

import (
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/oauth"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	badgerstore "socialrouter/caddymodule/store/badger"
	"socialrouter/services"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var (
	regOnce sync.Once
	reg     *registry.Registry
)

func testRegistry(t *testing.T) *registry.Registry {
	regOnce.Do(func() {
		var err error
		if reg, err = registry.LoadFS(services.FS); err != nil {
			t.Fatal(err)
		}
	})
	return reg
}

// env is a dashboard over a badger store with accounts acme (10 credits)
// and other, served by an httptest server.
type env struct {
	t     *testing.T
	store store.Store
	clock *clock
	srv   *httptest.Server
	h     *Handler
}

func newEnv(t *testing.T, tls bool) *env {
	t.Helper()
	s, err := badgerstore.Open(t.TempDir(), badgerstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := &clock{t: time.Now().UTC()}
	for _, a := range []string{"acme", "other"} {
		if _, err := s.CreateAccount(t.Context(), a, 10*credits.PerCredit, c.now()); err != nil {
			t.Fatal(err)
		}
	}
	r := testRegistry(t)
	as := &oauth.Server{Store: s, KeyPrefix: "sdr", Now: c.now}
	// Refusals are answered at once here; TestThrottledPostsAreHeld holds them.
	h := New(Config{Store: s, Registry: func() *registry.Registry { return r }, KeyPrefix: "sdr", Now: c.now, OAuth: as, RefusalHold: -1})
	mux := http.NewServeMux()
	mux.Handle("/dashboard/", h)
	mux.HandleFunc("/oauth/authorize", h.ServeAuthorize)
	mux.Handle("/oauth/", as)
	srv := httptest.NewUnstartedServer(mux)
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return &env{t: t, store: s, clock: c, srv: srv, h: h}
}

// invite stores an invite of email to account and returns its token.
func (e *env) invite(account, email string) string {
	e.t.Helper()
	token := "tok-" + strings.ReplaceAll(email, "@", "-")
	err := e.store.CreateInvite(e.t.Context(), store.Invite{TokenHash: sha256.Sum256([]byte(token)), AccountID: account,
		Email: email, CreatedAt: e.clock.now(), ExpiresAt: e.clock.now().Add(72 * time.Hour)})
	if err != nil {
		e.t.Fatal(err)
	}
	return token
}

// browser is a client with a cookie jar that does not follow redirects.
type browser struct {
	e      *env
	client *http.Client
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	c := *e.srv.Client() // a copy: the server's client is shared
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{e: e, client: &c}
}

type page struct {
	status   int
	body     string
	location string
	header   http.Header
}

func (b *browser) do(method, path string, form url.Values, hdr ...string) page {
	b.e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.e.srv.URL+path, body)
	if err != nil {
		b.e.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := b.client.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return page{status: res.StatusCode, body: string(data), location: res.Header.Get("Location"), header: res.Header}
}

func (b *browser) get(path string) page { b.e.t.Helper(); return b.do(http.MethodGet, path, nil) }
func (b *browser) post(path string, form url.Values) page {
	b.e.t.Helper()
	return b.do(http.MethodPost, path, form)
}

const goodPassword = "correct horse battery"

// member accepts an invite and returns the signed-in browser.
func (e *env) member(account, email string) *browser {
	e.t.Helper()
	b := e.browser()
	p := b.post("/dashboard/invite", url.Values{"token": {e.invite(account, email)}, "password": {goodPassword}, "password_confirm": {goodPassword}})
	if p.status != http.StatusSeeOther || p.location != "/dashboard/" {
		e.t.Fatalf("accepting invite: %d %q %s", p.status, p.location, p.body)
	}
	return b
}

func want(t *testing.T, p page, status int, contains ...string) {
	t.Helper()
	if p.status != status {
		t.Fatalf("status %d, want %d; body:\n%s", p.status, status, p.body)
	}
	for _, c := range contains {
		if !strings.Contains(p.body, c) {
			t.Errorf("page lacks %q:\n%s", c, p.body)
		}
	}
}

func TestInviteIsSingleUseAndChecksPassword(t *testing.T) {
	e := newEnv(t, false)
	token := e.invite("acme", "alice@example.com")
	b := e.browser()
	want(t, b.get("/dashboard/invite"), http.StatusOK, "Choose a password", `autocomplete="new-password"`)
	for _, c := range []struct{ pw, again, msg string }{
		{"short", "short", "at least 12"},
		{goodPassword, goodPassword + "x", "differ"},
	} {
		want(t, b.post("/dashboard/invite", url.Values{"token": {token}, "password": {c.pw}, "password_confirm": {c.again}}), http.StatusBadRequest, c.msg)
	}
	p := b.post("/dashboard/invite", url.Values{"token": {token}, "password": {goodPassword}, "password_confirm": {goodPassword}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("accept: %d %s", p.status, p.body)
	}
	want(t, b.get("/dashboard/"), http.StatusOK, "Balance", "10")
	want(t, e.browser().post("/dashboard/invite", url.Values{"token": {token}, "password": {goodPassword}, "password_confirm": {goodPassword}}),
		http.StatusNotFound, "already used or has expired")
	m, err := e.store.MemberByEmail(t.Context(), "alice@example.com")
	if err != nil || !strings.HasPrefix(m.PasswordHash, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Errorf("member %+v, %v: want an argon2id hash", m, err)
	}
	expired := e.invite("acme", "late@example.com")
	e.clock.add(72 * time.Hour)
	want(t, e.browser().post("/dashboard/invite", url.Values{"token": {expired}, "password": {goodPassword}, "password_confirm": {goodPassword}}),
		http.StatusNotFound, "expired")
}

func TestSigninSignoutAndReturnPath(t *testing.T) {
	e := newEnv(t, false)
	e.member("acme", "alice@example.com")
	b := e.browser()
	p := b.get("/dashboard/runs?status=failed")
	if p.status != http.StatusSeeOther || p.location != "/dashboard/signin?next="+url.QueryEscape("/dashboard/runs?status=failed") {
		t.Fatalf("signed-out GET: %d %q", p.status, p.location)
	}
	want(t, b.post("/dashboard/keys", url.Values{"name": {"x"}}), http.StatusUnauthorized, "Sign in again")
	p = b.post("/dashboard/signin", url.Values{"email": {"Alice@Example.com"}, "password": {goodPassword}, "next": {"/dashboard/runs?status=failed"}})
	if p.status != http.StatusSeeOther || p.location != "/dashboard/runs?status=failed" {
		t.Fatalf("sign-in: %d %q %s", p.status, p.location, p.body)
	}
	for _, next := range []string{"https://evil.example/", "//evil.example/x", "/elsewhere"} {
		p = e.browser().post("/dashboard/signin", url.Values{"email": {"alice@example.com"}, "password": {goodPassword}, "next": {next}})
		if p.location != "/dashboard/" {
			t.Errorf("next=%q redirected to %q, want /dashboard/", next, p.location)
		}
	}
	want(t, b.get("/dashboard/activity"), http.StatusOK, "signed_in", "member_joined", "alice@example.com")
	if p = b.post("/dashboard/signout", url.Values{}); p.status != http.StatusSeeOther || p.location != "/dashboard/signin" {
		t.Fatalf("sign-out: %d %q", p.status, p.location)
	}
	if p = b.get("/dashboard/keys"); p.status != http.StatusSeeOther {
		t.Errorf("after sign-out: %d, want a redirect to sign-in", p.status)
	}
}

// TestSigninDoesNotRevealEmails (the limits: throttle_test.go).
func TestSigninDoesNotRevealEmails(t *testing.T) {
	e := newEnv(t, false)
	e.member("acme", "alice@example.com")
	wrong := e.browser().post("/dashboard/signin", url.Values{"email": {"alice@example.com"}, "password": {"wrong password!"}})
	unknown := e.browser().post("/dashboard/signin", url.Values{"email": {"nobody@example.com"}, "password": {"wrong password!"}})
	want(t, wrong, http.StatusUnauthorized, "incorrect email or password")
	want(t, unknown, http.StatusUnauthorized, "incorrect email or password")
	strip := regexp.MustCompile(`value="[^"]*"`)
	if strip.ReplaceAllString(wrong.body, "") != strip.ReplaceAllString(unknown.body, "") {
		t.Errorf("the answers for a known and an unknown email differ")
	}
}

func TestCrossSiteWritesRefused(t *testing.T) {
	e := newEnv(t, false)
	b := e.member("acme", "alice@example.com")
	for _, hdr := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Origin", "https://evil.example"}} {
		p := b.do(http.MethodPost, "/dashboard/keys", url.Values{"name": {"evil"}}, hdr...)
		want(t, p, http.StatusForbidden, "Cross-site request refused")
	}
	if keys, _ := e.store.ListKeys(t.Context(), "acme"); len(keys) != 0 {
		t.Errorf("a cross-site post created keys: %+v", keys)
	}
	want(t, b.do(http.MethodPost, "/dashboard/keys", url.Values{"name": {"ok"}}, "Sec-Fetch-Site", "same-origin"), http.StatusCreated)
	want(t, b.do(http.MethodGet, "/dashboard/keys", nil, "Sec-Fetch-Site", "cross-site"), http.StatusOK)
}

var secretRE = regexp.MustCompile(`value="(sdr_live_[0-9A-Za-z]{40})"`)

func TestKeysCreateLimitRevoke(t *testing.T) {
	e := newEnv(t, false)
	b := e.member("acme", "alice@example.com")
	want(t, b.post("/dashboard/keys", url.Values{"name": {""}}), http.StatusBadRequest, "give the key a name")
	for _, c := range []struct{ credits, period, msg string }{
		{"-1", "day", "above 0"}, {"5", "year", "hour, day, week or month"}, {"abc", "day", "not a number"}, {"0.0000001", "day", "six decimals"},
	} {
		want(t, b.post("/dashboard/keys", url.Values{"name": {"n"}, "limit_credits": {c.credits}, "limit_period": {c.period}}), http.StatusBadRequest, c.msg)
	}
	p := b.post("/dashboard/keys", url.Values{"name": {"production"}, "limit_credits": {"5"}, "limit_period": {"day"}})
	want(t, p, http.StatusCreated, "you will not see it again", "production")
	if p.header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", p.header.Get("Cache-Control"))
	}
	m := secretRE.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no secret on the page:\n%s", p.body)
	}
	k, err := e.store.KeyByHash(t.Context(), sha256.Sum256([]byte(m[1])))
	if err != nil || k.AccountID != "acme" || k.CreditLimit == nil || k.CreditLimit.Credits != 5*credits.PerCredit || k.CreditLimit.Period != "day" {
		t.Fatalf("stored key %+v, %v", k, err)
	}
	list := b.get("/dashboard/keys")
	want(t, list, http.StatusOK, k.Display, "not recently", `<span class="hint">today</span>`)
	if strings.Contains(list.body, m[1]) {
		t.Error("the keys page shows the secret again")
	}
	if p = b.post("/dashboard/keys/"+k.ID+"/limit", url.Values{"limit_credits": {"2.5"}, "limit_period": {"week"}}); p.status != http.StatusSeeOther {
		t.Fatalf("set limit: %d %s", p.status, p.body)
	}
	if k, _ = e.store.GetKey(t.Context(), k.ID); k.CreditLimit == nil || k.CreditLimit.Credits != 2_500_000 || k.CreditLimit.Period != "week" {
		t.Errorf("limit = %+v", k.CreditLimit)
	}
	want(t, b.post("/dashboard/keys/"+k.ID+"/limit", url.Values{"limit_credits": {"0"}, "limit_period": {"week"}}), http.StatusBadRequest, "above 0")
	b.post("/dashboard/keys/"+k.ID+"/limit", url.Values{"limit_credits": {""}, "limit_period": {"week"}})
	if k, _ = e.store.GetKey(t.Context(), k.ID); k.CreditLimit != nil {
		t.Errorf("limit not removed: %+v", k.CreditLimit)
	}
	want(t, b.get("/dashboard/keys/"+k.ID+"/revoke"), http.StatusOK, "cannot be undone")
	if p = b.post("/dashboard/keys/"+k.ID+"/revoke", url.Values{}); p.status != http.StatusSeeOther {
		t.Fatalf("revoke: %d", p.status)
	}
	if k, _ = e.store.GetKey(t.Context(), k.ID); k.RevokedAt == nil {
		t.Error("key not revoked")
	}
	want(t, b.post("/dashboard/keys/"+k.ID+"/limit", url.Values{"limit_credits": {"3"}, "limit_period": {"day"}}), http.StatusConflict, "is revoked")
	if k, _ = e.store.GetKey(t.Context(), k.ID); k.CreditLimit != nil {
		t.Errorf("a revoked key took a limit: %+v", k.CreditLimit)
	}
	want(t, b.get("/dashboard/activity"), http.StatusOK, "key_created", "limit_changed", "no limit", "key_revoked")
}

// settleRun stores a completed run of n records for an account's key.
func (e *env) settleRun(account, keyID string, n int) runs.Run {
	e.t.Helper()
	now := e.clock.now()
	data := make([]json.RawMessage, n)
	for i := range data {
		data[i] = json.RawMessage(`{"name":"record","n":` + string(rune('0'+i)) + `}`)
	}
	r := &runs.Run{ID: "ext_01jrun" + account + keyID, Status: "completed", Platform: "pro_net", Service: "company.info",
		URL: "https://example.com/c", ServedBy: "source_b/pro_net", Provider: "source_b", Data: data,
		Pagination: runs.Pagination{Total: n}, CreatedAt: now, CompletedAt: now.Add(time.Second),
		Attempts:  []runs.Attempt{{Offer: "source_b/pro_net", Outcome: "ok", Status: 200, DurationMS: 900, Records: n}},
		AccountID: account, KeyID: keyID}
	if _, err := e.store.Settle(e.t.Context(), store.Settlement{Run: r, Price: 1725, Offer: "source_b/pro_net", Platform: "pro_net", Now: now}); err != nil {
		e.t.Fatal(err)
	}
	return *r
}

func TestRunsOverviewAndScope(t *testing.T) {
	e := newEnv(t, false)
	b := e.member("acme", "alice@example.com")
	mine := e.settleRun("acme", "key_a", 3)
	theirs := e.settleRun("other", "key_o", 1)
	ok := store.Key{ID: "key_o", AccountID: "other", Name: "theirs", Hash: sha256.Sum256([]byte("o")), Display: "sdr_live_…oooo", CreatedAt: e.clock.now()}
	if err := e.store.CreateKey(t.Context(), ok); err != nil {
		t.Fatal(err)
	}
	want(t, b.get("/dashboard/"), http.StatusOK, `id="spend-day">0.005175<`, `id="spend-month">0.005175<`, `id="balance">9.994825<`, "pro_net", "<svg", "3 records")
	want(t, b.get("/dashboard/?by=provider"), http.StatusOK, "source_b/pro_net")
	want(t, b.get("/dashboard/runs"), http.StatusOK, mine.ID, "company.info", "0.005175")
	if p := b.get("/dashboard/runs?status=failed"); strings.Contains(p.body, mine.ID) {
		t.Error("status=failed lists a completed run")
	}
	want(t, b.get("/dashboard/runs?from=nonsense"), http.StatusBadRequest, "YYYY-MM-DD")
	// The service filter names platform/service (profile.info is on two
	// platforms), and keeps the bare name a bookmarked URL may hold.
	want(t, b.get("/dashboard/runs?service=pro_net/company.info"), http.StatusOK, mine.ID, `<option selected>pro_net/company.info</option>`, `<option>photo_net/profile.info</option>`)
	want(t, b.get("/dashboard/runs?service=company.info"), http.StatusOK, mine.ID)
	if p := b.get("/dashboard/runs?service=photo_net/company.info"); strings.Contains(p.body, mine.ID) {
		t.Error("service=photo_net/company.info lists a pro_net run")
	}
	want(t, b.get("/dashboard/runs/"+mine.ID), http.StatusOK, "source_b/pro_net", "Record 2", "&#34;name&#34;: &#34;record&#34;")
	p := b.get("/dashboard/runs/" + mine.ID + "/download")
	wantJSON, _ := e.store.GetRunJSON(t.Context(), nil, "acme", mine.ID)
	if p.status != http.StatusOK || p.body != string(wantJSON) || !strings.Contains(p.header.Get("Content-Disposition"), "attachment") {
		t.Errorf("download: %d %q %s", p.status, p.header.Get("Content-Disposition"), p.body)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/dashboard/runs/" + theirs.ID},
		{"GET", "/dashboard/runs/" + theirs.ID + "/download"},
		{"GET", "/dashboard/keys/key_o/revoke"},
		{"POST", "/dashboard/keys/key_o/revoke"},
		{"POST", "/dashboard/keys/key_o/limit"},
		{"POST", "/dashboard/keys/key_none/revoke"},
		{"GET", "/dashboard/nothing"},
	} {
		p := b.do(c.method, c.path, url.Values{"limit_credits": {"1"}, "limit_period": {"day"}})
		if p.status != http.StatusNotFound {
			t.Errorf("%s %s: %d, want 404", c.method, c.path, p.status)
		}
	}
	if k, _ := e.store.GetKey(t.Context(), "key_o"); k.RevokedAt != nil || k.CreditLimit != nil {
		t.Errorf("another account's key changed: %+v", k)
	}
	// A run whose records run_retention deleted says so, with its charge.
	expiredAt := e.clock.now().Add(31 * 24 * time.Hour)
	if res, err := e.store.(store.Expirer).ExpireRuns(t.Context(), expiredAt, expiredAt, 10); err != nil || res.Runs == 0 {
		t.Fatalf("ExpireRuns: %+v, %v", res, err)
	}
	p = b.get("/dashboard/runs/" + mine.ID)
	want(t, p, http.StatusOK, `id="records-expired"`, "Records deleted on "+expiredAt.UTC().Format("2006-01-02 15:04 UTC"), "3 of 3 (deleted)", `id="run-credits">0.005175<`)
	if strings.Contains(p.body, "Record 2") || strings.Contains(p.body, "No records.") {
		t.Error("the expired run's page shows records or calls it empty")
	}
	want(t, b.get("/dashboard/services"), http.StatusOK, "company.info", "Offers")
	want(t, b.get("/dashboard/reference"), http.StatusOK, "static/redoc/redoc.standalone.js")
	if p := b.get("/dashboard/openapi.json"); p.status != http.StatusOK || !strings.HasPrefix(p.body, "{") {
		t.Errorf("openapi.json: %d", p.status)
	}
	if p := b.get("/dashboard/static/redoc/redoc.standalone.js"); p.status != http.StatusOK || len(p.body) < 100_000 {
		t.Errorf("vendored redoc: %d, %d bytes", p.status, len(p.body))
	}
}

func TestSessionLifetimes(t *testing.T) {
	e := newEnv(t, false)
	b := e.member("acme", "alice@example.com")
	e.clock.add(IdleTimeout - time.Minute)
	want(t, b.get("/dashboard/keys"), http.StatusOK) // touches the session
	e.clock.add(IdleTimeout - time.Minute)
	want(t, b.get("/dashboard/keys"), http.StatusOK)
	e.clock.add(IdleTimeout)
	if p := b.get("/dashboard/keys"); p.status != http.StatusSeeOther {
		t.Fatalf("after the idle timeout: %d, want a redirect to sign-in", p.status)
	}
	// Absolute: used every few hours, the session still ends after AbsoluteTimeout.
	b.post("/dashboard/signin", url.Values{"email": {"alice@example.com"}, "password": {goodPassword}})
	for spent := time.Duration(0); spent < AbsoluteTimeout-6*time.Hour; spent += 6 * time.Hour {
		e.clock.add(6 * time.Hour)
		want(t, b.get("/dashboard/keys"), http.StatusOK)
	}
	e.clock.add(6 * time.Hour)
	if p := b.get("/dashboard/keys"); p.status != http.StatusSeeOther {
		t.Fatalf("after the absolute timeout: %d, want a redirect", p.status)
	}
}

func TestPasswordChangeAndSessions(t *testing.T) {
	e := newEnv(t, false)
	one := e.member("acme", "alice@example.com")
	two := e.browser()
	two.post("/dashboard/signin", url.Values{"email": {"alice@example.com"}, "password": {goodPassword}})
	want(t, two.get("/dashboard/account"), http.StatusOK, "this browser")
	want(t, one.post("/dashboard/account/password", url.Values{"current_password": {"nope"}, "password": {"another good one", ""}, "password_confirm": {"another good one"}}),
		http.StatusBadRequest, "not correct")
	p := one.post("/dashboard/account/password", url.Values{"current_password": {goodPassword}, "password": {"another good one"}, "password_confirm": {"another good one"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("change password: %d %s", p.status, p.body)
	}
	want(t, one.get("/dashboard/account?done=password"), http.StatusOK, "Password changed")
	if p := two.get("/dashboard/"); p.status != http.StatusSeeOther {
		t.Errorf("the other session survived a password change: %d", p.status)
	}
	want(t, e.browser().post("/dashboard/signin", url.Values{"email": {"alice@example.com"}, "password": {goodPassword}}), http.StatusUnauthorized)
	e.clock.add(time.Minute) // so three's session is the newest: list[0]
	three := e.browser()
	if p := three.post("/dashboard/signin", url.Values{"email": {"alice@example.com"}, "password": {"another good one"}}); p.status != http.StatusSeeOther {
		t.Fatalf("sign in with the new password: %d", p.status)
	}
	m, _ := e.store.MemberByEmail(t.Context(), "alice@example.com")
	list, _ := e.store.ListSessions(t.Context(), m.ID, e.clock.now())
	if len(list) != 2 {
		t.Fatalf("sessions = %d, want 2", len(list))
	}
	if p := one.post("/dashboard/account/sessions/"+list[0].ID+"/revoke", url.Values{}); p.status != http.StatusSeeOther {
		t.Fatalf("revoke session: %d", p.status)
	}
	if p := three.get("/dashboard/"); p.status != http.StatusSeeOther {
		t.Errorf("revoked session still works: %d", p.status)
	}
	bob := e.member("other", "bob@example.com")
	if p := bob.post("/dashboard/account/sessions/"+list[1].ID+"/revoke", url.Values{}); p.status != http.StatusNotFound {
		t.Errorf("revoking another member's session: %d, want 404", p.status)
	}
}

func TestCookieAttributes(t *testing.T) {
	for _, c := range []struct {
		tls  bool
		name string
	}{{false, "sdr_session"}, {true, "__Host-sdr_session"}} {
		e := newEnv(t, c.tls)
		b := e.browser()
		p := b.post("/dashboard/invite", url.Values{"token": {e.invite("acme", "a@example.com")}, "password": {goodPassword}, "password_confirm": {goodPassword}})
		res := http.Response{Header: p.header}
		cookies := res.Cookies()
		if len(cookies) != 1 {
			t.Fatalf("tls=%v: cookies %v", c.tls, cookies)
		}
		k := cookies[0]
		if k.Name != c.name || !k.HttpOnly || k.SameSite != http.SameSiteLaxMode || k.Path != "/" || k.Secure != c.tls {
			t.Errorf("tls=%v: cookie %+v", c.tls, k)
		}
	}
}

// TestSigninTimingHidesUnknownEmails: an unknown email costs the same
// argon2id check as a wrong password (without it, the answer would come
// tens of times faster and tell the email is unknown).
func TestSigninTimingHidesUnknownEmails(t *testing.T) {
	e := newEnv(t, false)
	e.member("acme", "alice@example.com")
	e.signinAs("warm@example.com", "x") // the dummy hash is computed once, not inside a timed sign-in
	median := func(email string) time.Duration {
		var ds []time.Duration
		for i := range 5 {
			start := time.Now()
			p := e.browser().do(http.MethodPost, "/dashboard/signin",
				url.Values{"email": {email}, "password": {"wrong password " + string(rune('a'+i))}})
			ds = append(ds, time.Since(start))
			if p.status != http.StatusUnauthorized {
				t.Fatalf("%s: %d", email, p.status)
			}
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	known, unknown := median("alice@example.com"), median("nobody@example.com")
	if unknown < known/3 || known < unknown/3 {
		t.Errorf("sign-in took %v for a known email, %v for an unknown one: too far apart", known, unknown)
	}
}

// TestSafeNext: only return paths that stay inside the dashboard (or go
// back to the OAuth authorize step) are followed after sign-in; a dot
// segment, literal or percent-encoded, would be resolved out of it.
func TestSafeNext(t *testing.T) {
	h := New(Config{Path: "/dashboard/", OAuth: &oauth.Server{}})
	for _, tc := range []struct {
		next, want string
	}{
		{"/dashboard/runs?status=failed", "/dashboard/runs?status=failed"},
		{"/dashboard/", "/dashboard/"},
		{"/oauth/authorize?client_id=c&state=s", "/oauth/authorize?client_id=c&state=s"},
		{"/dashboard/runs?next=../x", "/dashboard/runs?next=../x"},
		{"/dashboard/..x/keys", "/dashboard/..x/keys"},
		{"", "/dashboard/"},
		{"https://evil.example/", "/dashboard/"},
		{"//evil.example/x", "/dashboard/"},
		{"/elsewhere", "/dashboard/"},
		{"/dashboard/../v1/account/balance", "/dashboard/"},
		{"/dashboard/..", "/dashboard/"},
		{"/dashboard/./../v1", "/dashboard/"},
		{"/dashboard/%2e%2e/v1/account/balance", "/dashboard/"},
		{"/dashboard/%2E%2e/v1", "/dashboard/"},
		{"/dashboard/%5c%5cevil.example", "/dashboard/"},
		{"/dashboard/\\evil.example", "/dashboard/"},
		{"/dashboard/%zz", "/dashboard/"},
	} {
		if got := h.safeNext(tc.next); got != tc.want {
			t.Errorf("safeNext(%q) = %q, want %q", tc.next, got, tc.want)
		}
	}
}

// TestParseCredits: a limit typed in a form is a decimal amount; the other
// syntaxes big.Rat reads (hex, fractions, exponents) are refused rather
// than read as another amount.
func TestParseCredits(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want credits.Micros
		err  string
	}{
		{"5", 5 * credits.PerCredit, ""},
		{"0.001725", 1725, ""},
		{".5", credits.PerCredit / 2, ""},
		{"2.", 2 * credits.PerCredit, ""},
		{"+3", 3 * credits.PerCredit, ""},
		{"-1", -credits.PerCredit, ""},
		{"0.0000001", 0, "six decimals"},
		{"0x10", 0, "not a number"},
		{"3/2", 0, "not a number"},
		{"1e2", 0, "not a number"},
		{"0b101", 0, "not a number"},
		{"1,5", 0, "not a number"},
		{"NaN", 0, "not a number"},
		{".", 0, "not a number"},
		{"", 0, "not a number"},
	} {
		got, err := parseCredits(tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("parseCredits(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("parseCredits(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
		}
	}
}

// TestRunsInFlight: an async run in flight is listed on the runs page
// (id, service, submitted time, status running, a link) before it
// settles, and its page shows it as it stands; another account's is
// neither listed nor shown; a status filter of settled runs hides them.
func TestRunsInFlight(t *testing.T) {
	e := newEnv(t, false)
	b := e.member("acme", "alice@example.com")
	at := e.clock.now().Add(-time.Minute).Truncate(time.Second)
	for _, ar := range []store.AsyncRun{
		{ID: "ext_01jqmine", AccountID: "acme", KeyID: "key_a", CreatedAt: at, Deadline: at.Add(time.Hour), Request: []byte(`{}`),
			Doc: []byte(`{"id":"ext_01jqmine","status":"running","platform":"pro_net","service":"company.info","url":"https://x.example/c","credits_used":0,"data":[],"pagination":{"total":0,"returned":0},"created_at":"` + at.Format(time.RFC3339) + `","attempts":[]}`)},
		{ID: "ext_01jqtheirs", AccountID: "other", KeyID: "key_o", CreatedAt: at, Deadline: at.Add(time.Hour), Request: []byte(`{}`),
			Doc: []byte(`{"id":"ext_01jqtheirs","status":"running","platform":"photo_net","service":"profile.info","url":"","data":[],"created_at":"` + at.Format(time.RFC3339) + `","attempts":[]}`)},
	} {
		if err := e.store.CreateAsyncRun(t.Context(), ar, 0); err != nil {
			t.Fatal(err)
		}
	}
	p := b.get("/dashboard/runs")
	want(t, p, http.StatusOK, `id="in-flight"`, `href="/dashboard/runs/ext_01jqmine"`, "pro_net company.info",
		`<span class="status running">running</span>`, at.UTC().Format("2006-01-02 15:04 UTC"))
	if strings.Contains(p.body, "ext_01jqtheirs") {
		t.Error("the runs page lists another account's run in flight")
	}
	if p := b.get("/dashboard/runs?status=completed"); strings.Contains(p.body, "ext_01jqmine") {
		t.Error("status=completed lists a run in flight")
	}
	want(t, b.get("/dashboard/runs/ext_01jqmine"), http.StatusOK, "running", "https://x.example/c")
	if p := b.get("/dashboard/runs/ext_01jqmine/download"); p.status != http.StatusOK || !strings.Contains(p.body, `"status":"running"`) {
		t.Errorf("download of a run in flight: %d %s", p.status, p.body)
	}
	for _, path := range []string{"/dashboard/runs/ext_01jqtheirs", "/dashboard/runs/ext_01jqtheirs/download"} {
		if p := b.get(path); p.status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, p.status)
		}
	}
	// Settled, it leaves the list.
	if err := e.store.DeleteAsyncRun(t.Context(), "ext_01jqmine"); err != nil {
		t.Fatal(err)
	}
	if p := b.get("/dashboard/runs"); strings.Contains(p.body, "ext_01jqmine") {
		t.Error("a settled (deleted) async run is still listed in flight")
	}
}
