package tests

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestBillingInBrowser walks the Billing page in Chromium: choose an
// amount, keep the card, pay; the browser is sent to Stripe Checkout (the
// URL stripe-mock answered; there is no network beyond it, so the test
// sees the navigation start). Stripe's signed checkout.session.completed
// for what the dashboard asked for then credits the account, and the
// page, back from Checkout, shows the new balance and the ledger row.
func TestBillingInBrowser(t *testing.T) {
	api := startStripe(t)
	g := paymentsGateway(t, api, "", "")
	key := g.account("acme", 10)
	b := newBrowser(t)
	b.join(g, "acme", "alice@example.com", "a long enough password", "")

	var mu sync.Mutex
	var toCheckout string
	if err := chromedp.Listen(b.ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok && strings.HasPrefix(e.Request.URL, "https://checkout.stripe.com/") {
			mu.Lock()
			toCheckout = e.Request.URL
			mu.Unlock()
		}
	}); err != nil {
		t.Fatalf("listening to the browser: %v", err)
	}
	b.step("billing page", chromedp.Navigate(g.URL+"/dashboard/billing"), chromedp.WaitVisible(chromedp.CSS("#pay")))
	b.shoot("billing")
	if got := b.text("#balance"); got != "10" {
		t.Errorf("balance on the Billing page = %q, want 10", got)
	}
	b.step("choose 25 and keep the card",
		chromedp.Click(chromedp.CSS(`input[name="amount"][value="25"]`)),
		chromedp.Click(chromedp.CSS("#save_card")),
		chromedp.Click(chromedp.CSS("#pay")))
	pollFor(t, "the browser is sent to Stripe Checkout", 15*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return toCheckout != ""
	})

	sessions := api.posts("/v1/checkout/sessions")
	if len(sessions) != 1 {
		t.Fatalf("%d checkout sessions created, want 1", len(sessions))
	}
	f := sessions[0].Form
	cents, _ := strconv.ParseInt(f.Get("line_items[0][price_data][unit_amount]"), 10, 64)
	if f.Get("client_reference_id") != "acme" || cents != 2500 || f.Get("mode") != "payment" ||
		f.Get("payment_intent_data[setup_future_usage]") != "off_session" || f.Get("metadata[sdr_account]") != "acme" {
		t.Fatalf("the checkout session asked for: %v", f)
	}
	if got := g.balance(key); got != 10 {
		t.Fatalf("balance %v before any signed event, want 10", got)
	}

	// Stripe confirms the payment of what was asked.
	body, sig := stripeEvent(t, "evt_browser", "checkout.session.completed",
		checkoutSession("cs_browser", "acme", "pi_browser", cents, ""), time.Now(), testWebhookSecret)
	if st := deliver(t, g.URL, body, sig); st != 200 {
		t.Fatalf("event: %d", st)
	}
	b.step("back from Checkout", chromedp.Navigate(f.Get("success_url")), chromedp.WaitVisible(chromedp.CSS("#ledger")))
	if got := b.text("#balance"); got != "35" {
		t.Errorf("balance after the payment = %q, want 35", got)
	}
	if row := b.text("#ledger tr.kind-top_up"); !strings.Contains(row, "Top-up by card") || !strings.Contains(row, "25") || !strings.Contains(row, "receipt") {
		t.Errorf("ledger row of the top-up = %q", row)
	}
	if notice := b.text(`[role="status"]`); !strings.Contains(notice, "being confirmed") {
		t.Errorf("notice back from Checkout = %q", notice)
	}
	b.shoot("billing-paid")
}
