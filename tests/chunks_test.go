package tests

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	forumA6 = "trudax~reddit-scraper-lite" // source_a/actor_6 subreddit.posts, max_inputs 4 here
	forumA7 = "trudax~reddit-scraper"      // source_a/actor_7, the failover
	priceA6 = 0.00276
	priceA7 = 0.00552
)

// callsNaming counts the run starts and scrapes of target whose body
// names input.
func callsNaming(calls []simCall, target, input string) int {
	n := 0
	for _, c := range calls {
		if c.Target == target && strings.Contains(string(c.Body), input) {
			n++
		}
	}
	return n
}

// jobsOf returns the ledger's jobs of target.
func jobsOf(t *testing.T, s *sim, target string) []ledgerJob {
	t.Helper()
	var out []ledgerJob
	for _, j := range s.ledger(t) {
		if j.Target == target {
			out = append(out, j)
		}
	}
	return out
}

// TestChunkFailover (issue 26): a call split into batches whose one batch
// keeps failing upstream keeps the batches that succeeded (paid upstream,
// not run again) and sends only the failed batch's inputs to the next
// offer; the run serves the records of both offers and charges each at its
// own offer's price. When no offer serves the failed batch, the kept
// records are served alone, the failed inputs named in the attempts.
func TestChunkFailover(t *testing.T) {
	// A call takes up to 10 inputs (actor_7's max_inputs); actor_6, the
	// head, takes 4 here, so 10 inputs are its batches of 4, 4 and 2.
	dir := copyServices(t)
	decl := filepath.Join(dir, "forum_net.cue")
	b, err := os.ReadFile(decl)
	if err != nil {
		t.Fatal(err)
	}
	head := `offer:            "source_a/actor_6"
		price_per_record: 0.00276
		max_inputs:       `
	if !bytes.Contains(b, []byte(head+"10")) {
		t.Fatalf("%s no longer declares actor_6 with max_inputs 10", decl)
	}
	if err := os.WriteFile(decl, bytes.Replace(b, []byte(head+"10"), []byte(head+"4"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startSim(t, "-services", dir)
	c := defaultConfig(t, s)
	c.Services = dir
	g := startGateway(t, c)
	key := g.account("acme", 50)

	t.Run("the failed batch's inputs fail over, the others are kept", func(t *testing.T) {
		s.reset(t)
		s.clearLedger(t)
		urls := subreddits("chunk", 10)
		failed := urls[4:8] // batch 2 of 3
		s.fault(t, map[string]any{"target": forumA6, "status": 503, "inputs": []string{"/r/chunk_05"}})
		before := g.balance(key)
		r := g.do("POST", "/v1/extract/forum_net/subreddit.posts", key, map[string]any{"urls": urls, "limit": 5})
		if r.Status != 200 || r.JSON["status"] != "completed" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		at := attempts(r)
		if len(at) != 2 || at[0]["offer"] != "source_a/actor_6" || at[0]["outcome"] != "partial" || at[1]["offer"] != "source_a/actor_7" || at[1]["outcome"] != "ok" {
			t.Fatalf("attempts %v", at)
		}
		if !strings.Contains(fmt.Sprint(at[0]["message"]), strings.Join(failed, ", ")) {
			t.Errorf("partial attempt %v does not name the input that failed over", at[0])
		}
		kept, moved := int(num(at[0]["records"])), int(num(at[1]["records"]))
		if kept == 0 || moved == 0 || len(r.JSON["data"].([]any)) != kept+moved {
			t.Errorf("%d records served, %d kept from actor_6 and %d from actor_7", len(r.JSON["data"].([]any)), kept, moved)
		}
		if r.JSON["served_by"] != "source_a/actor_7" {
			t.Errorf("served_by %v, want the last offer that served", r.JSON["served_by"])
		}
		want := float64(kept)*priceA6 + float64(moved)*priceA7
		if got := num(r.JSON["credits_used"]); !near(got, want) {
			t.Errorf("credits_used %v, want %d × %v + %d × %v = %v", got, kept, priceA6, moved, priceA7, want)
		}
		if paid := before - g.balance(key); !near(paid, want) {
			t.Errorf("balance fell by %v, want %v", paid, want)
		}
		// Upstream: each kept batch ran once, on actor_6 only; the failed
		// batch was tried three times there (two retries) and never
		// started a run; actor_7 ran the failed batch's inputs alone.
		calls := s.calls(t)
		for _, in := range []string{urls[0], urls[8]} {
			if n := callsNaming(calls, forumA6, in); n != 1 {
				t.Errorf("the kept batch of %s was started %d times on actor_6, want once", in, n)
			}
			if n := callsNaming(calls, forumA7, in); n != 0 {
				t.Errorf("the kept batch of %s ran again on actor_7 (%d calls)", in, n)
			}
		}
		if n := callsNaming(calls, forumA6, failed[0]); n != 3 {
			t.Errorf("the failed batch was sent %d times to actor_6, want 3 (two retries)", n)
		}
		if n := callsNaming(calls, forumA7, failed[0]); n != 1 {
			t.Errorf("the failed batch reached actor_7 %d times, want once", n)
		}
		if j := jobsOf(t, s, forumA6); len(j) != 2 || j[0].Status != "succeeded" || j[1].Status != "succeeded" {
			t.Errorf("actor_6 ledger %+v, want the kept batches' two runs", j)
		}
		if j := jobsOf(t, s, forumA7); len(j) != 1 || j[0].Status != "succeeded" {
			t.Errorf("actor_7 ledger %+v, want one run of the failed batch", j)
		}
		u := g.do("GET", "/v1/account/usage?days=1", key, nil)
		by, _ := u.JSON["by_provider"].(map[string]any)
		if _, ok := by["source_a/actor_6"]; !ok {
			t.Errorf("usage by_provider lacks the offer of the kept records: %s", u.Body)
		}
	})

	t.Run("no offer serves the failed batch: the kept records are served", func(t *testing.T) {
		s.reset(t)
		s.clearLedger(t)
		urls := subreddits("alone", 10)
		s.fault(t, map[string]any{"target": forumA6, "status": 503, "inputs": []string{"/r/alone_05"}})
		s.fault(t, map[string]any{"target": forumA7, "status": 502})
		before := g.balance(key)
		r := g.do("POST", "/v1/extract/forum_net/subreddit.posts", key, map[string]any{"urls": urls, "limit": 5})
		if r.Status != 200 || r.JSON["served_by"] != "source_a/actor_6" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		at := attempts(r)
		if len(at) != 2 || at[0]["outcome"] != "partial" || at[1]["outcome"] != "upstream_5xx" ||
			!strings.Contains(fmt.Sprint(at[0]["message"]), urls[4]) {
			t.Fatalf("attempts %v", at)
		}
		n := len(r.JSON["data"].([]any))
		want := float64(n) * priceA6
		if n == 0 || n != int(num(at[0]["records"])) || !near(num(r.JSON["credits_used"]), want) || !near(before-g.balance(key), want) {
			t.Errorf("%d records, attempt %v, credits_used %v, paid %v; want %v", n, at[0], r.JSON["credits_used"], before-g.balance(key), want)
		}
		if j := jobsOf(t, s, forumA6); len(j) != 2 {
			t.Errorf("ledger %+v, want the two kept batches' runs", j)
		}
		if j := jobsOf(t, s, forumA7); len(j) != 0 {
			t.Errorf("ledger %+v, want no run of the failing actor_7", j)
		}
	})
}

// subreddits are n subreddit URLs named prefix_00, prefix_01, …
func subreddits(prefix string, n int) []string {
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://www.reddit.com/r/%s_%02d", prefix, i)
	}
	return urls
}
