package ratelimit

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"
	limiterredis "github.com/ulule/limiter/v3/drivers/store/redis"
)

// Store types.
const (
	// StoreMemory keeps the counters in this process: each node has its own
	// limit.
	StoreMemory = "memory"
	// StoreRedis keeps the counters in Redis: every node using the same
	// Redis and prefix shares one limit.
	StoreRedis = "redis"
)

// Fail modes: what a handler does when its store cannot answer in time.
const (
	// FailOpen serves the request as if it were under the limit.
	FailOpen = "open"
	// FailClosed refuses the request with a bare 503.
	FailClosed = "closed"
)

const (
	defaultPrefix  = "sdr_rl"
	defaultTimeout = 100 * time.Millisecond
)

// warnInterval is the least time between two warnings about one store
// being unavailable.
var warnInterval = 10 * time.Second

// StoreConfig says where the rate-limit counters live.
type StoreConfig struct {
	// Type is "memory" (counters in this process, one limit per node) or
	// "redis" (counters in Redis, one limit shared by every node).
	// Default: "memory".
	Type string `json:"type,omitempty"`

	// URL locates the Redis server, in the form accepted by go-redis's
	// ParseURL, for example "redis://:password@127.0.0.1:6379/0". Failed
	// commands are not retried unless the URL sets max_retries. Required
	// for, and only used by, the redis store.
	URL string `json:"url,omitempty"`

	// Fail says what to do when the store does not answer within Timeout:
	// "open" serves the request without counting it, "closed" refuses it
	// with a bare 503. Either way the failure is counted in the
	// sdr_ip_rate_limit_store_errors_total metric and logged as a warning at
	// most once every ten seconds. Default: "open".
	Fail string `json:"fail,omitempty"`

	// Prefix starts every counter's key ("<prefix>:<client ip>"). Handlers
	// with the same prefix share counters: in Redis whatever their count and
	// window, in memory when their count and window are also the same.
	// Default: "sdr_rl".
	Prefix string `json:"prefix,omitempty"`

	// Timeout bounds each call to a redis store; the memory store does not
	// wait. Default: 100ms.
	Timeout caddy.Duration `json:"timeout,omitempty"`
}

func (s *StoreConfig) setDefaults() {
	if s.Type == "" {
		s.Type = StoreMemory
	}
	if s.Fail == "" {
		s.Fail = FailOpen
	}
	if s.Prefix == "" {
		s.Prefix = defaultPrefix
	}
	if s.Timeout == 0 {
		s.Timeout = caddy.Duration(defaultTimeout)
	}
}

func (s *StoreConfig) validate() error {
	switch s.Type {
	case StoreMemory:
		if s.URL != "" {
			return errors.New("the memory store takes no url")
		}
	case StoreRedis:
		if s.URL == "" {
			return errors.New("the redis store needs a url")
		}
	default:
		return fmt.Errorf("unknown store type %q: want %q or %q", s.Type, StoreMemory, StoreRedis)
	}
	if s.Fail != FailOpen && s.Fail != FailClosed {
		return fmt.Errorf("unknown fail mode %q: want %q or %q", s.Fail, FailOpen, FailClosed)
	}
	if s.Timeout <= 0 {
		return fmt.Errorf("timeout must be positive, got %s", time.Duration(s.Timeout))
	}
	return nil
}

// stores holds the open stores, shared by every handler with the same
// poolKey in every live configuration, so that state survives a reload
// (Caddy provisions the new configuration before it cleans up the old one).
var stores = caddy.NewUsagePool()

// poolKey identifies a shared store. Memory counters belong to one (count,
// window, prefix); Redis counters live in Redis, so one client serves every
// handler with the same URL and prefix (the timeout is applied per call, so
// it is not part of the key).
type poolKey struct {
	typ    string
	url    string
	prefix string
	count  int
	window time.Duration
}

func (s *StoreConfig) poolKey(count int, window time.Duration) (poolKey, error) {
	switch s.Type {
	case StoreMemory:
		return poolKey{typ: s.Type, prefix: s.Prefix, count: count, window: window}, nil
	case StoreRedis:
		return poolKey{typ: s.Type, url: s.URL, prefix: s.Prefix}, nil
	}
	return poolKey{}, fmt.Errorf("unknown store type %q: want %q or %q", s.Type, StoreMemory, StoreRedis)
}

// open creates the store. It does no network I/O that could outlast
// timeout: an unreachable Redis does not stop a configuration from loading.
func (s *StoreConfig) open(timeout time.Duration) (*backend, error) {
	switch s.Type {
	case StoreMemory:
		return &backend{
			addr: "memory",
			store: memory.NewStoreWithOptions(limiter.StoreOptions{
				Prefix:          s.Prefix,
				CleanUpInterval: limiter.DefaultCleanUpInterval,
			}),
		}, nil
	case StoreRedis:
		if s.URL == "" {
			return nil, errors.New("the redis store needs a url")
		}
		opts, err := redis.ParseURL(s.URL)
		if err != nil {
			return nil, fmt.Errorf("parsing redis url: %v", redactURLError(err, s.URL))
		}
		// Without this go-redis ignores context deadlines on socket reads
		// and writes, and a stalled Redis would hold requests for its own
		// 5s read timeout instead of ours.
		opts.ContextTimeoutEnabled = true
		// By default go-redis redials a refused connection five times 100ms
		// apart and retries a failed command three times with backoff: a
		// down Redis would then cost every request the whole timeout. Fail
		// at once instead (the pool probes in the background, and the next
		// request tries again) unless the URL asks for max_retries.
		opts.DialerRetries = 1
		if opts.MaxRetries == 0 {
			opts.MaxRetries = -1
		}
		client := redis.NewClient(opts)
		store, err := limiterredis.NewStoreWithOptions(scriptClient{client, timeout}, limiter.StoreOptions{
			Prefix: s.Prefix,
		})
		if err != nil {
			_ = client.Close()
			return nil, fmt.Errorf("creating redis limiter: %v", err)
		}
		return &backend{store: store, client: client, remote: true, addr: opts.Addr}, nil
	}
	return nil, fmt.Errorf("unknown store type %q: want %q or %q", s.Type, StoreMemory, StoreRedis)
}

// redactURLError keeps a URL, which may hold a password, out of an error
// message (url.Parse quotes its whole input).
func redactURLError(err error, url string) error {
	return errors.New(strings.ReplaceAll(err.Error(), url, "<url>"))
}

// backend is one open store, shared through stores.
type backend struct {
	store  limiter.Store
	client *redis.Client // nil for memory
	remote bool          // calls may block: bound them with the timeout
	addr   string        // for logs; never the URL, which may hold a password

	lastWarn   atomic.Int64 // Unix nanoseconds of the last warning
	suppressed atomic.Int64 // failures not logged since then
}

// Destruct closes the Redis client, if any, once no configuration uses it.
func (b *backend) Destruct() error {
	if b.client != nil {
		return b.client.Close()
	}
	return nil
}

// warnDue reports whether a store failure at now should be logged, and how
// many failures went unlogged since the last warning. At most one caller
// per warnInterval gets true.
func (b *backend) warnDue(now time.Time) (int64, bool) {
	last := b.lastWarn.Load()
	if (last == 0 || now.UnixNano()-last >= int64(warnInterval)) && b.lastWarn.CompareAndSwap(last, now.UnixNano()) {
		return b.suppressed.Swap(0), true
	}
	b.suppressed.Add(1)
	return 0, false
}

// scriptClient adapts a go-redis client to the limiter's redis driver.
//
// The driver loads its two Lua scripts in NewStoreWithOptions, with no
// deadline, and gives up if Redis cannot be reached; it loads them again
// whenever Redis answers NOSCRIPT. scriptClient bounds the load with the
// handler's timeout and, if it fails, returns the script's SHA-1 anyway (a
// script's SHA is its digest, so that is what Redis would have said). The
// store can therefore be created while Redis is down; the first call that
// finds Redis up gets NOSCRIPT, and the driver then loads the scripts.
type scriptClient struct {
	*redis.Client
	timeout time.Duration
}

// ScriptLoad loads script, bounded by the timeout, and answers its SHA-1
// even if Redis could not be reached.
func (c scriptClient) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if cmd := c.Client.ScriptLoad(ctx, script); cmd.Err() == nil {
		return cmd
	}
	sum := sha1.Sum([]byte(script))
	return redis.NewStringResult(hex.EncodeToString(sum[:]), nil)
}

// Interface guards
var (
	_ caddy.Destructor    = (*backend)(nil)
	_ limiterredis.Client = scriptClient{}
)
