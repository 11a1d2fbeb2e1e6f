package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Breaker states, the values of sdr_offer_breaker_state.
const (
	BreakerClosed   = 0
	BreakerHalfOpen = 1
	BreakerOpen     = 2
)

// OfferState is the circuit-breaker state of one live offer.
type OfferState struct {
	Offer, Source string
	State         int // BreakerClosed, BreakerHalfOpen or BreakerOpen
}

// SourceState is the status a source shows in /v1/providers.
type SourceState struct {
	Source, Status string
}

// StatusSource is what the state collector reads at scrape time: the
// running app. Breaker states change with the clock (an open breaker turns
// half-open when its cooldown ends), so they are read, not pushed.
type StatusSource interface {
	OfferStates() []OfferState
	SourceStatuses() []SourceState
}

// sourceStatuses are the statuses sdr_source_status always reports (0 or
// 1), so an alert on status="down" has a series before the first outage.
var sourceStatuses = []string{"active", "degraded", "down", "coming_soon"}

var (
	breakerDesc = prometheus.NewDesc(Namespace+"_offer_breaker_state",
		"Circuit-breaker state of each live offer: 0 closed, 1 half-open (one trial call allowed), 2 open.",
		[]string{"offer", "source"}, nil)
	sourceDesc = prometheus.NewDesc(Namespace+"_source_status",
		"Status of each source as /v1/providers shows it: 1 for the current status, 0 for the others.",
		[]string{"source", "status"}, nil)
)

// stateCollector reports the published app's breaker and source states.
type stateCollector struct {
	mu  sync.Mutex
	src StatusSource
}

var states = &stateCollector{}

// PublishStatus makes s the app the state collector reads (App.Start).
func PublishStatus(s StatusSource) {
	states.mu.Lock()
	defer states.mu.Unlock()
	states.src = s
}

// WithdrawStatus stops reading s, unless a newer app was published since
// (App.Stop of an old config runs after Start of the new one).
func WithdrawStatus(s StatusSource) {
	states.mu.Lock()
	defer states.mu.Unlock()
	if states.src == s {
		states.src = nil
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- breakerDesc
	ch <- sourceDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	src := c.src
	c.mu.Unlock()
	if src == nil {
		return
	}
	for _, o := range src.OfferStates() {
		ch <- prometheus.MustNewConstMetric(breakerDesc, prometheus.GaugeValue, float64(o.State), o.Offer, o.Source)
	}
	for _, s := range src.SourceStatuses() {
		known := false
		for _, st := range sourceStatuses {
			v := 0.0
			if st == s.Status {
				v, known = 1, true
			}
			ch <- prometheus.MustNewConstMetric(sourceDesc, prometheus.GaugeValue, v, s.Source, st)
		}
		if !known {
			ch <- prometheus.MustNewConstMetric(sourceDesc, prometheus.GaugeValue, 1, s.Source, s.Status)
		}
	}
}
