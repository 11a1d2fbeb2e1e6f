package caddymodule

import (
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestDashboardCaddyfile(t *testing.T) {
	for _, c := range []struct {
		input, path string
		ok          bool
	}{
		{"sdr_dashboard", "", true},
		{"sdr_dashboard {\n\tpath /console/\n}", "/console/", true},
		{"sdr_dashboard /console/", "", false},
		{"sdr_dashboard {\n\tpath\n}", "", false},
		{"sdr_dashboard {\n\tpath /a /b\n}", "", false},
		{"sdr_dashboard {\n\tbogus x\n}", "", false},
	} {
		var d Dashboard
		err := d.UnmarshalCaddyfile(caddyfile.NewTestDispenser(c.input))
		if (err == nil) != c.ok || (c.ok && d.Path != c.path) {
			t.Errorf("%q: path %q, err %v; want path %q, ok %v", c.input, d.Path, err, c.path, c.ok)
		}
	}
}
