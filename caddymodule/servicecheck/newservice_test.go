package servicecheck_test

import (
	"context"
	"io/fs"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/servicecheck"
	"socialrouter/caddymodule/sources"
	"socialrouter/cmd/upstream-sim/sim"
	"socialrouter/services"
)

// withNewService copies the embedded services (declarations and examples)
// into a temporary directory and adds testdata/newservice:
// micro_net/profile.info on both sources, declared only in CUE, with an
// example per offer.
func withNewService(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, from := range []fs.FS{services.FS, os.DirFS("testdata/newservice")} {
		err := fs.WalkDir(from, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || path.Ext(p) == ".go" {
				return err
			}
			b, err := fs.ReadFile(from, p)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(path.Dir(p))), 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, filepath.FromSlash(p)), b, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestNewServiceNeedsNoGo: a service added by CUE and examples alone loads,
// passes the example check, is routed by the simulator from its
// declaration, and is served through the real router with failover.
func TestNewServiceNeedsNoGo(t *testing.T) {
	dir := withNewService(t)
	// The gateway's loader: compile, then every check of sdr check.
	reg, err := servicecheck.Load(context.Background(), dir)
	if err != nil {
		t.Fatalf("loading services with the new one: %v", err)
	}
	svc, ok := reg.Service("micro_net", "profile.info")
	if !ok || len(svc.LiveOffers()) != 2 || !svc.Callable() {
		t.Fatalf("micro_net/profile.info not compiled with its two offers: %+v", svc)
	}

	s := sim.New(sim.Options{Services: os.DirFS(dir)})
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	for _, o := range svc.LiveOffers() {
		if p := s.Routes()[o.Target]; p != o.Source.ID+"/micro_net__profile.info.json" {
			t.Errorf("simulator routes %s to %q", o.Target, p)
		}
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	clients := map[string]sources.Client{}
	for _, src := range reg.Sources {
		c, err := sources.New(src.Protocol, sources.Config{BaseURL: srv.URL, PollInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		clients[src.ID] = c
	}
	rt := router.New(router.Config{}, clients, router.NewBreakers(), nil)
	in := svc.Accepts[0].Example
	for _, tc := range []struct {
		name, fault, servedBy string
	}{
		{"head offer", "", "source_b/micro_net"},
		{"failover", "gd_micro_profile", "source_a/actor_8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.ClearFaults()
			if tc.fault != "" {
				if err := s.SetFault(sim.Fault{Target: tc.fault, Status: 503}); err != nil {
					t.Fatal(err)
				}
			}
			res, err := rt.Run(context.Background(), router.Request{Service: svc, Inputs: []string{in}, Limit: 10})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Offer.ID != tc.servedBy || len(res.Records) == 0 {
				t.Fatalf("served by %s with %d records, want %s", res.Offer.ID, len(res.Records), tc.servedBy)
			}
			for _, rec := range res.Records {
				if v := svc.CheckRecord(rec); v != nil {
					t.Errorf("served record off its schema: %v: %s", v, rec)
				}
				if !strings.Contains(string(rec), `"follower_count":1204`) {
					t.Errorf("record %s lacks the example's follower count", rec)
				}
			}
		})
	}
}
