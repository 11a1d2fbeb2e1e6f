// Package metrics holds Social Data Router's Prometheus collectors and the
// narrow hooks that feed them: a router observer (AttemptEnded), a store
// decorator (Store: settle and reservation latency), a counting transport
// for upstream bytes, a scrape-time collector of breaker and source states,
// and plain functions for the registry load and the schema check.
//
// The collectors are created once per process, so counters carry across
// config reloads, and Register adds them to the registry Caddy hands each
// config (served by the admin endpoint's /metrics). Every label is bounded:
// offer, source and service ids come from the declarations, outcomes and
// error codes from the code, a mode is live or test. No account, key or
// input is ever a label.
package metrics

import (
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Namespace prefixes every metric of the module.
const Namespace = "sdr"

// Label values of the result label.
const (
	resultOK    = "ok"
	resultError = "error"
)

// attemptBuckets span a fast failure (a few ms) to the 120 s attempt
// deadline.
var attemptBuckets = []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// storeBuckets span an in-process badger write to a slow remote commit.
var storeBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}

var (
	attempts = counterVec("offer", "attempts_total",
		"Offer attempts by outcome (the router's outcome names; circuit_open is an offer the walk skipped).",
		"offer", "source", "outcome")
	attemptDuration = histogramVec("offer", "attempt_duration_seconds",
		"Duration of offer attempts (skipped offers excluded), by result ok or error.",
		attemptBuckets, "offer", "result")
	recordsServed = counterVec("offer", "records_served_total",
		"Records returned to callers (and charged), by the offer that served them.",
		"offer")
	creditsCharged = newCreditCounter("offer", "credits_charged_total",
		"Credits charged for served records, by the offer that served them.",
		"offer")
	recordsRefused = counterVec("offer", "records_refused_total",
		"Normalized records refused by the record-schema check (not served, not charged), by offer.",
		"offer")
	serviceCalls = counterVec("service", "calls_total",
		"Run calls (extract and search) by service, key mode (live or test), HTTP status and error code (none on success).",
		"service", "mode", "status", "code")
	settleDuration = histogramVec("store", "settle_duration_seconds",
		"Latency of the store's Settle transaction, by store type and result.",
		storeBuckets, "store", "result")
	reserveDuration = histogramVec("store", "reserve_duration_seconds",
		"Latency of the store's credit reservation before routing, by store type and result.",
		storeBuckets, "store", "result")
	openReservations = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "store", Name: "open_reservations",
		Help: "Credit reservations taken and not yet settled or released, by store type.",
	}, []string{"store"})
	upstreamBytes = counterVec("upstream", "bytes_read_total",
		"Response body bytes read from upstream sources, by source.",
		"source")
	registryLoads = counterVec("registry", "loads_total",
		"Compilations of the service declarations (start and every config reload), by result.",
		"result")
	registryLoadDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: "registry", Name: "load_duration_seconds",
		Help:    "Duration of compiling the service declarations.",
		Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	})
)

// counterVec is a counter of the module's namespace, labelled by labels.
func counterVec(subsystem, name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: subsystem, Name: name, Help: help,
	}, labels)
}

// histogramVec is a histogram of the module's namespace with buckets,
// labelled by labels.
func histogramVec(subsystem, name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: subsystem, Name: name, Help: help, Buckets: buckets,
	}, labels)
}

// collectors are every collector Register adds.
var collectors = []prometheus.Collector{
	attempts, attemptDuration, recordsServed, creditsCharged, recordsRefused, serviceCalls,
	settleDuration, reserveDuration, openReservations, upstreamBytes, registryLoads, registryLoadDuration,
	states, caches,
}

// Register adds the package's collectors to reg, the registry of one
// config (caddy.Context.GetMetricsRegistry). Registering them again on the
// same registry (two modules of one config) is not an error.
func Register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	for _, c := range collectors {
		err := reg.Register(c)
		var already prometheus.AlreadyRegisteredError
		if err != nil && !errors.As(err, &already) {
			return err
		}
	}
	return nil
}

// Offers starts the per-offer and per-source series at zero, so that a
// rate or an absent() alert sees an offer before its first record.
func Offers(offers map[string]string) {
	sources := map[string]bool{}
	for offer, source := range offers {
		recordsServed.WithLabelValues(offer)
		creditsCharged.add(offer, 0)
		recordsRefused.WithLabelValues(offer)
		sources[source] = true
	}
	for s := range sources {
		upstreamBytes.WithLabelValues(s)
	}
}

// RecordsRefused counts n records of an offer refused by the record-schema
// check; the check calls it where it drops them.
func RecordsRefused(offer string, n int) {
	if n > 0 {
		recordsRefused.WithLabelValues(offer).Add(float64(n))
	}
}

// Call counts one run call of a service by a key of mode (live or test:
// test calls reach no upstream and must not read as live traffic in an
// error-rate alert) answered with status and error code ("" on success).
func Call(service, mode string, status int, code string) {
	if code == "" {
		code = "none"
	}
	serviceCalls.WithLabelValues(service, mode, strconv.Itoa(status), code).Inc()
}
