package ratelimit

import (
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("ip_rate_limit", parseCaddyfile)
	// basic_auth is the earliest standard directive that decides whether a
	// request gets through; the limit goes before it, and so before any
	// authentication or routing of ours.
	httpcaddyfile.RegisterDirectiveOrder("ip_rate_limit", httpcaddyfile.Before, "basic_auth")
}

func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(Handler)
	if err := m.UnmarshalCaddyfile(h.Dispenser); err != nil {
		return nil, err
	}
	return m, nil
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	ip_rate_limit [<matcher>] [<count> <window>] {
//		store   memory | redis <url>
//		fail    open | closed
//		timeout <duration>
//		policy  <name>
//		prefix  <key prefix>
//	}
//
// Without arguments the limit is 100 requests per 60s. The block is
// optional; each subdirective sets the JSON field of the same meaning
// (store.type and store.url, store.fail, store.timeout, policy_name,
// store.prefix).
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name

	switch args := d.RemainingArgs(); len(args) {
	case 0:
	case 2:
		count, err := strconv.Atoi(args[0])
		if err != nil || count < 1 {
			return d.Errf("parsing count %q: want a positive integer", args[0])
		}
		window, err := caddy.ParseDuration(args[1])
		if err != nil {
			return d.Errf("parsing window %q: %v", args[1], err)
		}
		if window <= 0 {
			return d.Errf("parsing window %q: want a positive duration", args[1])
		}
		h.Count, h.Window = count, caddy.Duration(window)
	default:
		return d.ArgErr()
	}

	store := func() *StoreConfig {
		if h.Store == nil {
			h.Store = new(StoreConfig)
		}
		return h.Store
	}
	for d.NextBlock(0) {
		switch sub := d.Val(); sub {
		case "store":
			if !d.NextArg() {
				return d.ArgErr()
			}
			switch typ := d.Val(); typ {
			case StoreMemory:
				if d.NextArg() {
					return d.ArgErr()
				}
				store().Type, store().URL = StoreMemory, ""
			case StoreRedis:
				if !d.NextArg() {
					return d.Errf("store redis: missing url")
				}
				store().Type, store().URL = StoreRedis, d.Val()
				if d.NextArg() {
					return d.ArgErr()
				}
			default:
				return d.Errf("unknown store type %q: want %q or %q", typ, StoreMemory, StoreRedis)
			}
		case "fail":
			val, err := singleArg(d)
			if err != nil {
				return err
			}
			if val != FailOpen && val != FailClosed {
				return d.Errf("unknown fail mode %q: want %q or %q", val, FailOpen, FailClosed)
			}
			store().Fail = val
		case "timeout":
			val, err := singleArg(d)
			if err != nil {
				return err
			}
			dur, err := caddy.ParseDuration(val)
			if err != nil {
				return d.Errf("parsing timeout %q: %v", val, err)
			}
			if dur <= 0 {
				return d.Errf("parsing timeout %q: want a positive duration", val)
			}
			store().Timeout = caddy.Duration(dur)
		case "policy":
			val, err := singleArg(d)
			if err != nil {
				return err
			}
			h.PolicyName = val
		case "prefix":
			val, err := singleArg(d)
			if err != nil {
				return err
			}
			store().Prefix = val
		default:
			return d.Errf("unrecognized subdirective %q", sub)
		}
	}
	return nil
}

// singleArg returns the one argument of the current subdirective.
func singleArg(d *caddyfile.Dispenser) (string, error) {
	if !d.NextArg() {
		return "", d.ArgErr()
	}
	val := d.Val()
	if d.NextArg() {
		return "", d.ArgErr()
	}
	return val, nil
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*Handler)(nil)
)
