package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// CacheFigures is what the freshness cache reports at scrape time: its
// counters since the process started and the bytes its entries hold.
type CacheFigures struct {
	Hits, Misses, Joins, Stored int64
	// AvoidedMicros is the live price, in micro-credits, of the records
	// served from the cache or from joined work: upstream spend avoided.
	AvoidedMicros int64
	Entries       int64
	Bytes         int64
}

var (
	cacheLookupsDesc = prometheus.NewDesc(Namespace+"_cache_lookups_total",
		"Freshness-cache lookups of an input (or a whole request) by result: hit (served from cache), join (served from another call's live work), miss (live work).",
		[]string{"result"}, nil)
	cacheStoredDesc = prometheus.NewDesc(Namespace+"_cache_entries_stored_total",
		"Entries written to the freshness cache.", nil, nil)
	cacheAvoidedDesc = prometheus.NewDesc(Namespace+"_cache_upstream_spend_avoided_credits_total",
		"Live price of the records served from the cache or joined work: the upstream spend they did not cause.", nil, nil)
	cacheEntriesDesc = prometheus.NewDesc(Namespace+"_cache_entries",
		"Live entries of the freshness cache (shared by the nodes of one store).", nil, nil)
	cacheBytesDesc = prometheus.NewDesc(Namespace+"_cache_bytes",
		"Bytes the freshness cache's entries hold (bounded by cache_max_bytes).", nil, nil)
)

// cacheCollector reports the published cache's figures.
type cacheCollector struct {
	mu  sync.Mutex
	src func() (CacheFigures, bool)
}

var caches = &cacheCollector{}

// PublishCache makes src what the cache metrics read (nil: none).
func PublishCache(src func() (CacheFigures, bool)) {
	caches.mu.Lock()
	caches.src = src
	caches.mu.Unlock()
}

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cacheLookupsDesc, cacheStoredDesc, cacheAvoidedDesc, cacheEntriesDesc, cacheBytesDesc} {
		ch <- d
	}
}

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	src := c.src
	c.mu.Unlock()
	if src == nil {
		return
	}
	f, ok := src()
	if !ok {
		return
	}
	for res, n := range map[string]int64{"hit": f.Hits, "miss": f.Misses, "join": f.Joins} {
		ch <- prometheus.MustNewConstMetric(cacheLookupsDesc, prometheus.CounterValue, float64(n), res)
	}
	ch <- prometheus.MustNewConstMetric(cacheStoredDesc, prometheus.CounterValue, float64(f.Stored))
	ch <- prometheus.MustNewConstMetric(cacheAvoidedDesc, prometheus.CounterValue, float64(f.AvoidedMicros)/1e6)
	ch <- prometheus.MustNewConstMetric(cacheEntriesDesc, prometheus.GaugeValue, float64(f.Entries))
	ch <- prometheus.MustNewConstMetric(cacheBytesDesc, prometheus.GaugeValue, float64(f.Bytes))
}
