package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
)

// The multi-node tests run two gateway processes on different loopback
// ports sharing one PostgreSQL schema (and one Redis for the rate limit),
// as two nodes behind a balancer, with the upstream simulator. They run
// when SDR_TEST_POSTGRES_URL and SDR_TEST_REDIS_URL are both set (CI sets
// them) and skip, saying so, otherwise.

// TestMultiNodeNoOverdraw sends 200 concurrent extract calls, split across
// both nodes, on one account whose balance pays for about half of them: no
// overdraw, the balance moved by exactly what the stored runs charged, and
// every run is readable from either node.
func TestMultiNodeNoOverdraw(t *testing.T) {
	pgURL, _ := mnEnv(t)
	// Four records a call, so that the last call the balance pays for is
	// truncated to the records it can pay.
	s := startSim(t, "-latency", "20ms", "-items", "4")
	// Every call is in flight at once: lift the per-node in-flight cap
	// (which is per node, not shared) above the 100 calls each node gets.
	c := startCluster(t, s, pgURL, clusterOpts{maxRuns: 250})
	perCall, price, records := c.callCharge(t)

	// 100 calls and a half: after 100 full charges, the balance pays for
	// half a call's records (when the fixture has more than one).
	start := 100*perCall + credits.Micros(records/2)*price
	key := c.nodes[0].account("acme", start.Credits())
	if got := balanceMicros(t, c.nodes[1], key); got != start {
		t.Fatalf("balance through the other node %s, want %s", got, start)
	}

	const calls = 200
	results := make([]mnResult, calls)
	var wg sync.WaitGroup
	ready := make(chan struct{})
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ready
			results[i] = c.extractOnce(t, i%2, key)
		}()
	}
	close(ready)
	wg.Wait()

	var (
		sum                credits.Micros
		ok, full, partial  int
		refused, emptyRuns int
		okPerNode          [2]int
	)
	for i, r := range results {
		switch {
		case r.err != nil:
			t.Fatalf("call %d through node %d: %v", i, r.node, r.err)
		case r.status == 200:
			ok++
			okPerNode[r.node]++
			sum += r.charged
			if r.charged != credits.Micros(r.records)*price {
				t.Errorf("run %s charged %s for %d records at %s", r.id, r.charged, r.records, price)
			}
			switch r.records {
			case records:
				full++
			case 0:
				emptyRuns++ // passed the pre-check, settled after the money ran out
			default:
				partial++
			}
		case r.status == 402 && r.code == "insufficient_credits":
			refused++
		default:
			t.Errorf("call %d through node %d: %d %s", i, r.node, r.status, r.code)
		}
	}
	t.Logf("%d calls: %d answered 200 (%d full, %d truncated, %d empty; %d on node 0, %d on node 1), %d refused 402",
		calls, ok, full, partial, emptyRuns, okPerNode[0], okPerNode[1], refused)

	final := balanceMicros(t, c.nodes[1], key)
	if final < 0 || final >= price {
		t.Errorf("final balance %s: want spent down to below one record (%s), never below zero", final, price)
	}
	if start-final != sum {
		t.Errorf("balance moved by %s (%s → %s), the runs answered charged %s", start-final, start, final, sum)
	}
	if full != 100 || partial > 1 {
		t.Errorf("%d full and %d truncated runs; the balance paid for exactly 100 full calls and a half", full, partial)
	}
	if okPerNode[0] == 0 || okPerNode[1] == 0 {
		t.Errorf("runs per node %v: both nodes should have served", okPerNode)
	}

	stored := c.storedRuns(t, "acme")
	var storedSum credits.Micros
	for _, v := range stored {
		storedSum += v
	}
	if len(stored) != ok || storedSum != start-final {
		t.Errorf("%d runs stored charging %s; want the %d answered runs charging %s", len(stored), storedSum, ok, start-final)
	}
	if n, charged := usageTotals(t, c.nodes[0], key); n != ok || charged != sum {
		t.Errorf("usage through node 0: %d requests, %s credits; want %d and %s", n, charged, ok, sum)
	}
	for _, r := range results {
		if r.status != 200 {
			continue
		}
		if _, ok := stored[r.id]; !ok {
			t.Errorf("run %s answered 200 by node %d is not stored", r.id, r.node)
		}
		for _, g := range c.nodes {
			checkRunReadable(t, g, key, r)
		}
	}
}

// TestMultiNodeKeyDayLimit: a key's day credit limit counts what it spent
// on every node, and is refused on every node once reached.
func TestMultiNodeKeyDayLimit(t *testing.T) {
	pgURL, _ := mnEnv(t)
	s := startSim(t)
	c := startCluster(t, s, pgURL, clusterOpts{})
	a, b := c.nodes[0], c.nodes[1]
	perCall, _, _ := c.callCharge(t)
	waitPastMidnight(t)

	// Two calls and a half: a third call would cross the limit, so it is
	// refused on either node before any upstream call (holds keep the
	// limit exact).
	limit := 2*perCall + perCall/2
	unlimited := a.account("acme", 10)
	limited := a.key("acme", map[string]any{"period": "day", "credits": limit.Credits()})
	before := balanceMicros(t, b, unlimited)

	var spent credits.Micros
	for i, node := range []int{0, 1} {
		r := c.extractOnce(t, node, limited)
		if r.status != 200 {
			t.Fatalf("call %d through node %d, spent %s of %s: %d %s", i+1, node, spent, limit, r.status, r.code)
		}
		spent += r.charged
	}
	calls := len(s.calls(t))
	for _, g := range []*gateway{b, a} {
		r := g.do("POST", mnCompanyPath, limited, map[string]any{"url": mnCompanyURL})
		if r.Status != 429 || r.errCode() != "credit_limit_exceeded" || r.errField("type") != "rate_limit" {
			t.Fatalf("through %s after spending %s of %s: %d %s", g.URL, spent, limit, r.Status, r.Body)
		}
		if got := micros(t, r.Body, "error", "spent"); got != spent {
			t.Errorf("through %s: spent %s, want %s (spent on both nodes)", g.URL, got, spent)
		}
		if got := micros(t, r.Body, "error", "limit"); got != limit {
			t.Errorf("through %s: limit %s, want %s", g.URL, got, limit)
		}
		if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 86400 {
			t.Errorf("through %s: Retry-After %q, want the seconds to the end of the UTC day", g.URL, r.Header.Get("Retry-After"))
		}
	}
	if n := len(s.calls(t)); n != calls {
		t.Errorf("%d upstream calls for refused requests", n-calls)
	}
	if got := balanceMicros(t, a, unlimited); got != before-spent {
		t.Errorf("balance %s, want %s: only the two calls are charged", got, before-spent)
	}
	// The limit is the key's: another key of the account goes on, on
	// either node.
	for i := range c.nodes {
		if r := c.extractOnce(t, i, unlimited); r.status != 200 {
			t.Errorf("unlimited key through node %d: %d %s", i, r.status, r.code)
		}
	}

	// A limit raised through one node's admin API lets the key through on
	// the other at once: no node caches keys.
	st, body := b.admin("GET", "/sdr/accounts/acme", nil)
	var acct struct {
		Keys []struct {
			ID          string `json:"id"`
			CreditLimit any    `json:"credit_limit"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(body, &acct); st != 200 || err != nil {
		t.Fatalf("account: %d %s", st, body)
	}
	var keyID string
	for _, k := range acct.Keys {
		if k.CreditLimit != nil {
			keyID = k.ID
		}
	}
	if st, body := b.admin("PATCH", "/sdr/keys/"+keyID, map[string]any{"credit_limit": map[string]any{"period": "day", "credits": (4 * perCall).Credits()}}); st != 200 {
		t.Fatalf("raising the limit through node 1: %d %s", st, body)
	}
	if r := c.extractOnce(t, 0, limited); r.status != 200 {
		t.Errorf("through node 0 after node 1 raised the limit: %d %s", r.status, r.code)
	}
}

// waitPastMidnight waits out the last seconds of a UTC day, so that a day
// limit's window cannot turn over in the middle of a test.
func waitPastMidnight(t *testing.T) {
	now := time.Now().UTC()
	next := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	if left := next.Sub(now); left < time.Minute {
		t.Logf("waiting %s for the UTC day to turn over", left)
		time.Sleep(left + time.Second)
	}
}

// TestMultiNodeIPRateLimit: with `ip_rate_limit 100 60s { store redis … }`
// on both nodes, one client IP gets 100 requests a minute in total, however
// they are spread, and the 101st is a bare 429 whichever node it reaches.
func TestMultiNodeIPRateLimit(t *testing.T) {
	pgURL, redisURL := mnEnv(t)
	c := startCluster(t, nil, pgURL, clusterOpts{redisURL: redisURL, rateCount: 100})
	const policy = `"default";q=100;w=60`

	for round, first := range []int{0, 1} {
		t.Run(fmt.Sprintf("101st on node %d", first), func(t *testing.T) {
			// A fresh window: the requests of start-up and of the
			// previous round are forgotten.
			mnResetRateLimit(t, redisURL, c.prefix)
			for i := range 100 {
				g := c.nodes[(first+i)%2]
				r := g.do("GET", "/v1/services", "", nil)
				if r.Status != 200 || r.Header.Get("RateLimit-Policy") != policy {
					t.Fatalf("round %d, request %d through %s: %d, RateLimit-Policy %q", round, i+1, g.URL, r.Status, r.Header.Get("RateLimit-Policy"))
				}
			}
			// 50 requests reached each node; the 101st, and the next on
			// the other node, are refused.
			for n, i := range []int{first, 1 - first} {
				g := c.nodes[i]
				r := g.do("GET", "/v1/services", "", nil)
				ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
				if r.Status != http.StatusTooManyRequests || len(r.Body) != 0 || err != nil || ra < 1 || ra > 60 ||
					r.Header.Get("RateLimit-Policy") != policy {
					t.Errorf("request %d through node %d: %d %q, Retry-After %q, RateLimit-Policy %q; want a bare 429",
						101+n, i, r.Status, r.Body, r.Header.Get("Retry-After"), r.Header.Get("RateLimit-Policy"))
				}
			}
		})
	}
}

// TestMultiNodeKill kills one node with SIGKILL under load: the other goes
// on serving, every run either node answered 200 for is readable, and the
// balance moved by exactly what the stored runs charged (including any run
// the killed node settled but could not answer).
func TestMultiNodeKill(t *testing.T) {
	pgURL, _ := mnEnv(t)
	s := startSim(t, "-latency", "30ms")
	c := startCluster(t, s, pgURL, clusterOpts{})
	a, b := c.nodes[0], c.nodes[1]
	start := credits.Micros(1000 * credits.PerCredit)
	key := a.account("acme", start.Credits())

	const workers = 6 // per node, under the per-node cap of 16 runs in flight
	var (
		mu      sync.Mutex
		results []mnResult
		okOn    [2]int
		killed  time.Time
		afterOK int // node 1 successes that started after the kill
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for node := range c.nodes {
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					r := c.extractOnce(t, node, key)
					mu.Lock()
					results = append(results, r)
					if r.status == 200 {
						okOn[node]++
						if node == 1 && !killed.IsZero() && r.start.After(killed) {
							afterOK++
						}
					}
					mu.Unlock()
					if r.err != nil {
						return // the killed node: nothing more to send it
					}
				}
			}()
		}
	}
	waitUntil := func(what string, cond func() bool) {
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			ok := cond()
			mu.Unlock()
			if ok {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		close(stop)
		wg.Wait()
		t.Fatalf("timed out waiting for %s", what)
	}

	waitUntil("load on both nodes", func() bool { return okOn[0] >= 20 && okOn[1] >= 20 })
	mu.Lock()
	killed = time.Now()
	mu.Unlock()
	if err := a.p.cmd.Process.Kill(); err != nil {
		t.Fatalf("killing node 0: %v", err)
	}
	_, _ = a.p.cmd.Process.Wait()
	waitUntil("node 1 to go on serving", func() bool { return afterOK >= 40 })
	close(stop)
	wg.Wait()

	var lost, okAfterKill [2]int
	var answered credits.Micros
	for _, r := range results {
		switch {
		case r.err != nil && r.node == 0 && !r.end.Before(killed):
			lost[0]++ // in flight on, or sent to, the killed node
		case r.err != nil:
			t.Errorf("node %d, call started %s after the kill: %v", r.node, r.start.Sub(killed), r.err)
		case r.status != 200:
			t.Errorf("node %d: %d %s", r.node, r.status, r.code)
		default:
			answered += r.charged
			if r.start.After(killed) {
				okAfterKill[r.node]++
			}
		}
	}
	t.Logf("%d calls: %d and %d answered 200 by node 0 and node 1 (%d by node 1 after the kill); %d cut off by the kill",
		len(results), okOn[0], okOn[1], okAfterKill[1], lost[0])
	if okAfterKill[0] != 0 {
		t.Errorf("the killed node answered %d calls sent after the kill", okAfterKill[0])
	}

	// Nothing settled is lost: every run answered 200 is stored and
	// readable through the surviving node, and the only stored runs nobody
	// heard of are those the kill cut off after their commit.
	stored := c.storedRuns(t, "acme")
	known := 0
	for _, r := range results {
		if r.status != 200 {
			continue
		}
		known++
		if stored[r.id] != r.charged {
			t.Errorf("run %s answered 200 by node %d for %s: stored %s", r.id, r.node, r.charged, stored[r.id])
		}
		checkRunReadable(t, b, key, r)
	}
	extra := len(stored) - known
	t.Logf("%d runs stored: %d answered 200, %d settled by node 0 but cut off before their answer", len(stored), known, extra)
	if extra < 0 || extra > lost[0] {
		t.Errorf("%d runs stored, %d answered 200, %d cut off by the kill", len(stored), known, lost[0])
	}
	var storedSum credits.Micros
	for id, charged := range stored {
		storedSum += charged
		if r := b.do("GET", "/v1/extractions/"+id, key, nil); r.Status != 200 {
			t.Errorf("stored run %s through the surviving node: %d %s", id, r.Status, r.Body)
		}
	}
	final := balanceMicros(t, b, key)
	if start-final != storedSum {
		t.Errorf("balance moved by %s (%s → %s); the stored runs charged %s", start-final, start, final, storedSum)
	}
	if answered > storedSum {
		t.Errorf("runs answered 200 charged %s, more than the stored runs' %s", answered, storedSum)
	}
	if n, charged := usageTotals(t, b, key); n != len(stored) || charged != storedSum {
		t.Errorf("usage through node 1: %d requests, %s credits; want %d and %s", n, charged, len(stored), storedSum)
	}
}
