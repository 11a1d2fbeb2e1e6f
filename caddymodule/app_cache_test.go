package caddymodule

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"socialrouter/caddymodule/metrics"
	"socialrouter/caddymodule/store/badger"
)

// TestCacheMaxBytesCaddyfile: cache_max_bytes takes one size.
func TestCacheMaxBytesCaddyfile(t *testing.T) {
	for _, tt := range []struct {
		name, input string
		want        int64
		err         string
	}{
		{"absent", "social_router {\n}", 0, ""},
		{"MiB", "social_router {\n cache_max_bytes 512MiB\n}", 512 << 20, ""},
		{"bytes", "social_router {\n cache_max_bytes 1000\n}", 1000, ""},
		{"not a size", "social_router {\n cache_max_bytes lots\n}", 0, "want a size"},
		{"two arguments", "social_router {\n cache_max_bytes 1 2\n}", 0, "wrong argument count"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := new(App)
			err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || a.CacheMaxBytes != tt.want {
				t.Fatalf("%v: cache_max_bytes %d, want %d", err, a.CacheMaxBytes, tt.want)
			}
		})
	}
}

// TestProvisionCache: a store under the metrics decorator gets one cache,
// shared by the config generations over it, with the latest bound.
func TestProvisionCache(t *testing.T) {
	st, err := badger.Open(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	wrapped := metrics.InstrumentStore(st, "badger")
	a := &App{store: wrapped, CacheMaxBytes: 100}
	a.provisionCache()
	b := &App{store: wrapped, CacheMaxBytes: 200}
	b.provisionCache()
	if a.cache == nil || a.cache != b.cache {
		t.Fatalf("caches %p and %p: want one cache for the store", a.cache, b.cache)
	}
	if s, err := b.cache.Stats(t.Context()); err != nil || s.MaxBytes != 200 {
		t.Errorf("stats %+v, %v: want the latest bound, 200", s, err)
	}
	t.Cleanup(func() { caches.Delete(wrapped) })
}
