package api

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestAuthenticate(t *testing.T) {
	a := newTestAPI(t, 0)
	tests := []struct {
		name, header, code, msg string
	}{
		{"missing", "", "missing_api_key", "no API key"},
		{"not bearer", "Basic " + a.secret, "invalid_api_key", "malformed Authorization header"},
		{"other prefix", "Bearer xyz_live_abc", "invalid_api_key", "malformed Authorization header"},
		{"an MCP OAuth access token", "Bearer sdr_oat_abc", "invalid_api_key", "OAuth access token, which only /mcp accepts"},
		{"unknown", "Bearer sdr_live_" + "b", "invalid_api_key", "unknown API key"},
		{"valid", "bearer  " + a.secret, "", ""},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/v1/account/balance", nil)
		if tt.header != "" {
			r.Header.Set("Authorization", tt.header)
		}
		k, e := a.Authenticate(r)
		switch {
		case tt.code == "" && (e != nil || k.ID != a.key.ID):
			t.Errorf("%s: %+v, %+v", tt.name, k, e)
		case tt.code != "" && (e == nil || e.Code != tt.code || e.Status != 401 || !strings.Contains(e.Message, tt.msg)):
			t.Errorf("%s: %+v, want 401 %s saying %q", tt.name, e, tt.code, tt.msg)
		}
	}
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/account/balance", nil))
	if got := rec.Header().Get("WWW-Authenticate"); got != `Bearer realm="social_router"` {
		t.Errorf("401 without WWW-Authenticate: %q", got)
	}

	if _, err := a.store.RevokeKey(t.Context(), a.key.ID, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/v1/account/balance", nil)
	r.Header.Set("Authorization", "Bearer "+a.secret)
	if _, e := a.Authenticate(r); e == nil || e.Code != "revoked_api_key" || e.Message != "this API key was revoked on 2026-01-02T03:04:05Z; create a new key" {
		t.Errorf("revoked: %+v", e)
	}
}
