package tests

import (
	"net/http"
	"testing"
)

// TestHSTSConfigured: the hsts option of the social_router block sets the
// header of every TLS answer, the API's and the dashboard's alike, and a
// plain-HTTP site gets none.
func TestHSTSConfigured(t *testing.T) {
	c := defaultConfig(t, nil)
	c.AppExtra = "hsts 2h include_subdomains"
	c.SiteExtra = "sdr_dashboard"
	cl, base := startTLSInternal(t, c)
	for _, path := range []string{"/v1/services", "/v1/nope", "/dashboard/signin", "/.well-known/oauth-authorization-server"} {
		resp, err := cl.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Strict-Transport-Security"); got != "max-age=7200; includeSubDomains" {
			t.Errorf("GET %s (%d): Strict-Transport-Security %q", path, resp.StatusCode, got)
		}
	}

	plain := defaultConfig(t, nil)
	g := startGateway(t, plain)
	resp, err := http.Get(g.URL + "/v1/services")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Strict-Transport-Security"); resp.StatusCode != 200 || got != "" {
		t.Errorf("plain HTTP: %d, Strict-Transport-Security %q", resp.StatusCode, got)
	}

	off := defaultConfig(t, nil)
	off.AppExtra = "hsts off"
	cl, base = startTLSInternal(t, off)
	resp, err = cl.Get(base + "/v1/services")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Strict-Transport-Security"); got != "" {
		t.Errorf("hsts off: Strict-Transport-Security %q", got)
	}
}
