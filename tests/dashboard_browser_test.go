package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboardInBrowser drives Debian's Chromium (installed by `make
// chromium`, which `make test-e2e` depends on) through the dashboard of
// the real gateway: accept an invitation, set a password, sign out and in,
// create a key and read its secret from the page, spend with it on the
// API, see the run and the spend, set a limit, revoke the key and see the
// API refuse it, and sign out. It writes a screenshot of every page, at
// desktop and at 360 px wide, under bin/screenshots/.
func TestDashboardInBrowser(t *testing.T) {
	g, b := startDashboard(t)
	dash := g.URL + "/dashboard/"
	const password = "a long enough password"

	// Accept the invitation: choose a password, land on the overview.
	b.join(g, "acme", "alice@example.com", password, "invite")
	if got := b.text("#balance"); got != "10" {
		t.Errorf("balance on the overview = %q, want 10", got)
	}

	// Sign out and in again with the new password.
	b.step("sign out", chromedp.Click(chromedp.CSS(".signout button")), chromedp.WaitVisible(chromedp.CSS("#email")))
	b.shoot("signin")
	b.step("sign in",
		chromedp.SendKeys(chromedp.CSS("#email"), "alice@example.com"),
		chromedp.SendKeys(chromedp.CSS("#password"), password),
		chromedp.Submit(chromedp.CSS("#email")),
		chromedp.WaitVisible(chromedp.CSS("#balance")))

	// Create a key with a limit; read the once-shown secret from the page.
	b.step("keys page", chromedp.Navigate(dash+"keys"), chromedp.WaitVisible(chromedp.CSS("#name")))
	b.step("create key",
		chromedp.SendKeys(chromedp.CSS("#name"), "production"),
		chromedp.Submit(chromedp.CSS("#name")),
		chromedp.WaitVisible(chromedp.CSS("#secret")))
	secret, err := chromedp.Run(b.ctx, chromedp.Value(chromedp.CSS("#secret")))
	if err != nil || !strings.HasPrefix(secret, "sdr_live_") {
		t.Fatalf("secret on the page = %q, %v", secret, err)
	}
	if page := b.text("main"); !strings.Contains(page, "you will not see it again") {
		t.Errorf("the new key's page does not warn that the secret is shown once")
	}
	b.shoot("key-created")

	// Spend with it on the API.
	res := g.do("POST", "/v1/extract/pro_net/company.info", secret,
		map[string]any{"urls": []string{"https://www.linkedin.com/company/kraft-heinz-company"}})
	if res.Status != 200 {
		t.Fatalf("extract with the dashboard's key: %d %s", res.Status, res.Body)
	}
	var run struct {
		ID          string  `json:"id"`
		CreditsUsed float64 `json:"credits_used"`
	}
	_ = json.Unmarshal(res.Body, &run)
	if run.ID == "" || run.CreditsUsed <= 0 {
		t.Fatalf("run %s", res.Body)
	}
	spent := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.6f", run.CreditsUsed), "0"), ".")

	// The overview and the runs page show it.
	b.step("overview", chromedp.Navigate(dash), chromedp.WaitVisible(chromedp.CSS("#spend-day")))
	if got := b.text("#spend-day"); got != spent {
		t.Errorf("spent today on the overview = %q, want %s", got, spent)
	}
	b.shoot("overview")
	b.step("runs", chromedp.Navigate(dash+"runs"), chromedp.WaitVisible(chromedp.CSS("table")))
	if page := b.text("main"); !strings.Contains(page, run.ID) || !strings.Contains(page, spent) {
		t.Errorf("runs page lacks run %s or its %s credits:\n%s", run.ID, spent, page)
	}
	b.shoot("runs")
	b.step("run detail", chromedp.Click(chromedp.CSS("a[href$='"+run.ID+"']")), chromedp.WaitVisible(chromedp.CSS("#run-credits")))
	if got := b.text("#run-credits"); got != spent {
		t.Errorf("run credits = %q, want %s", got, spent)
	}
	b.shoot("run")

	// Set a limit on the key.
	b.step("set limit", chromedp.Navigate(dash+"keys"), chromedp.WaitVisible(chromedp.CSS("form.limit input")),
		chromedp.SendKeys(chromedp.CSS("form.limit input[name=limit_credits]"), "5"),
		chromedp.SetValue(chromedp.CSS("form.limit select"), "week"))
	b.markStale()
	b.step("save limit", chromedp.Submit(chromedp.CSS("form.limit input[name=limit_credits]")),
		chromedp.WaitVisible(chromedp.CSS(fresh+"form.limit input")))
	if v, _ := chromedp.Run(b.ctx, chromedp.Value(chromedp.CSS("form.limit input[name=limit_credits]"))); v != "5" {
		t.Errorf("limit after saving = %q, want 5", v)
	}
	b.shoot("keys")

	// Revoke it: the API refuses the key.
	b.step("revoke", chromedp.Click(chromedp.CSS("a.danger")), chromedp.WaitVisible(chromedp.CSS("button.danger")))
	b.shoot("revoke")
	b.step("confirm revoke", chromedp.Click(chromedp.CSS("button.danger")), chromedp.WaitVisible(chromedp.CSS("tr.revoked")))
	if res := g.do("GET", "/v1/account/balance", secret, nil); res.Status != 401 || res.errCode() != "revoked_api_key" {
		t.Errorf("API call with the revoked key: %d %s, want 401 revoked_api_key", res.Status, res.Body)
	}

	// The other pages.
	b.step("services", chromedp.Navigate(dash+"services"), chromedp.WaitVisible(chromedp.CSS("section.service")))
	b.shoot("services")
	b.step("reference", chromedp.Navigate(dash+"reference"), chromedp.WaitVisible(chromedp.CSS("#redoc .api-content")))
	b.shoot("reference", true)
	b.step("activity", chromedp.Navigate(dash+"activity"), chromedp.WaitVisible(chromedp.CSS("table")))
	for _, a := range []string{"member_joined", "signed_in", "key_created", "limit_changed", "key_revoked"} {
		if !strings.Contains(b.text("main"), a) {
			t.Errorf("activity lacks %s", a)
		}
	}
	b.shoot("activity")
	b.step("account", chromedp.Navigate(dash+"account"), chromedp.WaitVisible(chromedp.CSS("#current_password")))
	b.shoot("account")

	// Sign out: the dashboard sends the browser back to sign-in.
	b.step("sign out", chromedp.Click(chromedp.CSS(".signout button")), chromedp.WaitVisible(chromedp.CSS("#email")))
	b.step("signed out", chromedp.Navigate(dash+"keys"), chromedp.WaitVisible(chromedp.CSS("#email")))
	loc, _ := chromedp.Run(b.ctx, chromedp.Location())
	if !strings.Contains(loc, "/dashboard/signin?next=") {
		t.Errorf("after sign-out /keys went to %q, want the sign-in page", loc)
	}
}

// browser is a headless Chromium tab with the helpers the browser tests
// share: run actions, read text, take screenshots.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string
}

// startDashboard starts the simulator and a gateway whose site serves the
// dashboard, with account acme holding 10 credits, and a browser.
func startDashboard(t *testing.T) (*gateway, *browser) {
	t.Helper()
	s := startSim(t)
	c := defaultConfig(t, s)
	c.SiteExtra = "sdr_dashboard"
	g := startGateway(t, c)
	g.account("acme", 10)
	return g, newBrowser(t)
}

// newBrowser starts Debian's Chromium (installed by `make chromium`) with a
// fresh profile; it stops when the test ends.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found (make chromium installs it): %v", err)
	}
	shots := filepath.Join(repoRoot, "bin", "screenshots")
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx, shots: shots}
}

// step runs actions, failing the test after 30 s.
func (b *browser) step(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	sctx, scancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer scancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// text reads the text of the first element sel matches.
func (b *browser) text(sel string) string {
	b.t.Helper()
	sctx, scancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer scancel()
	v, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("reading %s: %v", sel, err)
	}
	return v
}

// shoot saves the current page at desktop size and at 360 px wide:
// the whole page, or with viewport set only what is in view (the API
// reference is many screens long).
func (b *browser) shoot(name string, viewport ...bool) {
	b.t.Helper()
	for _, v := range []struct {
		suffix string
		w, h   int64
	}{{"desktop", 1280, 900}, {"360", 360, 780}} {
		sctx, scancel := context.WithTimeout(b.ctx, 30*time.Second)
		if err := chromedp.Do(sctx, chromedp.EmulateViewport(v.w, v.h)); err != nil {
			scancel()
			b.t.Fatalf("viewport: %v", err)
		}
		time.Sleep(200 * time.Millisecond)   // let the layout settle
		shot := chromedp.FullScreenshot(100) // 100: PNG (below, JPEG)
		if len(viewport) > 0 {
			shot = chromedp.CaptureScreenshot()
		}
		png, err := chromedp.Run(sctx, shot)
		scancel()
		if err != nil {
			b.t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(b.shots, fmt.Sprintf("%s-%s.png", name, v.suffix)), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	b.step("desktop viewport", chromedp.EmulateViewport(1280, 900))
}

// fresh prefixes a selector so that it matches only in a document loaded
// after the latest markStale: the answer to a form post, not the page that
// sent it (which has the same form, still filled in).
const fresh = "body:not([data-stale]) "

// markStale marks the current document, see fresh.
func (b *browser) markStale() {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`document.body.dataset.stale = "1", true`)); err != nil {
		b.t.Fatalf("marking the page: %v", err)
	}
}

// join invites email to account through the admin API and accepts the
// invitation in the browser with password, which leaves the browser
// signed in on the overview. shot, when set, names the invitation page's
// screenshot.
func (b *browser) join(g *gateway, account, email, password, shot string) {
	b.t.Helper()
	st, body := g.admin("POST", "/sdr/accounts/"+account+"/members", map[string]any{"email": email})
	if st != 201 {
		b.t.Fatalf("inviting: %d %s", st, body)
	}
	var inv struct{ Path string }
	_ = json.Unmarshal(body, &inv)
	b.step("invite page", chromedp.Navigate(g.URL+"/dashboard/"+inv.Path), chromedp.WaitVisible(chromedp.CSS("#password")))
	if shot != "" {
		b.shoot(shot)
	}
	b.step("accept invite",
		chromedp.SendKeys(chromedp.CSS("#password"), password),
		chromedp.SendKeys(chromedp.CSS("#password_confirm"), password),
		chromedp.Submit(chromedp.CSS("#password")),
		chromedp.WaitVisible(chromedp.CSS("#balance")))
}
