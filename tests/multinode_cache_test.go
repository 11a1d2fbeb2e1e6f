package tests

import "testing"

// TestMultinodeCache (issue 36): two nodes on one PostgreSQL share the
// freshness cache and the joining of live work: a record one node bought
// is served by the other without an upstream call, and the same input
// asked of both nodes at once starts one upstream job.
func TestMultinodeCache(t *testing.T) {
	pgURL, _ := mnEnv(t)
	s := startSim(t)
	c := startCluster(t, s, pgURL, clusterOpts{})
	a, b := c.nodes[0], c.nodes[1]
	keyA := a.account("mn_cache_a", 10)
	keyB := a.account("mn_cache_b", 10)
	s.clearLedger(t)

	body := map[string]any{"url": "https://www.linkedin.com/in/mn-cache-one"}
	mustOK(t, extractCC(t, a, profileInfo, keyA, "max-age=3600", body), 1)
	r := extractCC(t, b, profileInfo, keyB, "max-age=3600", body)
	mustOK(t, r, 1)
	if n := len(jobsOf(t, s, proB)); n != 1 || cachedRecords(r) != 1 || micros(t, r.Body, "credits_used") != mc(t, cachedProB) {
		t.Errorf("node b after node a: %d upstream jobs, cached_records %d, %s; want 1 job, served from node a's record at the cached price",
			n, cachedRecords(r), r.Body)
	}

	s.fault(t, map[string]any{"target": proB, "latency_ms": 1500})
	s.clearLedger(t)
	join := map[string]any{"url": "https://www.linkedin.com/in/mn-cache-join"}
	out := together(4, func(i int) *response {
		return extractCC(t, c.nodes[i%2], profileInfo, []string{keyA, keyB}[i/2], "max-age=60", join)
	})
	cached := 0
	for _, r := range out {
		mustOK(t, r, 1)
		cached += cachedRecords(r)
	}
	if n := len(jobsOf(t, s, proB)); n != 1 || cached != 3 {
		t.Errorf("4 calls at once on 2 nodes: %d upstream jobs, %d served from the shared work; want 1 and 3", n, cached)
	}
}
