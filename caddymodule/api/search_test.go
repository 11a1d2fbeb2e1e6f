package api

import (
	"strings"
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
		{"null query", `{"queries": [null], "provider": "source_a/maps/place.search"}`, "missing_queries"},
		{"a query not a string", `{"queries": ["coffee", 5], "provider": "source_a/maps/place.search"}`, "missing_queries"},
		{"queries a string", `{"queries": "coffee", "provider": "source_a/maps/place.search"}`, "missing_queries"},
		{"null provider", `{"queries": ["coffee"], "provider": null}`, "missing_provider"},
		{"provider not a string", `{"queries": ["coffee"], "provider": 5}`, "invalid_field"},
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

// TestResolveSlug: the slug's optional tag names the source's offer; a tag
// the source has no offer of is refused with the tagged slugs that exist.
func TestResolveSlug(t *testing.T) {
	reg := loadRegistry(t)
	slugs := reg.SearchSlugs()
	tests := []struct {
		slug, offer, code, msg string
	}{
		{"source_a/maps/place.search", "source_a/actor_3", "", ""},
		{"source_a/maps/place.search:actor_3", "source_a/actor_3", "", ""},
		{"source_a/maps/place.search:fast", "", "unknown_provider", `use source_a/maps/place.search:actor_3, or leave the tag out`},
		{"source_a/maps/place.search:", "", "unknown_provider", `none named ""`},
		{"source_b/maps/place.search:actor_3", "", "unknown_provider", "valid slugs: "},
		{"source_a/maps/place.info:actor_3", "", "wrong_endpoint", "POST /v1/extract/maps/place.info"},
	}
	for _, tt := range tests {
		t.Run(tt.slug, func(t *testing.T) {
			_, o, e := resolveSlug(reg, tt.slug, slugs)
			if tt.code == "" {
				if e != nil || o == nil || o.ID != tt.offer {
					t.Fatalf("offer %v, error %v; want %s", o, e, tt.offer)
				}
				return
			}
			if e == nil || e.Code != tt.code || !strings.Contains(e.Message, tt.msg) {
				t.Fatalf("error %v, want %s saying %q", e, tt.code, tt.msg)
			}
		})
	}
}
