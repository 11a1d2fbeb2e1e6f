package tests

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestTestModeInBrowser switches the dashboard to test mode and back in
// Chromium: the banner and the test balance show, a key created there is
// a test key whose run is listed in test mode only, and switching back
// shows the live balance and runs untouched.
func TestTestModeInBrowser(t *testing.T) {
	g, b := startDashboard(t)
	dash := g.URL + "/dashboard/"
	b.join(g, "acme", "tess@example.com", "a long enough password", "")
	if got := b.text("#testmode-switch"); got != "Test mode: off" {
		t.Fatalf("switch reads %q", got)
	}

	b.step("switch on", chromedp.Click(chromedp.CSS("#testmode-switch")), chromedp.WaitVisible(chromedp.CSS("#testmode-banner")))
	if got := b.text("#balance"); got != "100" {
		t.Errorf("test balance = %q, want 100", got)
	}
	if got := b.text("#testmode-switch"); got != "Test mode: on" {
		t.Errorf("switch reads %q", got)
	}
	b.shoot("testmode-overview")

	b.step("keys page", chromedp.Navigate(dash+"keys"), chromedp.WaitVisible(chromedp.CSS("#testmode-banner")), chromedp.WaitVisible(chromedp.CSS("#name")))
	b.step("create test key", chromedp.SendKeys(chromedp.CSS("#name"), "ci"), chromedp.Submit(chromedp.CSS("#name")),
		chromedp.WaitVisible(chromedp.CSS("#secret")))
	secret, err := chromedp.Run(b.ctx, chromedp.Value(chromedp.CSS("#secret")))
	if err != nil || !strings.HasPrefix(secret, "sdr_test_") {
		t.Fatalf("secret in test mode = %q, %v", secret, err)
	}
	res := g.do("POST", "/v1/extract/pro_net/company.info", secret, map[string]any{"url": "https://www.linkedin.com/company/kraft-heinz-company"})
	id, _ := res.JSON["id"].(string)
	if res.Status != 200 || res.JSON["livemode"] != false || id == "" {
		t.Fatalf("test call: %d %s", res.Status, res.Body)
	}
	b.step("test runs", chromedp.Navigate(dash+"runs"), chromedp.WaitVisible(chromedp.CSS("#testmode-banner")))
	if !strings.Contains(b.text("main"), id) {
		t.Errorf("the test run %s is not listed in test mode", id)
	}
	// The overview after a test call: docs/dashboard-testmode.png is its
	// desktop screenshot.
	b.step("test overview", chromedp.Navigate(dash), chromedp.WaitVisible(chromedp.CSS("#testmode-banner")), chromedp.WaitVisible(chromedp.CSS("#balance")))
	if got := b.text("#balance"); got == "100" {
		t.Errorf("test balance = %q after a charged test call", got)
	}
	b.shoot("testmode-overview-used", true) // what is in view: the banner, the reset, the quick start, the balances

	b.markStale()
	b.step("switch off", chromedp.Click(chromedp.CSS("#testmode-switch")), chromedp.WaitVisible(chromedp.CSS(fresh+"#testmode-switch")))
	if got := b.text("#testmode-switch"); got != "Test mode: off" {
		t.Errorf("switch reads %q after switching off", got)
	}
	if strings.Contains(b.text("body"), "TEST MODE") {
		t.Error("the live runs page still shows the test mode banner")
	}
	if strings.Contains(b.text("main"), id) {
		t.Errorf("the live runs page lists the test run %s", id)
	}
	b.step("live overview", chromedp.Navigate(dash), chromedp.WaitVisible(chromedp.CSS("#balance")))
	if got := b.text("#balance"); got != "10" {
		t.Errorf("live balance = %q, want 10", got)
	}
	b.shoot("testmode-off-overview")
}
