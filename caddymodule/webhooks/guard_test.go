package webhooks

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestPublic(t *testing.T) {
	tests := []struct {
		ip   string
		want bool
	}{
		{"93.184.215.14", true},
		{"8.8.8.8", true},
		{"2606:4700::6810:84e5", true},
		{"127.0.0.1", false},       // loopback
		{"127.1.2.3", false},       // loopback
		{"::1", false},             // loopback
		{"10.1.2.3", false},        // private
		{"172.16.0.1", false},      // private
		{"192.168.1.1", false},     // private
		{"169.254.169.254", false}, // link-local (cloud metadata)
		{"fe80::1", false},         // link-local
		{"0.0.0.0", false},         // unspecified
		{"::", false},              // unspecified
		{"0.1.2.3", false},         // "this network"
		{"224.0.0.1", false},       // multicast
		{"ff02::1", false},         // multicast
		{"100.64.0.1", false},      // CGNAT
		{"100.127.255.255", false}, // CGNAT
		{"fd00::1", false},         // unique local
		{"fc00::1", false},         // unique local
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:8.8.8.8", true},
		{"64:ff9b::a00:1", false}, // NAT64 of 10.0.0.1
		{"64:ff9b::808:808", true},
		{"2002:a00:1::", false}, // 6to4 of 10.0.0.1
		{"255.255.255.255", false},
		{"240.0.0.1", false},
		{"198.18.0.1", false},
		{"192.0.2.1", false},
		{"2001:db8::1", false},
		{"fec0::1", false},
	}
	for _, tc := range tests {
		if got := Public(netip.MustParseAddr(tc.ip)); got != tc.want {
			t.Errorf("Public(%s) = %v, want %v", tc.ip, got, tc.want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "hooks.example.com":
			return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
		case "mixed.example.com":
			return []netip.Addr{netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("10.0.0.5")}, nil
		case "localhost":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, errors.New("no such host")
	}
	tests := []struct {
		url          string
		allowPrivate bool
		wantErr      string // "" accepted
	}{
		{"https://hooks.example.com/sdr", false, ""},
		{"https://hooks.example.com:8443/sdr?x=1", false, ""},
		{"http://hooks.example.com/sdr", false, "https"},
		{"https://localhost/x", false, "127.0.0.1 is not a public address"},
		{"https://127.0.0.1:9000/x", false, "127.0.0.1 is not a public address"},
		{"https://[::1]/x", false, "::1 is not a public address"},
		{"https://169.254.169.254/latest", false, "not a public address"},
		{"https://mixed.example.com/x", false, "10.0.0.5 is not a public address"},
		{"https://nowhere.example.com/x", false, "does not resolve"},
		{"https://user:pw@hooks.example.com/x", false, "credentials"},
		{"ftp://hooks.example.com/x", false, "https"},
		{"/relative", false, "absolute"},
		{"https:///nohost", false, "absolute"},
		{"https://hooks.example.com/x#frag", false, "fragment"},
		{"https://hooks.example.com/" + strings.Repeat("a", 2100), false, "longer than"},
		{"http://127.0.0.1:9000/x", true, ""},
		{"http://localhost:9000/x", true, ""},
		{"ftp://127.0.0.1/x", true, "http or https"},
	}
	for _, tc := range tests {
		g := guard{allowPrivate: tc.allowPrivate, lookup: lookup}
		_, err := g.checkURL(t.Context(), tc.url)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("checkURL(%q, private %v): %v, want accepted", tc.url, tc.allowPrivate, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("checkURL(%q, private %v) = %v, want an error with %q", tc.url, tc.allowPrivate, err, tc.wantErr)
		case tc.wantErr != "" && !errors.Is(err, ErrInvalidURL):
			t.Errorf("checkURL(%q) error %v is not ErrInvalidURL", tc.url, err)
		}
	}
}

func TestDialControl(t *testing.T) {
	g := guard{}
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"93.184.215.14:443", true},
		{"127.0.0.1:443", false},
		{"[::ffff:10.0.0.1]:443", false},
		{"[fe80::1%eth0]:443", false},
	} {
		err := g.control("tcp", tc.addr, nil)
		if (err == nil) != tc.ok {
			t.Errorf("control(%s) = %v, want ok %v", tc.addr, err, tc.ok)
		}
	}
	if err := (guard{allowPrivate: true}).control("tcp", "127.0.0.1:80", nil); err != nil {
		t.Errorf("allow_private control(127.0.0.1) = %v", err)
	}
}
