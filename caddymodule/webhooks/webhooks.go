// Package webhooks notifies an account's backends when its runs end: the
// account registers endpoints (a URL, the events it wants, a signing
// secret), each event becomes one durable delivery per subscribed endpoint
// in the store, and a worker sends them following the Standard Webhooks
// specification (webhook-id, webhook-timestamp, webhook-signature
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>"), retrying with
// exponential backoff for more than a day under the same webhook-id.
//
// Endpoint URLs are checked twice against server-side request forgery: at
// registration (https, every address the name resolves to public) and at
// every dial (a net.Dialer Control hook), unless the operator allows
// private addresses. Redirects are not followed.
//
// The package is Caddy-free: the social_router app builds a Service over
// its store, starts it and stops it; the admin routes and the dashboard
// call its methods; the async runs call Notify when a run ends.
package webhooks

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// Event types an endpoint can subscribe to, and the type of the test
// event every endpoint receives on demand.
// The run events are the lifecycle's (runs.State.Event).
var (
	EventRunCompleted = runs.Completed.Event()
	EventRunFailed    = runs.Failed.Event()
	EventRunCancelled = runs.Cancelled.Event()
)

const (
	EventTest = "webhook.test"
	// Money events (package payments): the balance fell under the
	// account's threshold; an automatic recharge failed or needs the
	// customer.
	EventBalanceLow     = "balance.low"
	EventRechargeFailed = "billing.recharge_failed"
)

// Events lists the event types an endpoint can subscribe to.
var Events = []string{EventRunCompleted, EventRunFailed, EventRunCancelled, EventBalanceLow, EventRechargeFailed}

// ErrInvalidEvents is a subscription that is empty, repeats an event or
// names one that is not in Events.
var ErrInvalidEvents = errors.New("invalid webhook events")

// ErrTooManyEndpoints refuses an endpoint past MaxEndpoints.
var ErrTooManyEndpoints = errors.New("too many webhook endpoints")

// Defaults of Config.
const (
	// MaxEndpoints is how many endpoints one account may register.
	MaxEndpoints = 20
	// RotationGrace is how long deliveries are also signed with the secret
	// a rotation replaced, so receivers can switch without a gap.
	RotationGrace = 24 * time.Hour
	// DefaultTimeout bounds one delivery attempt, connection to response
	// headers; the response body is read up to maxResponseRead.
	DefaultTimeout = 15 * time.Second
	// DefaultPollInterval is how often the worker looks for due deliveries
	// when nothing woke it.
	DefaultPollInterval = time.Second
	// DefaultConcurrency is how many attempts one worker makes at once.
	DefaultConcurrency = 8
	// DefaultRetention is how long a finished delivery stays in the log
	// after its last attempt.
	DefaultRetention = 30 * 24 * time.Hour
	// pruneEvery is how often the worker prunes the log.
	pruneEvery = time.Hour
)

// DefaultSchedule is the wait before each retry, after the first attempt:
// 8 attempts spread over about 27.5 hours (the Standard Webhooks example
// schedule, shortened), each wait jittered by ±10%.
var DefaultSchedule = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// Store is the part of the account store webhooks use: the endpoints and
// their delivery queue. Declared here so that webhooks depend on that
// concern and not on the whole store.Store.
type Store interface {
	store.Webhooks
}

// Config is what a Service works with; Store is required.
type Config struct {
	Store Store
	// AllowPrivate accepts endpoints on loopback, private and other
	// non-public addresses, and plain http (the Caddyfile's
	// webhooks_allow_private: tests, or receivers inside the operator's
	// own network). Default false.
	AllowPrivate bool
	// Schedule is the wait before each retry. Default DefaultSchedule.
	Schedule []time.Duration
	// Timeout bounds one attempt. Default DefaultTimeout.
	Timeout time.Duration
	// PollInterval, Concurrency: see the defaults.
	PollInterval time.Duration
	Concurrency  int
	// Retention: see DefaultRetention.
	Retention time.Duration
	// Now is the clock (default time.Now); tests move it instead of
	// waiting hours.
	Now func() time.Time
	// Jitter spreads a retry wait (default ±10%, random).
	Jitter func(time.Duration) time.Duration
	// Observe hears each attempt's outcome (succeeded, retry, failed, gone)
	// and duration: the app's Prometheus counters. Default: nothing.
	Observe func(outcome string, d time.Duration)
	Logger  *zap.Logger
}

// Service registers endpoints, queues deliveries and runs the worker that
// sends them. Build it with New.
type Service struct {
	store    Store
	guard    guard
	client   *http.Client
	schedule []time.Duration
	timeout  time.Duration
	poll     time.Duration
	workers  int
	keep     time.Duration
	now      func() time.Time
	jitter   func(time.Duration) time.Duration
	observe  func(string, time.Duration)
	logger   *zap.Logger

	wake           chan struct{}
	mu             sync.Mutex
	cancel         context.CancelFunc // stops the loop
	cancelAttempts context.CancelFunc // cuts the attempts in flight short
	done           chan struct{}
}

// New builds a Service; Start runs its worker.
func New(c Config) *Service {
	s := &Service{
		store:    c.Store,
		guard:    guard{allowPrivate: c.AllowPrivate},
		schedule: c.Schedule,
		timeout:  c.Timeout,
		poll:     c.PollInterval,
		workers:  c.Concurrency,
		keep:     c.Retention,
		now:      c.Now,
		jitter:   c.Jitter,
		observe:  c.Observe,
		logger:   c.Logger,
		wake:     make(chan struct{}, 1),
	}
	if s.schedule == nil {
		s.schedule = DefaultSchedule
	}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if s.poll <= 0 {
		s.poll = DefaultPollInterval
	}
	if s.workers <= 0 {
		s.workers = DefaultConcurrency
	}
	if s.keep <= 0 {
		s.keep = DefaultRetention
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.jitter == nil {
		s.jitter = jitter
	}
	if s.observe == nil {
		s.observe = func(string, time.Duration) {}
	}
	if s.logger == nil {
		s.logger = zap.NewNop()
	}
	s.client = newClient(s.guard, s.timeout)
	return s
}

// newClient is the HTTP client of deliveries: no proxy from the
// environment (the guard must see the receiver's address, not a
// proxy's), the guard on every dial, no redirects, bounded waits.
func newClient(g guard, timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: g.control}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       90 * time.Second,
			ForceAttemptHTTP2:     true,
		},
		Timeout: timeout + 5*time.Second, // headers within timeout, then the bounded body read
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// AllowPrivate reports whether private addresses are accepted.
func (s *Service) AllowPrivate() bool { return s.guard.allowPrivate }
