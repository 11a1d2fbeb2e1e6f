package router

import (
	"time"

	"socialrouter/caddymodule/registry"
)

// Observer is told of every offer attempt's end, for metrics. It must be
// safe for concurrent use and quick: it runs on the call's path. skipped
// is an offer the walk passed over (outcome circuit_open, no duration).
// Plain arguments keep the metrics package free of an import of router.
type Observer interface {
	AttemptEnded(offer, source, outcome string, d time.Duration, skipped bool)
	// RecordRefused is one record of offer dropped by the record-schema
	// check: neither served nor billed.
	RecordRefused(offer string)
}

// observe reports one attempt (or skip) to the configured observer.
func (r *Router) observe(o *registry.Offer, outcome string, durationMS int64, skipped bool) {
	if r.cfg.Observer == nil {
		return
	}
	r.cfg.Observer.AttemptEnded(o.ID, o.Source.ID, outcome, time.Duration(durationMS)*time.Millisecond, skipped)
}
