package api

import (
	"testing"
)

// TestService pins the 404s of resolving a platform and service.
func TestService(t *testing.T) {
	a := newTestAPI(t, 0)
	tests := []struct {
		platform, name, code, message string
	}{
		{"pro_net", "profile.info", "", ""},
		{"mars_net", "x", "unknown_platform", ""},
		{"pro_net", "profile.infp", "unknown_service", `unknown service "profile.infp" for platform pro_net; did you mean "profile.info"?`},
	}
	for _, tt := range tests {
		svc, e := a.Service(tt.platform, tt.name)
		switch {
		case tt.code == "" && (e != nil || svc == nil || svc.Name != tt.name):
			t.Errorf("%s/%s: %v, %+v", tt.platform, tt.name, svc, e)
		case tt.code != "" && (e == nil || e.Code != tt.code || e.Status != 404):
			t.Errorf("%s/%s: %+v, want %s", tt.platform, tt.name, e, tt.code)
		case tt.message != "" && (len(e.Message) < len(tt.message) || e.Message[:len(tt.message)] != tt.message):
			t.Errorf("%s/%s: message %q, want it to start with %q", tt.platform, tt.name, e.Message, tt.message)
		}
	}
}
