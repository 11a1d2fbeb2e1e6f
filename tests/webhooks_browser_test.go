package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestWebhooksDashboardInBrowser drives Chromium through the webhooks
// page of the real gateway: add an endpoint and read its once-shown
// secret, send a test event to a receiver that answers 500 first, see the
// delivery log show the failed attempt and its next retry, then the retry
// delivered under the same webhook-id. Screenshots: webhooks-retry-* and
// webhooks-delivered-* under bin/screenshots/.
func TestWebhooksDashboardInBrowser(t *testing.T) {
	c := defaultConfig(t, nil)
	c.AppExtra = "webhooks_allow_private\n\t\twebhooks_retry_schedule 3s"
	c.SiteExtra = "sdr_dashboard"
	g := startGateway(t, c)
	g.account("acme", 10)
	b := newBrowser(t)
	rcv := newHookReceiver(t, 500)
	dash := g.URL + "/dashboard/"

	b.join(g, "acme", "alice@example.com", "a long enough password", "")
	b.step("webhooks page", chromedp.Navigate(dash+"webhooks"), chromedp.WaitVisible(chromedp.CSS("#url")))
	if page := b.text("main"); !strings.Contains(page, "No endpoints yet") {
		t.Errorf("a new account's webhooks page: %q", page)
	}
	b.step("add endpoint",
		chromedp.SendKeys(chromedp.CSS("#url"), rcv.URL+"/hooks/sdr"),
		chromedp.Submit(chromedp.CSS("#url")),
		chromedp.WaitVisible(chromedp.CSS("#secret")))
	secret, err := chromedp.Run(b.ctx, chromedp.Value(chromedp.CSS("#secret")))
	if err != nil || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("secret on the page = %q, %v", secret, err)
	}
	rcv.setSecret(secret)
	b.shoot("webhooks-created")

	b.step("send test event",
		chromedp.Click(chromedp.CSS(`td.actions form[action$="/test"] button`)),
		// The log's table appears with the queued delivery: the page after
		// the form's redirect (the page before has "No deliveries yet").
		chromedp.WaitVisible(chromedp.CSS("#deliveries table")))
	log := b.waitLog(dash, "retrying")
	for _, want := range []string{"webhook.test", "500"} {
		if !strings.Contains(log, want) {
			t.Errorf("delivery log lacks %q after a failed attempt: %q", want, log)
		}
	}
	if next := b.text(`#deliveries td[data-label="Next retry"]`); next == "—" || next == "" {
		t.Errorf("next retry = %q, want a time", next)
	}
	b.shoot("webhooks-retry")

	log = b.waitLog(dash, "delivered")
	if got := b.text(`#deliveries td[data-label="Attempts"]`); got != "2" {
		t.Errorf("attempts = %q, want 2", got)
	}
	if got := b.text(`#deliveries td[data-label="Response"]`); got != "204" {
		t.Errorf("response = %q, want 204", got)
	}
	b.shoot("webhooks-delivered")

	got := rcv.deliveries()
	if len(got) != 2 || got[0].ID != got[1].ID {
		t.Fatalf("receiver got %+v, want two attempts of one webhook-id", got)
	}
	for i, d := range got {
		if d.Verified != nil {
			t.Errorf("attempt %d refused by the reference library: %v", i+1, d.Verified)
		}
	}
}

// waitLog reloads the webhooks page until its delivery log contains
// want, and returns the log's text.
func (b *browser) waitLog(dash, want string) string {
	b.t.Helper()
	var log string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		b.step("reload webhooks", chromedp.Navigate(dash+"webhooks"), chromedp.WaitVisible(chromedp.CSS("#deliveries")))
		if log = b.text("#deliveries"); strings.Contains(log, want) {
			return log
		}
	}
	b.t.Fatalf("the delivery log never showed %q: %q", want, log)
	return ""
}
