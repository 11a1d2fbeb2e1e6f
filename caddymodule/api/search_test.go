package api

import (
	"testing"

	"socialrouter/caddymodule/credits"
)

// TestSearchValidation pins the refusals of a search body, all before any
// billing or upstream call.
func TestSearchValidation(t *testing.T) {
	a := newTestAPI(t, credits.PerCredit)
	tests := []struct {
		name, body, code string
	}{
		{"no queries", `{"provider": "source_a/maps/place.search"}`, "missing_queries"},
		{"empty queries", `{"queries": [], "provider": "source_a/maps/place.search"}`, "missing_queries"},
		{"no provider", `{"queries": ["coffee"]}`, "missing_provider"},
		{"unknown provider", `{"queries": ["coffee"], "provider": "source_z/maps/place.search"}`, "unknown_provider"},
		{"malformed slug", `{"queries": ["coffee"], "provider": "maps"}`, "unknown_provider"},
		{"extraction type", `{"queries": ["coffee"], "provider": "source_a/pro_net/profile.info"}`, "wrong_endpoint"},
		{"bad limit", `{"queries": ["coffee"], "provider": "source_a/maps/place.search", "limit": 0}`, "invalid_limit"},
		{"bad fallback", `{"queries": ["coffee"], "provider": "source_a/maps/place.search", "fallback": "no"}`, "invalid_field"},
		{"foreign cursor", `{"queries": ["coffee"], "provider": "source_a/maps/place.search", "cursor": "` +
			encodeCursor(searchCursor{Provider: "source_a/maps/place.search", Queries: []string{"tea"}, Offset: 100}) + `"}`, "invalid_cursor"},
		{"options not object", `{"queries": ["coffee"], "provider": "source_a/maps/place.search", "options": 1}`, "invalid_option"},
		{"unknown field", `{"queries": ["coffee"], "provider": "source_a/maps/place.search", "page": 2}`, "unknown_field"},
	}
	for _, tt := range tests {
		res, e := a.do(t, "POST", "/v1/search", tt.body, true)
		if res.StatusCode != 400 || e.Code != tt.code || e.Type != typeValidation {
			t.Errorf("%s: %d %+v, want 400 %s", tt.name, res.StatusCode, e, tt.code)
		}
	}
}

func TestCursorRoundTrip(t *testing.T) {
	c := searchCursor{Provider: "source_a/maps/place.search", Queries: []string{"a", "b"}, Offset: 200}
	got, ok := decodeCursor(encodeCursor(c))
	if !ok || got.Provider != c.Provider || got.Offset != 200 || len(got.Queries) != 2 {
		t.Errorf("round trip: %+v, %v", got, ok)
	}
	for _, bad := range []string{"", "!!", encodeCursor(searchCursor{Offset: 1})} {
		if _, ok := decodeCursor(bad); ok {
			t.Errorf("cursor %q accepted", bad)
		}
	}
}
