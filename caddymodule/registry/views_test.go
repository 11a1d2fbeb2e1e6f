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
