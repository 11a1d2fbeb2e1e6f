package sdr

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// TestWebhookVerify checks the Standard Webhooks rules on a delivery
// signed here; the end-to-end test verifies the gateway's own.
func TestWebhookVerify(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	body := []byte(`{"type":"run.completed","timestamp":"2026-01-01T00:00:00Z","data":{"id":"ext_1"}}`)
	sign := func(id string, ts int64, b []byte) string {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "."))
		m.Write(b)
		return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	}
	now := time.Now().Unix()
	hdr := func(id string, ts int64, sig string) http.Header {
		return http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {strconv.FormatInt(ts, 10)}, "Webhook-Signature": {sig}}
	}
	wh, err := NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		h    http.Header
		body []byte
		ok   bool
	}{
		{"signed", hdr("msg_1", now, sign("msg_1", now, body)), body, true},
		{"second signature matches", hdr("msg_1", now, "v1,AAAA "+sign("msg_1", now, body)), body, true},
		{"tampered body", hdr("msg_1", now, sign("msg_1", now, body)), append([]byte(" "), body...), false},
		{"other id", hdr("msg_2", now, sign("msg_1", now, body)), body, false},
		{"too old", hdr("msg_1", now-600, sign("msg_1", now-600, body)), body, false},
		{"no signature", hdr("msg_1", now, ""), body, false},
	}
	for _, tc := range cases {
		ev, err := wh.Verify(tc.h, tc.body)
		if tc.ok && (err != nil || ev.Type != "run.completed" || ev.ID != "msg_1") {
			t.Errorf("%s: %v %+v", tc.name, err, ev)
		}
		if !tc.ok && !errors.Is(err, ErrWebhookSignature) {
			t.Errorf("%s: %v, want ErrWebhookSignature", tc.name, err)
		}
	}
}
