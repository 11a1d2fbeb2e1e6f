package api

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"
)

// TestErrorEnvelope: the envelope carries code, message, type and the
// extra fields; Retry-After is whole seconds rounded up; a 401 names the
// bearer scheme.
func TestErrorEnvelope(t *testing.T) {
	tests := []struct {
		name         string
		err          *Error
		retryAfter   string
		authenticate string
	}{
		{"plain", newError(400, "invalid_json", typeValidation, "m"), "", ""},
		{"retry rounded up", func() *Error {
			e := newError(429, "too_many_concurrent_runs", typeRateLimit, "m").with("limit", 3)
			e.RetryAfter = 1500 * time.Millisecond
			return e
		}(), "2", ""},
		{"unauthorized", newError(401, "missing_api_key", typeAuthentication, "m"), "", `Bearer realm="social_router"`},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		tt.err.write(rec)
		var got struct {
			Error map[string]any `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != tt.err.Status {
			t.Fatalf("%s: %d %s", tt.name, rec.Code, rec.Body)
		}
		if got.Error["code"] != tt.err.Code || got.Error["type"] != tt.err.Type || got.Error["message"] != "m" {
			t.Errorf("%s: envelope %v", tt.name, got.Error)
		}
		for k := range tt.err.Extra {
			if _, ok := got.Error[k]; !ok {
				t.Errorf("%s: extra %q missing", tt.name, k)
			}
		}
		if h := rec.Header().Get("Retry-After"); h != tt.retryAfter {
			t.Errorf("%s: Retry-After %q, want %q", tt.name, h, tt.retryAfter)
		}
		if h := rec.Header().Get("WWW-Authenticate"); h != tt.authenticate {
			t.Errorf("%s: WWW-Authenticate %q, want %q", tt.name, h, tt.authenticate)
		}
	}
}
