package tests

import (
	"fmt"
	"testing"
)

// page is what a search page shows of its paging.
type page struct {
	Records, Total int
	Cursor         bool
}

// searchPages follows a search's next_cursor from its first page until a
// page without one (at most 6 pages).
func searchPages(t *testing.T, g *gateway, key, provider, query string, limit int) []page {
	t.Helper()
	var pages []page
	var cursor any
	for range 6 {
		body := map[string]any{"queries": []string{query}, "provider": provider, "limit": limit}
		if cursor != nil {
			body["cursor"] = cursor
		}
		r := g.do("POST", "/v1/search", key, body)
		if r.Status != 200 {
			t.Fatalf("limit %d page %d: %d %s", limit, len(pages)+1, r.Status, r.Body)
		}
		p := r.JSON["pagination"].(map[string]any)
		cursor = p["next_cursor"]
		pages = append(pages, page{len(r.JSON["data"].([]any)), int(num(p["total"])), cursor != nil})
		if cursor == nil {
			break
		}
	}
	return pages
}

// TestTestModeSearchPagesAsLive: a test key's search pages exactly as a
// live one over an upstream with as many results as the example has (2
// for maps/place.search): the same records, totals and cursors on every
// page, whatever the limit. Both give a cursor to an empty page when a
// page is filled exactly, and a total that counts the records produced
// for the pages so far (docs/decisions.md, "Search cursor").
func TestTestModeSearchPagesAsLive(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("acme", 50)
	tk := g.testKey("acme")
	const provider = "source_a/maps/place.search"
	for _, limit := range []int{1, 2, 3} {
		s.reset(t)
		s.fault(t, map[string]any{"target": "compass~crawler-google-places", "items": 2})
		live := searchPages(t, g, key, provider, "coffee in Lisbon", limit)
		test := searchPages(t, g, tk, provider, "coffee in Lisbon", limit)
		t.Logf("limit %d: live %v test %v", limit, live, test)
		seen := 0
		for _, p := range live {
			seen += p.Records
		}
		if seen != 2 {
			t.Errorf("limit %d: the live pages hold %d records, want the upstream's 2", limit, seen)
		}
		if fmt.Sprint(live) != fmt.Sprint(test) {
			t.Errorf("limit %d: live pages %v, test pages %v", limit, live, test)
		}
	}
}
