package caddymodule

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/payments"
	"socialrouter/caddymodule/store"
)

// PaymentsConfig is the payments block of the app: the provider and its
// keys, the currency and what it buys. Without it top-ups are off.
type PaymentsConfig struct {
	// Provider is "stripe", the one provider.
	Provider string `json:"provider"`
	// SecretKey and WebhookSecret: write them as runtime placeholders
	// ({env.STRIPE_SECRET_KEY}), resolved at Provision, so the secrets
	// stay out of the config GET /config/ serves (as source tokens).
	SecretKey     string `json:"secret_key,omitempty"`
	WebhookSecret string `json:"webhook_secret,omitempty"`
	// Currency is the ISO code of payments. Default: usd.
	Currency string `json:"currency,omitempty"`
	// CreditsPerUnit is the credits one unit of the currency buys.
	// Default: 1.
	CreditsPerUnit string `json:"credits_per_unit,omitempty"`
	// MinTopUp and MaxTopUp bound a top-up, in units of the currency.
	// Default: 5 and 1000.
	MinTopUp string `json:"min_top_up,omitempty"`
	MaxTopUp string `json:"max_top_up,omitempty"`
	// APIBase replaces https://api.stripe.com (tests: stripe-mock).
	APIBase string `json:"api_base,omitempty"`
	// WebhookTolerance is how old a signed event may be. Default: 5m.
	WebhookTolerance caddy.Duration `json:"webhook_tolerance,omitempty"`
	// RechargeRetry is the wait after a failed automatic recharge before
	// the next. Default: 1h.
	RechargeRetry caddy.Duration `json:"recharge_retry,omitempty"`
}

// unmarshalPayments reads
//
//	payments stripe {
//		secret_key {env.STRIPE_SECRET_KEY}
//		webhook_secret {env.STRIPE_WEBHOOK_SECRET}
//		currency usd
//		credits_per_unit 1
//		min_top_up 5
//		max_top_up 1000
//		api_base http://127.0.0.1:12111   # stripe-mock, for tests
//		webhook_tolerance 5m
//		recharge_retry 1h
//	}
func (a *App) unmarshalPayments(d *caddyfile.Dispenser) error {
	p := &PaymentsConfig{}
	if !d.Args(&p.Provider) || d.NextArg() {
		return d.ArgErr()
	}
	if p.Provider != "stripe" {
		return d.Errf("payments: unknown provider %q (want stripe)", p.Provider)
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		opt := d.Val()
		var v string
		// An empty environment placeholder leaves no argument: Provision
		// says which secret is missing.
		if d.NextArg() {
			v = d.Val()
		}
		if d.NextArg() {
			return d.ArgErr()
		}
		switch opt {
		case "secret_key":
			p.SecretKey = v
		case "webhook_secret":
			p.WebhookSecret = v
		case "currency":
			p.Currency = strings.ToLower(v)
		case "credits_per_unit":
			p.CreditsPerUnit = v
		case "min_top_up":
			p.MinTopUp = v
		case "max_top_up":
			p.MaxTopUp = v
		case "api_base":
			p.APIBase = v
		case "webhook_tolerance", "recharge_retry":
			dur, err := caddy.ParseDuration(v)
			if err != nil || dur <= 0 {
				return d.Errf("payments: %s must be a positive duration, got %q", opt, v)
			}
			if opt == "webhook_tolerance" {
				p.WebhookTolerance = caddy.Duration(dur)
			} else {
				p.RechargeRetry = caddy.Duration(dur)
			}
		default:
			return d.Errf("unknown payments subdirective %q", opt)
		}
	}
	if _, err := p.amounts(); err != nil {
		return d.Err(err.Error())
	}
	a.Payments = p
	return nil
}

// amounts parses the currency and the amounts, with their defaults.
func (p *PaymentsConfig) amounts() (payments.Config, error) {
	cur := p.Currency
	if cur == "" {
		cur = "usd"
	}
	parse := func(name, s, def string) (credits.Micros, error) {
		if s == "" {
			s = def
		}
		v, err := credits.Parse(s)
		if err != nil || v <= 0 {
			return 0, fmt.Errorf("payments: %s must be a positive number, got %q", name, s)
		}
		return v, nil
	}
	per, err := parse("credits_per_unit", p.CreditsPerUnit, "1")
	if err != nil {
		return payments.Config{}, err
	}
	c := payments.Config{Currency: cur, PerUnit: per}
	for _, b := range []struct {
		name, s, def string
		dst          *int64
	}{{"min_top_up", p.MinTopUp, "5", &c.MinTopUp}, {"max_top_up", p.MaxTopUp, "1000", &c.MaxTopUp}} {
		v, err := parse(b.name, b.s, b.def)
		if err != nil {
			return c, err
		}
		if *b.dst, err = payments.ToMinor(cur, v); err != nil {
			return c, fmt.Errorf("payments: %s: %v", b.name, err)
		}
	}
	if c.MinTopUp > c.MaxTopUp {
		return c, fmt.Errorf("payments: min_top_up must not exceed max_top_up")
	}
	return c, nil
}

// provisionPayments builds the provider when the block is set. The
// secrets are resolved here, never written back to the config.
func (a *App) provisionPayments() error {
	if a.Payments == nil {
		a.payments = payments.Notices(a.store, a.webhooks.Notify, a.logger.Named("payments"))
		return nil
	}
	c, err := a.Payments.amounts()
	if err != nil {
		return err
	}
	repl := caddy.NewReplacer()
	c.SecretKey = repl.ReplaceAll(a.Payments.SecretKey, "")
	c.WebhookSecret = repl.ReplaceAll(a.Payments.WebhookSecret, "")
	c.APIBase = repl.ReplaceAll(a.Payments.APIBase, "")
	c.Tolerance = time.Duration(a.Payments.WebhookTolerance)
	c.RechargeRetry = time.Duration(a.Payments.RechargeRetry)
	c.Store = a.store
	c.Notify = a.webhooks.Notify
	c.Logger = a.logger.Named("payments")
	if c.SecretKey == a.Payments.SecretKey && c.SecretKey != "" {
		c.Logger.Warn("payments: secret_key is written in the config itself, which GET /config/ serves; use {env.STRIPE_SECRET_KEY}")
	}
	svc, err := payments.New(c)
	if err != nil {
		return err
	}
	a.payments = svc
	return nil
}

// servePaymentsWebhook is the provider's webhook route; 404 without a
// payments block.
func (a *App) servePaymentsWebhook(w http.ResponseWriter, r *http.Request) {
	if !a.payments.Enabled() { // nil-safe
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"code":"not_found","message":"payments are not configured on this gateway","type":"not_found"}}`)
		return
	}
	a.payments.ServeWebhook(w, r)
}

// settleWatch is the API's store: after each settle
// it tells the provider the balance left (balance.low, automatic
// recharge), without delaying the settle's answer.
type settleWatch struct {
	store.Store
	svc *payments.Service
}

func (s settleWatch) Settle(ctx context.Context, st store.Settlement) (store.SettleResult, error) {
	res, err := s.Store.Settle(ctx, st)
	if err == nil && st.Run != nil && res.Charged > 0 {
		s.svc.Settled(st.Run.AccountID, res.Balance)
	}
	return res, err
}

// apiStore is the store the /v1 API settles through.
func (a *App) apiStore() store.Store {
	if a.payments == nil { // an App built without Provision (tests)
		return a.store
	}
	return settleWatch{Store: a.store, svc: a.payments}
}
