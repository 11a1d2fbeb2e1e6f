package ratelimit

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// storeErrors counts store calls that failed or timed out. It is created
// once per process, so its value carries across reloads, and registered with
// every configuration's registry.
var storeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "sdr",
	Subsystem: "ip_rate_limit",
	Name:      "store_errors_total",
	Help:      "Rate-limit store calls that failed or timed out, by store type and fail mode.",
}, []string{"store", "fail"})

// refused counts the requests the handler refused: over the limit (429) or,
// failing closed, with the store unavailable (503). Created once per
// process like storeErrors.
var refused = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: "sdr",
	Subsystem: "ip_rate_limit",
	Name:      "refused_total",
	Help:      "Requests refused by the per-IP rate limit, by reason (limit: 429; store_unavailable: 503 when failing closed).",
}, []string{"reason"})

// Reasons of refused.
const (
	reasonLimit            = "limit"
	reasonStoreUnavailable = "store_unavailable"
)

// registerMetrics adds the package's collectors to reg. Several handlers in
// one configuration register the same collectors: that is not an error.
func registerMetrics(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{storeErrors, refused} {
		err := reg.Register(c)
		var already prometheus.AlreadyRegisteredError
		if err != nil && !errors.As(err, &already) {
			return err
		}
	}
	return nil
}
