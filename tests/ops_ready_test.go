package tests

import (
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"
)

// tcpProxy forwards a loopback port to a target address; stopping it
// closes the listener and every forwarded connection, as if the database
// went away.
type tcpProxy struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func startProxy(t *testing.T, addr, target string) *tcpProxy {
	t.Helper()
	p := &tcpProxy{addr: addr, target: target}
	p.listen(t)
	t.Cleanup(p.stop)
	return p
}

func (p *tcpProxy) listen(t *testing.T) {
	t.Helper()
	var ln net.Listener
	var err error
	for range 50 { // the port of a stopped proxy may take a moment to free
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("proxy listening on %s: %v", p.addr, err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

func (p *tcpProxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestReadinessWhenPostgresGoesAway: a node on PostgreSQL reports ready,
// then not ready (503 not_ready, store unavailable) once the database is
// unreachable, while liveness stays 200, and ready again when it is back.
// The gateway reaches PostgreSQL through a proxy the test stops: the store
// refuses to start on an unreachable database, so the outage comes after
// start.
func TestReadinessWhenPostgresGoesAway(t *testing.T) {
	pgURL := os.Getenv("SDR_TEST_POSTGRES_URL")
	if pgURL == "" {
		t.Skip("SDR_TEST_POSTGRES_URL is not set: skipping the PostgreSQL readiness test " +
			"(e.g. SDR_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	dbURL, _ := mnSchema(t, pgURL)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startProxy(t, "127.0.0.1:0", u.Host)
	u.Host = proxy.addr
	c := defaultConfig(t, nil)
	c.Storage = "postgres " + u.String()
	g := startGateway(t, c)

	ready := func() *response { return g.do("GET", "/v1/health/ready", "", nil) }
	if r := ready(); r.Status != 200 {
		t.Fatalf("ready with the database up: %d %s", r.Status, r.Body)
	}

	proxy.stop()
	r := ready()
	if r.Status != 503 || r.errCode() != "not_ready" {
		t.Fatalf("ready with the database gone: %d %s", r.Status, r.Body)
	}
	checks, _ := r.errField("checks").(map[string]any)
	if checks["store"] != "unavailable" || checks["registry"] != "ok" {
		t.Errorf("checks %v, want store unavailable and registry ok", checks)
	}
	if l := g.do("GET", "/v1/health/live", "", nil); l.Status != 200 {
		t.Errorf("live with the database gone: %d %s", l.Status, l.Body)
	}

	proxy.listen(t)
	deadline := time.Now().Add(15 * time.Second)
	for ready().Status != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("not ready again after the database came back: %s", ready().Body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
