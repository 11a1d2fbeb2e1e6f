package caddymodule

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"socialrouter/caddymodule/dashboard"
	"socialrouter/caddymodule/oauth"
	"socialrouter/caddymodule/passhash"
	"socialrouter/caddymodule/store"
)

func init() {
	caddy.RegisterModule(Dashboard{})
	httpcaddyfile.RegisterHandlerDirective("sdr_dashboard", parseDashboard)
	httpcaddyfile.RegisterDirectiveOrder("sdr_dashboard", httpcaddyfile.Before, "reverse_proxy")
}

// Dashboard is the http.handlers.sdr_dashboard module: the account
// dashboard (package dashboard) under Path, over the social_router app of
// its config, and the OAuth sign-in of MCP clients (package oauth): its
// well-known metadata and /oauth/* endpoints, whose authorize step is the
// dashboard's sign-in and a consent page. Other paths go to the next
// handler.
type Dashboard struct {
	// Path is where the dashboard is served. Default: "/dashboard/".
	Path string `json:"path,omitempty"`
	// Limits are the sign-in, invitation and password attempt limits;
	// a rule left out keeps dashboard.DefaultLimits'.
	Limits *dashboard.Limits `json:"limits,omitempty"`
	// HashSlots is how many password hashes (argon2id, 19 MiB and ~30 ms
	// of a core each) run at once in the process. Default: one per two
	// cores, at least one.
	HashSlots int `json:"hash_slots,omitempty"`
	// HashWait is how long a password check waits for a slot before the
	// answer is 503 with Retry-After. Default: 1s.
	HashWait caddy.Duration `json:"hash_wait,omitempty"`

	h     *dashboard.Handler
	oauth *oauth.Server
	hsts  string
}

// CaddyModule returns the Caddy module information.
func (Dashboard) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.sdr_dashboard",
		New: func() caddy.Module { return new(Dashboard) },
	}
}

// Provision builds the dashboard over the app's store and registry.
func (d *Dashboard) Provision(ctx caddy.Context) error {
	if d.Path == "" {
		d.Path = "/dashboard/"
	}
	if !strings.HasPrefix(d.Path, "/") {
		return fmt.Errorf("sdr_dashboard path %q must start with /", d.Path)
	}
	if !strings.HasSuffix(d.Path, "/") {
		d.Path += "/"
	}
	v, err := ctx.App("social_router")
	if err != nil {
		// Caddy's error already says "loading social_router app module:";
		// wrapping it again would bury the operator's file:line further.
		return err
	}
	app := v.(*App)
	// The pool is the process's (a reload must not double it): the
	// latest config's size wins.
	passhash.Default().Configure(cmp.Or(d.HashSlots, passhash.DefaultSlots), cmp.Or(time.Duration(d.HashWait), passhash.DefaultWait))
	var limits dashboard.Limits
	if d.Limits != nil {
		limits = *d.Limits
	}
	d.hsts = app.HSTS.value()
	d.oauth = app.oauthServer(ctx.Logger().Named("oauth"))
	d.h = dashboard.New(dashboard.Config{
		OAuth:     d.oauth,
		Store:     app.store,
		Registry:  app.Registry,
		KeyPrefix: app.KeyPrefix,
		Path:      d.Path,
		Logger:    ctx.Logger(),
		Limits:    limits,
		Webhooks:  app.webhooks,
		Billing:   app.payments,
	})
	return nil
}

// ServeHTTP serves the dashboard's paths (the bare path redirects to the
// one with a slash) and the OAuth endpoints, and hands anything else to
// the next handler.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	setHSTS(w, r, d.hsts)
	switch p := r.URL.Path; {
	case p == strings.TrimSuffix(d.Path, "/"):
		http.Redirect(w, r, d.Path, http.StatusMovedPermanently)
	case strings.HasPrefix(p, d.Path):
		d.h.ServeHTTP(w, r)
	case p == oauth.PathAuthorize:
		d.h.ServeAuthorize(w, r)
	case oauth.Serves(p):
		d.oauth.ServeHTTP(w, r)
	default:
		return next.ServeHTTP(w, r)
	}
	return nil
}

func parseDashboard(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	d := new(Dashboard)
	err := d.UnmarshalCaddyfile(h.Dispenser)
	return d, err
}

// UnmarshalCaddyfile sets up the dashboard:
//
//	sdr_dashboard {
//		path /dashboard/
//		signin_email   <free> <base> <max> <window>
//		signin_address <free> <base> <max> <window>
//		password_check <free> <base> <max> <window> [<failures>]
//		hash_slots <n>
//		hash_wait <duration>
//	}
//
// The path is a subdirective, not an argument: Caddy reads a first argument
// that starts with "/" as a request matcher, so `sdr_dashboard /console/`
// would only match that one path. A limit is <free> attempts, then a delay
// of <base> doubling up to <max>, forgotten after <window> without an
// attempt (docs/operations.md, "Sign-in limits").
func (d *Dashboard) UnmarshalCaddyfile(disp *caddyfile.Dispenser) error {
	disp.Next() // directive name
	if disp.NextArg() {
		return disp.Errf("sdr_dashboard takes no argument; set the path in a block: sdr_dashboard { path %s }", disp.Val())
	}
	for nesting := disp.Nesting(); disp.NextBlock(nesting); {
		switch opt := disp.Val(); opt {
		case "path":
			if !disp.NextArg() {
				return disp.ArgErr()
			}
			d.Path = disp.Val()
			if disp.NextArg() {
				return disp.ArgErr()
			}
		case "signin_email", "signin_address", "password_check":
			args := disp.RemainingArgs()
			if len(args) != 4 && !(opt == "password_check" && len(args) == 5) {
				return disp.Errf("%s takes <free> <base> <max> <window>%s", opt, map[bool]string{true: " [<failures>]"}[opt == "password_check"])
			}
			rule, err := parseRule(args[:4])
			if err != nil {
				return disp.Errf("%s: %v", opt, err)
			}
			if d.Limits == nil {
				d.Limits = &dashboard.Limits{}
			}
			switch opt {
			case "signin_email":
				d.Limits.Email = rule
			case "signin_address":
				d.Limits.Address = rule
			default:
				d.Limits.Password = rule
				if len(args) == 5 {
					n, err := strconv.Atoi(args[4])
					if err != nil || n < 1 {
						return disp.Errf("password_check: failures must be a positive integer, got %q", args[4])
					}
					d.Limits.PasswordFailures = n
				}
			}
		case "hash_slots":
			var s string
			if !disp.AllArgs(&s) {
				return disp.ArgErr()
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return disp.Errf("hash_slots must be a positive integer, got %q", s)
			}
			d.HashSlots = n
		case "hash_wait":
			var s string
			if !disp.AllArgs(&s) {
				return disp.ArgErr()
			}
			w, err := caddy.ParseDuration(s)
			if err != nil || w <= 0 {
				return disp.Errf("hash_wait must be a positive duration, got %q", s)
			}
			d.HashWait = caddy.Duration(w)
		default:
			return disp.Errf("unknown sdr_dashboard subdirective %q (valid: path, signin_email, signin_address, password_check, hash_slots, hash_wait)", opt)
		}
	}
	return nil
}

// parseRule reads <free> <base> <max> <window>: free at least 1, the
// durations positive, base ≤ max ≤ window (a delay longer than the window
// would outlive the counter that set it).
func parseRule(args []string) (store.ThrottleRule, error) {
	free, err := strconv.Atoi(args[0])
	if err != nil || free < 1 {
		return store.ThrottleRule{}, fmt.Errorf("free attempts must be a positive integer, got %q", args[0])
	}
	var ds [3]time.Duration
	for i, a := range args[1:] {
		if ds[i], err = caddy.ParseDuration(a); err != nil || ds[i] <= 0 {
			return store.ThrottleRule{}, fmt.Errorf("%q is not a positive duration", a)
		}
	}
	if ds[0] > ds[1] || ds[1] > ds[2] {
		return store.ThrottleRule{}, fmt.Errorf("want base ≤ max ≤ window, got %s %s %s", args[1], args[2], args[3])
	}
	return store.ThrottleRule{Free: free, Base: ds[0], Max: ds[1], Window: ds[2]}, nil
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Dashboard)(nil)
	_ caddyhttp.MiddlewareHandler = (*Dashboard)(nil)
	_ caddyfile.Unmarshaler       = (*Dashboard)(nil)
)
