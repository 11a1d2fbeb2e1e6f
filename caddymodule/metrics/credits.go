package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"socialrouter/caddymodule/credits"
)

// creditCounter is a counter of credits by one label, kept in integer
// micro-credits and exposed in credits, so its value is the exact sum of
// the charges (a float counter's sum of prices drifts: 0.0069 + 0.0069
// reads 0.013800000000000003).
type creditCounter struct {
	desc *prometheus.Desc
	mu   sync.Mutex
	sums map[string]credits.Micros
}

// newCreditCounter is a creditCounter of the module's namespace.
func newCreditCounter(subsystem, name, help, label string) *creditCounter {
	return &creditCounter{
		desc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, subsystem, name), help, []string{label}, nil),
		sums: map[string]credits.Micros{},
	}
}

// add counts m more credits under the label value v (a negative m is
// ignored: a counter never goes down).
func (c *creditCounter) add(v string, m credits.Micros) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sums[v] += max(m, 0)
}

// Describe implements prometheus.Collector.
func (c *creditCounter) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *creditCounter) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for v, m := range c.sums {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(m)/credits.PerCredit, v)
	}
}

// Interface guard
var _ prometheus.Collector = (*creditCounter)(nil)
