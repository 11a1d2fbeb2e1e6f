package api

import (
	"crypto/rand"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"socialrouter/caddymodule/credits"
)

// TestNewRunID: "ext_" + the ULID of the time, in lower case (the ids
// runs have always had), and two ids of one millisecond differ and sort
// by time.
func TestNewRunID(t *testing.T) {
	shape := regexp.MustCompile(`^ext_[0-9a-hjkmnp-tv-z]{26}$`)
	now := time.Date(2026, 11, 28, 15, 4, 5, 6e6, time.UTC)
	id := newRunID(now)
	if !shape.MatchString(id) {
		t.Fatalf("newRunID = %q, want ext_ and 26 lower-case Crockford digits", id)
	}
	u, err := ulid.ParseStrict(strings.ToUpper(id[len("ext_"):]))
	if err != nil {
		t.Fatalf("%q: not a ULID: %v", id, err)
	}
	if got := ulid.Time(u.Time()); !got.Equal(now) {
		t.Errorf("ULID time %v, want %v", got, now)
	}
	want := "ext_" + strings.ToLower(ulid.MustNew(ulid.Timestamp(now), rand.Reader).String())
	if id[:len("ext_")+10] != want[:len("ext_")+10] {
		t.Errorf("time part %q, want %q (the String form lowered)", id[:14], want[:14])
	}
	if other := newRunID(now); other == id {
		t.Errorf("two ids of one millisecond are both %q", id)
	}
	if later := newRunID(now.Add(time.Millisecond)); later <= id {
		t.Errorf("a later id %q does not sort after %q", later, id)
	}
}

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
