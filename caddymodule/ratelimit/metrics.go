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

// registerMetrics adds the package's collectors to reg. Several handlers in
// one configuration register the same collectors: that is not an error.
func registerMetrics(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	err := reg.Register(storeErrors)
	var already prometheus.AlreadyRegisteredError
	if err != nil && !errors.As(err, &already) {
		return err
	}
	return nil
}
