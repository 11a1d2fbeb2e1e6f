package metrics

import (
	"time"
)

// Router is the router's observer (router.Config.Observer): it counts each
// offer attempt when it ends. The zero value is ready to use.
type Router struct{}

// AttemptEnded counts one attempt of offer (of source) with its outcome and
// duration; skipped is an offer the walk passed over (circuit open), which
// is counted but has no duration. Served records are counted at settle,
// after billing, not here.
func (Router) AttemptEnded(offer, source, outcome string, d time.Duration, skipped bool) {
	attempts.WithLabelValues(offer, source, outcome).Inc()
	if skipped {
		return
	}
	result := resultOK
	if outcome != "ok" {
		result = resultError
	}
	attemptDuration.WithLabelValues(offer, result).Observe(d.Seconds())
}

// RecordRefused counts one record of offer dropped by the record-schema
// check.
func (Router) RecordRefused(offer string) { RecordsRefused(offer, 1) }

// RegistryLoaded records one compilation of the declarations.
func RegistryLoaded(d time.Duration, err error) {
	registryLoads.WithLabelValues(result(err)).Inc()
	registryLoadDuration.Observe(d.Seconds())
}

func result(err error) string {
	if err != nil {
		return resultError
	}
	return resultOK
}
