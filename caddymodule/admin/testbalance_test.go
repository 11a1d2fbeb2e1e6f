package admin

import (
	"context"
	"strings"
	"testing"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/testmode"
)

// TestResetTestBalance: the reset sets the twin's balance back to the
// starting test balance (creating the twin when no test key made it),
// never moves the live balance, and refuses a twin or an unknown account.
func TestResetTestBalance(t *testing.T) {
	h, _ := newTestHandler(t)
	serve(t, h, "POST", "/sdr/accounts", `{"id": "acme", "balance": 7}`)
	ctx := context.Background()

	// No twin yet: the reset creates it with the starting balance.
	if status, body, _ := serve(t, h, "POST", "/sdr/accounts/acme/test-balance/reset", ""); status != 200 ||
		!strings.Contains(body, `"test_balance":100`) || !strings.Contains(body, `"test_account_id":"acme~test"`) {
		t.Fatalf("first reset: %d %s", status, body)
	}
	// Spend 37.5 test credits, then reset.
	if _, err := h.Store.AddCredits(ctx, testmode.AccountID("acme"), -37500000); err != nil {
		t.Fatal(err)
	}
	if _, body, _ := serve(t, h, "GET", "/sdr/accounts/acme", ""); !strings.Contains(body, `"test_balance":62.5`) {
		t.Fatalf("after spending: %s", body)
	}
	tests := []struct {
		path     string
		status   int
		contains string
	}{
		{"/sdr/accounts/acme/test-balance/reset", 200, `"test_balance":100`},
		{"/sdr/accounts/acme/test-balance/reset/", 200, `"test_balance":100`}, // already there: unchanged
		{"/sdr/accounts/acme~test/test-balance/reset", 400, "acme~test is a test account; reset the test balance of acme"},
		{"/sdr/accounts/nope/test-balance/reset", 404, "account nope not found"},
	}
	for _, tt := range tests {
		if status, body, _ := serve(t, h, "POST", tt.path, ""); status != tt.status || !strings.Contains(body, tt.contains) {
			t.Errorf("POST %s: %d %s, want %d containing %q", tt.path, status, body, tt.status, tt.contains)
		}
	}
	if status, _, allow := serve(t, h, "GET", "/sdr/accounts/acme/test-balance/reset", ""); status != 405 || allow != "POST" {
		t.Errorf("GET reset: %d, Allow %q", status, allow)
	}
	live, err := h.Store.GetAccount(ctx, "acme")
	if err != nil || live.Balance != 7*credits.PerCredit {
		t.Errorf("live balance %v (%v), want 7 credits untouched", live.Balance, err)
	}
	if _, err := h.Store.GetAccount(ctx, testmode.AccountID("nope")); err == nil {
		t.Error("a reset of an unknown account created its twin")
	}
}
