package webhooks

import (
	"time"

	"socialrouter/caddymodule/store"
)

// DeliveryView is a delivery as the admin API shows it: next_at only
// while a retry is coming, and no payload (the log lists many).
type DeliveryView struct {
	ID             string     `json:"id"`
	EndpointID     string     `json:"endpoint_id"`
	Event          string     `json:"event"`
	Status         string     `json:"status"`
	Attempts       int        `json:"attempts"`
	NextAt         *time.Time `json:"next_at,omitempty"`
	LastAttemptAt  *time.Time `json:"last_attempt_at,omitempty"`
	LastStatusCode int        `json:"last_status_code,omitempty"`
	LastError      string     `json:"last_error,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
}

// View returns the delivery's view.
func View(d store.WebhookDelivery) DeliveryView {
	v := DeliveryView{ID: d.ID, EndpointID: d.EndpointID, Event: d.Event, Status: d.Status, Attempts: d.Attempts,
		LastAttemptAt: d.LastAttemptAt, LastStatusCode: d.LastStatusCode, LastError: d.LastError, CreatedAt: d.CreatedAt}
	if d.Status == store.DeliveryPending {
		next := d.NextAt
		v.NextAt = &next
	}
	return v
}

// Views returns the views of a delivery log, never nil.
func Views(ds []store.WebhookDelivery) []DeliveryView {
	out := make([]DeliveryView, 0, len(ds))
	for _, d := range ds {
		out = append(out, View(d))
	}
	return out
}
