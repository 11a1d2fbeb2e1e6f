package api

import (
	"encoding/json"
	"testing"

	"socialrouter/caddymodule/credits"
)

func TestAccount(t *testing.T) {
	a := newTestAPI(t, 12*credits.PerCredit+500_000)
	res, _ := a.do(t, "GET", "/v1/account/balance", "", true)
	var bal map[string]any
	if err := json.NewDecoder(res.Body).Decode(&bal); err != nil || res.StatusCode != 200 || bal["balance"] != 12.5 || bal["currency"] != "USD" {
		t.Errorf("balance: %d %v %v", res.StatusCode, bal, err)
	}

	res, _ = a.do(t, "GET", "/v1/account/usage?days=7", "", true)
	var usage map[string]any
	if err := json.NewDecoder(res.Body).Decode(&usage); err != nil || res.StatusCode != 200 || usage["period"] != "7d" || usage["total_requests"] != 0.0 {
		t.Errorf("usage: %d %v %v", res.StatusCode, usage, err)
	}
	for _, days := range []string{"0", "366", "x"} {
		res, e := a.do(t, "GET", "/v1/account/usage?days="+days, "", true)
		if res.StatusCode != 400 || e.Code != "invalid_days" {
			t.Errorf("days=%s: %d %+v", days, res.StatusCode, e)
		}
	}
}
