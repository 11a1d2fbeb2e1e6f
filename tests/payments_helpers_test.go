package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"socialrouter/caddymodule/credits"
)

// The test keys: a secret key stripe-mock accepts, and the signing
// secret the tests sign events with (as `stripe listen` would).
const (
	testStripeKey     = "sk_test_sdrE2EkeyNeverLogged"
	testWebhookSecret = "whsec_sdr_e2e_secret_never_logged"
)

// stripeMockBin returns stripe-mock: SDR_STRIPE_MOCK_BIN (make test-e2e
// sets it), or as `make stripe-mock` installs it under bin/.
func stripeMockBin(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("SDR_STRIPE_MOCK_BIN"); bin != "" {
		return bin
	}
	found, _ := filepath.Glob(filepath.Join(repoRoot, "bin", "stripe-mock-*", "stripe-mock"))
	if len(found) == 0 {
		t.Fatal("stripe-mock is not installed: run `make stripe-mock` (make test-e2e does), or set SDR_STRIPE_MOCK_BIN")
	}
	return found[len(found)-1]
}

// stripeAPI is stripe-mock behind a recording proxy: the tests count the
// gateway's calls (stripe-mock keeps no log) and read what it sent.
type stripeAPI struct {
	URL   string
	mu    sync.Mutex
	calls []stripeCall
}

type stripeCall struct {
	Method, Path string
	Form         url.Values
}

// startStripe starts stripe-mock on a free port, and the proxy.
func startStripe(t *testing.T) *stripeAPI {
	t.Helper()
	port, tlsPort := freePort(t), freePort(t)
	p := start(t, nil, stripeMockBin(t), "-http-port", fmt.Sprint(port), "-https-port", fmt.Sprint(tlsPort))
	waitFor(t, "stripe-mock", p, func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
	s := &stripeAPI{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		s.mu.Lock()
		s.calls = append(s.calls, stripeCall{Method: r.Method, Path: r.URL.Path, Form: form})
		s.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// posts returns the calls with method POST to path.
func (s *stripeAPI) posts(path string) []stripeCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []stripeCall
	for _, c := range s.calls {
		if c.Method == http.MethodPost && c.Path == path {
			out = append(out, c)
		}
	}
	return out
}

// paymentsBlock is the app's payments block for a gateway on api, the
// secret key read from the environment at start (paymentsEnv).
func paymentsBlock(api *stripeAPI, extra string) string {
	return `payments stripe {
			secret_key {env.SDR_E2E_STRIPE_KEY}
			webhook_secret {env.SDR_E2E_STRIPE_WHSEC}
			currency usd
			credits_per_unit 1
			min_top_up 5
			max_top_up 500
			api_base ` + api.URL + `
			` + extra + `
		}`
}

// paymentsEnv is the environment the payments block reads its secrets
// from.
var paymentsEnv = []string{"SDR_E2E_STRIPE_KEY=" + testStripeKey, "SDR_E2E_STRIPE_WHSEC=" + testWebhookSecret}

// stripeEvent is a Stripe event around obj, signed at ts with secret,
// as Stripe delivers it: the body and its Stripe-Signature header.
func stripeEvent(t testing.TB, id, typ string, obj string, ts time.Time, secret string) (body []byte, sig string) {
	t.Helper()
	body = fmt.Appendf(nil, `{"id":%q,"object":"event","api_version":%q,"created":%d,"livemode":false,"type":%q,"data":{"object":%s}}`,
		id, stripe.APIVersion, ts.Unix(), typ, obj)
	p := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: ts})
	return body, p.Header
}

// checkoutSession is a paid Checkout Session object of amount cents.
func checkoutSession(id, account, pi string, cents int64, extra string) string {
	return fmt.Sprintf(`{"id":%q,"object":"checkout.session","mode":"payment","client_reference_id":%q,"amount_total":%d,"currency":"usd",`+
		`"payment_status":"paid","status":"complete","payment_intent":%q,"metadata":{"sdr_account":%q%s}}`, id, account, cents, pi, account, extra)
}

// deliver posts a signed event to a gateway's webhook route and returns
// the status.
func deliver(t testing.TB, base string, body []byte, sig string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/payments/stripe/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if sig != "" {
		req.Header.Set("Stripe-Signature", sig)
	}
	r, err := client.Do(req)
	if err != nil {
		t.Fatalf("delivering the event: %v", err)
	}
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return r.StatusCode
}

// ledgerSum pages through GET /v1/account/transactions (3 rows a page,
// so the cursor is exercised) and returns Σ amounts and the rows' kinds.
func ledgerSum(t testing.TB, g *gateway, key string) (credits.Micros, []map[string]any) {
	t.Helper()
	var sum credits.Micros
	var rows []map[string]any
	cursor := ""
	for range 1000 {
		r := g.do("GET", "/v1/account/transactions?limit=3&cursor="+url.QueryEscape(cursor), key, nil)
		if r.Status != 200 {
			t.Fatalf("transactions: %d %s", r.Status, r.Body)
		}
		var page struct {
			Data []map[string]json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(r.Body, &page); err != nil {
			t.Fatal(err)
		}
		for _, row := range page.Data {
			sum += micros(t, row["amount"])
			m := map[string]any{}
			for k, v := range row {
				var x any
				_ = json.Unmarshal(v, &x)
				m[k] = x
			}
			rows = append(rows, m)
		}
		next, _ := r.JSON["next_cursor"].(string)
		if next == "" {
			return sum, rows
		}
		cursor = next
	}
	t.Fatal("the ledger never ended")
	return 0, nil
}

// checkLedger fails t unless the balance is Σ of the ledger.
func checkLedger(t testing.TB, g *gateway, key string) []map[string]any {
	t.Helper()
	sum, rows := ledgerSum(t, g, key)
	if b := balanceMicros(t, g, key); b != sum {
		t.Errorf("balance %s, Σ of its %d ledger rows %s", b, len(rows), sum)
	}
	return rows
}

// kinds counts the ledger rows by kind.
func kinds(rows []map[string]any) map[string]int {
	out := map[string]int{}
	for _, r := range rows {
		out[r["kind"].(string)]++
	}
	return out
}

// dashSession is a member signed in to the dashboard over plain HTTP (no
// browser): it accepts an invitation and posts the Billing forms.
type dashSession struct {
	t    testing.TB
	g    *gateway
	http *http.Client
}

func signIn(t testing.TB, g *gateway, account, email string) *dashSession {
	t.Helper()
	st, body := g.admin("POST", "/sdr/accounts/"+account+"/members", map[string]any{"email": email})
	if st != 201 {
		t.Fatalf("inviting: %d %s", st, body)
	}
	token := regexp.MustCompile(`#([^"]+)"`).FindSubmatch(body)
	if token == nil {
		t.Fatalf("no token in %s", body)
	}
	jar, _ := cookiejar.New(nil)
	d := &dashSession{t: t, g: g, http: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	pw := "a long enough password"
	if st, page := d.post("/dashboard/invite", url.Values{"token": {string(token[1])}, "password": {pw}, "password_confirm": {pw}}); st != http.StatusSeeOther {
		t.Fatalf("accepting the invitation: %d %s", st, tail(page, 5))
	}
	return d
}

func (d *dashSession) get(path string) (int, string) {
	d.t.Helper()
	r, err := d.http.Get(d.g.URL + path)
	if err != nil {
		d.t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(b)
}

func (d *dashSession) post(path string, form url.Values) (int, string) {
	d.t.Helper()
	r, err := d.http.PostForm(d.g.URL+path, form)
	if err != nil {
		d.t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if loc := r.Header.Get("Location"); loc != "" {
		return r.StatusCode, loc
	}
	return r.StatusCode, string(b)
}

// billingForm posts a Billing form with the page's csrf token.
func (d *dashSession) billingForm(path string, form url.Values) (int, string) {
	d.t.Helper()
	st, page := d.get("/dashboard/billing")
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if st != 200 || m == nil {
		d.t.Fatalf("billing page: %d %s", st, tail(page, 5))
	}
	form.Set("csrf", m[1])
	return d.post(path, form)
}

// pollFor polls ok for up to d.
func pollFor(t testing.TB, what string, d time.Duration, ok func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for ctx.Err() == nil {
		if ok() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v", what, d)
}

// logHas reports whether the gateway's output holds, within 5 s, every
// one of subs on one line.
func (g *gateway) logHas(subs ...string) bool {
	for range 100 {
		if g.logLine(subs...) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func (g *gateway) logLine(subs ...string) bool {
	for _, line := range strings.Split(g.p.out.String(), "\n") {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			return true
		}
	}
	return false
}
