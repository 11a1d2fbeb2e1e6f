package caddymodule

import (
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"socialrouter/caddymodule/metrics"
	"socialrouter/caddymodule/webhooks"
)

// WebhooksConfig are the app's webhook settings, inlined in its JSON.
type WebhooksConfig struct {
	// WebhooksAllowPrivate accepts webhook endpoints on loopback, private,
	// link-local and other non-public addresses, and over plain http.
	// Default false: endpoints must be https on public addresses, checked
	// at registration and again at every connection.
	WebhooksAllowPrivate bool `json:"webhooks_allow_private,omitempty"`
	// WebhooksRetrySchedule is the wait before each retry of a failed
	// delivery. Default: 5s 5m 30m 2h 5h 10h 10h (about 27.5 hours, 8
	// attempts). Shorter schedules are for tests.
	WebhooksRetrySchedule []caddy.Duration `json:"webhooks_retry_schedule,omitempty"`
}

// provisionWebhooks builds the webhook service over the app's store. Its
// worker runs from Start to Stop, not from Provision: `caddy validate`
// and `caddy adapt` provision too, and must not send anything.
func (a *App) provisionWebhooks() {
	var schedule []time.Duration
	for _, d := range a.WebhooksRetrySchedule {
		schedule = append(schedule, time.Duration(d))
	}
	a.webhooks = webhooks.New(webhooks.Config{
		Store:        a.store,
		AllowPrivate: a.WebhooksAllowPrivate,
		Schedule:     schedule,
		Observe:      metrics.WebhookAttempt,
		Logger:       a.logger.Named("webhooks"),
	})
	if schedule != nil {
		var total time.Duration
		for _, d := range schedule {
			total += d
		}
		if total < 24*time.Hour {
			a.logger.Warn("webhooks_retry_schedule gives up in less than 24 hours; keep it for tests", zap.Duration("total", total))
		}
	}
	if a.WebhooksAllowPrivate {
		a.logger.Warn("webhooks_allow_private: webhook endpoints may reach this network's private addresses")
	}
}

// unmarshalWebhookOption reads webhooks_allow_private or
// webhooks_retry_schedule <duration>... (the dispenser is on its name).
func (a *App) unmarshalWebhookOption(d *caddyfile.Dispenser) error {
	switch d.Val() {
	case "webhooks_allow_private":
		if d.NextArg() {
			return d.ArgErr()
		}
		a.WebhooksAllowPrivate = true
	case "webhooks_retry_schedule":
		args := d.RemainingArgs()
		if len(args) == 0 {
			return d.ArgErr()
		}
		a.WebhooksRetrySchedule = nil
		for _, s := range args {
			dur, err := caddy.ParseDuration(s)
			if err != nil || dur <= 0 {
				return d.Errf("webhooks_retry_schedule: each wait must be a positive duration, got %q", s)
			}
			a.WebhooksRetrySchedule = append(a.WebhooksRetrySchedule, caddy.Duration(dur))
		}
	default:
		return fmt.Errorf("not a webhook option: %s", d.Val())
	}
	return nil
}
