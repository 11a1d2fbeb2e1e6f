package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
	"socialrouter/internal/mcptest"
)

// asyncDo sends an API request with extra headers (Prefer,
// Idempotency-Key, Accept); the answer is checked against the served
// OpenAPI document unless it is NDJSON.
func asyncDo(t testing.TB, g *gateway, method, path, key string, body any, hdr map[string]string) *response {
	t.Helper()
	r, err := asyncTry(t, g.URL, method, path, key, body, hdr)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// asyncTry is asyncDo returning a transport error (a killed node).
func asyncTry(t testing.TB, base, method, path, key string, body any, hdr map[string]string) (*response, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return nil, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+key)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	r, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	resp := &response{Status: r.StatusCode, Header: r.Header, Body: b}
	_ = json.Unmarshal(b, &resp.JSON)
	if !strings.Contains(r.Header.Get("Content-Type"), "ndjson") {
		validateAgainstOpenAPI(t, req, r, b)
	}
	return resp, nil
}

var preferAsync = map[string]string{"Prefer": "respond-async"}

// follow polls GET /v1/extractions/{id} until the run is no longer
// running, and returns it.
func follow(t testing.TB, g *gateway, key, id string, within time.Duration) *response {
	t.Helper()
	end := time.Now().Add(within)
	for {
		r := asyncDo(t, g, "GET", "/v1/extractions/"+id, key, nil, nil)
		if r.Status != 200 {
			t.Fatalf("GET run %s: %d %s", id, r.Status, r.Body)
		}
		if r.JSON["status"] != "running" {
			return r
		}
		if time.Now().After(end) {
			t.Fatalf("run %s still running after %s: %s", id, within, r.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// callsTo counts the simulator's logged calls to target.
func callsTo(t testing.TB, s *sim, target string) int {
	n := 0
	for _, c := range s.calls(t) {
		if c.Target == target {
			n++
		}
	}
	return n
}

const postsTarget = "trudax~reddit-scraper-lite" // source_a/actor_6, forum_net/subreddit.posts

func postsBody(limit int) map[string]any {
	return map[string]any{"url": "https://www.reddit.com/r/golang", "provider": "source_a/actor_6", "limit": limit}
}

// TestAsyncIdempotencyConcurrent: 16 concurrent POSTs with one
// Idempotency-Key make one upstream job and one charge; the other 15 are
// replays of that run or 409 idempotency_key_in_use.
func TestAsyncIdempotencyConcurrent(t *testing.T) {
	s := startSim(t, "-latency", "700ms")
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("acme", 100)
	start := balanceMicros(t, g, key)
	s.reset(t)
	hdr := map[string]string{"Idempotency-Key": `"order-42"`}
	out := make([]*response, 16)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(5), hdr)
		}()
	}
	wg.Wait()
	var first, replays, inUse int
	var runID string
	for _, r := range out {
		switch {
		case r.Status == 200 && r.Header.Get("Idempotent-Replayed") == "":
			first++
			runID, _ = r.JSON["id"].(string)
		case r.Status == 200 && r.Header.Get("Idempotent-Replayed") == "true":
			replays++
		case r.Status == 409 && r.errCode() == "idempotency_key_in_use":
			inUse++
		default:
			t.Errorf("unexpected answer %d %s", r.Status, r.Body)
		}
	}
	if first != 1 || replays+inUse != 15 {
		t.Fatalf("first %d, replays %d, in use %d; want 1 and 15 others", first, replays, inUse)
	}
	for _, r := range out {
		if r.Status == 200 && r.JSON["id"] != runID {
			t.Errorf("replay of run %v, want %s", r.JSON["id"], runID)
		}
	}
	if n := callsTo(t, s, postsTarget); n != 1 {
		t.Errorf("%d upstream calls, want 1", n)
	}
	// Once answered, the same key replays; another body is 422.
	again := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(5), hdr)
	if again.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" || again.JSON["id"] != runID {
		t.Errorf("replay after the answer: %d %v %s", again.Status, again.Header.Get("Idempotent-Replayed"), again.Body)
	}
	other := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(6), hdr)
	if other.Status != 422 || other.errCode() != "idempotency_key_reused" {
		t.Errorf("another body with the key: %d %s", other.Status, other.Body)
	}
	if n := callsTo(t, s, postsTarget); n != 1 {
		t.Errorf("%d upstream calls after the replays, want 1", n)
	}
	run := asyncDo(t, g, "GET", "/v1/extractions/"+runID, key, nil, nil)
	used := micros(t, run.Body, "credits_used")
	if used <= 0 {
		t.Fatalf("the run charged %v: %s", used, run.Body)
	}
	if got := balanceMicros(t, g, key); got != start-used {
		t.Errorf("balance %v, want %v - %v (one charge)", got, start, used)
	}
	// The key is the account's: another account's call with it runs.
	key2 := g.account("beta", 100)
	if r := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key2, postsBody(6), hdr); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("the key in another account: %d %s", r.Status, r.Body)
	}
	if r := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(5), map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}); r.Status != 400 || r.errCode() != "invalid_idempotency_key" {
		t.Errorf("a 256-character key: %d %s", r.Status, r.Body)
	}
}

// TestAsyncSubmitFollowRecords: Prefer: respond-async answers 202 with
// the running run at once; the run completes as a sync run would, a
// 5,000-record run pages back exactly its records, as JSON and NDJSON,
// charged records × price. What refuses a sync call refuses it before
// the 202.
func TestAsyncSubmitFollowRecords(t *testing.T) {
	s := startSim(t, "-items", "5000", "-latency", "300ms")
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("acme", 100)
	start := balanceMicros(t, g, key)

	if r := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(5000), nil); r.Status != 400 || r.errCode() != "invalid_limit" {
		t.Errorf("sync limit 5000: %d %s", r.Status, r.Body)
	}
	if r := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(5001), preferAsync); r.Status != 400 || r.errCode() != "invalid_limit" {
		t.Errorf("async limit 5001: %d %s", r.Status, r.Body)
	}
	poor := g.account("poor", 0)
	if r := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", poor, postsBody(10), preferAsync); r.Status != 402 || r.errCode() != "insufficient_credits" {
		t.Errorf("async with no money: %d %s", r.Status, r.Body)
	}
	if n := callsTo(t, s, postsTarget); n != 0 {
		t.Errorf("%d upstream calls for refused calls", n)
	}

	t0 := time.Now()
	keyed := map[string]string{"Prefer": "respond-async", "Idempotency-Key": "pull-5000"}
	r := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(5000), keyed)
	if r.Status != 202 || r.JSON["status"] != "running" || r.Header.Get("Preference-Applied") != "respond-async" {
		t.Fatalf("submit: %d %v %s", r.Status, r.Header, r.Body)
	}
	if d := time.Since(t0); d > 250*time.Millisecond {
		t.Errorf("the 202 took %s, longer than the upstream's latency", d)
	}
	id, _ := r.JSON["id"].(string)
	if r.Header.Get("Location") != "/v1/extractions/"+id {
		t.Errorf("Location %q", r.Header.Get("Location"))
	}
	// The same key while the run runs: the running run again.
	again := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(5000), keyed)
	if again.Status != 202 || again.JSON["id"] != id || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("async retry with the key: %d %v %.200s", again.Status, again.Header.Get("Idempotent-Replayed"), again.Body)
	}
	run := follow(t, g, key, id, 60*time.Second)
	if run.JSON["status"] != "completed" {
		t.Fatalf("run ended %s", run.Body)
	}
	data, _ := run.JSON["data"].([]any)
	if len(data) != 5000 {
		t.Fatalf("%d records, want 5000", len(data))
	}
	used := micros(t, run.Body, "credits_used")
	price := credits.Micros(2760) // 0.00276 credits per record of source_a/actor_6
	if used != 5000*price {
		t.Errorf("credits_used %v, want 5000 × %v", used, price)
	}
	if got := balanceMicros(t, g, key); got != start-used {
		t.Errorf("balance %v, want %v - %v", got, start, used)
	}

	// JSON pages of 1000, then NDJSON pages of 700.
	var paged []json.RawMessage
	cursor := ""
	for pages := 0; ; pages++ {
		path := "/v1/extractions/" + id + "/records?limit=1000"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		p := asyncDo(t, g, "GET", path, key, nil, nil)
		var page struct {
			Data       []json.RawMessage `json:"data"`
			Total      int               `json:"total"`
			NextCursor *string           `json:"next_cursor"`
		}
		if p.Status != 200 || json.Unmarshal(p.Body, &page) != nil || page.Total != 5000 || len(p.Body) > 2<<20 {
			t.Fatalf("page %d: %d %d bytes", pages, p.Status, len(p.Body))
		}
		paged = append(paged, page.Data...)
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	var whole struct {
		Data []json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(run.Body, &whole)
	if len(paged) != len(whole.Data) {
		t.Fatalf("%d records paged, the run has %d", len(paged), len(whole.Data))
	}
	for i := range paged {
		if !bytes.Equal(paged[i], whole.Data[i]) {
			t.Fatalf("record %d paged differs from the run's", i)
		}
	}
	var lines int
	cursor = ""
	for {
		path := "/v1/extractions/" + id + "/records?limit=700"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		p := asyncDo(t, g, "GET", path, key, nil, map[string]string{"Accept": "application/x-ndjson"})
		if p.Status != 200 || !strings.HasPrefix(p.Header.Get("Content-Type"), "application/x-ndjson") {
			t.Fatalf("ndjson page: %d %q", p.Status, p.Header.Get("Content-Type"))
		}
		sc := bufio.NewScanner(bytes.NewReader(p.Body))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if !bytes.Equal(sc.Bytes(), whole.Data[lines]) {
				t.Fatalf("ndjson line %d differs", lines)
			}
			lines++
		}
		link := p.Header.Get("Link")
		if link == "" {
			break
		}
		_, after, _ := strings.Cut(link, "cursor=")
		cursor, _, _ = strings.Cut(after, "&")
	}
	if lines != 5000 {
		t.Errorf("%d NDJSON lines, want 5000", lines)
	}
}

// TestAsyncCancel: cancelling a running async run stops it, answers it
// cancelled, charges nothing and releases its hold; cancelling it again
// (or a completed run) is 409.
func TestAsyncCancel(t *testing.T) {
	s := startSim(t, "-latency", "20s")
	c := defaultConfig(t, s)
	c.AttemptTimeout = "60s"
	c.SoftTimeout = "30s"
	g := startGateway(t, c)
	key := g.account("acme", 1)
	start := balanceMicros(t, g, key)
	keyed := map[string]string{"Prefer": "respond-async", "Idempotency-Key": "cancel-me"}
	r := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(200), keyed)
	if r.Status != 202 {
		t.Fatalf("submit: %d %s", r.Status, r.Body)
	}
	id, _ := r.JSON["id"].(string)
	// The same key while the run runs: 409 for a sync call, the running
	// run for an async one.
	if sync := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(200),
		map[string]string{"Idempotency-Key": "cancel-me"}); sync.Status != 409 || sync.errCode() != "idempotency_key_in_use" {
		t.Errorf("sync retry with the key while it runs: %d %.200s", sync.Status, sync.Body)
	}
	if again := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(200), keyed); again.Status != 202 ||
		again.JSON["id"] != id || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("async retry with the key while it runs: %d %.200s", again.Status, again.Body)
	}
	// The hold is in place: an account of 1 credit pays 362 records at
	// 0.00276, so a second run of 200 only gets what is left.
	waitFor(t, "the first attempt", g.p, func() bool {
		run := asyncDo(t, g, "GET", "/v1/extractions/"+id, key, nil, nil)
		att, _ := run.JSON["attempts"].([]any)
		return run.JSON["status"] == "running" && len(att) == 1
	})
	t0 := time.Now()
	cr := asyncDo(t, g, "POST", "/v1/extractions/"+id+"/cancel", key, nil, nil)
	if cr.Status != 200 || cr.JSON["status"] != "cancelled" {
		t.Fatalf("cancel: %d %s", cr.Status, cr.Body)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("cancel took %s", d)
	}
	if used := micros(t, cr.Body, "credits_used"); used != 0 {
		t.Errorf("cancelled run charged %v", used)
	}
	if got := balanceMicros(t, g, key); got != start {
		t.Errorf("balance %v after cancel, want %v", got, start)
	}
	if again := asyncDo(t, g, "POST", "/v1/extractions/"+id+"/cancel", key, nil, nil); again.Status != 409 || again.errCode() != "run_finished" {
		t.Errorf("second cancel: %d %s", again.Status, again.Body)
	}
	if rec := asyncDo(t, g, "GET", "/v1/extractions/"+id+"/records", key, nil, nil); rec.Status != 200 {
		t.Errorf("records of a cancelled run: %d %s", rec.Status, rec.Body)
	}
	// The hold was released: a new run reserves the whole balance again.
	r2 := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(350), preferAsync)
	if r2.Status != 202 {
		t.Fatalf("second submit: %d %s", r2.Status, r2.Body)
	}
	id2, _ := r2.JSON["id"].(string)
	if rec := asyncDo(t, g, "GET", "/v1/extractions/"+id2+"/records", key, nil, nil); rec.Status != 409 || rec.errCode() != "run_not_finished" {
		t.Errorf("records of a running run: %d %s", rec.Status, rec.Body)
	}
	if cr := asyncDo(t, g, "POST", "/v1/extractions/"+id2+"/cancel", key, nil, nil); cr.Status != 200 {
		t.Errorf("cancel of the second: %d %s", cr.Status, cr.Body)
	}
	if nf := asyncDo(t, g, "POST", "/v1/extractions/ext_nope/cancel", key, nil, nil); nf.Status != 404 {
		t.Errorf("cancel of an unknown run: %d", nf.Status)
	}
}

// submitMany submits n async runs and returns their ids.
func submitMany(t *testing.T, g *gateway, key string, n int) []string {
	var ids []string
	for i := range n {
		r := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key,
			map[string]any{"url": fmt.Sprintf("https://www.reddit.com/r/sub%d", i), "provider": "source_a/actor_6", "limit": 3}, preferAsync)
		if r.Status != 202 {
			t.Fatalf("submit %d: %d %s", i, r.Status, r.Body)
		}
		ids = append(ids, r.JSON["id"].(string))
	}
	return ids
}

// finishAll follows every run to its end and returns the sum of their
// charges; each must complete, charged its records × the offer's price.
func finishAll(t *testing.T, g *gateway, key string, ids []string) credits.Micros {
	var sum credits.Micros
	for _, id := range ids {
		r := follow(t, g, key, id, 90*time.Second)
		data, _ := r.JSON["data"].([]any)
		used := micros(t, r.Body, "credits_used")
		if r.JSON["status"] != "completed" || len(data) == 0 || used != credits.Micros(len(data))*2760 {
			t.Errorf("run %s: %.300s", id, r.Body)
		}
		sum += used
	}
	return sum
}

// longPosts makes every upstream job of the posts offer last about
// scaled seconds on a simulator started with -time-scale 0.01, so a kill
// lands in the middle of them.
func longPosts(t *testing.T, s *sim, scaled time.Duration) {
	s.fault(t, map[string]any{"target": postsTarget, "duration_s": scaled.Seconds() * 100})
}

// awaitJobs waits until the simulator runs n jobs of the posts offer and
// every run shows the job it started (its running attempt's handle), that
// is until each job is recorded, well before the jobs end.
func awaitJobs(t *testing.T, s *sim, g *gateway, key string, ids []string) {
	t.Helper()
	end := time.Now().Add(20 * time.Second)
	for running := 0; running < len(ids); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d upstream jobs running, want the %d runs' jobs", running, len(ids))
		}
		running = 0
		for _, j := range s.ledger(t) {
			if j.Target == postsTarget && j.Running {
				running++
			}
		}
	}
	end = time.Now().Add(3 * time.Second)
	for _, id := range ids {
		for firstHandle(asyncDo(t, g, "GET", "/v1/extractions/"+id, key, nil, nil)) == "" {
			if time.Now().After(end) {
				t.Errorf("run %s shows no upstream job while it runs", id)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// eachJobOnce checks the simulator's ledger: n jobs of the posts offer,
// none started twice for one run (one job per subreddit), each
// succeeded, none aborted.
func eachJobOnce(t *testing.T, s *sim, n int) {
	t.Helper()
	var jobs []ledgerJob
	for _, j := range s.ledger(t) {
		if j.Target == postsTarget {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) != n {
		t.Errorf("the ledger has %d upstream jobs for %d runs, want each started once", len(jobs), n)
	}
	for _, j := range jobs {
		if j.Status != "succeeded" || j.Aborted {
			t.Errorf("upstream job %s ended %s (aborted %v), want succeeded", j.ID, j.Status, j.Aborted)
		}
	}
}

// TestAsyncSigkillResume: a gateway killed with SIGKILL while 50 async
// runs wait for their upstream jobs resumes them all on start by their
// recorded handles: the simulator's ledger shows each job started once
// and none aborted, their reservations were held across the restart (the
// account pays exactly the 50 runs' holds: a 51st run is refused before
// its 202, and a call right after the restart finds no money free); the
// balance ends exactly the start minus what the runs charged.
func TestAsyncSigkillResume(t *testing.T) {
	s := startSim(t, "-time-scale", "0.01")
	longPosts(t, s, 8*time.Second)
	c := defaultConfig(t, s)
	g := startGateway(t, c)
	// 50 runs × limit 3 × 0.00276: the holds take the whole balance.
	key := g.account("acme", 0.414)
	start := balanceMicros(t, g, key)
	ids := submitMany(t, g, key, 50)
	if r := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(3), preferAsync); r.Status != 402 || r.errCode() != "insufficient_credits" {
		t.Errorf("a 51st run with the money held: %d %.200s", r.Status, r.Body)
	}
	awaitJobs(t, s, g, key, ids)
	if err := g.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = g.p.cmd.Process.Wait()
	g2 := startGateway(t, c)
	t0 := time.Now()
	if r := asyncDo(t, g2, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(1), nil); r.Status != 402 {
		t.Errorf("a call right after the restart, the runs' money held: %d %.200s", r.Status, r.Body)
	}
	sum := finishAll(t, g2, key, ids)
	t.Logf("50 runs finished %s after the restart", time.Since(t0).Round(time.Millisecond))
	eachJobOnce(t, s, 50)
	if got := balanceMicros(t, g2, key); got != start-sum {
		t.Errorf("balance %v, want %v - %v", got, start, sum)
	}
}

// TestAsyncTwoNodesTakeover: two nodes on one PostgreSQL schema; the runs
// of a node are parked once their jobs started (no goroutine waits for
// them, the node's one heartbeat holds them); killed with SIGKILL, its
// runs are taken over by the other node at its next claim, with the
// lease at a minute: the killed process's session ends, and its advisory
// lock with it, so the other node knows it dead at once without waiting
// for its heartbeat to lapse. Every run completes, charged once, its
// upstream job resumed rather than started again.
func TestAsyncTwoNodesTakeover(t *testing.T) {
	pgURL, _ := mnEnv(t)
	s := startSim(t, "-time-scale", "0.01")
	longPosts(t, s, 8*time.Second)
	url, _ := mnSchema(t, pgURL)
	var nodes [2]*gateway
	for i := range nodes {
		c := defaultConfig(t, s)
		c.Storage = "postgres " + url
		c.AppExtra = "async_lease 60s"
		nodes[i] = startGateway(t, c)
	}
	a, b := nodes[0], nodes[1]
	key := a.account("acme", 100)
	start := balanceMicros(t, a, key)
	ids := submitMany(t, a, key, 20)
	awaitJobs(t, s, a, key, ids)
	owner := awaitParked(t, url, ids)
	if err := a.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = a.p.cmd.Process.Wait()
	t0 := time.Now()
	// The other node's next claim (every 2 s); the lease (60 s) is far.
	awaitOwnerGone(t, url, owner, ids, 10*time.Second)
	t.Logf("the killed node's parked runs taken over %s after the kill", time.Since(t0).Round(time.Millisecond))
	sum := finishAll(t, b, key, ids)
	t.Logf("20 runs of the killed node finished on the other %s after the kill", time.Since(t0).Round(time.Millisecond))
	eachJobOnce(t, s, 20)
	if got := balanceMicros(t, b, key); got != start-sum {
		t.Errorf("balance %v, want %v - %v", got, start, sum)
	}
}

// TestAsyncMCP: an MCP tool call asking more than a synchronous call
// serves answers the run at once, status running; get_run follows it to
// the end, billed as REST bills it.
func TestAsyncMCP(t *testing.T) {
	s := startSim(t, "-items", "400", "-latency", "300ms")
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("acme", 10)
	start := balanceMicros(t, g, key)
	cs := mcptest.Connect(t, g.URL+"/mcp", key, nil)
	isErr, run := mcpCall(t, cs, "forum_net_subreddit_posts", postsBody(300))
	id, _ := run["id"].(string)
	if isErr || run["status"] != "running" || !strings.HasPrefix(id, "ext_") {
		t.Fatalf("async tool call: %v %v", isErr, run)
	}
	end := time.Now().Add(60 * time.Second)
	for run["status"] == "running" && time.Now().Before(end) {
		time.Sleep(100 * time.Millisecond)
		if isErr, run = mcpCall(t, cs, "get_run", map[string]any{"id": id}); isErr {
			t.Fatalf("get_run: %v", run)
		}
	}
	if run["status"] != "completed" || len(mcptest.Records(run)) != 300 {
		t.Fatalf("run ended %v with %d records", run["status"], len(mcptest.Records(run)))
	}
	rest := asyncDo(t, g, "GET", "/v1/extractions/"+id, key, nil, nil)
	used := micros(t, rest.Body, "credits_used")
	if used != 300*2760 {
		t.Errorf("credits_used %v, want 300 × 0.00276", used)
	}
	if got := balanceMicros(t, g, key); got != start-used {
		t.Errorf("balance %v, want %v - %v", got, start, used)
	}
	// Within the synchronous limit the tool answers the completed run.
	if isErr, run := mcpCall(t, cs, "forum_net_subreddit_posts", postsBody(5)); isErr || run["status"] != "completed" {
		t.Errorf("sync tool call: %v %v", isErr, run["status"])
	}
}

// TestAsyncFailsAsSync: an async run whose upstream fails ends failed
// exactly as the sync call fails (same code, type and attempts), charged
// nothing.
func TestAsyncFailsAsSync(t *testing.T) {
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("acme", 10)
	start := balanceMicros(t, g, key)
	s.fault(t, map[string]any{"target": postsTarget, "status": 503})
	sync := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(5), nil)
	if sync.Status < 500 {
		t.Fatalf("sync call with the upstream down: %d %.300s", sync.Status, sync.Body)
	}
	r := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(5), preferAsync)
	if r.Status != 202 {
		t.Fatalf("submit: %d %.300s", r.Status, r.Body)
	}
	run := follow(t, g, key, r.JSON["id"].(string), 30*time.Second)
	runErr, _ := run.JSON["error"].(map[string]any)
	syncErr, _ := sync.JSON["error"].(map[string]any)
	if run.JSON["status"] != "failed" || runErr["code"] != syncErr["code"] || runErr["type"] != syncErr["type"] {
		t.Errorf("async run %.300s; the sync call answered %.300s", run.Body, sync.Body)
	}
	ra, _ := run.JSON["attempts"].([]any)
	sa, _ := syncErr["attempts"].([]any)
	if len(ra) != len(sa) || len(ra) == 0 {
		t.Errorf("attempts: async %v, sync %v", ra, sa)
	}
	if got := balanceMicros(t, g, key); got != start {
		t.Errorf("balance %v after failed runs, want %v", got, start)
	}
}

// TestAsyncDeadline: an async run ends failed at its deadline
// (async_deadline), which is also its attempts' deadline, uncharged; a
// sync call keeps the attempt deadline.
func TestAsyncDeadline(t *testing.T) {
	s := startSim(t, "-latency", "6s")
	c := defaultConfig(t, s)
	c.SoftTimeout = "10s"
	c.AttemptTimeout = "10s"
	c.AppExtra = "async_deadline 2s"
	g := startGateway(t, c)
	key := g.account("acme", 10)
	start := balanceMicros(t, g, key)
	r := asyncDo(t, g, "POST", "/v1/extract/forum_net/subreddit.posts", key, postsBody(5), preferAsync)
	if r.Status != 202 {
		t.Fatalf("submit: %d %.300s", r.Status, r.Body)
	}
	t0 := time.Now()
	run := follow(t, g, key, r.JSON["id"].(string), 20*time.Second)
	if d := time.Since(t0); run.JSON["status"] != "failed" || d > 5*time.Second {
		t.Errorf("after %s: %.400s", d.Round(time.Millisecond), run.Body)
	}
	if got := balanceMicros(t, g, key); got != start {
		t.Errorf("balance %v, want %v", got, start)
	}
}

// TestAsyncSearch: POST /v1/search with Prefer: respond-async runs the
// search as an async run, up to 5,000 records per query (1,000 for a sync
// search), ending as the search run a sync call answers.
func TestAsyncSearch(t *testing.T) {
	const provider, target = "source_a/maps/place.search", "compass~crawler-google-places"
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	key := g.account("acme", 100)
	s.fault(t, map[string]any{"target": target, "items": 1500})
	body := map[string]any{"queries": []string{"coffee in Lisbon"}, "provider": provider, "limit": 1200}
	r := asyncDo(t, g, "POST", "/v1/search", key, body, preferAsync)
	if r.Status != 202 || r.JSON["kind"] != "search" || r.JSON["status"] != "running" {
		t.Fatalf("submit: %d %.300s", r.Status, r.Body)
	}
	run := follow(t, g, key, r.JSON["id"].(string), 60*time.Second)
	data, _ := run.JSON["data"].([]any)
	if run.JSON["status"] != "completed" || run.JSON["kind"] != "search" || len(data) != 1200 {
		t.Errorf("async search ended %v with %d records", run.JSON["status"], len(data))
	}
	if used := micros(t, run.Body, "credits_used"); used != credits.Micros(len(data))*5520 {
		t.Errorf("credits_used %v for %d records", used, len(data))
	}
}
