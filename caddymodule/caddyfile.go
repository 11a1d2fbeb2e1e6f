package caddymodule

import (
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dustin/go-humanize"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/store/backend"
)

func init() {
	httpcaddyfile.RegisterGlobalOption("social_router", parseGlobalOption)
	httpcaddyfile.RegisterHandlerDirective("social_router", parseHandler)
	httpcaddyfile.RegisterDirectiveOrder("social_router", httpcaddyfile.Before, "reverse_proxy")
}

func parseGlobalOption(d *caddyfile.Dispenser, _ any) (any, error) {
	app := new(App)
	if err := app.UnmarshalCaddyfile(d); err != nil {
		return nil, err
	}
	dir := app.Services
	if dir == "" {
		dir = "./services"
	}
	if err := checkServicesAtAdapt(dir); err != nil {
		return nil, err
	}
	app.ServicesDigest = registry.Digest(dir)
	return httpcaddyfile.App{Name: "social_router", Value: caddyconfig.JSON(app, nil)}, nil
}

// UnmarshalCaddyfile sets up the app from the social_router global option:
//
//	social_router {
//		services <dir>
//		storage badger <dir> | storage postgres <url>
//		storage badger <dir> {
//			min_free <size>        # free space kept in reserve (default 256MiB; 0: none)
//		}
//		key_prefix <prefix>
//		source <id> {
//			base_url <url>
//			token <token>          # best a runtime placeholder: {env.SOURCE_A_TOKEN}
//			token_file <path>      # or a file holding it
//			callback_base <url>    # the upstream calls back here (docs/upstreams.md)
//			callback_secret <s>    # ≥ 32 bytes, every node the same: {env.SDR_CALLBACK_SECRET}
//			callback_fallback <d>  # poll after this long without a callback (default 2m)
//		}
//		attempt_timeout <duration>
//		soft_timeout <duration>
//		poll_interval <duration>
//		max_concurrent_runs <n>
//		cache_max_bytes <size>    # bounds the freshness cache (app_cache.go)
//		mcp_origins <origin>...   # web origins allowed to call /mcp from a browser
//		run_retention <duration>   # e.g. 30d; records deleted, billing facts kept
//		hsts off | [<max_age>] [include_subdomains] [preload]
//		watch_services [<debounce>]
//		webhooks_allow_private           # endpoints on private addresses, http allowed
//		webhooks_retry_schedule <d>...   # waits before each retry (default 5s 5m 30m 2h 5h 10h 10h)
//		async_deadline <duration>   # app_async.go
//		async_lease <duration>
//		async_workers <n>
//		async_check_max <duration>
//		async_check_rate <n>
//		async_max_per_account <n>   # async runs in flight per account (default 100)
//		payments stripe { … }       # top-ups by card (payments.go)
//	}
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // option name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "services":
			if !d.AllArgs(&a.Services) {
				return d.ArgErr()
			}
		case "key_prefix":
			if !d.AllArgs(&a.KeyPrefix) {
				return d.ArgErr()
			}
		case "storage":
			var typ, loc string
			if !d.Args(&typ, &loc) || d.NextArg() {
				return d.ArgErr()
			}
			cfg, err := backend.Parse(typ, loc)
			if err != nil {
				return d.Err(err.Error())
			}
			for nesting := d.Nesting(); d.NextBlock(nesting); {
				switch d.Val() {
				case "min_free":
					var size string
					if !d.AllArgs(&size) {
						return d.ArgErr()
					}
					n, err := humanize.ParseBytes(size)
					if err != nil || n > math.MaxInt64 {
						return d.Errf("parsing min_free %q: want a size such as 512MiB", size)
					}
					if typ != backend.Badger {
						return d.Err("min_free applies to storage badger (PostgreSQL reports its own full disk)")
					}
					cfg.MinFree = int64(n)
					if n == 0 {
						cfg.MinFree = -1 // 0 written: no reserve
					}
				default:
					return d.Errf("unknown storage subdirective %q", d.Val())
				}
			}
			a.Storage = &cfg
		case "source":
			var id string
			if !d.Args(&id) {
				return d.ArgErr()
			}
			if d.NextArg() {
				return d.ArgErr()
			}
			if a.Sources == nil {
				a.Sources = map[string]*SourceConfig{}
			}
			sc := &SourceConfig{}
			for nesting := d.Nesting(); d.NextBlock(nesting); {
				switch d.Val() {
				case "base_url":
					if !d.AllArgs(&sc.BaseURL) {
						return d.ArgErr()
					}
				case "token":
					if !secretArg(d, &sc.Token) {
						return d.ArgErr()
					}
				case "token_file":
					if !d.AllArgs(&sc.TokenFile) {
						return d.ArgErr()
					}
				case "callback_base":
					if !d.AllArgs(&sc.CallbackBase) {
						return d.ArgErr()
					}
				case "callback_secret": // too short or empty: refused at Provision, where it is resolved
					if !secretArg(d, &sc.CallbackSecret) {
						return d.ArgErr()
					}
				case "callback_fallback":
					var s string
					if !d.AllArgs(&s) {
						return d.ArgErr()
					}
					dur, err := caddy.ParseDuration(s)
					if err != nil || dur <= 0 {
						return d.Errf("callback_fallback must be a positive duration, got %q", s)
					}
					sc.CallbackFallback = caddy.Duration(dur)
				default:
					return d.Errf("unknown source subdirective %q", d.Val())
				}
			}
			a.Sources[id] = sc
		case "attempt_timeout", "soft_timeout", "poll_interval", "run_retention":
			name := d.Val()
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			dur, err := caddy.ParseDuration(s)
			if err != nil {
				return d.Errf("parsing %s: %v", name, err)
			}
			switch name {
			case "attempt_timeout":
				a.AttemptTimeout = caddy.Duration(dur)
			case "soft_timeout":
				a.SoftTimeout = caddy.Duration(dur)
			case "run_retention":
				if dur <= 0 {
					return d.Errf("run_retention must be a positive duration, got %q", s)
				}
				a.RunRetention = caddy.Duration(dur)
			default:
				a.PollInterval = caddy.Duration(dur)
			}
		case "async_deadline", "async_lease", "async_workers", "async_max_per_account", "async_check_max", "async_check_rate":
			if err := a.unmarshalAsync(d); err != nil {
				return err
			}
		case "cache_max_bytes":
			if err := a.unmarshalCacheMaxBytes(d); err != nil {
				return err
			}
		case "max_concurrent_runs":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return d.Errf("max_concurrent_runs must be a positive integer, got %q", s)
			}
			a.MaxConcurrentRuns = n
		case "mcp_origins":
			origins := d.RemainingArgs()
			if len(origins) == 0 {
				return d.ArgErr()
			}
			for _, o := range origins {
				if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
					return d.Errf("mcp_origins: %q is not a web origin such as https://app.example", o)
				}
			}
			a.MCPOrigins = append(a.MCPOrigins, origins...)
		case "watch_services":
			a.WatchServices = true
			if d.NextArg() {
				dur, err := caddy.ParseDuration(d.Val())
				if err != nil || dur <= 0 {
					return d.Errf("watch_services: the debounce must be a positive duration, got %q", d.Val())
				}
				a.WatchDebounce = caddy.Duration(dur)
			}
			if d.NextArg() {
				return d.ArgErr()
			}
		case "hsts":
			h, err := unmarshalHSTS(d)
			if err != nil {
				return err
			}
			a.HSTS = h
		case "payments":
			if err := a.unmarshalPayments(d); err != nil {
				return err
			}
		case "webhooks_allow_private", "webhooks_retry_schedule":
			if err := a.unmarshalWebhookOption(d); err != nil {
				return err
			}
		default:
			return d.Errf("unknown social_router option %q", d.Val())
		}
	}
	return nil
}

func parseHandler(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	m := new(Handler)
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return m, err
}

// UnmarshalCaddyfile sets up the handler; it takes no arguments (the app
// carries the configuration):
//
//	social_router
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	if d.NextBlock(0) {
		return d.Err("social_router takes no block; configure it in the social_router global option")
	}
	return nil
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*App)(nil)
	_ caddyfile.Unmarshaler = (*Handler)(nil)
)

// secretArg reads a secret's one argument into dst: none is fine (an empty
// environment placeholder leaves no argument), two are not.
func secretArg(d *caddyfile.Dispenser, dst *string) bool {
	if d.NextArg() {
		*dst = d.Val()
	}
	return !d.NextArg()
}
