package api

import (
	"strings"
	"testing"

	"socialrouter/caddymodule/credits"
)

// TestExtractOrder: DESIGN.md section 4's order — an unknown service is
// refused before authentication, authentication before the body, the body
// before billing — and nothing is charged for a refusal.
func TestExtractOrder(t *testing.T) {
	a := newTestAPI(t, credits.PerCredit)
	tests := []struct {
		name, path, body string
		auth             bool
		status           int
		code             string
	}{
		{"unknown service before auth", "/v1/extract/pro_net/nope", `{}`, false, 404, "unknown_service"},
		{"auth before body", "/v1/extract/pro_net/profile.info", `not json`, false, 401, "missing_api_key"},
		{"body: not JSON", "/v1/extract/pro_net/profile.info", `not json`, true, 400, "invalid_json"},
		{"body: empty", "/v1/extract/pro_net/profile.info", ``, true, 400, "invalid_json"},
		{"body: no input", "/v1/extract/pro_net/profile.info", `{}`, true, 400, "missing_input"},
		{"body: bad input", "/v1/extract/pro_net/profile.info", `{"url": "https://example.com/x"}`, true, 400, "invalid_input_format"},
		{"body: unknown offer", "/v1/pro_net/profile.info", `{"url": "https://www.linkedin.com/in/a", "provider": "source_z/x"}`, true, 400, "unknown_offer"},
		{"body too large", "/v1/extract/pro_net/profile.info", `{"urls": ["` + strings.Repeat("a", 1<<20) + `"]}`, true, 413, "request_too_large"},
	}
	for _, tt := range tests {
		res, e := a.do(t, "POST", tt.path, tt.body, tt.auth)
		if res.StatusCode != tt.status || e.Code != tt.code {
			t.Errorf("%s: %d %+v, want %d %s", tt.name, res.StatusCode, e, tt.status, tt.code)
		}
	}
	acct, err := a.store.GetAccount(t.Context(), "acme")
	if err != nil || acct.Balance != credits.PerCredit {
		t.Errorf("a refusal changed the balance: %+v, %v", acct, err)
	}
}
