package metrics

import (
	"testing"
	"time"
)

func TestWebhookAttempt(t *testing.T) {
	reg := registry(t)
	WebhookAttempt("succeeded", 20*time.Millisecond)
	WebhookAttempt("retry", time.Second)
	WebhookAttempt("retry", time.Second)
	if v, ok := value(t, reg, "sdr_webhook_attempts_total", map[string]string{"outcome": "retry"}); !ok || v != 2 {
		t.Errorf("retries %v (exists %v), want 2", v, ok)
	}
	if v, ok := value(t, reg, "sdr_webhook_attempts_total", map[string]string{"outcome": "failed"}); !ok || v != 0 {
		t.Errorf("failed %v (exists %v), want a zero series", v, ok)
	}
}
