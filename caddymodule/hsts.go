package caddymodule

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// DefaultHSTSMaxAge is one year, what browsers' preload lists ask for and
// long enough that a visitor who once reached the site over HTTPS is not
// talked down to plain HTTP on a later visit.
const DefaultHSTSMaxAge = 365 * 24 * time.Hour

// HSTS is the Strict-Transport-Security header the social_router and
// sdr_dashboard handlers add to every response they see that arrived over
// TLS. It is on by default for TLS sites: the API takes bearer keys and
// the dashboard session cookies, and one plain-HTTP request (a typed
// address, a stale link) is enough to hand either to whoever sits on the
// path. A plain-HTTP site gets no header (browsers ignore it there anyway).
type HSTS struct {
	// Off sends no header (a site behind a balancer that sets its own).
	Off bool `json:"off,omitempty"`
	// MaxAge is how long a browser keeps to HTTPS. Default: 365 days.
	MaxAge caddy.Duration `json:"max_age,omitempty"`
	// IncludeSubdomains extends the rule to every subdomain of the site's
	// host: off by default, since it binds hosts this gateway does not
	// serve.
	IncludeSubdomains bool `json:"include_subdomains,omitempty"`
	// Preload asks for the browsers' preload lists (which require
	// include_subdomains and a max age of at least a year).
	Preload bool `json:"preload,omitempty"`
}

// value is the header's value, or "" when it is off.
func (h *HSTS) value() string {
	if h == nil {
		return "max-age=" + strconv.Itoa(int(DefaultHSTSMaxAge/time.Second))
	}
	if h.Off {
		return ""
	}
	age := time.Duration(h.MaxAge)
	if age == 0 {
		age = DefaultHSTSMaxAge
	}
	v := "max-age=" + strconv.FormatInt(int64(age/time.Second), 10)
	if h.IncludeSubdomains {
		v += "; includeSubDomains"
	}
	if h.Preload {
		v += "; preload"
	}
	return v
}

// validate refuses a preload request the preload lists would refuse.
func (h *HSTS) validate() error {
	if h == nil || h.Off {
		return nil
	}
	if h.MaxAge < 0 {
		return fmt.Errorf("hsts max_age must not be negative")
	}
	if h.Preload && (!h.IncludeSubdomains || (h.MaxAge != 0 && time.Duration(h.MaxAge) < DefaultHSTSMaxAge)) {
		return fmt.Errorf("hsts preload needs include_subdomains and a max_age of at least 365d")
	}
	return nil
}

// setHSTS adds the header to a response of a request that came over TLS.
func setHSTS(w http.ResponseWriter, r *http.Request, value string) {
	if r.TLS != nil && value != "" {
		w.Header().Set("Strict-Transport-Security", value)
	}
}

// unmarshalHSTS reads the hsts option of the social_router block:
//
//	hsts off
//	hsts [<max_age>] [include_subdomains] [preload]
func unmarshalHSTS(d *caddyfile.Dispenser) (*HSTS, error) {
	h := &HSTS{}
	args := d.RemainingArgs()
	if len(args) == 0 {
		return nil, d.ArgErr()
	}
	for i, arg := range args {
		switch arg {
		case "off":
			if len(args) != 1 {
				return nil, d.Err("hsts off takes no other argument")
			}
			h.Off = true
		case "include_subdomains":
			h.IncludeSubdomains = true
		case "preload":
			h.Preload = true
		default:
			dur, err := caddy.ParseDuration(arg)
			if i != 0 || err != nil || dur <= 0 {
				return nil, d.Errf("hsts: %q is not off, a positive max age (first), include_subdomains or preload", arg)
			}
			h.MaxAge = caddy.Duration(dur)
		}
	}
	return h, nil
}
