package webhooks

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"socialrouter/caddymodule/store"
	"socialrouter/internal/jsonscan"
)

// checkEvents returns the subscription in the order of Events.
func checkEvents(events []string) ([]string, error) {
	if len(events) == 0 {
		return nil, fmt.Errorf("%w: name at least one of %v", ErrInvalidEvents, Events)
	}
	out := make([]string, 0, len(events))
	for _, ev := range Events {
		if n := countOf(events, ev); n > 1 {
			return nil, fmt.Errorf("%w: %s appears twice", ErrInvalidEvents, ev)
		} else if n == 1 {
			out = append(out, ev)
		}
	}
	if len(out) != len(events) {
		for _, ev := range events {
			if !slices.Contains(Events, ev) {
				return nil, fmt.Errorf("%w: %q is not one of %v", ErrInvalidEvents, ev, Events)
			}
		}
	}
	return out, nil
}

func countOf(xs []string, x string) (n int) {
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

// Create registers an endpoint for an account and returns it with its
// secret: the only time the secret is shown.
func (s *Service) Create(ctx context.Context, accountID, rawURL string, events []string) (store.WebhookEndpoint, error) {
	evs, err := checkEvents(events)
	if err != nil {
		return store.WebhookEndpoint{}, err
	}
	u, err := s.guard.checkURL(ctx, rawURL)
	if err != nil {
		return store.WebhookEndpoint{}, err
	}
	existing, err := s.store.ListWebhooks(ctx, accountID)
	if err != nil {
		return store.WebhookEndpoint{}, err
	}
	if len(existing) >= MaxEndpoints {
		return store.WebhookEndpoint{}, fmt.Errorf("%w: an account has at most %d", ErrTooManyEndpoints, MaxEndpoints)
	}
	secret, err := NewSecret()
	if err != nil {
		return store.WebhookEndpoint{}, err
	}
	e := store.WebhookEndpoint{ID: "wh_" + rand.Text(), AccountID: accountID, URL: u.String(), Events: evs,
		Secret: secret, CreatedAt: s.now().UTC()}
	if err := s.store.CreateWebhook(ctx, e); err != nil {
		return store.WebhookEndpoint{}, err
	}
	return e, nil
}

// Get returns an endpoint.
func (s *Service) Get(ctx context.Context, id string) (store.WebhookEndpoint, error) {
	return s.store.GetWebhook(ctx, id)
}

// List returns an account's endpoints in creation order.
func (s *Service) List(ctx context.Context, accountID string) ([]store.WebhookEndpoint, error) {
	return s.store.ListWebhooks(ctx, accountID)
}

// Delete removes an endpoint and its delivery log; pending deliveries are
// not sent.
func (s *Service) Delete(ctx context.Context, id string) error {
	return s.store.DeleteWebhook(ctx, id)
}

// Rotate gives an endpoint a new secret and returns it (shown this once);
// the old secret also signs deliveries for RotationGrace.
func (s *Service) Rotate(ctx context.Context, id string) (store.WebhookEndpoint, error) {
	secret, err := NewSecret()
	if err != nil {
		return store.WebhookEndpoint{}, err
	}
	return s.store.RotateWebhookSecret(ctx, id, secret, s.now().Add(RotationGrace))
}

// Deliveries returns an account's delivery log, newest first (one
// endpoint's when endpointID is not "").
func (s *Service) Deliveries(ctx context.Context, accountID, endpointID string, limit int) ([]store.WebhookDelivery, error) {
	return s.store.ListDeliveries(ctx, accountID, endpointID, limit)
}

// Delivery returns one delivery.
func (s *Service) Delivery(ctx context.Context, id string) (store.WebhookDelivery, error) {
	return s.store.GetDelivery(ctx, id)
}

// payload is the body of a delivery: the Standard Webhooks envelope.
type payload struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// newDelivery builds a pending delivery due now.
func (s *Service) newDelivery(e store.WebhookEndpoint, event string, body []byte, now time.Time) store.WebhookDelivery {
	return store.WebhookDelivery{ID: "msg_" + rand.Text(), EndpointID: e.ID, AccountID: e.AccountID, Event: event,
		Payload: body, Status: store.DeliveryPending, NextAt: now, CreatedAt: now}
}

// eventID is the webhook-id of a run's event at one endpoint: derived
// from the three, so notifying the same event of the same run again (a
// resumed run) finds the delivery already queued instead of sending it
// twice; and, as Standard Webhooks asks, one event keeps one id.
func eventID(endpointID, event, runID string) string {
	h := sha256.Sum256([]byte(endpointID + "\x00" + event + "\x00" + runID))
	return "msg_" + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h[:16])
}

// MaxEventData bounds the run a delivery carries: a larger run (an
// asynchronous run of thousands of records) is sent without its records,
// with "data_omitted": true, and the receiver pages them from the API.
// Standard Webhooks recommends small payloads; each endpoint's delivery
// stores its own copy.
const MaxEventData = 256 << 10

// thinRun is the run document without its records.
func thinRun(run []byte) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(run, &doc); err != nil {
		return nil, fmt.Errorf("the run is over %d bytes and not a JSON object", MaxEventData)
	}
	delete(doc, "data")
	doc["data_omitted"] = json.RawMessage("true")
	return json.Marshal(doc)
}

// envelope is the Standard Webhooks body of data. encoding/json checks
// data while it copies it in (a RawMessage is compacted, HTML escaped):
// no check of its own before.
func envelope(event string, now time.Time, data []byte) ([]byte, error) {
	b, err := json.Marshal(payload{Type: event, Timestamp: now, Data: data})
	if err != nil {
		return nil, fmt.Errorf("the %s data is not JSON", event)
	}
	return b, nil
}

// Notify queues the event for every enabled endpoint of the account
// subscribed to it, one durable delivery each, in one store write; the
// worker sends them. run is the run's JSON, the payload's data. It is
// what the asynchronous runs call when a run ends; an account without
// endpoints costs one read.
func (s *Service) Notify(ctx context.Context, accountID, event string, run []byte) error {
	if !slices.Contains(Events, event) {
		return fmt.Errorf("%w: %q is not one of %v", ErrInvalidEvents, event, Events)
	}
	eps, err := s.store.ListWebhooks(ctx, accountID)
	if err != nil {
		return fmt.Errorf("notifying %s: %w", event, err)
	}
	now := s.now().UTC()
	var ds []store.WebhookDelivery
	var body []byte
	var runID string
	for _, e := range eps {
		if e.DisabledAt != nil || !slices.Contains(e.Events, event) {
			continue
		}
		if body == nil {
			if body, runID, err = runEnvelope(event, now, run); err != nil {
				return fmt.Errorf("notifying %s: %w", event, err)
			}
		}
		d := s.newDelivery(e, event, body, now)
		if runID != "" {
			d.ID = eventID(e.ID, event, runID)
		}
		ds = append(ds, d)
	}
	if len(ds) == 0 {
		return nil
	}
	err = s.store.EnqueueDeliveries(ctx, ds)
	if errors.Is(err, store.ErrExists) {
		// Notified before: queue what is missing (an endpoint added since).
		err = nil
		for _, d := range ds {
			if e := s.store.EnqueueDeliveries(ctx, []store.WebhookDelivery{d}); e != nil && !errors.Is(e, store.ErrExists) {
				err = e
			}
		}
	}
	if err != nil {
		return fmt.Errorf("notifying %s: %w", event, err)
	}
	s.poke()
	return nil
}

// runEnvelope is the body of a run event, the run thinned past
// MaxEventData, and the run's id ("" when it has none).
func runEnvelope(event string, now time.Time, run []byte) (body []byte, runID string, err error) {
	// The run's bytes as the store keeps them go into the envelope: checked
	// once (jsonscan's pass, as json.Valid) and its id read off the top
	// level, where a decode into a struct read every record again.
	if !jsonscan.ValidSyntax(run) {
		return nil, "", fmt.Errorf("the %s data is not JSON", event)
	}
	if v, ok := jsonscan.Lookup(jsonscan.Bytes(run), "id"); ok && strings.HasPrefix(v, `"`) {
		runID = jsonscan.Text(v) // a view of run while unescaped: used only to name the deliveries
	}
	if len(run) > MaxEventData {
		if run, err = thinRun(run); err != nil {
			return nil, "", err
		}
	}
	body, err = envelope(event, now, run)
	return body, runID, err
}

// ErrDisabled refuses a test event to a disabled endpoint.
var ErrDisabled = errors.New("the endpoint is disabled")

// SendTest queues a webhook.test event for one endpoint, whatever its
// subscription: how a customer checks a receiver without a run.
func (s *Service) SendTest(ctx context.Context, endpointID string) (store.WebhookDelivery, error) {
	e, err := s.store.GetWebhook(ctx, endpointID)
	if err != nil {
		return store.WebhookDelivery{}, err
	}
	if e.DisabledAt != nil {
		return store.WebhookDelivery{}, fmt.Errorf("%w (%s)", ErrDisabled, e.DisabledReason)
	}
	now := s.now().UTC()
	data, _ := json.Marshal(map[string]string{"endpoint_id": e.ID, "message": "a test event from Social Data Router"})
	body, err := envelope(EventTest, now, data)
	if err != nil {
		return store.WebhookDelivery{}, err
	}
	d := s.newDelivery(e, EventTest, body, now)
	if err := s.store.EnqueueDeliveries(ctx, []store.WebhookDelivery{d}); err != nil {
		return store.WebhookDelivery{}, err
	}
	s.poke()
	return d, nil
}

// Resend makes one more attempt of a delivery now, under its webhook-id:
// a failed delivery gets one attempt, a pending one is attempted now
// rather than at its next retry.
func (s *Service) Resend(ctx context.Context, deliveryID string) (store.WebhookDelivery, error) {
	d, err := s.store.ResendDelivery(ctx, deliveryID, s.now())
	if err == nil {
		s.poke()
	}
	return d, err
}
