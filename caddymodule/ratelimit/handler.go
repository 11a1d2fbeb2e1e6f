// Package ratelimit provides the ip_rate_limit HTTP handler: a fixed-window
// request limit per client IP address, kept in memory or in Redis, that
// refuses over-limit requests with a bare 429 and states its policy on every
// response in a RateLimit-Policy header.
package ratelimit

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/ulule/limiter/v3"
	"go.uber.org/zap"
)

func init() {
	caddy.RegisterModule(Handler{})
}

const (
	defaultCount  = 100
	defaultWindow = 60 * time.Second
	defaultPolicy = "default"
)

// Handler limits each client IP address to Count requests per Window.
//
// The client IP is the one Caddy determined for the request (the
// `client_ip` variable), so the server's `trusted_proxies` and
// `client_ip_headers` settings are honoured; the connection's remote
// address is the fallback.
//
// Every response carries `RateLimit-Policy: "<policy_name>";q=<count>;w=<window seconds>`,
// including refusals and errors from later handlers. Request number
// Count+1 within a window, and every later one until the window resets, is
// answered 429 with a `Retry-After` header (whole seconds, at least 1) and no
// body; the next handler is not called.
//
// The window is fixed: it starts with a client's first request and lasts
// Window, after which the count starts again from zero.
//
// This handler sets no placeholders.
type Handler struct {
	// Count is the number of requests a client IP may make per window.
	// Default: 100.
	Count int `json:"count,omitempty"`

	// Window is the length of one rate-limit window. It must be a whole
	// number of seconds, since the RateLimit-Policy header states it in
	// seconds. Default: 60s.
	Window caddy.Duration `json:"window,omitempty"`

	// Store says where the counters are kept and what to do when that
	// place cannot be reached. Default: an in-memory store.
	Store *StoreConfig `json:"store,omitempty"`

	// PolicyName is the name given to the policy in the RateLimit-Policy
	// header. Printable ASCII without `"` or `\`. Default: "default".
	PolicyName string `json:"policy_name,omitempty"`

	logger       *zap.Logger
	backend      *backend
	poolKey      poolKey
	pooled       bool
	limiter      *limiter.Limiter
	policyHeader string
	window       time.Duration
	timeout      time.Duration
	failClosed   bool
}

// CaddyModule returns the Caddy module information.
func (Handler) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.ip_rate_limit",
		New: func() caddy.Module { return new(Handler) },
	}
}

// Provision sets defaults and opens the store, or shares the one an
// identical configuration (this one or the one being replaced by a reload)
// already opened, so that a reload does not reset anyone's counter.
func (h *Handler) Provision(ctx caddy.Context) error {
	h.logger = ctx.Logger()

	if h.Count == 0 {
		h.Count = defaultCount
	}
	if h.Window == 0 {
		h.Window = caddy.Duration(defaultWindow)
	}
	if h.PolicyName == "" {
		h.PolicyName = defaultPolicy
	}
	if h.Store == nil {
		h.Store = new(StoreConfig)
	}
	h.Store.setDefaults()

	h.window = time.Duration(h.Window)
	h.timeout = time.Duration(h.Store.Timeout)
	h.failClosed = h.Store.Fail == FailClosed
	h.policyHeader = fmt.Sprintf(`"%s";q=%d;w=%d`, h.PolicyName, h.Count, int64(h.window/time.Second))

	if err := registerMetrics(ctx.GetMetricsRegistry()); err != nil {
		return fmt.Errorf("registering metrics: %v", err)
	}
	// Zero series, so rates and alerts see them before the first event.
	storeErrors.WithLabelValues(h.Store.Type, h.Store.Fail)
	refused.WithLabelValues(reasonLimit)

	key, err := h.Store.poolKey(h.Count, h.window)
	if err != nil {
		return err
	}
	val, _, err := stores.LoadOrNew(key, func() (caddy.Destructor, error) {
		return h.Store.open(h.timeout)
	})
	if err != nil {
		return fmt.Errorf("opening %s store: %v", h.Store.Type, err)
	}
	h.poolKey, h.pooled = key, true
	h.backend = val.(*backend)
	h.limiter = limiter.New(h.backend.store, limiter.Rate{
		Period: h.window,
		Limit:  int64(h.Count),
	})
	return nil
}

// Validate checks the provisioned configuration.
func (h *Handler) Validate() error {
	if h.Count < 1 {
		return fmt.Errorf("count must be at least 1, got %d", h.Count)
	}
	if h.window < time.Second || h.window%time.Second != 0 {
		return fmt.Errorf("window must be a whole number of seconds, at least 1s, got %s", h.window)
	}
	for _, c := range h.PolicyName {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return fmt.Errorf("policy name %q must be printable ASCII without '\"' or '\\'", h.PolicyName)
		}
	}
	return h.Store.validate()
}

// Cleanup releases this configuration's hold on the store; the last
// configuration to let go of it closes it.
func (h *Handler) Cleanup() error {
	if !h.pooled {
		return nil
	}
	h.pooled = false
	if _, err := stores.Delete(h.poolKey); err != nil {
		return fmt.Errorf("closing %s store: %v", h.Store.Type, err)
	}
	return nil
}

// ServeHTTP counts the request against its client IP and either passes it
// on or refuses it with a bare 429.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	// Set first, so that every response carries it: refusals, store
	// failures, and whatever the rest of the chain answers, errors included.
	w.Header().Set("RateLimit-Policy", h.policyHeader)

	lctx, err := h.take(r.Context(), clientIP(r))
	if err != nil {
		// A client that went away is not a store failure.
		if r.Context().Err() == nil {
			h.storeFailed(err)
		}
		if h.failClosed {
			// Written here rather than returned as a caddyhttp.Error: an
			// outage must not log one error per request, and the answer
			// stays bare whatever handle_errors routes the site has.
			refused.WithLabelValues(reasonStoreUnavailable).Inc()
			w.WriteHeader(http.StatusServiceUnavailable)
			return nil
		}
		return next.ServeHTTP(w, r)
	}

	if lctx.Reached {
		refused.WithLabelValues(reasonLimit).Inc()
		w.Header().Set("Retry-After", strconv.FormatInt(retryAfter(lctx.Reset, time.Now(), h.window), 10))
		w.WriteHeader(http.StatusTooManyRequests)
		return nil
	}
	return next.ServeHTTP(w, r)
}

// take counts one request for key. A remote store gets at most the
// configured timeout to answer, so an unreachable Redis never holds up a
// request for longer than that.
func (h *Handler) take(ctx context.Context, key string) (limiter.Context, error) {
	if !h.backend.remote {
		return h.limiter.Get(ctx, key)
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	return h.limiter.Get(ctx, key)
}

// storeFailed counts a store failure and logs it, at most once per
// warnInterval for each store, saying how many went unlogged since.
func (h *Handler) storeFailed(err error) {
	storeErrors.WithLabelValues(h.Store.Type, h.Store.Fail).Inc()
	suppressed, ok := h.backend.warnDue(time.Now())
	if !ok {
		return
	}
	msg := "rate limit store unavailable; serving requests without a limit"
	if h.failClosed {
		msg = "rate limit store unavailable; refusing requests with 503"
	}
	h.logger.Warn(msg,
		zap.String("store", h.Store.Type),
		zap.String("addr", h.backend.addr),
		zap.Duration("timeout", h.timeout),
		zap.Int64("suppressed", suppressed),
		// Not zap.Error: the limiter wraps errors with pkg/errors, and
		// zap would add their stack trace to every warning.
		zap.String("error", err.Error()))
}

// clientIP returns the client address Caddy determined for r (which honours
// the server's trusted_proxies), or else the host of r.RemoteAddr, in
// canonical form so that one address always makes one key.
func clientIP(r *http.Request) string {
	if ip, ok := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string); ok && ip != "" {
		return canonicalIP(ip)
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return canonicalIP(host)
}

// canonicalIP renders s in netip's canonical form, IPv4-mapped IPv6 as
// IPv4 and without a zone; anything that does not parse is used as is.
func canonicalIP(s string) string {
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return s
	}
	return addr.Unmap().WithZone("").String()
}

// retryAfter returns the whole seconds from now until the window that ends
// at reset (Unix seconds, rounded down by the store) is over. It rounds up,
// so that a client that waits that long finds the window over, and keeps
// the result between 1 and the window length.
func retryAfter(reset int64, now time.Time, window time.Duration) int64 {
	secs := reset + 1 - now.Unix()
	if most := int64((window + time.Second - 1) / time.Second); secs > most {
		secs = most
	}
	if secs < 1 {
		secs = 1
	}
	return secs
}

// Interface guards
var (
	_ caddy.Provisioner           = (*Handler)(nil)
	_ caddy.Validator             = (*Handler)(nil)
	_ caddy.CleanerUpper          = (*Handler)(nil)
	_ caddyhttp.MiddlewareHandler = (*Handler)(nil)
)
