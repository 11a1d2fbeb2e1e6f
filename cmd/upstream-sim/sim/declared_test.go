package sim

import (
	"strings"
	"testing"

	"socialrouter/caddymodule/registry"
	"socialrouter/internal/testservices"
	"socialrouter/services"
)

// TestDeclaredRoutesCoverEveryOffer: every live offer of the embedded
// declarations (or of the directory testservices.DirEnv names) has its
// target routed to an example of its source, and the routes are exactly
// those targets: no Go list to keep in step.
func TestDeclaredRoutesCoverEveryOffer(t *testing.T) {
	svc := testservices.ServicesFS(services.FS)
	s := New(Options{Services: svc})
	reg, err := registry.LoadFS(svc)
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, svc := range reg.Services {
		for _, o := range svc.LiveOffers() {
			targets[o.Target] = true
			p, ok := s.Routes()[o.Target]
			if !ok {
				t.Errorf("%s offer %s: target %s has no route", svc.Key, o.ID, o.Target)
				continue
			}
			if !strings.HasPrefix(p, o.Source.ID+"/") {
				t.Errorf("%s offer %s: routed to %s, not an example of %s", svc.Key, o.ID, p, o.Source.ID)
			}
		}
	}
	for target := range s.Routes() {
		if !targets[target] {
			t.Errorf("route %s is no live offer's target", target)
		}
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
}
