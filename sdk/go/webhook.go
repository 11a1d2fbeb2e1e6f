package sdr

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// WebhookTolerance is how far a delivery's webhook-timestamp may be from
// the receiver's clock (the Standard Webhooks reference libraries' 5 min).
const WebhookTolerance = 5 * time.Minute

// ErrWebhookSignature is a delivery whose signature, timestamp or headers do
// not verify: refuse it (answer 400 or 401).
var ErrWebhookSignature = errors.New("sdr: webhook delivery does not verify")

// WebhookEvent is a verified delivery: type run.completed, run.failed,
// run.cancelled (Data is the run) or webhook.test.
type WebhookEvent struct {
	// ID is the delivery's webhook-id, the same on each retry: process each once.
	ID        string          `json:"-"`
	Type      string          `json:"type"`
	Timestamp string          `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// Run decodes the event's data as a run (the run.* events).
func (e *WebhookEvent) Run() (*Run[json.RawMessage], error) {
	var r Run[json.RawMessage]
	if err := json.Unmarshal(e.Data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Webhook verifies the deliveries of one endpoint, signed as Standard
// Webhooks specifies, with the endpoint's whsec_… secret.
type Webhook struct {
	key []byte
	now func() time.Time
}

// NewWebhook returns the verifier of an endpoint's secret (whsec_…).
func NewWebhook(secret string) (*Webhook, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("sdr: webhook secret is not whsec_<base64>: %v", err)
	}
	return &Webhook{key: key, now: time.Now}, nil
}

// Verify checks a delivery's headers and raw body (read the body as sent,
// before any JSON decoding) and returns its event; any mismatch is
// ErrWebhookSignature.
func (w *Webhook) Verify(h http.Header, body []byte) (*WebhookEvent, error) {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return nil, fmt.Errorf("%w: missing webhook-id, webhook-timestamp or webhook-signature", ErrWebhookSignature)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: webhook-timestamp %q", ErrWebhookSignature, ts)
	}
	if d := w.now().Sub(time.Unix(sec, 0)); math.Abs(float64(d)) > float64(WebhookTolerance) {
		return nil, fmt.Errorf("%w: webhook-timestamp %s is %s off", ErrWebhookSignature, ts, d.Round(time.Second))
	}
	mac := hmac.New(sha256.New, w.key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, s := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			var ev WebhookEvent
			if err := json.Unmarshal(body, &ev); err != nil {
				return nil, fmt.Errorf("sdr: decoding a verified delivery: %w", err)
			}
			ev.ID = id
			return &ev, nil
		}
	}
	return nil, fmt.Errorf("%w: no v1 signature matches", ErrWebhookSignature)
}
