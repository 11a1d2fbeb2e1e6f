// Package payments is money in: customers top up their balance by card
// through Stripe Checkout, or have it recharged automatically with the
// card on file, and every credit comes from a signed provider event,
// applied once (store.Ledger). It is Caddy-free; caddymodule/payments.go
// reads its configuration from the app block.
package payments

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82"
	"go.uber.org/zap"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/webhooks"
)

// WebhookPath is where Stripe delivers events (the operator registers
// https://<site>/payments/stripe/webhook in Stripe's dashboard).
const WebhookPath = "/payments/stripe/webhook"

// Config is the resolved configuration of the provider: secrets already
// read from their placeholders.
type Config struct {
	SecretKey     string
	WebhookSecret string
	// Currency is the ISO code Checkout charges in (lower case).
	Currency string
	// PerUnit is the credits one major unit of the currency buys.
	PerUnit credits.Micros
	// MinTopUp and MaxTopUp bound a top-up and a recharge, in minor units
	// (cents).
	MinTopUp, MaxTopUp int64
	// APIBase replaces https://api.stripe.com (tests: stripe-mock).
	APIBase string
	// Tolerance is how old a signed event may be. Default: the SDK's 5 min.
	Tolerance time.Duration
	// RechargeRetry is how long after a failed automatic recharge the next
	// may start. Default: 1h.
	RechargeRetry time.Duration

	Store  Store
	Notify Notifier
	Logger *zap.Logger
	Now    func() time.Time
}

// Store is the part of the account store payments use: the ledger the
// top-ups and refunds are written to, and the balance a recharge reads.
// Declared here so that payments depend on these concerns and not on the
// whole store.Store.
type Store interface {
	store.Accounts
	store.Ledger
}

// Notifier queues an event to the account's webhook endpoints
// (webhooks.Service.Notify); data is the event's JSON.
type Notifier func(ctx context.Context, accountID, event string, data []byte) error

// Webhook events this package sends to accounts (webhooks.Events).
const (
	EventBalanceLow     = webhooks.EventBalanceLow
	EventRechargeFailed = webhooks.EventRechargeFailed
)

// Service is the payment provider of a config generation.
type Service struct {
	cfg    Config
	sc     *stripe.Client
	logger *zap.Logger
	now    func() time.Time
	// cache keeps each account's settings for a moment, so a settle of an
	// account without thresholds costs no store read.
	cache sync.Map // account → cachedSettings
}

type cachedSettings struct {
	bs  store.BillingSettings
	exp time.Time
}

// settingsTTL bounds how stale another node's settings change may be here.
const settingsTTL = 5 * time.Second

// New builds the service; nil when cfg has no secret key (payments off).
func New(cfg Config) (*Service, error) {
	if cfg.SecretKey == "" {
		return nil, errors.New("payments: secret_key is empty (is its environment variable set?)")
	}
	if cfg.WebhookSecret == "" {
		return nil, errors.New("payments: webhook_secret is empty (is its environment variable set?)")
	}
	if cfg.PerUnit <= 0 || cfg.MinTopUp <= 0 || cfg.MaxTopUp < cfg.MinTopUp {
		return nil, fmt.Errorf("payments: want credits_per_unit > 0 and 0 < min_top_up ≤ max_top_up")
	}
	if cfg.Tolerance == 0 {
		cfg.Tolerance = 5 * time.Minute
	}
	if cfg.RechargeRetry == 0 {
		cfg.RechargeRetry = time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	bc := &stripe.BackendConfig{
		HTTPClient:        &http.Client{Timeout: 30 * time.Second},
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		MaxNetworkRetries: stripe.Int64(2),
	}
	if cfg.APIBase != "" {
		bc.URL = stripe.String(strings.TrimRight(cfg.APIBase, "/"))
	}
	return &Service{
		cfg:    cfg,
		sc:     stripe.NewClient(cfg.SecretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(bc))),
		logger: cfg.Logger,
		now:    cfg.Now,
	}, nil
}

// Notices is the service without a provider (no payments block): it
// still sends balance.low and keeps settings; top-ups are off.
func Notices(st Store, notify Notifier, logger *zap.Logger) *Service {
	if logger == nil {
		logger = zap.NewNop()
	}
	return &Service{cfg: Config{Store: st, Notify: notify, Logger: logger, Now: time.Now, Currency: "usd", PerUnit: credits.PerCredit},
		logger: logger, now: time.Now}
}

// Enabled reports whether top-ups are on (a payments block is set).
func (s *Service) Enabled() bool { return s != nil && s.sc != nil }

// Bounds returns the smallest and largest top-up, in credits.
func (s *Service) Bounds() (lo, hi credits.Micros) {
	return s.credits(s.cfg.MinTopUp), s.credits(s.cfg.MaxTopUp)
}

// PerUnit is the credits one unit of the currency buys.
func (s *Service) PerUnit() credits.Micros { return s.cfg.PerUnit }

// Currency is the ISO code payments are made in.
func (s *Service) Currency() string { return s.cfg.Currency }

// settings returns an account's settings, from the cache when fresh.
func (s *Service) settings(ctx context.Context, accountID string) (store.BillingSettings, error) {
	now := s.now()
	if v, ok := s.cache.Load(accountID); ok && now.Before(v.(cachedSettings).exp) {
		return v.(cachedSettings).bs, nil
	}
	bs, err := s.cfg.Store.BillingSettings(ctx, accountID)
	if err == nil {
		s.cache.Store(accountID, cachedSettings{bs: bs, exp: now.Add(settingsTTL)})
	}
	return bs, err
}

// Update changes an account's settings and refreshes the cache.
func (s *Service) Update(ctx context.Context, accountID string, fn func(*store.BillingSettings) error) (store.BillingSettings, error) {
	bs, err := s.cfg.Store.UpdateBillingSettings(ctx, accountID, fn)
	if err == nil {
		s.cache.Store(accountID, cachedSettings{bs: bs, exp: s.now().Add(settingsTTL)})
	}
	return bs, err
}

// Settings returns an account's settings as stored (the dashboard).
func (s *Service) Settings(ctx context.Context, accountID string) (store.BillingSettings, error) {
	return s.cfg.Store.BillingSettings(ctx, accountID)
}
