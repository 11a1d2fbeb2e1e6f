package caddymodule

import (
	"crypto/tls"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// TestHSTSOption: the hsts option's forms, the header each sends, and the
// forms refused.
func TestHSTSOption(t *testing.T) {
	tests := []struct {
		name, input, want, err string
	}{
		{"absent: a year", "social_router {\n}", "max-age=31536000", ""},
		{"off", "social_router {\n hsts off\n}", "", ""},
		{"max age", "social_router {\n hsts 1h\n}", "max-age=3600", ""},
		{"subdomains", "social_router {\n hsts include_subdomains\n}", "max-age=31536000; includeSubDomains", ""},
		{"preload", "social_router {\n hsts 400d include_subdomains preload\n}", "max-age=34560000; includeSubDomains; preload", ""},
		{"no argument", "social_router {\n hsts\n}", "", "wrong argument count"},
		{"off and more", "social_router {\n hsts off preload\n}", "", "takes no other argument"},
		{"age not first", "social_router {\n hsts include_subdomains 1h\n}", "", "is not off"},
		{"zero age", "social_router {\n hsts 0s\n}", "", "is not off"},
		{"unknown word", "social_router {\n hsts always\n}", "", "is not off"},
		{"preload without subdomains", "social_router {\n hsts preload\n}", "", "preload needs include_subdomains"},
		{"preload too short", "social_router {\n hsts 1h include_subdomains preload\n}", "", "preload needs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := new(App)
			err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			if err == nil {
				err = a.HSTS.validate()
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := a.HSTS.value(); got != tt.want {
				t.Errorf("header %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSetHSTS: only a response to a request that came over TLS gets the
// header.
func TestSetHSTS(t *testing.T) {
	for _, tt := range []struct {
		name  string
		tls   bool
		value string
		want  string
	}{
		{"tls", true, "max-age=60", "max-age=60"},
		{"plain http", false, "max-age=60", ""},
		{"tls, off", true, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/services", nil)
			if tt.tls {
				r.TLS = &tls.ConnectionState{}
			}
			w := httptest.NewRecorder()
			setHSTS(w, r, tt.value)
			if got := w.Header().Get("Strict-Transport-Security"); got != tt.want {
				t.Errorf("header %q, want %q", got, tt.want)
			}
		})
	}
}
