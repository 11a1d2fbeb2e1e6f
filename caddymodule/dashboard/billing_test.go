package dashboard

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/payments"
	"socialrouter/caddymodule/store"
)

// TestBillingWithoutPayments: without a payments block the page says
// top-ups are off and refuses one, still keeps the warning threshold
// (banner on the overview once the balance is under it), and lists and
// exports the account's ledger only.
func TestBillingWithoutPayments(t *testing.T) {
	e := newEnv(t, false)
	e.h.Billing = payments.Notices(e.store, nil, nil)
	b := e.member("acme", "alice@example.com")
	ctx := t.Context()
	if _, err := e.store.Move(ctx, store.LedgerEntry{AccountID: "acme", Kind: store.LedgerAdjustment, Amount: -credits.PerCredit, Reason: "=HYPERLINK(\"x\")"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.AddCredits(ctx, "other", 7*credits.PerCredit); err != nil {
		t.Fatal(err)
	}

	p := b.get("/dashboard/billing")
	want(t, p, http.StatusOK, `id="topups-off"`, "Opening balance", "Adjustment", `id="balance">9<`)
	if strings.Contains(p.body, `id="pay"`) || strings.Contains(p.body, "checkout.stripe.com") || strings.Contains(p.header.Get("Content-Security-Policy"), "stripe") {
		t.Error("the page offers a top-up, or lets forms go to Stripe, with payments off")
	}
	csrf := csrfOf(t, p.body)
	want(t, b.post("/dashboard/billing/topup", url.Values{"csrf": {csrf}, "amount": {"10"}}), http.StatusConflict, "Top-ups are off")
	want(t, b.post("/dashboard/billing/topup", url.Values{"amount": {"10"}}), http.StatusForbidden)

	want(t, b.post("/dashboard/billing/settings", url.Values{"csrf": {csrf}, "low_threshold": {"8.5"}}), http.StatusOK, "Saved.", `value="8.5"`)
	want(t, b.post("/dashboard/billing/settings", url.Values{"csrf": {csrf}, "low_threshold": {"lots"}}), http.StatusBadRequest, "must be a number of credits")
	if p := b.get("/dashboard/"); strings.Contains(p.body, `id="low-balance"`) {
		t.Error("banner shown while the balance (9) is above the threshold (8.5)")
	}
	if _, err := e.store.AddCredits(ctx, "acme", -credits.PerCredit); err != nil {
		t.Fatal(err)
	}
	want(t, b.get("/dashboard/"), http.StatusOK, `id="low-balance"`)

	c := b.get("/dashboard/billing/ledger.csv")
	recs, err := csv.NewReader(strings.NewReader(c.body)).ReadAll()
	if err != nil || c.status != 200 || len(recs) != 4 { // header, opening, two adjustments
		t.Fatalf("CSV: %d %v %q", c.status, err, c.body)
	}
	var sum credits.Micros
	for _, r := range recs[1:] {
		v, err := credits.Parse(r[3])
		if err != nil {
			t.Fatal(err)
		}
		sum += v
		if strings.HasPrefix(r[5], "=") {
			t.Errorf("a reason starting with = reaches the spreadsheet as a formula: %q", r[5])
		}
	}
	if sum != 8*credits.PerCredit {
		t.Errorf("Σ of the CSV = %s, want the balance 8", sum)
	}
	if strings.Contains(c.body, "7") && strings.Contains(c.body, "other") {
		t.Error("the export holds another account's rows")
	}
}

func csrfOf(t *testing.T, body string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `name="csrf" value="`)
	tok, _, _ := strings.Cut(rest, `"`)
	if !ok || tok == "" {
		t.Fatalf("no csrf input in %s", body)
	}
	return tok
}
