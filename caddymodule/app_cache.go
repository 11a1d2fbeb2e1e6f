package caddymodule

import (
	"context"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/dustin/go-humanize"

	"socialrouter/caddymodule/cache"
	"socialrouter/caddymodule/metrics"
	"socialrouter/caddymodule/store"
)

// The freshness cache (caddymodule/cache) of the app: one per opened
// store, shared by every config generation over it, since the flights of
// live work in progress must outlive a reload. cache_max_bytes bounds it.

// caches maps an opened store (its store.Cache) to its cache.
var caches sync.Map

// cacheClaimFor is how long a node's claim of live work holds in the
// shared store when the node dies while working.
const cacheClaimFor = 10 * time.Minute

// provisionCache sets a.cache over the opened store (every store keeps
// one: store.Cache is a concern of store.Store).
func (a *App) provisionCache() {
	var cs store.Cache = a.store
	v, _ := caches.LoadOrStore(cs, cache.New(cs, a.CacheMaxBytes, cacheClaimFor))
	a.cache = v.(*cache.Cache)
	a.cache.SetMaxBytes(a.CacheMaxBytes)
	c := a.cache
	metrics.PublishCache(func() (metrics.CacheFigures, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, err := c.Stats(ctx)
		if err != nil {
			return metrics.CacheFigures{}, false
		}
		return metrics.CacheFigures{Hits: st.Hits, Misses: st.Misses, Joins: st.Joins, Stored: st.Stored,
			AvoidedMicros: st.AvoidedMicros, Entries: st.Entries, Bytes: st.Bytes}, true
	})
}

// unmarshalCacheMaxBytes reads `cache_max_bytes <size>` (e.g. 512MiB).
func (a *App) unmarshalCacheMaxBytes(d *caddyfile.Dispenser) error {
	var size string
	if !d.AllArgs(&size) {
		return d.ArgErr()
	}
	n, err := humanize.ParseBytes(size)
	if err != nil || n > 1<<62 {
		return d.Errf("parsing cache_max_bytes %q: want a size such as 512MiB", size)
	}
	a.CacheMaxBytes = int64(n)
	return nil
}
