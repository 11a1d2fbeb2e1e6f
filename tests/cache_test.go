package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
)

// The freshness cache (issue 36) on pro_net/profile.info, declared
// cacheable (keep a day, live by default) with cached prices 0.0006
// (source_b/pro_net) and 0.0023 (source_a/actor_1).
const (
	profileInfo  = "/v1/extract/pro_net/profile.info"
	priceProB    = "0.001725"
	cachedProB   = "0.0006"
	cacheKeepCUE = "cache: keep: 86400"
)

func mc(t testing.TB, s string) credits.Micros {
	t.Helper()
	m, err := credits.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// extractCC posts an extract body to g with a Cache-Control header (none
// when cc is empty).
func extractCC(t testing.TB, g *gateway, path, key, cc string, body any) *response {
	t.Helper()
	var hdr map[string]string
	if cc != "" {
		hdr = map[string]string{"Cache-Control": cc}
	}
	return asyncDo(t, g, http.MethodPost, path, key, body, hdr)
}

// cachedRecords is a run's cached_records (0 when absent).
func cachedRecords(r *response) int {
	n, _ := r.JSON["cached_records"].(float64)
	return int(n)
}

// mustOK fails the test unless r is a 200 with n records.
func mustOK(t testing.TB, r *response, n int) {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	if d, _ := r.JSON["data"].([]any); len(d) != n {
		t.Fatalf("%d records, want %d: %s", len(d), n, r.Body)
	}
}

// TestCacheAcrossAccounts: a second account asking for the same input
// within its max-age is served from the first one's records with no
// upstream call, billed at the cached price, with Age; no-cache, a call
// without the header (the service is live by default) and a pin to
// another offer all start live work.
func TestCacheAcrossAccounts(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	keyA, keyB := g.account("cache_a", 10), g.account("cache_b", 10)
	body := map[string]any{"url": "https://www.linkedin.com/in/cache-one"}
	s.clearLedger(t)

	first := extractCC(t, g, profileInfo, keyA, "max-age=3600", body)
	mustOK(t, first, 1)
	if got := micros(t, first.Body, "credits_used"); got != mc(t, priceProB) || cachedRecords(first) != 0 {
		t.Fatalf("first call: credits %s, cached_records %d; want live %s, 0", got, cachedRecords(first), priceProB)
	}
	if n := len(jobsOf(t, s, proB)); n != 1 {
		t.Fatalf("%d upstream jobs after the first call, want 1", n)
	}

	before := balanceMicros(t, g, keyB)
	second := extractCC(t, g, profileInfo, keyB, "max-age=3600", body)
	mustOK(t, second, 1)
	if n := len(jobsOf(t, s, proB)); n != 1 {
		t.Errorf("%d upstream jobs after the second account's call, want still 1", n)
	}
	if got := micros(t, second.Body, "credits_used"); got != mc(t, cachedProB) || cachedRecords(second) != 1 {
		t.Errorf("cached call: credits %s, cached_records %d; want %s, 1", got, cachedRecords(second), cachedProB)
	}
	if age, err := strconv.Atoi(second.Header.Get("Age")); err != nil || age < 0 || age > 60 {
		t.Errorf("Age %q, want the seconds since the first call", second.Header.Get("Age"))
	}
	if d1, d2 := first.JSON["data"], second.JSON["data"]; fmt.Sprint(d1) != fmt.Sprint(d2) {
		t.Errorf("cached records differ from the live ones:\n%v\n%v", d1, d2)
	}
	if got := before - balanceMicros(t, g, keyB); got != mc(t, cachedProB) {
		t.Errorf("account b paid %s, want %s", got, cachedProB)
	}
	stored := g.do("GET", "/v1/extractions/"+second.JSON["id"].(string), keyB, nil)
	if cachedRecords(stored) != 1 {
		t.Errorf("the stored run lost cached_records: %s", stored.Body)
	}

	for _, c := range []struct{ name, cc string }{{"no-cache", "no-cache"}, {"no header", ""}} {
		jobs := len(jobsOf(t, s, proB))
		r := extractCC(t, g, profileInfo, keyB, c.cc, body)
		mustOK(t, r, 1)
		if n := len(jobsOf(t, s, proB)); n != jobs+1 {
			t.Errorf("%s: %d upstream jobs, want %d (live work)", c.name, n, jobs+1)
		}
		if cachedRecords(r) != 0 || micros(t, r.Body, "credits_used") != mc(t, priceProB) {
			t.Errorf("%s: billed as cached: %s", c.name, r.Body)
		}
	}

	// An async run is served from the cache too.
	sub := asyncDo(t, g, http.MethodPost, profileInfo, keyA, body, map[string]string{"Prefer": "respond-async", "Cache-Control": "max-age=3600"})
	if sub.Status != 202 {
		t.Fatalf("async submit: %d %s", sub.Status, sub.Body)
	}
	jobs := len(jobsOf(t, s, proB))
	if done := follow(t, g, keyA, sub.JSON["id"].(string), 10*time.Second); cachedRecords(done) != 1 || len(jobsOf(t, s, proB)) != jobs {
		t.Errorf("async run with max-age: cached_records %d, %d new jobs: %s", cachedRecords(done), len(jobsOf(t, s, proB))-jobs, done.Body)
	}

	pinned := extractCC(t, g, profileInfo, keyB, "max-age=3600", map[string]any{"url": body["url"], "provider": "source_a/actor_1"})
	mustOK(t, pinned, 1)
	if n := len(jobsOf(t, s, proA)); n != 1 || cachedRecords(pinned) != 0 || pinned.JSON["served_by"] != "source_a/actor_1" {
		t.Errorf("pinned to source_a/actor_1: %d jobs of it, cached_records %d, served_by %v; want 1, 0, the pin", n, cachedRecords(pinned), pinned.JSON["served_by"])
	}
	// A test key's calls never read (nor write) the live cache.
	tk := g.testKey("cache_a")
	for i := range 2 {
		if r := extractCC(t, g, profileInfo, tk, "max-age=3600", body); r.Status != 200 || cachedRecords(r) != 0 || r.JSON["livemode"] != false {
			t.Errorf("test key call %d: %d, cached_records %d, livemode %v", i, r.Status, cachedRecords(r), r.JSON["livemode"])
		}
	}

	// Usage splits the cached records from the live ones of each offer.
	u := g.do("GET", "/v1/account/usage", keyB, nil)
	prov, _ := u.JSON["by_provider"].(map[string]any)
	pb, _ := prov["source_b/pro_net"].(map[string]any)
	if pb["records"] != 3.0 || pb["cached_records"] != 1.0 || u.JSON["total_cached_records"] != 1.0 || micros(t, u.Body, "total_cached_credits") != mc(t, cachedProB) {
		t.Errorf("account b's usage: %s; want source_b/pro_net with 3 records, 1 of them cached", u.Body)
	}
	again := extractCC(t, g, profileInfo, keyA, "max-age=3600", map[string]any{"url": body["url"], "provider": "source_a/actor_1"})
	mustOK(t, again, 1)
	if n := len(jobsOf(t, s, proA)); n != 1 || cachedRecords(again) != 1 || micros(t, again.Body, "credits_used") != mc(t, "0.0023") {
		t.Errorf("pinned again: %d jobs, %s; want its own records from cache at 0.0023", n, again.Body)
	}
}

// TestCachePerInput: of 10 inputs, 7 fresh in the cache, the upstream is
// asked for the other 3 only; the run holds all 10 records, 7 billed at
// the cached price; the limit holds over the merged records.
func TestCachePerInput(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("cache_batch", 10)
	urls := make([]string, 10)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://www.linkedin.com/in/cache-batch-%d", i)
	}
	mustOK(t, extractCC(t, g, profileInfo, key, "max-age=600", map[string]any{"urls": urls[:7]}), 7)
	_, before := askedOf(t, s, proB)

	r := extractCC(t, g, profileInfo, key, "max-age=600", map[string]any{"urls": urls})
	mustOK(t, r, 10)
	if _, after := askedOf(t, s, proB); after-before != 3 {
		t.Errorf("the upstream was asked for %d inputs, want the 3 not cached", after-before)
	}
	want := 7*mc(t, cachedProB) + 3*mc(t, priceProB)
	if got := micros(t, r.Body, "credits_used"); got != want || cachedRecords(r) != 7 {
		t.Errorf("credits %s, cached_records %d; want %s, 7", got, cachedRecords(r), want)
	}

	limited := extractCC(t, g, profileInfo, key, "max-age=600", map[string]any{"urls": urls, "limit": 4})
	mustOK(t, limited, 4)
	if _, after := askedOf(t, s, proB); after-before != 3 {
		t.Errorf("a call all of whose inputs are cached asked the upstream for %d more", after-before-3)
	}
	if got := micros(t, limited.Body, "credits_used"); got != 4*mc(t, cachedProB) || cachedRecords(limited) != 4 {
		t.Errorf("limited: credits %s, cached_records %d; want 4 cached records", got, cachedRecords(limited))
	}
}

// TestCacheJoinsLiveWork: 16 identical calls from 4 accounts at once
// start one upstream job; each account pays for its own records, the one
// that led the work at the live price, the others at the cached price.
func TestCacheJoinsLiveWork(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	keys := make([]string, 4)
	before := make([]credits.Micros, 4)
	for i := range keys {
		keys[i] = g.account(fmt.Sprintf("cache_join_%d", i), 10)
		before[i] = balanceMicros(t, g, keys[i])
	}
	s.fault(t, map[string]any{"target": proB, "latency_ms": 1500})
	s.clearLedger(t)
	body := map[string]any{"url": "https://www.linkedin.com/in/cache-join"}
	out := together(16, func(i int) *response {
		return extractCC(t, g, profileInfo, keys[i%4], "max-age=60", body)
	})
	if n := len(jobsOf(t, s, proB)); n != 1 {
		t.Errorf("16 identical calls started %d upstream jobs, want 1", n)
	}
	paid := make([]credits.Micros, 4)
	live := 0
	for i, r := range out {
		mustOK(t, r, 1)
		c := micros(t, r.Body, "credits_used")
		switch {
		case c == mc(t, priceProB) && cachedRecords(r) == 0:
			live++
		case c != mc(t, cachedProB) || cachedRecords(r) != 1:
			t.Errorf("call %d: credits %s, cached_records %d", i, c, cachedRecords(r))
		}
		paid[i%4] += c
	}
	if live != 1 {
		t.Errorf("%d calls billed live, want the 1 that led the work", live)
	}
	for i, k := range keys {
		if got := before[i] - balanceMicros(t, g, k); got != paid[i] {
			t.Errorf("account %d: balance fell by %s, its runs charged %s", i, got, paid[i])
		}
	}
}

// servicesWith copies the services and replaces old by new in pro_net.cue.
func servicesWith(t *testing.T, old, new string) string {
	t.Helper()
	dir := copyServices(t)
	editServices(t, dir, old, new)
	return dir
}

func editServices(t *testing.T, dir, old, new string) {
	t.Helper()
	editServicesFile(t, dir, "pro_net.cue", old, new)
}

// editServicesFile replaces old by new in the services file name of dir.
func editServicesFile(t *testing.T, dir, name, old, new string) {
	t.Helper()
	p := filepath.Join(dir, name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s no longer holds %q", p, old)
	}
	if err := os.WriteFile(p, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// cacheGateway starts a simulator and a gateway on the services in dir,
// an account named name, and the body of a profile of that name; the
// ledger starts empty.
func cacheGateway(t *testing.T, dir, name string) (*sim, *gateway, string, map[string]any) {
	t.Helper()
	s := startSim(t, "-services", dir)
	c := defaultConfig(t, s)
	c.Services = dir
	g := startGateway(t, c)
	key := g.account(name, 10)
	s.clearLedger(t)
	return s, g, key, map[string]any{"url": "https://www.linkedin.com/in/" + strings.ReplaceAll(name, "_", "-")}
}

// together returns the answers of n calls made at once.
func together(n int, call func(i int) *response) []*response {
	out := make([]*response, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = call(i)
		}()
	}
	wg.Wait()
	return out
}

// TestCacheExpiry: an entry older than the caller's max-age, or past the
// service's keep, is not served.
func TestCacheExpiry(t *testing.T) {
	s, g, key, body := cacheGateway(t, servicesWith(t, cacheKeepCUE, "cache: keep: 3"), "cache_expiry")
	jobs := func() int { return len(jobsOf(t, s, proB)) }

	mustOK(t, extractCC(t, g, profileInfo, key, "max-age=3600", body), 1)
	time.Sleep(1500 * time.Millisecond)
	if r := extractCC(t, g, profileInfo, key, "max-age=1", body); cachedRecords(r) != 0 || jobs() != 2 {
		t.Errorf("max-age=1 after 1.5 s: cached_records %d, %d jobs; want live work", cachedRecords(r), jobs())
	}
	if r := extractCC(t, g, profileInfo, key, "max-age=3600", body); cachedRecords(r) != 1 || jobs() != 2 {
		t.Errorf("max-age=3600 right after: cached_records %d, %d jobs; want served from cache", cachedRecords(r), jobs())
	}
	time.Sleep(3500 * time.Millisecond)
	if r := extractCC(t, g, profileInfo, key, "max-age=3600", body); cachedRecords(r) != 0 || jobs() != 3 {
		t.Errorf("past the service's keep of 3 s: cached_records %d, %d jobs; want live work", cachedRecords(r), jobs())
	}
}

// TestCacheReloadNormalizer: after a reload that changes the service's
// normalizer, records of the old shape are never served.
func TestCacheReloadNormalizer(t *testing.T) {
	dir := copyServices(t)
	s, g, key, body := cacheGateway(t, dir, "cache_reload")
	mustOK(t, extractCC(t, g, profileInfo, key, "max-age=3600", body), 1)

	editServices(t, dir, `headline: (.position | str),`, `headline: ("v2 " + ((.position | str) // "")),`)
	if st, b := g.admin("POST", "/sdr/registry/reload", nil); st != 200 {
		t.Fatalf("reload: %d %s", st, b)
	}
	r := extractCC(t, g, profileInfo, key, "max-age=3600", body)
	mustOK(t, r, 1)
	rec := r.JSON["data"].([]any)[0].(map[string]any)
	if h, _ := rec["headline"].(string); cachedRecords(r) != 0 || len(jobsOf(t, s, proB)) != 2 || len(h) < 3 || h[:3] != "v2 " {
		t.Errorf("after the reload: cached_records %d, headline %q, %d jobs; want live work in the new shape", cachedRecords(r), h, len(jobsOf(t, s, proB)))
	}
}

// TestCacheAdmin: the admin routes and `caddy sdr cache` show what the
// cache holds and did, and purge a service's entries (later calls then
// go live); the metrics split hits, joins and misses.
func TestCacheAdmin(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("cache_admin", 10)
	body := map[string]any{"url": "https://www.linkedin.com/in/cache-admin"}
	mustOK(t, extractCC(t, g, profileInfo, key, "max-age=600", body), 1)
	mustOK(t, extractCC(t, g, profileInfo, key, "max-age=600", body), 1)

	st, b := g.admin("GET", "/sdr/cache/stats", nil)
	var stats struct {
		Entries, Bytes, Hits, Misses int64
		Services                     []struct{ Service string }
	}
	if err := json.Unmarshal(b, &stats); st != 200 || err != nil {
		t.Fatalf("stats: %d %s", st, b)
	}
	if stats.Entries != 1 || stats.Bytes <= 0 || stats.Hits != 1 || stats.Misses != 1 || len(stats.Services) != 1 || stats.Services[0].Service != "pro_net/profile.info" {
		t.Errorf("stats after a miss and a hit: %s", b)
	}
	m := g.scrape(t)
	for name, want := range map[string]float64{`sdr_cache_lookups_total{result="hit"}`: 1, `sdr_cache_lookups_total{result="miss"}`: 1, "sdr_cache_entries": 1} {
		if got, ok := m.samples[name]; !ok || got != want {
			t.Errorf("metric %s = %v (present %v), want %v", name, got, ok, want)
		}
	}

	out, err := exec.Command(caddyBin, "sdr", "cache", "purge", "pro_net/profile.info", "--address", g.Admin).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"deleted": 1`) && !strings.Contains(string(out), `"deleted":1`) {
		t.Fatalf("caddy sdr cache purge: %v\n%s", err, out)
	}
	s.clearLedger(t)
	if r := extractCC(t, g, profileInfo, key, "max-age=600", body); cachedRecords(r) != 0 || len(jobsOf(t, s, proB)) != 1 {
		t.Errorf("after the purge: cached_records %d, %d jobs; want live work", cachedRecords(r), len(jobsOf(t, s, proB)))
	}
	if st, b := g.admin("POST", "/sdr/cache/purge?service=pro_net/nope", nil); st != 404 {
		t.Errorf("purging an unknown service: %d %s", st, b)
	}
}

// TestCacheNeverErrorsAndMoney: an input answered by an error row is not
// cached (it is asked again), and a record in the cache is not served to
// an account that cannot pay its cached price: 402, nothing charged.
func TestCacheNeverErrorsAndMoney(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("cache_errors", 10)
	urls := []string{"https://www.linkedin.com/in/cache-err-0", "https://www.linkedin.com/in/cache-err-1",
		"https://www.linkedin.com/in/cache-err-2", "https://www.linkedin.com/in/cache-err-3"}
	s.fault(t, map[string]any{"target": proB, "error_records": true}) // inputs 1 and 3 answer error rows
	mustOK(t, extractCC(t, g, profileInfo, key, "max-age=600", map[string]any{"urls": urls}), 2)
	s.reset(t)
	_, before := askedOf(t, s, proB)
	r := extractCC(t, g, profileInfo, key, "max-age=600", map[string]any{"urls": urls})
	mustOK(t, r, 4)
	if _, after := askedOf(t, s, proB); after-before != 2 || cachedRecords(r) != 2 {
		t.Errorf("after error rows for 2 of 4 inputs: asked for %d, cached_records %d; want the 2 asked again and 2 cached", after-before, cachedRecords(r))
	}

	poor := g.account("cache_poor", 0.0001)
	before2 := balanceMicros(t, g, poor)
	refused := extractCC(t, g, profileInfo, poor, "max-age=600", map[string]any{"url": urls[0]})
	if refused.Status != 402 || refused.errCode() != "insufficient_credits" || balanceMicros(t, g, poor) != before2 {
		t.Errorf("a cached record for an account below its cached price: %d %s", refused.Status, refused.Body)
	}
}

// TestCacheServedDespiteUpstreams: when the live part of a call fails on
// every offer, the records served from the cache are still answered (and
// billed at the cached price), the attempts saying what failed; a call
// with nothing from the cache fails as before.
func TestCacheServedDespiteUpstreams(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("cache_despite", 10)
	urls := []string{"https://www.linkedin.com/in/despite-0", "https://www.linkedin.com/in/despite-1", "https://www.linkedin.com/in/despite-2"}
	mustOK(t, extractCC(t, g, profileInfo, key, "max-age=600", map[string]any{"urls": urls[:2]}), 2)
	s.fault(t, map[string]any{"target": "*", "status": 503})
	r := extractCC(t, g, profileInfo, key, "max-age=600", map[string]any{"urls": urls})
	mustOK(t, r, 2)
	if att, _ := r.JSON["attempts"].([]any); cachedRecords(r) != 2 || len(att) == 0 || micros(t, r.Body, "credits_used") != 2*mc(t, cachedProB) {
		t.Errorf("2 of 3 inputs cached, the third failing upstream: %s", r.Body)
	}
	if f := extractCC(t, g, profileInfo, key, "max-age=600", map[string]any{"url": urls[2]}); f.Status == 200 {
		t.Errorf("a call with nothing cached answered %d despite failing upstreams", f.Status)
	}
}
