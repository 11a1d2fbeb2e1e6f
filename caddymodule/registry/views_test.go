package registry

import (
	"slices"
	"testing"
)

// TestProviderPlatformsFollowStatus: platforms lists where the source's
// live offers serve, so a source shown coming_soon lists none, while
// supported_platforms keeps its coverage; the list form agrees.
func TestProviderPlatformsFollowStatus(t *testing.T) {
	reg := declared(t)
	src := reg.Sources[0]
	for _, tt := range []struct {
		status string
		listed bool
	}{{"active", true}, {"degraded", true}, {"down", true}, {"coming_soon", false}} {
		status := func(string) string { return tt.status }
		d := reg.Provider(src, status)
		if len(d.SupportedPlatforms) == 0 {
			t.Fatalf("%s: %s supports no platform", tt.status, src.ID)
		}
		if got := len(d.Platforms) > 0; got != tt.listed || d.Platforms == nil {
			t.Errorf("%s: platforms %v, want listed=%v", tt.status, d.Platforms, tt.listed)
		}
		i := slices.IndexFunc(reg.Providers(status), func(p ProviderSummary) bool { return p.ID == src.ID })
		if i < 0 || !slices.Equal(reg.Providers(status)[i].Platforms, d.Platforms) {
			t.Errorf("%s: the list form disagrees with the detail form", tt.status)
		}
	}
}

// TestProviderSearchTypesNameTheirPlatform: supported_search_types lists a
// source's search types as <platform>/<type>, so each joined to the source
// id is a provider slug POST /v1/search takes, and a source without search
// coverage omits it.
func TestProviderSearchTypesNameTheirPlatform(t *testing.T) {
	reg := declared(t)
	slugs := reg.SearchSlugs()
	listed := 0
	for _, src := range reg.Sources {
		d := reg.Provider(src, func(string) string { return "active" })
		for _, st := range d.SupportedSearchTypes {
			if !slices.Contains(slugs, src.ID+"/"+st) {
				t.Errorf("%s: search type %s is no provider slug (%v)", src.ID, st, slugs)
			}
		}
		listed += len(d.SupportedSearchTypes)
		if d.SupportedSearchTypes != nil && len(d.SupportedSearchTypes) == 0 {
			t.Errorf("%s: an empty supported_search_types is not omitted", src.ID)
		}
	}
	if listed != len(slugs) {
		t.Errorf("providers list %d search types, the slugs are %v", listed, slugs)
	}
}
