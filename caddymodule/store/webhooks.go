package store

import (
	"context"
	"errors"
	"time"
)

// Statuses of a webhook delivery: pending until an attempt succeeds or
// the retry schedule is spent.
const (
	DeliveryPending   = "pending"
	DeliverySucceeded = "succeeded"
	DeliveryFailed    = "failed"
)

// ErrStaleClaim is returned by FinishDelivery when the attempt it reports
// is no longer the delivery's next one: its lease ran out and another
// worker took the delivery over (or finished it) meanwhile.
var ErrStaleClaim = errors.New("the delivery was claimed again or finished meanwhile")

// WebhookEndpoint is a URL an account receives signed event notifications
// at. The signing secrets are stored as they are (an HMAC needs the key
// itself), so the store is as sensitive as the secrets it holds.
type WebhookEndpoint struct {
	ID        string   `json:"id"`
	AccountID string   `json:"account_id"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	// Secret is the current signing secret (whsec_…).
	Secret string `json:"-"`
	// PreviousSecret is the secret before the last rotation: deliveries are
	// signed with it too until PreviousUntil, so receivers can switch over
	// without dropping a delivery.
	PreviousSecret string    `json:"-"`
	PreviousUntil  time.Time `json:"-"`
	CreatedAt      time.Time `json:"created_at"`
	// DisabledAt is set when the receiver answered 410 Gone: nothing more
	// is sent to it.
	DisabledAt     *time.Time `json:"disabled_at,omitempty"`
	DisabledReason string     `json:"disabled_reason,omitempty"`
}

// WebhookDelivery is one event for one endpoint, with its attempts so
// far. Its ID is the webhook-id header of every attempt, and Payload the
// exact body each attempt sends.
type WebhookDelivery struct {
	ID         string    `json:"id"`
	EndpointID string    `json:"endpoint_id"`
	AccountID  string    `json:"account_id"`
	Event      string    `json:"event"`
	Payload    []byte    `json:"-"`
	Status     string    `json:"status"`
	Attempts   int       `json:"attempts"`
	NextAt     time.Time `json:"next_at"` // next attempt while pending
	// LeasedUntil is set while a worker holds the delivery (ClaimDeliveries):
	// no other worker claims it before then.
	LeasedUntil    time.Time  `json:"-"`
	LastAttemptAt  *time.Time `json:"last_attempt_at,omitempty"`
	LastStatusCode int        `json:"last_status_code,omitempty"` // 0: no HTTP answer
	LastError      string     `json:"last_error,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
}

// DeliveryOutcome is what one attempt of a claimed delivery came to.
type DeliveryOutcome struct {
	ID         string
	Attempt    int // the attempt made: the delivery's Attempts when claimed, plus one
	At         time.Time
	StatusCode int    // 0: no HTTP answer
	Error      string // why the attempt failed, "" on success
	Status     string // DeliveryPending (retry at NextAt), DeliverySucceeded or DeliveryFailed
	NextAt     time.Time
}

// Webhooks is the persistence of webhook endpoints and of their delivery
// queue. On PostgreSQL the queue is shared by every node: a claim takes
// rows with SKIP LOCKED and leases them, so two nodes never make the same
// attempt.
type Webhooks interface {
	// CreateWebhook stores an endpoint (ErrNotFound if its account is
	// absent, ErrExists if the id is taken).
	CreateWebhook(ctx context.Context, e WebhookEndpoint) error
	// GetWebhook returns an endpoint; ErrNotFound if absent.
	GetWebhook(ctx context.Context, id string) (WebhookEndpoint, error)
	// ListWebhooks returns an account's endpoints in creation order.
	ListWebhooks(ctx context.Context, accountID string) ([]WebhookEndpoint, error)
	// RotateWebhookSecret makes secret the endpoint's current secret and
	// the current one its previous secret until previousUntil, in one
	// atomic step; it returns the endpoint after.
	RotateWebhookSecret(ctx context.Context, id, secret string, previousUntil time.Time) (WebhookEndpoint, error)
	// DisableWebhook marks an endpoint disabled (the first time stays).
	DisableWebhook(ctx context.Context, id string, at time.Time, reason string) error
	// DeleteWebhook removes an endpoint and its deliveries; ErrNotFound
	// if absent.
	DeleteWebhook(ctx context.Context, id string) error

	// EnqueueDeliveries stores new pending deliveries, all or none
	// (ErrExists if an id is taken).
	EnqueueDeliveries(ctx context.Context, ds []WebhookDelivery) error
	// ClaimDeliveries leases up to limit pending deliveries due at now
	// (NextAt and LeasedUntil not after now), the earliest due first, until
	// now+lease, and returns them. A delivery leased by one call is not
	// returned by another until its lease ends.
	ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]WebhookDelivery, error)
	// FinishDelivery records an attempt of a claimed delivery and ends its
	// lease; ErrStaleClaim unless the delivery is pending with
	// Attempts = o.Attempt−1.
	FinishDelivery(ctx context.Context, o DeliveryOutcome) error
	// GetDelivery returns a delivery; ErrNotFound if absent.
	GetDelivery(ctx context.Context, id string) (WebhookDelivery, error)
	// ListDeliveries returns an account's deliveries, newest first, of
	// one endpoint when endpointID is not "", at most limit.
	ListDeliveries(ctx context.Context, accountID, endpointID string, limit int) ([]WebhookDelivery, error)
	// ResendDelivery makes a delivery pending and due at now, keeping its
	// id, payload and attempts (a lease in force still holds).
	ResendDelivery(ctx context.Context, id string, now time.Time) (WebhookDelivery, error)
	// PruneDeliveries deletes up to limit finished (succeeded or failed)
	// deliveries whose last attempt was before before, and returns how
	// many it deleted: the delivery log is kept for a while, not forever.
	PruneDeliveries(ctx context.Context, before time.Time, limit int) (int, error)
}
