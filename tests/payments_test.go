package tests

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
)

// paymentsGateway starts a gateway with the simulator, stripe-mock and a
// payments block on storage (badger when "").
func paymentsGateway(t *testing.T, api *stripeAPI, storage, extra string) *gateway {
	t.Helper()
	c := defaultConfig(t, startSim(t))
	if storage != "" {
		c.Storage = storage
	}
	c.SiteExtra = "sdr_dashboard"
	c.AppExtra = "webhooks_allow_private\n\t\twebhooks_retry_schedule 1s 1s 1s\n\t\t" + paymentsBlock(api, extra)
	return startGateway(t, c, paymentsEnv...)
}

// TestPaymentsTopUpExactlyOnce: a signed checkout.session.completed
// credits the paid amount once, whatever the replays and whichever event
// reports the session; refused events credit nothing and the log says
// why; a refund debits what was refunded, once, in any order; the secrets
// are not in GET /config/; balance = Σ ledger after all of it.
func TestPaymentsTopUpExactlyOnce(t *testing.T) {
	api := startStripe(t)
	g := paymentsGateway(t, api, "", "")
	key := g.account("acme", 1)
	now := time.Now()

	// Spend a little first, so the ledger has a day of run charges.
	if r := g.do("POST", "/v1/extract/pro_net/company.info", key, map[string]any{"url": mnCompanyURL}); r.Status != 200 {
		t.Fatalf("extract: %d %s", r.Status, r.Body)
	}
	before := balanceMicros(t, g, key)

	paid := checkoutSession("cs_test_1", "acme", "pi_test_1", 2000, "")
	body, sig := stripeEvent(t, "evt_completed_1", "checkout.session.completed", paid, now, testWebhookSecret)
	for i := range 3 {
		if st := deliver(t, g.URL, body, sig); st != 200 {
			t.Fatalf("delivery %d: %d", i+1, st)
		}
	}
	// The same session reported by the other event (a redelivery under a
	// new event id) changes nothing either.
	body2, sig2 := stripeEvent(t, "evt_async_1", "checkout.session.async_payment_succeeded", paid, now, testWebhookSecret)
	if st := deliver(t, g.URL, body2, sig2); st != 200 {
		t.Fatalf("async event: %d", st)
	}
	want := before + 20*credits.PerCredit
	if got := balanceMicros(t, g, key); got != want {
		t.Fatalf("balance %s after a 20.00 USD checkout delivered 4 times, want %s", got, want)
	}

	// Refused: a wrong secret, a stale signature, no signature.
	for _, c := range []struct {
		name     string
		ts       time.Time
		secret   string
		noSig    bool
		logWords string
	}{
		{"bad signature", now, "whsec_someone_else", false, "no signature matches the webhook secret"},
		{"stale timestamp", now.Add(-10 * time.Minute), testWebhookSecret, false, "outside the tolerance"},
		{"unsigned", now, testWebhookSecret, true, "no Stripe-Signature header"},
	} {
		b, s := stripeEvent(t, "evt_forged_"+strings.ReplaceAll(c.name, " ", "_"), "checkout.session.completed",
			checkoutSession("cs_forged_"+strings.ReplaceAll(c.name, " ", "_"), "acme", "pi_forged", 50000, ""), c.ts, c.secret)
		if c.noSig {
			s = ""
		}
		if st := deliver(t, g.URL, b, s); st != 400 {
			t.Errorf("%s: status %d, want 400", c.name, st)
		}
		if !g.logHas("stripe event refused, nothing credited", c.logWords) {
			t.Errorf("%s: the log does not say %q", c.name, c.logWords)
		}
	}
	if got := balanceMicros(t, g, key); got != want {
		t.Fatalf("balance %s after refused events, want %s", got, want)
	}

	// An unknown account: 200 (Stripe must not retry it forever), nothing
	// credited, recorded for the operator.
	b, s := stripeEvent(t, "evt_ghost", "checkout.session.completed", checkoutSession("cs_ghost", "ghost", "pi_ghost", 700, ""), now, testWebhookSecret)
	if st := deliver(t, g.URL, b, s); st != 200 {
		t.Errorf("unknown account: %d", st)
	}
	if st, orphans := g.admin("GET", "/sdr/payments/orphans", nil); st != 200 || !strings.Contains(string(orphans), `"account_id":"ghost"`) || !strings.Contains(string(orphans), `"amount":7`) {
		t.Errorf("orphans: %d %s", st, orphans)
	}
	if !g.logHas("payment credited to no account", "unknown account", "ghost") {
		t.Error("the log does not say the payment reached no account")
	}

	// Refunds carry the total refunded so far: 5.00, a replay, the later
	// total 8.00, then the earlier 5.00 arriving late.
	refund := func(evt string, cents int) {
		t.Helper()
		b, s := stripeEvent(t, evt, "charge.refunded", fmt.Sprintf(`{"id":"ch_test_1","object":"charge","amount":2000,"amount_refunded":%d,"currency":"usd","refunded":false,"payment_intent":"pi_test_1"}`, cents), now, testWebhookSecret)
		if st := deliver(t, g.URL, b, s); st != 200 {
			t.Fatalf("refund %s: %d", evt, st)
		}
	}
	refund("evt_refund_1", 500)
	refund("evt_refund_1", 500)
	if got := balanceMicros(t, g, key); got != want-5*credits.PerCredit {
		t.Errorf("balance %s after a 5.00 refund, want %s", got, want-5*credits.PerCredit)
	}
	refund("evt_refund_2", 800)
	refund("evt_refund_0", 500) // out of order: already covered
	want -= 8 * credits.PerCredit
	if got := balanceMicros(t, g, key); got != want {
		t.Errorf("balance %s after refunds totalling 8.00, want %s", got, want)
	}

	rows := checkLedger(t, g, key)
	if k := kinds(rows); k["opening"] != 1 || k["top_up"] != 1 || k["refund"] != 2 || k["run_charges"] != 1 {
		t.Errorf("ledger kinds %v, want an opening, a top-up, 2 refunds, a day of run charges", k)
	}
	for _, r := range rows {
		if r["kind"] == "top_up" && !strings.HasPrefix(fmt.Sprint(r["receipt_url"]), "https://") {
			t.Errorf("top-up row without its receipt: %v", r)
		}
	}

	for _, c := range []struct{ query, code string }{{"?limit=0", "invalid_limit"}, {"?limit=101", "invalid_limit"}, {"?cursor=not-ours", "invalid_cursor"}} {
		if r := g.do("GET", "/v1/account/transactions"+c.query, key, nil); r.Status != 400 || r.errCode() != c.code {
			t.Errorf("transactions%s: %d %s, want 400 %s", c.query, r.Status, r.Body, c.code)
		}
	}
	if r := g.do("GET", "/v1/account/transactions", "", nil); r.Status != 401 {
		t.Errorf("transactions without a key: %d", r.Status)
	}

	// The secrets stay out of the config the admin endpoint serves, and
	// out of the log.
	_, cfg := g.admin("GET", "/config/", nil)
	for _, secret := range []string{testStripeKey, testWebhookSecret} {
		if strings.Contains(string(cfg), secret) || strings.Contains(g.p.out.String(), secret) {
			t.Errorf("the secret %s… is in GET /config/ or the log", secret[:12])
		}
	}
	if !strings.Contains(string(cfg), "{env.SDR_E2E_STRIPE_KEY}") {
		t.Errorf("GET /config/ does not show the placeholder: %s", tail(string(cfg), 3))
	}
}

// TestPaymentsMultinodeOnce delivers one completed checkout 5 times at
// once to each of two nodes on one PostgreSQL: one credit, every delivery
// answered 200, balance = Σ ledger on both nodes; then 16 calls through
// both nodes crossing the recharge threshold start one recharge.
func TestPaymentsMultinodeOnce(t *testing.T) {
	pgURL, _ := mnEnv(t)
	api := startStripe(t)
	dbURL, _ := mnSchema(t, pgURL)
	var nodes [2]*gateway
	for i := range nodes {
		nodes[i] = paymentsGateway(t, api, "postgres "+dbURL, "")
	}
	key := nodes[0].account("acme", 3)
	body, sig := stripeEvent(t, "evt_mn_1", "checkout.session.completed", checkoutSession("cs_mn_1", "acme", "pi_mn_1", 4200, ""), time.Now(), testWebhookSecret)
	var wg sync.WaitGroup
	statuses := make(chan int, 10)
	for i := range 10 {
		wg.Go(func() { statuses <- deliver(t, nodes[i%2].URL, body, sig) })
	}
	wg.Wait()
	close(statuses)
	for st := range statuses {
		if st != 200 {
			t.Errorf("a delivery answered %d, want 200", st)
		}
	}
	for _, g := range nodes {
		if got, want := balanceMicros(t, g, key), credits.Micros(45*credits.PerCredit); got != want {
			t.Errorf("balance through %s = %s, want %s (3 + 42 once)", g.URL, got, want)
		}
		rows := checkLedger(t, g, key)
		if k := kinds(rows); k["top_up"] != 1 {
			t.Errorf("ledger kinds %v, want one top-up", k)
		}
	}

	// Automatic recharge: 16 calls crossing the threshold, 8 through each
	// node, start one PaymentIntent between them.
	armRecharge(t, nodes[0], signIn(t, nodes[0], "acme", "alice@example.com"))
	justAbove(t, nodes[0], key)
	crossAtOnce(t, nodes[:], key)
	pollFor(t, "a recharge starts", 10*time.Second, func() bool { return len(api.posts("/v1/payment_intents")) > 0 })
	time.Sleep(time.Second) // a second one would be under way by now
	if n := len(api.posts("/v1/payment_intents")); n != 1 {
		t.Errorf("%d PaymentIntents created by two nodes, want 1", n)
	}
	for _, g := range nodes {
		checkLedger(t, g, key)
	}
}

// TestPaymentsAutoRecharge: the customer sets automatic recharge on the
// Billing page and keeps a card through a checkout; 16 concurrent calls
// that cross the threshold start one PaymentIntent, off-session with
// that card; stripe-mock's answer (requires_payment_method) is a failure
// the Billing page and the account's webhook endpoint report; its
// payment_intent.succeeded credits the recharge once; three failures in
// a row turn automatic recharge off.
func TestPaymentsAutoRecharge(t *testing.T) {
	api := startStripe(t)
	g := paymentsGateway(t, api, "", "recharge_retry 300ms")
	key := g.account("acme", 10)
	rcv := newHookReceiver(t)
	st, body := g.admin("POST", "/sdr/accounts/acme/webhooks", map[string]any{"url": rcv.URL + "/hooks", "events": []string{"billing.recharge_failed", "balance.low"}})
	if st != 201 {
		t.Fatalf("register: %d %s", st, body)
	}
	rcv.setSecret(regexpFind(t, `"secret":"(whsec_[^"]+)"`, string(body)))

	d := signIn(t, g, "acme", "alice@example.com")
	armRecharge(t, g, d)
	justAbove(t, g, key)
	crossAtOnce(t, []*gateway{g}, key)
	pollFor(t, "the recharge's failure reaches the endpoint", 10*time.Second, func() bool {
		for _, d := range rcv.deliveries() {
			if d.Type == "billing.recharge_failed" && d.Verified == nil {
				return true
			}
		}
		return false
	})
	time.Sleep(500 * time.Millisecond) // any second recharge would be under way by now
	pis := api.posts("/v1/payment_intents")
	if len(pis) != 1 {
		t.Fatalf("%d PaymentIntents created by 16 calls crossing the threshold, want 1", len(pis))
	}
	pi := pis[0].Form
	if pi.Get("off_session") != "true" || pi.Get("confirm") != "true" || pi.Get("customer") != "cus_keep" ||
		!strings.HasPrefix(pi.Get("payment_method"), "pm_") || pi.Get("amount") != "2500" || pi.Get("metadata[sdr_account]") != "acme" {
		t.Errorf("the PaymentIntent sent: %v", pi)
	}
	if _, page := d.get("/dashboard/billing"); !strings.Contains(page, `id="recharge-failure"`) {
		t.Errorf("the Billing page does not show the failed recharge")
	}
	lowSeen := false
	for _, d := range rcv.deliveries() {
		lowSeen = lowSeen || d.Type == "balance.low"
	}
	if !lowSeen {
		t.Error("no balance.low event reached the endpoint")
	}

	// Stripe reports the recharge paid (after the customer's bank
	// confirmed it): credited once, whatever the replays.
	before := balanceMicros(t, g, key)
	succeeded := fmt.Sprintf(`{"id":"pi_rch_1","object":"payment_intent","amount":2500,"amount_received":2500,"currency":"usd","status":"succeeded","metadata":{"sdr_account":"acme","sdr_kind":"auto_recharge","sdr_recharge":%q}}`, pi.Get("metadata[sdr_recharge]"))
	b, s := stripeEvent(t, "evt_rch_ok", "payment_intent.succeeded", succeeded, time.Now(), testWebhookSecret)
	for range 3 {
		if st := deliver(t, g.URL, b, s); st != 200 {
			t.Fatalf("recharge event: %d", st)
		}
	}
	_, rows := ledgerSum(t, g, key)
	if r := rows[0]; r["kind"] != "auto_recharge" || !strings.HasPrefix(fmt.Sprint(r["receipt_url"]), "https://") {
		t.Errorf("newest ledger row %v, want the recharge with its receipt", r)
	}
	if got := balanceMicros(t, g, key); got != before+25*credits.PerCredit {
		t.Errorf("balance %s after the recharge, want %s", got, before+25*credits.PerCredit)
	}

	// Three failures in a row turn it off: each call under the threshold
	// after the retry wait starts one more, each refused by stripe-mock.
	justAbove(t, g, key)
	for i := 0; len(api.posts("/v1/payment_intents")) < 4 && i < 40; i++ {
		time.Sleep(350 * time.Millisecond)
		g.do("POST", mnCompanyPath, key, map[string]any{"url": mnCompanyURL})
	}
	time.Sleep(time.Second)
	for range 3 {
		time.Sleep(350 * time.Millisecond)
		g.do("POST", mnCompanyPath, key, map[string]any{"url": mnCompanyURL})
	}
	if n := len(api.posts("/v1/payment_intents")); n != 4 {
		t.Errorf("%d PaymentIntents in all, want 4 (one, then 3 failures before it turns off)", n)
	}
	if _, page := d.get("/dashboard/billing"); !strings.Contains(page, "automatic recharge is now off") || strings.Contains(page, `id="auto_recharge" checked`) {
		t.Errorf("the Billing page does not say automatic recharge turned off: %s", tail(page, 20))
	}
	checkLedger(t, g, key)
}

// armRecharge sets automatic recharge on the Billing page (under 9.995,
// by 25, and the warning at 9.995), then keeps a card through a
// checkout of 5.00 with a customer.
func armRecharge(t *testing.T, g *gateway, d *dashSession) {
	t.Helper()
	if st, page := d.billingForm("/dashboard/billing/settings", url.Values{"auto_recharge": {"on"}, "recharge_threshold": {"9.995"},
		"recharge_amount": {"25"}, "low_threshold": {"9.995"}}); st != 200 || !strings.Contains(page, "once a card is on file") {
		t.Fatalf("settings: %d %s", st, tail(page, 5))
	}
	keep := strings.Replace(checkoutSession("cs_keep", "acme", "pi_keep", 500, `,"sdr_save_card":"1"`), `"mode"`, `"customer":"cus_keep","mode"`, 1)
	b, s := stripeEvent(t, "evt_keep", "checkout.session.completed", keep, time.Now(), testWebhookSecret)
	if st := deliver(t, g.URL, b, s); st != 200 {
		t.Fatalf("checkout: %d", st)
	}
	if _, page := d.get("/dashboard/billing"); !strings.Contains(page, "A card is on file") || !strings.Contains(page, `id="auto_recharge" checked`) {
		t.Fatalf("the Billing page does not show the card and automatic recharge on: %s", tail(page, 30))
	}
}

// justAbove takes the balance to 9.996, just above the threshold: the
// first call crosses it.
func justAbove(t *testing.T, g *gateway, key string) {
	t.Helper()
	debit := credits.Micros(9_996_000) - balanceMicros(t, g, key)
	if st, b := g.admin("POST", "/sdr/accounts/acme/credits", map[string]any{"amount": json.RawMessage(debit.String()), "reason": "test: just above the threshold"}); st != 200 {
		t.Fatalf("debit: %d %s", st, b)
	}
}

// crossAtOnce makes 16 calls at once, spread over the nodes.
func crossAtOnce(t *testing.T, nodes []*gateway, key string) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			if r, err := trySend(t, "POST", nodes[i%len(nodes)].URL+mnCompanyPath, key, map[string]any{"url": mnCompanyURL}); err != nil || r.Status != 200 {
				t.Errorf("extract: %v %v", err, r)
			}
		})
	}
	wg.Wait()
}

func regexpFind(t testing.TB, re, s string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("%s not in %s", re, s)
	}
	return m[1]
}
