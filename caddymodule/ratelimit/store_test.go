package ratelimit

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"socialrouter/internal/testenv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/redis/go-redis/v9"
)

// testRedisURL returns SDR_TEST_REDIS_URL, or skips the test when it is
// unset.
func testRedisURL(t *testing.T) string {
	t.Helper()
	return testenv.RedisURL(t, "the test against a real Redis")
}

// nodeURL gives rawURL a client name, so that each simulated node gets its
// own pool entry and its own go-redis client, sharing only the Redis server.
func nodeURL(t *testing.T, rawURL, node string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("client_name", node)
	u.RawQuery = q.Encode()
	return u.String()
}

// redisClient opens a plain client on rawURL and, when the test ends,
// deletes every key under prefix.
func redisClient(t *testing.T, rawURL, prefix string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := c.Keys(ctx, prefix+":*").Result()
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
		c.Close()
	})
	return c
}

func redisHandler(t *testing.T, rawURL, prefix string, count int, window time.Duration) *Handler {
	t.Helper()
	return provision(t, &Handler{
		Count:  count,
		Window: caddy.Duration(window),
		Store:  &StoreConfig{Type: StoreRedis, URL: rawURL, Prefix: prefix, Fail: FailClosed},
	})
}

// TestRedisSharedLimit stands two nodes on one Redis: they share one limit.
func TestRedisSharedLimit(t *testing.T) {
	base := testRedisURL(t)
	prefix := testPrefix(t)
	rdb := redisClient(t, base, prefix)

	nodeA := redisHandler(t, nodeURL(t, base, "sdr-test-a"), prefix, 3, time.Minute)
	nodeB := redisHandler(t, nodeURL(t, base, "sdr-test-b"), prefix, 3, time.Minute)
	if nodeA.backend == nodeB.backend {
		t.Fatal("both nodes got the same pooled client; the test would not prove sharing through Redis")
	}
	next := new(okNext)
	const ip = "203.0.113.21"

	steps := []struct {
		node *Handler
		name string
		ip   string
		want int
	}{
		{nodeA, "A", ip, 200},
		{nodeB, "B", ip, 200},
		{nodeA, "A", ip, 200},
		{nodeB, "B", ip, 429},
		{nodeA, "A", ip, 429},
		{nodeB, "B", "203.0.113.22", 200},
	}
	for i, s := range steps {
		w, err := serve(s.node, next, request(s.ip, ""))
		if err != nil {
			t.Fatalf("step %d (node %s): %v", i, s.name, err)
		}
		if w.Code != s.want {
			t.Errorf("step %d (node %s, %s): status %d, want %d", i, s.name, s.ip, w.Code, s.want)
		}
		if got := w.Header().Get("RateLimit-Policy"); got != `"default";q=3;w=60` {
			t.Errorf("step %d: RateLimit-Policy %q", i, got)
		}
		if s.want == 429 {
			if w.Body.Len() != 0 {
				t.Errorf("step %d: 429 has a body: %q", i, w.Body.String())
			}
			if secs, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || secs < 1 || secs > 60 {
				t.Errorf("step %d: Retry-After %q, want 1..60", i, w.Header().Get("Retry-After"))
			}
		}
	}

	ctx := context.Background()
	key := prefix + ":" + ip
	if n, err := rdb.Get(ctx, key).Int(); err != nil || n != 5 {
		t.Errorf("redis %s = %d, %v; want 5", key, n, err)
	}
	if ttl, err := rdb.PTTL(ctx, key).Result(); err != nil || ttl <= 0 || ttl > time.Minute {
		t.Errorf("redis %s TTL = %s, %v; want within the window", key, ttl, err)
	}
}

func TestRedisWindowResets(t *testing.T) {
	base := testRedisURL(t)
	prefix := testPrefix(t)
	redisClient(t, base, prefix)
	h := redisHandler(t, base, prefix, 1, time.Second)
	next := new(okNext)

	code := func() int {
		w, err := serve(h, next, request("192.0.2.31", ""))
		if err != nil {
			t.Fatal(err)
		}
		return w.Code
	}
	if c1, c2 := code(), code(); c1 != 200 || c2 != 429 {
		t.Fatalf("first window: %d %d, want 200 429", c1, c2)
	}
	time.Sleep(1100 * time.Millisecond)
	if c := code(); c != 200 {
		t.Errorf("after the window: %d, want 200", c)
	}
}

// TestRedisReload checks the reload order against Redis: the new
// configuration shares the old one's client, and the last one out closes it.
func TestRedisReload(t *testing.T) {
	base := testRedisURL(t)
	prefix := testPrefix(t)
	redisClient(t, base, prefix)
	next := new(okNext)

	oldH := redisHandler(t, base, prefix, 1, time.Minute)
	if w, _ := serve(oldH, next, request("192.0.2.41", "")); w.Code != 200 {
		t.Fatalf("old config: %d, want 200", w.Code)
	}
	newH := redisHandler(t, base, prefix, 1, time.Minute)
	if newH.backend != oldH.backend {
		t.Error("the new config opened a second client instead of sharing")
	}
	if err := oldH.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if w, _ := serve(newH, next, request("192.0.2.41", "")); w.Code != 429 {
		t.Errorf("after reload: %d, want 429", w.Code)
	}
	client := newH.backend.client
	if err := newH.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if err := client.Ping(context.Background()).Err(); err != redis.ErrClosed {
		t.Errorf("client after the last cleanup: %v, want %v", err, redis.ErrClosed)
	}
}

// togglingProxy forwards TCP connections to target while up, and hangs up
// on them while down: a Redis that comes and goes.
type togglingProxy struct {
	ln     net.Listener
	target string
	up     atomic.Bool
	wg     sync.WaitGroup
}

func newTogglingProxy(t *testing.T, target string) *togglingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &togglingProxy{ln: ln, target: target}
	var mu sync.Mutex
	var open []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		open = append(open, c)
		mu.Unlock()
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !p.up.Load() {
				c.Close()
				continue
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			track(c)
			track(u)
			p.wg.Add(2)
			go func() { defer p.wg.Done(); io.Copy(u, c); u.Close() }()
			go func() { defer p.wg.Done(); io.Copy(c, u); c.Close() }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// TestRedisDownAtStartup loads the configuration while Redis is down (it
// must load, and serve fail-open), then brings Redis up: the limit applies
// from then on without a reload.
func TestRedisDownAtStartup(t *testing.T) {
	base := testRedisURL(t)
	opts, err := redis.ParseURL(base)
	if err != nil {
		t.Fatal(err)
	}
	prefix := testPrefix(t)
	redisClient(t, base, prefix)

	proxy := newTogglingProxy(t, opts.Addr)
	proxied, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxied.Host = proxy.ln.Addr().String()

	start := time.Now()
	h := provision(t, &Handler{
		Count:  1,
		Window: caddy.Duration(time.Minute),
		Store:  &StoreConfig{Type: StoreRedis, URL: proxied.String(), Prefix: prefix, Fail: FailOpen},
	})
	if took := time.Since(start); took > time.Second {
		t.Errorf("provisioning with Redis down took %s", took)
	}
	next := new(okNext)
	const ip = "192.0.2.51"
	for i := range 3 {
		if w, _ := serve(h, next, request(ip, "")); w.Code != http.StatusOK {
			t.Fatalf("Redis down, request %d: %d, want 200 (fail open)", i, w.Code)
		}
	}

	proxy.up.Store(true)
	// go-redis may still hold back dials for a moment after failures.
	deadline := time.Now().Add(5 * time.Second)
	var codes []int
	for time.Now().Before(deadline) {
		w, _ := serve(h, next, request(ip, ""))
		codes = append(codes, w.Code)
		if w.Code == http.StatusTooManyRequests {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("Redis up: never limited; statuses %v", codes)
}

// TestScriptClientSHA checks the fallback SHA against the one Redis gives.
func TestScriptClientSHA(t *testing.T) {
	base := testRedisURL(t)
	opts, err := redis.ParseURL(base)
	if err != nil {
		t.Fatal(err)
	}
	live := redis.NewClient(opts)
	defer live.Close()
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1})
	defer dead.Close()

	const script = `return redis.call("ping")`
	want, err := live.ScriptLoad(context.Background(), script).Result()
	if err != nil {
		t.Fatal(err)
	}
	got, err := scriptClient{dead, 50 * time.Millisecond}.ScriptLoad(context.Background(), script).Result()
	if err != nil || got != want {
		t.Errorf("fallback SHA %q, %v; Redis says %q", got, err, want)
	}
	got, err = scriptClient{live, time.Second}.ScriptLoad(context.Background(), script).Result()
	if err != nil || got != want {
		t.Errorf("live SHA %q, %v; want %q", got, err, want)
	}
}
