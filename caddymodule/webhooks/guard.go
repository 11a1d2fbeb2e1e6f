package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"
)

// ErrInvalidURL is an endpoint URL refused at registration: not absolute,
// not https, with credentials, or resolving to an address that is not
// public (unless the operator allows private addresses).
var ErrInvalidURL = errors.New("invalid webhook url")

// maxURLLength bounds an endpoint URL.
const maxURLLength = 2048

// nonPublic are the ranges Public refuses beyond what netip classifies:
// addresses that are not routable on the internet, or reach the operator's
// own network from a public-looking form.
var nonPublic = func() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range []string{
		"0.0.0.0/8",       // "this network"
		"100.64.0.0/10",   // carrier-grade NAT (RFC 6598)
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"240.0.0.0/4",     // reserved, and the broadcast address
		"::/96",           // IPv4-compatible (deprecated)
		"64:ff9b:1::/48",  // local-use NAT64
		"100::/64",        // discard
		"2001::/23",       // IETF protocol assignments (Teredo among them)
		"2001:db8::/32",   // documentation
		"fec0::/10",       // site-local (deprecated)
	} {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}()

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Public reports whether ip is a public unicast address: not loopback,
// private (RFC 1918, IPv6 unique local), link-local, unspecified,
// multicast, carrier-grade NAT or another special-purpose range. An IPv6
// form that embeds an IPv4 address (v4-mapped, NAT64, 6to4) is judged by
// the IPv4 address it reaches.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() || ip.IsUnspecified() || ip.IsLoopback() || ip.IsPrivate() ||
		ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip):
			return Public(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFour.Contains(ip):
			return Public(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	return true
}

// guard checks endpoint URLs at registration and every address the
// worker dials, so a name that resolved to a public address when it was
// registered cannot later reach a private one (DNS rebinding).
type guard struct {
	allowPrivate bool
	// lookup resolves a host name (default: the system resolver).
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
}

func systemLookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidURL}, args...)...)
}

// checkURL parses and checks an endpoint URL. Without allowPrivate the URL
// must be https and its host (a literal address, or every address its
// name resolves to now) public; with allowPrivate http is accepted too and
// addresses are not checked.
func (g guard) checkURL(ctx context.Context, raw string) (*url.URL, error) {
	if len(raw) > maxURLLength {
		return nil, invalid("the url is longer than %d characters", maxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" {
		return nil, invalid("the url must be absolute, as https://hooks.example.com/sdr")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && g.allowPrivate:
	case g.allowPrivate:
		return nil, invalid("the url must be http or https")
	default:
		return nil, invalid("the url must be https")
	}
	if u.User != nil {
		return nil, invalid("the url must not carry credentials; verify deliveries by their signature")
	}
	if u.Fragment != "" || u.RawFragment != "" {
		return nil, invalid("the url must not have a fragment")
	}
	if g.allowPrivate {
		return u, nil
	}
	host := u.Hostname()
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		lookup := g.lookup
		if lookup == nil {
			lookup = systemLookup
		}
		if addrs, err = lookup(ctx, host); err != nil || len(addrs) == 0 {
			return nil, invalid("%s does not resolve", host)
		}
	}
	for _, ip := range addrs {
		if !Public(ip) {
			return nil, invalid("%s: %s is not a public address", host, ip.Unmap())
		}
	}
	return u, nil
}

// control is the worker's net.Dialer Control hook: it runs after the name
// is resolved, on the address about to be connected, so it sees what DNS
// answers at delivery time.
func (g guard) control(_, address string, _ syscall.RawConn) error {
	if g.allowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dialing %s: %v", address, err)
	}
	if !Public(ap.Addr()) {
		return fmt.Errorf("dialing %s refused: %s is not a public address", address, ap.Addr().Unmap().WithZone(""))
	}
	return nil
}
