package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Webhook attempts by outcome: succeeded (2xx), retry (failed, another
// attempt scheduled), failed (failed for good: schedule spent, or the
// endpoint disabled), gone (the receiver answered 410 and the endpoint was
// disabled). A rising retry or failed rate means receivers are down.
var (
	webhookAttempts = counterVec("webhook", "attempts_total",
		"Webhook delivery attempts by outcome: succeeded, retry, failed, gone.", "outcome")
	webhookAttemptDuration = histogramVec("webhook", "attempt_duration_seconds",
		"Duration of one webhook delivery attempt, connection to answer.",
		[]float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 20}, "outcome")
)

func init() {
	collectors = append(collectors, webhookAttempts, webhookAttemptDuration)
	for _, o := range []string{"succeeded", "retry", "failed", "gone"} {
		// Both exposed from the start, so dashboards and the documented
		// list see them before the first delivery.
		webhookAttempts.WithLabelValues(o)
		webhookAttemptDuration.WithLabelValues(o)
	}
}

// WebhookAttempt counts one attempt of a webhook delivery with its outcome
// and duration (the webhooks worker's observer).
func WebhookAttempt(outcome string, d time.Duration) {
	webhookAttempts.WithLabelValues(outcome).Inc()
	webhookAttemptDuration.WithLabelValues(outcome).Observe(d.Seconds())
}

var _ prometheus.Collector = webhookAttempts
