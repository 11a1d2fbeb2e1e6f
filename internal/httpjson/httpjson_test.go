package httpjson

import (
	"math"
	"net/http/httptest"
	"strconv"
	"testing"
)

func TestWrite(t *testing.T) {
	tests := []struct {
		name   string
		v      any
		status int
		body   string
	}{
		{"no HTML escaping", map[string]string{"url": "https://e.com/?a=1&b=<c>"}, 201, `{"url":"https://e.com/?a=1&b=<c>"}`},
		{"unencodable", math.Inf(1), 500, `{"error":{"code":"internal_error","type":"internal","message":"rendering the response failed"}}`},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		Write(rec, 201, tt.v)
		if rec.Code != tt.status || rec.Body.String() != tt.body {
			t.Errorf("%s: %d %s, want %d %s", tt.name, rec.Code, rec.Body, tt.status, tt.body)
		}
		if got := rec.Header().Get("Content-Length"); got != strconv.Itoa(len(tt.body)) || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: headers %v", tt.name, rec.Header())
		}
	}
}
