package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// testPrefix returns a key prefix no other test uses, so that tests never
// share counters through the package pool or Redis.
func testPrefix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "sdr_rl_test_" + hex.EncodeToString(b)
}

// provision provisions and validates h as Caddy would, and cleans it up
// when the test ends.
func provision(t *testing.T, h *Handler) *Handler {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	if err := h.Provision(ctx); err != nil {
		_ = h.Cleanup()
		t.Fatalf("provisioning: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Cleanup(); err != nil {
			t.Errorf("cleaning up: %v", err)
		}
	})
	if err := h.Validate(); err != nil {
		t.Fatalf("validating: %v", err)
	}
	return h
}

// okNext answers 200 "ok" and counts its calls.
type okNext struct {
	mu    sync.Mutex
	calls int
}

func (n *okNext) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	n.mu.Lock()
	n.calls++
	n.mu.Unlock()
	_, err := w.Write([]byte("ok"))
	return err
}

func (n *okNext) count() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls
}

// request builds a request as Caddy's server hands it to handlers: with
// the client IP it determined in the vars table. An empty clientIP leaves
// the vars table out, as outside a Caddy server.
func request(clientIP, remoteAddr string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/v1/extract/pro_net/profile.info", nil)
	if remoteAddr != "" {
		r.RemoteAddr = remoteAddr
	}
	if clientIP != "" {
		vars := map[string]any{caddyhttp.ClientIPVarKey: clientIP}
		r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
	}
	return r
}

// serve runs one request through h and returns the recorded response and
// the handler's error.
func serve(h *Handler, next caddyhttp.Handler, r *http.Request) (*httptest.ResponseRecorder, error) {
	w := httptest.NewRecorder()
	err := h.ServeHTTP(w, r, next)
	return w, err
}

func counterValue(t *testing.T, labels ...string) float64 {
	t.Helper()
	return vecValue(t, storeErrors, labels...)
}

func vecValue(t *testing.T, v *prometheus.CounterVec, labels ...string) float64 {
	t.Helper()
	var m dto.Metric
	if err := v.WithLabelValues(labels...).(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestProvisionDefaults(t *testing.T) {
	h := provision(t, &Handler{Store: &StoreConfig{Prefix: testPrefix(t)}})
	if h.Count != 100 || time.Duration(h.Window) != 60*time.Second || h.PolicyName != "default" {
		t.Errorf("defaults: count %d, window %s, policy %q", h.Count, time.Duration(h.Window), h.PolicyName)
	}
	if h.Store.Type != StoreMemory || h.Store.Fail != FailOpen || time.Duration(h.Store.Timeout) != 100*time.Millisecond {
		t.Errorf("store defaults: %+v", *h.Store)
	}
	if want := `"default";q=100;w=60`; h.policyHeader != want {
		t.Errorf("policy header %q, want %q", h.policyHeader, want)
	}

	bare := provision(t, new(Handler))
	if bare.Store == nil || bare.Store.Prefix != "sdr_rl" {
		t.Errorf("store not defaulted: %+v", bare.Store)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		h       Handler
		wantErr bool
	}{
		{name: "defaults", h: Handler{}},
		{name: "explicit", h: Handler{Count: 5, Window: caddy.Duration(2 * time.Second), PolicyName: "burst-1"}},
		{name: "negative count", h: Handler{Count: -1}, wantErr: true},
		{name: "sub-second window", h: Handler{Window: caddy.Duration(1500 * time.Millisecond)}, wantErr: true},
		{name: "window under a second", h: Handler{Window: caddy.Duration(500 * time.Millisecond)}, wantErr: true},
		{name: "negative window", h: Handler{Window: caddy.Duration(-time.Second)}, wantErr: true},
		{name: "quote in policy", h: Handler{PolicyName: `a"b`}, wantErr: true},
		{name: "backslash in policy", h: Handler{PolicyName: `a\b`}, wantErr: true},
		{name: "control in policy", h: Handler{PolicyName: "a\nb"}, wantErr: true},
		{name: "unknown fail mode", h: Handler{Store: &StoreConfig{Fail: "maybe"}}, wantErr: true},
		{name: "negative timeout", h: Handler{Store: &StoreConfig{Timeout: caddy.Duration(-time.Millisecond)}}, wantErr: true},
		{name: "memory with url", h: Handler{Store: &StoreConfig{URL: "redis://127.0.0.1:6379"}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.h
			ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
			defer cancel()
			if h.Store == nil {
				h.Store = new(StoreConfig)
			}
			h.Store.Prefix = testPrefix(t)
			err := h.Provision(ctx)
			if err == nil {
				err = h.Validate()
			}
			if cerr := h.Cleanup(); cerr != nil {
				t.Errorf("cleaning up: %v", cerr)
			}
			if (err != nil) != tt.wantErr {
				t.Errorf("got error %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestProvisionErrors(t *testing.T) {
	tests := []struct {
		name  string
		store StoreConfig
	}{
		{name: "unknown type", store: StoreConfig{Type: "etcd"}},
		{name: "redis without url", store: StoreConfig{Type: StoreRedis}},
		{name: "redis bad scheme", store: StoreConfig{Type: StoreRedis, URL: "http://127.0.0.1:6379"}},
		{name: "redis bad url", store: StoreConfig{Type: StoreRedis, URL: "redis://:secret@[::1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := tt.store
			h := Handler{Store: &store}
			ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
			defer cancel()
			err := h.Provision(ctx)
			if cerr := h.Cleanup(); cerr != nil {
				t.Errorf("cleaning up: %v", cerr)
			}
			if err == nil {
				t.Fatal("provisioned without error")
			}
			if store.URL != "" && strings.Contains(err.Error(), "secret") {
				t.Errorf("error leaks the url's password: %v", err)
			}
		})
	}
}

func TestServeHTTPLimit(t *testing.T) {
	h := provision(t, &Handler{
		Count:      3,
		Window:     caddy.Duration(60 * time.Second),
		PolicyName: "burst",
		Store:      &StoreConfig{Prefix: testPrefix(t)},
	})
	const policy = `"burst";q=3;w=60`
	next := new(okNext)
	refusedBefore := vecValue(t, refused, reasonLimit)

	for i := 1; i <= 5; i++ {
		w, err := serve(h, next, request("203.0.113.7", ""))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got := w.Header().Get("RateLimit-Policy"); got != policy {
			t.Errorf("request %d: RateLimit-Policy %q, want %q", i, got, policy)
		}
		if i <= 3 {
			if w.Code != http.StatusOK || w.Body.String() != "ok" || w.Header().Get("Retry-After") != "" {
				t.Errorf("request %d: got %d %q Retry-After %q, want 200 from next",
					i, w.Code, w.Body.String(), w.Header().Get("Retry-After"))
			}
			continue
		}
		if w.Code != http.StatusTooManyRequests {
			t.Fatalf("request %d: status %d, want 429", i, w.Code)
		}
		if w.Body.Len() != 0 {
			t.Errorf("request %d: 429 has a body: %q", i, w.Body.String())
		}
		if ct := w.Header().Get("Content-Type"); ct != "" {
			t.Errorf("request %d: 429 has Content-Type %q", i, ct)
		}
		secs, err := strconv.Atoi(w.Header().Get("Retry-After"))
		if err != nil || secs < 1 || secs > 60 {
			t.Errorf("request %d: Retry-After %q, want 1..60 seconds", i, w.Header().Get("Retry-After"))
		}
	}
	if got := next.count(); got != 3 {
		t.Errorf("next called %d times, want 3", got)
	}
	if got := vecValue(t, refused, reasonLimit) - refusedBefore; got != 2 {
		t.Errorf("refusals counted %v, want 2", got)
	}
}

func TestServeHTTPPolicyHeaderOnDownstreamError(t *testing.T) {
	h := provision(t, &Handler{Store: &StoreConfig{Prefix: testPrefix(t)}})
	failing := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		return caddyhttp.Error(http.StatusBadGateway, errors.New("upstream down"))
	})
	w, err := serve(h, failing, request("198.51.100.1", ""))
	var herr caddyhttp.HandlerError
	if !errors.As(err, &herr) || herr.StatusCode != http.StatusBadGateway {
		t.Fatalf("error %v, want the downstream 502 passed through unchanged", err)
	}
	if got, want := w.Header().Get("RateLimit-Policy"), `"default";q=100;w=60`; got != want {
		t.Errorf("RateLimit-Policy %q, want %q", got, want)
	}
}

func TestServeHTTPClientsAreIndependent(t *testing.T) {
	h := provision(t, &Handler{Count: 1, Store: &StoreConfig{Prefix: testPrefix(t)}})
	next := new(okNext)

	steps := []struct {
		name       string
		clientIP   string
		remoteAddr string
		want       int
	}{
		{name: "first client", clientIP: "192.0.2.1", want: 200},
		{name: "first client again", clientIP: "192.0.2.1", want: 429},
		{name: "second client", clientIP: "192.0.2.2", want: 200},
		{name: "ipv6 client", clientIP: "2001:db8::1", want: 200},
		{name: "ipv6 client, other spelling", clientIP: "2001:0db8:0:0::1", want: 429},
		{name: "ipv4-mapped first client", clientIP: "::ffff:192.0.2.1", want: 429},
		// The var wins over the connection: behind a trusted proxy every
		// request comes from the proxy's address.
		{name: "var over remote addr", clientIP: "192.0.2.3", remoteAddr: "192.0.2.1:4000", want: 200},
		{name: "same proxy, other client", clientIP: "192.0.2.4", remoteAddr: "192.0.2.1:4000", want: 200},
		// Outside a Caddy server there is no var: the remote address counts.
		{name: "no var, new remote", remoteAddr: "192.0.2.9:1234", want: 200},
		{name: "no var, same remote other port", remoteAddr: "192.0.2.9:5678", want: 429},
	}
	for _, s := range steps {
		w, err := serve(h, next, request(s.clientIP, s.remoteAddr))
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if w.Code != s.want {
			t.Errorf("%s: status %d, want %d", s.name, w.Code, s.want)
		}
	}
}

func TestClientIP(t *testing.T) {
	tests := []struct {
		name       string
		clientIP   string
		remoteAddr string
		want       string
	}{
		{name: "var", clientIP: "203.0.113.5", remoteAddr: "10.0.0.1:80", want: "203.0.113.5"},
		{name: "var ipv6 canonical", clientIP: "2001:DB8:0::5", want: "2001:db8::5"},
		{name: "var ipv4-mapped", clientIP: "::ffff:203.0.113.5", want: "203.0.113.5"},
		{name: "var with zone", clientIP: "fe80::1%eth0", want: "fe80::1"},
		{name: "remote addr", remoteAddr: "10.0.0.1:80", want: "10.0.0.1"},
		{name: "remote addr ipv6", remoteAddr: "[2001:db8::7]:443", want: "2001:db8::7"},
		{name: "remote addr without port", remoteAddr: "10.0.0.2", want: "10.0.0.2"},
		{name: "unparsable remote", remoteAddr: "@unix", want: "@unix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clientIP(request(tt.clientIP, tt.remoteAddr)); got != tt.want {
				t.Errorf("clientIP = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	base := time.Unix(1_000_000, 0)
	tests := []struct {
		name   string
		reset  int64 // the store's window end, rounded down to the second
		now    time.Time
		window time.Duration
		want   int64
	}{
		{name: "whole seconds left", reset: 1_000_030, now: base, window: time.Minute, want: 31},
		{name: "window end rounded down", reset: 1_000_030, now: base.Add(900 * time.Millisecond), window: time.Minute, want: 31},
		{name: "capped at the window", reset: 1_000_060, now: base, window: time.Minute, want: 60},
		{name: "about to reset", reset: 1_000_000, now: base.Add(999 * time.Millisecond), window: time.Minute, want: 1},
		{name: "already past", reset: 999_990, now: base, window: time.Minute, want: 1},
		{name: "one-second window", reset: 1_000_001, now: base, window: time.Second, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryAfter(tt.reset, tt.now, tt.window); got != tt.want {
				t.Errorf("retryAfter = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestServeHTTPWindowResets(t *testing.T) {
	h := provision(t, &Handler{Count: 2, Window: caddy.Duration(time.Second), Store: &StoreConfig{Prefix: testPrefix(t)}})
	next := new(okNext)
	codes := func() []int {
		var got []int
		for range 3 {
			w, err := serve(h, next, request("192.0.2.50", ""))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, w.Code)
		}
		return got
	}
	first := codes()
	if first[0] != 200 || first[1] != 200 || first[2] != 429 {
		t.Fatalf("first window: %v, want [200 200 429]", first)
	}
	time.Sleep(1100 * time.Millisecond)
	second := codes()
	if second[0] != 200 || second[1] != 200 || second[2] != 429 {
		t.Errorf("after the window: %v, want [200 200 429]", second)
	}
}

func TestServeHTTPConcurrent(t *testing.T) {
	const count, clients, perClient = 50, 4, 80
	h := provision(t, &Handler{Count: count, Store: &StoreConfig{Prefix: testPrefix(t)}})
	next := new(okNext)

	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := map[string]int{}
	for c := range clients {
		ip := "198.51.100." + strconv.Itoa(10+c)
		for range perClient {
			wg.Go(func() {
				w, err := serve(h, next, request(ip, ""))
				if err != nil {
					t.Error(err)
					return
				}
				if w.Code == http.StatusOK {
					mu.Lock()
					allowed[ip]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	for ip, n := range allowed {
		if n != count {
			t.Errorf("%s: %d requests allowed, want exactly %d", ip, n, count)
		}
	}
}

// TestReloadKeepsCounters provisions the next configuration before cleaning
// up the old one, in Caddy's reload order, and checks that clients keep
// their counts.
func TestReloadKeepsCounters(t *testing.T) {
	prefix := testPrefix(t)
	cfg := func(count int) *Handler {
		return &Handler{Count: count, Window: caddy.Duration(time.Minute), Store: &StoreConfig{Prefix: prefix}}
	}
	next := new(okNext)
	ip := "203.0.113.99"

	oldH := provision(t, cfg(2))
	for range 2 {
		if w, _ := serve(oldH, next, request(ip, "")); w.Code != 200 {
			t.Fatalf("old config: status %d, want 200", w.Code)
		}
	}

	newH := provision(t, cfg(2))
	if err := oldH.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if w, _ := serve(newH, next, request(ip, "")); w.Code != http.StatusTooManyRequests {
		t.Errorf("after reload: status %d, want 429 (counter kept)", w.Code)
	}
	if n, ok := stores.References(newH.poolKey); !ok || n != 1 {
		t.Errorf("pool references after the old config's cleanup: %d, %v; want 1", n, ok)
	}

	// A different count is a different policy: it starts from zero.
	changed := provision(t, cfg(3))
	if w, _ := serve(changed, next, request(ip, "")); w.Code != 200 {
		t.Errorf("changed count: status %d, want 200", w.Code)
	}

	key := newH.poolKey
	if err := newH.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if err := newH.Cleanup(); err != nil {
		t.Fatalf("second cleanup: %v", err)
	}
	if _, ok := stores.References(key); ok {
		t.Error("store still pooled after its last user cleaned up")
	}
}

// unreachableRedis returns the URL of a port nothing listens on.
func unreachableRedis(t *testing.T) string {
	t.Helper()
	return "redis://127.0.0.1:1/0"
}

// stalledRedis returns the URL of a server that accepts connections and
// never answers, like a Redis that hangs or a black-holed route.
func stalledRedis(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "redis://" + ln.Addr().String() + "/0"
}

func TestRedisUnavailable(t *testing.T) {
	const timeout = 100 * time.Millisecond
	// Generous against a slow CI machine, far below go-redis's own 5s
	// timeouts and dial retries, which are what a missing bound would show.
	const budget = timeout + 400*time.Millisecond

	tests := []struct {
		name     string
		url      func(*testing.T) string
		fail     string
		wantCode int
	}{
		{name: "refused, fail open", url: unreachableRedis, fail: FailOpen, wantCode: 200},
		{name: "refused, fail closed", url: unreachableRedis, fail: FailClosed, wantCode: 503},
		{name: "stalled, fail open", url: stalledRedis, fail: FailOpen, wantCode: 200},
		{name: "stalled, fail closed", url: stalledRedis, fail: FailClosed, wantCode: 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			h := provision(t, &Handler{
				Count: 1,
				Store: &StoreConfig{
					Type:    StoreRedis,
					URL:     tt.url(t),
					Fail:    tt.fail,
					Prefix:  testPrefix(t),
					Timeout: caddy.Duration(timeout),
				},
			})
			if took := time.Since(start); took > 3*budget {
				t.Errorf("provisioning took %s with Redis unavailable", took)
			}
			before := counterValue(t, StoreRedis, tt.fail)
			refusedBefore := vecValue(t, refused, reasonStoreUnavailable)
			next := new(okNext)

			// Count is 1, but nothing is counted while the store is down:
			// every request gets the fail-mode answer.
			for i := range 3 {
				start := time.Now()
				w, err := serve(h, next, request("192.0.2.77", ""))
				took := time.Since(start)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if took > budget {
					t.Errorf("request %d took %s, want under %s", i, took, budget)
				}
				if w.Code != tt.wantCode {
					t.Errorf("request %d: status %d, want %d", i, w.Code, tt.wantCode)
				}
				if got := w.Header().Get("RateLimit-Policy"); got != `"default";q=1;w=60` {
					t.Errorf("request %d: RateLimit-Policy %q", i, got)
				}
				if tt.wantCode == 503 && w.Body.Len() != 0 {
					t.Errorf("request %d: 503 has a body: %q", i, w.Body.String())
				}
			}
			wantCalls := 0
			if tt.fail == FailOpen {
				wantCalls = 3
			}
			if got := next.count(); got != wantCalls {
				t.Errorf("next called %d times, want %d", got, wantCalls)
			}
			if got := counterValue(t, StoreRedis, tt.fail) - before; got != 3 {
				t.Errorf("store error counter rose by %v, want 3", got)
			}
			wantRefused := 0.0
			if tt.fail == FailClosed {
				wantRefused = 3
			}
			if got := vecValue(t, refused, reasonStoreUnavailable) - refusedBefore; got != wantRefused {
				t.Errorf("store_unavailable refusals rose by %v, want %v", got, wantRefused)
			}
		})
	}
}

func TestStoreFailureWarningsAreThrottled(t *testing.T) {
	h := provision(t, &Handler{Store: &StoreConfig{
		Type:    StoreRedis,
		URL:     unreachableRedis(t),
		Prefix:  testPrefix(t),
		Timeout: caddy.Duration(50 * time.Millisecond),
	}})
	core, logs := observer.New(zap.WarnLevel)
	h.logger = zap.New(core)
	next := new(okNext)

	for range 20 {
		if _, err := serve(h, next, request("192.0.2.88", "")); err != nil {
			t.Fatal(err)
		}
	}
	if n := logs.Len(); n != 1 {
		t.Fatalf("%d warnings for 20 failures within %s, want 1", n, warnInterval)
	}
	entry := logs.All()[0]
	fields := entry.ContextMap()
	if fields["addr"] != "127.0.0.1:1" || fields["store"] != "redis" || fields["error"] == nil {
		t.Errorf("warning fields: %v", fields)
	}
	if _, ok := fields["errorVerbose"]; ok {
		t.Errorf("warning carries a stack trace: %v", fields)
	}

	// Once the interval has passed, the next failure is logged with the
	// number that were not.
	h.backend.lastWarn.Store(time.Now().Add(-warnInterval).UnixNano())
	if _, err := serve(h, next, request("192.0.2.88", "")); err != nil {
		t.Fatal(err)
	}
	if n := logs.Len(); n != 2 {
		t.Fatalf("%d warnings after the interval, want 2", n)
	}
	if got := logs.All()[1].ContextMap()["suppressed"]; got != int64(19) {
		t.Errorf("suppressed = %v, want 19", got)
	}
}

func TestWarnDue(t *testing.T) {
	var b backend
	now := time.Unix(1_000_000, 0)
	steps := []struct {
		at             time.Duration
		want           bool
		wantSuppressed int64
	}{
		{at: 0, want: true},
		{at: time.Second, want: false},
		{at: warnInterval - time.Nanosecond, want: false},
		{at: warnInterval, want: true, wantSuppressed: 2},
		{at: warnInterval + time.Second, want: false},
	}
	for i, s := range steps {
		suppressed, ok := b.warnDue(now.Add(s.at))
		if ok != s.want || suppressed != s.wantSuppressed {
			t.Errorf("step %d: warnDue = %d, %v; want %d, %v", i, suppressed, ok, s.wantSuppressed, s.want)
		}
	}
}

func TestRegisterMetricsTwice(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	for i := range 2 {
		if err := registerMetrics(reg); err != nil {
			t.Fatalf("registration %d: %v", i, err)
		}
	}
	if err := registerMetrics(nil); err != nil {
		t.Fatalf("nil registry: %v", err)
	}
}
