package caddymodule

import (
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"socialrouter/caddymodule/dashboard"
	"socialrouter/caddymodule/store"
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

// TestDashboardCaddyfileLimits: the sign-in limits and the hash pool are
// set in the sdr_dashboard block; a rule left out keeps its default.
func TestDashboardCaddyfileLimits(t *testing.T) {
	var d Dashboard
	err := d.UnmarshalCaddyfile(caddyfile.NewTestDispenser("sdr_dashboard {\n\tsignin_email 3 1s 30s 10m\n\tpassword_check 2 1s 1m 15m 4\n\thash_slots 1\n\thash_wait 250ms\n}"))
	if err != nil {
		t.Fatal(err)
	}
	want := dashboard.Limits{
		Email:            store.ThrottleRule{Free: 3, Base: time.Second, Max: 30 * time.Second, Window: 10 * time.Minute},
		Password:         store.ThrottleRule{Free: 2, Base: time.Second, Max: time.Minute, Window: 15 * time.Minute},
		PasswordFailures: 4,
	}
	if d.Limits == nil || *d.Limits != want || d.HashSlots != 1 || time.Duration(d.HashWait) != 250*time.Millisecond {
		t.Errorf("limits %+v, slots %d, wait %v", d.Limits, d.HashSlots, time.Duration(d.HashWait))
	}
	for _, bad := range []string{
		"signin_email 3 1s 30s",           // a field short
		"signin_address 0 1s 30s 10m",     // no free attempt
		"signin_email 3 1m 30s 10m",       // base above max
		"signin_email 3 1s 30m 10m",       // max above window
		"signin_email 3 soon 30s 10m",     // not a duration
		"signin_email 3 1s 30s 10m 4",     // failures only for password_check
		"password_check 2 1s 1m 15m zero", // failures not a number
		"hash_slots 0", "hash_wait -1s", "hash_slots",
	} {
		var d Dashboard
		if err := d.UnmarshalCaddyfile(caddyfile.NewTestDispenser("sdr_dashboard {\n\t" + bad + "\n}")); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
