package metrics

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"socialrouter/caddymodule/store"
)

// Whether each open store can write, read at scrape time (a store that
// recovers by itself must show it without a call to refresh a gauge).
var (
	writableDesc = prometheus.NewDesc(Namespace+"_store_writable",
		"1 while the store can write; 0 while calls are refused with 503 store_unavailable before any upstream work (see sdr_store_write_blocked), by store type.",
		[]string{"store"}, nil)
	blockedDesc = prometheus.NewDesc(Namespace+"_store_write_blocked",
		"1 for the reason the store cannot write now, 0 for the others: disk_full (free space below the reserve, or the database's disk is full), write_failed (a write failed and none has succeeded since).",
		[]string{"store", "reason"}, nil)
)

// writeCollector reports the writability of every instrumented store that
// can tell (store.WriteChecker), by store type.
type writeCollector struct {
	mu     sync.Mutex
	stores map[string]store.WriteChecker
}

var writables = &writeCollector{stores: map[string]store.WriteChecker{}}

func init() { collectors = append(collectors, writables) }

func (c *writeCollector) add(kind string, s store.WriteChecker) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stores[kind] = s
}

func (c *writeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- writableDesc
	ch <- blockedDesc
}

func (c *writeCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	stores := make(map[string]store.WriteChecker, len(c.stores))
	for k, s := range c.stores {
		stores[k] = s
	}
	c.mu.Unlock()
	for kind, s := range stores {
		reason := Unwritable(s.Writable())
		ok := 0.0
		if reason == "" {
			ok = 1
		}
		ch <- prometheus.MustNewConstMetric(writableDesc, prometheus.GaugeValue, ok, kind)
		for _, r := range store.Reasons {
			v := 0.0
			if r == reason {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(blockedDesc, prometheus.GaugeValue, v, kind, r)
		}
	}
}

// Unwritable is the reason of a Writable error ("" for nil).
func Unwritable(err error) string {
	if err == nil {
		return ""
	}
	var ue *store.UnwritableError
	if errors.As(err, &ue) {
		return ue.Reason
	}
	return store.ReasonWriteFailed
}
